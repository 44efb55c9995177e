"""Events of a write whose outcome its caller does not know, and of writes around the bus's
close: a write that committed and then raised (a cancel, a lost connection during or after
the COMMIT) loses none of its events and sends none twice; once `EventBus.close` began, a
write that ends starts no task. Two stores on one database stand for two processes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError
from test_store_events import listening_stores, pg_url, two_stores

from handrail.store import HistoryChange, HistoryConflict, Store, UserEvent
from handrail.store.db import Database, may_have_committed
from handrail.store.event_wire import NOTIFY_SQL
from handrail.store.events import EventBus, Subscription


def _event(history_id: str, kind: str = "history.renamed", **data: object) -> UserEvent:
    return UserEvent(kind=kind, user_id="alice", history_id=history_id, data=data)  # type: ignore[arg-type]


async def _next(subscription: Subscription, count: int) -> list[UserEvent | None]:
    return [await subscription.get(timeout=5) for _ in range(count)]


def _then_raise(
    work: Callable[..., Awaitable[Any]], error: BaseException
) -> Callable[..., Awaitable[Any]]:
    """`work` (a `Database.write` or `autocommit`), which commits, then raises `error`: as a
    connection lost right after the COMMIT, or a cancel while the reply was on its way."""

    async def committed_then_raised(*args: Any, **kwargs: Any) -> Any:
        await work(*args, **kwargs)
        raise error

    return committed_then_raised


_AFTER_COMMIT = [ConnectionResetError("lost after the COMMIT"), asyncio.CancelledError()]


def _reload(event: UserEvent | None) -> bool:
    return event is not None and event.kind == "reload" and event.data == {"reason": "uncertain"}


@pytest.mark.parametrize("error", _AFTER_COMMIT, ids=["lost", "cancelled"])
async def test_a_write_that_committed_then_raised_has_its_subscribers_reload(
    store: Store, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """Whether it committed is not known here: its events might tell of a change that is not
    there (an ask that was never made, to a webhook), so what wants them reads the state
    again, now and on a replay from before them."""
    history = await store.histories.create("alice", agent="demo")
    db = store.histories._db
    async with store.events.subscribe("alice") as heard:
        first = _event(history.id, title="first")
        await store.events.publish(first)
        assert await heard.get(timeout=1) == first
        monkeypatch.setattr(db, "write", _then_raise(db.write, error))
        monkeypatch.setattr(db, "autocommit", _then_raise(db.autocommit, error))
        renamed = _event(history.id, title="Trip")
        with pytest.raises(type(error)):
            await store.histories.apply(
                history.id, HistoryChange(title="Trip", events=[renamed]), expected_version=1
            )
        with pytest.raises(type(error)):
            await store.histories.create("alice", agent="demo", announce=True)
        got = await _next(heard, 2)
        assert all(_reload(e) for e in got), got
        assert await heard.get(timeout=0.1) is None
    async with store.events.subscribe("alice", last_event_id=first.id) as replay:
        missed = await replay.get(timeout=1)
        assert missed is not None
        assert missed.kind == "reload"
    async with store.events.subscribe("bob") as other:
        with pytest.raises(type(error)):
            await store.histories.apply(
                history.id,
                HistoryChange(title="x", events=[_event(history.id)]),
                expected_version=2,
            )
        assert await other.get(timeout=0.1) is None  # not bob's


async def test_an_uncertain_write_that_carried_nothing_has_other_processes_reload(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its events went in no transaction (another write carried events then): the other
    processes are told to read the state again, not told of a change that may not be."""
    monkeypatch.setattr("handrail.store.events._WRITES_CARRYING", 0)
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        history = await one.histories.create("alice", agent="demo")
        async with two.events.subscribe("alice") as heard:
            db = one.histories._db
            monkeypatch.setattr(db, "write", _then_raise(db.write, ConnectionResetError()))
            with pytest.raises(ConnectionResetError):
                await one.histories.apply(
                    history.id,
                    HistoryChange(title="Trip", events=[_event(history.id, title="Trip")]),
                    expected_version=1,
                )
            assert _reload(await heard.get(timeout=5))
            assert await heard.get(timeout=0.2) is None


