"""Permission levels and grants: what a user has said about a connection's tools.

A permission level is one row per ``(user, connection)``, written with an upsert. A grant is a
standing yes to one tool: ``always`` for that user, connection and tool, or ``conversation`` for
one history. A ``once`` answer covers a single call and is never stored. Adding a grant that
exists already returns the existing one: the insert skips on the table's unique indexes
(``ON CONFLICT DO NOTHING``), so two processes adding it at once still leave one row.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, and_, delete, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

from handrail._util import new_id, utc_now
from handrail.errors import Conflict
from handrail.store.db import Backend, Database, all_rows, first_row, row_count
from handrail.store.paging import Page, Position, checked_limit
from handrail.store.records import (
    PERMISSION_LEVELS,
    STORED_GRANT_SCOPES,
    Grant,
    GrantScope,
    PermissionLevel,
    PermissionRecord,
    StoredGrantScope,
)
from handrail.store.tables import grants, permissions

__all__ = ["GrantConflict", "GrantRepo", "PermissionRepo"]


class GrantConflict(Conflict):
    """A grant kept changing while it was being added: nothing was written; try again."""


P = permissions.c
G = grants.c

#: The predicates of the partial unique indexes ``uq_grants_always`` and
#: ``uq_grants_conversation`` (see `handrail.store.tables.grants`), as the conflict targets'
#: ``WHERE``: they must match the indexes' own text.
_SCOPE_PREDICATE: Final[dict[StoredGrantScope, str]] = {
    "always": "scope = 'always'",
    "conversation": "scope = 'conversation'",
}

#: How often `GrantRepo.add` retries when the grant it collided with is revoked meanwhile.
_ADD_ATTEMPTS: Final = 3


class PermissionRepo:
    """Permission levels by ``(user_id, connection_id)``. No row means the user has not chosen
    a level for that connection yet."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, user_id: str, connection_id: str) -> PermissionRecord | None:
        query = select(permissions).where(P.user_id == user_id, P.connection_id == connection_id)
        row = await self._db.read(first_row, query)
        return None if row is None else _permission(row._mapping)

    async def set(
        self, user_id: str, connection_id: str, level: PermissionLevel
    ) -> PermissionRecord:
        """Save `level`, replacing any level saved before. An unknown level raises
        `ValueError` and writes nothing."""
        if level not in PERMISSION_LEVELS:
            raise ValueError(
                f"A permission level is one of {', '.join(PERMISSION_LEVELS)}, not {level!r}."
            )
        record = PermissionRecord(
            user_id=user_id, connection_id=connection_id, level=level, updated=utc_now()
        )
        values = {
            "user_id": record.user_id,
            "connection_id": record.connection_id,
            "level": record.level,
            "updated": record.updated,
        }
        statement: Insert
        if self._db.backend == "postgresql":
            pg_insert = postgresql.insert(permissions).values(values)
            statement = pg_insert.on_conflict_do_update(
                index_elements=[P.user_id, P.connection_id],
                set_={"level": pg_insert.excluded.level, "updated": pg_insert.excluded.updated},
            )
        else:
            lite_insert = sqlite.insert(permissions).values(values)
            statement = lite_insert.on_conflict_do_update(
                index_elements=[P.user_id, P.connection_id],
                set_={"level": lite_insert.excluded.level, "updated": lite_insert.excluded.updated},
            )
        await self._db.write(row_count, statement)
        return record

    async def list(self, user_id: str) -> builtins.list[PermissionRecord]:
        """The user's saved levels, by connection id."""
        query = select(permissions).where(P.user_id == user_id).order_by(P.connection_id)
        return [_permission(row._mapping) for row in await self._db.read(all_rows, query)]

    async def clear(self, user_id: str, connection_id: str) -> bool:
        """Forget the saved level (the next call asks again). True if there was one."""
        statement = delete(permissions).where(
            P.user_id == user_id, P.connection_id == connection_id
        )
        return await self._db.write(row_count, statement) > 0


