"""SQLite group commit: write transactions that queue up together share one commit, without a
savepoint each; one that fails is left out (the others run again without it, each in a
savepoint then) and no caller hears of success before the commit."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, event, text
from sqlalchemy.exc import IntegrityError

from handrail.store import Database
from handrail.store.threads import GROUP_COMMIT_MAX, settle, settle_all

WRITERS = 12


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[tuple[Database, list[str]]]:
    """A SQLite database at FULL with a table `t`, and every transaction start (``BEGIN`` or
    ``BEGIN IMMEDIATE``, as ``BEGIN``) and commit its connections make from now on (the
    statements SQLite runs: the store begins and commits on the driver)."""
    database = Database(f"sqlite:///{tmp_path / 'g.db'}", synchronous="FULL")
    seen: list[str] = []
    counting = False

    def trace(statement: str) -> None:
        if counting and statement.startswith(("BEGIN", "COMMIT")):
            seen.append(statement.split()[0])

    @event.listens_for(database.engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(trace)

    await database.write(_create)
    counting = True
    try:
        yield database, seen
    finally:
        await database.close()


def _create(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"))


def _insert(connection: Connection, key: int, value: str) -> int:
    connection.execute(text("INSERT INTO t (id, v) VALUES (:id, :v)"), {"id": key, "v": value})
    return key


def _insert_then_fail(connection: Connection, key: int) -> None:
    _insert(connection, key, "never")
    raise ValueError(f"work {key} failed after its insert")


def _wait(connection: Connection, started: threading.Event, go: threading.Event) -> str:
    """Holds the writer thread until `go`, so that the writes sent meanwhile queue up."""
    started.set()
    assert go.wait(10)
    _insert(connection, 0, "first")
    return "waited"


def _rows(connection: Connection) -> dict[int, str]:
    return {row.id: row.v for row in connection.execute(text("SELECT id, v FROM t"))}


async def _queued(database: Database, *works: Any) -> list[Any]:
    """Run `works` (each a work and its arguments) while the writer is held, so they reach it
    together; the results and errors in order, after the first (holding) write's."""
    started, go = threading.Event(), threading.Event()
    first = asyncio.ensure_future(database.write(_wait, started, go))
    await asyncio.to_thread(started.wait, 10)
    others = [asyncio.ensure_future(database.write(*work)) for work in works]
    await asyncio.sleep(0.05)  # every write is in the writer's queue
    for future in others:
        assert not future.done()  # nobody hears of anything before the commit
    go.set()
    assert await first == "waited"
    return await asyncio.gather(*others, return_exceptions=True)


async def test_writes_queued_together_share_one_commit(db: tuple[Database, list[str]]) -> None:
    database, seen = db
    results = await _queued(database, *((_insert, k, f"v{k}") for k in range(1, WRITERS + 1)))
    assert results == list(range(1, WRITERS + 1))
    # The held write ran alone; the twelve queued behind it committed together.
    assert seen == ["BEGIN", "COMMIT", "BEGIN", "COMMIT"]
    expected = {0: "first"} | {k: f"v{k}" for k in range(1, WRITERS + 1)}
    assert await database.read(_rows) == expected
    # Committed for any other connection too.
    path = database.url.database
    assert path is not None
    with sqlite3.connect(path) as other:
        assert dict(other.execute("SELECT id, v FROM t")) == expected


async def test_a_failing_write_is_rolled_back_alone(db: tuple[Database, list[str]]) -> None:
    database, seen = db
    results = await _queued(
        database,
        (_insert, 1, "a"),
        (_insert_then_fail, 2),
        (_insert, 1, "duplicate"),  # the same key: IntegrityError, for this write only
        (_insert, 3, "c"),
    )
    assert results[0] == 1
    assert isinstance(results[1], ValueError)
    assert isinstance(results[2], IntegrityError)
    assert results[3] == 3
    assert seen.count("COMMIT") == 2
    assert await database.read(_rows) == {0: "first", 1: "a", 3: "c"}


def _counted_insert(connection: Connection, key: int, runs: list[int]) -> int:
    runs.append(key)
    return _insert(connection, key, f"v{key}")


