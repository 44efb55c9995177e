"""The database: URLs, SQLite settings, migrations on both backends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, insert, inspect, text

from handrail._util import utc_now
from handrail.connections import load_catalog
from handrail.errors import ConfigError
from handrail.store import Database, LocalBlobStore, Store, default_blob_dir
from handrail.store.connections import ConnectionRepo
from handrail.store.db import SQLITE_THREADS, alembic_config, all_rows, driver_url, row_count
from handrail.store.tables import connections, metadata

#: The newest migration: `migrate` ends there.
HEAD = "0014"

TABLES = {
    "activity",
    "answer_links",
    "api_tokens",
    "alembic_version",
    "confirmations",
    "connections",
    "deliveries",
    "delivery_attempts",
    "files",
    "open_gates",
    "outbox_events",
    "grants",
    "histories",
    "history_rows",
    "permissions",
    "requests",
    "running_turns",
    "turn_leases",
}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "sqlite+pysqlite:///handrail.db"),
        ("sqlite:///data/h.db", "sqlite+pysqlite:///data/h.db"),
        ("sqlite:////abs/h.db", "sqlite+pysqlite:////abs/h.db"),
        ("sqlite+aiosqlite:///h.db", "sqlite+pysqlite:///h.db"),
        ("sqlite+pysqlite:///h.db", "sqlite+pysqlite:///h.db"),
        ("postgresql://u:p@db:5433/app", "postgresql+asyncpg://u:p@db:5433/app"),
        ("postgres://u@db/app", "postgresql+asyncpg://u@db/app"),
        ("postgresql+psycopg://u@db/app", "postgresql+asyncpg://u@db/app"),
        ("postgresql://u@db/app?sslmode=require", "postgresql+asyncpg://u@db/app?ssl=require"),
    ],
)
def test_urls_get_handrails_drivers(given: str | None, expected: str) -> None:
    assert driver_url(given).render_as_string(hide_password=False) == expected


@pytest.mark.parametrize("url", ["mysql://u@db/app", "not a url"])
def test_other_databases_are_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        Database(url)


def test_synchronous_level_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="synchronous"):
        Database(f"sqlite:///{tmp_path / 'x.db'}", synchronous="SOMETIMES")


@pytest.mark.parametrize(("level", "value"), [("NORMAL", 1), ("full", 2)])
async def test_sqlite_pragmas_on_every_connection(tmp_path: Path, level: str, value: int) -> None:
    async with Database(f"sqlite:///{tmp_path / 'x.db'}", synchronous=level) as db:
        # Reads at once run on every worker thread, each on its own connection.
        seen = await asyncio.gather(*(db.read(_pragmas) for _ in range(4 * SQLITE_THREADS)))
    assert len({connection_id for connection_id, _ in seen}) == SQLITE_THREADS
    for _, pragmas in seen:
        assert pragmas == {
            "journal_mode": "wal",
            "foreign_keys": 1,
            "busy_timeout": 30000,
            "synchronous": value,
        }


def _pragmas(connection: Connection) -> tuple[int, dict[str, object]]:
    time.sleep(0.02)  # long enough that the other reads start on the other threads
    return id(connection.connection.driver_connection), {
        name: connection.execute(text(f"PRAGMA {name}")).scalar_one()
        for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
    }


def _table_names(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


def _schema_diff(connection: Connection) -> list[object]:
    return list(compare_metadata(MigrationContext.configure(connection), metadata))


async def test_migrate_creates_the_tables_and_twice_is_a_no_op(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        await db.migrate()
        assert await db.read(_table_names) == TABLES
        versions = await db.read(all_rows, text("SELECT version_num FROM alembic_version"))
        assert [row[0] for row in versions] == [HEAD]


async def test_migrations_match_the_tables(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        assert await db.read(_schema_diff) == []


async def test_several_processes_may_migrate_at_once(database_url: str) -> None:
    databases = [Database(database_url) for _ in range(4)]
    try:
        await asyncio.gather(*(db.migrate() for db in databases))
        assert await databases[0].read(_table_names) == TABLES
    finally:
        await asyncio.gather(*(db.close() for db in databases))


async def test_store_open_migrates_and_closes(database_url: str, tmp_path: Path) -> None:
    async with await Store.open(database_url, blob_dir=tmp_path / "blobs") as store:
        assert isinstance(store.blobs, LocalBlobStore)
        assert store.blobs.root == tmp_path / "blobs"
        history = await store.histories.create("u1", agent="demo")
        assert await store.histories.get(history.id) == history


def test_default_blob_dir() -> None:
    assert default_blob_dir("sqlite:////srv/app/handrail.db") == Path("/srv/app/handrail-files")
    assert default_blob_dir(None) == Path("handrail-files")
    assert default_blob_dir("postgresql://u@db/app") == Path("handrail-files")
    assert default_blob_dir("sqlite://") == Path("handrail-files")


def _to_0006(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "0006")


def _to_head(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def test_migration_0010_backfills_the_shipped_templates(database_url: str) -> None:
    """Saved connections of the apps with a template get it, enabled; a connection with
    instructions, or of another app, keeps what it has."""
    async with Database(database_url) as db:
        await db.write(_to_0006)
        now = utc_now()
        own = {"enabled": False, "text": "Ours."}
        for ident, app, prefix, instructions in [
            ("a" * 24, "notes", "notes", None),
            ("b" * 24, "memory", "memory", own),
            ("c" * 24, "custom", "wiki", None),
        ]:
            await db.write(
                row_count,
                insert(connections).values(
                    id=ident,
                    app=app,
                    name=prefix,
                    prefix=prefix,
                    kind="mcp-stdio",
                    protocol="auto",
                    settings={},
                    secret_keys=[],
                    trusted=False,
                    overrides={},
                    agent_instructions=instructions,
                    status={},
                    tools=[],
                    version=1,
                    created=now,
                    updated=now,
                ),
            )
        await db.write(_to_head)
        repo = ConnectionRepo(db)
        notes, memory, wiki = [await repo.get(c * 24) for c in "abc"]
        assert notes is not None
        assert notes.agent_instructions == {
            "enabled": True,
            "text": load_catalog().get("notes").agent_instructions.text,  # type: ignore[union-attr]
            "template": {"id": "notes.usage", "version": 1},
        }
        assert notes.version == 1
        assert memory is not None
        assert memory.agent_instructions == own
        assert wiki is not None
        assert wiki.agent_instructions is None
