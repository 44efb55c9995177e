"""Saved connections and the activity log of admins' changes.

A connection row holds no secret in the clear: `ConnectionRecord.secrets` is the ciphertext the
connections layer made (one Fernet token), and `secret_keys` only names what it holds. An
admin's change is a compare-and-set on the row's `version` (`ConnectionConflict` for the loser);
the status and the tool listing a process writes after starting it leave the version alone, so
they never make another process restart its link. So do the tokens a sign-in or a refresh
saves: those are written as a change of the secrets stored when the write runs (`SecretsChange`,
in the write's transaction), never as a copy of the secrets a process read earlier, which would
undo an admin's change of the secrets made meanwhile in another process (and an admin's change
keeps the tokens saved meanwhile the same way).

The activity log records who changed what and when; its `changes` name fields and carry only
public values (the caller builds them: never a secret).
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from sqlalchemy import Connection, and_, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from handrail._frozen import slot_init
from handrail._util import iso, new_id, utc_now
from handrail.errors import Conflict, NotFound
from handrail.store.db import Database, all_rows, first_row, row_count
from handrail.store.paging import Page, Position, checked_limit
from handrail.store.tables import activity, connections

__all__ = [
    "ActivityRecord",
    "ActivityRepo",
    "ConnectionConflict",
    "ConnectionNotFound",
    "ConnectionRecord",
    "ConnectionRepo",
    "PrefixTaken",
    "SecretsChange",
]

#: The sealed secrets to store, as a function of those stored when the write runs (None: none):
#: it runs in the write's transaction, on the row as it is then.
SecretsChange: TypeAlias = Callable[[str | None], str | None]

C = connections.c
A = activity.c


class ConnectionNotFound(NotFound):
    """No saved connection has that id."""


class ConnectionConflict(Conflict):
    """The connection changed since it was read: nothing was written; read it and try again."""


class PrefixTaken(Conflict):
    """Another connection's tools already start with this prefix (a name too much alike)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionRecord:
    """One saved connection (see `handrail.store.tables.connections`)."""

    id: str
    app: str
    name: str
    prefix: str
    kind: str
    protocol: str = "auto"
    launch: dict[str, Any] | None = None
    settings: dict[str, str] = field(default_factory=dict)
    secrets: str | None = field(default=None, repr=False)
    secret_keys: tuple[str, ...] = ()
    trusted: bool = False
    agents: tuple[str, ...] | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    agent_instructions: dict[str, Any] | None = None
    #: Who must approve its tools' calls, and their clocks (the wire form: ``{approvers?,
    #: quorum?, expiresAfter?, remindAfter?, tools?: {<server's tool name>: {...}}}``), or
    #: None.
    approvals: dict[str, Any] | None = None
    status: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    server_instructions: str | None = None
    call_timeout: float | None = None
    version: int = 1
    created: dt.datetime = field(default_factory=utc_now)
    updated: dt.datetime = field(default_factory=utc_now)


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ActivityRecord:
    """One record of the activity (audit) log: a change an admin made (``connection.*``), or
    a gate asked and how it ended (``gate.*``, with the conversation, its owner and the tool)."""

    id: str
    actor: str
    action: str
    subject: str
    changes: dict[str, Any]
    created: dt.datetime
    history_id: str | None = None
    owner_id: str | None = None
    tool: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "actor": self.actor,
            "action": self.action,
            "subject": self.subject,
            "changes": self.changes,
            "created": iso(self.created),
        }
        if self.history_id is not None:
            out["historyId"] = self.history_id
        if self.owner_id is not None:
            out["ownerId"] = self.owner_id
        if self.tool is not None:
            out["tool"] = self.tool
        return out


#: The fields an admin's change may set (`ConnectionRepo.update`).
CHANGEABLE: frozenset[str] = frozenset(
    {
        "name",
        "prefix",
        "launch",
        "protocol",
        "settings",
        "secrets",
        "secret_keys",
        "trusted",
        "agents",
        "overrides",
        "agent_instructions",
        "approvals",
        "call_timeout",
    }
)


