"""The event outbox (`handrail.store.outbox`): a history change keeps the events of the kinds
reach sends in its own transaction (none until told which), a lost compare-and-set keeps
nothing, a process claims an event for a while, and queueing an event's deliveries removes it
and queues each delivery once; on both backends."""

from __future__ import annotations

import datetime as dt

import pytest

from handrail._util import utc_now
from handrail.store import EventKind, HistoryChange, HistoryConflict, Store, UserEvent
from handrail.store.outbox import Delivery, DeliveryRepo, new_delivery

HOLD = dt.timedelta(minutes=2)


def event(kind: EventKind, history_id: str) -> UserEvent:
    return UserEvent(kind=kind, user_id="alice", history_id=history_id, data={"n": 1})


async def test_only_kept_kinds_are_written_with_the_change(store: Store) -> None:
    history = await store.histories.create("alice", agent="demo")
    before = HistoryChange(title="One", events=[event("ask.created", history.id)])
    await store.histories.apply(history.id, before, expected_version=1)
    assert await store.outbox.count() == 0  # nobody said to keep anything
    store.outbox.keep(["ask.created", "ask.answered"])
    asked = event("ask.created", history.id)
    renamed = event("history.renamed", history.id)
    await store.histories.apply(
        history.id, HistoryChange(title="Two", events=[asked, renamed]), expected_version=2
    )
    lost = HistoryChange(title="Three", events=[event("ask.answered", history.id)])
    with pytest.raises(HistoryConflict):
        await store.histories.apply(history.id, lost, expected_version=2)
    [claimed] = await store.outbox.claim(now=utc_now(), hold=HOLD)
    assert claimed == asked
    # Held for the claimer; free again once the hold lapses.
    assert await store.outbox.claim(now=utc_now(), hold=HOLD) == []
    [again] = await store.outbox.claim(now=utc_now() + 2 * HOLD, hold=HOLD)
    assert again.id == asked.id


async def test_queueing_an_events_deliveries_removes_it_once(store: Store) -> None:
    store.outbox.keep(["ask.created"])
    history = await store.histories.create("alice", agent="demo")
    asked = event("ask.created", history.id)
    await store.histories.apply(history.id, HistoryChange(events=[asked]), expected_version=1)
    repo = DeliveryRepo(store.db)

    def delivery(target: str) -> Delivery:
        return new_delivery(
            event_id=asked.id,
            channel="webhook",
            target=target,
            user_id="alice",
            kind="ask.created",
            payload={"type": "ask.created"},
        )

    assert await repo.enqueue_event(asked.id, [delivery("ops"), delivery("audit")]) == 2
    assert await store.outbox.count() == 0
    # Handled again (another process, a reload): nothing new.
    assert await repo.enqueue_event(asked.id, [delivery("ops")]) == 0
    page = await repo.list_page(user_id="alice", limit=10)
    assert sorted(d.target for d in page.items) == ["audit", "ops"]
