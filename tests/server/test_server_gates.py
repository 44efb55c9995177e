"""The server-made gates over HTTP, with the spec's notes application as the agent (see
``gates_helpers.py``): every row of the "Approval asks" table of agent-ui-asks.md (the SSE
events, approve, deny, decline, cancel, a new prompt, one slot, crafted answers, stored rows and
the request log), the headless approve and deny buttons and summaries, the permission ask on
first use, what later turns replay to the model, and clarify."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gates_helpers import (
    CLARIFY,
    CLARIFY_ANSWERS,
    FALLBACK,
    NOTES,
    SIMPLE_CARD,
    NotesApp,
    RecordingModel,
    approve,
    call,
    denied_text,
    grants,
    kinds,
    new_history,
    notes_api,
    paused_delete,
    pending_asks,
    problem,
    set_level,
    turn,
    valid,
)
from server_helpers import Api, command, compact, sqlite_url

from handrail.runtime.messages import AssistantMessage, Message, ToolResultMessage


@pytest.fixture
def notes() -> NotesApp:
    return NotesApp()


@pytest.fixture
async def api(tmp_path: Path, notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(sqlite_url(tmp_path), tmp_path, notes) as running:
        yield running


@pytest.fixture
async def any_api(database_url: str, tmp_path: Path, notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(database_url, tmp_path, notes) as running:
        yield running


# --- the "Approval asks" table ------------------------------------------------------------------


async def test_approve_runs_the_tool_once(any_api: Api, notes: NotesApp) -> None:
    """Input (the fallback wording), Ask (confirm, origin, toolName, toolCallId = approvalId),
    Approve (runs once, the model gets the result) and the stored rows and request log."""
    await set_level(any_api, "non-consequential")
    stream, held_id, approval_id = await paused_delete(any_api)
    assert kinds(stream) == ["toolCall", "ask", "done"]
    held = {"toolCallId": held_id, "toolName": "delete_note", "args": {"title": "Old draft"}}
    assert stream.events[0] == {"toolCall": held}
    ask = stream.ask
    assert ask["kind"] == "confirm"
    assert ask["origin"] == "approval"
    assert ask["toolName"] == "delete_note"
    assert approval_id.startswith("approval_")
    assert approval_id != held_id
    assert ask["input"] == FALLBACK
    valid(SIMPLE_CARD, ask["simple"])
    assert [(b["id"], b["style"]) for b in ask["simple"]["buttons"]] == [
        ("approve", "primary"),
        ("deny", "cancel"),
    ]
    assert stream.events[1]["historyId"] == stream.history_id
    assert stream.done["pendingAsk"] == {"toolCallId": approval_id}
    history = await any_api.history(stream.history_id)
    pending = history["pendingAsk"]
    assert pending["origin"] == "approval"
    assert pending["toolName"] == "delete_note"
    assert pending["approvalId"] == approval_id
    assert pending["heldToolCallId"] == held_id  # the stored call it holds, named by id
    assert not {"promptIndex", "responseMessages", "confirmationId"} & set(pending)
    assert notes.ran == []

    answered = await any_api.answer(stream.history_id, approval_id, approve())
    assert answered.status == 200, answered.problem
    assert kinds(answered)[:2] == ["askResolved", "toolResult"]
    assert answered.events[0] == {"askResolved": {"toolCallId": approval_id, "action": "accept"}}
    assert answered.events[1] == {
        "toolResult": {
            "toolCallId": held_id,
            "toolName": "delete_note",
            "result": "Deleted the note “Old draft”.",
        }
    }
    assert answered.text == 'delete_note returned: "Deleted the note “Old draft”."'
    assert "pendingAsk" not in answered.done
    assert notes.ran == ["delete_note"]
    assert [n["title"] for n in notes.notes] == ["Shopping list", "Meeting agenda"]
    # "This call only" records nothing.
    assert await grants(any_api) == []

    rows = await any_api.rows(stream.history_id)
    assert rows == [
        {"type": "user", "text": call("delete_note", {"title": "Old draft"})},
        {
            "type": "tool-call",
            "toolName": "delete_note",
            "toolCallId": held_id,
            "args": {"title": "Old draft"},
        },
        {
            "type": "tool-call",
            "toolName": "delete_note",
            "toolCallId": approval_id,
            "args": FALLBACK,
            "ask": {"kind": "confirm", "status": "answered", "origin": "approval"},
        },
        {
            "type": "tool-result",
            "toolName": "delete_note",
            "toolCallId": approval_id,
            "result": {"action": "accept", "content": {"confirmed": True}},
        },
        {
            "type": "tool-result",
            "toolName": "delete_note",
            "toolCallId": held_id,
            "result": "Deleted the note “Old draft”.",
        },
        {"type": "assistant", "text": answered.text},
    ]
    # The request log, read through the store: origin and toolName in both phases.
    log = await any_api.store.requests.list(stream.history_id)
    assert [entry.metadata["ask"] for entry in log] == [
        {
            "kind": "confirm",
            "toolCallId": approval_id,
            "origin": "approval",
            "toolName": "delete_note",
            "phase": "asked",
        },
        {
            "kind": "confirm",
            "toolCallId": approval_id,
            "origin": "approval",
            "toolName": "delete_note",
            "action": "accept",
            "phase": "answered",
        },
    ]
    # Answering again is 409: the ask was answered.
    again = await any_api.answer(stream.history_id, approval_id, approve())
    assert again.status == 409
    assert notes.ran == ["delete_note"]


@pytest.mark.parametrize(
    ("envelope", "reason"),
    [
        ({"action": "accept", "content": {"confirmed": False}}, "user_denied"),
        ({"action": "cancel"}, "user_cancelled"),
        ({"action": "cancel", "reason": "changed my mind"}, "changed my mind"),
    ],
    ids=["deny", "cancel", "cancel-with-reason"],
)
async def test_deny_and_cancel_never_run_the_tool(
    any_api: Api, notes: NotesApp, envelope: dict[str, Any], reason: str
) -> None:
    await set_level(any_api, "non-consequential")
    stream, held_id, approval_id = await paused_delete(any_api)
    answered = await any_api.answer(stream.history_id, approval_id, envelope)
    assert answered.status == 200, answered.problem
    assert answered.events[:2] == [
        {"askResolved": {"toolCallId": approval_id, "action": envelope["action"]}},
        {
            "toolResult": {
                "toolCallId": held_id,
                "toolName": "delete_note",
                "result": {"approved": False, "reason": reason},
            }
        },
    ]
    # The model reads the execution-denied result.
    assert answered.text == denied_text(reason)
    assert notes.ran == []
    assert len(notes.notes) == 3
    rows = await any_api.rows(stream.history_id)
    status = "cancelled" if envelope["action"] == "cancel" else "answered"
    approval_row = next(r for r in rows if r.get("toolCallId") == approval_id and "ask" in r)
    assert approval_row["ask"]["status"] == status
    held_result = next(r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == held_id)
    assert held_result["result"] == {"type": "execution-denied", "reason": reason}
    assert held_result["isError"] is True


async def test_decline_only_when_the_approval_allows_it(tmp_path: Path) -> None:
    def declinable(args: dict[str, Any]) -> dict[str, Any]:
        return {
            "prompt": f"Delete “{args['title']}”? You can't undo this.",
            "confirmLabel": "Delete",
            "denyLabel": "Keep it",
            "destructive": True,
            "allowDecline": True,
        }

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    # Without allowDecline (the fallback input), decline is not an answer.
    plain = NotesApp()
    async with notes_api(sqlite_url(tmp_path / "a"), tmp_path / "a", plain) as api:
        await set_level(api, "non-consequential")
        stream, _held, approval_id = await paused_delete(api)
        refused = await api.answer(stream.history_id, approval_id, {"action": "decline"})
        assert refused.status == 400
        assert refused.problem is not None
        assert refused.problem["title"] == "Invalid askResponse"
        assert [f["code"] for f in refused.problem["fields"]] == ["DECLINE_NOT_ALLOWED"]
        assert (await api.history(stream.history_id))["pendingAsk"]["toolCallId"] == approval_id
    assert plain.ran == []

    # With the agent's approvals entry setting allowDecline: user_declined.
    notes = NotesApp(asks={"approvals": {"delete_note": declinable}})
    async with notes_api(sqlite_url(tmp_path / "b"), tmp_path / "b", notes) as api:
        await set_level(api, "non-consequential")
        stream, held_id, approval_id = await paused_delete(api)
        ask = stream.ask
        assert ask["input"]["prompt"] == "Delete “Old draft”? You can't undo this."
        # Destructive approve first; the card keeps the two spec buttons, no skip.
        assert [(b["id"], b["label"], b["style"]) for b in ask["simple"]["buttons"]] == [
            ("approve", "Delete", "destructive"),
            ("deny", "Keep it", "cancel"),
        ]
        answered = await api.answer(stream.history_id, approval_id, {"action": "decline"})
        assert answered.status == 200, answered.problem
        assert answered.events[1]["toolResult"] == {
            "toolCallId": held_id,
            "toolName": "delete_note",
            "result": {"approved": False, "reason": "user_declined"},
        }
        assert answered.text == denied_text("user_declined")
    assert notes.ran == []


async def test_a_new_prompt_cancels_the_approval(any_api: Api, notes: NotesApp) -> None:
    await set_level(any_api, "non-consequential")
    stream, held_id, approval_id = await paused_delete(any_api)
    follow = await any_api.say("actually, keep it", stream.history_id)
    assert follow.events[0] == {"askResolved": {"toolCallId": approval_id, "action": "cancel"}}
    assert follow.text == "You said: actually, keep it"
    assert notes.ran == []
    rows = await any_api.rows(stream.history_id)
    assert {
        "type": "tool-result",
        "toolName": "delete_note",
        "toolCallId": approval_id,
        "result": {"action": "cancel", "reason": "user_sent_message"},
    } in rows
    assert (await any_api.history(stream.history_id))["pendingAsk"] is None
    # The cancelled approval cannot be answered any more.
    late = await any_api.answer(stream.history_id, approval_id, approve())
    assert late.status == 409
    assert notes.ran == []
    assert held_id


async def test_one_slot_shared_with_model_asks(any_api: Api, notes: NotesApp) -> None:
    await set_level(any_api, "non-consequential")
    prompt = "\n".join(
        [
            call("delete_note", {"title": "Old draft"}),
            call("delete_note", {"title": "Shopping list"}),
            command("ask_confirm", {"prompt": "Also archive them?"}),
        ]
    )
    stream = await any_api.say(prompt)
    assert stream.ask["origin"] == "approval"
    calls = [e["toolCall"] for e in stream.events if "toolCall" in e]
    assert [c["args"] for c in calls] == [{"title": "Old draft"}, {"title": "Shopping list"}]
    results = [e["toolResult"] for e in stream.events if "toolResult" in e]
    assert results == [
        {
            "toolCallId": calls[1]["toolCallId"],
            "toolName": "delete_note",
            "result": {"approved": False, "reason": "one_ask_at_a_time"},
        }
    ]
    rows = await any_api.rows(stream.history_id)
    confirm_row = next(r for r in rows if r.get("toolName") == "ask_confirm")
    assert confirm_row["ask"]["status"] == "cancelled"
    # Approving the first runs only the first; the model read the second's denial.
    answered = await any_api.answer(stream.history_id, stream.ask["toolCallId"], approve())
    assert answered.status == 200, answered.problem
    assert notes.ran == ["delete_note"]
    assert [n["title"] for n in notes.notes] == ["Shopping list", "Meeting agenda"]


async def test_crafted_answers_run_nothing(any_api: Api, notes: NotesApp) -> None:
    await set_level(any_api, "non-consequential")
    stream, held_id, approval_id = await paused_delete(any_api)
    history_id = stream.history_id

    # Another tool's id (the held host call's own id): 409.
    other = await any_api.answer(history_id, held_id, approve())
    assert other.status == 409
    assert other.problem is not None
    assert other.problem["title"] == "This ask is no longer pending"

    # An AI SDK tool-approval-response as the answer: 400.
    crafted = await any_api.answer(
        history_id,
        approval_id,
        {"type": "tool-approval-response", "approvalId": approval_id, "approved": True},
    )
    assert crafted.status == 400
    assert crafted.problem is not None
    assert crafted.problem["title"] == "Invalid askResponse"

    # ... or as the whole body: not a field of the route.
    body = {
        "historyId": history_id,
        "type": "tool-approval-response",
        "approvalId": approval_id,
        "approved": True,
    }
    response = await any_api.post("/prompt", body)
    assert problem(response, 400, "Validation failed")["code"] == "body-validation-failed"

    # A scope that is not one: 400, naming content.scope.
    bad_scope = await any_api.answer(history_id, approval_id, approve("forever"))
    assert bad_scope.status == 400
    assert bad_scope.problem is not None
    assert bad_scope.problem["title"] == "Invalid askResponse"
    assert [f["path"] for f in bad_scope.problem["fields"]] == ["content.scope"]

    # Content of another shape: 400.
    shaped = await any_api.answer(
        history_id, approval_id, {"action": "accept", "content": {"approved": True}}
    )
    assert shaped.status == 400

    # A button the card does not have, headless: 400 UNKNOWN_BUTTON.
    response = await any_api.post(
        f"/histories/{history_id}/turn", {"toolCallId": approval_id, "buttonId": "always"}
    )
    assert problem(response, 400, "Unknown buttonId")["code"] == "UNKNOWN_BUTTON"

    # Another user: 403, and nothing runs.
    bob = await any_api.answer(history_id, approval_id, approve(), user="bob")
    assert bob.status == 403

    assert notes.ran == []
    assert await grants(any_api) == []
    pending = (await any_api.history(history_id))["pendingAsk"]
    assert pending["toolCallId"] == approval_id
    # The ask is still there to answer.
    answered = await any_api.answer(history_id, approval_id, approve())
    assert answered.status == 200, answered.problem
    assert notes.ran == ["delete_note"]


async def test_scope_is_refused_on_model_asks(api: Api) -> None:
    stream = await api.say(command("ask_confirm", {"prompt": "Go?"}))
    answered = await api.answer(stream.history_id, stream.ask["toolCallId"], approve("always"))
    assert answered.status == 400
    assert answered.problem is not None
    assert [f["code"] for f in answered.problem["fields"]] == ["UNKNOWN_KEY"]
    assert await grants(api) == []


async def test_approval_on_the_compact_surface(api: Api, notes: NotesApp) -> None:
    await set_level(api, "non-consequential")
    stream = await api.say(call("delete_note", {"title": "Old draft"}), surface="compact")
    assert stream.ask["origin"] == "approval"
    assert stream.ask["simple"]["handoff"] is False


# --- what later turns replay to the model ---------------------------------------------------------


def replayed_calls(messages: list[Message]) -> list[tuple[str, str]]:
    return [
        (call.name, call.id)
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    ]


def replayed_results(messages: list[Message]) -> dict[str, Any]:
    return {m.tool_call_id: m.content for m in messages if isinstance(m, ToolResultMessage)}


async def test_approval_rows_are_not_replayed(tmp_path: Path, notes: NotesApp) -> None:
    """ "Approval rows are for display only": a later turn sees the held call and its result,
    never the approval's own call and answer."""
    model = RecordingModel()
    async with notes_api(sqlite_url(tmp_path), tmp_path, notes, model=model) as api:
        await set_level(api, "non-consequential")
        stream, held_id, approval_id = await paused_delete(api)
        await api.answer(stream.history_id, approval_id, approve())
        await api.say("thanks", stream.history_id)
    assert replayed_calls(model.seen) == [("delete_note", held_id)]
    assert replayed_results(model.seen) == {held_id: "Deleted the note “Old draft”."}


