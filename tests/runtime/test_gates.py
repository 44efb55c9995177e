"""Tools under the safety policy: the spec's notes application, permission and approval asks,
grants, and clarify — in process, on SQLite and PostgreSQL, with the scripted model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from doubles import add_notes_tools, starting_notes
from handrail.errors import Conflict, InvalidRequest
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")
CONNECTION = "local:notes"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def call(tool: str, args: dict[str, Any] | None = None) -> str:
    return f"call {tool} {compact(args or {})}"


def notes_agent(**options: Any) -> tuple[Agent, list[dict[str, str]], list[str]]:
    """The notes application of tool-safety-classes.md as an agent's tools."""
    notes, ran = starting_notes(), []
    agent = Agent("notes", instructions="You manage notes.", **options)
    add_notes_tools(agent, notes, ran)
    return agent, notes, ran


async def events_of(turn_coro: Any) -> list[dict[str, Any]]:
    turn = await turn_coro
    return [event async for event in turn.stream()]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [next(iter(e)) for e in events]


class Chat:
    """One conversation of alice with the notes agent."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.history_id: str | None = None

    async def say(self, prompt: str) -> list[dict[str, Any]]:
        turn = await self.runtime.start_prompt(ALICE, prompt, history_id=self.history_id)
        self.history_id = turn.history_id
        return [e async for e in turn.stream()]

    async def answer(self, events: list[dict[str, Any]], **envelope: Any) -> list[dict[str, Any]]:
        ask = next(e["ask"] for e in events if "ask" in e)
        assert self.history_id is not None
        response = {"toolCallId": ask["toolCallId"], **envelope}
        return await events_of(self.runtime.start_answer(ALICE, self.history_id, response))


def approve(scope: str | None = None) -> dict[str, Any]:
    content: dict[str, Any] = {"confirmed": True}
    if scope is not None:
        content["scope"] = scope
    return {"action": "accept", "content": content}


async def test_first_use_asks_for_the_permission_level(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("list_notes"))
    assert kinds(events) == ["toolCall", "ask", "done"]
    ask = events[1]["ask"]
    assert ask["kind"] == "choice"
    assert ask["origin"] == "permission"
    assert ask["toolName"] == "list_notes"
    assert [o["id"] for o in ask["input"]["options"]] == ["ask", "read-only", "non-consequential"]
    assert [b["id"] for b in ask["simple"]["buttons"]] == [
        "option:ask",
        "option:read-only",
        "option:non-consequential",
    ]
    assert ran == []
    events = await chat.answer(events, action="accept", content={"selected": ["non-consequential"]})
    assert ran == ["list_notes"]
    assert kinds(events)[:2] == ["askResolved", "toolResult"]
    level = await store.permissions.get("alice", CONNECTION)
    assert level is not None
    assert level.level == "non-consequential"
    # Saved: the next conversation does not ask again.
    other = Chat(chat.runtime)
    events = await other.say(call("list_notes"))
    assert "ask" not in kinds(events)
    assert ran == ["list_notes", "list_notes"]


async def test_notes_at_non_consequential(store: Store) -> None:
    agent, notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    # Listing and adding run without a question.
    events = await chat.say(call("list_notes"))
    assert kinds(events) == ["toolCall", "toolResult", "text", *kinds(events)[3:]]
    assert "ask" not in kinds(events)
    events = await chat.say(call("add_note", {"title": "Reading list", "body": "Dune."}))
    assert "ask" not in kinds(events)
    assert ran == ["list_notes", "add_note"]
    # Deleting asks: approval with the fallback wording.
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    ask = next(e["ask"] for e in events if "ask" in e)
    assert ask["kind"] == "confirm"
    assert ask["origin"] == "approval"
    assert ask["toolName"] == "delete_note"
    assert ask["input"] == {
        "title": "delete_note",
        "prompt": "Allow delete_note, title: Old draft?",
        "confirmLabel": "Allow",
        "denyLabel": "Deny",
    }
    assert [b["id"] for b in ask["simple"]["buttons"]] == ["approve", "deny"]
    assert "delete_note" not in ran
    # "This call only" runs it once and records nothing.
    events = await chat.answer(events, **approve())
    assert ran.count("delete_note") == 1
    assert [n["title"] for n in notes] == ["Shopping list", "Meeting agenda", "Reading list"]
    assert await store.grants.list("alice") == []
    # ... so the next delete asks again.
    events = await chat.say(call("delete_note", {"title": "Shopping list"}))
    assert "ask" in kinds(events)


async def test_always_stops_asking_for_that_tool_only(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "read-only")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    events = await chat.answer(events, **approve("always"))
    assert ran == ["delete_note"]
    grants = await store.grants.list("alice")
    assert [(g.connection_id, g.tool_name, g.scope) for g in grants] == [
        (CONNECTION, "delete_note", "always")
    ]
    # delete_note runs without a question now, in any conversation ...
    other = Chat(chat.runtime)
    events = await other.say(call("delete_note", {"title": "Meeting agenda"}))
    assert "ask" not in kinds(events)
    assert ran == ["delete_note", "delete_note"]
    # ... but add_note (mutating, above read-only) still asks.
    events = await other.say(call("add_note", {"title": "A", "body": "B"}))
    assert next(e["ask"] for e in events if "ask" in e)["toolName"] == "add_note"


async def test_conversation_grant_stays_in_its_conversation(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
    chat = Chat(runtime)
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    await chat.answer(events, **approve("conversation"))
    events = await chat.say(call("delete_note", {"title": "Shopping list"}))
    assert "ask" not in kinds(events)
    events = await Chat(runtime).say(call("delete_note", {"title": "Meeting agenda"}))
    assert "ask" in kinds(events)
    assert ran == ["delete_note", "delete_note"]


async def test_a_missing_title_returns_the_titles(store: Store) -> None:
    agent, _notes, _ran = notes_agent()
    await store.grants.add("alice", CONNECTION, "delete_note", "always")
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Taxes"}))
    assert text_of(events) == (
        "delete_note failed: No note is titled “Taxes”. "
        "The notes are: Shopping list, Old draft, Meeting agenda."
    )


async def test_at_level_ask_even_listing_asks(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "ask")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("list_notes"))
    assert next(e["ask"] for e in events if "ask" in e)["origin"] == "approval"
    assert ran == []


@pytest.mark.parametrize(
    ("envelope", "reason"),
    [
        ({"action": "accept", "content": {"confirmed": False}}, "user_denied"),
        ({"action": "cancel"}, "user_cancelled"),
        ({"action": "cancel", "reason": "not now"}, "not now"),
    ],
)
async def test_deny_and_cancel_never_run_the_tool(
    store: Store, envelope: dict[str, Any], reason: str
) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    held = next(e["toolCall"] for e in events if "toolCall" in e)
    events = await chat.answer(events, **envelope)
    assert ran == []
    assert events[1] == {
        "toolResult": {
            "toolCallId": held["toolCallId"],
            "toolName": "delete_note",
            "result": {"approved": False, "reason": reason},
        }
    }
    denied = compact({"type": "execution-denied", "reason": reason})
    assert text_of(events) == f"delete_note failed: {denied}"


async def test_decline_only_when_the_approval_allows_it(store: Store) -> None:
    agent, _notes, ran = notes_agent(
        asks={
            "approvals": {
                "delete_note": lambda args: {
                    "prompt": f"Delete “{args['title']}”? You can't undo this.",
                    "confirmLabel": "Delete",
                    "denyLabel": "Keep it",
                    "destructive": True,
                    "allowDecline": True,
                }
            }
        }
    )
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    ask = next(e["ask"] for e in events if "ask" in e)
    assert ask["input"]["prompt"] == "Delete “Old draft”? You can't undo this."
    assert ask["simple"]["buttons"][0]["style"] == "destructive"
    events = await chat.answer(events, action="decline")
    assert events[1]["toolResult"]["result"] == {"approved": False, "reason": "user_declined"}
    assert ran == []


async def test_approvals_input_falls_back_when_it_raises_or_is_invalid(store: Store) -> None:
    def broken(args: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    for make in (broken, lambda args: {"prompt": ""}):
        agent, _notes, _ran = notes_agent(asks={"approvals": {"delete_note": make}})
        await store.permissions.set("alice", CONNECTION, "non-consequential")
        chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
        events = await chat.say(call("delete_note", {"title": "Old draft"}))
        ask = next(e["ask"] for e in events if "ask" in e)
        assert ask["input"]["confirmLabel"] == "Allow"


async def test_a_new_prompt_cancels_the_approval(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    approval_id = next(e["ask"] for e in events if "ask" in e)["toolCallId"]
    events = await chat.say("actually, keep it")
    assert events[0] == {"askResolved": {"toolCallId": approval_id, "action": "cancel"}}
    assert ran == []
    assert text_of(events) == "You said: actually, keep it"


async def test_one_slot_shared_with_model_asks(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    prompt = "\n".join(
        [
            call("delete_note", {"title": "Old draft"}),
            call("delete_note", {"title": "Shopping list"}),
            'ask_confirm {"prompt": "Also archive?"}',
        ]
    )
    events = await chat.say(prompt)
    asks = [e["ask"] for e in events if "ask" in e]
    assert len(asks) == 1
    assert asks[0]["origin"] == "approval"
    second = [e["toolResult"] for e in events if "toolResult" in e]
    assert [r["result"] for r in second] == [{"approved": False, "reason": "one_ask_at_a_time"}]
    assert chat.history_id is not None
    rows = [r.data for r in await store.histories.rows(chat.history_id)]
    confirm_row = next(r for r in rows if r.get("toolName") == "ask_confirm")
    assert confirm_row["ask"]["status"] == "cancelled"
    assert ran == []


async def test_crafted_answers_run_nothing(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
    chat = Chat(runtime)
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    held = next(e["toolCall"] for e in events if "toolCall" in e)
    assert chat.history_id is not None
    # The host tool's own call id is not the pending ask.
    with pytest.raises(Conflict):
        await runtime.start_answer(
            ALICE, chat.history_id, {"toolCallId": held["toolCallId"], **approve()}
        )
    approval_id = next(e["ask"] for e in events if "ask" in e)["toolCallId"]
    for bad in (
        {"type": "tool-approval-response", "approved": True},
        {"action": "accept", "content": {"confirmed": True, "scope": "forever"}},
        {"action": "accept", "content": {"approved": True}},
    ):
        with pytest.raises(InvalidRequest):
            await runtime.start_answer(ALICE, chat.history_id, {"toolCallId": approval_id, **bad})
    assert ran == []
    history = await store.histories.get(chat.history_id)
    assert history is not None
    assert history.pending_ask is not None


async def test_scope_is_refused_on_model_asks(store: Store) -> None:
    agent, _notes, _ran = notes_agent()
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say('ask_confirm {"prompt": "Go?"}')
    with pytest.raises(InvalidRequest) as caught:
        await chat.answer(events, action="accept", content={"confirmed": True, "scope": "always"})
    assert [f["code"] for f in caught.value.fields] == ["UNKNOWN_KEY"]  # type: ignore[union-attr]


async def test_approval_rows_and_request_log(store: Store) -> None:
    agent, _notes, _ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    ask = next(e["ask"] for e in events if "ask" in e)
    await chat.answer(events, **approve())
    assert chat.history_id is not None
    rows = [r.data for r in await store.histories.rows(chat.history_id)]
    assert [(r["type"], r.get("toolName"), r.get("ask")) for r in rows] == [
        ("user", None, None),
        ("tool-call", "delete_note", None),
        (
            "tool-call",
            "delete_note",
            {"kind": "confirm", "status": "answered", "origin": "approval"},
        ),
        ("tool-result", "delete_note", None),
        ("tool-result", "delete_note", None),
        ("assistant", None, None),
    ]
    assert rows[2]["args"] == ask["input"]
    assert rows[3]["result"] == {"action": "accept", "content": {"confirmed": True}}
    assert rows[4]["result"] == "Deleted the note “Old draft”."
    log = await store.requests.list(chat.history_id)
    assert log[0].metadata["ask"] == {
        "kind": "confirm",
        "toolCallId": ask["toolCallId"],
        "origin": "approval",
        "toolName": "delete_note",
        "phase": "asked",
    }
    assert log[1].metadata["ask"]["phase"] == "answered"
    assert log[1].metadata["ask"]["origin"] == "approval"


async def test_asks_off_denies_what_would_ask(store: Store) -> None:
    agent, _notes, ran = notes_agent(asks=False)
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("delete_note", {"title": "Old draft"}))
    assert "ask" not in kinds(events)
    assert ran == []
    assert text_of(events).startswith("delete_note failed: This consequential tool needs")


async def test_invalid_arguments_go_back_to_the_model(store: Store) -> None:
    agent, _notes, ran = notes_agent()
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say(call("add_note", {"title": 3}))
    assert "ask" not in kinds(events)
    assert text_of(events).startswith("add_note failed: Invalid arguments for add_note:")
    assert ran == []


CLARIFY = {
    "title": "Create database",
    "prompts": [
        {"id": "name", "kind": "text", "question": "Database name", "placeholder": "main"},
        {
            "id": "id_mode",
            "kind": "choice",
            "question": "Database ID",
            "options": [
                {"id": "unique", "label": "Auto-generate (unique())"},
                {"id": "custom", "label": "I'll provide a custom ID"},
            ],
        },
    ],
}


async def test_clarify_pauses_and_takes_clarify_answers(store: Store) -> None:
    agent, _notes, _ran = notes_agent(clarify=True)
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say("clarify " + compact(CLARIFY))
    ask = next(e["ask"] for e in events if "ask" in e)
    assert ask["kind"] == "clarify"
    assert ask["input"]["protocol"] == "appwrite.clarify/v1"
    assert ask["simple"]["handoff"] is True
    answers = {
        "protocol": "appwrite.clarify/v1",
        "answers": [
            {"id": "name", "kind": "text", "value": "main"},
            {"id": "id_mode", "kind": "choice", "values": ["unique"]},
        ],
    }
    with pytest.raises(InvalidRequest):
        await chat.answer(
            events, action="accept", content={"protocol": "appwrite.clarify/v1", "answers": []}
        )
    events = await chat.answer(events, action="accept", content=answers)
    assert text_of(events) == "clarify returned: " + compact(
        {"action": "accept", "content": answers}
    )


async def test_invalid_clarify_goes_back_to_the_model(store: Store) -> None:
    agent, _notes, _ran = notes_agent(clarify=True)
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say('clarify {"prompts": []}')
    assert "ask" not in kinds(events)
    assert text_of(events).startswith("clarify failed: Error: invalid clarify prompts — ")


async def test_a_message_instead_cancels_clarify(store: Store) -> None:
    agent, _notes, _ran = notes_agent(clarify=True)
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    events = await chat.say("clarify " + compact(CLARIFY))
    clarify_id = next(e["ask"] for e in events if "ask" in e)["toolCallId"]
    events = await chat.say("name it main, auto id")
    assert events[0] == {"askResolved": {"toolCallId": clarify_id, "action": "cancel"}}
    assert text_of(events) == "You said: name it main, auto id"


async def test_no_mutation_in_the_clarify_step(store: Store) -> None:
    agent, _notes, ran = notes_agent(clarify=True)
    await store.permissions.set("alice", CONNECTION, "non-consequential")
    chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
    prompt = call("add_note", {"title": "A", "body": "B"}) + "\n" + call("list_notes") + "\n"
    prompt += "clarify " + compact(CLARIFY)
    events = await chat.say(prompt)
    results = [e["toolResult"] for e in events if "toolResult" in e]
    assert [r["toolName"] for r in results] == ["add_note", "list_notes"]
    assert str(results[0]["result"]).startswith("clarify was called in this step")
    assert ran == ["list_notes"]
    assert next(e["ask"] for e in events if "ask" in e)["kind"] == "clarify"
