"""Histories (conversations) and their rows.

Every change goes through `HistoryRepo.apply`: one transaction that first bumps the version with
a compare-and-set on ``(id, version)`` and then writes the rows, so the loser of a race changes
nothing and gets `HistoryConflict`. `update_title` and `delete` skip the compare but still bump
the version, so a change prepared before them loses.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast, get_args

from sqlalchemy import (
    Connection,
    Integer,
    Text,
    Update,
    bindparam,
    delete,
    exists,
    false,
    func,
    insert,
    or_,
    select,
    tuple_,
    update,
)

from handrail._util import new_sorted_id, utc_now
from handrail.asks.pending import PendingAsk
from handrail.errors import Conflict, HistoryNotFound
from handrail.store.audit import insert_audit, write_open_gate
from handrail.store.db import QUICK_ROWS, Database, check_here, may_have_committed, unsynced
from handrail.store.event_wire import notifications
from handrail.store.events import CHANNEL, Carried, EventBus, UserEvent
from handrail.store.json_rows import JsonRows
from handrail.store.leases import release_lease, write_lease
from handrail.store.outbox import EventOutbox, insert_outbox_events
from handrail.store.paging import Page, Position, checked_limit
from handrail.store.prepared import (
    AtLeastOne,
    FromHead,
    Head,
    Notify,
    Prepared,
    batched,
    folds,
)
from handrail.store.records import (
    UNSET,
    AskStatus,
    History,
    HistoryChange,
    ReleaseLease,
    RequestRecord,
    StoredRow,
    TurnLease,
)
from handrail.store.requests import insert_request
from handrail.store.search import ask_key, like_pattern, search_key, text_key
from handrail.store.tables import grants, histories, history_rows, open_gates

__all__ = [
    "HistoryConflict",
    "HistoryRepo",
    "get_history",
    "history_not_found",
    "history_rows_of",
    "load_history",
    "load_history_at_once",
    "read_history_at_once",
]

ASK_STATUSES: Final[tuple[str, ...]] = get_args(AskStatus)

H = histories.c
R = history_rows.c

#: The columns a `History` is read from (not the search keys, which only queries read).
_COLUMNS = tuple(c for c in histories.c if c.name not in ("title_key", "ask_key"))

#: "Not deleted", for the statements that find a history by its id. It is ``deleted_at IS
#: NULL`` written so that no database can prove from it the predicate of the lists' partial
#: indexes (``WHERE deleted_at IS NULL``, see `handrail.store.tables`), so the primary key is
#: the only index such a lookup can use. With the plain term, PostgreSQL may read the lookup
#: as a scan of the whole partial index with ``id`` as a later column's condition: it does so
#: while the table has no statistics (a new database until its first ANALYZE, which guesses
#: the partial index tiny), and asyncpg's prepared statements keep such a plan (a generic
#: plan, after five runs), so each lookup then costs in proportion to the number of
#: histories. The lists keep the plain term: they read a range of that index.
_LIVE: Final = func.coalesce(H.deleted_at.is_(None), false())

# The statements of every turn, built once.
_GET = Prepared(select(*_COLUMNS).where(H.id == bindparam("history_id"), _LIVE))
_ROWS = Prepared(
    select(R.seq, R.data, R.ask_status, R.created)
    .join(histories, H.id == R.history_id)
    .where(R.history_id == bindparam("history_id"), _LIVE)
    .order_by(R.seq)
)
_INSERT_HISTORY = Prepared(insert(histories))
#: The rows of a history as one column, for the reads that go in one statement (PostgreSQL).
ROWS_JSON = JsonRows(
    select(R.seq, R.data, R.ask_status, R.created).where(R.history_id == bindparam("history_id")),
    order_by=("seq",),
    name="history_rows",
)


class HistoryConflict(Conflict):
    """A compare-and-set lost: the history is no longer at the version the change was made
    for. Nothing was written. The server shows it with the spec's own 409 title."""

    def __init__(self, history_id: str, *, expected_version: int, current_version: int) -> None:
        super().__init__(
            f"History {history_id} is at version {current_version}, not {expected_version}."
        )
        self.history_id = history_id
        self.expected_version = expected_version
        self.current_version = current_version


