"""A model of the user's own, without `storable_stream`, cannot break a turn with text the
databases cannot hold: the step runner makes every model's output storable."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handrail.runtime.agent import Agent
from handrail.runtime.models.base import ModelEvent, ModelRequest, TextDelta
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
