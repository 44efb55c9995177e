"""A prepared request is complete and sendable before the person is asked to confirm it
(side-effects-and-confirmation.md: preparing is separated from executing). A value no HTTP
request can carry (a header with an accent or a control character, a path parameter that is
``.`` or ``..``, a body that is not JSON) is refused when the request is prepared, so it never
reaches a confirmation that is consumed and then cannot be sent (left ``consumed``, later
``uncertain``, while nothing was sent).

The requests that are sent go to the example booking API on a loopback port.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from handrail.actions import (
    ActionSet,
    PrepareError,
    Resolved,
    compile_action_set,
    prepare,
    resolve_dependencies,
    run_read_only,
    send,
)
from handrail.demo.booking_api import BOOKING_YAML, create_booking_app, serve_booking_api
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store

DATE = "2026-12-24"
ALICE = Principal(user_id="alice")


def action_set(base_url: str) -> ActionSet:
    """The demo's booking set, with the booking's notes also sent as the header ``X-Note``
    and a read-only ``get_booking`` that reads ``/bookings/{id}``."""
    config: dict[str, Any] = yaml.safe_load(BOOKING_YAML.read_text(encoding="utf-8"))
    config["base_url"] = base_url
    book = next(t for t in config["tools"] if t["name"] == "book_slot")
    book["request"]["headers"] = {"X-Note": "$.input.notes"}
    get_booking = copy.deepcopy(next(t for t in config["tools"] if t["name"] == "find_slots"))
    get_booking.update(
        name="get_booking",
        title="Read a booking",
        description="One booking by its id.",
        input={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        request={"method": "GET", "path": "/bookings/{id}", "path_params": {"id": "$.input.id"}},
    )
    config["tools"].append(get_booking)
    return compile_action_set(yaml.safe_dump(config, sort_keys=False), env={})


@pytest.fixture
async def api() -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    async with (
        serve_booking_api(create_booking_app()) as base_url,
        httpx.AsyncClient(base_url=base_url, trust_env=False) as http,
    ):
        yield base_url, http


async def received(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    stats: list[dict[str, Any]] = (await http.get("/stats")).json()["requests"]
    return stats


async def resolved_for(
    actions: ActionSet, http: httpx.AsyncClient, args: dict[str, Any]
) -> Resolved:
    found = await resolve_dependencies(actions, "book_slot", args, client=http, cache={})
    assert isinstance(found, Resolved)
    return found


@pytest.mark.parametrize(
    ("notes", "char"),
    [
        ("Table for José", "U+00E9"),
        ("Birthday 🎂", "U+1F382"),
        ("a\x00b", "U+0000"),
        ("a\x0bb", "U+000B"),
        ("a\x7fb", "U+007F"),
    ],
)
async def test_a_header_value_http_cannot_carry_is_refused_when_prepared(
    api: tuple[str, httpx.AsyncClient], notes: str, char: str
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    args = {"date": DATE, "time": "19:00", "notes": notes}
    resolved = await resolved_for(actions, http, args)
    with pytest.raises(
        PrepareError, match=re.escape(f"header X-Note would hold the character {char}")
    ):
        prepare(actions, "book_slot", args, resolved=resolved)
    assert [r["method"] for r in await received(http)] == ["GET"]  # the slots only


async def test_a_header_line_break_is_still_refused_by_its_own_message(
    api: tuple[str, httpx.AsyncClient],
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    args = {"date": DATE, "time": "19:00", "notes": "hi\r\nX-Evil: 1"}
    with pytest.raises(PrepareError, match="header X-Note would hold a line break"):
        prepare(actions, "book_slot", args, resolved=await resolved_for(actions, http, args))


async def test_spaces_around_a_header_value_are_dropped_and_the_request_is_sent(
    api: tuple[str, httpx.AsyncClient],
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    args = {"date": DATE, "time": "19:00", "notes": "  Window\tseat  "}
    prepared = prepare(actions, "book_slot", args, resolved=await resolved_for(actions, http, args))
    assert prepared.headers["X-Note"] == "Window\tseat"
    assert prepared.public["headers"]["X-Note"] == "Window\tseat"
    result = await send(actions, prepared, client=http)
    assert result.status == "completed", result
    assert result.http_status == 201
    posts = [r for r in await received(http) if r["method"] == "POST"]
    assert len(posts) == 1
    assert posts[0]["idempotencyKey"] == prepared.idempotency_key


@pytest.mark.parametrize("ident", ["..", ".", ""])
async def test_a_path_parameter_never_makes_a_dot_segment_or_an_empty_one(
    api: tuple[str, httpx.AsyncClient], ident: str
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    with pytest.raises(PrepareError, match="path parameter"):
        prepare(actions, "get_booking", {"id": ident})
    # Run as a read-only call, it goes back to the model and nothing is sent (``/bookings/..``
    # would have been ``GET /``).
    result = await run_read_only(actions, "get_booking", {"id": ident}, client=http)
    assert result.status == "needs_input"
    assert "path parameter" in (result.message or "")
    assert await received(http) == []


async def test_a_path_parameter_with_a_slash_or_dots_inside_stays_one_segment(
    api: tuple[str, httpx.AsyncClient],
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    for ident, path in (("a/..", "/bookings/a%2F.."), ("...", "/bookings/...")):
        prepared = prepare(actions, "get_booking", {"id": ident})
        assert prepared.url == base_url + path
    result = await run_read_only(actions, "get_booking", {"id": "..."}, client=http)
    assert result.status == "error"
    assert result.http_status == 404  # sent, to the booking it names


async def test_a_body_or_query_that_cannot_be_sent_is_refused_when_prepared(
    api: tuple[str, httpx.AsyncClient],
) -> None:
    base_url, http = api
    actions = action_set(base_url)
    args = {"date": DATE, "time": "19:00"}
    resolved = await resolved_for(actions, http, args)
    # A lone surrogate (half of a UTF-16 pair) is not UTF-8: no body or URL can carry it.
    with pytest.raises(PrepareError, match="header X-Note"):
        prepare(actions, "book_slot", {**args, "notes": "\ud83d"}, resolved=resolved)
    with pytest.raises(PrepareError, match="query parameter"):
        prepare(actions, "find_slots", {"date": "2026-12-\udc00"})
    no_header = compile_action_set(
        yaml.safe_dump(
            {
                "id": "notes",
                "name": "Notes",
                "base_url": base_url,
                "tools": [
                    {
                        "name": "add_note",
                        "description": "Add a note.",
                        "input": {"type": "object", "properties": {"text": {"type": "string"}}},
                        "request": {
                            "method": "POST",
                            "path": "/notes",
                            "body": {"t": "$.input.text"},
                        },
                        "behavior": {"effect": "side-effect", "confirmation": {"required": True}},
                    }
                ],
            }
        ),
        env={},
    )
    with pytest.raises(PrepareError, match="body cannot be sent as JSON"):
        prepare(no_header, "add_note", {"text": "a\udc00"})


async def test_an_unsendable_header_never_becomes_a_confirmation(
    api: tuple[str, httpx.AsyncClient], tmp_path: Path
) -> None:
    """Before: the person was asked, the confirm consumed the confirmation, sending raised
    (``UnicodeEncodeError``), the turn ended with "The model call failed" and the confirmation
    stayed ``consumed`` with nothing sent. Now the model gets the reason at once."""
    base_url, http = api
    store = await Store.open(f"sqlite:///{tmp_path / 'handrail.db'}", blob_dir=tmp_path / "b")
    runtime = Runtime(
        store=store, agents=Agent("concierge", action_sets=[action_set(base_url)]),
        model=ScriptedModel(),
    )  # fmt: skip
    try:
        await store.permissions.set("alice", "booking", "non-consequential")
        args = {"date": DATE, "time": "19:00", "notes": "Table for José"}
        turn = await runtime.start_prompt(ALICE, "call book_slot " + json.dumps(args))
        events = [e async for e in turn.stream()]
        assert not [e for e in events if "ask" in e]
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert result["status"] == "error"
        assert "header X-Note would hold the character U+00E9" in result["message"]
        assert await store.confirmations.for_history(turn.history_id) == []
        assert [r["method"] for r in await received(http)] == ["GET"]
    finally:
        await runtime.aclose()
        await store.close()


async def test_a_head_answer_is_not_held_to_the_length_it_declares(
    api: tuple[str, httpx.AsyncClient],
) -> None:
    """``max_response_bytes`` caps what is read; a HEAD answer declares its GET body's length
    (``Content-Length``) but sends no body, so nothing is over the cap."""
    base_url, http = api
    config = {
        "id": "slots",
        "name": "Slots",
        "base_url": base_url,
        "tools": [
            {
                "name": "slots_exist",
                "description": "Whether the slots of a date can be listed.",
                "request": {"method": "HEAD", "path": "/slots", "query": {"date": DATE}},
                "transport": {"max_response_bytes": 10},
            },
            {
                "name": "list_slots",
                "description": "The slots of a date.",
                "request": {"method": "GET", "path": "/slots", "query": {"date": DATE}},
                "transport": {"max_response_bytes": 10},
            },
        ],
    }
    actions = compile_action_set(yaml.safe_dump(config), env={})
    head = await run_read_only(actions, "slots_exist", {}, client=http)
    assert head.status == "completed", head
    assert head.http_status == 200
    assert head.data is None
    get = await run_read_only(actions, "list_slots", {}, client=http)
    assert get.status == "error"
    assert get.code == "TOOL_OUTPUT_LIMIT"
    assert [(r["method"], r["path"]) for r in await received(http)] == [
        ("HEAD", "/slots"),
        ("GET", "/slots"),
    ]
