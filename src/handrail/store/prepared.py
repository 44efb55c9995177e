"""Statements compiled once, for the operations every turn runs.

A `Prepared` statement is a SQLAlchemy Core statement whose parameters are all bound by name.
It is compiled once per dialect, with SQLAlchemy's own bind and result processors (so a value is
stored and read back exactly as `Connection.execute` would). It then runs straight on the
driver inside the transaction the store began: on a ``sqlite3`` cursor (on the store's worker
thread, in the transaction `handrail.store.db` began on the driver itself), or on PostgreSQL
on the asyncpg connection itself, with asyncpg's own prepared statements (the transaction
begun first, as SQLAlchemy's asyncpg adapter does before its first statement; its errors
raised as SQLAlchemy's; a batch that is its transaction's one statement, see `batched`, runs
with no BEGIN). SQLAlchemy's per-execution work (cache key, execution context, events, result
objects) costs several times what the database itself takes for these short statements. Other
drivers go through `Connection.execute`.

Rows come back as plain dicts (column name to value) on both paths. SQLAlchemy's statement
events do not see the direct path, so an engine made with ``echo=True`` (`Database(echo=True)`)
takes the `Connection.execute` path, and its log shows every statement (never its parameters:
the engine hides them, see `handrail.store.db`).

    _GET = Prepared(select(histories).where(histories.c.id == bindparam("history_id")))
    row = _GET.first(connection, {"history_id": history_id})
"""

from __future__ import annotations

import contextlib
import functools
import operator
import re
import sqlite3
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from sqlalchemy import JSON, Connection, text
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Delete, Insert, Select, Update
from sqlalchemy.sql.compiler import Compiled, SQLCompiler
from sqlalchemy.util import await_

from handrail.store._types import UTCDateTime, json_text, sqlite_utc_text, utc_value

__all__ = [
    "NOTIFICATIONS_SEPARATOR",
    "NOTIFY_SQL",
    "NOTIFY_TEXT",
    "AtLeastOne",
    "FromHead",
    "Head",
    "Notify",
    "Prepared",
    "batched",
    "drop_direct",
    "folds",
    "keep_direct",
    "session_ended",
]

Params = Mapping[str, Any]
Statement = Select[Any] | Insert | Update | Delete
Processor = Callable[[Any], Any] | None


#: The ``sqlite3`` connection under each SQLAlchemy connection that runs statements on it
#: directly (`keep_direct`): a statement finds it in one look-up, where SQLAlchemy's
#: ``Connection.connection.driver_connection`` and ``engine.echo`` cost several properties.
_DIRECT_SQLITE: dict[Connection, sqlite3.Connection] = {}


def keep_direct(connection: Connection, driver: sqlite3.Connection) -> None:
    """Note that `connection` (of an engine without ``echo``) runs on `driver`, the ``sqlite3``
    connection under it, until `drop_direct`."""
    _DIRECT_SQLITE[connection] = driver


def drop_direct(connection: Connection) -> None:
    """Forget `connection` (`keep_direct`): for one closed or given up."""
    _DIRECT_SQLITE.pop(connection, None)


#: A parameter the caller must give (a `bindparam` without a value).
_REQUIRED: Any = object()


