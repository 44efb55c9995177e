"""Server-made asks speak to the person: a tool's human title in place of its name, a
confirmation's prompt and simple card built from its preview and expiry (deny only when the
preview does not fit), a selection that says what is being chosen, and a deny with a note that
reaches the model — with the scripted model, the example booking API on loopback, on SQLite
and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft7Validator

from doubles import starting_notes
from handrail.actions import ActionConfigError, compile_action_set
from handrail.asks.schemas import SCHEMAS_FOLDER
from handrail.demo.booking_api import booking_action_set, create_booking_app, serve_booking_api
from handrail.errors import ConfigError, InvalidRequest, UnknownButton
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import Tool, ToolSet
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")
DATE = "2026-12-04"
CARD_SCHEMA = Draft7Validator(
    json.loads((SCHEMAS_FOLDER / "simpleCard.schema.json").read_text(encoding="utf-8"))
)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


def ask_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["ask"] for e in events if "ask" in e)


def assert_valid_card(card: dict[str, Any]) -> None:
    errors = [e.message for e in CARD_SCHEMA.iter_errors(card)]
    assert errors == [], errors


class Chat:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.history_id: str | None = None

    async def say(self, prompt: str) -> list[dict[str, Any]]:
        turn = await self.runtime.start_prompt(ALICE, prompt, history_id=self.history_id)
        self.history_id = turn.history_id
        return [e async for e in turn.stream()]

    async def answer(self, ask: dict[str, Any], **envelope: Any) -> list[dict[str, Any]]:
        assert self.history_id is not None
        response = {"toolCallId": ask["toolCallId"], **envelope}
        turn = await self.runtime.start_answer(ALICE, self.history_id, response)
        return [e async for e in turn.stream()]


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(database_url, blob_dir=tmp_path / "files")
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def booking(store: Store) -> AsyncIterator[Chat]:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
        await store.permissions.set("alice", "booking", "non-consequential")
        try:
            yield chat
        finally:
            await chat.runtime.aclose()


def notes_chat(store: Store) -> tuple[Chat, list[str]]:
    """The notes tools with human titles, as a trusted tool set."""
    notes, ran = starting_notes(), []
    tools = ToolSet("notes-app", "Notes")

    @tools.tool(title="Delete a note", consequential=True, destructive=True, open_world=False)
    def delete_note(title: str) -> str:
        """Delete the note with this exact title. It cannot be undone."""
        ran.append("delete_note")
        notes[:] = [n for n in notes if n["title"] != title]
        return f"Deleted the note “{title}”."

    agent = Agent("notes", tool_sets=[tools])
    return Chat(Runtime(store=store, agents=agent, model=ScriptedModel())), ran


# --- the watch booking case ----------------------------------------------------------------


async def test_a_confirmation_shows_its_preview_and_expiry_on_the_card(booking: Chat) -> None:
    args = {"date": DATE, "time": "19:00", "notes": "A table for two"}
    ask = ask_of(await booking.say("call book_slot " + compact(args)))
    assert ask["origin"] == "confirmation"
    assert ask["toolName"] == "book_slot"
    # The title and the prompt are the person's words, never the tool's description.
    assert ask["input"]["title"] == "Book a table"
    prompt = "Book a table on 2026-12-04 at 19:00, notes: A table for two?"
    assert ask["input"]["prompt"] == prompt
    clock = ask["expiresAt"][11:19]
    card = ask["simple"]
    assert card["title"] == "Book a table"
    assert card["text"] == f"{prompt} Expires {clock} UTC."
    assert [b["id"] for b in card["buttons"]] == ["approve", "deny"]
    assert card["handoff"] is False
    assert_valid_card(card)


async def test_a_preview_too_long_for_the_card_offers_only_deny(booking: Chat) -> None:
    notes = "Please seat us by the window, we are celebrating a birthday " * 3
    args = {"date": DATE, "time": "19:00", "notes": notes.strip()}
    ask = ask_of(await booking.say("call book_slot " + compact(args)))
    card = ask["simple"]
    assert card["handoff"] is True
    assert [b["id"] for b in card["buttons"]] == ["deny"]
    assert card["buttons"][0]["response"] == {"action": "accept", "content": {"confirmed": False}}
    assert card["text"].startswith("Book a table on 2026-12-04 at 19:00, notes: Please seat")
    assert "…" in card["text"]
    assert card["text"].endswith(f"Expires {ask['expiresAt'][11:19]} UTC.")
    assert len(card["text"]) <= 140
    assert_valid_card(card)
    # The full ask still shows the whole preview, and can be confirmed in the full app.
    assert ask["preview"]["notes"] == notes.strip()


async def test_a_watch_never_confirms_a_preview_it_cannot_show(store: Store) -> None:
    """The watch booking case: the card's approve button is not there to press (a crafted
    ``buttonId: "approve"`` is refused and nothing is sent); its deny button denies; only the
    full app's confirm books it, once."""
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
        await store.permissions.set("alice", "booking", "non-consequential")
        http = httpx.AsyncClient(base_url=base_url)

        async def bookings() -> int:
            stats = (await http.get("/stats")).json()["requests"]
            return sum(1 for r in stats if r["method"] == "POST" and r["path"] == "/bookings")

        async def press(ask: dict[str, Any], button_id: str) -> list[dict[str, Any]]:
            assert chat.history_id is not None
            turn = await chat.runtime.start_button(
                ALICE, chat.history_id, ask["toolCallId"], button_id, surface="compact"
            )
            return [e async for e in turn.stream()]

        try:
            notes = ("Please seat us by the window, we are celebrating a birthday " * 3).strip()
            args = {"date": DATE, "time": "19:00", "notes": notes}
            ask = ask_of(await chat.say("call book_slot " + compact(args)))
            assert ask["simple"]["handoff"] is True
            with pytest.raises(UnknownButton):
                await press(ask, "approve")
            assert await bookings() == 0
            assert chat.history_id is not None
            history = await store.histories.get(chat.history_id)
            assert history is not None
            assert history.pending_ask is not None
            assert history.pending_ask.tool_call_id == ask["toolCallId"]
            denied = await press(ask, "deny")
            result = next(e["toolResult"] for e in denied if "toolResult" in e)["result"]
            assert result == {"approved": False, "reason": "user_denied"}
            assert await bookings() == 0
            # Asked again, the full app (which shows the whole preview) confirms it once.
            again = ask_of(await chat.say("call book_slot " + compact(args)))
            await chat.answer(again, action="accept", content={"confirmed": True})
            assert await bookings() == 1
        finally:
            await chat.runtime.aclose()
            await http.aclose()


