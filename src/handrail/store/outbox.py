"""The outbox of webhooks and emails, its delivery log, and the one-time links of emails.

A delivery is written once per event and target: enqueueing the same event again finds the
first row (the unique ``(channel, target, event_id)``), so an event is delivered at least once
and never queued twice. A process claims a due delivery by moving its `next_attempt` on with a
compare-and-set, so two processes never send it at the same time; after the attempt it records
the outcome (`DeliveryRepo.finish`) and one row of the delivery log.

An answer link is a row per card button of an emailed ask; `AnswerLinkRepo.use` sets its
`used` once, for the one click that answers.

The event outbox (`EventOutbox`) comes first: a history change that makes an event webhooks or
email send (an ask created, reminded, answered or cancelled) writes the event there in its own
transaction (`HistoryChange.events`), once the server's reach said which kinds it sends
(`EventOutbox.keep`). Reach turns an event into its deliveries and removes it in one more
transaction (`DeliveryRepo.enqueue_event`), when it hears the event published or, for one whose
process stopped before publishing it, when it claims it from the outbox (`EventOutbox.claim`).
So a committed change always gets its deliveries, at least once.
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Connection, and_, delete, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from handrail._util import iso, new_sorted_id, utc_now
from handrail.store.db import Database, all_rows, first_row, row_count
from handrail.store.events import UserEvent
from handrail.store.paging import Page, Position, checked_limit
from handrail.store.prepared import Prepared
from handrail.store.tables import answer_links, deliveries, delivery_attempts, outbox_events

__all__ = [
    "AnswerLink",
    "AnswerLinkRepo",
    "Delivery",
    "DeliveryAttempt",
    "DeliveryRepo",
    "DeliveryStatus",
    "EventOutbox",
    "insert_outbox_events",
]

D = deliveries.c
T = delivery_attempts.c
L = answer_links.c
E = outbox_events.c

DeliveryStatus = Literal["pending", "delivered", "failed"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Delivery:
    """One event on its way to one target (a webhook's name, or a user for an email)."""

    id: str
    event_id: str
    channel: str
    target: str
    user_id: str
    kind: str
    payload: dict[str, Any]
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_attempt: dt.datetime = field(default_factory=utc_now)
    last_error: str | None = None
    created: dt.datetime = field(default_factory=utc_now)
    updated: dt.datetime = field(default_factory=utc_now)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "eventId": self.event_id,
            "channel": self.channel,
            "target": self.target,
            "userId": self.user_id,
            "type": self.kind,
            "status": self.status,
            "attempts": self.attempts,
            "nextAttempt": iso(self.next_attempt) if self.status == "pending" else None,
            "lastError": self.last_error,
            "created": iso(self.created),
            "updated": iso(self.updated),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryAttempt:
    """One attempt of a delivery: the receiver's HTTP status, or what went wrong."""

    id: str
    delivery_id: str
    attempt: int
    status_code: int | None
    error: str | None
    duration_ms: int
    created: dt.datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "statusCode": self.status_code,
            "error": self.error,
            "durationMs": self.duration_ms,
            "created": iso(self.created),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class AnswerLink:
    """A one-time link that presses one button of one pending ask, for one user."""

    id: str
    user_id: str
    history_id: str
    tool_call_id: str
    button_id: str
    expires: dt.datetime
    used: dt.datetime | None = None
    created: dt.datetime = field(default_factory=utc_now)


def new_delivery(
    *,
    event_id: str,
    channel: str,
    target: str,
    user_id: str,
    kind: str,
    payload: Mapping[str, Any],
) -> Delivery:
    now = utc_now()
    return Delivery(
        id=new_sorted_id(),
        event_id=event_id,
        channel=channel,
        target=target,
        user_id=user_id,
        kind=kind,
        payload=dict(payload),
        next_attempt=now,
        created=now,
        updated=now,
    )


class EventOutbox:
    """The events committed changes made for webhooks and email, until reach queued their
    deliveries. `kinds` are the kinds kept: none until `keep` (a server without webhooks or
    email keeps nothing)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.kinds: frozenset[str] = frozenset()

    def keep(self, kinds: Iterable[str]) -> None:
        """From now on, keep the events of `kinds` that history changes carry."""
        self.kinds = frozenset(kinds)

    def wanted(self, events: Sequence[Any]) -> builtins.list[UserEvent]:
        """The events of `events` the outbox keeps."""
        return [e for e in events if isinstance(e, UserEvent) and e.kind in self.kinds]

    async def claim(
        self, *, now: dt.datetime, hold: dt.timedelta, limit: int = 50
    ) -> builtins.list[UserEvent]:
        """Up to `limit` events no process holds (oldest first), each held for `hold`."""
        return await self._db.write(_claim_events, now, hold, limit)

    async def count(self) -> int:
        """How many events wait in the outbox."""
        return int(await self._db.read(_scalar, select(func.count()).select_from(outbox_events)))


_INSERT_EVENTS = Prepared(insert(outbox_events))


def insert_outbox_events(connection: Connection, events: Sequence[UserEvent]) -> None:
    """Keep `events` in the outbox, in the caller's transaction (batched with the change's
    other statements on PostgreSQL, see `handrail.store.prepared`)."""
    if events:
        now = utc_now()
        _INSERT_EVENTS.later(
            connection,
            [
                {
                    "id": e.id,
                    "kind": e.kind,
                    "event": e.to_json(),
                    "created": now,
                    "claimed_until": None,
                }
                for e in events
            ],
        )


class DeliveryRepo:
    """The outbox and its log."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def enqueue_event(
        self,
        event_id: str,
        queued: Sequence[Delivery],
        links: Mapping[str, Sequence[AnswerLink]] | None = None,
    ) -> int:
        """In one transaction: queue each of `queued` that is not queued already (the same
        event for the same target), with its answer links (by delivery id), and remove the
        event from the event outbox. How many deliveries were new."""
        return await self._db.write(_enqueue_event, event_id, list(queued), dict(links or {}))

    async def enqueue(self, delivery: Delivery) -> bool:
        """Queue `delivery`; False when the same event is queued for the target already."""
        try:
            await self._db.write(row_count, insert(deliveries).values(_values(delivery)))
        except IntegrityError:
            return False
        return True

    async def get(self, delivery_id: str) -> Delivery | None:
        row = await self._db.read(first_row, select(deliveries).where(D.id == delivery_id))
        return None if row is None else _delivery(row._mapping)

    async def claim_due(
        self, *, now: dt.datetime, hold: dt.timedelta, limit: int = 20
    ) -> builtins.list[Delivery]:
        """Up to `limit` pending deliveries due by `now`, each claimed for `hold` (its
        `next_attempt` moved on, so no other process takes it meanwhile), oldest first."""
        return await self._db.write(_claim_due, now, hold, limit)

    async def finish(
        self,
        delivery: Delivery,
        *,
        status: DeliveryStatus,
        next_attempt: dt.datetime,
        status_code: int | None,
        error: str | None,
        duration_ms: int,
    ) -> None:
        """Record one attempt of a claimed `delivery` and where it stands now."""
        await self._db.write(
            _finish, delivery, status, next_attempt, status_code, error, duration_ms
        )

    async def list_page(
        self, *, user_id: str | None, limit: int, after: Position | None = None
    ) -> Page[Delivery]:
        """One page of deliveries, newest first: one user's, or everyone's (None)."""
        checked_limit(limit)
        query = select(deliveries).order_by(D.created.desc(), D.id.desc()).limit(limit + 1)
        if user_id is not None:
            query = query.where(D.user_id == user_id)
        if after is not None:
            query = query.where(
                or_(D.created < after.at, and_(D.created == after.at, D.id < after.id))
            )
        rows = [_delivery(row._mapping) for row in await self._db.read(all_rows, query)]
        following: Position | None = None
        if len(rows) > limit:
            del rows[limit:]
            following = Position(at=rows[-1].created, id=rows[-1].id)
        return Page(items=rows, next=following)

    async def attempts(self, delivery_id: str) -> builtins.list[DeliveryAttempt]:
        """The log of one delivery's attempts, first first."""
        query = select(delivery_attempts).where(T.delivery_id == delivery_id).order_by(T.attempt)
        return [_attempt(row._mapping) for row in await self._db.read(all_rows, query)]