async def test_the_writes_beside_a_failing_one_run_again_and_commit_together(
    db: tuple[Database, list[str]],
) -> None:
    database, seen = db
    runs: list[int] = []
    results = await _queued(
        database,
        (_counted_insert, 1, runs),
        (_insert_then_fail, 2),
        (_counted_insert, 3, runs),
        (_insert_then_fail, 4),
        (_counted_insert, 5, runs),
    )
    assert [results[0], results[2], results[4]] == [1, 3, 5]
    assert [str(results[1]), str(results[3])] == [
        "work 2 failed after its insert",
        "work 4 failed after its insert",
    ]
    # The first failure rolled the group back; the second try ran the others again and rolled
    # back only the second failure, then committed (the held write's commit first). No write
    # ran a third time, and none that failed ran twice.
    assert runs == [1, 1, 3, 5]
    assert seen == ["BEGIN", "COMMIT", "BEGIN", "BEGIN", "COMMIT"]
    assert await database.read(_rows) == {0: "first", 1: "v1", 3: "v3", 5: "v5"}


def _delete_first(connection: Connection) -> None:
    connection.execute(text("DELETE FROM t WHERE id = 0"))  # the held write's row


async def test_a_group_runs_savepoints_only_after_a_write_failed(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 's.db'}", synchronous="FULL")
    statements: list[str] = []

    @event.listens_for(database.engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(statements.append)

    try:
        await database.write(_create)
        statements.clear()
        await _queued(database, (_insert, 1, "a"), (_insert, 2, "b"))
        clean = [s.split()[0] for s in statements]
        await database.write(_delete_first)
        statements.clear()
        await _queued(database, (_insert, 3, "c"), (_insert_then_fail, 4), (_insert, 5, "e"))
        failed = [s.split()[0] for s in statements]
    finally:
        await database.close()
    # The held write, then the group in one transaction without a savepoint.
    assert clean == [*("BEGIN", "INSERT", "COMMIT"), *("BEGIN", "INSERT", "INSERT", "COMMIT")]
    assert failed == [
        *("BEGIN", "INSERT", "COMMIT"),
        # The first try, until the write that fails.
        *("BEGIN", "INSERT", "INSERT", "ROLLBACK"),
        # The second: the other writes, each in a savepoint.
        *("BEGIN", "SAVEPOINT", "INSERT", "RELEASE", "SAVEPOINT", "INSERT", "RELEASE", "COMMIT"),
    ]


def _end_transaction_then_fail(connection: Connection) -> None:
    """Rolls back the whole transaction under the group, as SQLite does on a full disk."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.execute("ROLLBACK")
    raise sqlite3.OperationalError("database or disk is full")


async def test_a_group_whose_transaction_is_lost_runs_again_write_by_write(
    db: tuple[Database, list[str]],
) -> None:
    database, _ = db
    results = await _queued(
        database, (_insert, 1, "a"), (_end_transaction_then_fail,), (_insert, 2, "b")
    )
    assert results[0] == 1
    assert isinstance(results[1], sqlite3.OperationalError)
    assert results[2] == 2
    assert await database.read(_rows) == {0: "first", 1: "a", 2: "b"}
    # The writer goes on.
    assert await database.write(_insert, 3, "c") == 3


async def test_a_group_holds_at_most_the_cap(db: tuple[Database, list[str]]) -> None:
    database, seen = db
    count = GROUP_COMMIT_MAX + 5
    results = await _queued(database, *((_insert, k, "v") for k in range(1, count + 1)))
    assert results == list(range(1, count + 1))
    # The held write, then a full group, then the rest.
    assert seen.count("COMMIT") == 3
    assert len(await database.read(_rows)) == count + 1


async def test_reads_go_on_while_the_writer_is_busy(db: tuple[Database, list[str]]) -> None:
    database, _ = db
    started, go = threading.Event(), threading.Event()
    first = asyncio.ensure_future(database.write(_wait, started, go))
    await asyncio.to_thread(started.wait, 10)
    assert await asyncio.wait_for(database.read(_rows), 10) == {}
    go.set()
    assert await first == "waited"


async def test_a_group_is_answered_with_one_wake_up_of_the_loop(
    db: tuple[Database, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, _ = db
    loop = asyncio.get_running_loop()
    calls: list[Any] = []
    original = loop.call_soon_threadsafe

    def counted(callback: Any, *args: Any) -> Any:
        calls.append(callback)
        return original(callback, *args)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    results = await _queued(
        database, (_insert, 1, "a"), (_insert_then_fail, 2), (_insert, 3, "c"), (_insert, 4, "d")
    )
    # Each caller gets its own outcome, in order, from one callback for the whole group (and
    # one for the held write before it).
    assert results[0] == 1
    assert isinstance(results[1], ValueError)
    assert results[2:] == [3, 4]
    assert [c.__name__ for c in calls if c in (settle, settle_all)] == ["settle", "settle_all"]


def _in_transaction(connection: Connection) -> tuple[bool, bool]:
    """Whether SQLAlchemy and SQLite each see a transaction (the store begins on the driver)."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return connection.in_transaction(), driver.in_transaction


async def test_a_write_alone_commits_or_rolls_back_what_its_statements_did(
    db: tuple[Database, list[str]],
) -> None:
    database, seen = db
    # SQLite's transaction is open before the first statement; SQLAlchemy's joins it.
    assert await database.write(_in_transaction) == (False, True)
    with pytest.raises(ValueError, match="failed after its insert"):
        await database.write(_insert_then_fail, 1)
    with pytest.raises(IntegrityError):
        await database.write(_insert_twice, 2)
    assert await database.write(_insert, 3, "c") == 3
    assert await database.read(_rows) == {3: "c"}
    assert await database.read(_in_transaction) == (False, True)
    assert seen.count("BEGIN") == seen.count("COMMIT") + 2  # the two rolled back


def _insert_twice(connection: Connection, key: int) -> None:
    _insert(connection, key, "once")
    _insert(connection, key, "twice")


def _create_child(connection: Connection) -> None:
    connection.execute(
        text(
            "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL"
            " REFERENCES t (id) DEFERRABLE INITIALLY DEFERRED)"
        )
    )


def _insert_that_fails_to_commit(connection: Connection, key: int) -> None:
    """An insert that breaks a deferred foreign key: SQLite refuses the ``COMMIT`` and keeps
    the transaction open."""
    _insert(connection, key, "orphan")
    connection.execute(text("INSERT INTO child (id, parent) VALUES (:id, 999)"), {"id": key})


async def test_a_write_whose_commit_fails_leaves_the_connection_usable(
    db: tuple[Database, list[str]],
) -> None:
    database, _ = db
    await database.write(_create_child)
    with pytest.raises(IntegrityError, match="FOREIGN KEY constraint failed"):
        await database.write(_insert_that_fails_to_commit, 1)
    # Rolled back, SQLAlchemy's transaction too: the writer's connection goes on.
    assert await database.write(_insert, 2, "b") == 2
    assert await database.write(_in_transaction) == (False, True)
    assert await database.read(_rows) == {2: "b"}


def _deny_next_rollback(connection: Connection) -> None:
    """Makes the next ``ROLLBACK`` on this connection fail with SQLite's own ``not
    authorized`` (a real failing rollback: the driver prepares the statement, which the
    authorizer refuses once)."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    denied: list[str] = []

    def authorize(action: int, first: str | None, *_: object) -> int:
        if action == sqlite3.SQLITE_TRANSACTION and first == "ROLLBACK" and not denied:
            denied.append(first)
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    driver.set_authorizer(authorize)


def _allow_all(connection: Connection) -> None:
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.set_authorizer(None)


def _fail_and_fail_to_roll_back(connection: Connection, key: int) -> None:
    _deny_next_rollback(connection)
    _insert_then_fail(connection, key)


def _fail_to_commit_and_to_roll_back(connection: Connection, key: int) -> None:
    _deny_next_rollback(connection)
    _insert_that_fails_to_commit(connection, key)


async def test_a_failing_rollback_never_hides_the_error_that_caused_it(
    db: tuple[Database, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    database, _ = db
    await database.write(_create_child)
    with pytest.raises(ValueError, match="work 1 failed after its insert") as failed:
        await database.write(_fail_and_fail_to_roll_back, 1)
    assert failed.value.__context__ is None  # raised as it was, not over the rollback's
    with pytest.raises(IntegrityError, match="FOREIGN KEY constraint failed"):
        await database.write(_fail_to_commit_and_to_roll_back, 2)
    rollbacks = [r for r in caplog.records if r.name == "handrail.store"]
    assert [r.getMessage() for r in rollbacks] == [
        "Rolling back after ValueError failed too.",
        "Rolling back after IntegrityError failed too.",
    ]
    assert all(r.exc_info and "not authorized" in str(r.exc_info[1]) for r in rollbacks)
    # The transactions left open were rolled back when the connection next began one.
    await database.write(_allow_all)
    assert await database.write(_insert, 3, "c") == 3
    assert await database.read(_rows) == {3: "c"}