def history_not_found(history_id: str) -> HistoryNotFound:
    """The error for a history that does not exist or was deleted."""
    return HistoryNotFound(f"No history {history_id}.")


class HistoryRepo:
    """Reads and changes histories. Deleted histories are invisible: `get` gives None and
    changes raise `HistoryNotFound`."""

    def __init__(
        self, db: Database, outbox: EventOutbox | None = None, events: EventBus | None = None
    ) -> None:
        self._db = db
        self._outbox = outbox if outbox is not None else EventOutbox(db)
        #: Where the writes publish their events (`create` with ``announce``, `apply`); by
        #: default to this process only.
        self._events = events if events is not None else EventBus()

    async def create(
        self,
        owner_id: str,
        *,
        agent: str,
        title: str | None = None,
        announce: bool = False,
        synced: bool = True,
    ) -> History:
        """A new history. With `announce`, ``history.created`` is published: on PostgreSQL
        to the other processes by the insert itself (see `EventBus.carry`), here once it
        committed. Without `synced`, for a conversation that a turn's write follows (one made
        for a prompt), the insert's commit does not wait for the disk on SQLite (`unsynced`):
        the turn's first write puts both on it."""
        now = utc_now()
        values: dict[str, Any] = {
            "id": new_sorted_id(),
            "owner_id": owner_id,
            "agent": agent,
            "title": title,
            "pending_ask": None,
            "pending_created": None,
            "version": 1,
            "next_seq": 0,
            "created": now,
            "updated": now,
            "deleted_at": None,
            "title_key": search_key(title),
            "ask_key": None,
        }
        history = _history_from(values)
        insert = _insert_history if synced else _INSERT_UNSYNCED
        if not announce:
            # One statement: on PostgreSQL it commits alone, without a BEGIN and a COMMIT.
            await self._db.autocommit(insert, values, None)
            return history
        created = UserEvent(
            kind="history.created",
            user_id=owner_id,
            history_id=history.id,
            data={"title": title, "agent": agent},
        )
        carried = await self._events.carry(history.id, [created])
        try:
            # Still one statement, the notification in it.
            await self._db.autocommit(insert, values, _notify_of(carried))
        except BaseException as error:
            self._events.settle(carried, committed=_committed(error))
            raise
        self._events.settle(carried, committed=True)
        return history

    async def get(self, history_id: str) -> History | None:
        return await self._db.read(get_history, history_id)

    async def list(self, owner_id: str) -> builtins.list[History]:
        """The owner's histories, newest (by ``created``) first. All of them: a server pages
        them with `list_page`."""
        page = await self._db.read(_page, owner_id, pending=False, limit=None, after=None)
        return page.items

    async def list_page(
        self,
        owner_id: str,
        *,
        limit: int,
        after: Position | None = None,
        query: str | None = None,
    ) -> Page[History]:
        """At most `limit` (1 to `MAX_LIMIT`) of the owner's histories, ordered by
        ``(created, id)`` descending, after `after` (a `Page.next`). With `query`, only those
        whose title or a message's text holds it, case-insensitively (see
        `handrail.store.search`)."""
        checked = checked_limit(limit)
        return await self._db.read(
            _page, owner_id, pending=False, limit=checked, after=after, query=query
        )

    async def pending(self, owner_id: str) -> builtins.list[History]:
        """The owner's histories that wait on an ask, newest ask first. All of them: a server
        pages them with `pending_page`."""
        page = await self._db.read(_page, owner_id, pending=True, limit=None, after=None)
        return page.items

    async def pending_page(
        self,
        owner_id: str,
        *,
        limit: int,
        after: Position | None = None,
        query: str | None = None,
    ) -> Page[History]:
        """At most `limit` (1 to `MAX_LIMIT`) of the owner's histories that wait on an ask,
        ordered by ``(when the ask was made, id)`` descending, after `after` (a
        `Page.next`). With `query`, only those whose pending ask's title or prompt (a clarify
        ask's questions), or whose title, holds it, case-insensitively."""
        checked = checked_limit(limit)
        return await self._db.read(
            _page, owner_id, pending=True, limit=checked, after=after, query=query
        )

    async def rows(self, history_id: str) -> builtins.list[StoredRow]:
        """The history's rows in order, with each ask's current status in ``data.ask.status``.
        Empty for a deleted or unknown history."""
        return await self._db.read(history_rows_of, history_id)

    async def load(self, history_id: str) -> tuple[History, builtins.list[StoredRow]] | None:
        """The history and its rows as of one moment (what `apply`'s ``expected_version``
        should come from), or None when it does not exist or was deleted."""
        if self._db.backend == "postgresql":
            # One statement sees one snapshot by itself: no transaction around it.
            loaded = await read_history_at_once(self._db, history_id)
            return None if loaded is None else (loaded[0], loaded[1])
        return await self._db.quick_snapshot(load_history, history_id)

    async def apply(
        self,
        history_id: str,
        change: HistoryChange,
        *,
        expected_version: int,
        log: RequestRecord | None = None,
    ) -> History:
        """Apply `change` if the history is still at `expected_version`, all or nothing, and
        return the history at its new version.

        In order, in one transaction: bump the version (and write ``pending_ask`` and
        ``title`` unless `UNSET`), remove the ``tool-result`` rows of ``remove_results``,
        append the new rows, then set ``ask_status`` (so it may name a row appended by the
        same change). With `log`, the turn's request log entry is written in the same
        transaction, and the change's events that the event outbox keeps. Once committed, the
        change's events are published: on PostgreSQL to the other processes by the
        transaction itself, with the history's events published before and not sent yet
        (see `EventBus.carry`), here after the commit.

        Without `HistoryChange.synced` (and with no event the outbox keeps), the commit does
        not wait for the disk (`unsynced`: on SQLite at ``NORMAL``, on PostgreSQL with
        ``synchronous_commit = off``).

        Raises `HistoryConflict` when the version moved on, `HistoryNotFound` when the history does
        not exist or was deleted, and `ValueError` (writing nothing) for a row without a
        ``type``, an unknown ask status, or a ``toolCallId`` that matches no row.
        """
        appended = [_row_columns(data) for data in change.append]
        statuses = _checked_statuses(change.ask_status)
        kept = self._outbox.wanted(change.events) if change.events else []
        carried = await self._events.carry(history_id, change.events)
        try:
            written = await self._db.write(
                # What the outbox keeps goes out of the process: it waits for the disk.
                _apply if change.synced or kept else _unsynced_apply(appended, log),
                history_id,
                change,
                expected_version,
                appended,
                statuses,
                log,
                kept,
                _notify_of(carried),
            )
        except BaseException as error:
            self._events.settle(carried, committed=_committed(error))
            raise
        self._events.settle(carried, committed=True)
        return written

    async def update_title(self, history_id: str, title: str | None) -> History:
        """Set the title without a compare-and-set; the version still grows."""
        return await self._db.write(_touch, history_id, {"title": title})

    async def delete(self, history_id: str) -> None:
        """Soft-delete the history: it disappears from every read. Its rows stay in the
        database. The version still grows, so a change prepared before fails. Its
        ``conversation`` grants go with it, in the same transaction."""
        await self._db.write(_delete, history_id)