async def test_permission_rows_are_not_replayed(tmp_path: Path, notes: NotesApp) -> None:
    """A permission ask is a server-made gate like an approval: later turns must not replay its
    row as a call of the host tool (id ``permission_…``, the choice input as arguments)."""
    model = RecordingModel()
    async with notes_api(sqlite_url(tmp_path), tmp_path, notes, model=model) as api:
        stream = await api.say(call("list_notes"))
        held = next(e["toolCall"] for e in stream.events if "toolCall" in e)
        chosen = {"action": "accept", "content": {"selected": ["non-consequential"]}}
        await api.answer(stream.history_id, stream.ask["toolCallId"], chosen)
        await api.say("thanks", stream.history_id)
    assert replayed_calls(model.seen) == [("list_notes", held["toolCallId"])]
    assert list(replayed_results(model.seen)) == [held["toolCallId"]]


async def test_a_cancelled_approval_is_a_denial_the_model_sees(
    tmp_path: Path, notes: NotesApp
) -> None:
    """A new message cancels an approval "like any ask", and the model sees both: its held call
    with the execution-denied result (``user_sent_message``), then the message."""
    model = RecordingModel()
    async with notes_api(sqlite_url(tmp_path), tmp_path, notes, model=model) as api:
        await set_level(api, "non-consequential")
        stream, held_id, _approval_id = await paused_delete(api)
        await api.say("never mind", stream.history_id)
        rows = await api.rows(stream.history_id)
    denied = {"type": "execution-denied", "reason": "user_sent_message"}
    assert {
        "type": "tool-result",
        "toolName": "delete_note",
        "toolCallId": held_id,
        "result": denied,
        "isError": True,
    } in rows
    assert replayed_calls(model.seen) == [("delete_note", held_id)]
    assert replayed_results(model.seen) == {held_id: denied}
    assert notes.ran == []


