"""The database: an engine from a URL, its connection settings, transactions and migrations.

SQLite (a file, in WAL mode) is the default; PostgreSQL is the same code with another URL.
Plain URLs are accepted and given the driver handrail uses: ``sqlite:///x.db`` runs on the
standard library's ``sqlite3`` and ``postgresql://...`` (or ``postgres://...``) on asyncpg.

Every store operation is one plain function of a SQLAlchemy `Connection`, run in a transaction
by `Database.read`, `Database.snapshot` or `Database.write`, so each backend runs it the way it
runs fastest without blocking the event loop:

- SQLite: the whole transaction runs in one hop to a thread of the database's own (``sqlite3``
  blocks, on the disk's fsync above all), so a transaction of several statements costs one
  thread round trip, not one per statement. Reads run on a few reader threads (WAL lets them
  go on beside a writer); a `quick_snapshot` runs on the event loop's own thread when no write
  is in flight and the read needs no lock it would wait for (see there). Writes run on one
  writer thread, which groups the write transactions that queued up while it was busy into
  one commit, with one fsync for all of them; no caller hears of success before that commit
  is on disk. They run without a savepoint a write (in `bench/sqlite_writes.py` a write in a
  savepoint costs 1.7 times the CPU); when one raises, it gets its error, the transaction is
  rolled back and the others run again in a new one, each in a savepoint then, so that a
  second failure is rolled back alone. A group whose commit fails, or whose transaction SQLite
  itself rolled back, runs again one transaction per write. A work marked `unsynced` (a
  change that a durable one follows, such as a conversation made for a prompt) does not wait
  for the disk when its group holds nothing else: that commit runs at ``synchronous=NORMAL``,
  written to the WAL but not flushed, and the next commit's fsync (or a checkpoint's) flushes
  it with its own, since the WAL is one file written in order. A crash of the process loses
  none of it (the WAL is in the operating system's hands); a power loss before that flush may.
- PostgreSQL: the transaction runs on SQLAlchemy's async engine over asyncpg
  (`AsyncConnection.run_sync`), which waits on the network without a thread.

No log and no error message ever holds a value: every engine is made with
``hide_parameters=True`` (a failed statement's message, and the statements ``echo`` logs,
show no bound parameters), the result rows SQLAlchemy logs at DEBUG are dropped, and a
PostgreSQL error loses its ``DETAIL`` (which names the values of a failing row or key) and the
values asyncpg quotes for an argument it cannot encode (`without_values`). The SQL and the
constraint's name stay.

Every SQLite connection gets ``journal_mode=WAL``, ``foreign_keys=ON``, a 30 second
``busy_timeout`` and the chosen ``synchronous`` level. Transactions that write start with
``BEGIN IMMEDIATE``, so two writers queue up instead of failing on a lock upgrade.

`Database.migrate` brings the schema to the newest Alembic revision. Several processes may call
it at once: on SQLite the migration runs in an immediate transaction, on PostgreSQL under a
transaction-scoped advisory lock, so one migrates and the others then find nothing to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar, cast

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, ExceptionContext, Row, create_engine, event, pool, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.sql.base import Executable

from handrail.errors import ConfigError, DatabaseUnavailable, HandrailError
from handrail.store._types import stored_json_text
from handrail.store.greenlets import spawn
from handrail.store.kept import Kept, in_transaction, roll_back_after
from handrail.store.prepared import drop_direct, keep_direct, session_ended
from handrail.store.threads import Workers, Writer

__all__ = [
    "DEFAULT_URL",
    "Database",
    "NotHere",
    "Work",
    "alembic_config",
    "all_rows",
    "check_here",
    "driver_url",
    "first_row",
    "may_have_committed",
    "row_count",
    "schema_revisions",
    "shown_url",
    "unsynced",
    "without_values",
]

#: The embedded default: a SQLite file in the working folder.
DEFAULT_URL: Final = "sqlite:///handrail.db"

#: Where the Alembic environment and revisions live (shipped as package data).
MIGRATIONS_DIR: Final = Path(__file__).resolve().parent / "migrations"

#: The PostgreSQL advisory lock key held while migrating ("handrail" as a big-endian int64).
MIGRATION_LOCK_KEY: Final = int.from_bytes(b"handrail", "big", signed=True)

SYNCHRONOUS_LEVELS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")
#: The levels at which a commit waits for the disk, and the statement an `unsynced` group's
#: commit runs before (``NORMAL`` in WAL mode: written, not flushed).
_SYNCED_LEVELS: Final = frozenset({"FULL", "EXTRA"})
_COMMIT_UNSYNCED: Final = "PRAGMA synchronous=NORMAL"

#: SQLite waits this long for another writer's lock before giving up, and PostgreSQL for any
#: lock (its ``lock_timeout``: another program's long transaction or ``LOCK TABLE``; the
#: migrations wait for each other without it).
BUSY_TIMEOUT_S: Final = 30
#: PostgreSQL's ``lock_not_available``: a lock not had within ``lock_timeout``.
_LOCK_NOT_AVAILABLE: Final = "55P03"

#: How many SQLite read transactions run at once (each on its own thread and connection). WAL
#: lets readers go on beside the one writer.
SQLITE_THREADS: Final = 4

#: PostgreSQL connections a process may keep open (opened as the work needs them), and how many
#: more it may open for a burst. None more: the pool closes a connection beyond its size when it
#: comes back, so under a steady load above the size it would open and close one by turns
#: (as 20 + 20 did under 32 clients: a new server process and asyncpg's type queries each).
PG_POOL_SIZE: Final = 40
PG_POOL_OVERFLOW: Final = 0

#: The savepoint each write runs in when a group runs again after one of its writes failed
#: (`Database._write_group`), and the statements that use it.
_SAVEPOINT: Final = "handrail_write"
_SAVE: Final = f"SAVEPOINT {_SAVEPOINT}"
_UNDO: Final = f"ROLLBACK TO {_SAVEPOINT}"
_RELEASE: Final = f"RELEASE {_SAVEPOINT}"

#: A `Database.quick_snapshot` whose work finds more rows than this (`check_here`) runs
#: on a reader thread instead of the event loop's.
QUICK_ROWS: Final = 64

#: After this many writes in a row on the event loop's connection (`Database._write_here`),
#: whose commits run no checkpoint, the next goes to the writer thread, whose commit runs one
#: when the WAL has grown past ``wal_autocheckpoint``: the WAL never grows without bound.
HERE_WRITES_IN_A_ROW: Final = 64

#: The SQLite result codes (their primary part) of a lock another connection holds.
_BUSY_CODES: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

#: The key of `Connection.info` that marks a `quick_snapshot`'s connection.
_HERE: Final = "handrail_here"


#: The name of handrail's engines in SQLAlchemy's logs: they log to
#: ``sqlalchemy.engine.Engine.handrail``.
LOGGING_NAME: Final = "handrail"

log = logging.getLogger("handrail.store")

Backend = Literal["sqlite", "postgresql"]

P = ParamSpec("P")
T = TypeVar("T")

#: A store operation: a function of a connection (inside a transaction) and its arguments.
Work = Callable[Concatenate[Connection, P], T]


def driver_url(url: str | URL | None) -> URL:
    """`url` with the driver handrail uses: ``sqlite+pysqlite`` or ``postgresql+asyncpg``.
    None gives `DEFAULT_URL`. Any other database raises `ConfigError`."""
    if url is None:
        url = DEFAULT_URL
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"The database URL is not valid: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite")
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
        query = dict(parsed.query)
        if "sslmode" in query:  # libpq's name; asyncpg takes the same values as "ssl"
            query.setdefault("ssl", query.pop("sslmode"))
            parsed = parsed.set(query=query)
        return parsed
    raise ConfigError(
        f"Unsupported database {backend!r} in the database URL: use sqlite:///path/to/file.db "
        "or postgresql://user:password@host/dbname."
    )


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic `Config` for handrail's migrations, built in code (no ``alembic.ini``).
    With `connection`, the migration environment runs on it."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def schema_revisions() -> tuple[str, ...]:
    """handrail's schema revisions, oldest first: the last is the newest ("head")."""
    script = ScriptDirectory.from_config(alembic_config())
    return tuple(reversed([revision.revision for revision in script.walk_revisions()]))