# --- reading ------------------------------------------------------------------------------------


def get_history(connection: Connection, history_id: str) -> History | None:
    """The history, or None when it does not exist or was deleted."""
    row = _GET.first(connection, {"history_id": history_id})
    return None if row is None else _history_from(row)


def history_rows_of(connection: Connection, history_id: str) -> list[StoredRow]:
    """The history's rows in order (none for a deleted or unknown history)."""
    return [_stored_row(row) for row in _ROWS.all(connection, {"history_id": history_id})]


def load_history(connection: Connection, history_id: str) -> tuple[History, list[StoredRow]] | None:
    """The history and its rows, or None when it does not exist or was deleted. In a
    `Database.quick_snapshot` it checks the number of rows first (`check_here`)."""
    row = _GET.first(connection, {"history_id": history_id})
    if row is None:
        return None
    check_here(connection, row["next_seq"])  # the rows appended, of which none or some removed
    return _history_from(row), history_rows_of(connection, history_id)


def load_history_at_once(
    connection: Connection, history_id: str, *more: JsonRows
) -> tuple[History, list[StoredRow], list[list[dict[str, Any]]]] | None:
    """PostgreSQL: the history, its rows, and the rows of each of `more` (reads of the same
    ``history_id`` parameter) in one statement, so all of them as of one moment; None when
    it does not exist or was deleted."""
    return _at_once_decoded(_at_once(more).first(connection, {"history_id": history_id}), more)


