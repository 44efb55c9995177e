"""Permission levels and grants, on both backends."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, insert, inspect, select, text
from sqlalchemy.exc import IntegrityError
from test_store_db import HEAD

from handrail.store import (
    Database,
    Grant,
    GrantRepo,
    PermissionRecord,
    PermissionRepo,
    Store,
)
from handrail.store.db import alembic_config, all_rows, row_count
from handrail.store.tables import grants, permissions

HEX24 = re.compile(r"^[0-9a-f]{24}$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def assert_utc(moment: dt.datetime) -> None:
    assert moment.utcoffset() == dt.timedelta(0)


async def count_rows(store: Store, table: Any) -> int:
    return len(await store.db.read(all_rows, select(table)))


# --- migration ----------------------------------------------------------------------------------


def _upgrade(connection: Connection, revision: str) -> None:
    command.upgrade(alembic_config(connection), revision)


def _downgrade(connection: Connection, revision: str) -> None:
    command.downgrade(alembic_config(connection), revision)


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def _version(db: Database) -> list[str]:
    rows = await db.read(all_rows, text("SELECT version_num FROM alembic_version"))
    return [row[0] for row in rows]


async def test_migration_0002_upgrades_0001_and_goes_back(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.write(_upgrade, "0001")
        assert await _version(db) == ["0001"]
        assert not {"permissions", "grants"} & await db.read(_tables)

        await db.migrate()
        assert await _version(db) == [HEAD]
        assert {"permissions", "grants"} <= await db.read(_tables)

        await db.write(_downgrade, "0001")
        assert await _version(db) == ["0001"]
        tables = await db.read(_tables)
        assert not {"permissions", "grants"} & tables
        assert {"histories", "history_rows", "files", "requests"} <= tables

        await db.migrate()
        assert await _version(db) == [HEAD]


@pytest.mark.parametrize(
    ("scope", "history_id"),
    [("always", "a" * 24), ("conversation", None), ("once", None)],
)
async def test_the_table_refuses_an_inconsistent_grant(
    store: Store, scope: str, history_id: str | None
) -> None:
    row = {
        "id": "0" * 24,
        "user_id": "u1",
        "connection_id": "notes",
        "tool_name": "delete_note",
        "scope": scope,
        "history_id": history_id,
        "created": dt.datetime.now(dt.UTC),
    }
    with pytest.raises(IntegrityError):
        await store.db.write(row_count, insert(grants).values(row))
    assert await count_rows(store, grants) == 0


async def test_store_has_the_repositories(store: Store) -> None:
    assert isinstance(store.permissions, PermissionRepo)
    assert isinstance(store.grants, GrantRepo)


# --- permission levels --------------------------------------------------------------------------


async def test_permission_levels_are_saved_per_user_and_connection(store: Store) -> None:
    assert await store.permissions.get("u1", "notes") is None
    saved = await store.permissions.set("u1", "notes", "read-only")
    assert saved == PermissionRecord(
        user_id="u1", connection_id="notes", level="read-only", updated=saved.updated
    )
    assert_utc(saved.updated)
    assert await store.permissions.get("u1", "notes") == saved
    assert await store.permissions.get("u2", "notes") is None
    assert await store.permissions.get("u1", "mail") is None


async def test_setting_a_level_again_replaces_it(store: Store) -> None:
    first = await store.permissions.set("u1", "notes", "ask")
    await asyncio.sleep(0.002)  # a later millisecond
    second = await store.permissions.set("u1", "notes", "non-consequential")
    assert second.level == "non-consequential"
    assert second.updated > first.updated
    assert await store.permissions.get("u1", "notes") == second
    assert await count_rows(store, permissions) == 1


async def test_permission_list_and_clear(store: Store) -> None:
    mail = await store.permissions.set("u1", "mail", "ask")
    notes = await store.permissions.set("u1", "notes", "non-consequential")
    other = await store.permissions.set("u2", "notes", "read-only")
    assert await store.permissions.list("u1") == [mail, notes]
    assert await store.permissions.list("u2") == [other]
    assert await store.permissions.list("nobody") == []

    assert await store.permissions.clear("u1", "notes") is True
    assert await store.permissions.clear("u1", "notes") is False
    assert await store.permissions.get("u1", "notes") is None
    assert await store.permissions.get("u2", "notes") == other
    assert await store.permissions.list("u1") == [mail]


@pytest.mark.parametrize("level", ["always", "", "READ-ONLY", "once"])
async def test_an_unknown_level_is_refused(store: Store, level: Any) -> None:
    with pytest.raises(ValueError, match="permission level"):
        await store.permissions.set("u1", "notes", level)
    assert await store.permissions.get("u1", "notes") is None


async def test_concurrent_level_saves_leave_one_row(store: Store) -> None:
    levels: list[Any] = ["ask", "read-only", "non-consequential"] * 4
    saved = await asyncio.gather(*(store.permissions.set("u1", "notes", lv) for lv in levels))
    assert await count_rows(store, permissions) == 1
    current = await store.permissions.get("u1", "notes")
    assert current is not None
    assert current in saved


# --- adding grants ------------------------------------------------------------------------------


async def test_an_always_grant(store: Store) -> None:
    grant = await store.grants.add("u1", "notes", "delete_note", "always")
    assert HEX24.match(grant.id)
    assert grant == Grant(
        id=grant.id,
        user_id="u1",
        connection_id="notes",
        tool_name="delete_note",
        scope="always",
        history_id=None,
        created=grant.created,
    )
    assert_utc(grant.created)
    assert await store.grants.get(grant.id) == grant
    assert await store.grants.get("f" * 24) is None


async def test_a_conversation_grant(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    grant = await store.grants.add("u1", "notes", "add_note", "conversation", history_id=history.id)
    assert (grant.scope, grant.history_id) == ("conversation", history.id)
    assert await store.grants.get(grant.id) == grant


@pytest.mark.parametrize(
    ("scope", "history_id", "message"),
    [
        ("once", None, "single call"),
        ("once", "a" * 24, "single call"),
        ("conversation", None, "needs the history_id"),
        ("always", "a" * 24, "pass no history_id"),
        ("forever", None, "scope is one of conversation, always"),
        ("", None, "scope is one of"),
    ],
)
async def test_invalid_grants_are_refused(
    store: Store, scope: Any, history_id: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await store.grants.add("u1", "notes", "delete_note", scope, history_id=history_id)
    assert await store.grants.list("u1") == []
    assert await count_rows(store, grants) == 0


async def test_the_wire_form(store: Store) -> None:
    always = await store.grants.add("u1", "notes", "delete_note", "always")
    body = always.to_json()
    assert body == {
        "id": always.id,
        "connectionId": "notes",
        "toolName": "delete_note",
        "scope": "always",
        "created": body["created"],
    }
    assert list(body) == ["id", "connectionId", "toolName", "scope", "created"]
    assert ISO_Z.match(body["created"])
    assert dt.datetime.fromisoformat(body["created"]) == always.created

    history_id = "b" * 24
    conversation = await store.grants.add(
        "u1", "notes", "add_note", "conversation", history_id=history_id
    )
    assert list(conversation.to_json()) == [
        "id",
        "connectionId",
        "toolName",
        "scope",
        "historyId",
        "created",
    ]
    assert conversation.to_json()["historyId"] == history_id
    assert conversation.to_json()["scope"] == "conversation"


def test_to_json_formats_the_time() -> None:
    grant = Grant(
        id="c" * 24,
        user_id="u1",
        connection_id="notes",
        tool_name="delete_note",
        scope="always",
        history_id=None,
        created=dt.datetime(2026, 11, 30, 7, 8, 38, 123456, tzinfo=dt.UTC),
    )
    assert grant.to_json() == {
        "id": "c" * 24,
        "connectionId": "notes",
        "toolName": "delete_note",
        "scope": "always",
        "created": "2026-11-30T07:08:38.123Z",
    }


# --- duplicates ---------------------------------------------------------------------------------


async def test_adding_the_same_grant_again_returns_the_first(store: Store) -> None:
    always = await store.grants.add("u1", "notes", "delete_note", "always")
    assert await store.grants.add("u1", "notes", "delete_note", "always") == always
    h1, h2 = "1" * 24, "2" * 24
    conversation = await store.grants.add(
        "u1", "notes", "delete_note", "conversation", history_id=h1
    )
    again = await store.grants.add("u1", "notes", "delete_note", "conversation", history_id=h1)
    assert again == conversation
    assert conversation.id != always.id

    # Not the same grant: another history, tool, connection or user.
    others = [
        await store.grants.add("u1", "notes", "delete_note", "conversation", history_id=h2),
        await store.grants.add("u1", "notes", "add_note", "always"),
        await store.grants.add("u1", "mail", "delete_note", "always"),
        await store.grants.add("u2", "notes", "delete_note", "always"),
    ]
    ids = {always.id, conversation.id, *(grant.id for grant in others)}
    assert len(ids) == 6
    assert await count_rows(store, grants) == 6


async def test_concurrent_duplicate_adds_leave_one_row(store: Store) -> None:
    history_id = "3" * 24
    added = await asyncio.gather(
        *(store.grants.add("u1", "notes", "delete_note", "always") for _ in range(8)),
        *(
            store.grants.add("u1", "notes", "delete_note", "conversation", history_id=history_id)
            for _ in range(8)
        ),
    )
    always, conversation = added[:8], added[8:]
    assert len({grant.id for grant in always}) == 1
    assert len({grant.id for grant in conversation}) == 1
    assert set(await store.grants.list("u1")) == {always[0], conversation[0]}
    assert await count_rows(store, grants) == 2


async def test_concurrent_adds_from_two_processes_leave_one_row(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    async with await Store.open(database_url, blob_dir=tmp_path / "blobs") as other:
        added = await asyncio.gather(
            *(
                repo.add("u1", "notes", "delete_note", "always")
                for _ in range(5)
                for repo in (store.grants, other.grants)
            )
        )
    assert len({grant.id for grant in added}) == 1
    assert await count_rows(store, grants) == 1


async def test_a_grant_can_be_added_again_after_it_was_revoked(store: Store) -> None:
    first = await store.grants.add("u1", "notes", "delete_note", "always")
    assert await store.grants.delete(first.id, user_id="u1") is True
    second = await store.grants.add("u1", "notes", "delete_note", "always")
    assert second.id != first.id
    assert await store.grants.list("u1") == [second]


# --- find ---------------------------------------------------------------------------------------


async def test_conversation_grants_stay_in_their_history(store: Store) -> None:
    h1, h2 = "1" * 24, "2" * 24
    grant = await store.grants.add("u1", "notes", "delete_note", "conversation", history_id=h1)
    assert await store.grants.find("u1", "notes", "delete_note", history_id=h1) == grant
    assert await store.grants.find("u1", "notes", "delete_note", history_id=h2) is None
    assert await store.grants.find("u1", "notes", "delete_note", history_id=None) is None
    assert await store.grants.find("u1", "notes", "add_note", history_id=h1) is None
    assert await store.grants.find("u1", "mail", "delete_note", history_id=h1) is None
    assert await store.grants.find("u2", "notes", "delete_note", history_id=h1) is None


async def test_always_grants_apply_in_every_history_for_that_tool_only(store: Store) -> None:
    grant = await store.grants.add("u1", "notes", "delete_note", "always")
    for history_id in ("1" * 24, "2" * 24, None):
        assert await store.grants.find("u1", "notes", "delete_note", history_id=history_id) == (
            grant
        )
        assert await store.grants.find("u1", "notes", "add_note", history_id=history_id) is None
        assert await store.grants.find("u1", "mail", "delete_note", history_id=history_id) is None
        assert await store.grants.find("u2", "notes", "delete_note", history_id=history_id) is None


async def test_find_prefers_the_always_grant(store: Store) -> None:
    history_id = "1" * 24
    await store.grants.add("u1", "notes", "delete_note", "conversation", history_id=history_id)
    always = await store.grants.add("u1", "notes", "delete_note", "always")
    assert await store.grants.find("u1", "notes", "delete_note", history_id=history_id) == always


async def test_find_after_revoking(store: Store) -> None:
    history_id = "1" * 24
    conversation = await store.grants.add(
        "u1", "notes", "delete_note", "conversation", history_id=history_id
    )
    always = await store.grants.add("u1", "notes", "delete_note", "always")
    assert await store.grants.delete(always.id, user_id="u1")
    assert (
        await store.grants.find("u1", "notes", "delete_note", history_id=history_id) == conversation
    )
    assert await store.grants.delete(conversation.id, user_id="u1")
    assert await store.grants.find("u1", "notes", "delete_note", history_id=history_id) is None


# --- list and delete ----------------------------------------------------------------------------


async def test_list_is_newest_first_per_user(store: Store) -> None:
    added = []
    for tool in ("list_notes", "add_note", "delete_note"):
        added.append(await store.grants.add("u1", "notes", tool, "always"))
        await asyncio.sleep(0.002)  # distinct milliseconds
    added.append(
        await store.grants.add("u1", "notes", "add_note", "conversation", history_id="1" * 24)
    )
    other = await store.grants.add("u2", "notes", "delete_note", "always")
    assert await store.grants.list("u1") == list(reversed(added))
    assert await store.grants.list("u2") == [other]
    assert await store.grants.list("nobody") == []


async def test_only_the_owner_deletes_a_grant(store: Store) -> None:
    grant = await store.grants.add("u1", "notes", "delete_note", "always")
    assert await store.grants.delete(grant.id, user_id="u2") is False
    assert await store.grants.get(grant.id) == grant
    assert await store.grants.find("u1", "notes", "delete_note", history_id=None) == grant

    assert await store.grants.delete(grant.id, user_id="u1") is True
    assert await store.grants.get(grant.id) is None
    assert await store.grants.delete(grant.id, user_id="u1") is False
    assert await store.grants.delete("f" * 24, user_id="u1") is False
    assert await store.grants.list("u1") == []


async def test_deleting_a_conversation_revokes_its_conversation_grants(store: Store) -> None:
    kept = await store.histories.create("u1", agent="demo")
    gone = await store.histories.create("u1", agent="demo")
    for history in (kept, gone):
        await store.grants.add("u1", "notes", "delete_note", "conversation", history_id=history.id)
    always = await store.grants.add("u1", "notes", "delete_note", "always")
    await store.histories.delete(gone.id)
    left = await store.grants.list("u1")
    assert {(g.scope, g.history_id) for g in left} == {
        ("conversation", kept.id),
        ("always", None),
    }
    assert always in left
    assert (await store.grants.find("u1", "notes", "delete_note", history_id=gone.id)) == always
