"""Side-effecting HTTP tools held for confirmation, end to end over real HTTP: the example
booking API on loopback, the runtime with the scripted model, on SQLite and PostgreSQL.

The boundaries of side-effects-and-confirmation.md's last section: no POST before approval;
one POST after it; no second POST when the same confirmation is confirmed again or twice at
once; an expired confirmation rejected; a new review after a 409 and a re-fetch of the options.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.demo.booking_api import booking_action_set, create_booking_app, serve_booking_api
from handrail.errors import Conflict, Forbidden
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.server.problems import problem_for
from handrail.store import Store

ALICE = Principal(user_id="alice")
BOB = Principal(user_id="bob")
DATE = "2026-12-24"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Booking:
    """The booking API on a free port, the runtime over it, and alice's conversation."""

    def __init__(self, store: Store, base_url: str) -> None:
        self.store = store
        self.base_url = base_url
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        self.runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
        self.http = httpx.AsyncClient(base_url=base_url)
        self.history_id: str | None = None
        self.events: list[dict[str, Any]] = []

    async def posts(self) -> list[dict[str, Any]]:
        stats = (await self.http.get("/stats")).json()["requests"]
        return [r for r in stats if r["method"] == "POST" and r["path"] == "/bookings"]

    async def fault(self, *faults: dict[str, Any]) -> None:
        response = await self.http.post("/control", json={"next": list(faults)})
        assert response.status_code == 200, response.text

    async def say(self, prompt: str, principal: Principal = ALICE) -> list[dict[str, Any]]:
        turn = await self.runtime.start_prompt(principal, prompt, history_id=self.history_id)
        self.history_id = turn.history_id
        self.events = [e async for e in turn.stream()]
        return self.events

    async def book(self, **args: Any) -> dict[str, Any]:
        events = await self.say("call book_slot " + compact({"date": DATE, **args}))
        return next(e["ask"] for e in events if "ask" in e)

    async def answer(
        self, ask: dict[str, Any], principal: Principal = ALICE, **envelope: Any
    ) -> list[dict[str, Any]]:
        assert self.history_id is not None
        turn = await self.runtime.start_answer(
            principal, self.history_id, {"toolCallId": ask["toolCallId"], **envelope}
        )
        self.events = [e async for e in turn.stream()]
        return self.events

    async def rows(self) -> list[dict[str, Any]]:
        assert self.history_id is not None
        return [r.data for r in await self.store.histories.rows(self.history_id)]


CONFIRM = {"action": "accept", "content": {"confirmed": True}}


@pytest.fixture
async def booking(database_url: str, tmp_path: Path) -> AsyncIterator[Booking]:
    store = await Store.open(database_url, blob_dir=tmp_path / "files")
    try:
        async with serve_booking_api(create_booking_app()) as base_url:
            b = Booking(store, base_url)
            await store.permissions.set("alice", "booking", "non-consequential")
            await store.permissions.set("bob", "booking", "non-consequential")
            try:
                yield b
            finally:
                await b.runtime.aclose()
                await b.http.aclose()
    finally:
        await store.close()


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


async def test_no_post_before_approval_and_one_after(booking: Booking) -> None:
    ask = await booking.book(time="19:00", notes="Window seat")
    assert ask["origin"] == "confirmation"
    assert ask["toolName"] == "book_slot"
    assert ask["kind"] == "confirm"
    assert ask["preview"] == {"date": DATE, "time": "19:00", "notes": "Window seat"}
    assert dt.datetime.fromisoformat(ask["expiresAt"].replace("Z", "+00:00")) > dt.datetime.now(
        dt.UTC
    )
    assert await booking.posts() == []
    events = await booking.answer(ask, **CONFIRM)
    posts = await booking.posts()
    assert len(posts) == 1
    assert posts[0]["idempotencyKey"]
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["status"] == "completed"
    assert result["httpStatus"] == 201
    assert result["data"]["time"] == "19:00"
    assert text_of(events).startswith('book_slot returned: {"status":"completed"')
    record = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert record is not None
    assert record.state == "succeeded"