@pytest.mark.parametrize("error", _AFTER_COMMIT, ids=["lost", "cancelled"])
async def test_a_write_that_committed_then_raised_sends_no_event_twice(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        history = await one.histories.create("alice", agent="demo")
        other = await one.histories.create("alice", agent="demo")
        own = one.events.open("alice")
        async with two.events.subscribe("alice") as heard:
            db = one.histories._db
            write = db.write
            monkeypatch.setattr(db, "write", _then_raise(write, error))
            # Published before the write and not sent yet: the write takes it, and it went
            # with the commit, though the write raised.
            earlier = _event(other.id, "turn.started", turnId="t1")
            await one.events.publish(earlier)
            renamed = _event(history.id, title="Trip")
            with pytest.raises(type(error)):
                await one.histories.apply(
                    history.id, HistoryChange(title="Trip", events=[renamed]), expected_version=1
                )
            monkeypatch.setattr(db, "write", write)
            after = _event(history.id, title="after")
            await one.histories.apply(
                history.id, HistoryChange(title="after", events=[after]), expected_version=2
            )
            # Each once, in order: had `earlier` been sent again and not dropped, it came
            # between.
            assert await _next(heard, 3) == [earlier, renamed, after]
            assert await heard.get(timeout=0.2) is None
            got = await _next(own, 3)
            assert got[0] == earlier
            assert _reload(got[1])
            assert got[2] == after
        one.events.discard(own)


async def test_events_sent_again_reach_a_process_that_missed_them(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that raised where its commit may have taken effect, and did not commit: the
    events it took are sent again, and heard (the mark only makes a process that heard them
    already drop them)."""
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        history = await one.histories.create("alice", agent="demo")
        other = await one.histories.create("alice", agent="demo")
        async with two.events.subscribe("alice") as heard:
            db = one.histories._db

            async def lost_before_the_commit(*args: Any, **kwargs: Any) -> Any:
                raise ConnectionResetError("lost")

            monkeypatch.setattr(db, "write", lost_before_the_commit)
            earlier = _event(other.id, "turn.started", turnId="t1")
            await one.events.publish(earlier)
            with pytest.raises(ConnectionResetError):
                await one.histories.apply(
                    history.id,
                    HistoryChange(title="x", events=[_event(history.id)]),
                    expected_version=1,
                )
            assert await _next(heard, 1) == [earlier]


def test_which_errors_leave_the_commit_unknown() -> None:
    assert may_have_committed(asyncio.CancelledError())
    assert may_have_committed(ConnectionResetError())
    assert may_have_committed(TimeoutError())
    lost = OperationalError("COMMIT", None, ConnectionResetError())
    assert may_have_committed(lost)

    class Refused(Exception):
        sqlstate = "23505"

    class Shutdown(Exception):
        sqlstate = "57P01"

    assert not may_have_committed(IntegrityError("INSERT", None, Refused()))
    assert may_have_committed(OperationalError("COMMIT", None, Shutdown()))
    assert not may_have_committed(ValueError("call_x"))


async def _held_apply(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    history_id: str,
    event: UserEvent,
    expected_version: int = 1,
) -> tuple[asyncio.Event, asyncio.Task[Any]]:
    """A write of `history_id` with `event`, under way (its events carried) and held until
    the event returned is set; and its task."""
    go, waiting = asyncio.Event(), asyncio.Event()
    db = store.histories._db
    write = db.write

    async def held_write(*args: Any, **kwargs: Any) -> Any:
        waiting.set()
        await go.wait()
        return await write(*args, **kwargs)

    monkeypatch.setattr(db, "write", held_write)
    change = HistoryChange(title="held", events=[event])
    task = asyncio.create_task(
        store.histories.apply(history_id, change, expected_version=expected_version)
    )
    await waiting.wait()
    return go, task


def _idle(bus: Any) -> bool:
    return bus._sender is None or bus._sender.done()


async def test_close_waits_for_a_write_carrying_events_and_sends_what_it_gives_back(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        history = await one.histories.create("alice", agent="demo")
        async with two.events.subscribe("alice") as heard:
            renamed = _event(history.id, title="Trip")
            go, write = await _held_apply(one, monkeypatch, history.id, renamed)
            # Published while the write carries its history's events: it waits for it.
            behind = _event(history.id, "turn.finished", turnId="t1")
            await one.events.publish(behind)
            closing = asyncio.create_task(one.events.close())
            await asyncio.sleep(0.05)
            assert not closing.done()
            go.set()
            await write
            await closing
            assert _idle(one.events)
            assert await _next(heard, 2) == [renamed, behind]


async def test_a_write_that_settles_after_close_starts_no_task(
    postgres_cluster: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("handrail.store.events._CLOSE_WAIT_S", 0.05)
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        history = await one.histories.create("alice", agent="demo")
        other = await one.histories.create("alice", agent="demo")
        own = one.events.open("alice")
        async with two.events.subscribe("alice") as heard:
            earlier = _event(other.id, "turn.started", turnId="t1")
            await one.events.publish(earlier)  # taken by the write, given back when it fails
            lost = _event(history.id, title="lost")
            go, write = await _held_apply(one, monkeypatch, history.id, lost, expected_version=7)
            await one.events.close()  # does not wait for the write past its time
            caplog.set_level("DEBUG", logger="handrail.events")
            go.set()
            with pytest.raises(HistoryConflict):
                await write
            assert _idle(one.events)
            assert "not sent to other processes" in caplog.text
            late = _event(history.id, title="late")
            await one.events.publish(late)  # here only
            assert _idle(one.events)
            assert await _next(own, 2) == [earlier, late]
            assert await heard.get(timeout=0.2) is None
        one.events.discard(own)


async def test_close_cancels_a_sender_that_does_not_get_through(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("handrail.store.events._CLOSE_WAIT_S", 0.05)
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, _two):
        stuck = asyncio.Event()

        async def never(*args: Any, **kwargs: Any) -> Any:
            stuck.set()
            await asyncio.Event().wait()

        monkeypatch.setattr(one.events._db, "autocommit", never)
        await one.events.publish(_event("h" * 24))
        await stuck.wait()
        sender = one.events._sender
        assert sender is not None
        await asyncio.wait_for(one.events.close(), 5)
        assert sender.cancelled()
        assert _idle(one.events)


@contextlib.asynccontextmanager
async def _sender_and_listener(
    postgres_cluster: object, tmp_path: Path
) -> AsyncIterator[tuple[Store, Store, Database, Callable[..., Awaitable[Any]]]]:
    """Two stores on one database: `one` sends through its pool (it does not listen), `two`
    listens; with `one`'s database and its own `autocommit`, for a test to wrap."""
    async with two_stores(pg_url(postgres_cluster), tmp_path) as (one, two):
        await two.events.start()
        db = one.events._db
        assert db is not None
        yield one, two, db, db.autocommit


async def test_a_send_that_fails_goes_once_more_and_is_heard_once(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sender's statement fails (its connection lost on the way, whether or not it went
    through): it is sent once more, and heard once."""
    async with _sender_and_listener(postgres_cluster, tmp_path) as (one, two, db, autocommit):
        calls: list[bool] = []

        async def lost_once(*args: Any, **kwargs: Any) -> Any:
            calls.append(True)
            result = await autocommit(*args, **kwargs)
            if len(calls) == 1:
                raise ConnectionResetError("lost after it went through")
            return result

        async with two.events.subscribe("alice") as heard:
            first = _event("h" * 24, title="first")
            await one.events.publish(first)
            assert await heard.get(timeout=5) == first
            monkeypatch.setattr(db, "autocommit", lost_once)
            # Lost on its way: once through, once not.
            through, failed = _event("h" * 24, title="through"), _event("h" * 24, title="failed")
            await one.events.publish(through)
            assert await _next(heard, 1) == [through]
            assert await heard.get(timeout=0.3) is None  # not twice

            async def refused_once(*args: Any, **kwargs: Any) -> Any:
                calls.append(False)
                if calls.count(False) == 1:
                    raise ConnectionResetError("lost before it went")
                return await autocommit(*args, **kwargs)

            monkeypatch.setattr(db, "autocommit", refused_once)
            await one.events.publish(failed)
            assert await _next(heard, 1) == [failed]
            assert calls == [True, True, False, False]


async def test_a_notify_lost_on_the_listening_connection_is_heard_once(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listening connection fails while it sends (after the statement went through): the
    pool sends it again, marked so, and it is heard once."""
    async with listening_stores(postgres_cluster, tmp_path) as (one, two):
        execute = asyncpg.Connection.execute
        failed: list[str] = []

        async def lost_after(self: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
            result = await execute(self, query, *args, **kw)
            if query == NOTIFY_SQL and not failed:
                failed.append(query)
                raise ConnectionResetError("lost after it went through")
            return result

        monkeypatch.setattr(asyncpg.Connection, "execute", lost_after)
        async with two.events.subscribe("alice") as heard:
            sent = _event("h" * 24, title="sent")
            await one.events.publish(sent)
            assert await _next(heard, 1) == [sent]
            assert await heard.get(timeout=0.3) is None
        assert failed


async def test_a_close_that_is_cancelled_stops_listening_and_sending(
    postgres_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with listening_stores(postgres_cluster, tmp_path) as (one, _two):
        history = await one.histories.create("alice", agent="demo")
        go, write = await _held_apply(one, monkeypatch, history.id, _event(history.id))
        listener = one.events._listener
        assert listener is not None
        closing = asyncio.create_task(one.events.close())
        await asyncio.sleep(0.05)  # it waits for the write
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert listener.done()
        go.set()
        await write
        assert _idle(one.events)


async def test_a_send_that_keeps_failing_is_tried_until_it_goes_and_heard_once_in_order(
    postgres_cluster: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database out of reach for a while: the sender tries again after a growing pause,
    what was published meanwhile goes after, and each event is heard once, in order."""
    monkeypatch.setattr("handrail.store.events._RESEND_S", (0.05, 0.1))
    async with _sender_and_listener(postgres_cluster, tmp_path) as (one, two, db, autocommit):
        calls: list[str] = []

        async def out_of_reach(*args: Any, **kwargs: Any) -> Any:
            calls.append("try")
            if len(calls) == 2:  # the second try goes through, and its link fails after
                await autocommit(*args, **kwargs)
                raise ConnectionResetError("lost after it went through")
            if len(calls) <= 4:
                raise ConnectionRefusedError("the database is out of reach")
            return await autocommit(*args, **kwargs)

        monkeypatch.setattr(db, "autocommit", out_of_reach)
        async with two.events.subscribe("alice") as heard:
            first = _event("h" * 24, title="first")
            await one.events.publish(first)
            await asyncio.sleep(0.12)  # it failed twice meanwhile
            later = _event("k" * 24, title="later")
            await one.events.publish(later)
            assert await _next(heard, 2) == [first, later]
            assert await heard.get(timeout=0.3) is None  # none twice
        assert len(calls) >= 5
        assert "could not send 1 events to other processes" in caplog.text
        assert _idle(one.events)


async def test_events_waiting_past_the_bound_drop_the_oldest_with_an_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("handrail.store.events._OUTGOING_MAX", 3)
    bus = EventBus()
    bus._outgoing = [(_event("h" * 24, n=n), ["m|x"]) for n in range(5)]
    bus._keep_outgoing_bounded()
    assert [event.data["n"] for event, _ in bus._outgoing] == [2, 3, 4]
    assert "2 events could not reach other processes and were dropped" in caplog.text