def _schema_revision(connection: Connection) -> str | None:
    """The database's schema revision: None for a new (or not yet migrated) database."""
    return MigrationContext.configure(connection).get_current_revision()


def _upgrade_to_head(connection: Connection, opened: list[bool]) -> None:
    """Bring the schema to the head, under the migration lock (PostgreSQL) or in one immediate
    transaction (SQLite), so that one process migrates and the others then find it done.
    `opened` gets True once the database answered (what fails before is the opening's)."""
    if connection.dialect.name == "postgresql":
        # Another process's migration may take longer than a lock's usual wait.
        connection.execute(text("SET LOCAL lock_timeout = 0"))
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
    current, revisions = _schema_revision(connection), schema_revisions()
    opened.append(True)
    head = revisions[-1]
    if current == head:
        return
    if current is not None and current not in revisions:
        url = shown_url(connection.engine.url)
        raise DatabaseUnavailable(
            f"The database {url} has handrail's schema at revision {current!r}, which this "
            f"handrail does not know (its newest is {head!r}): a newer handrail made it. Run "
            "that handrail (or a newer one) on it, or give another database."
        )
    start = time.monotonic()
    if current is None:
        log.info("creating the database's tables (schema revision %s)", head)
    else:
        log.info("upgrading the database's schema from revision %s to %s", current, head)
    command.upgrade(alembic_config(connection), "head")
    log.info("the database's schema is at revision %s (%.1f s)", head, time.monotonic() - start)


def shown_url(url: URL) -> str:
    """`url` to show a person, as they would write it (``postgresql://``, no driver): its
    password, and any query value named like one, hidden."""
    query = {key: "***" if "password" in key.lower() else value for key, value in url.query.items()}
    shown = url.set(drivername=url.get_backend_name(), query=query)
    return shown.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


#: Seconds between two tries of a database that does not accept connections yet.
_WAIT_RETRY_S: Final = 0.5
#: PostgreSQL's ``cannot_connect_now``: the database system is starting up (or shutting down).
_STARTING_UP_SQLSTATE: Final = "57P03"


