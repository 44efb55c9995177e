"""The database: URLs, SQLite settings, migrations on both backends."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, event, insert, inspect, text

from demo_server import free_port
from handrail._util import utc_now
from handrail.connections import load_catalog
from handrail.errors import ConfigError, DatabaseUnavailable
from handrail.store import Database, LocalBlobStore, Store, default_blob_dir
from handrail.store.connections import ConnectionRepo
from handrail.store.db import (
    SQLITE_THREADS,
    alembic_config,
    all_rows,
    driver_url,
    row_count,
    schema_revisions,
)
from handrail.store.tables import connections, metadata

#: The newest migration: `migrate` ends there.
HEAD = "0019"

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
    "settings",
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


def _indexes(connection: Connection) -> dict[str, dict[str, object]]:
    """The indexes of the tables 0015 changed: by name, their columns and their WHERE (the
    dialect's option, None for a full index)."""
    inspector = inspect(connection)
    out: dict[str, dict[str, object]] = {}
    for table in ("history_rows", "turn_leases"):
        for index in inspector.get_indexes(table):
            options = index.get("dialect_options", {})
            where = options.get("sqlite_where", options.get("postgresql_where"))
            out[str(index["name"])] = {
                "columns": index["column_names"],
                "where": None if where is None else str(where),
            }
    return out


def _to_0014(connection: Connection) -> None:
    command.downgrade(alembic_config(connection), "0014")


async def test_migration_0015_writes_fewer_index_pages_and_goes_back(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        indexes = await db.read(_indexes)
        assert indexes["ix_history_rows_history_id_tool_call_id"]["columns"] == [
            "history_id",
            "tool_call_id",
        ]
        assert "tool_call_id IS NOT NULL" in str(
            indexes["ix_history_rows_history_id_tool_call_id"]["where"]
        )
        assert "ix_turn_leases_until" not in indexes
        await db.write(_to_0014)
        before = await db.read(_indexes)
        assert before["ix_history_rows_history_id_tool_call_id"]["where"] is None
        assert before["ix_turn_leases_until"] == {"columns": ["until"], "where": None}
        await db.write(_to_head)
        assert await db.read(_indexes) == indexes


def _to_0018(connection: Connection) -> None:
    command.downgrade(alembic_config(connection), "0018")


def _rows_foreign_keys(connection: Connection) -> list[str]:
    """Read on the writer's connection, the one that migrated (a SQLite reader's ``PRAGMA
    foreign_key_list`` answers from the schema it read last until a statement reloads it)."""
    return [
        str(key["referred_table"]) for key in inspect(connection).get_foreign_keys("history_rows")
    ]


def _a_history_with_rows(connection: Connection) -> None:
    now = utc_now()
    connection.execute(
        text(
            "INSERT INTO histories (id, owner_id, agent, version, next_seq, created, updated)"
            " VALUES ('h1', 'alice', 'demo', 2, 2, :now, :now)"
        ),
        {"now": now},
    )
    for seq, call in ((0, None), (1, "call_1")):
        connection.execute(
            text(
                "INSERT INTO history_rows (history_id, seq, type, tool_call_id, data, created)"
                " VALUES ('h1', :seq, 'user', :call, '{}', :now)"
            ),
            {"seq": seq, "call": call, "now": now},
        )


async def test_migration_0019_drops_the_rows_foreign_key_and_keeps_the_rows(
    database_url: str,
) -> None:
    """The rows' key to `histories` goes (a history change checks its history itself); on SQLite
    the table is copied, so its rows and its partial index must come through."""
    async with Database(database_url) as db:
        await db.migrate()
        indexes = await db.read(_indexes)
        assert await db.write(_rows_foreign_keys) == []
        await db.write(_to_0018)
        assert await db.write(_rows_foreign_keys) == ["histories"]
        await db.write(_a_history_with_rows)
        await db.write(_to_head)
        assert await db.write(_rows_foreign_keys) == []
        assert await db.read(_indexes) == indexes
        rows = await db.read(
            all_rows, text("SELECT seq, tool_call_id FROM history_rows ORDER BY seq")
        )
        assert [tuple(row) for row in rows] == [(0, None), (1, "call_1")]
        assert await db.read(_schema_diff) == []


def _plan_of(connection: Connection, sql: str, count: int) -> str:
    driver = connection.connection.driver_connection
    assert driver is not None
    return " ".join(row[-1] for row in driver.execute(f"EXPLAIN QUERY PLAN {sql}", ("x",) * count))


async def test_the_rows_call_index_serves_its_readers_on_sqlite(tmp_path: Path) -> None:
    """An ask's status and an undo's results are looked up in the partial index (their `=` and
    `IN` on the call id imply its ``tool_call_id IS NOT NULL``)."""
    from handrail.store.histories import _SET_ASK_STATUS

    async with Database(f"sqlite:///{tmp_path / 'p.db'}") as db:
        await db.migrate()
        plan = _SET_ASK_STATUS._plan(db.engine.dialect)  # type: ignore[union-attr]
        assert plan is not None
        index = "USING INDEX ix_history_rows_history_id_tool_call_id"
        assert index in await db.read(_plan_of, plan.sql, plan.sql.count("?"))
        undo = (
            "SELECT tool_call_id FROM history_rows WHERE history_id = ? AND type = 'tool-result'"
            " AND tool_call_id IN (?, ?)"
        )
        assert index in await db.read(_plan_of, undo, 3)
        assert index in await db.read(_plan_of, undo.replace("SELECT tool_call_id", "DELETE"), 3)


async def test_migrating_sqlite_is_one_transaction(tmp_path: Path) -> None:
    """Alembic commits nothing of its own: every revision lands in the store's one immediate
    transaction (which another process migrating at once waits for)."""
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    seen: list[str] = []

    @event.listens_for(db.engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(
            lambda sql: seen.append(sql) if sql.startswith(("BEGIN", "COMMIT")) else None
        )

    try:
        await db.migrate()
        assert seen == ["BEGIN IMMEDIATE", "COMMIT"]
        seen.clear()
        await db.write(_to_0014)
        await db.write(_to_head)
        assert seen == ["BEGIN IMMEDIATE", "COMMIT"] * 2
    finally:
        await db.close()


def test_the_newest_revision_is_the_head() -> None:
    assert schema_revisions()[-1] == HEAD
    assert schema_revisions()[0] == "0001"


def _migration_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "handrail.store"]
    caplog.clear()
    return [re.sub(r"\(\d+\.\d s\)", "(N s)", line) for line in lines]


async def test_migrating_says_what_it_does(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="handrail.store")
    async with Database(database_url) as db:
        await db.migrate()
        assert _migration_lines(caplog) == [
            f"creating the database's tables (schema revision {HEAD})",
            f"the database's schema is at revision {HEAD} (N s)",
        ]
        await db.migrate()  # at the head: nothing to do, nothing said
        assert _migration_lines(caplog) == []
        await db.write(_to_0018)
        caplog.clear()
        await db.migrate()
        assert _migration_lines(caplog) == [
            f"upgrading the database's schema from revision 0018 to {HEAD}",
            f"the database's schema is at revision {HEAD} (N s)",
        ]


def _set_revision(connection: Connection, revision: str) -> None:
    connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


async def test_a_schema_a_newer_handrail_made_is_refused(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        await db.write(_set_revision, "0099")
        with pytest.raises(DatabaseUnavailable) as raised:
            await db.migrate()
        assert str(raised.value).endswith(
            f"has handrail's schema at revision '0099', which this handrail does not know (its "
            f"newest is '{HEAD}'): a newer handrail made it. Run that handrail (or a newer one) "
            "on it, or give another database."
        )
        versions = await db.read(all_rows, text("SELECT version_num FROM alembic_version"))
        assert [row[0] for row in versions] == ["0099"]  # left as it was


async def test_a_file_that_is_no_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("These are my notes, not a database. " * 200)
    with pytest.raises(DatabaseUnavailable) as raised:
        await Store.open(f"sqlite:///{path}", blob_dir=tmp_path / "files")
    assert str(raised.value) == (
        f"Could not open the database sqlite:///{path}: file is not a database. Give the path "
        "of a handrail database file, or of a new one in a folder this user may write in."
    )
    assert path.read_text().startswith("These are my notes")


async def test_a_sqlite_file_whose_folder_cannot_be_made_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    url = f"sqlite:///{tmp_path / 'a-file' / 'handrail.db'}"
    with pytest.raises(DatabaseUnavailable) as raised:
        await Store.open(url, blob_dir=tmp_path / "files")
    assert str(raised.value).startswith(
        f"Could not open the database {url}: File exists ({tmp_path / 'a-file'}). Give the path"
    )


async def test_a_postgresql_server_that_is_not_there_is_named_without_its_password() -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://handrail:pw-in-url@127.0.0.1:{port}/app?password=pw-in-query"
    with pytest.raises(DatabaseUnavailable) as raised:
        await Store.open(url)
    message = str(raised.value)
    assert message.startswith(
        f"Could not open the database postgresql://handrail:***@127.0.0.1:{port}/app?password=***: "
    ), message
    assert "Connect call failed" in message
    assert message.endswith(
        "Check that PostgreSQL runs at that host and port, and that the URL's user, password "
        "and database are right (the database must exist: createdb <name>)."
    )
    assert "pw-in" not in message
    assert "pw-in" not in repr(Database(url))


async def test_a_postgresql_database_that_does_not_exist_says_so(
    postgres_cluster: Any,
) -> None:
    url = str(postgres_cluster.url("no_such_database")).replace("+asyncpg", "", 1)
    with pytest.raises(DatabaseUnavailable, match='database "no_such_database" does not exist'):
        await Store.open(url)


async def test_a_postgresql_database_that_does_not_exist_is_not_waited_for(
    postgres_cluster: Any,
) -> None:
    url = str(postgres_cluster.url("no_such_database"))
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="does not exist") as raised:
        await Store.open(url, wait_s=30)
    assert time.monotonic() - started < 10  # refused for good at once, not waited for
    assert "waiting" not in str(raised.value)


async def test_a_postgresql_server_that_starts_later_is_waited_for(
    postgres_cluster: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The URL names a Unix socket folder where no server listens yet; a second later the
    cluster's socket appears there (as PostgreSQL's own does when it has started)."""
    real = postgres_cluster.new_database_url()
    later = tmp_path / "socket"
    name = f".s.PGSQL.{postgres_cluster.port}"
    url = real.replace(f"host={postgres_cluster.socket_dir}", f"host={later}")
    assert url != real

    async def start_listening() -> None:
        await asyncio.sleep(1.0)
        later.mkdir()
        (later / name).symlink_to(Path(postgres_cluster.socket_dir) / name)

    caplog.set_level(logging.INFO, logger="handrail.store")
    started = time.monotonic()
    listening = asyncio.create_task(start_listening())
    store = await Store.open(url, blob_dir=tmp_path / "files", wait_s=30)
    took = time.monotonic() - started
    await listening
    try:
        assert 1.0 <= took < 20
        history = await store.histories.create("alice", agent="helper")
        assert (await store.histories.get(history.id)) is not None
    finally:
        await store.close()
    said = [r.getMessage() for r in caplog.records if r.name == "handrail.store"]
    waiting = [m for m in said if "does not accept connections yet" in m]
    assert len(waiting) == 1, said  # said once, not at every try
    assert "waiting up to 30 s for it" in waiting[0]
    assert any("accepted the connection after" in m for m in said), said


async def test_a_postgresql_server_that_never_comes_is_waited_for_then_refused() -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://handrail@127.0.0.1:{port}/app"
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable) as raised:
        await Store.open(url, wait_s=1.2)
    assert 1.2 <= time.monotonic() - started < 10
    assert "Connect call failed" in str(raised.value)
    # The seconds it waited, rounded: 1 on a quiet machine, more on a busy one.
    assert re.search(r"\(after waiting \d+ s for it to accept connections\)", str(raised.value))
