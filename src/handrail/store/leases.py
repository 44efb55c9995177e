"""Turn leases: who runs the rest of a turn after a committed answer or message.

A lease is written in the transaction of the history change that starts the work (an answer,
or a message that cancelled a pending ask) and removed in the transaction that ends it, so a
history never has committed input without either a reply or a lease. The process that holds it
renews it with `LeaseRepo.heartbeat`; once `until` passes, `LeaseRepo.claim` lets exactly one
other process take it over (a compare-and-set on the owner and the moment it lapsed).
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from handrail.errors import Conflict
from handrail.store.db import Database, all_rows, first_row, row_count, unsynced
from handrail.store.json_rows import JsonRows
from handrail.store.prepared import AtLeastOne, Prepared
from handrail.store.records import TurnLease
from handrail.store.tables import turn_leases

__all__ = [
    "LEASE_JSON",
    "LeaseLost",
    "LeaseRepo",
    "lease_from",
    "lease_of",
    "release_lease",
    "write_lease",
]

L = turn_leases.c
_OF_HISTORY = Prepared(select(turn_leases).where(L.history_id == bindparam("history_id")))
#: `lease_of` as one column (no row or one), for the reads that go in one statement.
LEASE_JSON = JsonRows(
    select(turn_leases).where(L.history_id == bindparam("history_id")), order_by=(), name="lease"
)
_DROP = Prepared(delete(turn_leases).where(L.history_id == bindparam("history_id")))
_DROP_OWNED = Prepared(
    delete(turn_leases).where(
        L.history_id == bindparam("history_id"), L.owner == bindparam("lease_owner")
    )
)


def _upsert(make: Any) -> Prepared:
    """An insert of a lease that replaces the history's lease if it has one, made with
    `make` (PostgreSQL's or SQLite's ``insert``: both write ``INSERT ... ON CONFLICT DO
    UPDATE``): one statement, not a delete and an insert, for the same row."""
    replace = make(turn_leases).values(
        history_id=bindparam("history_id", type_=L.history_id.type),
        owner=bindparam("lease_owner", type_=L.owner.type),
        until=bindparam("until", type_=L.until.type),
        state=bindparam("state", type_=L.state.type),
        created=bindparam("created", type_=L.created.type),
    )
    return Prepared(
        replace.on_conflict_do_update(
            index_elements=[L.history_id],
            set_={
                "owner": replace.excluded.owner,
                "until": replace.excluded.until,
                "state": replace.excluded.state,
                "created": replace.excluded.created,
            },
        )
    )


_UPSERT = _upsert(pg_insert)
_UPSERT_SQLITE = _upsert(sqlite_insert)


class LeaseLost(Conflict):
    """The turn's lease is no longer its process's: another process took the turn over
    (this one was too slow to renew it). Nothing of the change was written."""

    def __init__(self, history_id: str, owner: str) -> None:
        super().__init__(f"The turn of history {history_id} was taken over from {owner}.")
        self.history_id = history_id
        self.owner = owner


class LeaseRepo:
    """Reads, renews and takes over turn leases."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, history_id: str) -> TurnLease | None:
        row = await self._db.read(first_row, select(turn_leases).where(L.history_id == history_id))
        return None if row is None else _lease(row._mapping)

    async def every(self) -> builtins.list[TurnLease]:
        """Every lease (one for each turn that runs with a lease now, anywhere)."""
        return [_lease(row._mapping) for row in await self._db.read(all_rows, select(turn_leases))]

    async def heartbeat(self, history_id: str, owner: str, until: dt.datetime) -> bool:
        """Renew `owner`'s lease to `until`; False when it is no longer theirs (taken over or
        released). The renewal does not wait for the disk (`unsynced`): on SQLite only a power
        loss or an OS crash could undo it, and that stops its holder too, whose lease should
        then lapse; on PostgreSQL a crash of the database server may undo the last renewal,
        leaving the lease what the one before gave (two thirds of a lease past it, with the
        next renewal a third of a lease away)."""
        statement = (
            update(turn_leases)
            .where(L.history_id == history_id, L.owner == owner)
            .values(until=until)
        )
        return bool(await self._db.write(_RENEW, statement))

    async def lapsed(self, now: dt.datetime, *, limit: int = 20) -> builtins.list[TurnLease]:
        """Leases whose holder stopped renewing them before `now`, oldest first."""
        query = select(turn_leases).where(L.until < now).order_by(L.until).limit(limit)
        return [_lease(row._mapping) for row in await self._db.read(all_rows, query)]

    async def claim(
        self, lease: TurnLease, owner: str, until: dt.datetime, now: dt.datetime
    ) -> TurnLease | None:
        """Take a lapsed lease over for `owner` until `until`: exactly one claimant of the same
        lapsed lease wins; None for the others, or when it was renewed or released."""
        return await self._take(lease, owner, until, L.until < now)

    async def hand_over(self, lease: TurnLease, owner: str, until: dt.datetime) -> TurnLease | None:
        """Take `lease` over for `owner` as it was read (its holder asked for it: an answer
        forwarded to the process that holds the call); None when it changed meanwhile."""
        return await self._take(lease, owner, until)

    async def _take(
        self, lease: TurnLease, owner: str, until: dt.datetime, *also: Any
    ) -> TurnLease | None:
        """Give `lease` to `owner` until `until` when it is still as it was read (and `also`
        holds); None when it changed meanwhile."""
        statement = (
            update(turn_leases)
            .where(
                L.history_id == lease.history_id,
                L.owner == lease.owner,
                L.until == lease.until,
                *also,
            )
            .values(owner=owner, until=until)
        )
        if not await self._db.write(row_count, statement):
            return None
        return dataclasses.replace(lease, owner=owner, until=until)

    async def release(self, history_id: str, owner: str) -> bool:
        """Drop `owner`'s lease (when the history it held is gone)."""
        statement = delete(turn_leases).where(L.history_id == history_id, L.owner == owner)
        return bool(await self._db.write(row_count, statement))


