"""Approvals a person can trust and steer, in the runtime: edit then approve (run once with the
edited arguments, an invalid edit refused with the ask still pending), approvers and a quorum
(a deny ends it, an approval racing a deny, a third user refused), expiry of an approval and of
an ask (cancelled ``expired``, nothing runs), reminders, and the audit log of each case — with
the scripted model, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.actions import ActionConfigError, compile_action_set
from handrail.demo.booking_api import (
    BOOKING_YAML,
    booking_action_set,
    create_booking_app,
    serve_booking_api,
)
from handrail.errors import (
    AlreadyApproved,
    ConfigError,
    InvalidAnswer,
    NotApprover,
    NotOwner,
    NotPending,
)
from handrail.policy.rules import GateRules
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import Tool, ToolSet
from handrail.runtime.turn import Principal
from handrail.store import Store
from handrail.store.audit import AuditFilter

ALICE = Principal(user_id="alice")
BOB = Principal(user_id="bob")
CAROL = Principal(user_id="carol")
MALLORY = Principal(user_id="mallory")
APPROVE = {"action": "accept", "content": {"confirmed": True}}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def ask_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["ask"] for e in events if "ask" in e)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(database_url, blob_dir=tmp_path / "files")
    try:
        yield opened
    finally:
        await opened.close()


class Notes:
    """A notes tool set whose delete is consequential, with its own approvers and clocks."""

    def __init__(self, store: Store, **rules: Any) -> None:
        self.ran: list[dict[str, Any]] = []
        tools = ToolSet("notes-app", "Notes", trusted=True)
        agent_clock = rules.pop("agent_clock", {})

        @tools.tool(title="Delete a note", consequential=True, open_world=False, **rules)
        def delete_note(title: str, keep_copy: bool = False) -> str:
            """Delete the note with this exact title."""
            self.ran.append({"title": title, "keep_copy": keep_copy})
            return f"Deleted {title}."

        self.agent = Agent("notes", tool_sets=[tools], **agent_clock)
        self.runtime = Runtime(store=store, agents=self.agent, model=ScriptedModel())
        self.store = store
        self.history_id: str | None = None

    async def say(self, prompt: str) -> list[dict[str, Any]]:
        turn = await self.runtime.start_prompt(ALICE, prompt, history_id=self.history_id)
        self.history_id = turn.history_id
        return [e async for e in turn.stream()]

    async def delete(self, title: str = "Old draft") -> dict[str, Any]:
        await self.store.permissions.set("alice", "notes-app", "non-consequential")
        return ask_of(await self.say("call delete_note " + compact({"title": title})))

    async def answer(
        self, who: Principal, ask: dict[str, Any], envelope: dict[str, Any], **kw: Any
    ) -> list[dict[str, Any]]:
        assert self.history_id is not None
        response = {"toolCallId": ask["toolCallId"], **envelope}
        if who.user_id == "alice":
            turn = await self.runtime.start_answer(who, self.history_id, response, **kw)
        else:
            turn = await self.runtime.start_approval(who, self.history_id, response, **kw)
        return [e async for e in turn.stream()]

    async def audit(self) -> list[tuple[str, str, dict[str, Any]]]:
        assert self.history_id is not None
        return [
            (r.action, r.actor, r.changes)
            for r in await self.store.audit.for_history(self.history_id)
        ]

    async def close(self) -> None:
        await self.runtime.aclose()


# --- edit, then approve -------------------------------------------------------------------------


async def test_an_edited_approval_runs_once_with_the_edited_arguments(store: Store) -> None:
    notes = Notes(store)
    try:
        ask = await notes.delete("Old draft")
        edited = {"title": "Old notes", "keep_copy": True}
        events = await notes.answer(
            ALICE, ask, {"action": "accept", "content": {"confirmed": True, "arguments": edited}}
        )
        assert notes.ran == [edited]
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert result["editedByUser"] is True
        assert result["changes"] == {
            "keep_copy": {"from": None, "to": True},
            "title": {"from": "Old draft", "to": "Old notes"},
        }
        assert result["result"] == "Deleted Old notes."
        # The model reads that the person changed them, and how.
        assert "editedByUser" in text_of(events)
        # The stored call keeps the model's arguments; its result the executed ones.
        assert notes.history_id is not None
        rows = [r.data for r in await store.histories.rows(notes.history_id)]
        call = next(
            r
            for r in rows
            if r.get("type") == "tool-call" and r["toolName"] == "delete_note" and "ask" not in r
        )
        assert call["args"] == {"title": "Old draft"}
        done = next(
            r
            for r in rows
            if r.get("type") == "tool-result" and r.get("toolCallId") == call["toolCallId"]
        )
        assert done["executedArgs"] == edited
        audit = await notes.audit()
        assert [a for a, _, _ in audit] == ["gate.asked", "gate.approved", "gate.outcome"]
        approved = audit[1][2]
        assert approved["edit"]["fields"] == ["keep_copy", "title"]
        assert audit[2][2]["status"] == "succeeded"
        assert audit[2][2]["argumentsDigest"] == approved["edit"]["argumentsDigest"]
    finally:
        await notes.close()


async def test_an_invalid_edit_is_refused_and_the_approval_stays_pending(store: Store) -> None:
    notes = Notes(store)
    try:
        ask = await notes.delete()
        bad = {
            "action": "accept",
            "content": {"confirmed": True, "arguments": {"keep_copy": "yes"}},
        }
        with pytest.raises(InvalidAnswer) as caught:
            await notes.answer(ALICE, ask, bad)
        fields = {f["path"]: f["message"] for f in caught.value.fields or []}  # type: ignore[union-attr]
        assert set(fields) == {"content.arguments.title", "content.arguments.keep_copy"}
        # Named by their labels, never by a JSON path.
        assert fields["content.arguments.keep_copy"].startswith("Keep copy: ")
        assert fields["content.arguments.title"].startswith("Title: ")
        assert notes.history_id is not None
        history = await store.histories.get(notes.history_id)
        assert history is not None
        assert history.pending_ask is not None
        assert history.pending_ask.tool_call_id == ask["toolCallId"]
        # An edit with a deny is refused too; the plain approval then runs the model's call.
        with pytest.raises(InvalidAnswer):
            await notes.answer(
                ALICE,
                ask,
                {"action": "accept", "content": {"confirmed": False, "arguments": {"title": "x"}}},
            )
        await notes.answer(ALICE, ask, APPROVE)
        assert notes.ran == [{"title": "Old draft", "keep_copy": False}]
    finally:
        await notes.close()


# --- approvers and a quorum -----------------------------------------------------------------


async def test_a_quorum_of_two_runs_once_when_both_approved(store: Store) -> None:
    notes = Notes(store, approvers=["bob", "carol"], quorum=2)
    try:
        ask = await notes.delete()
        assert ask["approvers"] == ["bob", "carol"]
        assert ask["quorum"] == 2
        assert ask["approvedBy"] == []
        # The owner is no approver: an approval of theirs is refused; a third user is too.
        with pytest.raises(NotApprover):
            await notes.answer(ALICE, ask, APPROVE)
        with pytest.raises(NotOwner):
            await notes.answer(MALLORY, ask, APPROVE)
        # Every approver approves the same call: an edit is refused.
        edit = {"action": "accept", "content": {"confirmed": True, "arguments": {"title": "x"}}}
        with pytest.raises(InvalidAnswer) as caught:
            await notes.answer(BOB, ask, edit)
        assert [f["path"] for f in caught.value.fields or []] == ["content.arguments"]  # type: ignore[union-attr]
        events = await notes.answer(BOB, ask, APPROVE, via="watch")
        assert [e for e in events if "toolResult" in e] == []
        waiting = ask_of(events)
        assert [a["userId"] for a in waiting["approvedBy"]] == ["bob"]
        assert notes.ran == []
        with pytest.raises(AlreadyApproved):
            await notes.answer(BOB, ask, APPROVE)
        # The approvers' inbox holds it; the owner sees who approved so far.
        inbox = await store.audit.for_approver("carol", is_admin=False)
        assert [g.history_id for g in inbox] == [notes.history_id]
        assert notes.history_id is not None
        history = await store.histories.get(notes.history_id)
        assert history is not None
        assert history.pending_ask is not None
        assert [a["userId"] for a in history.pending_ask.approved_by or []] == ["bob"]
        await notes.answer(CAROL, ask, APPROVE)
        assert notes.ran == [{"title": "Old draft", "keep_copy": False}]
        assert await store.audit.for_approver("carol", is_admin=False) == []
        audit = await notes.audit()
        assert [(a, who) for a, who, _ in audit] == [
            ("gate.asked", "agent:notes"),
            ("gate.approved", "bob"),
            ("gate.approved", "carol"),
            ("gate.outcome", "agent:notes"),
        ]
        assert audit[1][2]["via"] == "watch"
        assert (audit[1][2]["approvals"], audit[2][2]["approvals"]) == (1, 2)
    finally:
        await notes.close()


async def test_any_deny_ends_a_quorum(store: Store) -> None:
    notes = Notes(store, approvers=["bob", "carol"], quorum=2)
    try:
        ask = await notes.delete()
        await notes.answer(BOB, ask, APPROVE)
        events = await notes.answer(
            CAROL, ask, {"action": "cancel", "reason": "Not this one"}, via="card"
        )
        denied = next(e["toolResult"] for e in events if "toolResult" in e)
        assert denied["result"] == {"approved": False, "reason": "Not this one"}
        assert notes.ran == []
        with pytest.raises(NotPending):
            await notes.answer(BOB, ask, APPROVE)
        audit = await notes.audit()
        assert [a for a, _, _ in audit] == [
            "gate.asked",
            "gate.approved",
            "gate.denied",
            "gate.outcome",
        ]
        assert audit[2][2]["reason"] == "Not this one"
        assert audit[2][2]["via"] == "card"
        assert audit[3][2]["status"] == "denied"
    finally:
        await notes.close()


async def test_an_approval_racing_a_deny_settles_once(store: Store) -> None:
    notes = Notes(store, approvers=["bob", "carol"], quorum=2)
    try:
        ask = await notes.delete()
        await notes.answer(BOB, ask, APPROVE)
        outcomes = await asyncio.gather(
            notes.answer(CAROL, ask, APPROVE),
            notes.answer(ALICE, ask, {"action": "cancel", "reason": "Stop"}),
            return_exceptions=True,
        )
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(failures) == 1, outcomes
        assert isinstance(failures[0], NotPending), outcomes
        assert len(notes.ran) in (0, 1)
        audit = [a for a, _, _ in await notes.audit()]
        assert audit.count("gate.outcome") == 1
        if notes.ran:
            assert "gate.denied" not in audit
        else:
            assert "gate.denied" in audit
    finally:
        await notes.close()


# --- expiry and reminders ------------------------------------------------------------------


async def test_an_expired_approval_is_cancelled_and_never_runs(store: Store) -> None:
    notes = Notes(store, expires_after=60, remind_after=30)
    try:
        ask = await notes.delete()
        expires = dt.datetime.fromisoformat(ask["expiresAt"].replace("Z", "+00:00"))
        created = expires - dt.timedelta(seconds=60)
        assert "remindAt" not in ask  # for the server only
        # Before either is due, nothing happens.
        assert await notes.runtime.sweep_gates(created + dt.timedelta(seconds=10)) == []
        # The reminder is marked once.
        await notes.runtime.sweep_gates(created + dt.timedelta(seconds=31))
        await notes.runtime.sweep_gates(created + dt.timedelta(seconds=32))
        turns = await notes.runtime.sweep_gates(created + dt.timedelta(seconds=61))
        assert len(turns) == 1
        events = [e async for e in turns[0].stream()]
        denied = next(e["toolResult"] for e in events if "toolResult" in e)
        assert denied["result"] == {"approved": False, "reason": "expired"}
        # The model is told; nothing ran.
        assert "expired" in text_of(events)
        assert notes.ran == []
        with pytest.raises(NotPending):
            await notes.answer(ALICE, ask, APPROVE)
        audit = await notes.audit()
        assert [(a, who) for a, who, _ in audit] == [
            ("gate.asked", "agent:notes"),
            ("gate.reminded", "handrail"),
            ("gate.expired", "handrail"),
            ("gate.outcome", "agent:notes"),
        ]
        assert audit[2][2]["reason"] == "expired"
        assert audit[2][2]["via"] == "expiry"
    finally:
        await notes.close()


async def test_an_expired_ask_is_cancelled_with_reason_expired(store: Store) -> None:
    notes = Notes(store, agent_clock={"expires_after": 120})
    try:
        ask = ask_of(await notes.say("ask_confirm " + compact({"prompt": "Go ahead?"})))
        assert "expiresAt" in ask
        later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=121)
        turns = await notes.runtime.sweep_gates(later)
        events = [e async for e in turns[0].stream()]
        assert '"reason":"expired"' in text_of(events)
        assert notes.history_id is not None
        history = await store.histories.get(notes.history_id)
        assert history is not None
        assert history.pending_ask is None
        actions = [a for a, _, _ in await notes.audit()]
        assert actions == ["gate.asked", "gate.expired"]
    finally:
        await notes.close()


async def test_the_audit_log_is_paged_and_seen_by_owner_and_answerers(store: Store) -> None:
    notes = Notes(store, approvers=["bob"])
    try:
        ask = await notes.delete()
        await notes.answer(BOB, ask, APPROVE)
        alice = await store.audit.page(AuditFilter(viewer="alice"), limit=50)
        bob = await store.audit.page(AuditFilter(viewer="bob"), limit=50)
        mallory = await store.audit.page(AuditFilter(viewer="mallory"), limit=50)
        assert len(alice.items) == 3
        assert [r.action for r in bob.items] == ["gate.approved"]
        assert mallory.items == []
        first = await store.audit.page(AuditFilter(viewer="x", admin=True), limit=2)
        assert len(first.items) == 2
        assert first.next is not None
        rest = await store.audit.page(
            AuditFilter(viewer="x", admin=True), limit=2, after=first.next
        )
        assert [r.action for r in rest.items] == ["gate.asked"]
        tool = await store.audit.page(AuditFilter(viewer="x", admin=True, tool="nope"), limit=5)
        assert tool.items == []
    finally:
        await notes.close()


# --- an edited confirmation is prepared again ----------------------------------------------


async def test_an_edited_confirmation_is_prepared_again_and_sent_once(store: Store) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
        await store.permissions.set("alice", "booking", "non-consequential")
        http = httpx.AsyncClient(base_url=base_url)

        async def posts() -> list[dict[str, Any]]:
            stats = (await http.get("/stats")).json()["requests"]
            return [r for r in stats if r["method"] == "POST" and r["path"] == "/bookings"]

        async def run(turn: Any) -> list[dict[str, Any]]:
            return [e async for e in turn.stream()]

        try:
            args = {"date": "2026-12-24", "time": "19:00", "notes": "Window seat"}
            first = await runtime.start_prompt(ALICE, "call book_slot " + compact(args))
            history_id = first.history_id
            old = ask_of(await run(first))
            assert old["origin"] == "confirmation"
            edited = {**args, "notes": "Two high chairs"}
            edit = {"action": "accept", "content": {"confirmed": True, "arguments": edited}}
            events = await run(
                await runtime.start_answer(
                    ALICE, history_id, {"toolCallId": old["toolCallId"], **edit}
                )
            )
            # Nothing edited is sent unseen: a new prepared request, preview and id.
            assert await posts() == []
            new = ask_of(events)
            assert new["origin"] == "confirmation"
            assert new["toolCallId"] != old["toolCallId"]
            assert new["preview"]["notes"] == "Two high chairs"
            stale = await store.confirmations.get(old["toolCallId"].removeprefix("confirmation_"))
            assert stale is not None
            assert stale.state != "pending"
            with pytest.raises(NotPending):
                await runtime.start_answer(
                    ALICE, history_id, {"toolCallId": old["toolCallId"], **APPROVE}
                )
            events = await run(
                await runtime.start_answer(
                    ALICE, history_id, {"toolCallId": new["toolCallId"], **APPROVE}
                )
            )
            sent = await posts()
            assert len(sent) == 1
            result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
            assert result["editedByUser"] is True
            assert result["changes"] == {"notes": {"from": "Window seat", "to": "Two high chairs"}}
            assert result["result"]["status"] == "completed"
            assert result["result"]["data"]["notes"] == "Two high chairs"
            actions = [r.action for r in await store.audit.for_history(history_id)]
            assert actions == [
                "gate.asked",
                "gate.approved",
                "gate.outcome",
                "gate.asked",
                "gate.approved",
                "gate.outcome",
            ]
            outcomes = [
                r.changes["status"]
                for r in await store.audit.for_history(history_id)
                if r.action == "gate.outcome"
            ]
            assert outcomes == ["waiting", "succeeded"]
        finally:
            await runtime.aclose()
            await http.aclose()


# --- the rules are checked at configuration -------------------------------------------------

SHOP = """\
id: shop
name: Shop
base_url: http://127.0.0.1:9/
tools:
  - name: order
    description: Order an item.
    request: {method: POST, path: /orders}
    behavior: {effect: side-effect, confirmation: {required: true}}
    approvers: [bob, admins]
    quorum: 2
    expires_after: 600
    remind_after: 60
