"""The approvers of a gate that ended are read from its ``gate.asked`` record through the
partial index of those records (migration 0016), not by reading the whole audit log: the
lookup's plan on SQLite and PostgreSQL (a generic plan too, as asyncpg keeps after five runs),
what it returns, and the migration both ways."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import Connection, inspect
from sqlalchemy.dialects import postgresql, sqlite

from _pg import PostgresCluster
from handrail.store import Store
from handrail.store.audit import approvers_query, audit_record, insert_audit
from handrail.store.db import Database, alembic_config

INDEX = "ix_activity_gate_asked"


def _records(history_id: str, count: int) -> list[Any]:
    """`count` gates asked in `history_id`, each with its approvers, and an ending of each."""
    out = []
    for i in range(count):
        for action in ("gate.asked", "gate.approved"):
            out.append(
                audit_record(
                    actor="alice",
                    action=action,
                    subject=f"call_{i}",
                    changes={"approvers": [f"bob{i}"]} if action == "gate.asked" else {},
                    history_id=history_id,
                    owner_id="alice",
                )
            )
    return out


async def test_approvers_of_a_gate_come_from_its_asked_record(database_url: str) -> None:
    store = await Store.open(database_url)
    try:
        history = await store.histories.create("alice", agent="a")
        other = await store.histories.create("alice", agent="a")
        await store.db.write(insert_audit, _records(history.id, 3) + _records(other.id, 1))
        assert await store.audit.approvers_of(history.id, "call_1") == ["bob1"]
        assert await store.audit.approvers_of(other.id, "call_0") == ["bob0"]
        assert await store.audit.approvers_of(other.id, "call_1") == []
    finally:
        await store.close()


async def test_the_lookup_uses_the_partial_index_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = await Store.open(f"sqlite:///{path}")
    try:
        history = await store.histories.create("alice", agent="a")
        await store.db.write(insert_audit, _records(history.id, 50))
    finally:
        await store.close()
    compiled = approvers_query("h", "call_1").compile(dialect=sqlite.dialect())
    connection = sqlite3.connect(path)
    try:
        for analyzed in (False, True):
            if analyzed:
                connection.execute("ANALYZE")
            args = [None] * len(compiled.positiontup or ())
            plan = connection.execute(f"EXPLAIN QUERY PLAN {compiled}", args).fetchall()
            assert any(f"USING INDEX {INDEX}" in row[3] for row in plan), plan
    finally:
        connection.close()


async def test_the_lookup_uses_the_partial_index_on_postgresql(
    postgres_cluster: PostgresCluster,
) -> None:
    url = postgres_cluster.new_database_url()
    store = await Store.open(url)
    try:
        history = await store.histories.create("alice", agent="a")
        await store.db.write(insert_audit, _records(history.id, 200))
    finally:
        await store.close()
    connection = await postgres_cluster.connect(url)
    sql = str(approvers_query("h", "c").compile(dialect=postgresql.asyncpg.dialect()))  # type: ignore[attr-defined]
    try:
        await connection.execute("ANALYZE activity")
        # A generic plan, as a statement prepared once gets: the index must be usable with
        # the history and gate as parameters. Sequential scans are priced out so that the
        # plan shows whether the index can serve it at all, whatever the table's size.
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        await connection.execute("SET enable_seqscan = off")
        prepared = await connection.prepare(sql)
        plan = "\n".join(
            row[0]
            for row in await connection.fetch(
                f"EXPLAIN EXECUTE {prepared.get_name()}('{history.id}', 'call_7')"
            )
        )
        assert INDEX in plan, plan
    finally:
        await connection.close()


def _activity_indexes(connection: Connection) -> set[str]:
    return {str(index["name"]) for index in inspect(connection).get_indexes("activity")}


def _to(revision: str) -> Any:
    def run(connection: Connection) -> None:
        command.downgrade(alembic_config(connection), revision)

    return run


def _up(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def test_migration_0016_adds_the_index_and_goes_back(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        assert INDEX in await db.read(_activity_indexes)
        await db.write(_to("0015"))
        assert INDEX not in await db.read(_activity_indexes)
        await db.write(_up)
        assert INDEX in await db.read(_activity_indexes)
