"""Events sent by the write that makes them: on PostgreSQL a history's insert and its changes
(`HistoryRepo.create` with ``announce``, `HistoryRepo.apply`) send their events' notifications
in their own transaction, with the events published before them and not sent yet, so that no
statement of their own follows; a write that rolls back sends none. Two stores on one database
stand for two processes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_store_events import listening_stores, pg_url, two_stores

from _pg import notifying_statements
from handrail.store import HistoryChange, HistoryConflict, Store, UserEvent
from handrail.store.events import _SEND_MAX, Subscription


def _user(text: str) -> dict[str, Any]:
    return {"type": "user", "content": text}


def _event(history_id: str, kind: str = "history.renamed", **data: object) -> UserEvent:
    return UserEvent(kind=kind, user_id="alice", history_id=history_id, data=data)  # type: ignore[arg-type]


async def _next(subscription: Subscription, count: int) -> list[UserEvent | None]:
    return [await subscription.get(timeout=5) for _ in range(count)]


async def test_a_writes_events_reach_another_process_with_its_commit(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long gather: the write surely comes within it.
    monkeypatch.setattr("handrail.store.events._SEND_GATHER_S", 30.0)
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        statements = notifying_statements(monkeypatch)
        own = one.events.open("alice")
        async with two.events.subscribe("alice") as heard:
            history = await one.histories.create("alice", agent="demo", announce=True)
            [created] = await _next(heard, 1)
            assert created is not None
            assert (created.kind, created.history_id) == ("history.created", history.id)
            assert created.data == {"title": None, "agent": "demo"}
            # Published before the write and not sent yet: the write takes it, first.
            started = _event(history.id, "turn.started", turnId="t1")
            await one.events.publish(started)
            renamed = _event(history.id, title="Trip")
            change = HistoryChange(append=[_user("hi")], title="Trip", events=[renamed])
            await one.histories.apply(history.id, change, expected_version=1)
            assert await _next(heard, 2) == [started, renamed]
            # The sender's wait was a timer, which the write stopped: no task was made.
            assert one.events._sender is None
            assert one.events._gather is None
            # This process hears each once: its own at publish, the write's after the commit.
            assert await _next(own, 3) == [created, started, renamed]
        one.events.discard(own)
        # No statement of their own: the insert and the change sent them.
        assert len(statements) == 2
        assert all(statement.startswith("WITH ") for statement in statements)


async def test_a_write_that_rolls_back_sends_none_of_its_events(
    postgres_cluster: object, tmp_path: Path
) -> None:
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        own = one.events.open("alice")
        async with two.events.subscribe("alice") as heard:
            history = await one.histories.create("alice", agent="demo")
            # Lost races: a version that moved on (the statement commits alone, writing nothing).
            lost = _event(history.id, title="lost")
            with pytest.raises(HistoryConflict):
                await one.histories.apply(
                    history.id, HistoryChange(title="lost", events=[lost]), expected_version=7
                )
            # A check that fails inside the statement, and one that fails in a transaction
            # after a statement of its own (results to remove that are not there).
            progress = _event(history.id, "turn.progress", phase="thinking", turnId="t1")
            await one.events.publish(progress)  # taken by the write, given back when it fails
            for bad in (
                HistoryChange(ask_status={"call_x": "answered"}, events=[_event(history.id)]),
                HistoryChange(remove_results=["call_x"], events=[_event(history.id)]),
            ):
                with pytest.raises(ValueError, match="call_x"):
                    await one.histories.apply(history.id, bad, expected_version=1)
            after = _event(history.id, title="after")
            await one.histories.apply(
                history.id, HistoryChange(title="after", events=[after]), expected_version=1
            )
            # Notifications come in commit order: had a failed write sent any, it came first.
            assert await _next(heard, 2) == [progress, after]
            assert await _next(own, 2) == [progress, after]
        one.events.discard(own)


async def test_a_change_in_a_transaction_of_several_statements_sends_its_events(
    postgres_cluster: object, tmp_path: Path
) -> None:
    """A change that removes results runs its compare-and-set first, then the rest with the
    notifications, in one transaction."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            history = await one.histories.create("alice", agent="demo")
            call = {"type": "tool-call", "toolCallId": "call_1", "toolName": "t", "args": {}}
            result = {"type": "tool-result", "toolCallId": "call_1", "toolName": "t", "result": 1}
            await one.histories.apply(
                history.id, HistoryChange(append=[call, result]), expected_version=1
            )
            undone = _event(history.id, title="undone")
            change = HistoryChange(remove_results=["call_1"], title="undone", events=[undone])
            await one.histories.apply(history.id, change, expected_version=2)
            assert await _next(heard, 1) == [undone]
            assert [row.data["type"] for row in await two.histories.rows(history.id)] == [
                "tool-call"
            ]


