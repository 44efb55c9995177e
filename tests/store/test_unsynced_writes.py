"""Writes marked `unsynced` (a change that a durable one follows): on SQLite at FULL or EXTRA a
group commit of only such writes runs at ``synchronous=NORMAL`` (into the WAL, not flushed),
and the connection is back at the store's level for the next write; beside any other write
it commits as that one does. A conversation made for a prompt is such a write: the turn's
own write then waits for the disk for both. The process may crash in between and lose none of
it. While the writer thread is quiet (nothing queued or running, writes one at a time), such a
write runs on the event loop's own connection instead (no hop), never waiting there for a
lock."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from _pg import PostgresCluster, commit_level, flushing_database_url
from handrail.runtime import Runtime
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.turn import Principal
from handrail.store import Database, Store
from handrail.store.db import HERE_WRITES_IN_A_ROW, unsynced
from handrail.store.greenlets import spawn
from handrail.store.histories import HERE_WRITE_CHARS
from handrail.store.kept import Kept
from handrail.store.records import HistoryChange
from handrail.store.threads import QUIET_GROUPS
from synced_writes import open_traced

LEVELS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def _level(connection: Connection) -> str:
    """The connection's ``synchronous`` level, read inside the write transaction."""
    value = connection.execute(text("PRAGMA synchronous")).scalar_one()
    return LEVELS[int(value)]


def _insert_and_level(connection: Connection, key: int) -> str:
    connection.execute(text("INSERT INTO t (id) VALUES (:id)"), {"id": key})
    return _level(connection)


def _fail(connection: Connection) -> None:
    connection.execute(text("INSERT INTO t (id) VALUES (99)"))
    raise ValueError("this write fails after its insert")


def _keys(connection: Connection) -> list[int]:
    return [row.id for row in connection.execute(text("SELECT id FROM t ORDER BY id"))]


def _create(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))


@pytest.fixture(params=["FULL", "EXTRA"])
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'u.db'}", synchronous=request.param)
    await database.write(_create)
    try:
        yield database
    finally:
        await database.close()


async def test_an_unsynced_write_commits_at_normal_and_the_next_write_at_the_level(
    db: Database,
) -> None:
    assert await db.write(unsynced(_insert_and_level), 1) == "NORMAL"
    assert await db.write(_insert_and_level, 2) == db.synchronous
    # Keyword arguments keep the mark.
    assert await db.write(unsynced(_insert_and_level), key=3) == "NORMAL"
    assert await db.autocommit(unsynced(_insert_and_level), 4) == "NORMAL"
    assert await db.write(_insert_and_level, 5) == db.synchronous
    assert await db.read(_keys) == [1, 2, 3, 4, 5]


async def test_a_failing_unsynced_write_leaves_the_level_as_it_was(db: Database) -> None:
    with pytest.raises(ValueError, match="fails after its insert"):
        await db.write(unsynced(_fail))
    assert await db.write(_insert_and_level, 1) == db.synchronous
    assert await db.read(_keys) == [1]


def _hold(connection: Connection, started: threading.Event, go: threading.Event) -> str:
    """Holds the writer thread until `go`, so that the writes sent meanwhile queue up."""
    started.set()
    assert go.wait(10)
    return _insert_and_level(connection, 0)


async def _queued(database: Database, *works: Any) -> list[Any]:
    """`works` (each a work and its arguments) sent while the writer is held, so that they
    reach it together and share a commit; their results, in order."""
    started, go = threading.Event(), threading.Event()
    first = asyncio.ensure_future(database.write(_hold, started, go))
    await asyncio.to_thread(started.wait, 10)
    others = [asyncio.ensure_future(database.write(*work)) for work in works]
    await asyncio.sleep(0.05)  # every write is in the writer's queue
    go.set()
    assert await first == database.synchronous
    return list(await asyncio.gather(*others))


async def test_unsynced_writes_together_commit_at_normal(db: Database) -> None:
    results = await _queued(db, (unsynced(_insert_and_level), 1), (unsynced(_insert_and_level), 2))
    assert results == ["NORMAL", "NORMAL"]
    assert await db.write(_insert_and_level, 3) == db.synchronous


async def test_an_unsynced_write_beside_another_commits_at_the_level(db: Database) -> None:
    results = await _queued(db, (unsynced(_insert_and_level), 1), (_insert_and_level, 2))
    assert results == [db.synchronous, db.synchronous]
    assert await db.read(_keys) == [0, 1, 2]


