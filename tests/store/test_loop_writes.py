"""SQLite writes on the event loop's thread: a write that comes alone, while the writer thread
is idle and the database was not crowded lately, commits on the loop's own connection (no
thread hop); writes that come together, or while the writer is busy or another connection
holds the write lock, go to the writer thread; the loop's connection never checkpoints."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, event, text

from handrail.store import Database
from handrail.store import db as db_module


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'w.db'}", synchronous="FULL")
    await database.write(_create)
    await database.quick_snapshot(_values)  # opens the loop's connection
    try:
        yield database
    finally:
        await database.close()


def _create(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"))


def _insert(connection: Connection, key: int, threads: list[int]) -> int:
    threads.append(threading.get_ident())
    connection.execute(text("INSERT INTO t (id, v) VALUES (:id, 'v')"), {"id": key})
    return key


def _insert_then_fail(connection: Connection, key: int, threads: list[int]) -> None:
    _insert(connection, key, threads)
    raise ValueError("the work failed after its insert")


def _values(connection: Connection) -> list[int]:
    return [row.id for row in connection.execute(text("SELECT id FROM t ORDER BY id"))]


def _on_disk(database: Database) -> list[int]:
    """The rows as another connection sees them."""
    assert database.url.database is not None
    with sqlite3.connect(database.url.database) as other:
        return [row[0] for row in other.execute("SELECT id FROM t ORDER BY id")]


def _commits(database: Database) -> list[int]:
    """The thread of every commit from now on."""
    threads: list[int] = []

    @event.listens_for(database.engine, "commit")
    def on_commit(connection: Connection) -> None:
        threads.append(threading.get_ident())

    return threads


async def _quiet() -> None:
    """Past the time writes go to the writer thread after a crowded moment."""
    await asyncio.sleep(db_module.CROWDED_S * 2)


async def test_a_lone_write_commits_on_the_loops_thread(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    commits = _commits(db)
    await _quiet()
    assert await db.write(_insert, 1, threads) == 1
    assert threads == [loop_thread]
    assert commits == [loop_thread]
    assert _on_disk(db) == [1]  # committed, for every connection
    assert await db.quick_snapshot(_values) == [1]


async def test_a_failing_write_on_the_loop_is_rolled_back(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    await _quiet()
    with pytest.raises(ValueError, match="failed after its insert"):
        await db.write(_insert_then_fail, 1, threads)
    assert threads == [loop_thread]
    assert _on_disk(db) == []
    assert await db.write(_insert, 2, threads) == 2
    assert _on_disk(db) == [2]


async def test_writes_sent_together_share_one_commit_on_the_writer_thread(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    commits = _commits(db)
    await _quiet()
    assert await asyncio.gather(*(db.write(_insert, k, threads) for k in range(1, 6))) == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert len(threads) == 5
    assert loop_thread not in threads
    assert len(commits) == 1 and commits[0] != loop_thread
    assert _on_disk(db) == [1, 2, 3, 4, 5]


async def test_after_a_crowded_moment_writes_go_to_the_writer_for_a_while(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    await _quiet()
    await asyncio.gather(db.write(_insert, 1, threads), db.write(_insert, 2, threads))
    await db.write(_insert, 3, threads)  # alone, but just after two came together
    assert loop_thread not in threads
    await _quiet()
    await db.write(_insert, 4, threads)
    assert threads[-1] == loop_thread
    assert _on_disk(db) == [1, 2, 3, 4]


async def test_a_write_while_another_connection_writes_runs_on_the_writer_thread(
    db: Database,
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    assert db.url.database is not None
    other = sqlite3.connect(db.url.database, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # holds the database's write lock
        other.execute("INSERT INTO t (id, v) VALUES (9, 'other')")
        await _quiet()
        writing = asyncio.ensure_future(db.write(_insert, 1, threads))
        await asyncio.sleep(0.1)  # the loop goes on meanwhile
        assert not writing.done()
        assert threads == []  # its BEGIN was refused here at once; it waits on the writer
        other.execute("COMMIT")
        assert await asyncio.wait_for(writing, 10) == 1
    finally:
        other.close()
    assert len(threads) == 1 and threads[0] != loop_thread
    assert _on_disk(db) == [1, 9]


async def test_the_loops_connection_leaves_checkpoints_to_the_writer_thread(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    monkeypatch.setattr(db_module, "CHECKPOINT_EVERY", 3)
    checkpoints: list[int] = []
    real = db._checkpoint

    def checkpoint() -> None:
        checkpoints.append(threading.get_ident())
        real()

    monkeypatch.setattr(db, "_checkpoint", checkpoint)
    assert (
        await db.quick_snapshot(lambda c: c.execute(text("PRAGMA wal_autocheckpoint")).scalar())
        == 0
    )
    threads: list[int] = []
    await _quiet()
    for key in range(1, 8):
        await db.write(_insert, key, threads)
    assert threads == [loop_thread] * 7
    for _ in range(100):
        if len(checkpoints) == 2:
            break
        await asyncio.sleep(0.01)
    assert len(checkpoints) == 2
    assert loop_thread not in checkpoints
    assert _on_disk(db) == list(range(1, 8))


async def test_without_loop_writes_every_write_goes_to_the_writer_thread(tmp_path: Path) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    async with Database(f"sqlite:///{tmp_path / 'n.db'}", loop_writes=False) as database:
        await database.write(_create)
        await database.quick_snapshot(_values)
        await _quiet()
        for key in range(1, 4):
            await database.write(_insert, key, threads)
    assert len(threads) == 3
    assert loop_thread not in threads
