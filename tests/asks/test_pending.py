"""`PendingAsk.replace`: the copy `dataclasses.replace` makes, without its cost."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from handrail.asks.pending import PendingAsk


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