@dataclass(frozen=True, slots=True)
class _Plan:
    compiled: Compiled
    sql: str
    #: Per position: the caller's parameter name, its value when the caller gives none (a
    #: literal of the statement, or `_REQUIRED`), and its bind processor.
    slots: tuple[tuple[str, Any, Processor], ...]
    #: The result's column names, and (name, position, result processor) for each column
    #: that has one.
    names: tuple[str, ...]
    processed: tuple[tuple[str, int, Callable[[Any], Any]], ...]
    #: When every parameter is the caller's (none has a default) and there are several: all of
    #: them in one call, and (position, bind processor) for those that have one.
    getter: Callable[[Params], tuple[Any, ...]] | None = None
    processors: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def positional(self, params: Params) -> tuple[Any, ...]:
        # What `Compiled.construct_params` does for named binds, without its general work.
        getter = self.getter
        if getter is not None:
            try:
                values = getter(params)
            except KeyError:
                return self._each(params)  # raises the error that names the parameter
            if not self.processors:
                return values
            out = list(values)
            for at, process in self.processors:
                value = out[at]
                if value.__class__ is FromHead:
                    raise TypeError(
                        f"The parameter {self.slots[at][0]!r} is processed: it cannot be FromHead."
                    )
                out[at] = process(value)
            return tuple(out)
        return self._each(params)

    def _each(self, params: Params) -> tuple[Any, ...]:
        out = []
        for key, default, process in self.slots:
            value = params.get(key, default)
            if value is _REQUIRED:
                raise KeyError(f"The statement needs the parameter {key!r}.")
            if process is not None:
                if value.__class__ is FromHead:
                    raise TypeError(f"The parameter {key!r} is processed: it cannot be FromHead.")
                value = process(value)
            out.append(value)
        return tuple(out)

    def decoded(self, row: Sequence[Any]) -> dict[str, Any]:
        """The first ``len(names)`` values of `row` as this statement's row."""
        item = dict(zip(self.names, row, strict=False))
        for name, position, process in self.processed:
            item[name] = process(row[position])
        return item

    def rows(self, fetched: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        names = self.names
        if not self.processed:
            return [dict(zip(names, row, strict=True)) for row in fetched]
        out = []
        for row in fetched:
            item = dict(zip(names, row, strict=True))
            for name, position, process in self.processed:
                item[name] = process(row[position])
            out.append(item)
        return out


_PLANS = "_handrail_prepared_plans"

#: The drivers (and their parameter styles) whose cursors the statements run on directly.
_DIRECT: Final = {("pysqlite", "qmark"), ("asyncpg", "numeric_dollar")}


def _single(processor: object) -> Processor:
    if processor is None or callable(processor):
        return cast(Processor, processor)
    raise TypeError("Prepared statements take no expanding (IN) parameters.")


def _slot(
    compiled: Compiled, name: str, processor: object, sqlite: bool
) -> tuple[str, Any, Processor]:
    bind = cast(SQLCompiler, compiled).binds[name]
    if bind.callable is not None:
        raise TypeError("Prepared statements take no parameters with a callable value.")
    default = _REQUIRED if bind.required else bind.effective_value
    if isinstance(bind.type, UTCDateTime):  # the same text or value, in one call
        return bind.key, default, sqlite_utc_text if sqlite else utc_value
    process = _single(processor)
    if process is not None and isinstance(bind.type, JSON):
        # SQLite stores the text; asyncpg's jsonb codec sends it as it is.
        return bind.key, default, json_text(process)  # the same text, in one call
    return bind.key, default, process


def _columns(compiled: Compiled, dialect: Dialect) -> list[tuple[str, Processor]]:
    """Each result column's name and result processor."""
    return [
        (entry.keyname, entry.type._cached_result_processor(dialect, None))
        for entry in getattr(compiled, "_result_columns", ())
    ]


#: What a statement run `later` checks its row count with (it raises to fail the transaction).
Check = Callable[[int], None]
#: Notifications a batch sends with its writes: a channel and their payloads, in order, as one
#: text, each payload followed by the next after a `NOTIFICATIONS_SEPARATOR` (the statement
#: splits them: one text parameter costs asyncpg far less than a ``text[]`` of them).
Notify = tuple[str, str]
#: What separates the payloads of a `Notify`: the ASCII unit separator, which no payload holds
#: (see `handrail.store.event_wire`).
NOTIFICATIONS_SEPARATOR: Final = "\x1f"


class AtLeastOne:
    """A `Check` that raises ``error()`` when the statement changed no row. The last batch of
    a transaction whose checks are all of this kind can run them inside its one statement
    (see `batched`)."""

    __slots__ = ("error",)

    def __init__(self, error: Callable[[], BaseException]) -> None:
        self.error = error

    def __call__(self, count: int) -> None:
        if count == 0:
            raise self.error()


@dataclass(frozen=True, slots=True)
class FromHead:
    """A parameter of a statement run `later` in a batch with a `Head`: the value of the
    head's `column` (plus `plus`) in the row it changed. The statement reads it from the
    head's ``RETURNING`` when the two go together. Only for parameters without a bind
    processor (text, integers)."""

    column: str
    plus: int = 0

    def __post_init__(self) -> None:
        if not self.column.isidentifier():
            raise ValueError(f"Not a column name: {self.column!r}.")

    def __add__(self, other: int) -> FromHead:
        return FromHead(self.column, self.plus + other)

    def __sub__(self, other: int) -> FromHead:
        return FromHead(self.column, self.plus - other)


@dataclass(slots=True)
class Head:
    """The statement a batch begins with: an ``UPDATE ... RETURNING`` of at most one row (a
    compare-and-set). It goes to the database with the batch's statements, as the ``WITH``
    part ``head`` that each of them reads (`FromHead`), so none writes a row when it changes
    none; then ``missing()`` is raised. Its row, once written, is `row`."""

    statement: Prepared
    params: Params
    missing: Callable[[], BaseException]
    row: dict[str, Any] | None = None


@dataclass(slots=True)
class _Waiting:
    plan: _Plan
    args: tuple[Any, ...]
    check: Check | None
    table: str
    inserts: bool
    #: The `FromHead` arguments, by position.
    heads: tuple[tuple[int, FromHead], ...] = ()


@dataclass(slots=True)
class _Batch:
    waiting: list[_Waiting] = field(default_factory=list)
    #: The head and its table (until it ran, `Head.row`).
    head: Head | None = None
    head_table: str = ""
    #: Whether nothing follows the batch in its transaction (see `batched`).
    last: bool = False
    #: The notifications its last statement sends (channel, payloads; see `batched`).
    notify: Notify | None = None

    def clashes(self, table: str, inserts: bool, beside_inserts: bool) -> bool:
        """Whether a statement on `table` must wait for the ones already here: the statements
        of one batch see the same snapshot and none of each other's changes, so only inserts
        into one table go together (and a statement `beside_inserts` with inserts)."""
        if self.head is not None and self.head.row is None and self.head_table == table:
            return True
        return any(
            w.table == table and not (w.inserts and (inserts or beside_inserts))
            for w in self.waiting
        )


#: The open batches (`batched`), by connection.
_BATCHES: weakref.WeakKeyDictionary[Connection, _Batch] = weakref.WeakKeyDictionary()

#: A positional parameter of asyncpg's SQL (``$1``).
_PARAMETER: Final = re.compile(r"\$(\d+)")

#: The payloads of a `Notify`'s text, in order: the FROM item that notifies each.
_PAYLOADS_OF: Final = f"unnest(string_to_array({{}}, chr({ord(NOTIFICATIONS_SEPARATOR)}))) AS p"
#: Notifications in order, in one statement (`batched` with ``notify``), for asyncpg and for
#: SQLAlchemy.
NOTIFY_SQL: Final = "SELECT pg_notify($1, p) FROM " + _PAYLOADS_OF.format("$2::text")
NOTIFY_TEXT: Final = text(
    "SELECT pg_notify(:channel, p) FROM " + _PAYLOADS_OF.format("CAST(:payloads AS text)")
)

#: PostgreSQL's error code for a division by zero: how a check inside a statement fails.
_DIVISION_BY_ZERO: Final = "22012"


def folds(connection: Connection) -> bool:
    """Whether `batched` on `connection` batches (PostgreSQL on asyncpg, no ``echo``, not in
    a batch already): only then does it take a `Head`."""
    return (
        not connection.engine.echo
        and connection.dialect.driver == "asyncpg"
        and connection not in _BATCHES
    )


@contextlib.contextmanager
def batched(
    connection: Connection,
    head: Head | None = None,
    *,
    last: bool = False,
    notify: Notify | None = None,
) -> Iterator[None]:
    """Inside, the statements run with `Prepared.later` on PostgreSQL wait and go to the
    database together, as one statement (each a data-modifying ``WITH`` part, its row count
    counted) when the block ends, before any other `Prepared` statement on `connection`, or
    before a statement on a table one of them changes (parts of one statement do not see each
    other's changes; inserts into one table may share one). Their checks then run in order; one
    that raises fails the transaction, so nothing is written. Elsewhere (SQLite, an engine with
    ``echo``) `later` runs at once. Inside the block, run statements only through `Prepared`.

    With `head` (only where `folds`), the head goes first, in the same statement (see `Head`).
    With `last`, the caller says that nothing else is written in the transaction after the
    block: when the block's statement is then the transaction's first and its checks are
    all `AtLeastOne`, it runs without a ``BEGIN`` and ``COMMIT`` (PostgreSQL runs a statement
    outside a transaction as one by itself), with its checks inside it.

    With `notify` (PostgreSQL; ignored elsewhere), the block's last statement also sends those
    notifications (``pg_notify``, in order; after a head only when the head changed its row):
    PostgreSQL delivers them when the transaction commits, and never when it rolls back. When
    nothing is left to run at the block's end, they go in a statement of their own."""
    if not folds(connection):
        if head is not None:
            raise RuntimeError("A head needs a batch (see `folds`).")
        yield
        if notify is not None and notify[1] and connection.dialect.name == "postgresql":
            connection.execute(NOTIFY_TEXT, {"channel": notify[0], "payloads": notify[1]})
        return
    batch = _BATCHES[connection] = _Batch(
        head=head, last=last, notify=notify if notify is not None and notify[1] else None
    )
    if head is not None:
        head_statement = head.statement.statement
        if not isinstance(head_statement, Update) or "RETURNING" not in _sql(
            head.statement, connection
        ):
            raise TypeError("A batch's head is an UPDATE ... RETURNING.")
        batch.head_table = str(getattr(head_statement.table, "name", head_statement.table))
    try:
        yield
        _flush(connection, batch, final=True)
    finally:
        _BATCHES.pop(connection, None)


def _sql(prepared: Prepared, connection: Connection) -> str:
    plan = prepared._plan(connection.dialect)
    assert plan is not None
    return plan.sql


def _flush(connection: Connection, batch: _Batch, *, final: bool = False) -> None:
    head = batch.head
    notify = batch.notify if final else None
    if head is not None and head.row is None:
        _flush_with_head(connection, batch, head, final=final, notify=notify)
        return
    row = None if head is None else head.row
    waiting, batch.waiting = batch.waiting, []
    if not waiting:
        if notify is not None:
            _on_asyncpg(connection, NOTIFY_SQL, [notify[0], notify[1]], rows=False)
        return
    if len(waiting) == 1 and notify is None:
        args = [_value(v, row) for v in waiting[0].args] if waiting[0].heads else waiting[0].args
        counts = [_on_asyncpg(connection, waiting[0].plan.sql, args, rows=False)]
    else:
        sql, args = _joined(None, waiting, row, checked=False, notify=notify)
        counts = list(_on_asyncpg(connection, sql, args, rows=True)[0])[: len(waiting)]
    for item, count in zip(waiting, counts, strict=True):
        if item.check is not None:
            item.check(int(count))


def _flush_with_head(
    connection: Connection, batch: _Batch, head: Head, *, final: bool, notify: Notify | None
) -> None:
    """The head and the statements waiting, as one statement; then the checks (or, when it
    runs alone, its checks inside it: a count of zero divides by zero)."""
    waiting, batch.waiting = batch.waiting, []
    plan = head.statement._plan(connection.dialect)
    assert plan is not None
    head_args = plan.positional(head.params)
    alone = (
        final
        and batch.last
        and _outside_transaction(connection)
        and all(item.check is None or isinstance(item.check, AtLeastOne) for item in waiting)
    )
    found: Any = None
    if alone:
        sql, args = _joined((plan.sql, head_args), waiting, None, checked=True, notify=notify)
        try:
            found = _on_asyncpg(connection, sql, args, rows=True, alone=True)
        except _CheckFailed:
            alone = False  # nothing written: again in a transaction, to raise the check's error
    if not alone:
        sql, args = _joined((plan.sql, head_args), waiting, None, checked=False, notify=notify)
        found = _on_asyncpg(connection, sql, args, rows=True)
    if not found:
        raise head.missing()
    values = found[0]
    head.row = plan.decoded(values)
    if not alone:
        counts = values[len(plan.names) : len(plan.names) + len(waiting)]
        for item, count in zip(waiting, counts, strict=True):
            if item.check is not None:
                item.check(int(count))


def _joined(
    head: tuple[str, tuple[Any, ...]] | None,
    waiting: list[_Waiting],
    row: Mapping[str, Any] | None,
    *,
    checked: bool,
    notify: Notify | None = None,
) -> tuple[str, list[Any]]:
    """One statement of `waiting` (each a ``WITH`` part ``w<n>``), after `head` (its SQL and
    arguments) when given, and its arguments. It gives one row: the head's, then each part's
    row count (with `checked`, for a part with a check ``1 / count``, which fails the statement
    for a count of zero). Without a head it always gives that row. A `FromHead` is read from
    the part ``head``, or (once the head ran) from its `row`. With `notify`, a last part ``n``
    sends those notifications (after a head, only when it gave its row) and its count comes
    last. The SQL is made once per shape."""
    key = (
        None if head is None else head[0],
        checked,
        notify is not None,
        tuple(
            (item.plan.sql, item.check is not None, item.heads if row is None else ())
            for item in waiting
        ),
    )
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _shape(head, waiting, row is None, checked, notify is not None)
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        _SHAPES[key] = shape
    sql, picks = shape
    args = [] if head is None else list(head[1])
    if row is None:
        args.extend([waiting[n].args[at] for n, at in picks])
    else:
        args.extend([_value(waiting[n].args[at], row) for n, at in picks])
    if notify is not None:
        args.extend(notify)
    return sql, args


#: `_joined`'s statements by shape: the SQL, and where each argument comes from (the part and
#: its position).
_SHAPES: dict[Any, tuple[str, tuple[tuple[int, int], ...]]] = {}
_MAX_SHAPES: Final = 256


def _shape(
    head: tuple[str, tuple[Any, ...]] | None,
    waiting: list[_Waiting],
    from_head: bool,
    checked: bool,
    notify: bool = False,
) -> tuple[str, tuple[tuple[int, int], ...]]:
    parts: list[str] = []
    picks: list[tuple[int, int]] = []
    first = 0
    if head is not None:
        parts.append(f"head AS ({head[0]})")
        first = len(head[1])
    for n, item in enumerate(waiting):
        sql = item.plan.sql if head is None else _guarded(item.plan.sql)
        assert sql is not None  # `Prepared.later` ran the head first for any other
        heads = dict(item.heads) if from_head else {}

        def one(match: re.Match[str], n: int = n, heads: dict[int, FromHead] = heads) -> str:
            at = int(match.group(1)) - 1
            value = heads.get(at)
            if value is not None:
                return f"(head.{value.column} + ({value.plus}))"
            picks.append((n, at))
            return f"${first + len(picks)}"

        parts.append(f"w{n} AS ({_PARAMETER.sub(one, sql)} RETURNING 1)")
    counted = [
        f"(SELECT 1 / count(*) FROM w{n})"
        if checked and item.check is not None
        else f"(SELECT count(*) FROM w{n})"
        for n, item in enumerate(waiting)
    ]
    if notify:
        # A part nobody reads is not run: its count is selected. After a head, it sends
        # nothing when the head changed no row (the statement may be a transaction alone).
        at = first + len(picks)
        source = "head, " if head is not None else ""
        parts.append(
            f"n AS (SELECT pg_notify(${at + 1}, p) FROM {source}"
            f"{_PAYLOADS_OF.format(f'${at + 2}::text')})"
        )
        counted.append("(SELECT count(*) FROM n)")
    if head is None:
        return f"WITH {', '.join(parts)} SELECT {', '.join(counted)}", tuple(picks)
    selected = ", ".join(["head.*", *counted])
    return f"WITH {', '.join(parts)} SELECT {selected} FROM head", tuple(picks)


def _value(value: Any, row: Mapping[str, Any] | None) -> Any:
    """An argument, a `FromHead` read from the head's `row`."""
    if value.__class__ is not FromHead:
        return value
    assert row is not None
    return row[value.column] + value.plus if value.plus else row[value.column]


@functools.cache
def _guarded(sql: str) -> str | None:
    """`sql` (a one-row ``INSERT ... VALUES``, an ``UPDATE`` or a ``DELETE``, with no
    ``RETURNING``) made to change no row when the part ``head`` gave none: the insert
    selects its values ``FROM head``, and the update or delete adds ``EXISTS (SELECT FROM
    head)`` to its one ``WHERE``. None for any other shape."""
    if sql.startswith("INSERT "):
        if sql.count(" VALUES (") != 1:
            return None
        start = sql.index(" VALUES (")
        opened = start + len(" VALUES ")
        depth = 0
        for at in range(opened, len(sql)):
            if sql[at] == "(":
                depth += 1
            elif sql[at] == ")":
                depth -= 1
                if depth == 0:
                    rest = sql[at + 1 :]
                    if rest.lstrip().startswith(","):
                        return None  # several rows
                    return f"{sql[:start]} SELECT {sql[opened + 1 : at]} FROM head{rest}"
        return None
    if sql.startswith(("UPDATE ", "DELETE ")) and sql.count(" WHERE ") == 1:
        before, where = sql.split(" WHERE ")
        return f"{before} WHERE EXISTS (SELECT FROM head) AND ({where})"
    return None


def _outside_transaction(connection: Connection) -> bool:
    """Whether the asyncpg adapter has begun no transaction on `connection` (it begins one on
    its first statement), so that a statement run on asyncpg itself is a transaction alone."""
    adapter: Any = connection.connection.dbapi_connection
    return getattr(adapter, "_transaction", True) is None


class _CheckFailed(Exception):
    """A check inside a statement failed (`_on_asyncpg` ``alone``): nothing was written."""


def execute_alone(connection: Connection, sql: str) -> None:
    """`sql` (without parameters) on `connection`'s asyncpg connection itself, outside any
    transaction; its errors as `Connection.execute` raises them (a lost connection
    invalidated: `connection_lost`)."""
    _on_asyncpg(connection, sql, (), rows=False, alone=True)


def _on_asyncpg(
    connection: Connection, sql: str, args: Sequence[Any], *, rows: bool, alone: bool = False
) -> Any:
    """`sql` on the asyncpg connection itself (its own prepared statements, without the
    adapter's cursor): its rows (asyncpg records) or its row count. It runs in the transaction
    SQLAlchemy began, first begun as the adapter's cursor would (nothing in autocommit);
    `alone`, outside any, as a transaction by itself, a division by zero raised as
    `_CheckFailed`. Its errors are raised as SQLAlchemy's (`_wrapped`)."""
    adapter: Any = connection.connection.dbapi_connection
    try:
        if not alone and adapter._transaction is None:
            await_(adapter._start_transaction())
        if rows:
            return await_(adapter._connection.fetch(sql, *args))
        status: str = await_(adapter._connection.execute(sql, *args))
        count = status.rpartition(" ")[2]
        return int(count) if count.isdigit() else -1
    except Exception as error:
        if alone and getattr(error, "sqlstate", None) == _DIVISION_BY_ZERO:
            raise _CheckFailed from None
        try:
            adapter._handle_exception(error)  # raises the adapter's error of the same kind
        except Exception as translated:
            wrapped = _wrapped(connection, sql, translated)
            if wrapped is None:
                raise
            raise wrapped from translated
        raise


#: The SQLSTATEs of PostgreSQL ending the session (its shutdown, a crash's restart, an
#: operator's ``pg_terminate_backend``), which come before asyncpg sees the socket close: a
#: connection lost too, whose next statement would fail on its half-done protocol state.
#: Class 08 (a connection exception) is lost as well, and so is a connection whose asyncpg
#: protocol is confused (`InternalClientError`: "another operation is in progress"), which is
#: what a session that ended in the middle of a statement leaves.
_SESSION_ENDED: Final = frozenset({"57P01", "57P02", "57P03"})


def session_ended(error: BaseException) -> bool:
    """Whether asyncpg's `error` says that the database session is over (`_SESSION_ENDED`,
    class 08) or left asyncpg's protocol half-done (`InternalClientError`), so that the
    connection is lost even though its socket may not look closed yet. SQLAlchemy's own
    check (`Dialect.is_disconnect`) knows neither; both paths ask this first (`Prepared`'s
    statements here, SQLAlchemy's through its ``handle_error`` hook in `handrail.store.db`)."""
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str) and (state[:2] == "08" or state in _SESSION_ENDED):
        return True
    # asyncpg's protocol state left half-done by a session that ended under it.
    return type(error).__name__ == "InternalClientError"


