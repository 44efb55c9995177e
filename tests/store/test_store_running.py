"""How the store runs its operations: transactions, worker threads, prepared statements.

Each store operation is one function of a connection, run in one transaction by
`Database.read`/`snapshot`/`write`: on SQLite on the database's worker threads, on PostgreSQL on
the async engine. `Prepared` statements run on the sqlite3 cursor directly and through
SQLAlchemy elsewhere, and must read and write exactly what SQLAlchemy would.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, insert, select
from sqlalchemy.exc import IntegrityError

import handrail.store.prepared as prepared
from handrail.store import Database, Store
from handrail.store.db import all_rows, first_row, unsynced
from handrail.store.prepared import Prepared
from handrail.store.tables import histories
from handrail.store.threads import QUIET_GROUPS

H = histories.c


def _history(history_id: str, **changes: Any) -> dict[str, Any]:
    moment = dt.datetime(2026, 11, 30, 9, 30, 15, 123456, tzinfo=dt.UTC)
    values: dict[str, Any] = {
        "id": history_id,
        "owner_id": "u1",
        "agent": "demo",
        "title": "Ünïcode ✓ title",
        "pending_ask": {"toolCallId": "c1", "kind": "choice", "nested": [1, 2.5, None, "é"]},
        "pending_created": moment,
        "version": 1,
        "next_seq": 0,
        "created": moment,
        "updated": moment,
        "deleted_at": None,
        "title_key": None,
        "ask_key": None,
    }
    values.update(changes)
    return values


_INSERT = Prepared(insert(histories))
_GET = Prepared(select(histories).where(H.id == bindparam("history_id")))


def _insert_then_fail(connection: Connection, values: dict[str, Any]) -> None:
    _INSERT.run(connection, values)
    raise LookupError("the operation failed after writing")


async def test_prepared_statements_write_and_read_what_sqlalchemy_does(store: Store) -> None:
    db = store.db
    await db.write(_INSERT.run, _history("a" * 24))
    await db.write(first_row, insert(histories).values(_history("b" * 24)).returning(H.id))
    null_ask = _history("c" * 24, pending_ask=None, pending_created=None, title=None)
    await db.write(_INSERT.run, null_ask)
    for history_id in ("a" * 24, "b" * 24, "c" * 24):
        prepared = await db.read(_GET.first, {"history_id": history_id})
        plain = await db.read(first_row, select(histories).where(H.id == history_id))
        assert plain is not None
        assert prepared == dict(plain._mapping)
    prepared_a = await db.read(_GET.first, {"history_id": "a" * 24})
    assert prepared_a is not None
    assert prepared_a["pending_ask"] == _history("a")["pending_ask"]
    assert prepared_a["created"] == _history("a")["created"]
    assert prepared_a["created"].tzinfo is not None
    prepared_c = await db.read(_GET.first, {"history_id": "c" * 24})
    assert prepared_c is not None
    assert prepared_c["pending_ask"] is None  # SQL NULL, as SQLAlchemy writes None
    raw = await db.read(all_rows, select(H.id).where(H.pending_ask.is_(None)).order_by(H.id))
    assert [row.id for row in raw] == ["c" * 24]


async def test_prepared_statements_run_on_the_driver_cursor(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        await db.read(_GET.all, {"history_id": "x"})
        assert _GET._plan(db.engine.dialect) is not None
        await db.write(_INSERT.run, _history("e" * 24))
        # A driver's error arrives as it did before: sqlite3's own on SQLite, SQLAlchemy's
        # (parameters hidden) on PostgreSQL, and the transaction is rolled back.
        expected = sqlite3.IntegrityError if db.backend == "sqlite" else IntegrityError
        with pytest.raises(expected) as raised:
            await db.write(_INSERT.run, _history("e" * 24))
        assert "e" * 24 not in str(raised.value)
        assert await db.read(_GET.first, {"history_id": "e" * 24}) is not None


async def test_a_failed_operation_writes_nothing_and_the_store_goes_on(store: Store) -> None:
    with pytest.raises(LookupError, match="failed after writing"):
        await store.db.write(_insert_then_fail, _history("d" * 24))
    assert await store.db.read(_GET.first, {"history_id": "d" * 24}) is None
    await store.db.write(_INSERT.run, _history("d" * 24))
    assert await store.db.read(_GET.first, {"history_id": "d" * 24}) is not None


async def test_many_operations_at_once_all_land(store: Store) -> None:
    created = await asyncio.gather(
        *(store.histories.create(f"user{i % 3}", agent="demo") for i in range(40))
    )
    for owner in ("user0", "user1", "user2"):
        listed = {h.id for h in await store.histories.list(owner)}
        assert listed == {h.id for h in created if h.owner_id == owner}


def _thread_name(_connection: Connection) -> str:
    return threading.current_thread().name


async def test_sqlite_runs_off_the_event_loop_on_its_own_threads(tmp_path: Path) -> None:
    async with Database(f"sqlite:///{tmp_path / 'x.db'}") as db:
        # One call at a time: the thread that became idle last takes the next one.
        names = {await db.read(_thread_name) for _ in range(10)}
        assert names == {"handrail-sqlite-0"}
        assert threading.current_thread().name not in names


async def test_a_closed_database_says_so(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    await db.close()
    with pytest.raises(RuntimeError, match="closed"):
        await db.read(_thread_name)


async def test_with_echo_every_statement_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="sqlalchemy.engine")
    async with Database(f"sqlite:///{tmp_path / 'x.db'}", echo=True) as db:
        await db.migrate()
        await db.write(_INSERT.run, _history("e" * 24))
        assert await db.read(_GET.first, {"history_id": "e" * 24}) is not None
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "INSERT INTO histories" in logged
    assert "FROM histories" in logged


async def test_with_echo_unsynced_writes_go_through_the_logged_writer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Unsynced writes run on the writer thread with ``echo`` (not on the event loop's own
    connection, whose transaction begins on the driver), so the log shows each one's
    transaction."""
    caplog.set_level("INFO", logger="sqlalchemy.engine")
    async with Database(f"sqlite:///{tmp_path / 'x.db'}", echo=True) as db:
        await db.migrate()
        for n in range(QUIET_GROUPS + 3):
            await db.write(unsynced(_INSERT.run), _history(f"{n:024d}"))
            assert await db.quick_read(_GET.first, {"history_id": f"{n:024d}"}) is not None
    threads = {r.threadName for r in caplog.records if "INSERT INTO histories" in r.getMessage()}
    assert threads
    assert threading.main_thread().name not in threads
    begun = [r for r in caplog.records if r.getMessage().startswith("BEGIN")]
    assert len(begun) >= QUIET_GROUPS + 3


async def test_prepared_plans_go_with_their_database(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    await db.migrate()
    await db.read(_GET.all, {"history_id": "x"})
    dialect = weakref.ref(db.engine.dialect)
    assert _GET._plan(db.engine.dialect) is not None
    await db.close()
    del db
    gc.collect()
    assert dialect() is None


async def test_a_databases_sqlite_connections_run_statements_directly_until_it_closes(
    tmp_path: Path,
) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    await db.migrate()
    await db.write(_INSERT.run, _history("d" * 24))
    assert await db.read(_GET.first, {"history_id": "d" * 24}) is not None
    kept = list(db._kept)
    assert kept
    assert all(prepared._DIRECT_SQLITE.get(c) is c.connection.driver_connection for c in kept)
    await db.close()
    assert not any(c in prepared._DIRECT_SQLITE for c in kept)


async def test_with_echo_no_connection_runs_statements_directly(tmp_path: Path) -> None:
    async with Database(f"sqlite:///{tmp_path / 'x.db'}", echo=True) as db:
        await db.migrate()
        assert await db.read(_GET.first, {"history_id": "e" * 24}) is None
        assert db._kept
        assert not any(c in prepared._DIRECT_SQLITE for c in db._kept)