def not_up_yet(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says that the database server does
    not accept connections yet, as while it starts: the connection refused, its Unix socket
    not there, its host name not known yet (a container not started), or PostgreSQL's "the
    database system is starting up"."""
    return _raised_from(error, _says_not_up_yet) is not None


def _says_not_up_yet(error: BaseException) -> bool:
    return (
        isinstance(error, (ConnectionRefusedError, FileNotFoundError, socket.gaierror))
        or getattr(error, "sqlstate", None) == _STARTING_UP_SQLSTATE
    )


def _raised_from(
    error: BaseException, says: Callable[[BaseException], bool]
) -> BaseException | None:
    """The first of `error`, the errors it was raised from (its cause or context, on and on)
    and the driver's errors SQLAlchemy wrapped in them (``orig``) for which `says` holds."""
    seen: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        if says(item):
            return item
        if isinstance(item, DBAPIError) and item.orig is not None and says(item.orig):
            return item.orig
        item = item.__cause__ or item.__context__
    return None


def _reason_text(exc: BaseException) -> str:
    reason = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if isinstance(reason, OSError) and reason.filename is not None:
        return f"{reason.strerror or type(reason).__name__} ({reason.filename})"
    return str(reason).strip().rstrip(".") or type(reason).__name__


def _open_failed(
    url: URL, exc: BaseException, *, waited: float | None = None
) -> DatabaseUnavailable:
    reason_text = _reason_text(exc)
    if waited is not None:
        reason_text += f" (after waiting {waited:.0f} s for it to accept connections)"
    if storage_full(exc) is not None:
        fix = "Its disk is full: free space on it, then start again."
    elif url.get_backend_name() == "sqlite":
        fix = (
            "Give the path of a handrail database file, or of a new one in a folder this user "
            "may write in."
        )
    else:
        fix = (
            "Check that PostgreSQL runs at that host and port, and that the URL's user, "
            "password and database are right (the database must exist: createdb <name>)."
        )
    return DatabaseUnavailable(
        f"Could not open the database {shown_url(url)}: {reason_text}. {fix}"
    )


# --- one-statement operations, for `Database.read` and `Database.write` -----------------------


def first_row(connection: Connection, statement: Executable) -> Row[Any] | None:
    """The first row `statement` gives, or None."""
    return connection.execute(statement).first()


def all_rows(connection: Connection, statement: Executable) -> list[Row[Any]]:
    """Every row `statement` gives."""
    return list(connection.execute(statement).all())


def row_count(connection: Connection, statement: Executable) -> int:
    """How many rows `statement` changed."""
    return connection.execute(statement).rowcount


def _execute_waiting(cursor: sqlite3.Cursor, statement: str) -> None:
    """Run `statement`, waiting (up to the busy timeout) while another connection holds a lock
    it needs: turning a new file to WAL takes a lock SQLite's busy handler does not wait for,
    so processes opening a new database at once would otherwise fail."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            cursor.execute(statement)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


# --- no values in logs ------------------------------------------------------------------------


class _NoRows(logging.Filter):
    """Drops the lines of result rows that SQLAlchemy logs at DEBUG: rows hold prompts,
    answers and prepared requests. Statements (with their parameters hidden) and column names
    still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg
        return not (isinstance(message, str) and message.endswith("Row %r"))


logging.getLogger(f"sqlalchemy.engine.Engine.{LOGGING_NAME}").addFilter(_NoRows())

#: asyncpg's message for an argument it cannot encode quotes the value: what follows the
#: argument's number goes.
_ARGUMENT_VALUE: Final = re.compile(r"(invalid input for query argument \$\d+):.*", re.DOTALL)
_VALUE_HIDDEN: Final = r"\1 (the value is not shown)"


def without_values(error: BaseException) -> BaseException:
    """`error` (and every error it was raised from) without the values PostgreSQL and asyncpg
    put in their messages: a server error's ``DETAIL`` ("Failing row contains (...)", "Key
    (id)=(...) already exists") is removed, and the value asyncpg quotes for an argument it
    cannot encode is cut, in place. Returns `error`."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        stack += [item.__cause__, item.__context__, getattr(item, "orig", None)]
        if _from_asyncpg(item) and getattr(item, "detail", None):
            item.detail = None  # type: ignore[attr-defined]
        if item.args and isinstance(item.args[0], str) and "query argument" in item.args[0]:
            item.args = (_ARGUMENT_VALUE.sub(_VALUE_HIDDEN, item.args[0]), *item.args[1:])
    return error


#: The SQLSTATE classes of a PostgreSQL error after which a COMMIT (or a statement that runs
#: as a transaction by itself) may still have taken effect: the connection failed (08), the
#: operator intervened (57: a cancel during the commit's wait for a standby, a shutdown), the
#: system failed (58, XX).
_OUTCOME_UNKNOWN_CLASSES: Final = frozenset({"08", "57", "58", "XX"})


def may_have_committed(error: BaseException) -> bool:
    """Whether a write (`Database.write`, `Database.autocommit`) that raised `error` may still
    have committed: the caller was cancelled or interrupted (the commit may have been sent,
    and on SQLite the writer thread goes on), or the connection failed or the error is not the
    database's answer (its link lost during or after the COMMIT). False for an error of the
    work itself (a `ValueError`, a conflict) or an answer of the database that refuses the
    statement (a constraint, a serialization failure): nothing was written then."""
    if not isinstance(error, Exception):
        return True  # CancelledError, KeyboardInterrupt, SystemExit
    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        if isinstance(orig, sqlite3.Error):
            return False
        state = getattr(orig, "sqlstate", None)
        return not isinstance(state, str) or state[:2] in _OUTCOME_UNKNOWN_CLASSES
    return isinstance(error, OSError)  # TimeoutError and ConnectionError among them


def connection_lost(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, is the database's connection lost
    (the database restarted, failed over or ended the session): SQLAlchemy's error with
    ``connection_invalidated``. The store opens new connections for the next transactions,
    so the request that met it may simply be sent again."""
    lost = _raised_from(
        error, lambda item: isinstance(item, DBAPIError) and item.connection_invalidated
    )
    return lost is not None


#: What says a disk is full: SQLite's ``SQLITE_FULL`` ("database or disk is full"),
#: PostgreSQL's ``disk_full`` (53100) and the system's ENOSPC and EDQUOT (the upload folder's
#: writes, a file the database could not grow).
_DISK_FULL_SQLSTATE: Final = "53100"
_DISK_FULL_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})


def storage_full(error: BaseException) -> BaseException | None:
    """The error that says a disk is full, `error` itself or one it was raised from (the
    driver's, the system's), else None: the database's disk (SQLite's file or PostgreSQL's
    tables) or the upload folder's. The work that met it saved nothing (SQLite and PostgreSQL
    roll the statement's transaction back; an upload's temporary file is removed); it can be
    sent again once space is freed."""
    return _raised_from(error, _says_disk_full)


def _says_disk_full(error: BaseException) -> bool:
    if isinstance(error, sqlite3.Error):
        return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    if isinstance(error, OSError):
        return error.errno in _DISK_FULL_ERRNOS
    return getattr(error, "sqlstate", None) == _DISK_FULL_SQLSTATE


def _from_asyncpg(error: BaseException) -> bool:
    """An asyncpg error, or SQLAlchemy's adaptation of one (which copies its ``detail``)."""
    module = type(error).__module__
    return module.startswith("asyncpg") or module == "sqlalchemy.dialects.postgresql.asyncpg"


def _on_error(context: ExceptionContext) -> None:
    """SQLAlchemy's ``handle_error`` hook (PostgreSQL): `without_values` on the error it
    caught; and a session that ended (`session_ended`) is the connection lost, as SQLAlchemy
    does for the errors it knows: the connection and the pool's older ones are invalidated,
    and the error says ``connection_invalidated`` (`connection_lost`)."""
    without_values(context.original_exception)
    if context.sqlalchemy_exception is not None:
        without_values(context.sqlalchemy_exception)
    if not context.is_disconnect and session_ended(context.original_exception):
        context.is_disconnect = True


#: The attribute that marks an error raised while opening a connection to PostgreSQL
#: (`database_unreachable`).
_CONNECTING: Final = "handrail_while_connecting"