@pytest.mark.parametrize("level", ["OFF", "NORMAL"])
async def test_a_store_that_does_not_wait_for_the_disk_is_left_as_it_is(
    level: str, tmp_path: Path
) -> None:
    database = Database(f"sqlite:///{tmp_path / 'u.db'}", synchronous=level)
    try:
        await database.write(_create)
        assert await database.write(unsynced(_insert_and_level), 1) == level
        assert await database.write(_insert_and_level, 2) == level
    finally:
        await database.close()


async def test_a_connection_that_cannot_be_set_back_is_replaced(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    level = db.synchronous
    # The statement that sets the level back fails (sqlite3 runs one statement at a time).
    db._level_statement = f"PRAGMA synchronous={level}; SELECT 1"
    with caplog.at_level(logging.ERROR, logger="handrail.store"):
        # On the writer thread (not the loop's, see below), whose connection is set back.
        assert await db.write(unsynced(_insert_and_level, here=False), 1) == "NORMAL"
    assert "it is replaced" in caplog.text
    # The writer's next connection is a new one, at the store's level: never left unsynced.
    assert await db.write(_insert_and_level, 2) == level
    assert await db.read(_keys) == [1, 2]


_KILLED_CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from handrail.store import Store

    async def main():
        store = await Store.open(sys.argv[1], blob_dir=sys.argv[2], synchronous="FULL")
        # The first on the writer thread, the second on the event loop's (see below).
        for _ in range(2):
            history = await store.histories.create("alice", agent="assistant", synced=False)
            print(history.id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no later write, no checkpoint

    asyncio.run(main())
    """
)


async def test_a_killed_process_loses_no_unsynced_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    store = await Store.open(url, blob_dir=tmp_path / "blobs")
    await store.close()  # migrated
    child = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", _KILLED_CHILD, url, str(tmp_path / "blobs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr
    history_ids = child.stdout.split()
    assert [len(history_id) for history_id in history_ids] == [24, 24]
    # The WAL the killed process wrote is in the file system; the next opener recovers it.
    with sqlite3.connect(tmp_path / "k.db") as other:
        for history_id in history_ids:
            found = other.execute("SELECT owner_id FROM histories WHERE id = ?", (history_id,))
            assert found.fetchall() == [("alice",)]


def _agent() -> list[Agent]:
    return [Agent(name="assistant", instructions="Be brief.", asks=True)]


async def test_a_conversation_made_for_a_prompt_waits_for_the_disk_with_its_turn(
    tmp_path: Path,
) -> None:
    traced = await open_traced(tmp_path / "p.db")
    store = traced.store
    runtime = Runtime(store=store, agents=_agent(), model=ScriptedModel())
    principal = Principal(user_id="alice")
    try:
        created = await store.histories.create("alice", agent="assistant")
        turn = await runtime.start_prompt(principal, "hello")
        events = [event async for event in turn.stream()]
        assert events[-1]["done"] is True
        new_id = events[-1]["historyId"]
        assert new_id != created.id
        assert await store.histories.get(new_id) is not None
    finally:
        await store.close()

    # The conversation created on its own (as `POST /api/histories` does) waits for the disk.
    assert traced.writes(created.id) == [("FULL", "INSERT INTO histories")]
    # The one made for the prompt does not; the turn's write after it does, for both.
    made = traced.writes(new_id)
    assert made[0] == ("NORMAL", "INSERT INTO histories")
    assert len(made) > 1
    assert all(level == "FULL" for level, _ in made[1:])


async def test_an_unsynced_conversation_on_each_backend(store: Store) -> None:
    history = await store.histories.create("alice", agent="assistant", synced=False)
    again = await store.histories.get(history.id)
    assert again is not None
    assert (again.owner_id, again.agent, again.version) == ("alice", "assistant", 1)


def _insert_and_commit_level(connection: Connection, key: int) -> str:
    connection.execute(text("INSERT INTO t (id) VALUES (:id)"), {"id": key})
    return commit_level(connection)


@pytest.fixture
async def pg(postgres_cluster: PostgresCluster) -> AsyncIterator[Database]:
    database = Database(await flushing_database_url(postgres_cluster))
    await database.write(_create)
    try:
        yield database
    finally:
        await database.close()


async def test_an_unsynced_write_on_postgresql_does_not_wait_for_the_flush(pg: Database) -> None:
    # Each as it comes, and the others between them at the server's level.
    assert await pg.write(unsynced(_insert_and_commit_level), 1) == "off"
    assert await pg.write(_insert_and_commit_level, 2) == "on"
    assert await pg.autocommit(unsynced(_insert_and_commit_level), 3) == "off"
    assert await pg.autocommit(_insert_and_commit_level, 4) == "on"
    # Concurrent ones, each kind on connections of its own.
    levels = await asyncio.gather(
        *(
            pg.write(unsynced(_insert_and_commit_level) if i % 2 else _insert_and_commit_level, i)
            for i in range(10, 30)
        )
    )
    assert levels == ["off" if i % 2 else "on" for i in range(10, 30)]
    assert await pg.read(_keys) == [1, 2, 3, 4, *range(10, 30)]
    # A failing one rolls back, and its connection stays with the unsynced work.
    with pytest.raises(ValueError, match="fails after its insert"):
        await pg.write(unsynced(_fail))
    assert 99 not in await pg.read(_keys)
    assert await pg.write(_insert_and_commit_level, 5) == "on"


async def test_an_unsynced_connection_is_set_back_before_the_pool_has_it_again(
    pg: Database,
) -> None:
    await asyncio.gather(*(pg.write(unsynced(_insert_and_commit_level), i) for i in range(8)))
    kept = pg._pg
    assert kept is not None
    assert kept._free_unsynced
    await spawn(kept.close)  # every kept connection back to the pool
    engine = pg.engine
    assert isinstance(engine, AsyncEngine)
    # Every connection the pool holds now reads the server's level, in a transaction of its
    # own and outside one.
    connections = [await engine.connect() for _ in range(engine.pool.checkedin())]
    try:
        assert len(connections) >= 8
        for connection in connections:
            level = await connection.run_sync(commit_level)
            assert level == "on"
    finally:
        for connection in connections:
            await connection.close()


async def test_a_full_pool_gives_one_kind_of_write_the_others_idle_connections(
    postgres_cluster: PostgresCluster,
) -> None:
    """While the pool has room, each kind of write opens connections of its own; once it is
    full, a write takes an idle connection of the other kind (set to its level) rather than
    wait for the pool."""
    url = await flushing_database_url(postgres_cluster)
    engine = create_async_engine(url, pool_size=3, max_overflow=0)
    kept = Kept(engine.sync_engine, 3)
    held = None
    try:
        await spawn(kept.transaction, _create, ())
        synced = await asyncio.gather(
            *(spawn(kept.transaction, commit_level, ()) for _ in range(3))
        )
        assert synced == ["on"] * 3
        assert len(kept._free) == 2  # the third went back to the pool: it had no room left
        # Room in the pool: an unsynced write gets a connection of its own.
        assert await spawn(kept.transaction, commit_level, (), True) == "off"
        assert len(kept._free) == 2
        # The pool full (the kept ones and one held elsewhere): it takes an idle one.
        held = await engine.connect()
        assert engine.pool.checkedout() == 3
        off = spawn(kept.transaction, _insert_and_commit_level, (1,), True)
        assert await asyncio.wait_for(off, 10) == "off"
        # Back to the pool (it had no room for another kept one), set back first.
        assert (len(kept._free), len(kept._free_unsynced)) == (1, 0)
        assert engine.pool.checkedout() == 2
        async with engine.connect() as again:
            assert await again.run_sync(commit_level) == "on"
        assert await asyncio.wait_for(spawn(kept.transaction, commit_level, ()), 10) == "on"
    finally:
        if held is not None:
            await held.close()
        await spawn(kept.close)
        await engine.dispose()


# --- on the event loop's thread ------------------------------------------------------------------


def _where(connection: Connection, key: int) -> tuple[int, str, int]:
    """The thread a write runs on, the level it commits at, and its connection's
    ``wal_autocheckpoint``."""
    level = _insert_and_level(connection, key)
    pages = connection.execute(text("PRAGMA wal_autocheckpoint")).scalar_one()
    return threading.get_ident(), level, int(pages)


def _nothing(connection: Connection) -> None:
    """A write that writes nothing."""


async def _quiet(database: Database) -> None:
    """Make the writer `quiet` (`QUIET_GROUPS` groups of one write) and open the loop's
    connection (an unsynced write that finds none, which runs on the writer meanwhile)."""
    for _ in range(QUIET_GROUPS):
        await database.write(_nothing)
    await database.write(unsynced(_nothing))


async def test_an_unsynced_write_runs_on_the_loops_thread_while_the_writer_is_quiet(
    db: Database,
) -> None:
    loop_thread = threading.get_ident()
    for _ in range(QUIET_GROUPS - 2):
        await db.write(_nothing)
    # Not quiet yet (the fixture's write and these are one too few): on the writer.
    first_thread, level, _ = await db.write(unsynced(_where), 1)
    assert (first_thread != loop_thread, level) == (True, "NORMAL")
    # Quiet now, and no connection of the loop's yet: this one runs on the writer too, and
    # opens the loop's connection (on a reader thread) after it.
    assert (await db.write(unsynced(_where), 6))[0] == first_thread
    # From then on, with nothing queued for the writer and the writes one at a time: here,
    # at NORMAL, and no checkpoint runs on the loop's thread.
    assert await db.write(unsynced(_where), 2) == (loop_thread, "NORMAL", 0)
    assert await db.write(unsynced(_where), key=3) == (loop_thread, "NORMAL", 0)
    # A write that waits for the disk, and one marked to stay away, go to the writer thread.
    synced_thread, level, pages = await db.write(_where, 4)
    assert (synced_thread != loop_thread, level, pages > 0) == (True, db.synchronous, True)
    away_thread, level, _ = await db.write(unsynced(_where, here=False), 5)
    assert (away_thread, level) == (synced_thread, "NORMAL")
    assert await db.read(_keys) == [1, 2, 3, 4, 5, 6]


async def test_writes_that_share_a_commit_keep_the_next_ones_on_the_writer(db: Database) -> None:
    """Once writes come together (a group of several), an unsynced write goes to the writer,
    where it may share the next commit, until `QUIET_GROUPS` groups of one in a row."""
    await _quiet(db)
    loop_thread = threading.get_ident()
    assert (await db.write(unsynced(_where), 1))[0] == loop_thread
    await _queued(db, (_insert_and_level, 2), (_insert_and_level, 3))  # a group of two
    for key in range(4, 4 + QUIET_GROUPS):
        thread, level, _ = await db.write(unsynced(_where), key)
        assert (thread != loop_thread, level) == (True, "NORMAL")
    assert (await db.write(unsynced(_where), 10))[0] == loop_thread


async def test_an_unsynced_write_waits_its_turn_while_the_writer_is_busy(db: Database) -> None:
    await _quiet(db)
    await db.write(unsynced(_insert_and_level), 1)
    results = await _queued(db, (unsynced(_where), 2))
    [(thread, level, _)] = results
    # Queued behind the held write, so it ran on the writer thread after it.
    assert (thread != threading.get_ident(), level) == (True, "NORMAL")
    assert await db.read(_keys) == [0, 1, 2]


async def test_an_unsynced_write_never_waits_on_the_loop_for_another_connections_lock(
    db: Database, tmp_path: Path
) -> None:
    await _quiet(db)
    await db.write(unsynced(_insert_and_level), 1)
    other = sqlite3.connect(tmp_path / "u.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process's writer, holding the lock
    write = asyncio.ensure_future(db.write(unsynced(_where), 2))
    ticks = 0
    while ticks < 20:  # the loop goes on while the write waits for the lock
        await asyncio.sleep(0.01)
        ticks += 1
        assert not write.done()
    other.execute("COMMIT")
    other.close()
    thread, level, _ = await write
    # It waited on the writer thread (its busy timeout), not on the loop's.
    assert (thread != threading.get_ident(), level) == (True, "NORMAL")
    assert await db.read(_keys) == [1, 2]


async def test_a_failing_unsynced_write_on_the_loops_thread_leaves_nothing(db: Database) -> None:
    await _quiet(db)
    await db.write(unsynced(_insert_and_level), 1)
    with pytest.raises(ValueError, match="fails after its insert"):
        await db.write(unsynced(_fail))
    # Rolled back: the next one here commits alone, and a read sees neither 99 nor half.
    assert await db.write(unsynced(_where), 2) == (threading.get_ident(), "NORMAL", 0)
    assert await db.read(_keys) == [1, 2]


async def test_a_write_after_one_on_the_loops_thread_puts_both_on_the_disk(tmp_path: Path) -> None:
    """The loop's connection commits into the same WAL, in order: the writer's next commit
    that waits for the disk flushes both (one file), which a trace of the statements shows as
    the order the commits ran in."""
    traced = await open_traced(tmp_path / "w.db")
    store = traced.store
    try:
        await _quiet(store.db)
        here = await store.histories.create("alice", agent="a", synced=False)
        after = await store.histories.create("alice", agent="a")
    finally:
        await store.close()
    assert traced.writes(here.id) == [("NORMAL", "INSERT INTO histories")]
    assert traced.writes(after.id) == [("FULL", "INSERT INTO histories")]
    inserted = [i for i, (_, s) in enumerate(traced.traced) if "INSERT INTO histories" in s]
    assert len(inserted) == 2
    here_insert, after_insert = inserted
    # Different connections, the first committed before the second began.
    assert traced.traced[here_insert][0] != traced.traced[after_insert][0]
    commits = [i for i, (_, s) in enumerate(traced.traced) if s == "COMMIT"]
    assert any(here_insert < i < after_insert for i in commits)


async def test_an_unsynced_change_that_writes_much_stays_off_the_loops_thread(
    tmp_path: Path,
) -> None:
    """A history change whose text is over `HERE_WRITE_CHARS`, or whose rows hold other
    values (of any size), runs on the writer thread, so that the loop's part does not grow
    with the data."""
    traced = await open_traced(tmp_path / "c.db")
    store = traced.store
    small = {"type": "assistant", "text": "Done."}
    large = {"type": "assistant", "text": "x" * (HERE_WRITE_CHARS + 1)}
    nested = {"type": "tool-result", "toolCallId": "c1", "result": {"ok": True}}
    try:
        await _quiet(store.db)
        history = await store.histories.create("alice", agent="a", synced=False)
        version = history.version
        for row in (small, large, nested, small):
            change = HistoryChange(append=[row], synced=False)
            version = (
                await store.histories.apply(history.id, change, expected_version=version)
            ).version
    finally:
        await store.close()
    made, *changes = [
        connection
        for connection, s in traced.traced
        if history.id in s and s.startswith(("INSERT INTO histories", "UPDATE histories"))
    ]
    assert len(changes) == 4
    # The loop's connection made the history and wrote the small changes; not the others.
    assert changes[0] == made
    assert changes[3] == made
    assert made not in changes[1:3]
    assert [level for level, _ in traced.writes(history.id)] == ["NORMAL"] * 5


async def test_the_loops_thread_does_not_try_while_the_writer_has_work(tmp_path: Path) -> None:
    """While the writer thread has a write queued or running, an unsynced write does not even
    try the lock on the loop's thread: it could take it between the writer's writes and leave
    the writer sleeping in its busy handler."""
    traced = await open_traced(tmp_path / "b.db")
    db = traced.store.db
    try:
        await db.write(_create)
        await _quiet(db)
        await db.write(unsynced(_insert_and_level), 1)
        await db.write(unsynced(_insert_and_level), 2)  # runs on the loop's connection
        [loops] = {c for c, s in traced.traced if s.startswith("INSERT INTO t") and "(2)" in s}
        seen = len(traced.traced)
        assert await _queued(db, (unsynced(_insert_and_level), 3)) == ["NORMAL"]
        tried = [s for c, s in traced.traced[seen:] if c == loops]
        assert tried == []
    finally:
        await traced.store.close()


async def test_a_write_whose_loop_connection_cannot_open_still_returns(
    db: Database, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(db, "_open_here", refuse)
    for _ in range(QUIET_GROUPS):
        await db.write(_nothing)
    with caplog.at_level(logging.WARNING, logger="handrail.store"):
        # Committed on the writer thread: the connection that failed to open after it is
        # only logged; the next write tries again, and goes to the writer meanwhile.
        assert await db.write(unsynced(_insert_and_level), 1) == "NORMAL"
        assert await db.write(unsynced(_insert_and_level), 2) == "NORMAL"
    assert caplog.text.count("opening the event loop's own SQLite connection failed") == 2
    assert await db.read(_keys) == [1, 2]


async def test_writes_in_a_row_on_the_loops_thread_leave_the_checkpoint_to_the_writer(
    db: Database,
) -> None:
    """The loop's connection runs no checkpoint, so after `HERE_WRITES_IN_A_ROW` writes there
    in a row the next goes to the writer, whose commit checkpoints a WAL that has grown."""
    await _quiet(db)
    loop_thread = threading.get_ident()
    threads = [(await db.write(unsynced(_where), key))[0] for key in range(HERE_WRITES_IN_A_ROW)]
    assert set(threads) == {loop_thread}
    thread, level, pages = await db.write(unsynced(_where), HERE_WRITES_IN_A_ROW)
    assert (thread != loop_thread, level, pages > 0) == (True, "NORMAL", True)
    assert (await db.write(unsynced(_where), HERE_WRITES_IN_A_ROW + 1))[0] == loop_thread
