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
does). The greenlets all run on the event loop's thread, and the free lists are only touched
between their awaits.

A work whose commit need not wait for the disk (`handrail.store.db.unsynced`) runs on a
connection kept for such work alone, set to ``synchronous_commit = off`` once when it is taken
from the pool (or, when the pool is full, from the other kind's idle ones): its commits return
before PostgreSQL flushes their WAL (the WAL writer flushes it within ``wal_writer_delay``,
and any commit that waits flushes the WAL before it, these with it). The statements are the
same, with no round trip more. Such a connection is set back (``RESET synchronous_commit``)
before it serves other work or the pool has it again, or closed when that fails; a connection
lost meanwhile fails its work as any statement does (`handrail.store.db.connection_lost`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

from handrail.store.prepared import execute_alone

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
        #: The connections kept for unsynced work (``synchronous_commit = off``).
        self._free_unsynced: list[Connection] = []
        # Set by `close`: a transaction still under way then (a task the store's owner did not
        # wait for) gives its connection back to the pool, not to a list nobody empties (its
        # connection would be garbage collected while checked out).
        self._closed = False

    def transaction(
        self, work: Callable[..., T], args: tuple[Any, ...], unsynced: bool = False
    ) -> T:
        """In a greenlet: `work` in a transaction, committed when it returns, rolled back when
        it raises; with `unsynced`, its commit does not wait for the WAL's flush."""
        connection = self._take(unsynced)
        try:
            return in_transaction(connection, work, args)
        finally:
            self._give(connection)

    def autocommit(
        self, work: Callable[..., T], args: tuple[Any, ...], unsynced: bool = False
    ) -> T:
        """In a greenlet: `work` with each statement committed on its own (with `unsynced`,
        without waiting for the WAL's flush)."""
        connection = self._take(unsynced)
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
        free_unsynced, self._free_unsynced = self._free_unsynced, []
        for connection in [*free, *free_unsynced]:
            _drop(connection)

    def _take(self, unsynced: bool = False) -> Connection:
        """A kept connection for the work (`unsynced` or not), else a new one while the pool
        has room (each kind's connections grow to what its work needs, and none is set to
        the other's level by turns), else one kept for the other kind, set to this one's
        level: idle connections of one kind never leave the other waiting on a full pool."""
        own, other = (
            (self._free_unsynced, self._free) if unsynced else (self._free, self._free_unsynced)
        )
        connection = _usable_from(own)
        if connection is not None:
            return connection
        pool: Any = self._engine.pool
        if other and pool.checkedout() >= self._capacity:
            connection = _usable_from(other)
        if connection is None:
            connection = self._engine.connect()
        try:
            _set_level(connection, unsynced)
        except BaseException:
            _drop(connection)
            raise
        return connection

    def _give(self, connection: Connection) -> None:
        pool: Any = self._engine.pool
        if not self._closed and pool.checkedout() < self._capacity and _usable(connection):
            unsynced = connection.info.get(_UNSYNCED, False)
            (self._free_unsynced if unsynced else self._free).append(connection)
        else:
            _drop(connection)


#: `Connection.info`'s mark of a connection set to ``synchronous_commit = off``.
_UNSYNCED = "handrail.unsynced"


def _usable_from(free: list[Connection]) -> Connection | None:
    """The last usable connection of `free` (those before it that are not go to the pool)."""
    while free:
        connection = free.pop()
        if _usable(connection):
            return connection
        _drop(connection)
    return None


def _set_level(connection: Connection, unsynced: bool) -> None:
    """Set `connection` to ``synchronous_commit = off`` for unsynced work, or back to the
    server's level for any other."""
    if unsynced == connection.info.get(_UNSYNCED, False):
        return
    if unsynced:
        execute_alone(connection, "SET synchronous_commit TO off")
        connection.info[_UNSYNCED] = True
    else:
        execute_alone(connection, "RESET synchronous_commit")
        del connection.info[_UNSYNCED]


def _usable(connection: Connection) -> bool:
    """Whether `connection` may run the next transaction: open, valid, opened after the pool
    last found one of its connections lost, in no transaction of SQLAlchemy's, the adapter's
    or asyncpg's."""
    if connection.closed or connection.invalidated or connection.in_transaction():
        return False
    # A connection found lost makes the pool take every one opened before it for lost too (the
    # database restarted or ended their sessions: `Pool._invalidate`), which the pool applies
    # when one is checked out. A kept one is not checked out again, and its socket may not
    # have been read since (a failover between two requests): it would fail its next work, or
    # confuse asyncpg's protocol ("another operation is in progress").
    pool: Any = connection.engine.pool
    record: Any = getattr(connection.connection, "_connection_record", None)
    if record is not None and record.last_connect_time < pool._invalidate_time:
        return False
    adapter: Any = connection.connection.dbapi_connection
    if adapter is None or adapter._transaction is not None or adapter.autocommit:
        return False
    driver = adapter._connection
    return not driver.is_closed() and not driver.is_in_transaction()


def _drop(connection: Connection) -> None:
    """Back to the pool (which resets it, or closes it when it cannot); a connection set to
    ``synchronous_commit = off`` is set back first, or closed for good when that fails (never
    left for another work to commit without waiting)."""
    # An invalidated connection's mark goes with it (`Connection.info` lives as long as the
    # driver's connection, which the pool closes).
    if (
        not connection.closed
        and not connection.invalidated
        and connection.info.get(_UNSYNCED, False)
    ):
        try:
            if not _usable(connection):
                raise RuntimeError("not set back: the connection is not idle")
            _set_level(connection, False)
        except Exception:
            with contextlib.suppress(Exception):
                connection.invalidate()
    with contextlib.suppress(Exception):
        connection.close()