# --- headless ---------------------------------------------------------------------------------


@pytest.mark.parametrize("button", ["approve", "deny"])
async def test_headless_approve_and_deny(any_api: Api, notes: NotesApp, button: str) -> None:
    await set_level(any_api, "non-consequential")
    history_id = await new_history(any_api)
    first = await turn(any_api, history_id, {"prompt": call("delete_note", {"title": "Old draft"})})
    pending = first["pendingAsk"]
    approval_id = pending["toolCallId"]
    # A plain confirm: no origin, no toolName.
    assert set(pending) == {"toolCallId", "kind", "simple"}
    assert pending["kind"] == "confirm"
    assert [b["id"] for b in pending["simple"]["buttons"]] == ["approve", "deny"]
    assert first["text"] == ""

    [entry] = await pending_asks(any_api)
    assert set(entry) == {"historyId", "title", "toolCallId", "kind", "simple", "created"}
    assert entry["toolCallId"] == approval_id
    assert entry["kind"] == "confirm"
    assert entry["simple"] == pending["simple"]
    assert await pending_asks(any_api, user="bob") == []

    result = await turn(any_api, history_id, {"toolCallId": approval_id, "buttonId": button})
    assert "pendingAsk" not in result
    assert "error" not in result
    if button == "approve":
        assert result["text"] == 'delete_note returned: "Deleted the note “Old draft”."'
        assert notes.ran == ["delete_note"]
    else:
        assert result["text"] == denied_text("user_denied")
        assert notes.ran == []
    assert await pending_asks(any_api) == []
    log = await any_api.store.requests.list(history_id)
    assert log[-1].metadata["ask"]["origin"] == "approval"
    assert log[-1].metadata["ask"]["toolName"] == "delete_note"


