"""Confirmations: prepared side-effecting HTTP requests, held until the person confirms them.

A confirmation is created ``pending`` with its prepared request, a digest binding it to its
context, a preview and an expiry. Confirming it is `ConfirmationRepo.consume`: one
compare-and-set ``UPDATE`` from ``pending`` to ``consumed``, only while it is unexpired and its
digest matches, made *before* the request is sent, so of two confirms at the same moment (in one
process or several) exactly one wins and the other gets `ConfirmationConflict`. The consumer
holds a lease while it sends, then records the outcome with `finish`. If it dies first, the
lease runs out and `reconcile` marks the confirmation ``uncertain``: it is never sent again by
itself.

    record = await store.confirmations.create(history_id=..., request=..., digest=..., ...)
    consumed = await store.confirmations.consume(record.id, digest=digest, lease_ms=60_000)
    ...  # send consumed.request
    await store.confirmations.finish(record.id, state="succeeded", outcome=result)

States (`ConfirmationState`)::

    pending --consume--> consumed --finish--> succeeded | failed
       |                    '--lease ends, reconcile--> uncertain --finish--> succeeded | failed
       '--cancel--> cancelled,  --mark_stale--> stale
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from sqlalchemy import ColumnElement, Connection, bindparam, insert, select, update
from sqlalchemy.sql.dml import Update

from handrail._util import iso, new_id, utc_now
from handrail.errors import Conflict, NotFound
from handrail.store.db import Database, all_rows, first_row
from handrail.store.json_rows import JsonRows
from handrail.store.prepared import Prepared
from handrail.store.records import ConfirmationRecord, ConfirmationState
from handrail.store.tables import confirmations

__all__ = [
    "CONFIRMATIONS_JSON",
    "CONFIRMATION_STALE",
    "ConfirmationConflict",
    "ConfirmationNotFound",
    "ConfirmationNotSending",
    "ConfirmationRepo",
    "confirmation_not_found",
    "confirmation_of",
    "confirmation_records",
    "confirmations_of",
]

C = confirmations.c
_OF_HISTORY = Prepared(
    select(confirmations).where(C.history_id == bindparam("history_id")).order_by(C.created, C.id)
)
#: `confirmations_of` as one column, for the reads that go in one statement (PostgreSQL).
CONFIRMATIONS_JSON = JsonRows(
    select(confirmations).where(C.history_id == bindparam("history_id")),
    order_by=("created", "id"),
    name="confirmations",
)

#: The problem code of a confirm that came too late, for a changed context, or twice.
CONFIRMATION_STALE: Final = "CONFIRMATION_STALE"

#: The states `finish` records.
FinishedState = Literal["succeeded", "failed"]
_FINISHED: Final[tuple[FinishedState, ...]] = ("succeeded", "failed")

#: Why a change was refused: the confirmation is in another state (``state``), it expired
#: (``expired``), or it was prepared for another context (``digest``).
ConflictReason = Literal["state", "expired", "digest"]


class ConfirmationConflict(Conflict):
    """A change the confirmation's state does not allow: nothing was written.

    `state` is the confirmation's state when it was refused, and `reason` says why:
    ``"state"`` (it is not in a state the change starts from), ``"expired"`` or ``"digest"``
    (a confirm for a changed context). A refused confirm or cancel has the code
    `CONFIRMATION_STALE`.
    """

    def __init__(
        self,
        confirmation_id: str,
        *,
        state: ConfirmationState,
        reason: ConflictReason,
        detail: str,
        code: str | None = CONFIRMATION_STALE,
    ) -> None:
        super().__init__(detail, code=code)
        self.confirmation_id = confirmation_id
        self.state = state
        self.reason = reason


class ConfirmationNotSending(ConfirmationConflict):
    """An outcome recorded for a confirmation that is not being sent (not consumed)."""


class ConfirmationNotFound(NotFound):
    """No confirmation has that id."""


def confirmation_not_found(confirmation_id: str) -> ConfirmationNotFound:
    """The error for a confirmation that does not exist."""
    return ConfirmationNotFound(f"No confirmation {confirmation_id}.")


class ConfirmationRepo:
    """Creates confirmations and moves them through their states, each move a compare-and-set
    on the state it starts from. Unknown ids raise `NotFound` (`get` gives None)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        *,
        history_id: str,
        user_id: str,
        connection_id: str,
        tool_name: str,
        tool_call_id: str,
        request: Mapping[str, Any],
        digest: str,
        preview: Mapping[str, Any],
        expires_at: dt.datetime,
    ) -> ConfirmationRecord:
        """Store a ``pending`` confirmation and return it.

        `request` is the prepared request's stored form: it must hold no secret (credentials
        are added when it is sent). The order of `preview`'s fields is kept on every backend.
        `expires_at` must be timezone-aware (`ValueError`).
        """
        if not digest:
            raise ValueError("A confirmation needs a non-empty digest.")
        _check_aware(expires_at, "expires_at")
        now = utc_now()
        values: dict[str, Any] = {
            "id": new_id(),
            "history_id": history_id,
            "user_id": user_id,
            "connection_id": connection_id,
            "tool_name": tool_name,
            "tool_call_id": tool_call_id,
            "request": dict(request),
            "digest": digest,
            "preview": _stored_preview(preview),
            "expires_at": expires_at,
            "state": "pending",
            "lease_until": None,
            "outcome": None,
            "created": now,
            "updated": now,
        }
        row = await self._db.write(
            first_row, insert(confirmations).values(values).returning(*confirmations.c)
        )
        assert row is not None  # an INSERT ... RETURNING gives its row
        return _record(row._mapping)

    async def get(self, confirmation_id: str) -> ConfirmationRecord | None:
        return await self._db.read(confirmation_of, confirmation_id)

    async def for_history(self, history_id: str) -> builtins.list[ConfirmationRecord]:
        """The history's confirmations, oldest first."""
        return await self._db.read(confirmations_of, history_id)

    async def consume(
        self,
        confirmation_id: str,
        *,
        digest: str,
        lease_ms: int,
        now: dt.datetime | None = None,
    ) -> ConfirmationRecord:
        """Confirm: move a ``pending``, unexpired confirmation whose digest is `digest` to
        ``consumed``, leased for `lease_ms` milliseconds from `now` (default: the current
        time), and return it. Call it before sending the request.

        One ``UPDATE ... WHERE state = 'pending' AND digest = ... AND expires_at > now``: of
        several confirms at once exactly one wins. The others, and a late (expired), changed
        (digest) or repeated confirm, raise `ConfirmationConflict` (code
        ``CONFIRMATION_STALE``) and change nothing; `NotFound` for an unknown id.
        """
        if lease_ms <= 0:
            raise ValueError(f"lease_ms must be positive, not {lease_ms!r}.")
        moment = _now(now)
        statement = (
            update(confirmations)
            .where(
                C.id == confirmation_id,
                C.state == "pending",
                C.digest == digest,
                C.expires_at > moment,
            )
            .values(
                state="consumed",
                lease_until=moment + dt.timedelta(milliseconds=lease_ms),
                updated=utc_now(),
            )
            .returning(*confirmations.c)
        )
        changed, current = await self._change(confirmation_id, statement)
        if changed:
            return current
        if current.state != "pending":
            raise _not_pending(current)
        if current.expires_at <= moment:
            raise ConfirmationConflict(
                current.id,
                state=current.state,
                reason="expired",
                detail=f"Confirmation {current.id} expired at {iso(current.expires_at)}; "
                "prepare the action again for a new review.",
            )
        raise ConfirmationConflict(
            current.id,
            state=current.state,
            reason="digest",
            detail=f"Confirmation {current.id} was prepared for another request or context; "
            "prepare the action again for a new review.",
        )

    async def finish(
        self,
        confirmation_id: str,
        *,
        state: FinishedState,
        outcome: Mapping[str, Any],
    ) -> ConfirmationRecord:
        """Record what sending a consumed confirmation gave: ``succeeded`` or ``failed``, with
        the `outcome` (the API's answer or the error). Also accepted once it is ``uncertain``
        (a consumer slower than its lease still knows best). From any other state it raises
        `ConfirmationConflict` and changes nothing."""
        if state not in _FINISHED:
            raise ValueError(f"A finished state is one of {', '.join(_FINISHED)}, not {state!r}.")
        statement = (
            update(confirmations)
            .where(C.id == confirmation_id, C.state.in_(("consumed", "uncertain")))
            .values(state=state, outcome=dict(outcome), updated=utc_now())
            .returning(*confirmations.c)
        )
        changed, current = await self._change(confirmation_id, statement)
        if changed:
            return current
        raise ConfirmationNotSending(
            current.id,
            state=current.state,
            reason="state",
            detail=f"Confirmation {current.id} is {current.state}: only a consumed "
            "confirmation gets an outcome.",
            code=None,
        )

    async def cancel(self, confirmation_id: str, reason: str) -> ConfirmationRecord:
        """Refuse a ``pending`` confirmation (the person declined, or sent a new message):
        it is ``cancelled`` with the outcome ``{"reason": reason}`` and is never sent. Any other
        state raises `ConfirmationConflict` (``CONFIRMATION_STALE``)."""
        return await self._close(confirmation_id, "cancelled", reason)

    async def mark_stale(
        self, confirmation_id: str, *, reason: str | None = None
    ) -> ConfirmationRecord:
        """Retire a ``pending`` confirmation that can no longer be confirmed (it expired, its
        context changed, or recovery replaced it): it is ``stale`` (with the outcome
        ``{"reason": reason}`` when given) and is never sent. Any other state raises
        `ConfirmationConflict` (``CONFIRMATION_STALE``)."""
        return await self._close(confirmation_id, "stale", reason)

    async def find_uncertain(
        self, now: dt.datetime | None = None, *, history_id: str | None = None
    ) -> builtins.list[ConfirmationRecord]:
        """The ``consumed`` confirmations whose lease ended by `now` (default: the current
        time) with no outcome recorded, optionally of one history, oldest lease first: the ones
        `reconcile` makes ``uncertain``."""
        query = select(confirmations).where(_lapsed(_now(now)))
        if history_id is not None:
            query = query.where(C.history_id == history_id)
        query = query.order_by(C.lease_until, C.id)
        return [_record(row._mapping) for row in await self._db.read(all_rows, query)]

    async def reconcile(
        self, confirmation_id: str, now: dt.datetime | None = None
    ) -> ConfirmationRecord:
        """The confirmation as it stands at `now` (default: the current time): a ``consumed``
        one whose lease ended with no outcome is first made ``uncertain`` (a compare-and-set).
        Any other confirmation is returned unchanged. Nothing is ever resent."""
        statement = (
            update(confirmations)
            .where(C.id == confirmation_id, _lapsed(_now(now)))
            .values(state="uncertain", updated=utc_now())
            .returning(*confirmations.c)
        )
        _, current = await self._change(confirmation_id, statement)
        return current

    async def settled(
        self, confirmation_id: str, now: dt.datetime | None = None
    ) -> ConfirmationRecord:
        """`reconcile`, and a ``pending`` confirmation past its expiry made ``stale`` (outcome
        ``{"reason": "expired"}``): what the status route shows, never ``pending`` once it can
        no longer be confirmed."""
        moment = _now(now)
        current = await self.reconcile(confirmation_id, moment)
        if current.state == "pending" and current.expires_at <= moment:
            expire = (
                update(confirmations)
                .where(
                    C.id == confirmation_id,
                    C.state == "pending",
                    C.expires_at <= moment,
                )
                .values(state="stale", outcome={"reason": "expired"}, updated=utc_now())
                .returning(*confirmations.c)
            )
            _, current = await self._change(confirmation_id, expire)
        return current

    async def abandon(self, confirmation_id: str) -> ConfirmationRecord:
        """A ``consumed`` confirmation whose sender is known to be gone (its turn's lease
        lapsed) is ``uncertain`` now, before its own lease ends: it may or may not have been
        sent, and it is never resent. Any other confirmation is returned unchanged."""
        statement = (
            update(confirmations)
            .where(C.id == confirmation_id, C.state == "consumed")
            .values(state="uncertain", updated=utc_now())
            .returning(*confirmations.c)
        )
        _, current = await self._change(confirmation_id, statement)
        return current

    async def _close(
        self,
        confirmation_id: str,
        state: Literal["cancelled", "stale"],
        reason: str | None,
    ) -> ConfirmationRecord:
        statement = (
            update(confirmations)
            .where(C.id == confirmation_id, C.state == "pending")
            .values(
                state=state,
                outcome=None if reason is None else {"reason": reason},
                updated=utc_now(),
            )
            .returning(*confirmations.c)
        )
        changed, current = await self._change(confirmation_id, statement)
        if changed:
            return current
        raise _not_pending(current)

    async def _change(
        self, confirmation_id: str, statement: Update
    ) -> tuple[bool, ConfirmationRecord]:
        """Run the compare-and-set `statement` (an ``UPDATE ... RETURNING``): ``(True, the
        changed record)``, or ``(False, the confirmation as it is)`` when it matched nothing.
        `NotFound` when there is no such confirmation."""
        changed, current = await self._db.write(_change, confirmation_id, statement)
        if current is None:
            raise confirmation_not_found(confirmation_id)
        return changed, current


