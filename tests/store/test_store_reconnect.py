"""PostgreSQL: a store whose sessions the server ended (a restart, a failover,
``pg_terminate_backend``) opens new connections instead of failing on the dead ones for ever.

The store runs most statements on asyncpg itself (`handrail.store.prepared`), past
SQLAlchemy's `Connection.execute`, which is what invalidates a lost connection (and, with it,
every other the pool opened before). Without the same there, each dead connection went back
to the pool or the kept list as if it were sound, and every later request failed with
"connection is closed"."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

from _pg import PostgresCluster, commit_level, end_other_sessions, flushing_database_url
from handrail.store import Database, Store, connection_lost
from handrail.store.db import unsynced
from handrail.store.greenlets import spawn
from handrail.store.kept import Kept


async def _round(store: Store, ids: list[str]) -> list[BaseException]:
    """A read of each history and as many new histories, all at once."""
    reads = [store.histories.get(history_id) for history_id in ids]
    creates = [store.histories.create("alice", agent="helper") for _ in ids]
    results = await asyncio.gather(*reads, *creates, return_exceptions=True)
    return [r for r in results if isinstance(r, BaseException)]


async def test_a_store_recovers_after_its_sessions_end(postgres_cluster: PostgresCluster) -> None:
    url = postgres_cluster.new_database_url()
    store = await Store.open(url)
    try:
        ids = [(await store.histories.create("alice", agent="helper")).id for _ in range(12)]
        assert await _round(store, ids) == []  # the pool and the kept list hold several now

        async with Database(url) as other:
            await other.write(end_other_sessions)

        # The requests that meet a dead connection fail, as database errors (never a hang);
        # at most one round of them: the first lost connection invalidates the pool's others.
        first = await _round(store, ids)
        assert all(isinstance(error, DBAPIError) for error in first), first
        # Each says the connection was lost (the server answers 503, "send it again").
        assert all(connection_lost(error) for error in first), first
        for attempt in range(3):
            assert await _round(store, ids) == [], f"round {attempt + 2} still failed"
        assert await store.histories.get(ids[0]) is not None
    finally:
        await store.close()


async def test_one_request_at_a_time_recovers_at_once(postgres_cluster: PostgresCluster) -> None:
    url = postgres_cluster.new_database_url()
    store = await Store.open(url)
    try:
        history = await store.histories.create("alice", agent="helper")
        async with Database(url) as other:
            await other.write(end_other_sessions)
        outcomes: list[bool] = []
        for _ in range(4):
            try:
                await store.histories.get(history.id)
                outcomes.append(True)
            except DBAPIError:
                outcomes.append(False)
        # The first meets a dead connection (nothing pings one before use); every one after
        # it runs on a new connection.
        assert outcomes == [False, True, True, True], outcomes
    finally:
        await store.close()


def _insert_kept(connection: Connection, key: int) -> None:
    connection.execute(text("INSERT INTO kept_t (id) VALUES (:id)"), {"id": key})


def _create_kept(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE kept_t (id INTEGER PRIMARY KEY)"))


def _end_sessions_unseen(cluster: PostgresCluster, url: str) -> None:
    """End every session of the database from another thread while this one's event loop
    waits, so that no connection of this loop has read its end yet (as when a failover
    happens between two requests and nothing polled the sockets)."""

    async def end() -> None:
        admin = await cluster.connect(url)
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()

    ender = threading.Thread(target=asyncio.run, args=(end(),))
    ender.start()
    ender.join()


async def test_unsynced_writes_recover_after_their_sessions_end(
    postgres_cluster: PostgresCluster,
) -> None:
    """The connections kept for unsynced work (`synchronous_commit = off`) too: a write that
    meets a dead one fails as the connection lost, and the next ones run on new connections at
    their levels; so does one whose level could not be set on a dead connection of the other
    kind, taken from a full pool."""
    url = await flushing_database_url(postgres_cluster)
    async with Database(url) as db:
        await db.write(_create_kept)
        await asyncio.gather(*(db.write(unsynced(_insert_kept), i) for i in range(4)))
        _end_sessions_unseen(postgres_cluster, url)
        with pytest.raises(DBAPIError) as raised:
            await db.write(unsynced(_insert_kept), 10)
        assert connection_lost(raised.value)
        for i in range(4):
            await db.write(unsynced(_insert_kept), 20 + i)
            await db.write(_insert_kept, 30 + i)
        assert await db.write(unsynced(commit_level)) == "off"
        assert await db.write(commit_level) == "on"

    engine = create_async_engine(url, pool_size=1, max_overflow=0)
    kept = Kept(engine.sync_engine, 1)
    try:
        await spawn(kept.transaction, _insert_kept, (40,))  # kept, the pool full
        _end_sessions_unseen(postgres_cluster, url)
        # Its level is set on the dead connection: the same error, nothing written.
        with pytest.raises(DBAPIError) as raised:
            await spawn(kept.transaction, _insert_kept, (41,), True)
        assert connection_lost(raised.value)
        await spawn(kept.transaction, _insert_kept, (42,), True)
        assert await spawn(kept.transaction, commit_level, (), True) == "off"
        assert await spawn(kept.transaction, commit_level, ()) == "on"
    finally:
        await spawn(kept.close)
        await engine.dispose()


def _backend_pid(connection: Connection) -> int:
    pid: int = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
    return pid


async def test_kept_connections_opened_before_a_lost_one_are_not_used_again(
    postgres_cluster: PostgresCluster,
) -> None:
    """A connection found lost makes the pool take every one it opened before for lost too
    (the database restarted or ended their sessions), kept ones as well: their sockets may
    not have been read since, so their next work would fail (or find asyncpg's protocol in
    another operation). The next transactions run on new connections."""
    url = await flushing_database_url(postgres_cluster)
    # Room in the pool for more than the two used, so that both stay kept between transactions.
    engine = create_async_engine(url, pool_size=4, max_overflow=0)
    kept = Kept(engine.sync_engine, 4)
    try:
        before = await asyncio.gather(*(spawn(kept.transaction, _backend_pid, ()) for _ in "ab"))
        assert len(set(before)) == 2, before  # two connections, both kept
        # What SQLAlchemy does when a statement meets a dead connection: the pool's
        # generation ends with it. Both kept ones are still open and in no transaction.
        engine.sync_engine.pool._invalidate(kept._free[-1].connection)
        after = await asyncio.gather(*(spawn(kept.transaction, _backend_pid, ()) for _ in "ab"))
        assert not set(after) & set(before), (before, after)
        # The new ones are kept and used again, as before.
        again = await asyncio.gather(*(spawn(kept.transaction, _backend_pid, ()) for _ in "ab"))
        assert set(again) == set(after)
    finally:
        await spawn(kept.close)
        await engine.dispose()


def test_the_errors_of_a_session_that_ended_are_the_connection_lost() -> None:
    """What the two paths (`Prepared`'s statements, SQLAlchemy's through the engine's
    ``handle_error`` hook) take for a lost connection besides what SQLAlchemy knows: the
    session ended (57P01-57P03, class 08) or asyncpg's protocol left half-done, raised by
    asyncpg or adapted by SQLAlchemy; never a statement's own error."""
    from asyncpg import exceptions as pg
    from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi

    from handrail.store.prepared import session_ended

    half_done = "cannot switch to state 15; another operation (2) is in progress"
    assert session_ended(pg.AdminShutdownError("terminating connection"))
    assert session_ended(pg.ConnectionFailureError("connection failure"))
    assert session_ended(pg._base.InternalClientError(half_done))
    assert session_ended(AsyncAdapt_asyncpg_dbapi.InternalClientError(half_done))
    assert not session_ended(pg.UniqueViolationError("duplicate key"))
    assert not session_ended(ValueError("not the database's"))