"""


def test_rules_of_actions_tools_and_agents_are_checked() -> None:
    rules = compile_action_set(SHOP, env={}).tool("order").rules
    assert rules == GateRules(
        approvers=("bob", "admins"), quorum=2, expires_after=600, remind_after=60
    )
    with pytest.raises(ActionConfigError) as caught:
        compile_action_set(SHOP.replace("quorum: 2", "quorum: 0"), env={})
    assert [(p.code, p.path) for p in caught.value.problems] == [
        ("CONFIG_SCHEMA_INVALID", "tools[0].quorum")
    ]
    with pytest.raises(ActionConfigError):
        compile_action_set(SHOP.replace("remind_after: 60", "remind_after: 900"), env={})

    def wipe() -> str:
        """Wipe it."""
        return "ok"

    with pytest.raises(ConfigError, match="quorum 3 is more than the 2 approvers"):
        Tool.from_function(wipe, approvers=["bob", "carol"], quorum=3)
    with pytest.raises(ConfigError, match="a quorum needs approvers"):
        Tool.from_function(wipe, quorum=2)
    with pytest.raises(ConfigError, match="expires_after is a number of seconds"):
        Agent("a", expires_after=-1)
    agent = Agent("a", tools=[Tool.from_function(wipe, remind_after=5)], expires_after=60)
    assert agent.rules_for("wipe") == GateRules(expires_after=60, remind_after=5)
    assert agent.rules_for(None) == GateRules(expires_after=60)


# --- the audit log never holds a secret, a file's bytes or a data URL ------------------------


async def test_the_audit_log_holds_no_file_bytes_or_data_url(store: Store) -> None:
    notes = Notes(store)
    secret = "sk-live-CANARY-91c2"
    try:
        files = {"prompt": "Send the receipt", "accept": ["text"]}
        ask = ask_of(await notes.say("ask_files " + compact(files)))
        data_url = "data:text/plain;base64," + base64.b64encode(secret.encode()).decode()
        answer = {
            "action": "accept",
            "content": {
                "files": [
                    {"url": data_url, "filename": "r.txt", "mimeType": "text/plain", "size": 19}
                ]
            },
        }
        await notes.answer(ALICE, ask, answer)
        deleting = await notes.delete(secret)
        await notes.answer(
            ALICE, deleting, {"action": "cancel", "reason": f"see {data_url} please"}
        )
        records = await store.audit.for_history(str(notes.history_id))
        text = json.dumps([r.to_json() for r in records])
        assert secret not in text
        assert base64.b64encode(secret.encode()).decode() not in text
        assert "data:" not in text
        reasons = [r.changes.get("reason") for r in records if r.action == "gate.denied"]
        assert reasons == ["see [data URL] please"]
    finally:
        await notes.close()


@contextlib.asynccontextmanager
async def booking_runtime(
    store: Store, rule: str
) -> AsyncIterator[tuple[Runtime, Callable[[], Awaitable[int]]]]:
    """A runtime with the demo's booking action set against a booking API of its own, its
    ``book_slot`` action given `rule` (a line of YAML); and a count of the bookings posted."""
    async with serve_booking_api(create_booking_app()) as base_url:
        text = BOOKING_YAML.read_text(encoding="utf-8")
        text = re.sub(r"(?m)^base_url:.*$", "base_url: " + json.dumps(base_url), text)
        text = text.replace("  - name: book_slot\n", f"  - name: book_slot\n    {rule}\n", 1)
        agent = Agent("concierge", action_sets=[compile_action_set(text, env={})])
        runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
        await store.permissions.set("alice", "booking", "non-consequential")
        http = httpx.AsyncClient(base_url=base_url)

        async def posts() -> int:
            stats = (await http.get("/stats")).json()["requests"]
            return sum(1 for r in stats if r["method"] == "POST" and r["path"] == "/bookings")

        try:
            yield runtime, posts
        finally:
            await runtime.aclose()
            await http.aclose()


async def test_a_confirmation_with_an_approver_is_sent_once_by_their_confirm(
    store: Store,
) -> None:
    async with booking_runtime(store, "approvers: [bob]") as (runtime, posts):
        args = {"date": "2026-12-24", "time": "19:00", "notes": "Window seat"}
        first = await runtime.start_prompt(ALICE, "call book_slot " + compact(args))
        ask = ask_of([e async for e in first.stream()])
        assert ask["origin"] == "confirmation"
        assert ask["approvers"] == ["bob"]
        response = {"toolCallId": ask["toolCallId"], **APPROVE}
        with pytest.raises(NotApprover):
            await runtime.start_answer(ALICE, first.history_id, response)
        with pytest.raises(NotOwner):
            await runtime.start_approval(CAROL, first.history_id, response)
        assert await posts() == 0
        turn = await runtime.start_approval(BOB, first.history_id, response, via="card")
        events = [e async for e in turn.stream()]
        assert await posts() == 1
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert result["status"] == "completed"
        records = await store.audit.for_history(first.history_id)
        assert [(r.action, r.actor) for r in records] == [
            ("gate.asked", "agent:concierge"),
            ("gate.approved", "bob"),
            ("gate.outcome", "agent:concierge"),
        ]
        assert records[0].changes["previewDigest"]
        assert records[2].changes["status"] == "succeeded"


async def test_the_owner_hears_each_approval_on_the_event_bus(store: Store) -> None:
    notes = Notes(store, approvers=["bob", "carol"], quorum=2)
    try:
        ask = await notes.delete()
        async with store.events.subscribe("alice") as events:
            await notes.answer(BOB, ask, APPROVE)

            async def first() -> Any:
                async for event in events:
                    return event
                return None

            event = await asyncio.wait_for(first(), 10)
        assert event.kind == "ask.created"
        assert event.history_id == notes.history_id
        assert [a["userId"] for a in event.data["ask"]["approvedBy"]] == ["bob"]
    finally:
        await notes.close()


async def test_an_actions_expiry_cancels_its_confirmation_and_nothing_is_sent(
    store: Store,
) -> None:
    """An action's ``expires_after`` (10 s) is earlier than its confirmation's TTL (30 s): the
    ask expires then, cancelled ``expired``; the model is told and the request is never sent."""
    async with booking_runtime(store, "expires_after: 10") as (runtime, posts):
        args = {"date": "2026-12-24", "time": "19:00", "notes": "Window seat"}
        first = await runtime.start_prompt(ALICE, "call book_slot " + compact(args))
        ask = ask_of([e async for e in first.stream()])
        assert ask["origin"] == "confirmation"
        history = await store.histories.get(first.history_id)
        assert history is not None
        assert history.pending_ask is not None
        created = dt.datetime.fromisoformat(history.pending_ask.created.replace("Z", "+00:00"))
        expires = dt.datetime.fromisoformat(ask["expiresAt"].replace("Z", "+00:00"))
        assert dt.timedelta(seconds=9) <= expires - created <= dt.timedelta(seconds=11)
        assert await runtime.sweep_gates(created + dt.timedelta(seconds=5)) == []
        [turn] = await runtime.sweep_gates(created + dt.timedelta(seconds=12))
        events = [e async for e in turn.stream()]
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert result == {"approved": False, "reason": "expired"}
        assert await posts() == 0
        with pytest.raises(NotPending):
            await runtime.start_answer(
                ALICE, first.history_id, {"toolCallId": ask["toolCallId"], **APPROVE}
            )
        assert await posts() == 0
        actions = [r.action for r in await store.audit.for_history(first.history_id)]
        assert actions[:2] == ["gate.asked", "gate.expired"]