class ConnectionRepo:
    """Saved connections by id."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, record: ConnectionRecord) -> ConnectionRecord:
        """Save a new connection; `PrefixTaken` when its prefix is another's."""
        try:
            await self._db.write(row_count, insert(connections).values(_values(record)))
        except IntegrityError:
            raise PrefixTaken(
                f"Another connection's tools already start with {record.prefix!r}."
            ) from None
        return record

    async def get(self, connection_id: str) -> ConnectionRecord | None:
        row = await self._db.read(first_row, select(connections).where(C.id == connection_id))
        return None if row is None else _record(row._mapping)

    async def list(self) -> builtins.list[ConnectionRecord]:
        """Every saved connection, oldest first."""
        query = select(connections).order_by(C.created, C.id)
        return [_record(row._mapping) for row in await self._db.read(all_rows, query)]

    async def versions(self) -> dict[str, int]:
        """Each connection's id and version: what a process compares with its links."""
        rows = await self._db.read(all_rows, select(C.id, C.version))
        return {row.id: row.version for row in rows}

    async def update(
        self, connection_id: str, version: int, changes: Mapping[str, Any]
    ) -> ConnectionRecord:
        """Apply an admin's `changes` (fields of `CHANGEABLE`) when the row is still at
        `version`; the version grows by one. `ConnectionNotFound`, `ConnectionConflict` or
        `PrefixTaken` otherwise, and nothing is written. ``secrets`` may be a `SecretsChange`,
        applied to the secrets stored when the update runs: the tokens a sign-in saved since
        the row was read leave the version alone, so a change made from an older copy would
        drop them."""
        unknown = set(changes) - CHANGEABLE
        if unknown:
            raise ValueError(f"These fields cannot be changed: {sorted(unknown)}")
        values = {k: (list(v) if isinstance(v, tuple) else v) for k, v in changes.items()}
        secrets = cast(
            "SecretsChange | None",
            values.pop("secrets") if callable(values.get("secrets")) else None,
        )
        values["version"] = version + 1
        values["updated"] = utc_now()
        statement = (
            update(connections).where(C.id == connection_id, C.version == version).values(values)
        )
        try:
            changed, found = await self._db.write(
                _update_and_read, statement, connection_id, secrets
            )
        except IntegrityError:
            raise PrefixTaken(
                f"Another connection's tools already start with {changes.get('prefix')!r}."
            ) from None
        if found is None:
            raise ConnectionNotFound(f"No connection has the id {connection_id!r}.")
        if not changed:
            raise ConnectionConflict(
                "The connection changed since it was read; read it again and repeat the change."
            )
        return found

    async def set_status(
        self,
        connection_id: str,
        status: Mapping[str, Any],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        server_instructions: str | None = None,
        version: int | None = None,
    ) -> bool:
        """Write how the connection's start went (and its listing); the version stays. With
        `version`, only while the row is still at it: a link started for an older version
        (an admin changed the connection since, and the links start again) never writes over
        the status and listing of the newer one. Whether it was written."""
        values: dict[str, Any] = {"status": dict(status)}
        if tools is not None:
            values["tools"] = [dict(t) for t in tools]
            values["server_instructions"] = server_instructions
        where = (
            C.id == connection_id
            if version is None
            else and_(C.id == connection_id, C.version == version)
        )
        statement = update(connections).where(where).values(values)
        return await self._db.write(row_count, statement) > 0

    async def change_secrets(self, connection_id: str, change: SecretsChange) -> str | None:
        """Store ``change(secrets stored now)`` as the connection's sealed secrets, in one
        transaction, and return it: for what a sign-in or a token refresh renewed (its OAuth
        tokens), which must keep whatever else was changed since the caller read the row.
        The version stays, so no process restarts its link for it. `ConnectionNotFound` when
        the connection is gone."""
        written = await self._db.write(_change_secrets, connection_id, change)
        if written is _GONE:
            raise ConnectionNotFound(f"No connection has the id {connection_id!r}.")
        return cast(str | None, written)

    async def delete(self, connection_id: str) -> bool:
        statement = delete(connections).where(C.id == connection_id)
        return await self._db.write(row_count, statement) > 0


