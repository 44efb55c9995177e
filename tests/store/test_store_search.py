"""Search in the database (`handrail.store.search`): the conversations by title and messages,
the inbox by the ask's title and prompt, case-insensitively (non-ASCII letters too) and
literally (``%`` and ``_`` are plain characters), a page at a time, on both backends; and the
migration that gives existing rows their keys."""

from __future__ import annotations

from typing import Any

from alembic import command
from sqlalchemy import Connection, insert

from handrail._util import utc_now
from handrail.asks import PendingAsk
from handrail.store import Database, HistoryChange, Store
from handrail.store.db import alembic_config, row_count
from handrail.store.histories import HistoryRepo
from handrail.store.search import KEY_MAX, ask_key, like_pattern, search_key, text_key
from handrail.store.tables import histories, history_rows


def ask(tool_call_id: str, **input: Any) -> PendingAsk:
    return PendingAsk.from_json(
        {
            "toolCallId": tool_call_id,
            "kind": "choice",
            "input": input,
            "simple": {"buttons": []},
            "created": utc_now().isoformat(),
        }
    )


def clarify(tool_call_id: str, *questions: str) -> PendingAsk:
    return PendingAsk.from_json(
        {
            "toolCallId": tool_call_id,
            "kind": "clarify",
            "input": {"protocol": 1, "prompts": [{"question": q} for q in questions]},
            "simple": {"kind": "confirm", "buttons": []},
            "created": utc_now().isoformat(),
        }
    )


async def conversation(
    store: Store, owner: str, title: str | None, *texts: str, pending: PendingAsk | None = None
) -> str:
    history = await store.histories.create(owner, agent="demo", title=title)
    rows: list[dict[str, Any]] = []
    for n, text in enumerate(texts):
        rows.append({"type": "user" if n % 2 == 0 else "assistant", "text": text})
    change = (
        HistoryChange(append=rows)
        if pending is None
        else HistoryChange(append=rows, pending_ask=pending)
    )
    await store.histories.apply(history.id, change, expected_version=1)
    return history.id


async def found(store: Store, owner: str, query: str) -> list[str]:
    page = await store.histories.list_page(owner, limit=50, query=query)
    assert page.next is None
    return [h.id for h in page.items]


async def in_inbox(store: Store, owner: str, query: str) -> list[str]:
    page = await store.histories.pending_page(owner, limit=50, query=query)
    assert page.next is None
    return [h.id for h in page.items]


def test_keys_fold_case_and_keep_only_what_is_searched() -> None:
    assert search_key("Straße ÄRGER") == "strasse ärger"
    assert search_key("   ") is None
    assert search_key(None) is None
    assert search_key("x" * (KEY_MAX + 5)) == "x" * KEY_MAX
    assert text_key({"type": "user", "text": "Hi THERE"}) == "hi there"
    assert text_key({"type": "assistant", "text": "Ok"}) == "ok"
    assert text_key({"type": "tool-result", "text": "secret-ish"}) is None
    assert ask_key(ask("c1", title="Pick A Plan", prompt="Which ONE?")) == "pick a plan\nwhich one?"
    assert ask_key(clarify("c2", "First?", "Second?")) == "first?\nsecond?"
    assert ask_key(None) is None
    assert like_pattern("50%_a\\b") == "%50\\%\\_a\\\\b%"


async def test_conversations_by_title_and_by_either_sides_messages(store: Store) -> None:
    trip = await conversation(store, "alice", "Trip to Lisbon", "Book a flight", "Done, FLIGHT ok")
    notes = await conversation(store, "alice", None, "ÄRGER mit dem Vermieter")
    bobs = await conversation(store, "bob", "Lisbon too", "flight")
    assert await found(store, "alice", "lisbon") == [trip]
    assert await found(store, "alice", "FLIGHT") == [trip]
    assert await found(store, "alice", "done, flight") == [trip]  # the agent's reply
    assert await found(store, "alice", "ärger") == [notes]
    assert await found(store, "alice", "Vermieter") == [notes]
    assert await found(store, "alice", "nowhere") == []
    assert await found(store, "bob", "lisbon") == [bobs]
    await store.histories.update_title(notes, "Wohnung")
    assert await found(store, "alice", "WOHNUNG") == [notes]
    await store.histories.apply(trip, HistoryChange(title="Porto"), expected_version=2)
    assert await found(store, "alice", "lisbon") == []
    assert await found(store, "alice", "porto") == [trip]
    await store.histories.delete(trip)
    assert await found(store, "alice", "flight") == []


async def test_percent_and_underscore_are_plain_characters(store: Store) -> None:
    literal = await conversation(store, "alice", "50% off_sale", "path C:\\tmp")
    await conversation(store, "alice", "500 offXsale", "path C:tmp")
    assert await found(store, "alice", "50%") == [literal]
    assert await found(store, "alice", "off_sale") == [literal]
    assert await found(store, "alice", "c:\\tmp") == [literal]