async def test_headless_approval_with_scope(api: Api, notes: NotesApp) -> None:
    await set_level(api, "non-consequential")
    history_id = await new_history(api)
    first = await turn(api, history_id, {"prompt": call("delete_note", {"title": "Old draft"})})
    approval_id = first["pendingAsk"]["toolCallId"]
    body = {"askResponse": {"toolCallId": approval_id, **approve("conversation")}}
    result = await turn(api, history_id, body)
    assert result["text"].startswith("delete_note returned:")
    [grant] = await grants(api)
    assert grant["scope"] == "conversation"
    assert grant["historyId"] == history_id


# --- the permission ask -------------------------------------------------------------------------


async def test_permission_ask_on_first_use(any_api: Api, notes: NotesApp) -> None:
    history_id = await new_history(any_api)
    first = await turn(any_api, history_id, {"prompt": call("list_notes")})
    pending = first["pendingAsk"]
    assert pending["kind"] == "choice"
    assert [b["id"] for b in pending["simple"]["buttons"]] == [
        "option:ask",
        "option:read-only",
        "option:non-consequential",
    ]
    assert pending["simple"]["handoff"] is False
    [entry] = await pending_asks(any_api)
    assert entry["kind"] == "choice"
    assert "origin" not in entry
    # The full view names the gate.
    stored = (await any_api.history(history_id))["pendingAsk"]
    assert stored["origin"] == "permission"
    assert stored["toolName"] == "list_notes"
    assert notes.ran == []

    button = {"toolCallId": pending["toolCallId"], "buttonId": "option:non-consequential"}
    result = await turn(any_api, history_id, button)
    assert result["text"] == "list_notes returned: " + compact(notes.notes)
    assert "pendingAsk" not in result
    assert notes.ran == ["list_notes"]
    listed = (await any_api.get("/permissions")).json()["data"]
    assert [(s["connectionId"], s["level"]) for s in listed["saved"]] == [
        (NOTES, "non-consequential")
    ]

    # Saved: listing and adding run without a question now; deleting asks.
    added = await any_api.say(call("add_note", {"title": "Reading list", "body": "Dune."}))
    assert "ask" not in kinds(added)
    deleting = await any_api.say(call("delete_note", {"title": "Old draft"}))
    assert deleting.ask["origin"] == "approval"
    assert notes.ran == ["list_notes", "add_note"]


