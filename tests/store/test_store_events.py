"""The per-user event bus: delivery to the right user, replay by id, reload, and (on
PostgreSQL) events between two stores on one database, as between two processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event as sa_event

from handrail.asks import PendingAsk
from handrail.store import Store, UserEvent
from handrail.store.events import (
    CHANNEL,
    EventBus,
    ask_created_event,
    ask_resolved_event,
)


def _event(user: str, kind: str = "history.renamed", **data: object) -> UserEvent:
    return UserEvent(kind=kind, user_id=user, history_id="h" * 24, data=data)  # type: ignore[arg-type]


def pg_url(cluster: object) -> str:
    """A new database of the throwaway cluster, as the store takes it."""
    return str(cluster.new_database_url()).replace("+asyncpg", "", 1)  # type: ignore[attr-defined]


@contextlib.asynccontextmanager
async def two_stores(url: str, tmp_path: Path) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores on the database at `url`, as two processes have them; closed after."""
    one = await Store.open(url, blob_dir=tmp_path / "a")
    two = await Store.open(url, blob_dir=tmp_path / "b")
    try:
        yield one, two
    finally:
        await one.close()
        await two.close()


@contextlib.asynccontextmanager
async def listening_stores(cluster: object, tmp_path: Path) -> AsyncIterator[tuple[Store, Store]]:
    """`two_stores` on a new database of `cluster`, both listening."""
    async with two_stores(pg_url(cluster), tmp_path) as (one, two):
        await one.events.start()
        await two.events.start()
        yield one, two


async def test_a_subscriber_hears_only_its_users_events(store: Store) -> None:
    async with (
        store.events.subscribe("alice") as alice,
        store.events.subscribe("bob") as bob,
        store.events.subscribe(None) as everyone,
    ):
        await store.events.publish(_event("alice", title="one"))
        await store.events.publish(_event("bob", title="two"))
        first = await alice.get(timeout=2)
        assert first is not None
        assert first.data == {"title": "one"}
        assert await alice.get(timeout=0.05) is None
        second = await bob.get(timeout=2)
        assert second is not None
        assert second.user_id == "bob"
        heard = [await everyone.get(timeout=2), await everyone.get(timeout=2)]
        assert [e.user_id for e in heard if e] == ["alice", "bob"]
    assert store.events.subscribers == 0


async def test_replay_after_an_id_and_reload_for_an_unknown_one() -> None:
    bus = EventBus(window=4)
    sent = [_event("alice", title=str(i)) for i in range(5)]
    for event in sent:
        await bus.publish(event)
    await bus.publish(_event("bob"))
    async with bus.subscribe("alice", last_event_id=sent[2].id) as events:
        replayed = [await events.get(timeout=1), await events.get(timeout=1)]
        assert [e.id for e in replayed if e] == [sent[3].id, sent[4].id]
        assert await events.get(timeout=0.05) is None
    # sent[0] fell out of the four-event window: one reload instead.
    async with bus.subscribe("alice", last_event_id=sent[0].id) as events:
        reload = await events.get(timeout=1)
        assert reload is not None
        assert reload.kind == "reload"
        assert await events.get(timeout=0.05) is None


async def test_a_subscriber_that_falls_behind_gets_reload_then_goes_on() -> None:
    bus = EventBus(queue_size=3)
    async with bus.subscribe("alice") as events:
        for i in range(10):
            await bus.publish(_event("alice", title=str(i)))
        got = await events.get(timeout=1)
        assert got is not None
        assert got.kind == "reload"
        assert await events.get(timeout=0.05) is None
        await bus.publish(_event("alice", title="after"))
        later = await events.get(timeout=1)
        assert later is not None
        assert later.data == {"title": "after"}


async def test_a_subscription_of_some_kinds_hears_only_those() -> None:
    bus = EventBus()
    earlier = _event("alice", kind="turn.stopping")
    await bus.publish(earlier)
    await bus.publish(_event("alice", title="renamed"))
    stops = frozenset({"turn.stopping"})
    async with (
        bus.subscribe(None, kinds=stops) as stopping,
        bus.subscribe("alice", kinds=stops, last_event_id=earlier.id) as replayed,
        bus.subscribe("alice") as every,
    ):
        # The replay after an id gives only its kinds too.
        assert await replayed.get(timeout=0.05) is None
        await bus.publish(_event("alice", title="again"))
        stop = _event("alice", kind="turn.stopping")
        await bus.publish(stop)
        assert await stopping.get(timeout=1) == stop
        assert await stopping.get(timeout=0.05) is None
        assert await replayed.get(timeout=1) == stop
        assert [(await every.get(timeout=1) or earlier).kind for _ in range(2)] == [
            "history.renamed",
            "turn.stopping",
        ]
    assert bus.subscribers == 0
    assert not bus._every_kind
    assert not bus._kind_counts


async def test_reload_is_never_published() -> None:
    with pytest.raises(ValueError, match="reload"):
        await EventBus().publish(_event("alice", kind="reload"))


