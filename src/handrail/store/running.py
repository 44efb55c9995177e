"""Running turns: what each turn running now does, readable from every process.

A `RunningTurn` is one row per conversation with a running turn: the turn's id, the process
that runs it (`owner`), its phase as its last ``turn.progress`` event said (``starting``
before the first), the tool it runs (its name, title and call id), since when, and until when
the row holds. The process that runs the turn writes it (`RunningRepo.flush`, many at once)
and renews every row it holds with one statement (`RunningRepo.renew`); a row whose `until`
passed belongs to a process that stopped and reads as nothing, so a crash never leaves a
conversation shown as running.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from handrail._util import iso, title_from_name
from handrail.store.db import Database, row_count
from handrail.store.prepared import Prepared
from handrail.store.tables import running_turns

__all__ = ["RunningRepo", "RunningTurn"]

U = running_turns.c

_GET = Prepared(
    select(running_turns).where(
        U.history_id == bindparam("history_id"), U.until >= bindparam("now", type_=U.until.type)
    )
)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunningTurn:
    """A turn running now: its phase (``starting``, ``thinking``, ``tool``, ``stopping``),
    the tool it runs in phase ``tool``, and since when it is in that phase."""

    history_id: str
    turn_id: str
    owner: str
    phase: str
    since: dt.datetime
    until: dt.datetime
    tool_name: str | None = None
    tool_call_id: str | None = None
    #: The tool's title for the person (None in a row written before titles were kept: the
    #: view then gives one made from its name).
    tool_title: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The history view's ``running``: ``{turnId, phase, tool?: {toolName, toolTitle,
        toolCallId}, since}``."""
        out: dict[str, Any] = {"turnId": self.turn_id, "phase": self.phase}
        if self.tool_name is not None:
            out["tool"] = {
                "toolName": self.tool_name,
                "toolTitle": self.tool_title or title_from_name(self.tool_name),
                "toolCallId": self.tool_call_id,
            }
        out["since"] = iso(self.since)
        return out


class RunningRepo:
    """Reads and writes the running turns."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, history_id: str, *, now: dt.datetime) -> RunningTurn | None:
        """The conversation's running turn, unless its row lapsed before `now`."""
        row = await self._db.read(_GET.first, {"history_id": history_id, "now": now})
        return None if row is None else _running(row)

    async def flush(self, owner: str, put: Sequence[RunningTurn], drop: Sequence[str]) -> None:
        """In one transaction: hold a row for each of `put` (replacing the conversation's row
        of any process) and remove `owner`'s rows of the conversations `drop` names."""
        if put or drop:
            await self._db.write(_flush, owner, list(put), list(drop))

    async def renew(self, owner: str, *, until: dt.datetime, now: dt.datetime) -> int:
        """Move every row of `owner` on to `until`, and remove the rows that lapsed before
        `now` (of processes that stopped); how many rows `owner` holds."""
        return await self._db.write(_renew, owner, until, now)


def _flush(connection: Connection, owner: str, put: list[RunningTurn], drop: list[str]) -> None:
    if drop:
        connection.execute(delete(running_turns).where(U.owner == owner, U.history_id.in_(drop)))
    if put:
        connection.execute(
            delete(running_turns).where(U.history_id.in_([r.history_id for r in put]))
        )
        connection.execute(insert(running_turns), [_values(r) for r in put])


def _renew(connection: Connection, owner: str, until: dt.datetime, now: dt.datetime) -> int:
    connection.execute(delete(running_turns).where(U.until < now, U.owner != owner))
    return row_count(connection, update(running_turns).where(U.owner == owner).values(until=until))


def _values(running: RunningTurn) -> dict[str, Any]:
    return {
        "history_id": running.history_id,
        "turn_id": running.turn_id,
        "owner": running.owner,
        "phase": running.phase,
        "tool_name": running.tool_name,
        "tool_call_id": running.tool_call_id,
        "tool_title": running.tool_title,
        "since": running.since,
        "until": running.until,
    }


def _running(row: Mapping[str, Any]) -> RunningTurn:
    return RunningTurn(
        history_id=row["history_id"],
        turn_id=row["turn_id"],
        owner=row["owner"],
        phase=row["phase"],
        since=row["since"],
        until=row["until"],
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        tool_title=row["tool_title"],
    )