def _not_pending(current: ConfirmationRecord) -> ConfirmationConflict:
    return ConfirmationConflict(
        current.id,
        state=current.state,
        reason="state",
        detail=f"Confirmation {current.id} is {current.state}, not pending; prepare the action "
        "again for a new review.",
    )


def _lapsed(now: dt.datetime) -> ColumnElement[bool]:
    """Consumed, with the lease ended by `now` and no outcome."""
    return (
        (C.state == "consumed")
        & C.lease_until.is_not(None)
        & (C.lease_until <= now)
        & C.outcome.is_(None)
    )


def _check_aware(moment: dt.datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got {moment!r}.")


def _now(now: dt.datetime | None) -> dt.datetime:
    if now is None:
        return utc_now()
    _check_aware(now, "now")
    return now.astimezone(dt.UTC)


def _stored_preview(preview: Mapping[str, Any]) -> list[list[Any]]:
    """The preview as ``[[name, value], ...]``: JSONB does not keep an object's key order,
    and the person should see the fields in the order the action declares them."""
    return [[str(name), value] for name, value in preview.items()]


def confirmation_of(connection: Connection, confirmation_id: str) -> ConfirmationRecord | None:
    """The confirmation, or None."""
    row = connection.execute(select(confirmations).where(C.id == confirmation_id)).first()
    return None if row is None else _record(row._mapping)


def confirmations_of(connection: Connection, history_id: str) -> list[ConfirmationRecord]:
    """The history's confirmations, oldest first."""
    return [_record(row) for row in _OF_HISTORY.all(connection, {"history_id": history_id})]


def confirmation_records(rows: Sequence[Mapping[str, Any]]) -> list[ConfirmationRecord]:
    """The records of rows `CONFIRMATIONS_JSON` decoded."""
    return [_record(row) for row in rows]


def _change(
    connection: Connection, confirmation_id: str, statement: Update
) -> tuple[bool, ConfirmationRecord | None]:
    row = connection.execute(statement).first()
    if row is not None:
        return True, _record(row._mapping)
    return False, confirmation_of(connection, confirmation_id)


def _record(row: Mapping[Any, Any]) -> ConfirmationRecord:
    return ConfirmationRecord(
        id=row["id"],
        history_id=row["history_id"],
        user_id=row["user_id"],
        connection_id=row["connection_id"],
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        request=row["request"],
        digest=row["digest"],
        preview=dict(row["preview"]),
        expires_at=row["expires_at"],
        state=row["state"],
        lease_until=row["lease_until"],
        outcome=row["outcome"],
        created=row["created"],
        updated=row["updated"],
    )
