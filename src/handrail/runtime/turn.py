"""A running turn as its callers see it: a stream of events, and a result once it finishes.

The turn itself runs as its own task (see `Runtime`); a `Turn` only carries its events. A caller
that stops reading (a client that disconnects) does not stop the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from .._util import new_id
from ..store import UserEvent
from .events import Event


@dataclass(frozen=True, kw_only=True)
class Principal:
    """Who is calling: a user id, and whether they are an admin."""

    user_id: str
    is_admin: bool = False


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """What a headless client gets once the turn finishes (the spec's ``TurnResult``)."""

    history_id: str
    text: str
    title: str | None = None
    pending_ask: dict[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"historyId": self.history_id, "text": self.text}
        if self.title:
            out["title"] = self.title
        if self.pending_ask is not None:
            out["pendingAsk"] = self.pending_ask
        if self.error is not None:
            out["error"] = self.error
        return out


class TurnStopped(Exception):
    """Raised inside a turn at a safe point once the person pressed Stop (`Turn.stop`): the
    runtime saves what the turn did and ends it."""


class StopRequest:
    """Whether the person asked a turn to stop (`Turn.stop_requested`). `set` also calls the
    watchers that `steps.until_stopped` registers while a model step or a tool runs: they
    cancel that work in the turn's own task (no task of its own for each step)."""

    __slots__ = ("_set", "_watchers")

    def __init__(self) -> None:
        self._set = False
        self._watchers: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        watchers, self._watchers = self._watchers, []
        for watcher in watchers:
            watcher()

    def watch(self, watcher: Callable[[], None]) -> None:
        """Call `watcher` once when the stop is requested (until `unwatch`)."""
        self._watchers.append(watcher)

    def unwatch(self, watcher: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._watchers.remove(watcher)


class Turn:
    """The events of one turn, in order. Iterate it for the stream, or await `result()`."""

    def __init__(self, history_id: str, *, user_id: str = "") -> None:
        self.history_id = history_id
        #: The turn's id (the ``turnId`` of its ``turn.*`` events and of ``running``).
        self.id = new_id()
        #: The user the turn speaks for (its history's owner): whose events it publishes.
        self.user_id = user_id
        #: What the turn does now, as its last ``turn.progress`` event said (None: starting).
        self.progress: dict[str, Any] | None = None
        #: Set when the person asked the turn to stop; the turn ends at its next safe point.
        self.stop_requested = StopRequest()
        #: True once the turn ended because of Stop.
        self.stopped = False
        self._events: list[Event] = []
        #: The readers waiting for the next event or the end (all on the turn's event loop,
        #: so no lock is needed).
        self._waiters: list[asyncio.Future[None]] = []
        #: The callers of `wait` (woken by `finish` only, not by every event).
        self._end_waiters: list[asyncio.Future[None]] = []
        self._finished = False
        self.title: str | None = None
        self.pending_summary: dict[str, Any] | None = None
        self.error: str | None = None
        self.task: asyncio.Task[None] | None = None
        #: Set once the turn's last write carried its ``turn.finished`` event (its commit
        #: published it with the write's own): nothing publishes it again.
        self.finished_published = False

    @property
    def events(self) -> list[Event]:
        """Every event so far."""
        return list(self._events)

    async def emit(self, event: Event) -> None:
        self._events.append(event)
        self._wake()

    async def finish(self) -> None:
        self._finished = True
        self._wake()
        waiters, self._end_waiters = self._end_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():  # a reader cancelled meanwhile
                waiter.set_result(None)

    async def _next_change(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter

    async def stream(self) -> AsyncIterator[Event]:
        """Every event from the first, as it comes, until the turn is done."""
        index = 0
        while True:
            while index >= len(self._events) and not self._finished:
                await self._next_change()
            batch = self._events[index:]
            finished = self._finished
            for event in batch:
                yield event
            index += len(batch)
            if finished and index >= len(self._events):
                return

    async def wait(self) -> None:
        """Until the turn is done (one wake-up, not one for each event)."""
        if self._finished:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._end_waiters.append(waiter)
        await waiter

    async def result(self) -> TurnResult:
        """Wait for the turn to finish and sum it up for a headless client."""
        await self.wait()
        text = "".join(e["text"] for e in self._events if "text" in e)
        return TurnResult(
            history_id=self.history_id,
            text=text,
            title=self.title,
            pending_ask=self.pending_summary,
            error=self.error,
        )


def finished_event(turn: Turn, title: str | None, pending_tool_call_id: str | None) -> UserEvent:
    """`turn`'s ``turn.finished`` event: the conversation's title, the ask the turn paused on,
    and whether Stop ended it."""
    data: dict[str, Any] = {}
    if title:
        data["title"] = title
    if pending_tool_call_id is not None:
        data["pendingToolCallId"] = pending_tool_call_id
    if turn.stopped:
        data["stopped"] = True
    data["turnId"] = turn.id
    return UserEvent(
        kind="turn.finished", user_id=turn.user_id, history_id=turn.history_id, data=data
    )
