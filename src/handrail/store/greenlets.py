"""PostgreSQL: the greenlets the store's transactions run in, kept for the next one.

A store operation is a plain function of a SQLAlchemy `Connection`; on PostgreSQL it runs on
the sync face of the async engine, in a greenlet whose `await_` calls hand asyncpg's
awaitables to the event loop (SQLAlchemy's `greenlet_spawn`). `greenlet_spawn` makes a new
greenlet for every call, and a new greenlet gets a new Python frame stack, which CPython maps
from the kernel for its first frame and unmaps when the greenlet ends (``mmap``, the page
faults of touching it, ``munmap``): several times the Python work of running the greenlet.
`spawn` runs the function the same way in a greenlet that waits for the next one when it
returns: a kept one when there is one on this thread, else a new one.

`spawn(fn, *args)` behaves as ``greenlet_spawn(fn, *args)``: `fn` runs with the caller's
context variables, its `await_` calls are awaited by the caller (an error of one is raised
inside `fn`, where it was awaited), and its result is returned or its exception raised.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

# greenlet comes with sqlalchemy[asyncio] (its greenlet_spawn's), without type stubs.
from greenlet import getcurrent, greenlet  # type: ignore[import-untyped]

__all__ = ["spawn"]

T = TypeVar("T")

#: Greenlets kept per thread beyond those running: as many as the transactions a busy process
#: runs at once (the pool's size, with autocommit work beside it).
KEPT: Final = 64


class _Done:
    """What a worker hands back when its function has returned or raised (anything else it
    hands back is an awaitable of `await_`)."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any, error: BaseException | None) -> None:
        self.value = value
        self.error = error


class _Worker(greenlet):  # type: ignore[misc]
    # What `sqlalchemy.util.await_` asks of the greenlet it runs in.
    __sqlalchemy_greenlet_provider__ = True


def _serve(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """A worker's body: each function it is given, until it is given None."""
    while True:
        try:
            done = _Done(fn(*args), None)
        except BaseException as exc:
            done = _Done(None, exc)
        del fn, args
        parent: Any = getcurrent().parent
        following = parent.switch(done)
        del done
        if following is None:
            return
        fn, args = following


class _Kept(threading.local):
    def __init__(self) -> None:
        self.free: list[_Worker] = []


_kept = _Kept()


async def spawn(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a greenlet, awaiting what it hands to `await_` (see the module)."""
    free = _kept.free
    driver = getcurrent()
    if free:
        worker = free.pop()
        worker.parent = driver
        worker.gr_context = driver.gr_context
        result = worker.switch((fn, args))
    else:
        worker = _Worker(_serve, driver)
        worker.gr_context = driver.gr_context
        result = worker.switch(fn, args)
    while result.__class__ is not _Done:
        try:
            value = await result
        except BaseException:
            result = worker.throw(*sys.exc_info())
        else:
            result = worker.switch(value)
    # The worker waits in `_serve` for the next function; it keeps no context of this one.
    worker.gr_context = None
    if len(free) < KEPT:
        free.append(worker)
    else:
        worker.switch(None)
    # The worker's frame holds `result` until its next call: it keeps neither the value nor
    # the error (whose traceback holds every frame of the call) alive meanwhile.
    value, error = result.value, result.error
    result.value = result.error = None
    del result
    if error is not None:
        raise error
    return value  # type: ignore[no-any-return]
