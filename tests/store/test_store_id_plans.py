"""The statements that find a history by its id use its primary key, whatever the statistics.

On a new PostgreSQL database (no ANALYZE yet) the plain ``deleted_at IS NULL`` let the planner
read such a lookup as a scan of the whole partial index of the lists, and asyncpg's prepared
statements keep a plan (a generic one after five runs). Each statement here is prepared as
the store prepares it and explained with ``EXPLAIN EXECUTE``: forced generic plans, and the
default mode over more runs than it takes to switch to a generic plan; before and after an
ANALYZE. On SQLite, ``EXPLAIN QUERY PLAN`` of the same statements.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql import ClauseElement

from _pg import PostgresCluster
from handrail.store import _UNCHANGED, Store
from handrail.store.confirmations import CONFIRMATIONS_JSON
from handrail.store.histories import (
    _GET,
    _ROWS,
    _VERSION,
    _at_once,
    _compare_and_set,
    _touch_statement,
)
from handrail.store.leases import LEASE_JSON
from handrail.store.tables import histories, metadata

#: Enough histories for the table to span several pages.
HISTORIES = 400


def _statements(on_sqlite: bool) -> dict[str, ClauseElement]:
    found: dict[str, ClauseElement] = {
        "get": _GET.statement,
        "rows": _ROWS.statement,
        "version": _VERSION,
        "turn unchanged": _UNCHANGED.statement,
        "title": _touch_statement("x", {"title": "t", "title_key": "t"}),
        "delete": _touch_statement("x", {"deleted_at": None}),
    }
    if not on_sqlite:  # the reads in one statement are PostgreSQL's
        found["at once"] = _at_once(()).statement
        found["turn at once"] = _at_once((CONFIRMATIONS_JSON, LEASE_JSON)).statement
    for pending in (False, True):
        for title in (False, True):
            cas = _compare_and_set(pending, title, on_sqlite)
            found[f"compare and set {pending} {title}"] = cas.statement
    return found


def _primary_key() -> str:
    name = histories.primary_key.name
    if not name:  # named by the metadata's convention when the table is created
        convention = metadata.naming_convention["pk"]
        name = str(convention) % {"table_name": histories.name}
    return str(name)


def _literal(value: str, type_name: str) -> str:
    """A value for a parameter of `type_name`: the id for text, plausible others."""
    if type_name in ("text", "varchar", "bpchar"):
        return "'" + value.replace("'", "''") + "'"
    if type_name in ("int2", "int4", "int8"):
        return "1"
    if type_name in ("timestamp", "timestamptz"):
        return "now()"
    if type_name == "bool":
        return "true"
    return f"NULL::{type_name}"


def _scans(plan: str) -> list[str]:
    """How each scan of ``histories`` in `plan` reads it."""
    return re.findall(r"(\w[\w ]*?Scan(?: using \w+)?) on histories\b", plan)


async def _check_plans(connection: asyncpg.Connection, history_id: str, when: str) -> None:
    pk = _primary_key()
    dialect = postgresql.asyncpg.dialect()  # type: ignore[attr-defined]
    for mode, runs in (("force_generic_plan", 1), ("auto", 7)):
        await connection.execute(f"SET plan_cache_mode = {mode}")
        for label, statement in _statements(on_sqlite=False).items():
            sql = str(statement.compile(dialect=dialect))
            prepared = await connection.prepare(sql)
            args = ", ".join(
                _literal(history_id, parameter.name) for parameter in prepared.get_parameters()
            )
            call = f"EXECUTE {prepared.get_name()}" + (f"({args})" if args else "")
            for run in range(runs):
                plan = "\n".join(r[0] for r in await connection.fetch(f"EXPLAIN {call}"))
                scans = _scans(plan)
                assert scans, (label, plan)
                assert all(scan.endswith(f"using {pk}") for scan in scans), (
                    f"{label} ({when}, {mode}, run {run + 1}) does not use {pk}:\n{plan}"
                )


async def test_id_lookups_use_the_primary_key_on_postgresql(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = postgres_cluster.new_database_url()
    store = await Store.open(url, blob_dir=tmp_path / "blobs")
    try:
        ids = [(await store.histories.create("alice", agent="a")).id for _ in range(HISTORIES)]
    finally:
        await store.close()
    connection = await postgres_cluster.connect(url)
    try:
        never = await connection.fetchval(
            "SELECT reltuples FROM pg_class WHERE relname = 'histories'"
        )
        assert never < 0  # no statistics yet
        await _check_plans(connection, ids[HISTORIES // 2], "no statistics")
        await connection.execute("ANALYZE histories")
        await _check_plans(connection, ids[HISTORIES // 2], "analyzed")
    finally:
        await connection.close()


@pytest.mark.parametrize("analyzed", [False, True])
async def test_id_lookups_use_the_primary_key_on_sqlite(tmp_path: Path, analyzed: bool) -> None:
    path = tmp_path / "handrail.db"
    store = await Store.open(f"sqlite:///{path}", blob_dir=tmp_path / "blobs")
    try:
        for _ in range(50):
            await store.histories.create("alice", agent="a")
    finally:
        await store.close()
    connection = sqlite3.connect(path)
    try:
        if analyzed:
            connection.execute("ANALYZE")
        # SQLite names a text primary key's index itself.
        (pk,) = connection.execute(
            "SELECT name FROM pragma_index_list('histories') WHERE origin = 'pk'"
        ).fetchone()
        dialect = sqlite.dialect()
        for label, statement in _statements(on_sqlite=True).items():
            compiled = statement.compile(dialect=dialect)
            args: list[Any] = [None] * len(compiled.positiontup or ())
            plan = connection.execute(f"EXPLAIN QUERY PLAN {compiled}", args).fetchall()
            details = [row[3] for row in plan if re.search(r"\bhistories\b", row[3])]
            assert details, (label, plan)
            assert all(f"USING INDEX {pk} (id=?)" in d for d in details), (label, plan)
    finally:
        connection.close()