async def read_history_at_once(
    db: Database, history_id: str, *more: JsonRows
) -> tuple[History, list[StoredRow], list[list[dict[str, Any]]]] | None:
    """`load_history_at_once` as a read of `db`, its rows decoded on a thread when the
    history has had more than `QUICK_ROWS` (as `Database.quick_snapshot` reads them on SQLite),
    so the event loop's own work for a turn's read does not grow with the history."""
    row = await db.read(_at_once(more).first, {"history_id": history_id})
    if row is not None and row["next_seq"] > QUICK_ROWS:
        return await asyncio.to_thread(_at_once_decoded, row, more)
    return _at_once_decoded(row, more)


def _at_once_decoded(
    row: Mapping[str, Any] | None, more: tuple[JsonRows, ...]
) -> tuple[History, list[StoredRow], list[list[dict[str, Any]]]] | None:
    if row is None:
        return None
    rows = [_stored_row(item) for item in ROWS_JSON.decode(row[ROWS_JSON.column.name])]
    return _history_from(row), rows, [read.decode(row[read.column.name]) for read in more]


@functools.cache
def _at_once(more: tuple[JsonRows, ...]) -> Prepared:
    return Prepared(
        select(*_COLUMNS, ROWS_JSON.column, *(read.column for read in more)).where(
            H.id == bindparam("history_id"), _LIVE
        )
    )


@functools.cache
def _list_query(pending: bool, paged: bool, after: bool, search: bool = False) -> Prepared:
    """A list's statement, built once per shape. The ``WHERE`` repeats the partial index's
    own terms (``deleted_at IS NULL``, and ``pending_created IS NOT NULL`` for the pending
    list), so both SQLite and PostgreSQL read a page as one range of that index. A search
    adds its match (``pattern``, see `handrail.store.search`): the ask's key or the title's
    for the pending list, else the title's or any message row's (by the rows' primary key)."""
    at = H.pending_created if pending else H.created
    query = select(*_COLUMNS).where(H.owner_id == bindparam("owner"), H.deleted_at.is_(None))
    if pending:
        query = query.where(H.pending_created.is_not(None))
    if search:
        pattern = bindparam("pattern", type_=Text)
        if pending:
            query = query.where(
                or_(H.ask_key.like(pattern, escape="\\"), H.title_key.like(pattern, escape="\\"))
            )
        else:
            in_rows = exists().where(R.history_id == H.id, R.text_key.like(pattern, escape="\\"))
            query = query.where(or_(H.title_key.like(pattern, escape="\\"), in_rows))
    if after:
        query = query.where(
            tuple_(at, H.id)
            < tuple_(bindparam("after_at", type_=at.type), bindparam("after_id", type_=H.id.type))
        )
    query = query.order_by(at.desc(), H.id.desc())
    if paged:
        query = query.limit(bindparam("limit", type_=Integer))
    return Prepared(query)