async def test_a_level_below_the_call_pauses_on_its_approval(api: Api, notes: NotesApp) -> None:
    history_id = await new_history(api)
    first = await turn(api, history_id, {"prompt": call("add_note", {"title": "A", "body": "B"})})
    button = {"toolCallId": first["pendingAsk"]["toolCallId"], "buttonId": "option:read-only"}
    second = await turn(api, history_id, button)
    # add_note is mutating, above read-only: the held call now waits on its approval.
    assert second["pendingAsk"]["kind"] == "confirm"
    assert (await api.history(history_id))["pendingAsk"]["origin"] == "approval"
    assert notes.ran == []
    approval = {"toolCallId": second["pendingAsk"]["toolCallId"], "buttonId": "approve"}
    third = await turn(api, history_id, approval)
    assert third["text"] == 'add_note returned: "Added the note “A”."'
    assert notes.ran == ["add_note"]


async def test_declining_the_permission_ask_saves_nothing(api: Api, notes: NotesApp) -> None:
    stream = await api.say(call("list_notes"))
    assert stream.ask["origin"] == "permission"
    held = next(e["toolCall"] for e in stream.events if "toolCall" in e)
    answered = await api.answer(stream.history_id, stream.ask["toolCallId"], {"action": "decline"})
    assert answered.events[1]["toolResult"] == {
        "toolCallId": held["toolCallId"],
        "toolName": "list_notes",
        "result": {"approved": False, "reason": "user_declined"},
    }
    assert notes.ran == []
    assert (await api.get("/permissions")).json()["data"]["saved"] == []
    # A level that is not offered is refused.
    again = await api.say(call("list_notes"))
    unknown = {"action": "accept", "content": {"selected": ["all"]}}
    refused = await api.answer(again.history_id, again.ask["toolCallId"], unknown)
    assert refused.status == 400