class ActivityRepo:
    """The activity log, newest first."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self, *, actor: str, action: str, subject: str, changes: Mapping[str, Any]
    ) -> ActivityRecord:
        record = ActivityRecord(
            id=new_id(),
            actor=actor,
            action=action,
            subject=subject,
            changes=dict(changes),
            # To the microsecond (not utc_now's millisecond): the log's order is the order of
            # the changes, even for several in one millisecond.
            created=dt.datetime.now(dt.UTC),
        )
        values = {
            "id": record.id,
            "actor": record.actor,
            "action": record.action,
            "subject": record.subject,
            "changes": record.changes,
            "created": record.created,
        }
        await self._db.write(row_count, insert(activity).values(values))
        return record

    async def list_page(self, *, limit: int, after: Position | None = None) -> Page[ActivityRecord]:
        """One page of the log, newest first, after `after`."""
        checked_limit(limit)
        # The admins' changes only: the gate records of the audit log name a conversation.
        query = (
            select(activity)
            .where(A.history_id.is_(None))
            .order_by(A.created.desc(), A.id.desc())
            .limit(limit + 1)
        )
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


#: `_change_secrets` found no row.
_GONE: Any = object()


def _stored_secrets(connection: Connection, connection_id: str) -> Any:
    """The row's sealed secrets, the row locked until the transaction ends (on SQLite the write
    transaction holds the database's lock already), or `_GONE`."""
    row = connection.execute(
        select(C.secrets).where(C.id == connection_id).with_for_update()
    ).first()
    return _GONE if row is None else row[0]


def _change_secrets(connection: Connection, connection_id: str, change: SecretsChange) -> Any:
    stored = _stored_secrets(connection, connection_id)
    if stored is _GONE:
        return _GONE
    secrets = change(stored)
    connection.execute(update(connections).where(C.id == connection_id).values(secrets=secrets))
    return secrets


def _update_and_read(
    connection: Connection,
    statement: Any,
    connection_id: str,
    secrets: SecretsChange | None = None,
) -> tuple[bool, ConnectionRecord | None]:
    """Whether the update changed the row, and the row as it is now. With `secrets`, the
    update also stores it applied to the secrets stored now."""
    if secrets is not None:
        stored = _stored_secrets(connection, connection_id)
        if stored is not _GONE:
            statement = statement.values(secrets=secrets(stored))
    changed = connection.execute(statement).rowcount > 0
    row = connection.execute(select(connections).where(C.id == connection_id)).first()
    return changed, None if row is None else _record(row._mapping)


def _values(record: ConnectionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "app": record.app,
        "name": record.name,
        "prefix": record.prefix,
        "kind": record.kind,
        "launch": record.launch,
        "protocol": record.protocol,
        "settings": dict(record.settings),
        "secrets": record.secrets,
        "secret_keys": list(record.secret_keys),
        "trusted": record.trusted,
        "agents": None if record.agents is None else list(record.agents),
        "overrides": dict(record.overrides),
        "agent_instructions": record.agent_instructions,
        "approvals": record.approvals,
        "status": dict(record.status),
        "tools": list(record.tools),
        "server_instructions": record.server_instructions,
        "call_timeout": record.call_timeout,
        "version": record.version,
        "created": record.created,
        "updated": record.updated,
    }


def _record(row: Mapping[Any, Any]) -> ConnectionRecord:
    agents = row["agents"]
    return ConnectionRecord(
        id=row["id"],
        app=row["app"],
        name=row["name"],
        prefix=row["prefix"],
        kind=row["kind"],
        launch=row["launch"],
        protocol=row["protocol"],
        settings=dict(row["settings"] or {}),
        secrets=row["secrets"],
        secret_keys=tuple(row["secret_keys"] or ()),
        trusted=bool(row["trusted"]),
        agents=None if agents is None else tuple(agents),
        overrides=dict(row["overrides"] or {}),
        agent_instructions=row["agent_instructions"],
        approvals=row["approvals"],
        status=dict(row["status"] or {}),
        tools=list(row["tools"] or []),
        server_instructions=row["server_instructions"],
        call_timeout=row["call_timeout"],
        version=row["version"],
        created=row["created"],
        updated=row["updated"],
    )


def _activity(row: Mapping[Any, Any]) -> ActivityRecord:
    return ActivityRecord(
        id=row["id"],
        actor=row["actor"],
        action=row["action"],
        subject=row["subject"],
        changes=dict(row["changes"] or {}),
        created=row["created"],
        history_id=row["history_id"],
        owner_id=row["owner_id"],
        tool=row["tool"],
    )
