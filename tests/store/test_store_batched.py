"""Statements batched into one (`Prepared.later` inside `batched`): on PostgreSQL the writes
after a change's compare-and-set go to the database together, with their checks; on both
databases they write what running them one by one writes, and a failed check writes nothing."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from asyncpg.prepared_stmt import PreparedStatement
from sqlalchemy import Connection, bindparam, delete, insert, select, update

from handrail.asks import PendingAsk
from handrail.store import HistoryChange, LeaseLost, ReleaseLease, Store, TurnLease
from handrail.store.histories import HistoryConflict
from handrail.store.prepared import Prepared, batched
from handrail.store.tables import turn_leases

L = turn_leases.c
_ADD = Prepared(insert(turn_leases))
_DROP = Prepared(delete(turn_leases).where(L.history_id == bindparam("h")))
_MOVE = Prepared(
    update(turn_leases).where(L.history_id == bindparam("h")).values(owner=bindparam("o"))
)
_ALL = Prepared(select(turn_leases.c.history_id, turn_leases.c.owner).order_by(L.history_id))


def _lease(history_id: str, owner: str = "p1") -> dict[str, Any]:
    from handrail._util import utc_now

    now = utc_now()
    return {"history_id": history_id, "owner": owner, "until": now, "state": {}, "created": now}


class Counted:
    """Counts the statements asyncpg executes (each one round trip): through a prepared
    statement or the connection's own ``fetch`` and ``execute`` (``BEGIN``, ``COMMIT``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sql: list[str] = []
        original = PreparedStatement.fetch
        original_execute = asyncpg.Connection.execute

        async def fetch(statement: PreparedStatement, *args: Any, **kwargs: Any) -> Any:
            self.sql.append(statement.get_query())
            return await original(statement, *args, **kwargs)

        original_fetch = asyncpg.Connection.fetch

        async def execute(connection: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
            self.sql.append(query)
            return await original_execute(connection, query, *args, **kw)

        async def connection_fetch(
            connection: asyncpg.Connection, query: str, *args: Any, **kw: Any
        ) -> Any:
            self.sql.append(query)
            return await original_fetch(connection, query, *args, **kw)

        monkeypatch.setattr(PreparedStatement, "fetch", fetch)
        monkeypatch.setattr(asyncpg.Connection, "execute", execute)
        monkeypatch.setattr(asyncpg.Connection, "fetch", connection_fetch)


def _work(connection: Connection, seen: list[int]) -> None:
    with batched(connection):
        _ADD.later(connection, [_lease("a" * 24), _lease("b" * 24)], seen.append)
        _ADD.later(connection, _lease("c" * 24))
        _MOVE.later(connection, {"h": "a" * 24, "o": "p2"}, seen.append)  # waits for the adds
        _DROP.later(connection, {"h": "b" * 24}, seen.append)  # waits for the update
        _DROP.later(connection, {"h": "z" * 24}, seen.append)  # and this for that delete


async def test_batched_statements_write_what_one_by_one_writes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(monkeypatch)
    seen: list[int] = []
    await store.db.write(_work, seen)
    assert seen == [2, 1, 1, 0]
    rows = await store.db.read(_ALL.all, {})
    assert rows == [
        {"history_id": "a" * 24, "owner": "p2"},
        {"history_id": "c" * 24, "owner": "p1"},
    ]
    if store.db.backend == "postgresql":
        writes = [sql for sql in counted.sql if "turn_leases" in sql and "SELECT turn" not in sql]
        # The three adds in one statement; an update or delete of the table goes alone.
        assert len(writes) == 4
        assert writes[0].startswith("WITH w0 AS (INSERT")
        assert "w2 AS (INSERT" in writes[0]
        assert [w.split()[0] for w in writes[1:]] == ["UPDATE", "DELETE", "DELETE"]


def _failing(connection: Connection) -> None:
    def refuse(count: int) -> None:
        raise LookupError(f"changed {count}")

    with batched(connection):
        _ADD.later(connection, _lease("d" * 24))
        _DROP.later(connection, {"h": "nobody"}, refuse)
        _ADD.later(connection, _lease("e" * 24))


async def test_a_failed_check_writes_nothing(store: Store) -> None:
    with pytest.raises(LookupError, match="changed 0"):
        await store.db.write(_failing)
    assert await store.db.read(_ALL.all, {}) == []


def _pending(tool_call_id: str) -> PendingAsk:
    return PendingAsk.from_json(
        {
            "toolCallId": tool_call_id,
            "kind": "choice",
            "input": {"question": "Which plan?"},
            "simple": {"buttons": []},
            "promptIndex": 1,
            "responseMessages": [{"role": "assistant", "content": []}],
            "created": "2026-03-01T10:00:00.000Z",
        }
    )


def _ask(tool_call_id: str, status: str = "pending") -> dict[str, Any]:
    return {
        "type": "tool-call",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "ask": {"kind": "choice", "status": status},
    }


async def test_an_answers_change_sets_statuses_of_old_and_new_rows_and_its_lease(
    store: Store,
) -> None:
    history = await store.histories.create("alice", agent="demo")
    now = history.created
    lease = TurnLease(history_id=history.id, owner="p1", until=now, state={"n": 1}, created=now)
    step = await store.histories.apply(
        history.id,
        HistoryChange(append=[_ask("c1")], pending_ask=_pending("c1"), lease=lease),
        expected_version=1,
    )
    # The answer: the old ask answered, a new ask appended and set in the same change, the
    # lease replaced.
    again = TurnLease(history_id=history.id, owner="p2", until=now, state={"n": 2}, created=now)
    step = await store.histories.apply(
        history.id,
        HistoryChange(
            append=[{"type": "tool-result", "toolCallId": "c1"}, _ask("c2")],
            ask_status={"c1": "answered", "c2": "cancelled"},
            pending_ask=None,
            lease=again,
        ),
        expected_version=step.version,
    )
    rows = await store.histories.rows(history.id)
    assert [r.data.get("ask", {}).get("status") for r in rows] == [
        "answered",
        None,
        "cancelled",
    ]
    assert await store.leases.get(history.id) == again
    # A status naming no ask fails the whole change: no row, no version, the lease as it was.
    with pytest.raises(ValueError, match="not an ask"):
        await store.histories.apply(
            history.id,
            HistoryChange(append=[_ask("c3")], ask_status={"nope": "answered"}, lease=None),
            expected_version=step.version,
        )
    assert len(await store.histories.rows(history.id)) == 3
    assert await store.leases.get(history.id) == again
    # Releasing another process's lease fails the change too.
    with pytest.raises(LeaseLost):
        await store.histories.apply(
            history.id,
            HistoryChange(append=[_ask("c4")], lease=ReleaseLease(owner="p1")),
            expected_version=step.version,
        )
    loaded = await store.histories.load(history.id)
    assert loaded is not None
    assert loaded[0].version == step.version
    assert len(loaded[1]) == 3


async def test_a_change_is_one_statement_and_a_lost_one_writes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the compare-and-set goes with the rest of the change, in one statement
    without a BEGIN and a COMMIT; when it loses, none of the rest is written either."""
    history = await store.histories.create("alice", agent="demo")
    now = history.created
    lease = TurnLease(history_id=history.id, owner="p1", until=now, state={}, created=now)
    step = await store.histories.apply(
        history.id,
        HistoryChange(append=[_ask("c1")], pending_ask=_pending("c1"), lease=lease),
        expected_version=1,
    )
    answer = HistoryChange(
        append=[{"type": "tool-result", "toolCallId": "c1"}],
        ask_status={"c1": "answered"},
        pending_ask=None,
        lease=ReleaseLease(owner="p1"),
    )
    counted = Counted(monkeypatch)
    with pytest.raises(HistoryConflict):
        await store.histories.apply(history.id, answer, expected_version=1)
    rows = await store.histories.rows(history.id)
    assert [r.data["ask"]["status"] for r in rows] == ["pending"]
    assert await store.leases.get(history.id) == lease
    loaded = await store.histories.get(history.id)
    assert loaded is not None
    assert loaded.pending_ask is not None
    counted.sql.clear()
    done = await store.histories.apply(history.id, answer, expected_version=step.version)
    if store.db.backend == "postgresql":
        assert len(counted.sql) == 1
        assert counted.sql[0].startswith("WITH head AS (UPDATE histories ")
    assert (done.version, done.pending_ask, done.owner_id) == (3, None, "alice")
    rows = await store.histories.rows(history.id)
    assert [(r.seq, r.data.get("ask", {}).get("status")) for r in rows] == [
        (0, "answered"),
        (1, None),
    ]
    assert await store.leases.get(history.id) is None