def test_the_wire_form_round_trips_and_ask_events_show_public_keys_only() -> None:
    pending = PendingAsk(
        tool_call_id="call-1",
        kind="confirm",
        input={"question": "Send?"},
        simple={"kind": "confirm"},
        origin="approval",
        tool_name="send",
        prompt_index=3,
        response_messages=[{"secret": "replay"}],
        confirmation_id="c" * 24,
    )
    created = ask_created_event("alice", "h" * 24, pending)
    assert created.kind == "ask.created"
    assert "promptIndex" not in created.data["ask"]
    assert "responseMessages" not in created.data["ask"]
    assert "confirmationId" not in created.data["ask"]
    assert UserEvent.from_json(created.to_json()) == created
    cancelled = ask_resolved_event("alice", "h" * 24, pending, "cancel", reason="stopped")
    assert cancelled.kind == "ask.cancelled"
    assert cancelled.data == {
        "toolCallId": "call-1",
        "action": "cancel",
        "kind": "confirm",
        "origin": "approval",
        "reason": "stopped",
    }
    assert ask_resolved_event("alice", "h" * 24, pending, "accept").kind == "ask.answered"
    with pytest.raises(ValueError, match="not an event kind"):
        UserEvent.from_json({"kind": "nope", "userId": "a", "id": "b"})


async def test_an_ask_event_concerns_each_approver_and_admins_too(database_url: str) -> None:
    """An ask event of a gate with approvers reaches its owner and each approver (``admins``:
    every admin's subscription), live, replayed, and from another process on PostgreSQL."""
    pending = PendingAsk(
        tool_call_id="call-1",
        kind="confirm",
        input={"prompt": "Wipe?"},
        simple={"kind": "confirm"},
        origin="approval",
        approvers=["bob", "admins"],
        quorum=2,
    )
    created = ask_created_event("alice", "h" * 24, pending)
    assert created.approvers == ("bob", "admins")
    assert created.to_json()["approvers"] == ["bob", "admins"]
    assert UserEvent.from_json(created.to_json()) == created
    assert "approvers" not in _event("alice").to_json()
    answered = ask_resolved_event("alice", "h" * 24, pending, "accept")
    assert answered.concerns("bob")
    assert answered.concerns("root", is_admin=True)
    assert not answered.concerns("carol")
    assert not answered.concerns("root")
    one = await Store.open(database_url)
    two = await Store.open(database_url)
    try:
        await two.events.start()
        async with (
            one.events.subscribe("bob") as bob,
            one.events.subscribe("root", is_admin=True) as root,
            one.events.subscribe("carol") as carol,
            two.events.subscribe("bob") as bob_elsewhere,
        ):
            await one.events.publish(created)
            assert await bob.get(timeout=2) == created
            assert await root.get(timeout=2) == created
            assert await carol.get(timeout=0.1) is None
            if one.db.backend == "postgresql":
                assert await bob_elsewhere.get(timeout=5) == created
            # A turn's events stay the owner's.
            await one.events.publish(_event("alice", "turn.started"))
            assert await bob.get(timeout=0.1) is None
            await one.events.publish(answered)
        async with one.events.subscribe("bob", last_event_id=created.id) as again:
            replayed = await again.get(timeout=1)
            assert replayed is not None
            assert replayed.kind == "ask.answered"
            assert await again.get(timeout=0.05) is None
    finally:
        await one.close()
        await two.close()


@pytest.mark.parametrize("size", [10, 30_000])
async def test_postgresql_carries_events_between_two_stores(
    postgres_cluster: object, tmp_path: Path, size: int
) -> None:
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard, one.events.subscribe("alice") as own:
            sent = _event("alice", title="é" * size)  # several notifications when large
            await one.events.publish(sent)
            got = await heard.get(timeout=5)
            assert got == sent
            mine = await own.get(timeout=1)
            assert mine == sent
            # The publisher hears its own event once, not again through NOTIFY.
            assert await own.get(timeout=0.3) is None
            # What process two heard, it replays.
            await one.events.publish(_event("alice", title="next"))
            assert await heard.get(timeout=5) is not None
        async with two.events.subscribe("alice", last_event_id=sent.id) as again:
            replayed = await again.get(timeout=1)
            assert replayed is not None
            assert replayed.data == {"title": "next"}