def _invalidate_if_lost(connection: Connection, error: Exception) -> bool:
    """What `Connection.execute` does when its statement finds the connection lost (the server
    restarted, failed over, or ended the session): the connection is invalidated, and so is
    every other the pool opened before it (they were very likely lost with it), so that the
    next transactions open new ones instead of failing on dead ones for ever. Whether it was
    lost."""
    if connection.invalidated:
        return True
    adapter = connection.connection.dbapi_connection
    if not session_ended(error) and not connection.dialect.is_disconnect(error, adapter, None):  # type: ignore[arg-type]
        return False
    connection.engine.pool._invalidate(connection.connection, error)
    connection.invalidate(error)
    return True


def _adapter_cursor(connection: Connection) -> Any:
    cursor: Any = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    cursor._invalidate_schema_cache_asof = getattr(
        connection.dialect, "_invalidate_schema_cache_asof", 0
    )
    return cursor


class Prepared:
    """One statement, compiled once per dialect and run with the least work the driver
    allows. Every parameter must be a named `bindparam` (or a literal of the statement)."""

    __slots__ = ("statement",)

    def __init__(self, statement: Statement) -> None:
        self.statement = statement

    def later(
        self,
        connection: Connection,
        params: Params | Sequence[Params],
        check: Check | None = None,
        *,
        beside_inserts: bool = False,
    ) -> None:
        """Run a statement that changes rows and gives none, now or (inside `batched`) with
        the statements batched with it; `check` gets how many rows it changed (all of a
        list's parameter sets together) and raises to fail the transaction. With
        `beside_inserts` it may go with inserts into its own table, whose rows it then does
        not see: for a caller that gave those rows their final values itself."""
        if (direct := self._on_sqlite(connection)) is not None:
            count = _run_on_sqlite(direct, params)
            if check is not None:
                check(count)
            return
        batch = _BATCHES.get(connection)
        plan = None if batch is None else self._plan(connection.dialect)
        statement = self.statement
        if (
            batch is None
            or plan is None
            or isinstance(statement, Select)
            or "'" in plan.sql  # a literal could hold a "$1"
            or "RETURNING" in plan.sql
        ):
            count = self.run(connection, params)
            if check is not None:
                check(count)
            return
        table = statement.table
        name = str(getattr(table, "name", table))
        inserts = isinstance(statement, Insert)
        sets = [params] if isinstance(params, Mapping) else list(params)
        if not sets:
            if check is not None:
                check(0)
            return
        if batch.clashes(name, inserts, beside_inserts) or (
            batch.head is not None and batch.head.row is None and _guarded(plan.sql) is None
        ):
            _flush(connection, batch)
        checks: list[Check | None] = [check] if len(sets) == 1 else [None] * len(sets)
        if len(sets) > 1 and check is not None:
            # One count for the list: the parts are summed by a check on the last one.
            counts: list[int] = []

            def part(count: int) -> None:
                counts.append(count)
                if len(counts) == len(sets):
                    check(sum(counts))

            checks = [part] * len(sets)
        for one, each in zip(sets, checks, strict=True):
            args = plan.positional(one)
            heads = tuple((n, v) for n, v in enumerate(args) if v.__class__ is FromHead)
            batch.waiting.append(_Waiting(plan, args, each, name, inserts, heads))

    def _plan(self, dialect: Dialect) -> _Plan | None:
        """The compiled plan, or None when the driver is not one this module runs directly."""
        if (dialect.driver, dialect.paramstyle) not in _DIRECT:
            return None
        # The plans live on the dialect, so they go when its engine does (a compiled statement
        # refers to its dialect, so a cache keyed by dialect elsewhere would keep it alive).
        plans: dict[Prepared, _Plan] | None = getattr(dialect, _PLANS, None)
        if plans is None:
            plans = {}
            setattr(dialect, _PLANS, plans)
        plan = plans.get(self)
        if plan is None:
            compiled = self.statement.compile(dialect=dialect)
            names = tuple(compiled.positiontup or ())
            processors = compiled._bind_processors
            sqlite = dialect.name == "sqlite"
            columns = _columns(compiled, dialect)
            slots = tuple(_slot(compiled, name, processors.get(name), sqlite) for name in names)
            required = len(slots) > 1 and all(default is _REQUIRED for _, default, _ in slots)
            plan = _Plan(
                compiled=compiled,
                sql=compiled.string,
                slots=slots,
                names=tuple(name for name, _ in columns),
                processed=tuple(
                    (name, position, process)
                    for position, (name, process) in enumerate(columns)
                    if process is not None
                ),
                getter=operator.itemgetter(*(key for key, _, _ in slots)) if required else None,
                processors=tuple(
                    (at, process) for at, (_, _, process) in enumerate(slots) if process is not None
                ),
            )
            plans[self] = plan  # a race only compiles twice
        return plan

    def _on_sqlite(self, connection: Connection) -> tuple[_Plan, sqlite3.Connection] | None:
        """The plan and the ``sqlite3`` connection, when `connection` runs it on ``sqlite3``
        directly (no ``echo``; SQLite never batches, see `folds`), else None."""
        driver = _DIRECT_SQLITE.get(connection)
        if driver is None:
            if connection.dialect.driver != "pysqlite" or connection.engine.echo:
                return None
            driver = _sqlite_driver(connection)
        plan = self._plan(connection.dialect)
        return None if plan is None else (plan, driver)

    def _cursor(self, connection: Connection) -> Any:
        """A DBAPI cursor inside the transaction the store began: ``sqlite3``'s own, or (for
        `run`'s lists) SQLAlchemy's asyncpg adapter's (which starts the transaction on its
        first statement, as `Connection.execute` would)."""
        if connection.dialect.driver == "pysqlite":
            return _sqlite_driver(connection).cursor()
        return _adapter_cursor(connection)

    def all(self, connection: Connection, params: Params) -> list[dict[str, Any]]:
        """Every row the statement gives."""
        if (direct := self._on_sqlite(connection)) is not None:
            direct_plan, driver = direct
            cursor = driver.cursor()
            try:
                cursor.execute(direct_plan.sql, direct_plan.positional(params))
                return direct_plan.rows(cursor.fetchall())
            finally:
                cursor.close()
        if (batch := _BATCHES.get(connection)) is not None:
            _flush(connection, batch)
        plan = None if connection.engine.echo else self._plan(connection.dialect)
        if plan is None:
            return [dict(row._mapping) for row in connection.execute(self.statement, params)]
        if connection.dialect.driver != "pysqlite":
            return plan.rows(_on_asyncpg(connection, plan.sql, plan.positional(params), rows=True))
        cursor = self._cursor(connection)
        try:
            cursor.execute(plan.sql, plan.positional(params))
            return plan.rows(cursor.fetchall())
        finally:
            cursor.close()

    def first(self, connection: Connection, params: Params) -> dict[str, Any] | None:
        """The first row the statement gives, or None."""
        rows = self.all(connection, params)
        return rows[0] if rows else None

    def run(self, connection: Connection, params: Params | Sequence[Params]) -> int:
        """Run a statement that gives no rows, once or (with a list) once per parameter set;
        how many rows it changed."""
        if (direct := self._on_sqlite(connection)) is not None:
            return _run_on_sqlite(direct, params)
        if (batch := _BATCHES.get(connection)) is not None:
            _flush(connection, batch)
        plan = None if connection.engine.echo else self._plan(connection.dialect)
        if plan is None:
            if isinstance(params, Mapping):
                return connection.execute(self.statement, params).rowcount
            return connection.execute(self.statement, list(params)).rowcount
        if isinstance(params, Mapping) and connection.dialect.driver != "pysqlite":
            return int(_on_asyncpg(connection, plan.sql, plan.positional(params), rows=False))
        cursor = self._cursor(connection)
        try:
            if isinstance(params, Mapping):
                cursor.execute(plan.sql, plan.positional(params))
            else:
                cursor.executemany(plan.sql, [plan.positional(p) for p in params])
            return int(cursor.rowcount)
        except Exception as exc:
            wrapped = _wrapped(connection, plan.sql, exc)
            if wrapped is None:
                raise
            raise wrapped from exc
        finally:
            cursor.close()