async def test_a_selection_says_what_is_chosen(booking: Chat) -> None:
    ask = ask_of(await booking.say("call book_slot " + compact({"date": DATE})))
    assert ask["origin"] == "selection"
    assert ask["input"]["title"] == "Choose a time"
    assert ask["input"]["prompt"] == "Several fit. Which time for Book a table on 2026-12-04?"


# --- a human title in each gate -------------------------------------------------------------


async def test_the_title_names_the_tool_in_approval_and_permission_asks(store: Store) -> None:
    chat, ran = notes_chat(store)
    events = await chat.say("call delete_note " + compact({"title": "Old draft"}))
    permission = ask_of(events)
    assert permission["origin"] == "permission"
    assert permission["input"]["prompt"].startswith("Notes wants to use “Delete a note”. ")
    events = await chat.answer(permission, action="accept", content={"selected": ["ask"]})
    approval = ask_of(events)
    assert approval["origin"] == "approval"
    assert approval["toolName"] == "delete_note"
    # What the call does with its arguments, in plain words; never the tool's description.
    assert approval["input"]["title"] == "Delete a note"
    assert approval["input"]["prompt"] == "Allow Delete a note, title: Old draft?"
    assert "cannot be undone" not in json.dumps(approval)
    assert ran == []


async def test_the_title_of_an_action_names_it_in_a_permission_ask(store: Store) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        chat = Chat(Runtime(store=store, agents=agent, model=ScriptedModel()))
        try:
            ask = ask_of(await chat.say("call find_slots " + compact({"date": DATE})))
        finally:
            await chat.runtime.aclose()
    assert ask["origin"] == "permission"
    assert ask["input"]["prompt"].startswith("Example booking wants to use “Find free tables”. ")


