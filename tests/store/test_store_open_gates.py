"""A history's open gate follows its pending ask through `HistoryRepo.apply` on both databases:
made for an ask with a clock or approvers, replaced by the next one, removed when the ask goes.
On SQLite the change knows from its compare-and-set whether a gate is open, and deletes none
when none is."""

from __future__ import annotations

import sqlite3
from typing import Any

from handrail.asks import PendingAsk
from handrail.store import Store
from handrail.store.records import HistoryChange


def _ask(call: str, **gate: Any) -> PendingAsk:
    return PendingAsk(
        tool_call_id=call,
        kind="confirm",
        input={"title": "Go?"},
        simple={"title": "Go?"},
        created="2026-12-01T20:00:00+00:00",
        **gate,
    )


async def _set(store: Store, history_id: str, version: int, pending: PendingAsk | None) -> int:
    history = await store.histories.apply(
        history_id, HistoryChange(pending_ask=pending), expected_version=version
    )
    return history.version


async def test_the_open_gate_follows_the_pending_ask(store: Store) -> None:
    history = await store.histories.create("alice", agent="a")
    version = history.version
    version = await _set(store, history.id, version, _ask("c1"))  # no clock: no gate
    assert await store.audit.get(history.id) is None
    version = await _set(store, history.id, version, _ask("c2", expires_at="2026-12-02T00:00:00Z"))
    gate = await store.audit.get(history.id)
    assert gate is not None
    assert gate.ask_id == "c2"
    version = await _set(store, history.id, version, _ask("c3", approvers=["bob"]))
    gate = await store.audit.get(history.id)
    assert gate is not None
    assert (gate.ask_id, gate.approvers, gate.expires) == ("c3", ("bob",), None)
    version = await _set(store, history.id, version, _ask("c4"))  # the gate goes
    assert await store.audit.get(history.id) is None
    version = await _set(store, history.id, version, _ask("c5", remind_at="2026-12-02T00:00:00Z"))
    assert await store.audit.get(history.id) is not None
    await _set(store, history.id, version, None)
    assert await store.audit.get(history.id) is None


async def test_on_sqlite_no_gate_is_deleted_when_none_is_open(tmp_path: Any) -> None:
    store = await Store.open(f"sqlite:///{tmp_path / 'g.db'}", blob_dir=tmp_path / "blobs")
    try:
        history = await store.histories.create("alice", agent="a")
        statements: list[str] = []

        def traced(connection: Any) -> None:
            driver = connection.connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            driver.set_trace_callback(statements.append)

        await store.db.write(traced)
        version = await _set(store, history.id, history.version, _ask("c1"))
        assert not [s for s in statements if s.startswith("DELETE FROM open_gates")]
        version = await _set(store, history.id, version, _ask("c2", approvers=["bob"]))
        assert not [s for s in statements if s.startswith("DELETE FROM open_gates")]
        await _set(store, history.id, version, None)
        assert [s for s in statements if s.startswith("DELETE FROM open_gates")]
        assert await store.audit.get(history.id) is None
    finally:
        await store.close()