def _page(
    connection: Connection,
    owner_id: str,
    *,
    pending: bool,
    limit: int | None,
    after: Position | None,
    query: str | None = None,
) -> Page[History]:
    params: dict[str, Any] = {"owner": owner_id}
    if query is not None:
        params["pattern"] = like_pattern(query)
    if after is not None:
        params["after_at"] = after.at
        params["after_id"] = after.id
    if limit is not None:
        params["limit"] = limit + 1  # one more says whether another page follows
    shape = _list_query(pending, limit is not None, after is not None, query is not None)
    rows = shape.all(connection, params)
    next_page: Position | None = None
    if limit is not None and len(rows) > limit:
        del rows[limit:]
        last = rows[-1]
        next_page = Position(at=last["pending_created" if pending else "created"], id=last["id"])
    return Page(items=[_history_from(row) for row in rows], next=next_page)


def _history_from(row: Mapping[Any, Any]) -> History:
    return History(
        id=row["id"],
        owner_id=row["owner_id"],
        agent=row["agent"],
        title=row["title"],
        pending_ask=_pending_from(row["pending_ask"]),
        version=row["version"],
        created=row["created"],
        updated=row["updated"],
    )


def _stored_row(row: Mapping[Any, Any]) -> StoredRow:
    data: dict[str, Any] = dict(row["data"])
    ask = data.get("ask")
    if row["ask_status"] is not None and isinstance(ask, dict):
        data["ask"] = {**ask, "status": row["ask_status"]}
    return StoredRow(seq=row["seq"], data=data, created=row["created"])


# --- writing ------------------------------------------------------------------------------------