#: `row_count` for a lease's renewal (`LeaseRepo.heartbeat`).
_RENEW = unsynced(row_count)


def lease_of(connection: Connection, history_id: str) -> TurnLease | None:
    """The history's lease, in the caller's transaction."""
    row = _OF_HISTORY.first(connection, {"history_id": history_id})
    return None if row is None else _lease(row)


def lease_from(rows: Sequence[Mapping[str, Any]]) -> TurnLease | None:
    """The lease of the rows `LEASE_JSON` decoded (none or one)."""
    return _lease(rows[0]) if rows else None


def write_lease(connection: Connection, lease: TurnLease) -> None:
    """Hold `lease` from now on, in the caller's transaction (replacing any other): one
    statement, an upsert, on PostgreSQL and SQLite."""
    upsert = _UPSERT_SQLITE if connection.dialect.name == "sqlite" else _UPSERT
    upsert.later(
        connection,
        {
            "history_id": lease.history_id,
            "lease_owner": lease.owner,
            "until": lease.until,
            "state": lease.state,
            "created": lease.created,
        },
    )


def release_lease(connection: Connection, history_id: str, owner: str | None = None) -> None:
    """Remove the history's lease (only `owner`'s, when given: `LeaseLost` otherwise), in the
    caller's transaction."""
    if owner is None:
        _DROP.later(connection, {"history_id": history_id})
        return

    _DROP_OWNED.later(
        connection,
        {"history_id": history_id, "lease_owner": owner},
        AtLeastOne(functools.partial(LeaseLost, history_id, owner)),
    )


def _lease(row: Mapping[Any, Any]) -> TurnLease:
    return TurnLease(
        history_id=row["history_id"],
        owner=row["owner"],
        until=row["until"],
        state=dict(row["state"]),
        created=row["created"],
    )
