"""What the turns running now do, for a conversation opened mid-turn: the history view's
``running: {turnId, phase, tool?, since}`` (or ``null``).

`RunningBoard` keeps the state of this process's turns as they go (started, each
``turn.progress``, ended). On PostgreSQL, where other processes serve the same conversations,
it also keeps it in the database (`handrail.store.running`): a writer task writes what changed
since its last write in one transaction (so a turn never waits for it), each conversation's
change once it is `WRITE_AFTER` old (with what else is due then): a turn that ends sooner costs
the database nothing, even when other turns' rows are written meanwhile, and a phase that lasted
less than that is never written. Between writes the writer sleeps on an alarm (a timer of the
loop) that a change brings forward, so a turn costs the writer no wake-up of its own. It
renews this process's rows every third of the lease time with one statement. A
conversation's state is this process's own when the turn runs here, else the database's row,
unless that row lapsed (its process stopped: read as not running). On SQLite there is one
process, and the board is all there is, as with the event bus.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Final

from .._util import Failing, utc_now
from ..store.running import RunningTurn
from .turn import Turn

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["STARTING", "RunningBoard"]

log = logging.getLogger("handrail.runtime")

#: The phase of a turn before its first ``turn.progress`` event.
STARTING: Final = "starting"

#: How old a conversation's first unwritten change is when the writer writes it (the changes
#: due by then go with it).
WRITE_AFTER: Final = 0.1


class RunningBoard:
    """The running turns of one runtime, and the reads of every process's."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        #: This process's turns by conversation: the turn's id, what it does (its progress
        #: data) and since when; made a `RunningTurn` only when read or written (`_running`),
        #: not at each change.
        self._local: dict[str, tuple[str, dict[str, Any], dt.datetime]] = {}
        #: The conversations changed since their last write, each with the loop time of its
        #: first change not written.
        self._dirty: dict[str, float] = {}
        #: The conversations whose row this process wrote and has not removed.
        self._written: set[str] = set()
        #: What the writer task sleeps on between writes (None: it is awake), the timer that
        #: ends that sleep and the loop time it is set for. A change brings the timer forward
        #: instead of waking the task: a turn over before its change is due costs a timer,
        #: not a wake-up of the writer.
        self._sleep: asyncio.Future[None] | None = None
        self._alarm: asyncio.TimerHandle | None = None
        self._alarm_at = 0.0
        self._writer: asyncio.Task[None] | None = None
        self._closing = False
        self._last_renewal = utc_now()

    @property
    def shared(self) -> bool:
        """Whether other processes may serve the same conversations (PostgreSQL)."""
        return self.runtime.store.db.backend == "postgresql"

    # --------------------------------------------------------------------------- changes

    def started(self, turn: Turn) -> None:
        self._set(turn, {"phase": STARTING})

    def progressed(self, turn: Turn, progress: dict[str, Any]) -> None:
        """Record what `turn` does now (the data of its ``turn.progress`` event)."""
        turn.progress = progress
        if turn.history_id in self._local:
            self._set(turn, progress)

    def ended(self, turn: Turn) -> None:
        held = self._local.get(turn.history_id)
        if held is not None and held[0] == turn.id:
            del self._local[turn.history_id]
            if turn.history_id in self._written:
                self._changed(turn.history_id)
            else:  # never written: nothing to write or remove
                self._dirty.pop(turn.history_id, None)

    def _set(self, turn: Turn, progress: dict[str, Any]) -> None:
        self._local[turn.history_id] = (turn.id, progress, utc_now())
        self._changed(turn.history_id)

    def _running(self, history_id: str) -> RunningTurn | None:
        """The `RunningTurn` of this process's turn in the conversation, or None."""
        held = self._local.get(history_id)
        if held is None:
            return None
        turn_id, progress, since = held
        tool = progress.get("toolName")
        call = progress.get("toolCallId")
        title = progress.get("toolTitle")
        return RunningTurn(
            history_id=history_id,
            turn_id=turn_id,
            owner=self.runtime.owner,
            phase=str(progress.get("phase", STARTING)),
            since=since,
            until=self._until(since),
            tool_name=tool if isinstance(tool, str) else None,
            tool_call_id=call if isinstance(call, str) else None,
            tool_title=title if isinstance(title, str) else None,
        )

    def _changed(self, history_id: str) -> None:
        if not self.shared:
            return
        loop = asyncio.get_running_loop()
        if not self._dirty:  # a later change is due later: only the first moves the alarm
            self._set_alarm(loop, loop.time() + WRITE_AFTER)
        self._dirty.setdefault(history_id, loop.time())
        if self._writer is None and not self._closing:
            self._writer = asyncio.create_task(self._write_forever(), name="handrail-running")

    def _set_alarm(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        """End the writer's sleep at loop time `at` when that is sooner than its alarm."""
        if self._sleep is None or self._sleep.done() or at >= self._alarm_at:
            return
        if self._alarm is not None:
            self._alarm.cancel()
        self._alarm_at = at
        self._alarm = loop.call_at(at, self._ring)

    def _ring(self) -> None:
        """Wake the writer (its alarm, or `aclose`)."""
        sleep = self._sleep
        if sleep is not None and not sleep.done():
            sleep.set_result(None)

    # --------------------------------------------------------------------------- reads

    async def of(self, history_id: str) -> RunningTurn | None:
        """The conversation's running turn, from whichever process runs it (None: none)."""
        here = self._running(history_id)
        if here is not None or not self.shared:
            return here
        found = await self.runtime.store.running.get(history_id, now=utc_now())
        if found is not None and found.owner == self.runtime.owner:
            return None  # this process's turn that ended, its row not removed yet
        return found

    # --------------------------------------------------------------------------- writing

    def _until(self, now: dt.datetime) -> dt.datetime:
        return now + dt.timedelta(seconds=self.runtime.lease_s)

    async def _write_forever(self) -> None:
        every = self.runtime.lease_s / 3
        loop = asyncio.get_running_loop()
        retry_at = 0.0  # after a failed write, not before this loop time
        writes = Failing(log, "recording the running turns")
        while not self._closing:
            # Until the oldest change is due, or (nothing to write) the next renewal; a change
            # meanwhile brings the alarm forward (`_set_alarm`), but not past a failed write's
            # pause: the changes it put back are due at once, and the database is not there.
            now = loop.time()
            due = min(self._dirty.values()) + WRITE_AFTER if self._dirty else now + every
            while max(due, retry_at) > now:
                await self._sleep_until(loop, max(due, retry_at))
                if self._closing:
                    return
                now = loop.time()
                due = min(self._dirty.values()) + WRITE_AFTER if self._dirty else due
            try:
                await self._write(loop.time() - WRITE_AFTER)
            except Exception:
                writes.failed(again_s=every)  # tried again every third of a lease
                retry_at = loop.time() + every
            else:
                writes.succeeded()

    async def _sleep_until(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        """Sleep until loop time `at`, or sooner when `_set_alarm` or `_ring` says so."""
        sleep = self._sleep = loop.create_future()
        self._alarm_at = at
        self._alarm = loop.call_at(at, self._ring)
        try:
            await sleep
        finally:
            self._sleep = None
            if self._alarm is not None:
                self._alarm.cancel()
                self._alarm = None

    async def _write(self, changed_by: float) -> None:
        """Write the changes made by `changed_by` (loop time), and the removals of rows
        whatever their age (a row of a turn over is wrong at once); renew when due."""
        ready = {
            h: at
            for h, at in self._dirty.items()
            if at <= changed_by or (h not in self._local and h in self._written)
        }
        for h in ready:
            del self._dirty[h]
        put = [running for h in ready if (running := self._running(h)) is not None]
        # A turn that ended before its row was written has no row to remove.
        drop = [h for h in ready if h not in self._local and h in self._written]
        try:
            await self.runtime.store.running.flush(self.runtime.owner, put, drop)
        except BaseException:
            for h, at in ready.items():  # written with the next change, or the next renewal
                self._dirty.setdefault(h, at)
            raise
        self._written.difference_update(drop)
        self._written.update(r.history_id for r in put)
        for running in put:
            if running.history_id not in self._local:
                self._changed(running.history_id)  # it ended while its row was written
        now = utc_now()
        due = now - self._last_renewal >= dt.timedelta(seconds=self.runtime.lease_s / 3)
        if due and self._local:
            self._last_renewal = now
            await self.runtime.store.running.renew(
                self.runtime.owner, until=self._until(now), now=now
            )

    async def aclose(self) -> None:
        """Stop the writer (once its write in progress ends: a store write is not cut
        short); the rows of this process's turns are removed."""
        self._closing = True
        writer, self._writer = self._writer, None
        if writer is None:
            return
        self._ring()
        await writer
        for history_id in self._local:
            self._dirty.setdefault(history_id, 0.0)
        self._local.clear()
        try:
            await self._write(float("inf"))
        except Exception:
            log.warning("could not remove the running turns", exc_info=True)
