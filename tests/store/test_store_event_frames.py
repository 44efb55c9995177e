"""Several events in one PostgreSQL notification (`handrail.store.event_wire.notifications`)."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import asyncpg
import pytest

from handrail.store import Store, UserEvent
from handrail.store.event_wire import (
    CHANNEL,
    messages_in,
    notifications,
    payloads_of,
)
from handrail.store.events import EventBus
from handrail.store.prepared import NOTIFICATIONS_SEPARATOR

ORIGIN = "a" * 24
OTHER = "b" * 24
LIMIT = 8000  # PostgreSQL refuses a payload of this many bytes or more


def _event(n: int, title: str = "t", kind: str = "history.renamed") -> UserEvent:
    return UserEvent(kind=kind, user_id="alice", history_id="h" * 24, data={"n": n, "title": title})  # type: ignore[arg-type]


def _messages(sent: str) -> list[str]:
    """The whole messages the notifications of `sent` hold, in order, parts put together."""
    out: list[str] = []
    parts: list[str] = []
    for payload in sent.split(NOTIFICATIONS_SEPARATOR):
        assert len(payload.encode()) < LIMIT
        several = messages_in(payload)
        if several is not None:
            assert len(several) >= 2
            out.extend(several)
        elif payload.startswith("m|"):
            out.append(payload[2:])
        else:
            _, _key, index, count, part = payload.split("|", 4)
            parts.append(part)
            if int(index) == int(count) - 1:
                out.append("".join(parts))
                parts = []
    assert not parts
    return out


def test_messages_that_follow_each_other_share_a_notification_in_order() -> None:
    events = [_event(n) for n in range(40)]
    payloads = [p for e in events for p in payloads_of(ORIGIN, e)]
    sent = notifications(payloads)
    count = len(sent.split(NOTIFICATIONS_SEPARATOR))
    # 40 messages of about 250 bytes: two notifications, not forty.
    assert count == 2
    assert _messages(sent) == [p[2:] for p in payloads]
    assert [json.loads(m)["e"]["data"]["n"] for m in _messages(sent)] == list(range(40))


def test_a_long_message_goes_in_parts_between_packed_ones() -> None:
    events = [_event(0), _event(1, title="é" * 20_000), _event(2), _event(3, title="€" * 1_000)]
    payloads = [p for e in events for p in payloads_of(ORIGIN, e)]
    sent = notifications(payloads)
    kinds = [n[:2] for n in sent.split(NOTIFICATIONS_SEPARATOR)]
    # The first alone before the parts; after them, the short one and the one of 3000
    # bytes together (counted in bytes, not characters).
    assert kinds[0] == "m|"
    assert set(kinds[1:-1]) == {"c|"}
    assert kinds[-1] == "b|"
    assert [json.loads(m)["e"]["data"]["n"] for m in _messages(sent)] == [0, 1, 2, 3]


def test_packing_counts_bytes_and_never_passes_postgresqls_limit() -> None:
    # Messages of 3-byte characters of about 4,750 bytes each: two would pass the limit.
    events = [_event(n, title="€" * 1_500) for n in range(5)]
    payloads = [p for e in events for p in payloads_of(ORIGIN, e)]
    assert all(p.startswith("m|") for p in payloads)
    sent = notifications(payloads)
    assert len(sent.split(NOTIFICATIONS_SEPARATOR)) == 5
    assert [json.loads(m)["e"]["data"]["n"] for m in _messages(sent)] == list(range(5))
    # Small ones fill a notification up to the limit, and no further.
    events = [_event(n, title="€" * 200) for n in range(100)]
    payloads = [p for e in events for p in payloads_of(ORIGIN, e)]
    sent = notifications(payloads).split(NOTIFICATIONS_SEPARATOR)
    assert len(sent) > 1
    for this, following in itertools.pairwise(sent):
        assert len(this.encode()) < LIMIT
        # Full: the next one's first message would have passed 7900 bytes.
        first = (messages_in(following) or [following[2:]])[0]
        assert len(this.encode()) + 1 + len(first.encode()) > 7900
    assert [json.loads(m)["e"]["data"]["n"] for m in _messages("\x1f".join(sent))] == list(
        range(100)
    )


def test_no_message_holds_a_separator() -> None:
    """JSON escapes the control characters the frames use, so text holding them is safe."""
    event = _event(0, title="a\x1eb\x1fc")
    (payload,) = payloads_of(ORIGIN, event)
    assert "\x1e" not in payload
    assert NOTIFICATIONS_SEPARATOR not in payload
    sent = notifications([payload, *payloads_of(ORIGIN, _event(1))])
    (first, second) = _messages(sent)
    assert json.loads(first)["e"]["data"]["title"] == "a\x1eb\x1fc"
    assert json.loads(second)["e"]["data"]["n"] == 1


async def test_a_process_hears_each_message_of_a_shared_notification() -> None:
    """Its own are dropped, a repeat it heard already too, the others delivered in order."""
    bus = EventBus()
    theirs = [_event(n) for n in range(3)]
    mine = _event(9)
    async with bus.subscribe("alice") as heard:
        first = [p for e in theirs[:2] for p in payloads_of(OTHER, e)]
        bus._heard(None, 0, CHANNEL, notifications(first))
        again = payloads_of(OTHER, theirs[1], again=True)
        later = [*payloads_of(bus.origin, mine), *again, *payloads_of(OTHER, theirs[2])]
        packed = notifications(later)
        assert packed.startswith("b|")
        bus._heard(None, 0, CHANNEL, packed)
        got = [await heard.get(timeout=1) for _ in range(3)]
        assert got == theirs
        assert await heard.get(timeout=0.1) is None


async def test_a_writes_events_reach_another_process_in_fewer_notifications(
    postgres_cluster: object, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url())  # type: ignore[attr-defined]
    one = await Store.open(url, blob_dir=tmp_path / "a")
    two = await Store.open(url, blob_dir=tmp_path / "b")
    raw: asyncpg.Connection = await postgres_cluster.connect(url)  # type: ignore[attr-defined]
    heard_raw: list[str] = []
    try:
        await raw.add_listener(CHANNEL, lambda *args: heard_raw.append(args[3]))
        await two.events.start()
        async with two.events.subscribe("alice") as heard:
            sent = [_event(n) for n in range(12)]
            await asyncio.gather(*(one.events.publish(e) for e in sent))
            got = [await heard.get(timeout=5) for _ in sent]
            assert got == sent
            assert await heard.get(timeout=0.3) is None
        # Twelve events published together: one statement, one notification.
        assert len(heard_raw) == 1
        assert heard_raw[0].startswith("b|")
    finally:
        await raw.close()
        await one.close()
        await two.close()


@pytest.mark.parametrize("payload", ["x|nothing", "c|k|0|x|part"])
async def test_a_notification_that_cannot_be_read_is_dropped_with_a_warning(
    payload: str, caplog: pytest.LogCaptureFixture
) -> None:
    bus = EventBus()
    async with bus.subscribe("alice") as heard:
        bus._heard(None, 0, CHANNEL, payload)
        assert await heard.get(timeout=0.1) is None
    assert "could not be read" in caplog.text
