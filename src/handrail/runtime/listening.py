"""`BusListener`: a task of one runtime that hears every user's events of one kind on the
store's bus (the other processes' and this one's own) and hands each to its handler. A handler
that fails is logged, and the next event is heard; closing the listener ends its subscription.

Stop (``turn.stopping``) and forwarded answers (``ask.forwarding``) listen this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..store import Subscription, UserEvent
from ..store.events import EventBus

__all__ = ["BusListener"]

log = logging.getLogger("handrail.runtime")


class BusListener:
    """Hears the events of `kind` that name a history, from `start` to `aclose`, each with its
    history id; `failed` is the log message (with the history id) when `hear` raises."""

    def __init__(
        self,
        bus: EventBus,
        kind: str,
        hear: Callable[[UserEvent, str], Awaitable[None]],
        *,
        name: str,
        failed: str,
    ) -> None:
        self.bus = bus
        self.kind = kind
        self._hear = hear
        self._name = name
        self._failed = failed
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            # Only its kind wakes it (and another process's events of other kinds are not
            # parsed for it).
            events = self.bus.open(None, kinds=frozenset((self.kind,)))
            self._task = asyncio.create_task(self._listen(events), name=self._name)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _listen(self, events: Subscription) -> None:
        try:
            async for event in events:
                if event.kind != self.kind or event.history_id is None:
                    continue
                try:
                    await self._hear(event, event.history_id)
                except Exception:
                    log.exception(self._failed, event.history_id)
        finally:
            self.bus.discard(events)
