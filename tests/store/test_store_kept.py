"""PostgreSQL: the connections kept between transactions (`handrail.store.kept`) never leave
whoever waits on the pool waiting while they sit idle, and autocommit work on them commits
each statement while a transaction on the same connection stays whole, and a rollback that
fails never hides the error that caused it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.util.concurrency import greenlet_spawn

from _pg import PostgresCluster
from handrail.store import Database
from handrail.store.db import driver_url
from handrail.store.kept import Kept


def _sleep(connection: Connection) -> None:
    connection.execute(text("SELECT pg_sleep(0.2)"))


async def test_the_pool_keeps_one_for_others(postgres_cluster: PostgresCluster) -> None:
    url = driver_url(postgres_cluster.new_database_url())
    engine = create_async_engine(url, pool_size=2, max_overflow=0, pool_timeout=1)
    kept = Kept(engine.sync_engine, 2)
    try:
        # Two transactions at once take both of the pool's connections; the one that ends
        # last finds none left in the pool and gives its connection back to it.
        await asyncio.gather(*(greenlet_spawn(kept.transaction, _sleep, ()) for _ in range(2)))
        pool: Any = engine.sync_engine.pool
        assert pool.checkedout() == 1
        async with engine.connect() as connection:  # within the pool's 1 s timeout
            assert (await connection.execute(text("SELECT 1"))).scalar() == 1
        # The kept one runs the next transaction.
        await greenlet_spawn(kept.transaction, _sleep, ())
        assert pool.checkedout() == 1
    finally:
        await greenlet_spawn(kept.close)
        await engine.dispose()


def _create(connection: Connection) -> None:
    connection.execute(text("CREATE TABLE t (n integer)"))


def _insert_then_fail(connection: Connection, n: int) -> None:
    connection.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})
    raise LookupError("after the insert")


def _count(connection: Connection) -> int:
    return int(connection.execute(text("SELECT count(*) FROM t")).scalar_one())


async def test_autocommit_commits_each_statement_and_a_transaction_stays_whole(
    postgres_cluster: PostgresCluster,
) -> None:
    url = driver_url(postgres_cluster.new_database_url())
    engine = create_async_engine(url, pool_size=1, max_overflow=0, pool_timeout=1)
    kept = Kept(engine.sync_engine, 1)
    try:
        await greenlet_spawn(kept.autocommit, _create, ())
        with pytest.raises(LookupError):
            await greenlet_spawn(kept.autocommit, _insert_then_fail, (1,))
        assert await greenlet_spawn(kept.autocommit, _count, ()) == 1
        # The same connection, in a transaction again: the failed one writes nothing.
        with pytest.raises(LookupError):
            await greenlet_spawn(kept.transaction, _insert_then_fail, (2,))
        assert await greenlet_spawn(kept.transaction, _count, ()) == 1
    finally:
        await greenlet_spawn(kept.close)
        await engine.dispose()


async def test_a_transaction_that_ends_after_close_gives_its_connection_back(
    postgres_cluster: PostgresCluster,
) -> None:
    # A task the store's owner did not wait for may still be in a transaction when the store
    # closes: its connection goes back to the pool, never to the closed free list (where it
    # would be garbage collected while checked out, which SQLAlchemy warns of).
    url = driver_url(postgres_cluster.new_database_url())
    engine = create_async_engine(url, pool_size=2, max_overflow=0, pool_timeout=1)
    kept = Kept(engine.sync_engine, 2)
    pool: Any = engine.sync_engine.pool
    try:
        late = asyncio.ensure_future(greenlet_spawn(kept.transaction, _sleep, ()))
        await asyncio.sleep(0.05)  # under way
        assert pool.checkedout() == 1
        await greenlet_spawn(kept.close)
        await late
        assert pool.checkedout() == 0
        assert kept._free == []
    finally:
        await greenlet_spawn(kept.close)
        await engine.dispose()


def _lose_the_connection_then_fail(connection: Connection) -> None:
    """The connection goes (asyncpg's own closes at once) while a transaction is open, then
    the work fails: the rollback after it fails too."""
    connection.execute(text("SELECT 1"))
    adapter: Any = connection.connection.dbapi_connection
    adapter._connection.terminate()
    raise LookupError("the work's own error")


def _two(connection: Connection) -> int:
    return int(connection.execute(text("SELECT 2")).scalar_one())


@pytest.mark.parametrize("how", ["write", "snapshot"])  # a kept connection, one of the pool's
async def test_a_failing_rollback_never_hides_the_error_that_caused_it(
    postgres_cluster: PostgresCluster, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    database = Database(postgres_cluster.new_database_url())
    try:
        with pytest.raises(LookupError, match="the work's own error"):
            await getattr(database, how)(_lose_the_connection_then_fail)
        (logged,) = [r for r in caplog.records if r.name == "handrail.store"]
        assert logged.getMessage() == "Rolling back after LookupError failed too."
        assert logged.exc_info
        assert "connection is closed" in str(logged.exc_info[1])
        assert await getattr(database, how)(_two) == 2  # on another connection
    finally:
        await database.close()