@pytest.mark.parametrize("listening", [True, False])
async def test_postgresql_sends_events_published_together_in_one_statement(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listening: bool
) -> None:
    """On the listening connection, or through the pool by a process that does not listen."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        statements: list[str] = []
        pooled: list[str] = []

        @sa_event.listens_for(one.db.engine.sync_engine, "before_cursor_execute")  # type: ignore[union-attr]
        def seen(*args: object) -> None:
            if "pg_notify" in str(args[2]):
                statements.append(str(args[2]))
                pooled.append(str(args[2]))

        execute = asyncpg.Connection.execute

        async def direct(self: asyncpg.Connection, query: str, *args: object, **kw: Any) -> str:
            if "pg_notify" in query:
                statements.append(query)
            return await execute(self, query, *args, **kw)

        monkeypatch.setattr(asyncpg.Connection, "execute", direct)
        await two.events.start()
        if listening:
            await one.events.start()
        own = one.events.open("alice")
        async with two.events.subscribe("alice") as heard:
            sent = [_event("alice", n=i, title="é" * (30_000 if i == 7 else 5)) for i in range(30)]
            await asyncio.gather(*(one.events.publish(e) for e in sent))
            mine = [await own.get(timeout=1) for _ in sent]
            got = [await heard.get(timeout=5) for _ in sent]
            # Every event, the long one too, in the order they were published.
            assert got == mine
            assert sorted(e.data["n"] for e in got if e) == list(range(30))
            assert await heard.get(timeout=0.3) is None
        one.events.discard(own)
        assert 1 <= len(statements) <= 2
        assert bool(pooled) is not listening


async def test_a_process_without_subscribers_keeps_others_events_for_a_replay(
    postgres_cluster: object, tmp_path: Path
) -> None:
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await one.events.start()
        await two.events.start()
        first, second = _event("alice", title="one"), _event("alice", title="é" * 30_000)
        await one.events.publish(first)
        await one.events.publish(second)  # several notifications
        replay = None
        for _ in range(100):  # nobody listens in two: it keeps them as they came
            replay = two.events.since(first.id, "alice")
            if replay:
                break
            await asyncio.sleep(0.05)
        assert replay == [second]
        async with two.events.subscribe("alice", last_event_id=first.id) as late:
            assert await late.get(timeout=1) == second
            assert await late.get(timeout=0.2) is None
        # The publisher heard its own notifications too, and kept each event once.
        await asyncio.sleep(0.3)
        assert one.events.since(first.id, None) == [second]


async def test_others_events_of_kinds_nobody_hears_are_kept_unparsed(
    postgres_cluster: object, tmp_path: Path
) -> None:
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await one.events.start()
        await two.events.start()
        async with two.events.subscribe(None, kinds=frozenset({"turn.stopping"})) as stops:
            first, second = _event("alice", title="one"), _event("alice", title="é" * 30_000)
            stop = _event("alice", kind="turn.stopping")
            for event in (first, second, stop):
                await one.events.publish(event)
            assert await stops.get(timeout=5) == stop
            assert await stops.get(timeout=0.2) is None
            # The renames nobody in two hears are kept as they came, and replayed parsed.
            kept = list(two.events._recent)
            assert [type(e) for e in kept] == [str, str, UserEvent]
            assert two.events.since(first.id, "alice") == [second, stop]
        # A message without its kind in its head (an older process's) is parsed.
        async with two.events.subscribe(None, kinds=frozenset({"turn.stopping"})) as stops:
            old = _event("alice", kind="turn.stopping")
            message = json.dumps({"o": "x" * 24, "e": old.to_json()}, separators=(",", ":"))
            two.events._heard(None, 0, CHANNEL, "m|" + message)
            assert await stops.get(timeout=1) == old


async def test_events_stay_in_the_process_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    async with two_stores(url, tmp_path) as (one, two), two.events.subscribe("alice") as heard:
        await one.events.publish(_event("alice"))
        assert await heard.get(timeout=0.2) is None


async def test_a_dropped_listening_connection_reconnects_with_reload(
    postgres_cluster: object, tmp_path: Path
) -> None:
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            # Another session ends the listener's connection, as a restart would.
            await one.db.write(_terminate_listeners)
            reload = await heard.get(timeout=10)
            assert reload is not None
            assert reload.kind == "reload"
            for _ in range(50):
                await one.events.publish(_event("alice", title="back"))
                got = await heard.get(timeout=0.2)
                if got is not None:
                    break
            assert got is not None
            assert got.data == {"title": "back"}


async def test_a_replay_from_before_a_lost_listening_connection_is_a_reload(
    postgres_cluster: object, tmp_path: Path
) -> None:
    """What came while the link was down is missing from the kept events: a client that
    reconnects with an id from before the gap reads the state again."""
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        async with two.events.subscribe("alice") as heard:
            before = _event("alice", title="before")
            await one.events.publish(before)
            assert await heard.get(timeout=5) == before
            await one.db.write(_terminate_listeners)
            reload = await heard.get(timeout=10)
            assert reload is not None
            assert reload.kind == "reload"
        async with two.events.subscribe("alice", last_event_id=before.id) as replay:
            missed = await replay.get(timeout=1)
            assert missed is not None
            assert missed.kind == "reload"
            assert missed.data == {"reason": "missed"}


def _terminate_listeners(connection: object) -> None:
    from sqlalchemy import text

    connection.execute(  # type: ignore[attr-defined]
        text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database() "
            "AND query LIKE 'LISTEN%'"
        )
    )


async def test_publishing_is_safe_from_many_tasks() -> None:
    bus = EventBus()
    async with bus.subscribe("alice") as events:
        await asyncio.gather(*(bus.publish(_event("alice", n=i)) for i in range(20)))
        got = [await events.get(timeout=1) for _ in range(20)]
        assert sorted(e.data["n"] for e in got if e) == list(range(20))
