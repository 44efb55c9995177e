"""PostgreSQL: the engine's connections kept open between the transactions that use them.

A transaction on PostgreSQL runs in a greenlet on SQLAlchemy's sync face of the async engine
(see `handrail.store.db`). Taking a connection from the pool and giving it back costs more of
the server's CPU than the statements' own Python work: a new `Connection`, the pool's checkout
and checkin with their events and the reset's rollback, and for the autocommit engine the
isolation level set on every checkout and reset on every checkin. `Kept` keeps the
`Connection`s instead: a transaction takes a free one (or opens one from the pool when none
is free) and gives it back when it ends, each used by one transaction at a time. Autocommit
work runs on the same connections, with the asyncpg adapter's own autocommit flag set while it
runs (the adapter then begins no transaction; what the autocommit engine's isolation level
does). The greenlets all run on the event loop's thread, and the free list is only touched
between their awaits.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

__all__ = ["Kept", "in_transaction", "roll_back_after"]

T = TypeVar("T")

log = logging.getLogger("handrail.store")


def in_transaction(connection: Connection, work: Callable[..., T], args: tuple[Any, ...]) -> T:
    """`work` in a transaction on `connection`: committed when it returns, rolled back when it
    or the commit raises, by `roll_back_after` (SQLAlchemy's ``with begin()`` would raise a
    rollback's error in place of the one that caused it)."""
    transaction = connection.begin()
    try:
        result = work(connection, *args)
        transaction.commit()
    except BaseException as error:
        roll_back_after(error, transaction.rollback)
        raise
    return result


def roll_back_after(error: BaseException, roll_back: Callable[[], object]) -> None:
    """`roll_back()` in the handler of `error`, the error the caller then sees: a rollback that
    fails too (the connection lost, say) is logged, never raised in its place."""
    try:
        roll_back()
    except Exception as failed:
        failed.__suppress_context__ = True  # `error` is the caller's to show, not the log's
        log.warning("Rolling back after %s failed too.", type(error).__name__, exc_info=failed)


class Kept:
    """The `Connection`s of `engine` (the sync face of the PostgreSQL engine, whose pool holds
    at most `capacity`) that wait for the next transaction. A connection goes back to the pool
    instead when it was invalidated or closed, or is still in a transaction, and when the pool
    has no other left: so whoever waits on the pool (a snapshot, the event listener, a
    migration) gets the next one that comes back, never waiting while kept ones sit idle."""

    def __init__(self, engine: Engine, capacity: int) -> None:
        self._engine = engine
        self._capacity = capacity
        self._free: list[Connection] = []
        # Set by `close`: a transaction still under way then (a task the store's owner did not
        # wait for) gives its connection back to the pool, not to a list nobody empties (its
        # connection would be garbage collected while checked out).
        self._closed = False

    def transaction(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        """In a greenlet: `work` in a transaction, committed when it returns, rolled back when
        it raises."""
        connection = self._take()
        try:
            return in_transaction(connection, work, args)
        finally:
            self._give(connection)

    def autocommit(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        """In a greenlet: `work` with each statement committed on its own."""
        connection = self._take()
        adapter: Any = connection.connection.dbapi_connection
        adapter.autocommit = True
        try:
            return work(connection, *args)
        finally:
            try:
                # SQLAlchemy's own transaction (begun by its first statement) ends; the
                # database has none to roll back.
                connection.rollback()
            finally:
                adapter.autocommit = False
                self._give(connection)

    def close(self) -> None:
        """In a greenlet: give every waiting connection back to the pool."""
        self._closed = True
        free, self._free = self._free, []
        for connection in free:
            _drop(connection)

    def _take(self) -> Connection:
        while self._free:
            connection = self._free.pop()
            if _usable(connection):
                return connection
            _drop(connection)
        return self._engine.connect()

    def _give(self, connection: Connection) -> None:
        pool: Any = self._engine.pool
        if not self._closed and pool.checkedout() < self._capacity and _usable(connection):
            self._free.append(connection)
        else:
            _drop(connection)


def _usable(connection: Connection) -> bool:
    """Whether `connection` may run the next transaction: open, valid, in no transaction of
    SQLAlchemy's, the adapter's or asyncpg's."""
    if connection.closed or connection.invalidated or connection.in_transaction():
        return False
    adapter: Any = connection.connection.dbapi_connection
    if adapter is None or adapter._transaction is not None or adapter.autocommit:
        return False
    driver = adapter._connection
    return not driver.is_closed() and not driver.is_in_transaction()


def _drop(connection: Connection) -> None:
    """Back to the pool (which resets it, or closes it when it cannot)."""
    with contextlib.suppress(Exception):
        connection.close()
