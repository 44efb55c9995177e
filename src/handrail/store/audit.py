"""The audit log and the open gates.

The audit log is the activity table: beside the admins' ``connection.*`` changes it holds a
record of every gate asked and of how it ended (``gate.asked``, ``gate.approved``,
``gate.answered``, ``gate.denied``, ``gate.cancelled``, ``gate.expired``, ``gate.outcome``),
written in the same transaction as the history change it records (`HistoryChange.audit`). The
runtime builds the records; they carry digests, names and the person's own short notes, never
a secret, a file's bytes or a data URL.

The open gates are the pending asks that wait with a clock (`expires`, `remind`) or for other
people (`approvers`): one row per history, written whenever its pending ask is, so the sweeper
and the approvers' inbox find them without reading every history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    and_,
    bindparam,
    delete,
    insert,
    or_,
    select,
    text,
    update,
)

from handrail._util import new_sorted_id
from handrail.asks.pending import PendingAsk
from handrail.store.connections import ActivityRecord, _activity
from handrail.store.db import Database, all_rows, row_count
from handrail.store.outbox import EventOutbox, insert_outbox_events
from handrail.store.paging import Page, Position, checked_limit
from handrail.store.prepared import FromHead, Prepared
from handrail.store.tables import activity, open_gates

__all__ = [
    "ADMINS",
    "AuditFilter",
    "AuditRepo",
    "OpenGate",
    "audit_record",
    "insert_audit",
    "parse_time",
    "write_open_gate",
]

A = activity.c
#: A literal, not a bound value: the planner then knows the lookup is inside the partial index
#: of ``gate.asked`` records (a generic plan of a bound value could not use it).
_GATE_ASKED = text("activity.action = 'gate.asked'")
G = open_gates.c

#: The approver that names every admin.
ADMINS = "admins"


def audit_record(
    *,
    actor: str,
    action: str,
    subject: str,
    changes: Mapping[str, Any],
    history_id: str | None = None,
    owner_id: str | None = None,
    tool: str | None = None,
) -> ActivityRecord:
    """A new record of the log, timed to the microsecond (its order is the order of events)."""
    return ActivityRecord(
        id=new_sorted_id(),
        actor=actor,
        action=action,
        subject=subject,
        changes=dict(changes),
        created=dt.datetime.now(dt.UTC),
        history_id=history_id,
        owner_id=owner_id,
        tool=tool,
    )


#: The statements every gate runs (see `handrail.store.prepared`).
_INSERT_AUDIT = Prepared(insert(activity))
_DELETE_GATE = Prepared(delete(open_gates).where(G.history_id == bindparam("gate_history_id")))
_INSERT_GATE = Prepared(insert(open_gates))


def insert_audit(connection: Connection, records: list[ActivityRecord]) -> None:
    """Write `records` (inside the caller's transaction)."""
    if not records:
        return
    _INSERT_AUDIT.later(
        connection,
        [
            {
                "id": r.id,
                "actor": r.actor,
                "action": r.action,
                "subject": r.subject,
                "changes": r.changes,
                "created": r.created,
                "history_id": r.history_id,
                "owner_id": r.owner_id,
                "tool": r.tool,
            }
            for r in records
        ],
    )


def parse_time(value: str | None) -> dt.datetime | None:
    """An ISO 8601 time of the stored ask (``...Z``) as a datetime, None for None."""
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def write_open_gate(
    connection: Connection,
    history_id: str,
    owner_id: str | FromHead,
    pending: PendingAsk | None,
    *,
    open_now: bool | None = None,
) -> None:
    """Make the history's open gate match its new pending ask (inside the transaction).
    `open_now` False says the history has no open gate in this transaction (so none is
    deleted); None, that it may have one."""
    if open_now is not False:
        _DELETE_GATE.later(connection, {"gate_history_id": history_id})
    if pending is None:
        return
    expires = parse_time(pending.expires_at)
    remind = parse_time(pending.remind_at)
    if expires is None and remind is None and not pending.approvers:
        return
    _INSERT_GATE.later(
        connection,
        {
            "history_id": history_id,
            "ask_id": pending.tool_call_id,
            "owner_id": owner_id,
            "origin": pending.origin,
            "tool": pending.tool_name,
            "approvers": list(pending.approvers) if pending.approvers else None,
            "expires": expires,
            "remind": remind,
            "reminded": None,
            "created": parse_time(pending.created) or dt.datetime.now(dt.UTC),
        },
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenGate:
    """A pending ask that waits with a clock or for other people."""

    history_id: str
    ask_id: str
    owner_id: str
    origin: str | None
    tool: str | None
    approvers: tuple[str, ...]
    expires: dt.datetime | None
    remind: dt.datetime | None
    reminded: dt.datetime | None
    created: dt.datetime

    def approver(self, user_id: str, *, is_admin: bool) -> bool:
        """Whether `user_id` is one of its approvers (by id, or as an admin)."""
        return user_id in self.approvers or (is_admin and ADMINS in self.approvers)


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditFilter:
    """Which records a reader gets: `viewer` sees the records of their own conversations and
    the ones they wrote (all with `admin`), narrowed by `tool`, `user` (the actor or the
    conversation's owner) and the time range [`since`, `until`)."""

    viewer: str
    admin: bool = False
    tool: str | None = None
    user: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


def _gate(row: Mapping[Any, Any]) -> OpenGate:
    return OpenGate(
        history_id=row["history_id"],
        ask_id=row["ask_id"],
        owner_id=row["owner_id"],
        origin=row["origin"],
        tool=row["tool"],
        approvers=tuple(row["approvers"] or ()),
        expires=row["expires"],
        remind=row["remind"],
        reminded=row["reminded"],
        created=row["created"],
    )


class AuditRepo:
    """Reading the audit log; the open gates' clocks and inboxes."""

    def __init__(self, db: Database, outbox: EventOutbox | None = None) -> None:
        self._db = db
        self._outbox = outbox if outbox is not None else EventOutbox(db)

    async def add(self, records: list[ActivityRecord]) -> None:
        """Write records that go with no history change (each in its own transaction)."""

        def write(connection: Connection) -> None:
            insert_audit(connection, records)

        await self._db.write(write)

    async def page(
        self, where: AuditFilter, *, limit: int, after: Position | None = None
    ) -> Page[ActivityRecord]:
        """One page of the records `where` lets its viewer read, newest first."""
        checked_limit(limit)
        query = select(activity).order_by(A.created.desc(), A.id.desc()).limit(limit + 1)
        if not where.admin:
            query = query.where(or_(A.owner_id == where.viewer, A.actor == where.viewer))
        if where.tool is not None:
            query = query.where(A.tool == where.tool)
        if where.user is not None:
            query = query.where(or_(A.owner_id == where.user, A.actor == where.user))
        if where.since is not None:
            query = query.where(A.created >= where.since)
        if where.until is not None:
            query = query.where(A.created < where.until)
        if after is not None:
            query = query.where(
                or_(A.created < after.at, and_(A.created == after.at, A.id < after.id))
            )
        rows = [_activity(row._mapping) for row in await self._db.read(all_rows, query)]
        following: Position | None = None
        if len(rows) > limit:
            del rows[limit:]
            following = Position(at=rows[-1].created, id=rows[-1].id)
        return Page(items=rows, next=following)

    async def for_history(self, history_id: str) -> list[ActivityRecord]:
        """Every record of one conversation, oldest first."""
        query = select(activity).where(A.history_id == history_id).order_by(A.created, A.id)
        return [_activity(row._mapping) for row in await self._db.read(all_rows, query)]

    async def approvers_of(self, history_id: str, ask_id: str) -> list[str]:
        """The approvers the gate `ask_id` of the history named when it was asked (its
        ``gate.asked`` record), also after it ended."""
        rows = await self._db.read(all_rows, approvers_query(history_id, ask_id))
        names = rows[0][0].get("approvers") if rows else None
        return [str(n) for n in names] if isinstance(names, list) else []

    async def due(self, now: dt.datetime, *, limit: int = 100) -> list[OpenGate]:
        """Open gates past their expiry, or past their reminder and not yet reminded."""
        query = (
            select(open_gates)
            .where(
                or_(
                    G.expires <= now,
                    and_(G.remind <= now, G.reminded.is_(None)),
                )
            )
            .limit(limit)
        )
        return [_gate(row._mapping) for row in await self._db.read(all_rows, query)]

    async def mark_reminded(self, history_id: str, ask_id: str, at: dt.datetime) -> bool:
        """Mark the gate as reminded, once: False when another process did it first or the
        gate is gone."""
        statement = (
            update(open_gates)
            .where(G.history_id == history_id, G.ask_id == ask_id, G.reminded.is_(None))
            .values(reminded=at)
        )
        return await self._db.write(row_count, statement) > 0

    async def remind(
        self,
        history_id: str,
        ask_id: str,
        at: dt.datetime,
        *,
        records: list[ActivityRecord],
        events: list[Any],
    ) -> bool:
        """Mark the gate as reminded once (as `mark_reminded`) and, in the same transaction,
        write `records` and keep `events` in the event outbox; False (nothing written) when
        another process did it first or the gate is gone."""
        kept = self._outbox.wanted(events)
        statement = (
            update(open_gates)
            .where(G.history_id == history_id, G.ask_id == ask_id, G.reminded.is_(None))
            .values(reminded=at)
        )

        def write(connection: Connection) -> bool:
            if connection.execute(statement).rowcount == 0:
                return False
            insert_audit(connection, records)
            insert_outbox_events(connection, kept)
            return True

        return await self._db.write(write)

    async def drop(self, history_id: str, ask_id: str) -> None:
        """Forget an open gate whose ask is gone (answered elsewhere, or its history deleted)."""
        statement = delete(open_gates).where(G.history_id == history_id, G.ask_id == ask_id)
        await self._db.write(row_count, statement)

    async def get(self, history_id: str) -> OpenGate | None:
        query = select(open_gates).where(G.history_id == history_id)
        rows = await self._db.read(all_rows, query)
        return _gate(rows[0]._mapping) if rows else None

    async def for_approver(
        self, user_id: str, *, is_admin: bool, limit: int = 200
    ) -> list[OpenGate]:
        """The open gates `user_id` is an approver of, oldest first (at most `limit`)."""
        query = select(open_gates).where(G.approvers.is_not(None)).order_by(G.created, G.history_id)
        gates = [_gate(row._mapping) for row in await self._db.read(all_rows, query)]
        return [g for g in gates if g.approver(user_id, is_admin=is_admin)][:limit]


def approvers_query(history_id: str, ask_id: str) -> Select[tuple[Any]]:
    """The ``changes`` of the gate `ask_id`'s ``gate.asked`` record in the history: a lookup
    in the partial index of those records (``ix_activity_gate_asked``)."""
    return select(activity.c.changes).where(
        A.history_id == history_id, A.subject == ask_id, _GATE_ASKED
    )