# --- clarify ----------------------------------------------------------------------------------


async def test_clarify_from_a_yaml_agent(any_api: Api) -> None:
    history_id = await new_history(any_api, "asker")
    first = await turn(any_api, history_id, {"prompt": "clarify " + compact(CLARIFY)})
    pending = first["pendingAsk"]
    # Two prompts: the card is a form that hands off.
    assert pending["kind"] == "form"
    assert pending["simple"]["kind"] == "form"
    assert pending["simple"]["handoff"] is True
    valid(SIMPLE_CARD, pending["simple"])
    [entry] = await pending_asks(any_api)
    assert entry["kind"] == "form"
    assert entry["toolCallId"] == pending["toolCallId"]
    stored = (await any_api.history(history_id))["pendingAsk"]
    assert stored["kind"] == "clarify"
    assert stored["input"]["protocol"] == "appwrite.clarify/v1"
    assert "origin" not in stored

    # A ClarifyAnswers that misses a required prompt is refused; the ask stays.
    short = {"protocol": "appwrite.clarify/v1", "answers": []}
    refused = {"toolCallId": pending["toolCallId"], "action": "accept", "content": short}
    response = await any_api.post(f"/histories/{history_id}/turn", {"askResponse": refused})
    problem(response, 400, "Invalid askResponse")

    answer = {"action": "accept", "content": CLARIFY_ANSWERS}
    result = await turn(
        any_api, history_id, {"askResponse": {"toolCallId": pending["toolCallId"], **answer}}
    )
    assert result["text"] == "clarify returned: " + compact(answer)
    assert await pending_asks(any_api) == []
    rows = await any_api.rows(history_id)
    call_row = next(r for r in rows if r.get("toolName") == "clarify" and r["type"] == "tool-call")
    assert call_row["ask"] == {"kind": "clarify", "status": "answered"}


