"""The running turns (`handrail.store.running`): written many at once, renewed by their
process in one statement, read as nothing once they lapse, on both backends."""

from __future__ import annotations

import datetime as dt

from handrail._util import utc_now
from handrail.store import Store
from handrail.store.running import RunningTurn

MINUTE = dt.timedelta(minutes=1)


def running(
    history_id: str, owner: str, *, until: dt.datetime, phase: str = "thinking"
) -> RunningTurn:
    return RunningTurn(
        history_id=history_id,
        turn_id=history_id[::-1],
        owner=owner,
        phase=phase,
        since=utc_now(),
        until=until,
    )


async def test_flush_renew_and_lapse(store: Store) -> None:
    now = utc_now()
    a, b, c = ("a" * 24, "b" * 24, "c" * 24)
    await store.running.flush("one", [running(a, "one", until=now + MINUTE)], [])
    await store.running.flush(
        "two", [running(b, "two", until=now - MINUTE), running(c, "two", until=now + MINUTE)], []
    )
    first = await store.running.get(a, now=now)
    assert first is not None
    assert (first.owner, first.phase, first.tool_name) == ("one", "thinking", None)
    assert await store.running.get(b, now=now) is None  # lapsed: its process stopped
    # A change replaces the conversation's row, whoever held it.
    tool = RunningTurn(
        history_id=c,
        turn_id="d" * 24,
        owner="one",
        phase="tool",
        since=now,
        until=now + MINUTE,
        tool_name="lookup",
        tool_call_id="call_1",
    )
    await store.running.flush("one", [tool], [])
    assert await store.running.get(c, now=now) == tool
    # Dropping removes only the dropper's own rows.
    await store.running.flush("two", [], [a, c])
    assert await store.running.get(a, now=now) is not None
    # One statement renews every row of a process; lapsed rows of others go.
    later = now + 2 * MINUTE
    assert await store.running.renew("one", until=later + MINUTE, now=later) == 2
    renewed = await store.running.get(a, now=later)
    assert renewed is not None
    assert renewed.until == later + MINUTE
    assert await store.running.renew("two", until=later, now=later) == 0
    await store.running.flush("one", [], [a, c])
    assert await store.running.get(a, now=now) is None
    assert await store.running.get(c, now=now) is None
