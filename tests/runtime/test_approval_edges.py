"""Edges of approvals a person can trust and steer, in the runtime with the scripted model:
an edited approval that also grants the tool (the grant is kept), an edited confirmation that
the action's own input rule refuses (400, the confirmation still pending, nothing sent), and
an approval answered after the tool's connection was replaced or its approvers were added (the
call does not run on it) — on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from handrail.demo.booking_api import booking_action_set, create_booking_app, serve_booking_api
from handrail.errors import InvalidAnswer
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")
APPROVE = {"action": "accept", "content": {"confirmed": True}}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def ask_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["ask"] for e in events if "ask" in e)


async def collect(turn: Any) -> list[dict[str, Any]]:
    return [e async for e in turn.stream()]


def notes_runtime(
    store: Store, ran: list[dict[str, Any]], *, connection: str = "notes-app", **rules: Any
) -> Runtime:
    """A runtime whose agent ``notes`` has a consequential ``delete_note`` in `connection`."""
    tools = ToolSet(connection, "Notes", trusted=True)

    @tools.tool(title="Delete a note", consequential=True, open_world=False, **rules)
    def delete_note(title: str, keep_copy: bool = False) -> str:
        """Delete the note with this exact title."""
        ran.append({"title": title, "keep_copy": keep_copy})
        return f"Deleted {title}."

    return Runtime(store=store, agents=Agent("notes", tool_sets=[tools]), model=ScriptedModel())


async def ask_delete(runtime: Runtime, title: str) -> tuple[str, dict[str, Any]]:
    turn = await runtime.start_prompt(ALICE, "call delete_note " + compact({"title": title}))
    return turn.history_id, ask_of(await collect(turn))


async def test_an_edited_approval_with_a_scope_keeps_the_grant(store: Store) -> None:
    """``scope`` counts on every approve: one that also edits the call records the grant, as
    the audit log says it did, and the tool then runs without asking."""
    ran: list[dict[str, Any]] = []
    runtime = notes_runtime(store, ran)
    try:
        await store.permissions.set("alice", "notes-app", "non-consequential")
        history_id, ask = await ask_delete(runtime, "Old draft")
        content = {"confirmed": True, "scope": "always", "arguments": {"title": "Old notes"}}
        answer = {"toolCallId": ask["toolCallId"], "action": "accept", "content": content}
        events = await collect(await runtime.start_answer(ALICE, history_id, answer))
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert result["editedByUser"] is True
        assert result["arguments"] == {"title": "Old notes"}
        assert ran == [{"title": "Old notes", "keep_copy": False}]
        grants = await store.grants.list("alice")
        assert [(g.connection_id, g.tool_name, g.scope) for g in grants] == [
            ("notes-app", "delete_note", "always")
        ]
        approved = next(
            r for r in await store.audit.for_history(history_id) if r.action == "gate.approved"
        )
        assert approved.changes["scope"] == "always"
        assert approved.changes["edit"]["fields"] == ["title"]
        # The grant holds: the next call runs without asking.
        again = await runtime.start_prompt(
            ALICE, "call delete_note " + compact({"title": "Third"}), history_id=history_id
        )
        assert not any("ask" in e for e in await collect(again))
        assert ran[-1] == {"title": "Third", "keep_copy": False}
    finally:
        await runtime.aclose()


async def test_an_edit_the_action_refuses_is_a_400_and_the_confirmation_stays(
    store: Store,
) -> None:
    """An edited confirmation is checked as the action checks its input: a property its schema
    does not declare is a 400 naming it, the confirmation stays pending, and nothing is sent."""
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
        http = httpx.AsyncClient(base_url=base_url)
        try:
            await store.permissions.set("alice", "booking", "non-consequential")
            args = {"date": "2026-12-24", "time": "19:00", "notes": "Window seat"}
            turn = await runtime.start_prompt(ALICE, "call book_slot " + compact(args))
            history_id = turn.history_id
            ask = ask_of(await collect(turn))
            assert ask["origin"] == "confirmation"
            edited = {**args, "table": "12"}
            edit = {"action": "accept", "content": {"confirmed": True, "arguments": edited}}
            with pytest.raises(InvalidAnswer) as caught:
                await runtime.start_answer(
                    ALICE, history_id, {"toolCallId": ask["toolCallId"], **edit}
                )
            paths = [f["path"] for f in caught.value.fields or []]  # type: ignore[union-attr]
            assert paths == ["content.arguments.table"]
            history = await store.histories.get(history_id)
            assert history is not None
            assert history.pending_ask is not None
            assert history.pending_ask.tool_call_id == ask["toolCallId"]
            confirmation = await store.confirmations.get(
                ask["toolCallId"].removeprefix("confirmation_")
            )
            assert confirmation is not None
            assert confirmation.state == "pending"
            # The confirmation as it was still confirms, once.
            await collect(
                await runtime.start_answer(
                    ALICE, history_id, {"toolCallId": ask["toolCallId"], **APPROVE}
                )
            )
            stats = (await http.get("/stats")).json()["requests"]
            posts = [r for r in stats if r["method"] == "POST" and r["path"] == "/bookings"]
            assert len(posts) == 1
        finally:
            await runtime.aclose()
            await http.aclose()


async def test_an_approval_for_a_replaced_connection_runs_nothing(store: Store) -> None:
    """The person approved a call of one connection; answered once the tool belongs to another
    (another process, after the connection was replaced), it does not run there, no grant is
    made for the other connection, and the model reads why."""
    ran: list[dict[str, Any]] = []
    before = notes_runtime(store, ran)
    after = notes_runtime(store, ran, connection="other-notes")
    try:
        await store.permissions.set("alice", "notes-app", "non-consequential")
        await store.permissions.set("alice", "other-notes", "non-consequential")
        history_id, ask = await ask_delete(before, "Old draft")
        content = {"confirmed": True, "scope": "always"}
        answer = {"toolCallId": ask["toolCallId"], "action": "accept", "content": content}
        events = await collect(await after.start_answer(ALICE, history_id, answer))
        assert ran == []
        assert await store.grants.list("alice") == []
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert "connection was replaced" in result
        outcome = [
            r.changes["status"]
            for r in await store.audit.for_history(history_id)
            if r.action == "gate.outcome"
        ]
        assert outcome == ["failed"]
        # Asked again, the call is asked about as it stands and runs once approved.
        turn = await after.start_prompt(
            ALICE, "call delete_note " + compact({"title": "Old draft"}), history_id=history_id
        )
        ask = ask_of(await collect(turn))
        await collect(
            await after.start_answer(
                ALICE, history_id, {"toolCallId": ask["toolCallId"], **APPROVE}
            )
        )
        assert ran == [{"title": "Old draft", "keep_copy": False}]
    finally:
        await before.aclose()
        await after.aclose()


async def test_a_permission_answer_for_a_replaced_connection_saves_nothing(store: Store) -> None:
    """The level is chosen for the connection the permission ask names: answered once the tool
    belongs to another, nothing is saved for either and the call does not run."""
    ran: list[dict[str, Any]] = []
    before = notes_runtime(store, ran)
    after = notes_runtime(store, ran, connection="other-notes")
    try:
        history_id, ask = await ask_delete(before, "Old draft")
        assert ask["origin"] == "permission"
        answer = {
            "toolCallId": ask["toolCallId"],
            "action": "accept",
            "content": {"selected": ["non-consequential"]},
        }
        await collect(await after.start_answer(ALICE, history_id, answer))
        assert ran == []
        assert await store.permissions.get("alice", "other-notes") is None
        assert await store.permissions.get("alice", "notes-app") is None
    finally:
        await before.aclose()
        await after.aclose()


async def test_approvers_added_after_the_ask_hold_the_call(store: Store) -> None:
    """A tool with approvers runs only once they approve: an approval asked before its
    approvers were named, approved by the owner alone afterwards, runs nothing; asked again,
    the call waits for the approvers."""
    ran: list[dict[str, Any]] = []
    before = notes_runtime(store, ran)
    after = notes_runtime(store, ran, approvers=["bob"])
    try:
        await store.permissions.set("alice", "notes-app", "non-consequential")
        history_id, ask = await ask_delete(before, "Old draft")
        assert "approvers" not in ask
        events = await collect(
            await after.start_answer(
                ALICE, history_id, {"toolCallId": ask["toolCallId"], **APPROVE}
            )
        )
        assert ran == []
        result = next(e["toolResult"] for e in events if "toolResult" in e)["result"]
        assert "approvers changed" in result
        turn = await after.start_prompt(
            ALICE, "call delete_note " + compact({"title": "Old draft"}), history_id=history_id
        )
        ask = ask_of(await collect(turn))
        assert ask["approvers"] == ["bob"]
        bob = Principal(user_id="bob")
        await collect(
            await after.start_approval(
                bob, history_id, {"toolCallId": ask["toolCallId"], **APPROVE}
            )
        )
        assert ran == [{"title": "Old draft", "keep_copy": False}]
    finally:
        await before.aclose()
        await after.aclose()
