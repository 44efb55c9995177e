"""A subscription to the event bus (`handrail.store.events`): the events of one user, or of
all, queued in the order the process heard them, with ``reload`` when it falls behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Final

from handrail.store.user_events import UserEvent

__all__ = ["Subscription"]


#: What `Subscription.end` queues (compared by identity).
_END: Final = UserEvent(kind="reload", user_id="", id="end", data={"reason": "end"})


class Subscription:
    """The events of one user (or of all, with ``user_id=None``), in the order this process
    heard them. Iterate it (``async for``); leave the bus's ``async with`` to end it."""

    def __init__(
        self,
        user_id: str | None,
        queue_size: int,
        *,
        is_admin: bool = False,
        kinds: frozenset[str] | None = None,
    ) -> None:
        self.user_id = user_id
        #: The kinds it hears (None: every kind); ``reload`` reaches it whatever they are.
        self.kinds = kinds
        #: Whether the user is an admin (then the events of gates that ``admins`` approve
        #: reach them).
        self.is_admin = is_admin
        self._queue: asyncio.Queue[UserEvent] = asyncio.Queue()
        self._size = queue_size
        self._lagging = False
        #: True once `end` was called and the queue ran out.
        self.ended = False

    def wants(self, event: UserEvent) -> bool:
        if self.kinds is not None and event.kind not in self.kinds:
            return False
        return self.user_id is None or event.concerns(self.user_id, is_admin=self.is_admin)

    def put(self, event: UserEvent) -> None:
        """Queue `event` (from the bus's event loop). A full queue is dropped for one
        ``reload``."""
        if self._lagging:
            return
        if self._queue.qsize() >= self._size:
            while not self._queue.empty():
                self._queue.get_nowait()
            self._queue.put_nowait(self.reload("behind"))
            self._lagging = True
            return
        self._queue.put_nowait(event)

    def end(self) -> None:
        """End the subscription from outside (a server shutting down): `get` returns None
        from now on, and iterating stops."""
        self._queue.put_nowait(_END)

    def reload(self, reason: str) -> UserEvent:
        return UserEvent(kind="reload", user_id=self.user_id or "", data={"reason": reason})

    async def get(self, timeout: float | None = None) -> UserEvent | None:
        """The next event; None when `timeout` seconds pass without one, or once `end` was
        called (then `ended` is True)."""
        if self.ended:
            return None
        try:
            if timeout is None:
                event = await self._queue.get()
            else:
                event = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if event is _END:
            self.ended = True
            return None
        if event.kind == "reload":
            self._lagging = False
        return event

    def __aiter__(self) -> AsyncIterator[UserEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[UserEvent]:
        while True:
            event = await self.get()
            if event is None:
                return
            yield event
