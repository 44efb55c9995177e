"""PostgreSQL: a store whose sessions the server ended (a restart, a failover,
``pg_terminate_backend``) opens new connections instead of failing on the dead ones for ever.

The store runs most statements on asyncpg itself (`handrail.store.prepared`), past
SQLAlchemy's `Connection.execute`, which is what invalidates a lost connection (and, with it,
every other the pool opened before). Without the same there, each dead connection went back
to the pool or the kept list as if it were sound, and every later request failed with
"connection is closed"."""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import DBAPIError

from _pg import PostgresCluster, end_other_sessions
from handrail.store import Database, Store, connection_lost


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
