"""`Database.quick_snapshot` on SQLite: the small reads of a turn run on the event loop's thread
while the writer thread is idle, on the writer thread after its commit when it is not, and on a
reader thread when they would read more than `QUICK_ROWS` rows or wait for a lock; the result
is the same."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Connection, text

import handrail.store.histories as histories
from handrail.store import Database, HistoryChange, Store, StoredRow
from handrail.store.db import QUICK_ROWS, check_here

T = TypeVar("T")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'q.db'}", synchronous="FULL")
    await database.write(_create)
    try:
        yield database
    finally:
        await database.close()


def _create(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"))
    connection.execute(text("INSERT INTO t (id, v) VALUES (1, 'one'), (2, 'two')"))


def _read(connection: Connection, threads: list[int], rows: int = 2) -> list[str]:
    threads.append(threading.get_ident())
    check_here(connection, rows)
    return [row.v for row in connection.execute(text("SELECT v FROM t ORDER BY id"))]


async def test_a_quick_read_runs_on_the_loop_while_no_write_is_in_flight(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    assert await db.quick_snapshot(_read, threads) == ["one", "two"]  # opens its connection
    assert threads[-1] != loop_thread
    assert await db.quick_snapshot(_read, threads) == ["one", "two"]
    assert threads[-1] == loop_thread
    await db.write(lambda c: c.execute(text("UPDATE t SET v = 'uno' WHERE id = 1")))
    assert await db.quick_snapshot(_read, threads) == ["uno", "two"]  # sees the commit
    assert threads[-1] == loop_thread


def _hold(connection: Connection, started: threading.Event, go: threading.Event) -> None:
    started.set()
    assert go.wait(10)
    connection.execute(text("UPDATE t SET v = 'uno' WHERE id = 1"))


async def _write_in_flight(db: Database) -> tuple[asyncio.Future[None], threading.Event]:
    """A write on the writer thread, held until `go` is set: its future and `go`."""
    started, go = threading.Event(), threading.Event()
    writing = asyncio.ensure_future(db.write(_hold, started, go))
    await asyncio.to_thread(started.wait, 10)
    return writing, go


async def _after(
    writing: asyncio.Future[None], go: threading.Event, read: Coroutine[Any, Any, T]
) -> T:
    """`read` sent while the write `writing` is held: it waits for the write's commit (checked
    before `go` lets the write go on); its result."""
    try:
        reading = asyncio.ensure_future(read)
        await asyncio.sleep(0.05)
        assert not reading.done()  # it waits for the write's commit
    finally:
        go.set()
    await writing
    return await reading


async def test_a_quick_read_runs_on_the_writer_thread_after_the_write_in_flight(
    db: Database,
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    await db.quick_snapshot(_read, threads)
    writing, go = await _write_in_flight(db)
    names: list[str] = []

    def read(connection: Connection) -> list[str]:
        names.append(threading.current_thread().name)
        return _read(connection, threads)

    assert await _after(writing, go, db.quick_snapshot(read)) == ["uno", "two"]
    assert names == ["handrail-sqlite-writer"]
    await db.quick_snapshot(_read, threads)
    assert threads[-1] == loop_thread


async def test_a_quick_read_on_the_writer_thread_raises_what_its_work_raises(
    db: Database,
) -> None:
    writing, go = await _write_in_flight(db)

    def fails(connection: Connection) -> None:
        raise ValueError("no")

    try:
        reading = asyncio.ensure_future(db.quick_snapshot(fails))
        await asyncio.sleep(0.01)
    finally:
        go.set()
    await writing
    with pytest.raises(ValueError, match="no"):
        await reading
    assert await db.write(lambda c: 1) == 1  # the writer goes on


async def test_a_quick_read_of_many_rows_leaves_the_writer_thread(db: Database) -> None:
    writing, go = await _write_in_flight(db)
    names: list[str] = []

    def read(connection: Connection) -> list[str]:
        names.append(threading.current_thread().name)
        return _read(connection, [], QUICK_ROWS + 1)

    try:
        reading = asyncio.ensure_future(db.quick_snapshot(read))
        await asyncio.sleep(0.01)
    finally:
        go.set()
    await writing
    assert await reading == ["uno", "two"]
    assert names[0] == "handrail-sqlite-writer"
    assert names[1].startswith("handrail-sqlite-")
    assert names[1] != "handrail-sqlite-writer"


async def test_a_quick_read_of_many_rows_runs_again_on_a_reader_thread(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    await db.quick_snapshot(_read, threads)
    threads.clear()
    assert await db.quick_snapshot(_read, threads, QUICK_ROWS) == ["one", "two"]
    assert threads == [loop_thread]
    threads.clear()
    assert await db.quick_snapshot(_read, threads, QUICK_ROWS + 1) == ["one", "two"]
    assert threads[0] == loop_thread
    assert threads[1:]
    assert loop_thread not in threads[1:]


async def test_a_quick_read_that_would_wait_for_a_lock_runs_on_a_reader_thread(
    db: Database,
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    await db.quick_snapshot(_read, threads)

    def locked_here(connection: Connection) -> list[str]:
        if threading.get_ident() == loop_thread:
            threads.append(loop_thread)
            busy = sqlite3.OperationalError("database is locked")
            busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise busy
        return _read(connection, threads)

    threads.clear()
    assert await db.quick_snapshot(locked_here) == ["one", "two"]
    assert threads[0] == loop_thread
    assert threads[1] != loop_thread


async def test_a_quick_read_raises_what_its_work_raises(db: Database) -> None:
    threads: list[int] = []
    await db.quick_snapshot(_read, threads)

    def fails(connection: Connection) -> None:
        threads.append(threading.get_ident())
        raise ValueError("no")

    threads.clear()
    with pytest.raises(ValueError, match="no"):
        await db.quick_snapshot(fails)
    assert threads == [threading.get_ident()]  # not run again


async def test_the_loops_connection_does_not_wait_for_locks(db: Database) -> None:
    threads: list[int] = []
    await db.quick_snapshot(_read, threads)

    def timeout(connection: Connection) -> int:
        return int(connection.execute(text("PRAGMA busy_timeout")).scalar_one())

    assert await db.quick_snapshot(timeout) == 0
    assert await db.snapshot(timeout) == 30_000


async def test_in_memory_a_quick_read_is_a_snapshot() -> None:
    async with Database("sqlite://") as database:
        await database.write(_create)
        threads: list[int] = []
        assert await database.quick_snapshot(_read, threads) == ["one", "two"]
        assert await database.quick_snapshot(_read, threads) == ["one", "two"]
        assert threading.get_ident() not in threads


async def test_event_loops_on_other_threads_read_on_reader_threads(db: Database) -> None:
    """The database keeps one connection for an event loop's thread (the first to ask): reads
    of loops on other threads (a test client's, each on a thread of its own) take a reader
    thread, and open no connection each."""
    first: list[int] = []
    await db.quick_snapshot(_read, first)
    await db.quick_snapshot(_read, first)
    assert first[-1] == threading.get_ident()

    def another_loop() -> tuple[int, int]:
        threads: list[int] = []
        for _ in range(2):
            assert asyncio.run(db.quick_snapshot(_read, threads)) == ["one", "two"]
        return threading.get_ident(), threads[-1]

    for _ in range(10):  # more loops than the pool has connections
        loop_thread, read_on = await asyncio.to_thread(another_loop)
        assert read_on != loop_thread
    await db.quick_snapshot(_read, first)
    assert first[-1] == threading.get_ident()


@pytest.mark.parametrize("count", [QUICK_ROWS, QUICK_ROWS + 1])
async def test_a_turns_reads_of_a_long_history_leave_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """`HistoryRepo.load` and `Store.load_turn` read a history's rows on the event loop's thread
    up to `QUICK_ROWS` rows, and on a reader thread beyond (`load_history`'s `check_here`), so
    the reads the loop's thread runs itself do not grow with the history."""
    store = await Store.open(f"sqlite:///{tmp_path / 'h.db'}", blob_dir=tmp_path / "files")
    try:
        history = await store.histories.create("u1", agent="demo")
        rows = [{"type": "user", "content": str(i)} for i in range(count)]
        await store.histories.apply(
            history.id, HistoryChange(append=rows), expected_version=history.version
        )
        threads: list[int] = []
        rows_of = histories.history_rows_of

        def recorded(connection: Connection, history_id: str) -> list[StoredRow]:
            threads.append(threading.get_ident())
            return rows_of(connection, history_id)

        monkeypatch.setattr(histories, "history_rows_of", recorded)
        await store.histories.load(history.id)  # opens the loop's connection
        threads.clear()
        loaded = await store.histories.load(history.id)
        turn = await store.load_turn(history.id)
        assert loaded is not None
        assert turn is not None
        assert [row.data["content"] for row in loaded[1]] == [str(i) for i in range(count)]
        assert [row.data for row in turn.rows] == [row.data for row in loaded[1]]
        on_loop = [thread == threading.get_ident() for thread in threads]
        assert on_loop == [count <= QUICK_ROWS] * 2
    finally:
        await store.close()


def _outside(connection: Connection, seen: list[tuple[str, bool]]) -> list[str]:
    """A one-statement read on the driver; notes its thread and whether a transaction was open
    around it."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    seen.append((threading.current_thread().name, driver.in_transaction))
    return [v for (v,) in driver.execute("SELECT v FROM t ORDER BY id").fetchall()]


async def test_a_quick_read_runs_without_a_transaction_where_a_quick_snapshot_would(
    db: Database,
) -> None:
    seen: list[tuple[str, bool]] = []
    await db.quick_snapshot(_read, [])  # opens the loop's connection
    assert await db.quick_read(_outside, seen) == ["one", "two"]
    assert seen[-1] == (threading.current_thread().name, False)
    writing, go = await _write_in_flight(db)
    assert await _after(writing, go, db.quick_read(_outside, seen)) == ["uno", "two"]
    assert seen[-1] == ("handrail-sqlite-writer", False)


async def test_a_quick_read_through_sqlalchemy_leaves_no_transaction_open(db: Database) -> None:
    await db.quick_snapshot(_read, [])
    open_after: list[bool] = []

    def read(connection: Connection) -> list[str]:
        rows = _read(connection, [])  # `Connection.execute`: SQLAlchemy begins a transaction
        driver = connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        open_after.append(driver.in_transaction)
        return rows

    assert await db.quick_read(read) == ["one", "two"]
    assert open_after == [True]
    assert db._here is not None
    _, connection, driver = db._here
    assert not driver.in_transaction
    assert not connection.in_transaction()
    # Another process's commit is seen: no snapshot was left behind.
    other = sqlite3.connect(db.url.database or "", isolation_level=None)
    try:
        other.execute("UPDATE t SET v = 'uno' WHERE id = 1")
    finally:
        other.close()
    assert await db.quick_read(read) == ["uno", "two"]
