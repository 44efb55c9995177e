"""The reads that must agree (a history, its rows, its confirmations, its lease) go in one
statement on PostgreSQL (`JsonRows`): they give exactly what the reads one by one in a snapshot
give, on both databases, and one moment's state even while writers change the history."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Float, Table, column, select, table

import handrail.store.histories as histories
from handrail._util import utc_now
from handrail.asks import PendingAsk
from handrail.store import HistoryChange, Store, TurnLease, _load_turn
from handrail.store.db import QUICK_ROWS
from handrail.store.histories import load_history
from handrail.store.json_rows import JsonRows

ODD_TEXT = 'Ünïcode ✓ "quoted" \\ back\nslash \t tab \u2028 \U0001f600'


def _rows() -> list[dict[str, Any]]:
    return [
        {"type": "user", "content": ODD_TEXT},
        {
            "type": "tool-call",
            "toolName": "ask_choice",
            "toolCallId": "call-1",
            "args": {"n": [1, 2.5, -0.1, 1e300, None, True, {"é": "ü"}], "big": 2**62},
            "ask": {"kind": "choice", "status": "pending"},
        },
        {"type": "assistant", "content": ""},
    ]


async def _history_with_everything(store: Store) -> str:
    history = await store.histories.create("alice", agent="demo", title=ODD_TEXT)
    pending = PendingAsk.from_json(
        {
            "toolCallId": "call-1",
            "kind": "choice",
            "input": {"prompt": ODD_TEXT},
            "simple": {"buttons": []},
            "promptIndex": 1,
            "responseMessages": [{"role": "assistant", "content": []}],
            "created": "2026-03-01T10:00:00.000Z",
        }
    )
    moment = dt.datetime(2026, 11, 30, 9, 30, 15, 123456, tzinfo=dt.UTC)
    lease = TurnLease(
        history_id=history.id,
        owner="process-1",
        until=moment + dt.timedelta(minutes=1),
        state={"step": 2, "note": ODD_TEXT, "x": 0.1},
        created=moment,
    )
    await store.histories.apply(
        history.id,
        HistoryChange(append=_rows(), pending_ask=pending, lease=lease),
        expected_version=1,
    )
    for n in range(3):
        await store.confirmations.create(
            history_id=history.id,
            user_id="alice",
            connection_id="bookings",
            tool_name="book",
            tool_call_id=f"call-{n}",
            request={"method": "POST", "url": "https://example.test/b", "body": {"n": n}},
            digest="d" * 64,
            preview={"title": ODD_TEXT, "n": n},
            expires_at=utc_now() + dt.timedelta(minutes=5),
        )
    return history.id


async def test_a_turns_reads_at_once_give_what_the_reads_one_by_one_give(store: Store) -> None:
    history_id = await _history_with_everything(store)
    turn = await store.load_turn(history_id)
    one_by_one = await store.db.snapshot(_load_turn, history_id)
    assert turn is not None
    assert turn == one_by_one
    assert len(turn.rows) == 3
    assert len(turn.confirmations) == 3
    assert turn.lease is not None
    assert turn.lease.until.tzinfo == dt.UTC
    assert turn.rows[1].data["args"]["big"] == 2**62
    assert turn.history.title == ODD_TEXT
    loaded = await store.histories.load(history_id)
    assert loaded == await store.db.snapshot(load_history, history_id)
    assert loaded is not None
    assert loaded[1] == turn.rows


async def test_a_history_without_rows_or_lease_and_a_missing_one(store: Store) -> None:
    history = await store.histories.create("alice", agent="demo")
    turn = await store.load_turn(history.id)
    assert turn is not None
    assert (turn.rows, turn.confirmations, turn.lease) == ([], [], None)
    assert await store.load_turn("f" * 24) is None
    assert await store.histories.load("f" * 24) is None
    await store.histories.delete(history.id)
    assert await store.load_turn(history.id) is None
    assert await store.histories.load(history.id) is None


async def test_reads_at_once_see_one_moment_while_writers_append(store: Store) -> None:
    history = await store.histories.create("alice", agent="demo")
    stop = asyncio.Event()

    async def writer() -> None:
        version = history.version
        while not stop.is_set():
            changed = await store.histories.apply(
                history.id,
                HistoryChange(append=[{"type": "user", "content": f"v{version}"}]),
                expected_version=version,
            )
            version = changed.version

    task = asyncio.create_task(writer())
    try:
        for _ in range(40):
            loaded = await store.histories.load(history.id)
            assert loaded is not None
            found, rows = loaded
            # Version n+1 has exactly n rows: the rows and the version agree.
            assert len(rows) == found.version - 1
            await asyncio.sleep(0)
    finally:
        stop.set()
        await task


def test_a_column_it_cannot_bring_back_exactly_is_refused() -> None:
    floats: Table = table("t", column("x", Float))  # type: ignore[assignment]
    with pytest.raises(TypeError, match="cannot bring back"):
        JsonRows(select(floats.c.x), order_by=(), name="t")


@pytest.mark.parametrize("count", [QUICK_ROWS, QUICK_ROWS + 1])
async def test_postgresql_decodes_a_long_historys_rows_off_the_loop(
    postgres_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """On PostgreSQL `HistoryRepo.load` and `Store.load_turn` read in one statement and decode
    its rows on the event loop's thread up to `QUICK_ROWS` rows, on another thread beyond (as
    SQLite reads them there), so the loop's own work for a turn's read does not grow with the
    history."""
    store = await Store.open(postgres_cluster.new_database_url(), blob_dir=tmp_path / "files")
    try:
        history = await store.histories.create("u1", agent="demo")
        rows = [{"type": "user", "content": str(i)} for i in range(count)]
        await store.histories.apply(
            history.id, HistoryChange(append=rows), expected_version=history.version
        )
        threads: list[int] = []
        decoded = histories._at_once_decoded

        def recorded(row: Any, more: Any) -> Any:
            threads.append(threading.get_ident())
            return decoded(row, more)

        monkeypatch.setattr(histories, "_at_once_decoded", recorded)
        loaded = await store.histories.load(history.id)
        turn = await store.load_turn(history.id)
        assert loaded is not None
        assert turn is not None
        assert [row.data["content"] for row in loaded[1]] == [str(i) for i in range(count)]
        assert [row.data for row in turn.rows] == [row.data for row in loaded[1]]
        assert turn == await store.db.snapshot(_load_turn, history.id)
        on_loop = [thread == threading.get_ident() for thread in threads]
        assert on_loop == [count <= QUICK_ROWS] * 2
    finally:
        await store.close()