class GrantRepo:
    """Grants by id, and the lookup the policy makes before asking."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        user_id: str,
        connection_id: str,
        tool_name: str,
        scope: GrantScope,
        *,
        history_id: str | None = None,
    ) -> Grant:
        """Store a grant and return it, or return the same grant stored before.

        ``conversation`` needs the `history_id` it applies to; ``always`` must not have one.
        ``once`` records nothing and is refused here, as is an unknown scope (`ValueError`).
        """
        stored = _checked_scope(scope, history_id)
        values: dict[str, Any] = {
            "id": new_id(),
            "user_id": user_id,
            "connection_id": connection_id,
            "tool_name": tool_name,
            "scope": stored,
            "history_id": history_id,
            "created": utc_now(),
        }
        key = [G.user_id, G.connection_id, G.tool_name]
        if stored == "conversation":
            key.append(G.history_id)
        statement = _insert_or_skip(self._db.backend, values, key, _SCOPE_PREDICATE[stored])
        for _ in range(_ADD_ATTEMPTS):
            found = await self._db.write(_insert_or_find, statement, values)
            if found is not None:
                return found
            # The grant that blocked the insert was revoked in between: try again.
        raise GrantConflict(f"The {stored} grant for {tool_name!r} kept changing; try again.")

    async def find(
        self, user_id: str, connection_id: str, tool_name: str, *, history_id: str | None
    ) -> Grant | None:
        """The grant that lets the user's call of this tool run without asking: an ``always``
        grant for the tool, else a ``conversation`` grant for `history_id` (None looks for
        ``always`` grants only)."""
        scope: ColumnElement[bool] = G.scope == "always"
        if history_id is not None:
            scope = or_(scope, and_(G.scope == "conversation", G.history_id == history_id))
        query = select(grants).where(
            G.user_id == user_id,
            G.connection_id == connection_id,
            G.tool_name == tool_name,
            scope,
        )
        found = [_grant(row._mapping) for row in await self._db.read(all_rows, query)]
        found.sort(key=lambda grant: grant.scope != "always")
        return found[0] if found else None

    async def list(self, user_id: str) -> builtins.list[Grant]:
        """The user's grants, newest first."""
        query = select(grants).where(G.user_id == user_id).order_by(G.created.desc(), G.id.desc())
        return [_grant(row._mapping) for row in await self._db.read(all_rows, query)]

    async def list_page(
        self, user_id: str, *, limit: int, after: Position | None = None
    ) -> Page[Grant]:
        """One page of the user's grants, newest first, after `after`."""
        checked_limit(limit)
        query = (
            select(grants)
            .where(G.user_id == user_id)
            .order_by(G.created.desc(), G.id.desc())
            .limit(limit + 1)
        )
        if after is not None:
            query = query.where(
                or_(G.created < after.at, and_(G.created == after.at, G.id < after.id))
            )
        items = [_grant(row._mapping) for row in await self._db.read(all_rows, query)]
        following: Position | None = None
        if len(items) > limit:
            del items[limit:]
            following = Position(at=items[-1].created, id=items[-1].id)
        return Page(items=items, next=following)

    async def get(self, grant_id: str) -> Grant | None:
        row = await self._db.read(first_row, select(grants).where(G.id == grant_id))
        return None if row is None else _grant(row._mapping)

    async def delete(self, grant_id: str, *, user_id: str) -> bool:
        """Revoke the grant if `user_id` owns it. False when there is no such grant or it
        belongs to someone else (who keeps it)."""
        statement = delete(grants).where(G.id == grant_id, G.user_id == user_id)
        return await self._db.write(row_count, statement) > 0


def _checked_scope(scope: object, history_id: str | None) -> StoredGrantScope:
    if scope == "once":
        raise ValueError("A 'once' grant covers a single call and is not stored.")
    if scope not in STORED_GRANT_SCOPES:
        raise ValueError(
            f"A stored grant's scope is one of {', '.join(STORED_GRANT_SCOPES)}, not {scope!r}."
        )
    if scope == "conversation" and history_id is None:
        raise ValueError("A 'conversation' grant needs the history_id it applies to.")
    if scope == "always" and history_id is not None:
        raise ValueError("An 'always' grant applies to every history: pass no history_id.")
    return scope


def _insert_or_skip(
    backend: Backend,
    values: Mapping[str, Any],
    key: builtins.list[Any],
    predicate: str,
) -> Insert:
    """``INSERT ... ON CONFLICT (key) WHERE predicate DO NOTHING RETURNING *``."""
    if backend == "postgresql":
        return (
            postgresql.insert(grants)
            .values(values)
            .on_conflict_do_nothing(index_elements=key, index_where=text(predicate))
            .returning(*grants.c)
        )
    return (
        sqlite.insert(grants)
        .values(values)
        .on_conflict_do_nothing(index_elements=key, index_where=text(predicate))
        .returning(*grants.c)
    )


def _insert_or_find(
    connection: Connection, statement: Insert, values: Mapping[str, Any]
) -> Grant | None:
    """The inserted grant, else the same grant stored before, else None (it was revoked
    between the two statements)."""
    row = connection.execute(statement).first()
    if row is not None:
        return _grant(row._mapping)
    return _find_exact(connection, values)


def _find_exact(connection: Connection, values: Mapping[str, Any]) -> Grant | None:
    history_id = values["history_id"]
    query = select(grants).where(
        G.user_id == values["user_id"],
        G.connection_id == values["connection_id"],
        G.tool_name == values["tool_name"],
        G.scope == values["scope"],
        G.history_id.is_(None) if history_id is None else G.history_id == history_id,
    )
    row = connection.execute(query).first()
    return None if row is None else _grant(row._mapping)


def _permission(row: Mapping[Any, Any]) -> PermissionRecord:
    return PermissionRecord(
        user_id=row["user_id"],
        connection_id=row["connection_id"],
        level=row["level"],
        updated=row["updated"],
    )


def _grant(row: Mapping[Any, Any]) -> Grant:
    return Grant(
        id=row["id"],
        user_id=row["user_id"],
        connection_id=row["connection_id"],
        tool_name=row["tool_name"],
        scope=row["scope"],
        history_id=row["history_id"],
        created=row["created"],
    )