def _row_columns(data: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a row to append, checked: `type` and `toolCallId` are copied out of
    `data`, and an ask call's ``ask.status`` (default ``pending``) goes to `ask_status`."""
    row_type = data.get("type")
    if not isinstance(row_type, str) or not row_type:
        raise ValueError(f"A history row needs a string 'type', got {row_type!r}.")
    tool_call_id = data.get("toolCallId")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise ValueError(f"A row's 'toolCallId' must be a string, got {tool_call_id!r}.")
    ask_status: str | None = None
    ask = data.get("ask")
    if row_type == "tool-call" and ask is not None:
        if not isinstance(ask, Mapping):
            raise ValueError(f"A tool-call row's 'ask' must be an object, got {ask!r}.")
        if tool_call_id is None:
            raise ValueError("An ask call row needs a 'toolCallId'.")
        ask_status = _checked_status(ask.get("status", "pending"))
    return {
        "type": row_type,
        "tool_call_id": tool_call_id,
        "ask_status": ask_status,
        "data": dict(data),
        "text_key": text_key(data),
    }


def _checked_status(status: object) -> str:
    if status not in ASK_STATUSES:
        raise ValueError(f"An ask status is one of {', '.join(ASK_STATUSES)}, not {status!r}.")
    return status


def _checked_statuses(statuses: Mapping[str, AskStatus]) -> dict[str, str]:
    return {tool_call_id: _checked_status(status) for tool_call_id, status in statuses.items()}


def _pending_from(stored: Mapping[str, Any] | None) -> PendingAsk | None:
    return None if stored is None else PendingAsk.from_json(stored)


def _ask_created(pending_ask: PendingAsk, default: dt.datetime) -> dt.datetime:
    """When the ask was made: its ``created`` (ISO 8601), else `default`."""
    created = pending_ask.created
    if isinstance(created, str):
        try:
            moment = dt.datetime.fromisoformat(created)
        except ValueError:
            return default
        return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment
    return default


def _committed(error: BaseException) -> bool | None:
    """What a write that raised `error` tells `EventBus.settle`: False when it surely rolled
    back, None when it may have committed (`may_have_committed`)."""
    return None if may_have_committed(error) else False


def _notify_of(carried: Carried) -> Notify | None:
    return (CHANNEL, notifications(carried.payloads)) if carried.payloads else None


def _insert_history(connection: Connection, values: dict[str, Any], notify: Notify | None) -> None:
    if notify is None:
        _INSERT_HISTORY.run(connection, values)
        return
    with batched(connection, last=True, notify=notify):
        _INSERT_HISTORY.later(connection, values)


#: `_insert_history` for a conversation that a turn's write follows (`HistoryRepo.create`).
_INSERT_UNSYNCED: Final = unsynced(_insert_history)


@functools.cache
def _compare_and_set(set_pending: bool, set_title: bool, sqlite: bool = False) -> Prepared:
    """The version bump of `apply`, built once per shape. It returns only what the caller does
    not know already: the new version is ``expected + 1`` and a value the change sets is that
    value, so the stored ask is decoded again only when the change leaves it. On SQLite a
    change of the pending ask also returns whether the history has an open gate
    (``gate_open``), so that `write_open_gate` deletes none when it has none: a subquery of
    the statement costs less than a statement."""
    values: dict[str, Any] = {
        "version": H.version + 1,
        "updated": bindparam("now", type_=H.updated.type),
        "next_seq": H.next_seq + bindparam("added", type_=H.next_seq.type),
    }
    returning: list[Any] = [H.owner_id, H.agent, H.created, H.next_seq]
    if set_pending:
        values["pending_ask"] = bindparam("new_pending_ask", type_=H.pending_ask.type)
        values["pending_created"] = bindparam("new_pending_created", type_=H.pending_created.type)
        values["ask_key"] = bindparam("new_ask_key", type_=H.ask_key.type)
        if sqlite:
            gate = exists().where(open_gates.c.history_id == bindparam("cas_id"))
            returning.append(gate.label("gate_open"))
    else:
        returning.append(H.pending_ask)
    if set_title:
        values["title"] = bindparam("new_title", type_=H.title.type)
        values["title_key"] = bindparam("new_title_key", type_=H.title_key.type)
    else:
        returning.append(H.title)
    return Prepared(
        update(histories)
        .where(
            H.id == bindparam("cas_id"),
            H.version == bindparam("expected"),
            _LIVE,
        )
        .values(values)
        .returning(*returning)
    )


#: `_why_not_updated`'s read, run with `Connection.execute`: it runs inside a batch, while
#: `Prepared` would flush the batch first (see `batched`).
_VERSION = select(H.version).where(H.id == bindparam("history_id"), _LIVE)
_SET_ASK_STATUS = Prepared(
    update(history_rows)
    .where(
        R.history_id == bindparam("row_history_id"),
        R.tool_call_id == bindparam("call_id"),
        R.ask_status.is_not(None),
    )
    .values(ask_status=bindparam("new_status", type_=R.ask_status.type))
)
_INSERT_ROWS = Prepared(insert(history_rows))


def _apply(
    connection: Connection,
    history_id: str,
    change: HistoryChange,
    expected_version: int,
    appended: list[dict[str, Any]],
    statuses: dict[str, str],
    log: RequestRecord | None,
    kept: list[Any] | None = None,
    notify: Notify | None = None,
) -> History:
    now = utc_now()
    set_pending = change.pending_ask is not UNSET
    set_title = change.title is not UNSET
    params: dict[str, Any] = {
        "cas_id": history_id,
        "expected": expected_version,
        "now": now,
        "added": len(appended),
    }
    if set_pending:
        pending = cast("PendingAsk | None", change.pending_ask)
        params["new_pending_ask"] = None if pending is None else pending.to_json()
        params["new_pending_created"] = None if pending is None else _ask_created(pending, now)
        params["new_ask_key"] = ask_key(pending)
    if set_title:
        params["new_title"] = change.title
        params["new_title_key"] = search_key(cast("str | None", change.title))
    sqlite = connection.dialect.name == "sqlite"
    cas = _compare_and_set(set_pending, set_title, sqlite)
    row: Mapping[str, Any] | None
    if not change.remove_results and folds(connection):
        # PostgreSQL: the compare-and-set and the rest in one statement, the rest reading the
        # history's owner and next seq from it (see `Head`), so nothing is written when the
        # version moved. It is the transaction's one statement: it runs without a BEGIN and a
        # COMMIT, its checks inside it.
        head = Head(
            cas,
            params,
            functools.partial(_why_not_updated, connection, history_id, expected_version),
        )
        with batched(connection, head, last=True, notify=notify):
            _write_the_rest(
                connection,
                history_id,
                change,
                FromHead("owner_id"),
                FromHead("next_seq"),
                None,
                now,
                appended,
                statuses,
                log,
                kept or [],
            )
        row = head.row
        assert row is not None
    else:
        row = cas.first(connection, params)
        if row is None:
            raise _why_not_updated(connection, history_id, expected_version)
        _remove_results(connection, history_id, change.remove_results)
        # The rest needs no row back: on PostgreSQL it goes to the database in as few
        # statements as the tables allow (see `batched`), its checks run after them, in this
        # transaction.
        with batched(connection, notify=notify):
            _write_the_rest(
                connection,
                history_id,
                change,
                row["owner_id"],
                row["next_seq"],
                bool(row["gate_open"]) if "gate_open" in row else None,
                now,
                appended,
                statuses,
                log,
                kept or [],
            )
    return History(
        id=history_id,
        owner_id=row["owner_id"],
        agent=row["agent"],
        title=cast("str | None", change.title) if set_title else row["title"],
        pending_ask=(
            cast("PendingAsk | None", change.pending_ask)
            if set_pending
            else _pending_from(row["pending_ask"])
        ),
        version=expected_version + 1,
        created=row["created"],
        updated=now,
    )


#: `_apply` for a change that need not wait for the disk (`HistoryChange.synced`): one that
#: may run on the event loop's thread (see `unsynced`), and one that may not.
_APPLY_UNSYNCED: Final = unsynced(_apply)
_APPLY_UNSYNCED_AWAY: Final = unsynced(_apply, here=False)

#: An unsynced change whose rows and request log entry hold more text than this (or a row a
#: value other than text, a number or a flag) runs on the writer thread, never the loop's.
HERE_WRITE_CHARS: Final = 16_384


def _unsynced_apply(
    appended: list[dict[str, Any]], log: RequestRecord | None
) -> Callable[..., History]:
    """`_APPLY_UNSYNCED` for a change small enough to write on the event loop's thread (a
    turn's reply: its text and its request log entry), else `_APPLY_UNSYNCED_AWAY`, so that
    the loop's part does not grow with the data."""
    size = 0 if log is None else len(log.prompt) + len(log.response)
    for columns in appended:
        for value in columns["data"].values():
            if isinstance(value, str):
                size += len(value)
            elif not (value is None or isinstance(value, int | float)):
                return _APPLY_UNSYNCED_AWAY
    return _APPLY_UNSYNCED if size <= HERE_WRITE_CHARS else _APPLY_UNSYNCED_AWAY


def _write_the_rest(
    connection: Connection,
    history_id: str,
    change: HistoryChange,
    owner_id: str | FromHead,
    next_seq: int | FromHead,
    gate_open: bool | None,
    now: dt.datetime,
    appended: list[dict[str, Any]],
    statuses: dict[str, str],
    log: RequestRecord | None,
    kept: list[Any],
) -> None:
    """`_apply` after its compare-and-set, given the history's owner and next seq after it
    (`next_seq`) and whether it has an open gate (None: it may have one): the lease, the rows,
    the ask statuses, the open gate, the audit records, the events the event outbox keeps and
    the request log entry."""
    if isinstance(change.lease, TurnLease):
        write_lease(connection, change.lease)
    elif isinstance(change.lease, ReleaseLease):
        release_lease(connection, history_id, change.lease.owner)
    elif change.lease is None:
        release_lease(connection, history_id)
    # An ask status naming an appended ask row is written with the row, so the update of the
    # rows already there need not see the new ones (and may go in one statement with them).
    new_rows = [
        {**cols, "ask_status": statuses[cols["tool_call_id"]]}
        if cols["ask_status"] is not None and cols["tool_call_id"] in statuses
        else cols
        for cols in appended
    ]
    named_new = {cols["tool_call_id"] for cols in appended if cols["ask_status"] is not None}
    if new_rows:
        first_seq = next_seq - len(new_rows)
        _INSERT_ROWS.later(
            connection,
            [
                {"history_id": history_id, "seq": first_seq + i, "created": now, **cols}
                for i, cols in enumerate(new_rows)
            ],
        )
    for tool_call_id, status in statuses.items():
        _SET_ASK_STATUS.later(
            connection,
            {"row_history_id": history_id, "call_id": tool_call_id, "new_status": status},
            None
            if tool_call_id in named_new
            else AtLeastOne(functools.partial(_not_an_ask, history_id, tool_call_id)),
            beside_inserts=True,
        )
    if change.pending_ask is not UNSET:
        write_open_gate(
            connection,
            history_id,
            owner_id,
            change.pending_ask,
            open_now=gate_open,
        )
    insert_audit(connection, list(change.audit))
    insert_outbox_events(connection, kept)
    if log is not None:
        insert_request(connection, log)


def _not_an_ask(history_id: str, tool_call_id: str) -> ValueError:
    return ValueError(
        f"ask_status names {tool_call_id!r}, which is not an ask in history {history_id}."
    )


def _touch(connection: Connection, history_id: str, values: dict[str, Any]) -> History:
    if "title" in values:
        values = {**values, "title_key": search_key(values["title"])}
    row = connection.execute(_touch_statement(history_id, values)).first()
    if row is None:
        raise history_not_found(history_id)
    return _history_from(row._mapping)


def _touch_statement(history_id: str, values: dict[str, Any]) -> Update:
    """`_touch`'s statement: bump the version, set `values` and return the history."""
    return (
        update(histories)
        .where(H.id == history_id, _LIVE)
        .values(version=H.version + 1, updated=utc_now(), **values)
        .returning(*_COLUMNS)
    )


def _delete(connection: Connection, history_id: str) -> None:
    _touch(connection, history_id, {"deleted_at": utc_now()})
    connection.execute(
        delete(grants).where(grants.c.history_id == history_id, grants.c.scope == "conversation")
    )


def _remove_results(connection: Connection, history_id: str, tool_call_ids: Sequence[str]) -> None:
    if not tool_call_ids:
        return
    wanted = set(tool_call_ids)
    where = (
        R.history_id == history_id,
        R.type == "tool-result",
        R.tool_call_id.in_(wanted),
    )
    found = set(connection.execute(select(R.tool_call_id).where(*where)).scalars())
    missing = wanted - found
    if missing:
        raise ValueError(
            f"remove_results names {', '.join(sorted(missing))}, which has no tool-result row "
            f"in history {history_id}."
        )
    connection.execute(delete(history_rows).where(*where))


def _why_not_updated(
    connection: Connection, history_id: str, expected_version: int
) -> HistoryNotFound | HistoryConflict:
    current = connection.execute(_VERSION, {"history_id": history_id}).scalar_one_or_none()
    if current is None:
        return history_not_found(history_id)
    return HistoryConflict(history_id, expected_version=expected_version, current_version=current)