async def test_tool_rows_are_not_searched(store: Store) -> None:
    history = await store.histories.create("alice", agent="demo")
    rows = [
        {"type": "tool-call", "toolName": "lookup", "toolCallId": "t1", "args": {"q": "zebra"}},
        {"type": "tool-result", "toolName": "lookup", "toolCallId": "t1", "result": "zebra"},
    ]
    await store.histories.apply(history.id, HistoryChange(append=rows), expected_version=1)
    assert await found(store, "alice", "zebra") == []
    assert await found(store, "alice", "lookup") == []


async def test_a_search_is_paged_newest_first(store: Store) -> None:
    made = [await conversation(store, "alice", f"Match {n}", "hello") for n in range(5)]
    await conversation(store, "alice", "Other", "bye")
    seen: list[str] = []
    after = None
    for _ in range(5):
        page = await store.histories.list_page("alice", limit=2, after=after, query="MATCH")
        seen.extend(h.id for h in page.items)
        after = page.next
        if after is None:
            break
    # Newest first by (created, id): conversations made in the same millisecond go by id.
    histories = [await store.histories.get(made_id) for made_id in made]
    newest_first = sorted(
        (h for h in histories if h is not None), key=lambda h: (h.created, h.id), reverse=True
    )
    assert seen == [h.id for h in newest_first]
    assert sorted(seen) == sorted(made)


async def test_inbox_by_the_asks_title_prompt_questions_and_conversation_title(
    store: Store,
) -> None:
    plan = await conversation(
        store, "alice", "Work", pending=ask("c1", title="Pick a PLAN", prompt="Which tier?")
    )
    quiz = await conversation(
        store, "alice", "Fun", pending=clarify("c2", "Your favourite colour?", "Größe?")
    )
    await conversation(store, "alice", "Plan without an ask", "plan plan")
    await conversation(store, "bob", "b", pending=ask("c3", prompt="Which tier?"))
    assert await in_inbox(store, "alice", "plan") == [plan]
    assert await in_inbox(store, "alice", "TIER") == [plan]
    assert await in_inbox(store, "alice", "colour") == [quiz]
    assert await in_inbox(store, "alice", "GRÖSSE") == [quiz]
    assert await in_inbox(store, "alice", "fun") == [quiz]  # the conversation's title
    assert await in_inbox(store, "alice", "?") == [quiz, plan]
    await store.histories.apply(
        plan, HistoryChange(pending_ask=ask("c4", prompt="Pay now?")), expected_version=2
    )
    assert await in_inbox(store, "alice", "tier") == []
    assert await in_inbox(store, "alice", "pay now") == [plan]
    await store.histories.apply(plan, HistoryChange(pending_ask=None), expected_version=3)
    assert await in_inbox(store, "alice", "pay") == []


def _to_0010(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "0010")


def _to_head(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


def _back_to_0010(connection: Connection) -> None:
    command.downgrade(alembic_config(connection), "0010")


async def test_the_migration_gives_existing_rows_their_keys(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.write(_to_0010)
        now = utc_now()
        stored_ask = ask("c1", title="Old ASK", prompt="Still waiting?").to_json()
        for ident, title, pending in [("a" * 24, "Old Trip", stored_ask), ("b" * 24, None, None)]:
            values = {
                "id": ident,
                "owner_id": "alice",
                "agent": "demo",
                "title": title,
                "pending_ask": pending,
                "pending_created": now if pending else None,
                "version": 1,
                "next_seq": 2,
                "created": now,
                "updated": now,
                "deleted_at": None,
            }
            await db.write(row_count, insert(histories).values(values))
            for seq, data in enumerate(
                [{"type": "user", "text": f"Message ÜBER {ident[0]}"}, {"type": "tool-result"}]
            ):
                row = {
                    "history_id": ident,
                    "seq": seq,
                    "type": data["type"],
                    "tool_call_id": None,
                    "ask_status": None,
                    "data": data,
                    "created": now,
                }
                await db.write(row_count, insert(history_rows).values(row))
        await db.write(_to_head)
        repo = HistoryRepo(db)
        assert [h.id for h in (await repo.list_page("alice", limit=5, query="old trip")).items] == [
            "a" * 24
        ]
        found = (await repo.list_page("alice", limit=5, query="über b")).items
        assert [h.id for h in found] == ["b" * 24]
        inbox = (await repo.pending_page("alice", limit=5, query="still WAITING")).items
        assert [h.id for h in inbox] == ["a" * 24]
        await db.write(_back_to_0010)
        await db.write(_to_head)