async def test_the_sender_holds_a_carried_historys_events_until_the_write_ends(
    postgres_cluster: object, tmp_path: Path
) -> None:
    """Events published while a write carries their history's go after the write's, and
    events a failed write took go out first, as they were published."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            first, second = _event("a" * 24, title="1"), _event("b" * 24, title="2")
            await one.events.publish(first)
            await one.events.publish(second)
            carried = await one.events.carry("c" * 24, [])
            assert [event for event, _ in carried.taken] == [first, second]
            later, other = _event("a" * 24, title="later"), _event("d" * 24, title="other")
            await one.events.publish(later)
            await one.events.publish(other)
            # The sender sends what it may, and holds `later` back.
            assert await _next(heard, 1) == [other]
            one.events.settle(carried, committed=False)
            assert await _next(heard, 3) == [first, second, later]


async def test_events_of_writes_stay_in_the_process_on_sqlite(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite:///{tmp_path / 'one.db'}", blob_dir=tmp_path / "b")
    try:
        own = store.events.open("alice")
        history = await store.histories.create("alice", agent="demo", announce=True)
        renamed = _event(history.id, title="Trip")
        await store.histories.apply(
            history.id, HistoryChange(title="Trip", events=[renamed]), expected_version=1
        )
        lost = _event(history.id, title="lost")
        with pytest.raises(HistoryConflict):
            await store.histories.apply(
                history.id, HistoryChange(title="lost", events=[lost]), expected_version=1
            )
        got = [await own.get(timeout=1) for _ in range(2)]
        assert [e.kind if e else None for e in got] == ["history.created", "history.renamed"]
        assert got[1] == renamed
        assert await own.get(timeout=0.1) is None
        assert not store.events.crosses_processes
    finally:
        await store.close()


async def test_concurrent_writes_deliver_every_event_in_order_per_history(
    postgres_cluster: object, tmp_path: Path
) -> None:
    """One write of a process carries events at a time; the others' go after their commit
    through the sender. Every event arrives, each history's in order."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            made = [await one.histories.create("alice", agent="demo") for _ in range(6)]

            async def turn(history_id: str) -> list[UserEvent]:
                sent = []
                for version in (1, 2, 3):
                    started = _event(history_id, "turn.started", turnId=str(version))
                    await one.events.publish(started)
                    renamed = _event(history_id, title=str(version))
                    change = HistoryChange(title=str(version), events=[renamed])
                    await one.histories.apply(history_id, change, expected_version=version)
                    sent += [started, renamed]
                return sent

            sent = await asyncio.gather(*(turn(h.id) for h in made))
            got = await _next(heard, sum(len(s) for s in sent))
            for history, theirs in zip(made, sent, strict=True):
                assert [e for e in got if e and e.history_id == history.id] == theirs


async def test_a_write_behind_more_events_than_it_takes_keeps_its_historys_order(
    postgres_cluster: object, tmp_path: Path
) -> None:
    """A write takes at most `_SEND_MAX` of the events waiting: when one of its own history's
    is left behind, its own events must not go ahead of it (they go after its commit, through
    the sender, behind it)."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            history = await one.histories.create("alice", agent="demo")
            # Published at once (no await yields): none is on its way yet.
            ahead = [_event("a" * 24, title=str(n)) for n in range(_SEND_MAX)]
            for event in ahead:
                await one.events.publish(event)
            started = _event(history.id, "turn.started", turnId="t1")
            await one.events.publish(started)
            renamed = _event(history.id, title="Trip")
            change = HistoryChange(title="Trip", events=[renamed])
            await one.histories.apply(history.id, change, expected_version=1)
            got = await _next(heard, len(ahead) + 2)
            assert [e for e in got if e and e.history_id == history.id] == [started, renamed]
            assert [e for e in got if e and e.history_id != history.id] == ahead


async def test_closing_sends_what_waits_for_the_gather_at_once(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("handrail.store.events._SEND_GATHER_S", 30.0)
    url = pg_url(postgres_cluster)
    one = await Store.open(url, blob_dir=tmp_path / "a")
    two = await Store.open(url, blob_dir=tmp_path / "b")
    try:
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            sent = _event("a" * 24, title="last words")
            await one.events.publish(sent)
            assert await heard.get(timeout=0.3) is None  # waiting for the gather
            await asyncio.wait_for(one.close(), 5)
            assert await _next(heard, 1) == [sent]
    finally:
        await one.close()
        await two.close()