# --- deny with a note -----------------------------------------------------------------------


async def test_an_approval_denied_with_a_note_tells_the_model_why(store: Store) -> None:
    chat, ran = notes_chat(store)
    await store.permissions.set("alice", "notes-app", "non-consequential")
    approval = ask_of(await chat.say("call delete_note " + compact({"title": "Shopping list"})))
    note = "Keep it, I still need the shopping list"
    events = await chat.answer(approval, action="cancel", reason=note)
    assert ran == []
    result = next(e["toolResult"] for e in events if "toolResult" in e)
    assert result["result"] == {"approved": False, "reason": note}
    denied = compact({"type": "execution-denied", "reason": note})
    assert text_of(events) == f"delete_note failed: {denied}"


async def test_a_confirmation_denied_with_a_note_sends_nothing(booking: Chat) -> None:
    args = {"date": DATE, "time": "19:00", "notes": "A table for two"}
    ask = ask_of(await booking.say("call book_slot " + compact(args)))
    events = await booking.answer(ask, action="cancel", reason="Make it 20:00 instead")
    result = next(e["toolResult"] for e in events if "toolResult" in e)
    assert result["result"] == {"approved": False, "reason": "Make it 20:00 instead"}
    denied = compact({"type": "execution-denied", "reason": "Make it 20:00 instead"})
    assert text_of(events) == f"book_slot failed: {denied}"
    assert ask["toolCallId"].startswith("confirmation_")


async def test_a_note_longer_than_200_characters_is_refused(store: Store) -> None:
    chat, ran = notes_chat(store)
    await store.permissions.set("alice", "notes-app", "non-consequential")
    approval = ask_of(await chat.say("call delete_note " + compact({"title": "Shopping list"})))
    with pytest.raises(InvalidRequest) as caught:
        await chat.answer(approval, action="cancel", reason="x" * 201)
    assert "reason" in repr(vars(caught.value))
    assert ran == []


# --- declaring a title ----------------------------------------------------------------------


def test_a_title_is_1_to_80_characters_of_text() -> None:
    def purge() -> None:
        """Purge everything."""

    assert Tool.from_function(purge, title="Purge everything").label == "Purge everything"
    assert Tool.from_function(purge).label == "purge"
    for bad in ("", "   ", "x" * 81):
        with pytest.raises(ConfigError, match="title must be 1-80 characters"):
            Tool.from_function(purge, title=bad)


ACTIONS = """\
id: shop
name: Shop
base_url: http://127.0.0.1:9/
tools:
  - name: find_items
    description: Items.
    request: {method: GET, path: /items}
  - name: order
    title: Place an order
    description: Order an item.
    request: {method: POST, path: /orders}
    behavior: {effect: side-effect, confirmation: {required: true}}
"""


def test_an_action_title_is_compiled_and_checked() -> None:
    actions = compile_action_set(ACTIONS, env={})
    assert actions.tool("order").title == "Place an order"
    assert actions.tool("find_items").title is None
    assert "title" not in actions.tool("find_items").to_config()
    with pytest.raises(ActionConfigError) as caught:
        compile_action_set(ACTIONS.replace("Place an order", "x" * 81), env={})
    assert [(p.code, p.path) for p in caught.value.problems] == [
        ("CONFIG_SCHEMA_INVALID", "tools[1].title")
    ]
