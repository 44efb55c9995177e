"""`PendingAsk.replace`: the copy `dataclasses.replace` makes, without its cost; `to_json` and
`public`: the keys `PENDING_ASK_FIELDS` declares, as a loop over them gives them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from handrail.asks.pending import PENDING_ASK_FIELDS, PendingAsk, Surface


def _ask() -> PendingAsk:
    return PendingAsk(
        tool_call_id="call_1",
        kind="choice",
        input={"prompt": "Which?", "options": [{"id": "a", "label": "A"}]},
        simple={"toolCallId": "call_1", "kind": "choice", "text": "Which?", "buttons": []},
        created="2026-12-02T06:00:00.000Z",
        approvers=["bob"],
        extra={"pageTools": {"x": 1}},
    )


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(PendingAsk)])
def test_each_field_replaced_as_dataclasses_does(field: str) -> None:
    ask = _ask()
    value: Any = {"new": field}
    mine = ask.replace(**{field: value})
    theirs = dataclasses.replace(ask, **{field: value})
    assert mine == theirs
    assert mine is not ask
    assert getattr(mine, field) is value
    for other in dataclasses.fields(PendingAsk):
        if other.name != field:
            # Shared, as dataclasses.replace shares them.
            assert getattr(mine, other.name) is getattr(ask, other.name)
    assert ask == _ask()  # the original is unchanged


def test_several_changes_and_none() -> None:
    ask = _ask()
    changed = ask.replace(prompt_index=3, response_messages=[], queued=None)
    assert changed == dataclasses.replace(ask, prompt_index=3, response_messages=[], queued=None)
    assert ask.replace() == ask


def test_an_unknown_name_is_refused_as_before() -> None:
    with pytest.raises(TypeError):
        _ask().replace(no_such_field=1)


def _every_field_set() -> PendingAsk:
    values = {f.name: {"value of": f.name} for f in dataclasses.fields(PendingAsk)}
    return PendingAsk(**{**values, "kind": "choice", "extra": {"later": 1, "toolName": "x"}})


def _by_loop(ask: PendingAsk, surface: Surface | None) -> dict[str, Any]:
    """The keys as the loop over `PENDING_ASK_FIELDS` gave them before."""
    out: dict[str, Any] = {}
    for f in PENDING_ASK_FIELDS:
        value = getattr(ask, f.attr)
        if value is not None and (surface is None or surface in f.surfaces):
            out[f.key] = value
    if surface is None:
        out.update(ask.extra)
    elif surface in ("summary", "turn"):
        out["kind"] = ask.card_kind
    return out


@pytest.mark.parametrize("ask", [_ask(), _every_field_set()], ids=["some", "every"])
@pytest.mark.parametrize("surface", [None, "view", "event", "summary", "turn"])
def test_stored_and_public_keys_as_declared(ask: PendingAsk, surface: Surface | None) -> None:
    mine = ask.to_json() if surface is None else ask.public(surface)
    expected = _by_loop(ask, surface)
    assert mine == expected
    assert list(mine) == list(expected)  # the same order
    for key, value in mine.items():
        if key != "kind":
            assert value is expected[key]  # shared, not copied
