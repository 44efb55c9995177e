"""The request log."""

from __future__ import annotations

import datetime as dt

from handrail.store import RequestRecord, Store, request_record


async def test_request_log_round_trip(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    other = await store.histories.create("u1", agent="demo")
    first = await store.requests.add(
        request_record(
            history_id=history.id,
            owner_id="u1",
            prompt="Set up billing",
            response="",
            model="scripted",
            metadata={"ask": {"kind": "choice", "phase": "asked", "toolCallId": "call_1"}},
            duration_ms=12,
            created=dt.datetime(2026, 3, 1, 10, 0, 0, 123000, tzinfo=dt.UTC),
        )
    )
    second = await store.requests.add(
        request_record(
            history_id=history.id,
            owner_id="u1",
            prompt='{"action":"accept"}',
            response="Done.",
            model="scripted",
            error="model failed",
            metadata={
                "ask": {
                    "action": "accept",
                    "kind": "choice",
                    "phase": "answered",
                    "toolCallId": "c1",
                },
                "nextAsk": {"kind": "confirm", "phase": "asked", "toolCallId": "c2"},
            },
        )
    )
    await store.requests.add(
        request_record(history_id=other.id, owner_id="u1", prompt="x", response="y", model="m")
    )
    assert isinstance(first, RequestRecord)
    assert first.request_type == "general"
    assert second.created.utcoffset() == dt.timedelta(0)
    listed = await store.requests.list(history.id)
    assert listed == [first, second]
    for record in listed:
        assert record.created.utcoffset() == dt.timedelta(0)
    assert await store.requests.list("0" * 24) == []
