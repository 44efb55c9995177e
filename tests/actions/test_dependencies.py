"""Dependencies over real HTTP: one candidate taken, several paused on as a selection, none
answered with what exists, TTL caching, recovery's refresh, and sensitive fields kept from
everything the model or a person sees."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import httpx
from action_helpers import ENV, SLOTS, Answer, FakeApi, config_for, dump

from handrail.actions import (
    ActionResult,
    ActionSet,
    NeedsSelection,
    Resolved,
    forget_dependency,
    load_action_set,
    prepare,
    resolve_dependencies,
    send,
)

T0 = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def action_set_for(api: FakeApi, change: Any = None) -> ActionSet:
    config = copy.deepcopy(config_for(api.url))
    if change is not None:
        change(config)
    return load_action_set(dump(config), env=ENV)


async def resolve(
    action_set: ActionSet,
    client: httpx.AsyncClient,
    args: dict[str, Any],
    cache: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Resolved | NeedsSelection | ActionResult:
    return await resolve_dependencies(
        action_set,
        "book_slot",
        args,
        client=client,
        env=ENV,
        cache={} if cache is None else cache,
        **kwargs,
    )


def no_token(value: Any) -> None:
    text = json.dumps(value, default=str)
    assert "secret" not in text, text


async def test_one_fitting_candidate_is_taken(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    clock = Clock()
    found = await resolve(
        action_set_for(fake_api), client, {"date": "2026-05-02", "time": "18:00"}, now=clock
    )
    assert isinstance(found, Resolved)
    assert found.values == {"availability": SLOTS[0]}
    assert found.facts == {"time": "18:00"}
    assert found.expires_at == T0 + dt.timedelta(seconds=60)
    (request,) = fake_api.received()
    assert request.query == {"date": "2026-05-02"}


async def test_several_candidates_pause_on_a_selection(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    cache: dict[str, Any] = {}
    action_set = action_set_for(fake_api)
    args = {"date": "2026-05-02", "time": "19:00"}
    clock = Clock()
    found = await resolve(action_set, client, args, cache, now=clock)
    assert isinstance(found, NeedsSelection)
    assert found.dependency == "availability"
    assert found.tool == "find_slots"
    assert [c.label for c in found.candidates] == ["19:00", "19:00"]
    assert [c.facts for c in found.candidates] == [{"time": "19:00"}, {"time": "19:00"}]
    assert len({c.id for c in found.candidates}) == 2
    assert list(found.full_candidates) == [SLOTS[1], SLOTS[2]]
    assert found.expires_at == T0 + dt.timedelta(seconds=60)
    no_token([c.to_json() for c in found.candidates])
    no_token(found.to_tool_result())
    no_token(found.choice_options())
    assert found.choice_options()[0] == {
        "id": found.candidates[0].id,
        "label": "19:00",
        "description": "time: 19:00",
    }

    chosen = found.candidates[1].id
    clock.now = T0 + dt.timedelta(seconds=30)
    again = await resolve(
        action_set, client, args, cache, choices={"availability": chosen}, now=clock
    )
    assert isinstance(again, Resolved)
    assert again.values["availability"] == SLOTS[2]
    assert len(fake_api.received()) == 1, "the cached result is used for the choice"


async def test_a_candidate_id_is_stable_across_fetches(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    action_set = action_set_for(fake_api)
    args = {"date": "2026-05-02", "time": "19:00"}
    first = await resolve(action_set, client, args)
    second = await resolve(action_set, client, args)
    assert isinstance(first, NeedsSelection)
    assert isinstance(second, NeedsSelection)
    assert [c.id for c in first.candidates] == [c.id for c in second.candidates]
    assert len(fake_api.received()) == 2


async def test_no_fitting_candidate_tells_the_model_what_exists(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    found = await resolve(action_set_for(fake_api), client, {"date": "d", "time": "07:00"})
    assert isinstance(found, ActionResult)
    assert found.status == "needs_input"
    assert "18:00; 19:00; 19:00; 20:30" in (found.message or "")
    assert 'time = "07:00"' in (found.message or "")
    no_token(found.to_tool_result())


async def test_no_options_at_all(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    fake_api.plan("/slots", Answer(json={"slots": []}))
    found = await resolve(action_set_for(fake_api), client, {"date": "d", "time": "07:00"})
    assert isinstance(found, ActionResult)
    assert found.status == "needs_input"
    assert "found no options" in (found.message or "")


async def test_a_missing_match_value_offers_every_candidate(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def optional_time(config: dict[str, Any]) -> None:
        config["tools"][1]["input"]["required"] = ["date"]

    found = await resolve(action_set_for(fake_api, optional_time), client, {"date": "d"})
    assert isinstance(found, NeedsSelection)
    assert [c.label for c in found.candidates] == ["18:00", "19:00", "19:00", "20:30"]


async def test_results_are_cached_for_their_ttl(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    action_set = action_set_for(fake_api)
    cache: dict[str, Any] = {}
    clock = Clock()
    args = {"date": "d", "time": "18:00"}
    await resolve(action_set, client, args, cache, now=clock)
    clock.now = T0 + dt.timedelta(seconds=59)
    cached = await resolve(action_set, client, args, cache, now=clock)
    assert isinstance(cached, Resolved)
    assert cached.expires_at == T0 + dt.timedelta(seconds=60), "a cached value keeps its expiry"
    assert len(fake_api.received()) == 1
    clock.now = T0 + dt.timedelta(seconds=60)
    fresh = await resolve(action_set, client, args, cache, now=clock)
    assert isinstance(fresh, Resolved)
    assert fresh.expires_at == T0 + dt.timedelta(seconds=120)
    assert len(fake_api.received()) == 2
    other_date = await resolve(action_set, client, {"date": "e", "time": "18:00"}, cache, now=clock)
    assert isinstance(other_date, Resolved)
    assert len(fake_api.received()) == 3


async def test_a_failing_dependency_is_named_in_the_error(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    fake_api.plan("/slots", Answer(status=500, json={"error": "down"}))
    found = await resolve(action_set_for(fake_api), client, {"date": "d", "time": "18:00"})
    assert isinstance(found, ActionResult)
    assert found.code == "TOOL_SERVER_ERROR"
    assert "availability" in (found.message or "")
    assert "find_slots" in (found.message or "")


async def test_when_missing_runs_only_for_a_missing_field(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def fills(config: dict[str, Any]) -> None:
        tool = config["tools"][1]
        tool["input"]["properties"]["room"] = {"type": "string"}
        dep = tool["dependencies"]["availability"]
        dep["when"] = "missing"
        dep["fills"] = {"room": "$.item.room"}
        tool["request"]["body"] = {"date": "$.input.date", "room": "$.input.room"}
        tool["behavior"]["confirmation"]["preview"]["room"] = "$.input.room"

    action_set = action_set_for(fake_api, fills)
    given = await resolve(action_set, client, {"date": "d", "time": "18:00", "room": "cellar"})
    assert given == Resolved()
    assert fake_api.received() == []
    filled = await resolve(action_set, client, {"date": "d", "time": "18:00"})
    assert isinstance(filled, Resolved)
    assert filled.filled == {"room": "garden"}
    prepared = prepare(action_set, "book_slot", {"date": "d", "time": "18:00"}, resolved=filled)
    assert prepared.body == {"date": "d", "room": "garden"}
    assert prepared.preview["room"] == "garden"


async def test_a_recovery_status_refreshes_the_dependency_and_asks_again(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    action_set = action_set_for(fake_api)
    tool = action_set.tools["book_slot"]
    cache: dict[str, Any] = {}
    args = {"date": "d", "time": "18:00", "notes": "n"}
    found = await resolve(action_set, client, args, cache)
    assert isinstance(found, Resolved)
    prepared = prepare(action_set, tool, args, resolved=found)
    fake_api.plan("/bookings", Answer(status=409, json={"error": "slot gone"}))
    result = await send(action_set, prepared, client=client, env=ENV)
    assert result.http_status == 409
    assert tool.recovery is not None
    assert result.http_status in tool.recovery.statuses

    assert forget_dependency(cache, action_set, tool, tool.recovery.dependency) == 1
    fake_api.slots = [{"time": "18:00", "token": "tok-new-secret", "room": "terrace"}]
    again = await resolve(action_set, client, args, cache)
    assert isinstance(again, Resolved)
    assert again.values["availability"]["token"] == "tok-new-secret"
    renewed = prepare(action_set, tool, args, resolved=again)
    assert renewed.idempotency_key != prepared.idempotency_key
    assert renewed.body["slot_token"] == "tok-new-secret"
    assert [r.method for r in fake_api.received()] == ["GET", "POST", "GET"]