async def test_the_same_confirmation_again_or_twice_at_once_sends_nothing_more(
    booking: Booking,
) -> None:
    ask = await booking.book(time="20:00")
    assert booking.history_id is not None
    history_id = booking.history_id
    results = await asyncio.gather(
        booking.runtime.start_answer(
            ALICE, history_id, {"toolCallId": ask["toolCallId"], **CONFIRM}
        ),
        booking.runtime.start_answer(
            ALICE, history_id, {"toolCallId": ask["toolCallId"], **CONFIRM}
        ),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["NotPending", "Turn"]
    await booking.runtime.aclose()
    assert len(await booking.posts()) == 1
    with pytest.raises(Conflict) as again:
        await booking.runtime.start_answer(
            ALICE, history_id, {"toolCallId": ask["toolCallId"], **CONFIRM}
        )
    assert problem_for(again.value)["status"] == 409
    assert len(await booking.posts()) == 1


async def test_an_expired_confirmation_is_rejected(booking: Booking) -> None:
    ask = await booking.book(time="18:00")
    assert booking.history_id is not None
    history = await booking.store.histories.get(booking.history_id)
    assert history is not None
    assert history.pending_ask is not None
    # Time passes: the confirmation's expiry is behind us.
    past = history.pending_ask.replace(expires_at="2020-01-01T00:00:00.000Z")
    from handrail.store import HistoryChange

    await booking.store.histories.apply(
        history.id, HistoryChange(pending_ask=past), expected_version=history.version
    )
    with pytest.raises(Conflict) as caught:
        await booking.answer(ask, **CONFIRM)
    assert caught.value.code == "CONFIRMATION_STALE"
    assert problem_for(caught.value)["title"] == "Confirmation expired"
    assert await booking.posts() == []
    record = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert record is not None
    assert record.state == "stale"
    # It can still be cancelled.
    events = await booking.answer(ask, action="accept", content={"confirmed": False})
    assert events[1]["toolResult"]["result"] == {"approved": False, "reason": "user_denied"}
    assert await booking.posts() == []


async def test_a_409_refetches_and_asks_for_a_new_review(booking: Booking) -> None:
    ask = await booking.book(time="21:00")
    await booking.fault({"status": 409})
    events = await booking.answer(ask, **CONFIRM)
    new_ask = next(e["ask"] for e in events if "ask" in e)
    assert new_ask["origin"] == "confirmation"
    assert new_ask["toolCallId"] != ask["toolCallId"]
    assert new_ask["preview"] == {"date": DATE, "time": "21:00", "notes": None}
    slots = [
        r for r in (await booking.http.get("/stats")).json()["requests"] if r["path"] == "/slots"
    ]
    assert len(slots) == 2  # the options were fetched again
    assert len(await booking.posts()) == 1  # the refused one; nothing approved automatically
    old = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert old is not None
    assert old.state == "failed"
    # The old id is stale; the new one sends once.
    with pytest.raises(Conflict):
        await booking.answer(ask, **CONFIRM)
    await booking.answer(new_ask, **CONFIRM)
    assert len(await booking.posts()) == 2


async def test_a_slot_taken_meanwhile_gives_the_model_the_options_left(booking: Booking) -> None:
    """Someone else books 19:00 between the preparing and the confirming: the API answers 409,
    the refresh no longer offers 19:00, so there is no new ask: the model reads the refusal
    and the options left (side-effects-and-confirmation.md: "re-runs the read-only query")."""
    ask = await booking.book(time="19:00")
    listed = (await booking.http.get("/slots", params={"date": DATE})).json()["slots"]
    (token,) = [s["token"] for s in listed if s["time"] == "19:00"]
    taken = await booking.http.post("/bookings", json={"date": DATE, "slot_token": token})
    assert taken.status_code == 201
    events = await booking.answer(ask, **CONFIRM)
    assert not [e for e in events if "ask" in e]
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["httpStatus"] == 409
    assert result["code"] == "TOOL_CLIENT_ERROR"
    refreshed = result["refreshed"]
    assert refreshed["status"] == "needs_input"
    left = [o["label"] for o in refreshed["data"]["options"]]
    assert left
    assert "19:00" not in left
    assert "19:00" not in refreshed["message"].split("The options are:")[1]
    assert len(await booking.posts()) == 2  # the other booking and the refused one
    old = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert old is not None
    assert old.state == "failed"
    assert events[-1]["done"] is True
    assert "pendingAsk" not in events[-1]


async def test_a_fault_while_sending_is_uncertain_not_a_failed_turn(
    booking: Booking, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault of the sending itself, after the confirmation was consumed: the request may
    have gone out, so it is reported uncertain and never resent; the turn ends normally and the
    conversation no longer waits on the confirmation."""
    from handrail.runtime import action_calls

    ask = await booking.book(time="19:00")

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a fault inside the sender")

    monkeypatch.setattr(action_calls, "send", broken)
    events = await booking.answer(ask, **CONFIRM)
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["code"] == "TOOL_EXECUTION_UNCERTAIN"
    assert "sending it failed on the server" in result["message"]
    assert not [e for e in events if "error" in e]
    assert "pendingAsk" not in events[-1]
    confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    assert record.state == "uncertain"
    assert await booking.posts() == []
    monkeypatch.undo()
    with pytest.raises(Conflict):
        await booking.answer(ask, **CONFIRM)
    assert await booking.posts() == []


async def test_a_message_reports_an_uncertain_send_after_the_ask_it_cancels(
    booking: Booking,
) -> None:
    """A confirmation consumed by a process that then stopped (its lease lapsed, no outcome)
    and an ask still pending: the next message's stream starts with ``{askResolved}`` (the
    spec's first event of a prompt that cancels the pending ask), then the uncertain result;
    the model reads the uncertain result before the message, and nothing is resent."""
    ask = await booking.book(time="19:00")
    confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    await booking.store.confirmations.consume(confirmation_id, digest=record.digest, lease_ms=1)
    await asyncio.sleep(0.05)  # the sender's lease lapses: it stopped before recording
    events = await booking.say("never mind")
    assert events[0] == {"askResolved": {"toolCallId": ask["toolCallId"], "action": "cancel"}}
    uncertain = next(e["toolResult"] for e in events if "toolResult" in e)
    assert uncertain["result"]["code"] == "TOOL_EXECUTION_UNCERTAIN"
    assert events.index(next(e for e in events if "toolResult" in e)) > 0
    assert await booking.posts() == []
    rows = await booking.rows()
    kinds = [
        (r["type"], r.get("result", {}).get("code") if r["type"] == "tool-result" else None)
        for r in rows
    ]
    assert ("tool-result", "TOOL_EXECUTION_UNCERTAIN") in kinds
    reported = kinds.index(("tool-result", "TOOL_EXECUTION_UNCERTAIN"))
    assert [r.get("text") for r in rows[reported:] if r["type"] == "user"] == ["never mind"]


async def test_approvers_named_after_a_confirmation_was_asked_hold_it(booking: Booking) -> None:
    """The action's approvers are named after alice was asked to confirm (the server started
    again with the set changed): her confirmation alone sends nothing; the model reads that it
    changed, and a new call waits for the approver."""
    from handrail.actions import compile_action_set
    from handrail.demo.booking_api import BOOKING_YAML

    ask = await booking.book(time="19:00")
    text = BOOKING_YAML.read_text(encoding="utf-8")
    text = text.replace("  - name: book_slot\n", "  - name: book_slot\n    approvers: [bob]\n", 1)
    text = re.sub(r"(?m)^base_url:.*$", "base_url: " + json.dumps(booking.base_url), text)
    changed = compile_action_set(text, env={})
    agent = Agent("concierge", action_sets=[changed])
    after = Runtime(store=booking.store, agents=agent, model=ScriptedModel())
    try:
        assert booking.history_id is not None
        turn = await after.start_answer(
            ALICE, booking.history_id, {"toolCallId": ask["toolCallId"], **CONFIRM}
        )
        events = [e async for e in turn.stream()]
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert "approvers changed" in str(result)
        assert await booking.posts() == []
        record = await booking.store.confirmations.get(
            ask["toolCallId"].removeprefix("confirmation_")
        )
        assert record is not None
        assert record.state == "cancelled"
        again = await after.start_prompt(
            ALICE,
            "call book_slot " + compact({"date": DATE, "time": "19:00"}),
            history_id=booking.history_id,
        )
        asked = next(e["ask"] for e in [e async for e in again.stream()] if "ask" in e)
        assert asked["approvers"] == ["bob"]
    finally:
        await after.aclose()


async def test_cancel_and_a_new_message_never_send(booking: Booking) -> None:
    ask = await booking.book(time="19:00")
    events = await booking.answer(ask, action="cancel")
    assert events[1]["toolResult"]["result"] == {"approved": False, "reason": "user_cancelled"}
    ask = await booking.book(time="20:00")
    events = await booking.say("yes, book it")
    assert events[0] == {"askResolved": {"toolCallId": ask["toolCallId"], "action": "cancel"}}
    assert await booking.posts() == []
    record = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert record is not None
    assert record.state == "cancelled"


async def test_a_foreign_or_crafted_confirm_sends_nothing(booking: Booking) -> None:
    ask = await booking.book(time="19:00")
    with pytest.raises(Forbidden):
        await booking.answer(ask, principal=BOB, **CONFIRM)
    held = next(e["toolCall"] for e in booking.events if "toolCall" in e)
    with pytest.raises(Conflict):
        await booking.answer({"toolCallId": held["toolCallId"]}, **CONFIRM)
    assert await booking.posts() == []


async def test_retries_keep_one_idempotency_key(booking: Booking) -> None:
    ask = await booking.book(time="19:00")
    await booking.fault({"status": 503})
    events = await booking.answer(ask, **CONFIRM)
    posts = await booking.posts()
    assert len(posts) == 2
    assert posts[0]["idempotencyKey"] == posts[1]["idempotencyKey"]
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["status"] == "completed"
    # A new call prepares a new key.
    ask = await booking.book(time="20:00")
    await booking.answer(ask, **CONFIRM)
    assert (await booking.posts())[2]["idempotencyKey"] != posts[0]["idempotencyKey"]


async def test_a_redirect_is_blocked(booking: Booking) -> None:
    ask = await booking.book(time="19:00")
    await booking.fault({"redirect": "/elsewhere"})
    events = await booking.answer(ask, **CONFIRM)
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["code"] == "TOOL_REDIRECT_BLOCKED"
    assert len(await booking.posts()) == 1


async def test_a_crash_between_consume_and_outcome_is_uncertain(booking: Booking) -> None:
    ask = await booking.book(time="19:00")
    confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    # What a process does before it dies: the answer is stored and the confirmation consumed,
    # then nothing more (no send recorded, no outcome).
    from handrail.store import HistoryChange

    assert booking.history_id is not None
    history = await booking.store.histories.get(booking.history_id)
    assert history is not None
    await booking.store.histories.apply(
        history.id,
        HistoryChange(ask_status={ask["toolCallId"]: "answered"}, pending_ask=None),
        expected_version=history.version,
    )
    await booking.store.confirmations.consume(confirmation_id, digest=record.digest, lease_ms=1)
    await asyncio.sleep(0.05)
    events = await booking.say("did it work?")
    result = next(e["toolResult"] for e in events if "toolResult" in e)
    assert result["toolName"] == "book_slot"
    assert result["result"]["code"] == "TOOL_EXECUTION_UNCERTAIN"
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    assert record.state == "uncertain"
    assert await booking.posts() == []  # never resent by itself
    # Reported once: the next turn does not repeat it.
    events = await booking.say("ok")
    assert not any("toolResult" in e for e in events)


async def test_a_selection_when_several_slots_fit(booking: Booking) -> None:
    ask = await booking.book(notes="Birthday")
    assert ask["origin"] == "selection"
    assert ask["kind"] == "choice"
    labels = [o["label"] for o in ask["input"]["options"]]
    assert labels == ["18:00", "19:00", "20:00", "21:00"]
    chosen = next(o["id"] for o in ask["input"]["options"] if o["label"] == "20:00")
    events = await booking.answer(ask, action="accept", content={"selected": [chosen]})
    confirm = next(e["ask"] for e in events if "ask" in e)
    assert confirm["origin"] == "confirmation"
    assert confirm["preview"] == {"date": DATE, "time": "20:00", "notes": "Birthday"}
    await booking.answer(confirm, **CONFIRM)
    assert len(await booking.posts()) == 1


async def test_sensitive_ids_never_reach_rows_previews_or_events(booking: Booking) -> None:
    events = await booking.say("call find_slots " + compact({"date": DATE}))
    listed = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert listed["status"] == "completed"
    assert all("token" not in slot for slot in listed["data"]["slots"])
    seen = [*events]
    ask = await booking.book(notes="Quiet table")
    seen += booking.events
    chosen = ask["input"]["options"][0]["id"]
    seen += await booking.answer(ask, action="accept", content={"selected": [chosen]})
    confirm = next(e["ask"] for e in booking.events if "ask" in e)
    seen += await booking.answer(confirm, **CONFIRM)
    slots = (await booking.http.get("/slots", params={"date": "2026-12-25"})).json()["slots"]
    assert slots[0]["token"].startswith("slt_")
    dumped = json.dumps([seen, await booking.rows()])
    assert "slt_" not in dumped
    assert booking.history_id is not None
    history = await booking.store.histories.get(booking.history_id)
    assert history is not None
    for record in await booking.store.requests.list(history.id):
        assert "slt_" not in json.dumps([record.prompt, record.response, record.metadata])


async def test_a_changed_context_makes_the_confirm_stale(booking: Booking) -> None:
    """The prepared request is bound to its context by a digest: when the stored request no
    longer matches it (tampered with, or prepared for another context), confirming sends
    nothing and the model reads CONFIRMATION_STALE."""
    import sqlalchemy as sa

    from handrail.store.db import row_count
    from handrail.store.tables import confirmations

    ask = await booking.book(time="19:00")
    confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    tampered = dict(record.request, url=record.request["url"] + "?admin=1")
    changed = await booking.store.db.write(
        row_count,
        sa.update(confirmations)
        .where(confirmations.c.id == confirmation_id)
        .values(request=tampered),
    )
    assert changed == 1
    events = await booking.answer(ask, **CONFIRM)
    result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
    assert result["code"] == "CONFIRMATION_STALE"
    assert await booking.posts() == []
    record = await booking.store.confirmations.get(confirmation_id)
    assert record is not None
    assert record.state == "stale"


async def _stopped_after_confirm(
    booking: Booking, stop: str
) -> tuple[dict[str, Any], Runtime, Any]:
    """Confirm a booking on a runtime that stops (its lease never renewed) at `stop`: before
    it consumes the confirmation (``consume``) or after, while sending (``send``). Returns the
    ask, a second runtime on the same database, and the event that wakes the first up."""
    import asyncio

    ask = await booking.book(time="21:00")
    first = booking.runtime
    first.lease_s = 0.4

    async def no_heartbeat(history_id: str) -> None:
        await asyncio.Event().wait()

    first.recovery.heartbeat = no_heartbeat  # type: ignore[method-assign]
    blocked = asyncio.Event()
    hang = asyncio.Event()
    if stop == "consume":
        original = booking.store.confirmations.consume

        async def consume(*args: Any, **kwargs: Any) -> Any:
            blocked.set()
            await hang.wait()
            return await original(*args, **kwargs)

        patched = _With(booking.store.confirmations, consume=consume)
        first.actions.store = _With(booking.store, confirmations=patched)  # type: ignore[assignment]
    else:
        import handrail.runtime.action_calls as action_calls

        real_send = action_calls.send

        async def send(*args: Any, **kwargs: Any) -> Any:
            blocked.set()
            await hang.wait()
            return await real_send(*args, **kwargs)

        action_calls.send = send  # type: ignore[assignment]
    assert booking.history_id is not None
    await first.start_answer(
        ALICE, booking.history_id, {"toolCallId": ask["toolCallId"], **CONFIRM}
    )
    await blocked.wait()
    if stop == "send":
        action_calls.send = real_send  # type: ignore[assignment]
    await asyncio.sleep(0.6)
    agent = Agent("concierge", action_sets=[booking_action_set(booking.base_url)])
    second = Runtime(store=booking.store, agents=agent, model=ScriptedModel(), lease_s=0.4)
    return ask, second, hang


class _With:
    """An object that answers like `inner`, with some attributes replaced."""

    def __init__(self, inner: Any, **replaced: Any) -> None:
        self._inner = inner
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_confirmed_booking_whose_process_stopped_before_sending_is_sent_once(
    booking: Booking,
) -> None:
    ask, second, wake = await _stopped_after_confirm(booking, "consume")
    assert await booking.posts() == []
    [taken] = await second.recovery.sweep()
    result = await taken.result()
    assert result.text.startswith('book_slot returned: {"status":"completed"')
    assert len(await booking.posts()) == 1
    record = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert record is not None
    assert record.state == "succeeded"
    wake.set()  # the first process wakes: the confirmation is used, nothing more is sent
    await second.aclose()
    await booking.runtime.aclose()
    assert len(await booking.posts()) == 1


async def test_a_booking_whose_process_stopped_while_sending_is_uncertain_at_once(
    booking: Booking,
) -> None:
    ask, second, wake = await _stopped_after_confirm(booking, "send")
    [taken] = await second.recovery.sweep()
    result = await taken.result()
    assert "TOOL_EXECUTION_UNCERTAIN" in result.text
    record = await booking.store.confirmations.get(ask["toolCallId"].removeprefix("confirmation_"))
    assert record is not None
    # Known at once, long before the confirmation's own lease (about a minute) would end.
    assert record.state == "uncertain"
    assert await booking.posts() == []  # never resent
    wake.set()
    await second.aclose()