def _connect_marked(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """SQLAlchemy's ``do_connect`` hook (PostgreSQL): the driver's connect, as SQLAlchemy's
    own, with the error it raises marked as raised while connecting (`database_unreachable`)."""
    try:
        return dialect.connect(*cargs, **cparams)
    except Exception as exc:
        with contextlib.suppress(AttributeError):  # an error that takes no attribute
            setattr(exc, _CONNECTING, True)
        raise


def database_unreachable(error: BaseException) -> BaseException | None:
    """The error raised while opening a connection to PostgreSQL, or the pool's when it had
    none to give in time, `error` itself or one it was raised from, else None: the database is
    down or restarting (refused, its socket gone), still starting, out of connections, or
    refuses this user now. The work that met it never reached the database; the same work may
    succeed in a moment."""
    return _raised_from(error, _says_unreachable)


def _says_unreachable(error: BaseException) -> bool:
    # A pool that gave no connection in its time: every one is busy (the database too slow
    # for the load, or a long lock), as out of connections as PostgreSQL's own limit.
    return getattr(error, _CONNECTING, False) is True or isinstance(error, PoolTimeout)


def _error_line(exc: BaseException) -> str:
    """An error in one line, for a log line that tells of it without its traceback: its type
    and the first line of its text."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


#: What `storage_trouble` says of an error.
StorageTrouble = Literal["connection-lost", "unreachable", "busy", "disk-full"]


def storage_trouble(error: BaseException) -> tuple[StorageTrouble, str] | None:
    """Whether `error` is the storage unavailable rather than a fault of the work that met it,
    and which, with a log line's words for it (one line: a traceback would say no more):

    - ``connection-lost``: the database's connection lost (`connection_lost`); a write may
      have been saved;
    - ``unreachable``: no connection to be had (`database_unreachable`);
    - ``busy``: a lock held by another connection past `BUSY_TIMEOUT_S` (another program's
      long transaction, an outside ``VACUUM`` or ``LOCK TABLE``); nothing was saved;
    - ``disk-full``: a full disk (`storage_full`); nothing was saved.

    None for any other error."""
    if connection_lost(error):
        return "connection-lost", f"the database connection was lost ({_error_line(error)})"
    unreachable = database_unreachable(error)
    if unreachable is not None:
        return "unreachable", f"the database could not be reached ({_error_line(unreachable)})"
    busy = _raised_from(error, _lock_waited)
    if busy is not None:
        return "busy", (
            f"the database was busy: another connection held its lock for {BUSY_TIMEOUT_S} s "
            f"({_error_line(busy)})"
        )
    full = storage_full(error)
    if full is not None:
        return "disk-full", (
            f"a disk is full ({_error_line(full)}); free space on the disk of the database or of "
            "the upload folder (blob_dir)"
        )
    return None


def _transaction_on(engine: Engine, work: Callable[..., T], args: tuple[Any, ...]) -> T:
    """In a greenlet (`handrail.store.greenlets.spawn`): `work` in a transaction of `engine`,
    a connection of its pool; committed when it returns, rolled back when it raises."""
    with engine.connect() as connection:
        return in_transaction(connection, work, args)


class Unsynced:
    """A write's work whose commit need not wait for the disk (`unsynced`); `here`: it may
    run on the event loop's thread."""

    __slots__ = ("here", "work")

    def __init__(self, work: Callable[..., Any], here: bool = True) -> None:
        self.work = work
        self.here = here

    def __call__(self, connection: Connection, *args: Any, **kwargs: Any) -> Any:
        return self.work(connection, *args, **kwargs)


def unsynced(work: Work[P, T], *, here: bool = True) -> Work[P, T]:
    """`work` (a write's) marked as a change whose commit need not wait for the disk, for a
    change that holds nothing a person gave and whose loss would be made good: a conversation
    made for a prompt, whose turn then writes (at its pause, its end or its failure), a
    turn's reply that the turn's lease would redo, a lease's renewal. On
    SQLite at ``FULL`` or ``EXTRA`` a group commit of only such writes runs at ``NORMAL``: in
    the WAL, not flushed; the next commit's fsync or a checkpoint flushes it, a crash of the
    process loses none of it, a power loss before that may. Beside any other write in its
    group it commits as that one does. On PostgreSQL it runs on a connection set to
    ``synchronous_commit = off`` (`handrail.store.kept.Kept`): its commit returns before the
    WAL's flush, which the WAL writer or the next commit that waits does.

    With `here` (the default: for a work whose cost does not grow with the data), on a SQLite
    file such a write runs on the event loop's own thread while the writer thread is
    `~handrail.store.threads.Writer.quiet` (nothing queued or running, and the writes coming
    one at a time: `Database._write_here`): it waits for no disk, so a hop to the writer and
    back would cost more than the write. Give ``here=False`` for a work that may write much."""
    return cast(Work[P, T], Unsynced(work, here))


def _bound(work: Callable[..., T], kwargs: dict[str, Any]) -> Callable[..., T]:
    if not kwargs:
        return work
    if type(work) is Unsynced:
        return cast(Callable[..., T], Unsynced(functools.partial(work.work, **kwargs), work.here))
    return functools.partial(work, **kwargs)


#: The result of a read on the writer thread that must run on a reader thread instead, or of
#: a write on the event loop's thread that must run on the writer thread.
_ELSEWHERE: Final = object()


def _nothing(connection: Connection) -> None:
    """A work that reads nothing (`Database._run` opening the loop's connection)."""


class NotHere(Exception):
    """Raised by `check_here` inside a `Database.quick_snapshot` that runs on the
    event loop's thread and found more than it should read there: the read runs again on a
    reader thread. Never seen by a caller."""


def check_here(connection: Connection, rows: int) -> None:
    """In the work of a `Database.quick_snapshot`: it is about to read `rows` rows; raises
    `NotHere` when it runs on the event loop's thread and that is more than `QUICK_ROWS` (the
    read then runs again on a reader thread). Elsewhere it does nothing."""
    if rows > QUICK_ROWS and connection.info.get(_HERE):
        raise NotHere


def _commit(connection: Connection, driver: sqlite3.Connection) -> None:
    """Commit the transaction `Database._begin` began on `connection` (through SQLAlchemy
    when its own transaction joined it); rolled back when the commit fails."""
    try:
        if connection.in_transaction():
            connection.commit()
        else:
            driver.commit()
    except BaseException as error:
        roll_back_after(error, functools.partial(_roll_back, connection, driver))
        raise


def _finish(
    connection: Connection,
    driver: sqlite3.Connection,
    work: Callable[..., T],
    args: tuple[Any, ...],
) -> T:
    """`work` in the transaction begun on `connection`: committed when it returns, rolled
    back when it raises."""
    try:
        result = work(connection, *args)
    except BaseException as error:
        roll_back_after(error, functools.partial(_roll_back, connection, driver))
        raise
    _commit(connection, driver)
    return result


def _roll_back(connection: Connection, driver: sqlite3.Connection) -> None:
    """Roll back the transaction `Database._begin` began on `connection`: SQLAlchemy's when
    its own joined it (one whose commit failed stays there, no longer active, and the
    connection refuses every statement until it is rolled back), and the driver's unless that
    rolled it back already or SQLite did."""
    if connection.get_transaction() is not None:
        connection.rollback()
    if driver.in_transaction:
        driver.rollback()


#: How a quick read runs (`Database._read_here`): in one read transaction, or each statement
#: on its own.
_SNAPSHOT: Final = "snapshot"
_STATEMENTS: Final = "statements"


def _lock_waited(error: BaseException) -> bool:
    """SQLite's "database is locked" (`_busy`) or PostgreSQL's ``lock_not_available``: a lock
    another connection held all the time the statement could wait for it."""
    return _busy(error) or getattr(error, "sqlstate", None) == _LOCK_NOT_AVAILABLE


def _busy(error: BaseException) -> bool:
    """Whether `error` (or the ``sqlite3`` error SQLAlchemy wrapped in it) is SQLite's "the
    database is locked" or "busy"."""
    orig = getattr(error, "orig", error)
    code = getattr(orig, "sqlite_errorcode", None)
    return (
        isinstance(orig, sqlite3.OperationalError)
        and code is not None
        and (code & 0xFF in _BUSY_CODES)
    )


class Database:
    """An engine with handrail's connection settings, running store operations in
    transactions. Close it with `close()` (or ``async with``)."""

    def __init__(
        self,
        url: str | URL | None = None,
        *,
        synchronous: str = "FULL",
        echo: bool = False,
    ) -> None:
        self.url = driver_url(url)
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise ConfigError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS_LEVELS)}, not {synchronous!r}."
            )
        self.synchronous = level
        #: What sets a connection back to `synchronous` after an `unsynced` commit.
        self._level_statement = f"PRAGMA synchronous={level}"
        self.backend: Backend = (
            "sqlite" if self.url.get_backend_name() == "sqlite" else "postgresql"
        )
        self._executor: Workers | None = None
        # With ``echo``, SQLite transactions begin and end through SQLAlchemy, so that its
        # log shows them; otherwise straight on the driver (see `_begin`).
        self._echo = echo
        self._writer: Writer | None = None
        # Each SQLite worker thread keeps its own connection (no pool checkout per transaction).
        self._local = threading.local()
        self._kept: list[Connection] = []
        self._kept_lock = threading.Lock()
        # The connection `quick_snapshot` reads on and `_write_here` writes on (and its
        # driver's), and the thread of the event loop that uses it: the first that asked
        # (opened on a reader thread: opening may wait for a lock). One, so that the pool
        # holds it beside the threads' own.
        self._here: tuple[int, Connection, sqlite3.Connection] | None = None
        self._here_lock = threading.Lock()
        # Writes in a row on it (`HERE_WRITES_IN_A_ROW`).
        self._here_writes = 0
        self.engine: Engine | AsyncEngine
        #: PostgreSQL: the connections kept between transactions and autocommit work.
        self._pg: Kept | None = None
        if self.backend == "sqlite":
            self.engine = self._sqlite_engine(echo)
            memory = self.engine.pool.__class__ is pool.StaticPool
            # One thread for an in-memory database: its one connection is shared.
            self._executor = Workers(1 if memory else SQLITE_THREADS, "handrail-sqlite")
            if not memory:
                self._writer = Writer(
                    "handrail-sqlite-writer", self._write_group, self._read_on_writer
                )
        else:
            self.engine = create_async_engine(
                self.url,
                echo=echo,
                hide_parameters=True,
                logging_name=LOGGING_NAME,
                # Connections are kept for the concurrent transactions a busy process runs:
                # opening one (a new server process and asyncpg's type queries) costs far
                # more than a transaction, so the pool must not open and close them by turns.
                pool_size=PG_POOL_SIZE,
                max_overflow=PG_POOL_OVERFLOW,
                json_serializer=stored_json_text,
                # A statement waits for a lock no longer than SQLite's writes do (then `busy`).
                connect_args={"server_settings": {"lock_timeout": f"{BUSY_TIMEOUT_S * 1000}"}},
            )
            # Values go as soon as SQLAlchemy catches the error, before its rollback and
            # whatever it logs while the error is being handled.
            event.listen(self.engine.sync_engine, "handle_error", _on_error)
            event.listen(self.engine.sync_engine, "do_connect", _connect_marked)
            self._pg = Kept(self.engine.sync_engine, PG_POOL_SIZE + PG_POOL_OVERFLOW)
        self._snapshot = (
            self.engine.execution_options(isolation_level="REPEATABLE READ")
            if self.backend == "postgresql"
            else self.engine
        )

    def _sqlite_engine(self, echo: bool) -> Engine:
        database = self.url.database
        memory = not database or database == ":memory:"
        if not memory and database and not database.startswith("file:"):
            # A new SQLite file's folder is made for it, as the file itself would be.
            try:
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _open_failed(self.url, exc) from exc
        options: dict[str, Any] = {
            "connect_args": {"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
            "echo": echo,
            "hide_parameters": True,
            "logging_name": LOGGING_NAME,
            "json_serializer": stored_json_text,
        }
        engine = (
            # One shared connection, or each thread would get its own empty database.
            create_engine(self.url, poolclass=pool.StaticPool, **options)
            if memory
            else create_engine(
                self.url,
                poolclass=pool.QueuePool,
                pool_size=SQLITE_THREADS + 2,  # the readers, the writer, the event loop's
                max_overflow=0,
                **options,
            )
        )
        pragmas = (
            f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}",  # first: the others may wait
            "PRAGMA journal_mode=WAL",
            "PRAGMA foreign_keys=ON",
            f"PRAGMA synchronous={self.synchronous}",
        )

        @event.listens_for(engine, "connect")
        def on_connect(dbapi_connection: Any, _record: Any) -> None:
            # The driver's own BEGIN is turned off; `on_begin` emits ours.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                for pragma in pragmas:
                    _execute_waiting(cursor, pragma)
            finally:
                cursor.close()

        local = self._local

        @event.listens_for(engine, "begin")
        def on_begin(connection: Connection) -> None:
            # Straight on the driver: SQLAlchemy's execution machinery costs more than BEGIN.
            # Inside a transaction the store began on the driver (`Database._begin`),
            # SQLAlchemy's own (begun by a `Connection.execute`) joins it.
            driver = connection.connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            if not driver.in_transaction:
                driver.execute("BEGIN IMMEDIATE" if getattr(local, "writes", False) else "BEGIN")

        return engine

    async def _run(
        self,
        engine: Engine | AsyncEngine,
        writes: bool,
        work: Callable[..., T],
        args: tuple[Any, ...],
        *,
        alone: bool = False,
    ) -> T:
        try:
            if isinstance(engine, AsyncEngine):
                # The whole transaction (checkout, BEGIN, the work, COMMIT, checkin) in one
                # greenlet on the async engine's sync face: `AsyncEngine.begin` and
                # `run_sync` would start one for each of those steps, and a task to close.
                if engine is self.engine and not alone and self._pg is not None:
                    return await spawn(self._pg.transaction, work, args, type(work) is Unsynced)
                return await spawn(_transaction_on, engine.sync_engine, work, args)
            if self._executor is None:
                raise RuntimeError("The database is closed.")
            if writes and self._writer is not None:
                if (
                    type(work) is Unsynced
                    and work.here
                    and not alone
                    and not self._echo  # SQLAlchemy's log shows the writer's BEGIN and COMMIT
                    and self._writer.quiet
                ):
                    done = self._write_here(work, args)
                    if done is _ELSEWHERE and self._here is None:
                        done = await self._writer.run(work, args, alone)
                        await self._open_here_later()
                        return cast(T, done)
                    if done is not _ELSEWHERE:
                        return cast(T, done)
                return cast(T, await self._writer.run(work, args, alone))
            return await self._executor.run(self._in_transaction, writes, work, args)
        except Exception as exc:
            without_values(exc)
            raise

    def _connection(self) -> tuple[Connection, sqlite3.Connection]:
        """This SQLite thread's own connection, and its driver's."""
        local = self._local
        connection: Connection | None = getattr(local, "connection", None)
        if connection is None or connection.closed or connection.invalidated:
            if connection is not None:
                drop_direct(connection)
            assert isinstance(self.engine, Engine)
            connection = self.engine.connect()
            driver = connection.connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            local.connection, local.driver = connection, driver
            self._keep(connection, driver)
        return connection, local.driver

    def _keep(self, connection: Connection, driver: sqlite3.Connection) -> None:
        """Keep `connection` (of a SQLite thread or the loop's) until `close`; its statements
        run on `driver` directly (`keep_direct`) unless SQLAlchemy's log is to show them."""
        with self._kept_lock:
            self._kept.append(connection)
        if not self._echo:
            keep_direct(connection, driver)

    def _begin(self, connection: Connection, driver: sqlite3.Connection, writes: bool) -> None:
        """Begin a transaction on `connection`: ``BEGIN IMMEDIATE`` for `writes`, else
        ``BEGIN``, straight on the driver (SQLAlchemy's `Transaction` and its events cost
        more than the statement; a `Connection.execute` inside then begins SQLAlchemy's,
        which joins it, see `on_begin`), or with ``echo`` through SQLAlchemy, whose log then
        shows it. End it with `_commit` or `_roll_back`."""
        if driver.in_transaction:  # left open by a rollback that failed: never committed
            _roll_back(connection, driver)
        if self._echo:
            self._local.writes = writes  # read by `on_begin`
            connection.begin()
        else:
            driver.execute("BEGIN IMMEDIATE" if writes else "BEGIN")

    def _in_transaction(self, writes: bool, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        """On a SQLite thread: `work` in a transaction on the thread's own connection."""
        connection, driver = self._connection()
        return self._transaction(connection, driver, writes, work, args)

    def _transaction(
        self,
        connection: Connection,
        driver: sqlite3.Connection,
        writes: bool,
        work: Callable[..., T],
        args: tuple[Any, ...],
    ) -> T:
        """`work` in a transaction on `connection`: committed when it returns, rolled back
        when it raises."""
        self._begin(connection, driver, writes)
        return _finish(connection, driver, work, args)

    def _read_here(
        self,
        connection: Connection,
        driver: sqlite3.Connection,
        kind: str,
        work: Callable[..., T],
        args: tuple[Any, ...],
    ) -> T:
        """A quick read's `work` on `connection`: for `_SNAPSHOT` in a read transaction, for
        `_STATEMENTS` in none (each statement in SQLite's own; a transaction SQLAlchemy
        began for a `Connection.execute` is ended after it)."""
        if kind == _SNAPSHOT:
            return self._transaction(connection, driver, False, work, args)
        if driver.in_transaction:  # left open by a rollback that failed: never committed
            _roll_back(connection, driver)
        try:
            return work(connection, *args)
        finally:
            if driver.in_transaction:
                _roll_back(connection, driver)

    def _write_alone(self, work: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, Any]:
        try:
            return self._in_transaction(True, work, args), None
        except BaseException as exc:  # handed to the caller, never lost
            return None, exc

    def _read_on_writer(
        self, work: Callable[..., Any], args: tuple[Any, ...], kind: str
    ) -> tuple[Any, BaseException | None]:
        """On the writer thread, between its commits: a quick read (`kind` is `_SNAPSHOT` or
        `_STATEMENTS`, see `Database._read_here`) on the writer's connection; its (result, error),
        `_ELSEWHERE` for a read that found more than it should read there (`check_here`)."""
        connection, driver = self._connection()
        connection.info[_HERE] = True
        try:
            return self._read_here(connection, driver, kind, work, args), None
        except NotHere:
            return _ELSEWHERE, None
        except BaseException as exc:  # handed to the caller, never lost
            return None, exc
        finally:
            connection.info.pop(_HERE, None)

    def _write_group(
        self, group: list[tuple[Callable[..., Any], tuple[Any, ...]]]
    ) -> list[tuple[Any, BaseException | None]]:
        """On the writer thread: the writes of `group` in one transaction; each one's (result,
        error). The first try runs them without a savepoint a write (the common case pays for
        none). When one raises, its error is its outcome and the transaction is rolled back;
        the second try runs the others again, each in its own savepoint, so a write that
        raises then is rolled back alone and none runs a third time. When the transaction as a
        whole fails, each write runs again in a transaction of its own.

        A work may thus run more than once before its transaction commits, as it may after a
        failed commit: it is a function of the database, and any other effect of it waits for
        its result."""
        if self.synchronous in _SYNCED_LEVELS and all(type(w) is Unsynced for w, _ in group):
            return self._unsynced_group(group)
        return self._commit_group(group)

    def _unsynced_group(
        self, group: list[tuple[Callable[..., Any], tuple[Any, ...]]]
    ) -> list[tuple[Any, BaseException | None]]:
        """`_write_group` for writes that are all `unsynced`: committed at ``NORMAL``, then
        the connection back at the store's level. A connection that cannot be set back is
        given up (the next write opens one at the store's level), never left unsynced."""
        connection, driver = self._connection()
        if driver.in_transaction:  # left open by a rollback that failed: never committed
            _roll_back(connection, driver)
        driver.execute(_COMMIT_UNSYNCED)
        try:
            return self._commit_group(group)
        finally:
            try:
                driver.execute(self._level_statement)
            except Exception:
                log.exception(
                    "setting the writer's connection back to synchronous=%s failed; it is replaced",
                    self.synchronous,
                )
                with contextlib.suppress(Exception):
                    connection.invalidate()

    def _commit_group(
        self, group: list[tuple[Callable[..., Any], tuple[Any, ...]]]
    ) -> list[tuple[Any, BaseException | None]]:
        """`_write_group` at the connection's level."""
        if len(group) == 1:
            return [self._write_alone(*group[0])]
        connection, driver = self._connection()
        errors: dict[int, BaseException] = {}
        try:
            results = self._try_group(connection, driver, group, errors, savepoints=False)
            if results is None:
                results = self._try_group(connection, driver, group, errors, savepoints=True)
                assert results is not None
        except Exception:
            return [self._write_alone(work, args) for work, args in group]
        return [(None, errors[i]) if i in errors else (results[i], None) for i in range(len(group))]

    def _try_group(
        self,
        connection: Connection,
        driver: sqlite3.Connection,
        group: list[tuple[Callable[..., Any], tuple[Any, ...]]],
        errors: dict[int, BaseException],
        *,
        savepoints: bool,
    ) -> dict[int, Any] | None:
        """One try at the writes of `group` not in `errors`, in one transaction: their results
        by index once it committed. A write that raises gets its error in `errors`; with
        `savepoints` it is rolled back alone and the others go on, without them the whole
        transaction is rolled back and the try gives None. Raises when the transaction fails
        as a whole (SQLite rolled it back itself, or the commit failed)."""
        results: dict[int, Any] = {}
        self._begin(connection, driver, True)
        try:
            for i, (work, args) in enumerate(group):
                if i in errors:
                    continue
                if savepoints:
                    driver.execute(_SAVE)
                try:
                    results[i] = work(connection, *args)
                except Exception as exc:
                    if not driver.in_transaction:
                        raise  # SQLite rolled the whole transaction back
                    errors[i] = exc
                    if not savepoints:
                        _roll_back(connection, driver)
                        return None
                    driver.execute(_UNDO)
                if savepoints:
                    driver.execute(_RELEASE)
        except BaseException as error:
            roll_back_after(error, functools.partial(_roll_back, connection, driver))
            raise
        _commit(connection, driver)
        return results

    async def read(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(connection, *args)`` as a read; its result. Each statement sees what was
        committed when it began (READ COMMITTED): on SQLite in a read transaction, on
        PostgreSQL without one (each statement is its own transaction, which is what READ
        COMMITTED gives the statements of a transaction anyway, without its BEGIN and COMMIT
        round trips). A read that needs one view for several statements is a `snapshot`."""
        if self._pg is not None:
            return await self.autocommit(work, *args, **kwargs)
        return await self._run(self.engine, False, _bound(work, kwargs), args)

    async def snapshot(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(connection, *args)`` in a read transaction whose statements all see the same
        committed state."""
        return await self._run(self._snapshot, False, _bound(work, kwargs), args)

    async def quick_snapshot(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """A `snapshot` for the small reads every turn makes, on SQLite without a hop to a
        reader thread and back (two wake-ups, the thread's and then the loop's, which cost more
        than such a read and keep the loop waiting on the wake-up of a thread that then waits
        for the GIL):

        - when no call is queued for the writer thread or running there, on the event loop's
          own thread. The loop never waits there: its connection has no busy timeout, so a
          read that would wait for a lock (in WAL mode a reader waits for no writer and no
          passive checkpoint, only for a connection that recovers or resets the database)
          fails at once and runs again on a reader thread;
        - otherwise on the writer thread, after the commit it is busy with: a busy thread
          needs no wake-up, and on the loop's thread the read would hand the GIL to the
          writer at each statement.

        A read whose `work` finds more than `QUICK_ROWS` rows (`check_here`) runs again on a
        reader thread, so neither the loop's part nor the writer's grows with the data. A read
        runs again without harm: it changes nothing. Elsewhere (PostgreSQL, an in-memory
        SQLite database) it is `snapshot`."""
        return await self._quick(_SNAPSHOT, _bound(work, kwargs), args)

    async def quick_read(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """A `read` where `quick_snapshot` would run it, without a transaction on SQLite: each
        statement is its own (in WAL mode one statement reads one committed state), so a work
        of one statement sees what a snapshot would, without the BEGIN and COMMIT. Elsewhere
        it is `read`."""
        if self._pg is not None:
            return await self.read(work, *args, **kwargs)
        return await self._quick(_STATEMENTS, _bound(work, kwargs), args)

    async def _quick(self, kind: str, bound: Callable[..., T], args: tuple[Any, ...]) -> T:
        """`quick_snapshot` (`kind` `_SNAPSHOT`) or `quick_read` (`_STATEMENTS`)."""
        writer = self._writer
        if writer is None or self._executor is None:
            return await self._run(self._snapshot, False, bound, args)
        if not writer.idle:
            try:
                result = await writer.run(bound, args, False, read=kind)
            except Exception as exc:
                without_values(exc)
                raise
            if result is not _ELSEWHERE:
                return cast(T, result)
            return await self._run(self._snapshot, False, bound, args)
        loop_thread = threading.get_ident()
        here = self._here
        if here is None or here[1].invalidated:
            return await self._run(self.engine, False, self._open_here, (loop_thread, bound, args))
        owner, connection, driver = here
        if owner != loop_thread:  # another event loop's thread: the database has one for one
            return await self._run(self._snapshot, False, bound, args)
        try:
            return self._read_here(connection, driver, kind, bound, args)
        except NotHere:
            pass
        except Exception as exc:
            if not _busy(exc):
                without_values(exc)
                raise
        return await self._run(self._snapshot, False, bound, args)

    def _write_here(self, work: Callable[..., T], args: tuple[Any, ...]) -> Any:
        """An `unsynced` write on the event loop's thread (`_run` calls it while the writer
        thread is `Writer.quiet`: nothing queued or running, and its last groups of one write
        each, so that no write would share a commit with it and the loop has the time; under
        load the writer runs it beside the loop): `work` in a write transaction on the
        connection `quick_snapshot` reads on, which commits at ``NORMAL`` (`_open_here`),
        without a hop to the writer and back, which would cost more than a write that waits
        for no disk.

        `_ELSEWHERE` when it cannot run here: this loop has no such connection yet, another
        loop's thread has it, or another connection holds the database's write lock (the
        connection has no busy timeout, so the loop never waits for a lock); the writer
        thread runs it then. A commit here runs no checkpoint, so the write after each
        `HERE_WRITES_IN_A_ROW` here goes to the writer too, whose commit does. Nothing waits
        for the writer meanwhile: its work comes from the loops."""
        here = self._here
        if here is None or here[1].invalidated or here[0] != threading.get_ident():
            return _ELSEWHERE
        if self._here_writes >= HERE_WRITES_IN_A_ROW:
            self._here_writes = 0
            return _ELSEWHERE
        _, connection, driver = here
        if driver.in_transaction:  # left open by a rollback that failed: never committed
            _roll_back(connection, driver)
        try:
            driver.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # locked, or worse: the writer thread will tell
            return _ELSEWHERE
        self._here_writes += 1
        return _finish(connection, driver, work, args)

    async def _open_here_later(self) -> None:
        """Open this loop's connection (`_open_here`) after a write that found none, on a
        reader thread (opening may wait for a lock), once. The write has committed: a failure
        here is only logged, and the next quick read tries again."""
        executor = self._executor
        if executor is None:
            return
        try:
            await executor.run(
                self._in_transaction, False, self._open_here, (threading.get_ident(), _nothing, ())
            )
        except Exception:
            log.warning("opening the event loop's own SQLite connection failed", exc_info=True)

    def _open_here(
        self,
        connection: Connection,
        loop_thread: int,
        work: Callable[..., T],
        args: tuple[Any, ...],
    ) -> T:
        """On a reader thread, in a read transaction: open the connection `quick_snapshot`
        reads on for the loop of `loop_thread` (no busy timeout: it never waits for a lock),
        unless another loop's thread has it, then run the read that wanted it."""
        assert isinstance(self.engine, Engine)
        with self._here_lock:
            here = self._here
            if here is None or here[1].invalidated:
                opened = self.engine.connect()
                try:
                    driver = opened.connection.driver_connection
                    assert isinstance(driver, sqlite3.Connection)
                    driver.execute("PRAGMA busy_timeout=0")
                    # Its writes (`_write_here`) are `unsynced` ones, and run no checkpoint:
                    # the loop would wait for the disk there.
                    driver.execute("PRAGMA wal_autocheckpoint=0")
                    if self.synchronous in _SYNCED_LEVELS:
                        driver.execute(_COMMIT_UNSYNCED)
                except BaseException:
                    opened.close()
                    raise
                opened.info[_HERE] = True
                self._keep(opened, driver)
                if here is not None:
                    drop_direct(here[1])
                    with contextlib.suppress(Exception):
                        here[1].close()
                self._here = (loop_thread, opened, driver)
        return work(connection, *args)

    async def write(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(connection, *args)`` in a write transaction: committed when it returns,
        rolled back if it raises. On SQLite it holds the database's write lock from its first
        statement."""
        return await self._run(self.engine, True, _bound(work, kwargs), args)

    async def autocommit(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(connection, *args)`` with each statement committed on its own, without a
        transaction around them (on PostgreSQL one round trip a statement, not three); on
        SQLite a write transaction."""
        if self._pg is None:
            return await self.write(work, *args, **kwargs)
        bound = _bound(work, kwargs)
        try:
            return await spawn(self._pg.autocommit, bound, args, type(bound) is Unsynced)
        except Exception as exc:
            without_values(exc)
            raise

    async def migrate(self, *, wait_s: float = 0.0) -> None:
        """Bring the schema to the newest revision. A no-op when it is there already.

        With `wait_s`, a PostgreSQL server that does not accept connections yet (`not_up_yet`:
        refused, its socket not there, its name not known yet, or still starting up) is tried
        again every half second for that many seconds, logged once at the start (a container
        started beside its database).

        Raises `DatabaseUnavailable` when the database cannot be opened or read, and when a
        newer handrail made its schema (a revision this one does not know)."""
        started = time.monotonic()
        waiting = False
        while True:
            opened: list[bool] = []
            try:
                await self._run(self.engine, True, _upgrade_to_head, (opened,), alone=True)
            except HandrailError:
                raise
            except Exception as exc:
                if opened and storage_full(exc) is not None:
                    raise DatabaseUnavailable(
                        f"Could not bring the database {shown_url(self.url)} up to date: "
                        f"{_reason_text(exc)}. Its disk is full: free space on it, then start "
                        "again (the upgrade is one transaction: nothing of it was kept)."
                    ) from exc
                if opened:  # a migration failed: its own error, as it is
                    raise
                waited = time.monotonic() - started
                if self.backend == "postgresql" and not_up_yet(exc) and waited < wait_s:
                    if not waiting:
                        waiting = True
                        log.warning(
                            "PostgreSQL at %s does not accept connections yet (%s); waiting "
                            "up to %g s for it",
                            shown_url(self.url),
                            _reason_text(exc),
                            wait_s,
                        )
                    await asyncio.sleep(min(_WAIT_RETRY_S, wait_s - waited))
                    continue
                raise _open_failed(self.url, exc, waited=waited if waiting else None) from exc
            if waiting:
                log.info(
                    "PostgreSQL at %s accepted the connection after %.1f s",
                    shown_url(self.url),
                    time.monotonic() - started,
                )
            return

    async def close(self) -> None:
        """Close every pooled connection (and, on SQLite, the worker threads)."""
        if isinstance(self.engine, AsyncEngine):
            if self._pg is not None:
                await spawn(self._pg.close)
            await self.engine.dispose()
            return
        executor, self._executor = self._executor, None
        writer, self._writer = self._writer, None
        loop = asyncio.get_running_loop()
        if writer is not None:
            await loop.run_in_executor(None, writer.shutdown)
        if executor is not None:
            await loop.run_in_executor(None, executor.shutdown)
        self._here = None
        with self._kept_lock:
            kept, self._kept = self._kept, []
        for connection in kept:
            drop_direct(connection)
            connection.close()
        self.engine.dispose()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Database({shown_url(self.url)!r})"
