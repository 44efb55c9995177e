"""A model of the user's own, without `storable_stream`, cannot break a turn with text the
databases cannot hold: the step runner makes every model's output storable."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

from handrail.runtime.agent import Agent
from handrail.runtime.models.base import (
    ModelEvent,
    ModelRequest,
    TextDelta,
    storable_output,
    storable_stream,
)
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store


class RawModel:
    """Streams a NUL and a lone surrogate, as a careless adapter might."""

    @property
    def name(self) -> str:
        return "raw"

    @property
    def supports_tools(self) -> bool:
        return False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="a\x00b \ud83d")


async def test_an_own_models_unstorable_text_is_replaced(store: Store) -> None:
    runtime = Runtime(store=store, agents=Agent("plain"), model=RawModel())
    principal = Principal(user_id="alice")
    turn = await runtime.start_prompt(principal, "hi")
    result = await turn.result()
    assert result.error is None
    assert result.text == "a\ufffdb \ufffd"
    again = await runtime.start_prompt(principal, "and again", history_id=turn.history_id)
    assert (await again.result()).error is None
    rows = [r.data for r in await store.histories.rows(turn.history_id)]
    assert [r.get("text") for r in rows if r["type"] == "assistant"] == [
        "a\ufffdb \ufffd",
        "a\ufffdb \ufffd",
    ]
    await runtime.aclose()


class CleanModel(RawModel):
    """Uses `storable_stream`: cleaned once, where it streams."""

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="c\x00d")


class CopiedModel(CleanModel):
    """Takes `CleanModel.stream`'s name and attributes (`functools.wraps`) but streams raw
    text of its own: still cleaned by the step runner."""

    @functools.wraps(CleanModel.stream)
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="e\x00f")


async def test_storable_output_cleans_each_models_text_once(store: Store) -> None:
    request = ModelRequest(system="", messages=())
    seen = {}
    for model in (RawModel(), CleanModel(), CopiedModel()):
        seen[type(model).__name__] = "".join(
            [
                event.text
                async for event in storable_output(model, request)
                if isinstance(event, TextDelta)
            ]
        )
    assert seen == {
        "RawModel": "a\ufffdb \ufffd",
        "CleanModel": "c\ufffdd",
        "CopiedModel": "e\ufffdf",
    }
    runtime = Runtime(store=store, agents=Agent("plain"), model=CopiedModel())
    result = await (await runtime.start_prompt(Principal(user_id="alice"), "hi")).result()
    assert result.text == "e\ufffdf"
    await runtime.aclose()
