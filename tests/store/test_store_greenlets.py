"""`handrail.store.greenlets.spawn`: SQLAlchemy's `greenlet_spawn`, in greenlets kept for the
next call."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

import pytest
from greenlet import getcurrent
from sqlalchemy.util import await_

from handrail.store import greenlets
from handrail.store.greenlets import spawn

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("SEEN")


async def later(value: object) -> object:
    await asyncio.sleep(0)
    return value


async def failing() -> None:
    await asyncio.sleep(0)
    raise LookupError("from the awaitable")


async def test_the_function_awaits_through_the_caller_and_returns_its_value() -> None:
    def work(a: int, b: int) -> tuple[object, ...]:
        return (await_(later(a)), await_(later(b)), a + b)

    assert await spawn(work, 2, 3) == (2, 3, 5)


async def test_an_awaitables_error_is_raised_inside_the_function() -> None:
    def work() -> str:
        try:
            await_(failing())
        except LookupError as error:
            return f"caught {error}"
        return "not raised"

    assert await spawn(work) == "caught from the awaitable"


async def test_the_functions_error_reaches_the_caller_and_the_greenlet_is_kept() -> None:
    def work() -> None:
        await_(later(None))
        raise KeyError("from the function")

    with pytest.raises(KeyError, match="from the function"):
        await spawn(work)
    ran_in = await spawn(getcurrent)
    assert await spawn(getcurrent) is ran_in  # the same greenlet ran both, after the error
    assert ran_in is not getcurrent()


async def test_the_function_sees_the_callers_context() -> None:
    SEEN.set("first")
    assert await spawn(SEEN.get) == "first"

    async def other_task() -> str:
        SEEN.set("second")
        return await spawn(SEEN.get)

    assert await asyncio.create_task(other_task()) == "second"
    assert await spawn(SEEN.get) == "first"  # a kept greenlet holds no earlier context


async def test_concurrent_calls_each_run_in_a_greenlet_of_their_own() -> None:
    def work(n: int) -> tuple[int, object]:
        await_(asyncio.sleep(0.01))
        return n, getcurrent()

    results = await asyncio.gather(*(spawn(work, n) for n in range(10)))
    assert [n for n, _ in results] == list(range(10))
    assert len({id(g) for _, g in results}) == 10
    assert len(greenlets._kept.free) >= 10


async def test_cancelling_the_caller_raises_inside_the_function() -> None:
    saw: list[str] = []
    started = asyncio.Event()

    def work() -> None:
        started.set()
        try:
            await_(asyncio.sleep(60))
        except asyncio.CancelledError:
            saw.append("cancelled")
            raise

    task = asyncio.create_task(spawn(work))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert saw == ["cancelled"]
    assert await spawn(lambda: await_(later("next"))) == "next"


async def test_beyond_the_kept_number_greenlets_end() -> None:
    def work() -> object:
        await_(asyncio.sleep(0.01))
        return getcurrent()

    ran = await asyncio.gather(*(spawn(work) for _ in range(greenlets.KEPT + 5)))
    assert len(greenlets._kept.free) == greenlets.KEPT
    assert sum(1 for g in ran if g.dead) >= 5


class _Result:
    """A value whose lifetime a test follows (`weakref`)."""


async def test_a_kept_greenlet_holds_neither_the_value_nor_the_error_it_handed_back() -> None:
    """A kept greenlet waits for its next call for as long as nobody makes one: what its last
    call returned or raised (a traceback holds every frame it went through) must not stay
    alive with it."""

    def made() -> _Result:
        return _Result()

    value = await spawn(made)
    returned = weakref.ref(value)
    del value

    def raising() -> None:
        local = _Result()
        raise LookupError(local)

    with pytest.raises(LookupError) as caught:
        await spawn(raising)
    raised = weakref.ref(caught.value.args[0])
    del caught
    gc.collect()
    assert returned() is None
    assert raised() is None