class AnswerLinkRepo:
    """The one-time links of emails."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, links: builtins.list[AnswerLink]) -> None:
        if links:
            await self._db.write(_insert_links, links)

    async def get(self, link_id: str) -> AnswerLink | None:
        row = await self._db.read(first_row, select(answer_links).where(L.id == link_id))
        return None if row is None else _link(row._mapping)

    async def use(self, link_id: str, *, now: dt.datetime) -> bool:
        """Mark the link used; False when it was used already (the other click won)."""
        statement = update(answer_links).where(L.id == link_id, L.used.is_(None)).values(used=now)
        return await self._db.write(row_count, statement) > 0

    async def release(self, link_id: str) -> None:
        """Make a link usable again (its answer was refused before anything was written)."""
        await self._db.write(
            row_count, update(answer_links).where(L.id == link_id).values(used=None)
        )


# --- statements -------------------------------------------------------------------------------


def _scalar(connection: Connection, statement: Any) -> Any:
    return connection.execute(statement).scalar_one()


def _claim_events(
    connection: Connection, now: dt.datetime, hold: dt.timedelta, limit: int
) -> builtins.list[UserEvent]:
    free = or_(E.claimed_until.is_(None), E.claimed_until < now)
    query = select(E.id, E.event, E.claimed_until).where(free).order_by(E.created).limit(limit)
    claimed: builtins.list[UserEvent] = []
    for row in connection.execute(query).all():
        held = (
            E.claimed_until.is_(None)
            if row.claimed_until is None
            else (E.claimed_until == row.claimed_until)
        )
        statement = (
            update(outbox_events).where(E.id == row.id, held).values(claimed_until=now + hold)
        )
        if connection.execute(statement).rowcount > 0:
            claimed.append(UserEvent.from_json(row.event))
    return claimed


def _enqueue_event(
    connection: Connection,
    event_id: str,
    queued: builtins.list[Delivery],
    links: dict[str, Sequence[AnswerLink]],
) -> int:
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    new = 0
    for delivery in queued:
        statement = dialect.insert(deliveries).values(_values(delivery)).on_conflict_do_nothing()
        if connection.execute(statement).rowcount > 0:
            new += 1
            _insert_links(connection, list(links.get(delivery.id, ())))
    connection.execute(delete(outbox_events).where(E.id == event_id))
    return new


def _claim_due(
    connection: Connection, now: dt.datetime, hold: dt.timedelta, limit: int
) -> builtins.list[Delivery]:
    query = (
        select(deliveries)
        .where(D.status == "pending", D.next_attempt <= now)
        .order_by(D.next_attempt, D.id)
        .limit(limit)
    )
    claimed: builtins.list[Delivery] = []
    for row in connection.execute(query).all():
        found = _delivery(row._mapping)
        statement = (
            update(deliveries)
            .where(D.id == found.id, D.next_attempt == found.next_attempt, D.status == "pending")
            .values(next_attempt=now + hold)
        )
        if connection.execute(statement).rowcount > 0:
            claimed.append(found)
    return claimed


def _finish(
    connection: Connection,
    delivery: Delivery,
    status: DeliveryStatus,
    next_attempt: dt.datetime,
    status_code: int | None,
    error: str | None,
    duration_ms: int,
) -> None:
    now = utc_now()
    attempt = delivery.attempts + 1
    connection.execute(
        update(deliveries)
        .where(D.id == delivery.id)
        .values(
            status=status,
            attempts=attempt,
            next_attempt=next_attempt,
            last_error=error,
            updated=now,
        )
    )
    connection.execute(
        insert(delivery_attempts).values(
            id=new_sorted_id(),
            delivery_id=delivery.id,
            attempt=attempt,
            status_code=status_code,
            error=error,
            duration_ms=duration_ms,
            created=now,
        )
    )


def _insert_links(connection: Connection, links: builtins.list[AnswerLink]) -> None:
    if not links:
        return
    connection.execute(
        insert(answer_links),
        [
            {
                "id": link.id,
                "user_id": link.user_id,
                "history_id": link.history_id,
                "tool_call_id": link.tool_call_id,
                "button_id": link.button_id,
                "expires": link.expires,
                "used": link.used,
                "created": link.created,
            }
            for link in links
        ],
    )


def _values(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "event_id": delivery.event_id,
        "channel": delivery.channel,
        "target": delivery.target,
        "user_id": delivery.user_id,
        "kind": delivery.kind,
        "payload": delivery.payload,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt": delivery.next_attempt,
        "last_error": delivery.last_error,
        "created": delivery.created,
        "updated": delivery.updated,
    }


def _delivery(row: Mapping[Any, Any]) -> Delivery:
    return Delivery(
        id=row["id"],
        event_id=row["event_id"],
        channel=row["channel"],
        target=row["target"],
        user_id=row["user_id"],
        kind=row["kind"],
        payload=dict(row["payload"] or {}),
        status=row["status"],
        attempts=row["attempts"],
        next_attempt=row["next_attempt"],
        last_error=row["last_error"],
        created=row["created"],
        updated=row["updated"],
    )


def _attempt(row: Mapping[Any, Any]) -> DeliveryAttempt:
    return DeliveryAttempt(
        id=row["id"],
        delivery_id=row["delivery_id"],
        attempt=row["attempt"],
        status_code=row["status_code"],
        error=row["error"],
        duration_ms=row["duration_ms"],
        created=row["created"],
    )


def _link(row: Mapping[Any, Any]) -> AnswerLink:
    return AnswerLink(
        id=row["id"],
        user_id=row["user_id"],
        history_id=row["history_id"],
        tool_call_id=row["tool_call_id"],
        button_id=row["button_id"],
        expires=row["expires"],
        used=row["used"],
        created=row["created"],
    )