def _sqlite_driver(connection: Connection) -> sqlite3.Connection:
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return driver


def _run_on_sqlite(
    direct: tuple[_Plan, sqlite3.Connection], params: Params | Sequence[Params]
) -> int:
    """`Prepared.run` on ``sqlite3`` (the plan and the connection): its errors are raised as
    they are."""
    plan, driver = direct
    cursor = driver.cursor()
    try:
        if params.__class__ is dict or isinstance(params, Mapping):
            cursor.execute(plan.sql, plan.positional(params))
        else:
            cursor.executemany(plan.sql, [plan.positional(p) for p in params])
        return cursor.rowcount
    finally:
        cursor.close()


def _wrapped(connection: Connection, sql: str, error: Exception) -> BaseException | None:
    """The asyncpg adapter's error as `Connection.execute` raises it: SQLAlchemy's exception of
    the same kind (`IntegrityError`, `OperationalError`, ...), its parameters hidden, and
    with ``connection_invalidated`` when the connection was lost (`_invalidate_if_lost`).
    None for any other error (``sqlite3``'s errors stay as they are)."""
    dbapi = connection.dialect.loaded_dbapi
    if connection.dialect.driver == "pysqlite" or not isinstance(error, dbapi.Error):
        return None
    lost = _invalidate_if_lost(connection, error)
    return DBAPIError.instance(
        sql,
        None,
        error,
        dbapi.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=connection.dialect,
    )