async def test_clarify_of_one_choice_answers_by_button(api: Api) -> None:
    one = {
        "prompts": [
            {
                "id": "region",
                "kind": "choice",
                "question": "Which region?",
                "options": [{"id": "eu", "label": "Europe"}, {"id": "us", "label": "USA"}],
            }
        ]
    }
    stream = await api.say("clarify " + compact(one), agent="asker")
    ask = stream.ask
    assert ask["kind"] == "clarify"
    assert "origin" not in ask
    assert ask["simple"]["kind"] == "choice"
    [entry] = await pending_asks(api)
    assert entry["kind"] == "choice"
    assert [b["id"] for b in entry["simple"]["buttons"]][:2] == ["option:eu", "option:us"]
    result = await turn(
        api, stream.history_id, {"toolCallId": ask["toolCallId"], "buttonId": "option:eu"}
    )
    assert result["text"].startswith("clarify returned: ")
    content = json.loads(result["text"].removeprefix("clarify returned: "))["content"]
    assert content["answers"] == [{"id": "region", "kind": "choice", "values": ["eu"]}]


async def test_no_mutation_in_the_clarify_step(api: Api, notes: NotesApp) -> None:
    await set_level(api, "non-consequential")
    prompt = "\n".join(
        [
            call("add_note", {"title": "A", "body": "B"}),
            call("list_notes"),
            "clarify " + compact(CLARIFY),
        ]
    )
    stream = await api.say(prompt)
    results = [e["toolResult"] for e in stream.events if "toolResult" in e]
    assert [r["toolName"] for r in results] == ["add_note", "list_notes"]
    assert str(results[0]["result"]).startswith("clarify was called in this step")
    assert notes.ran == ["list_notes"]
    assert stream.ask["kind"] == "clarify"
