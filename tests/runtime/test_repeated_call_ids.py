"""A model (or an adapter's agent) that numbers its tool calls anew each turn, or gives no id,
cannot put two calls under one id in a conversation: the step runner gives such a call an id
the conversation does not hold yet, so an answer to one ask never changes another's status and
each result pairs with its own call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from handrail.runtime.agent import Agent
from handrail.runtime.messages import ToolCall, ToolResultMessage, UserMessage
from handrail.runtime.models.base import (
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
)
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")


class NumberingModel:
    """Asks to confirm once per message, always as call ``call_id``; says "ok" after the
    answer."""

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id

    @property
    def name(self) -> str:
        return "numbering"

    @property
    def supports_tools(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        last = request.messages[-1]
        if isinstance(last, UserMessage):
            arguments = {"prompt": f"Go ahead with {last.text}?"}
            yield ToolCallPart(
                call=ToolCall(id=self.call_id, name="ask_confirm", arguments=arguments)
            )
            yield StepEnd(finish_reason="tool_calls")
            return
        assert isinstance(last, ToolResultMessage)
        yield TextDelta(text="ok")
        yield StepEnd(finish_reason="stop")


async def _ask(runtime: Runtime, prompt: str, history_id: str | None) -> dict[str, Any]:
    turn = await runtime.start_prompt(ALICE, prompt, history_id=history_id)
    events = [e async for e in turn.stream()]
    return {"history_id": turn.history_id, "ask": next(e["ask"] for e in events if "ask" in e)}


async def _answer(runtime: Runtime, history_id: str, tool_call_id: str, confirmed: bool) -> None:
    answer = {"toolCallId": tool_call_id, "action": "accept", "content": {"confirmed": confirmed}}
    turn = await runtime.start_answer(ALICE, history_id, answer)
    events = [e async for e in turn.stream()]
    assert not [e for e in events if "error" in e], events


@pytest.mark.parametrize(
    ("given", "ids"), [("call_1", ["call_1", "call_1_1"]), ("", ["call_1", "call_2"])]
)
async def test_a_repeated_call_id_gets_one_the_conversation_does_not_hold(
    store: Store, caplog: pytest.LogCaptureFixture, given: str, ids: list[str]
) -> None:
    runtime = Runtime(store=store, agents=Agent("helper"), model=NumberingModel(given))
    try:
        first = await _ask(runtime, "the first thing", None)
        history_id = first["history_id"]
        assert first["ask"]["toolCallId"] == ids[0]
        await _answer(runtime, history_id, ids[0], confirmed=True)
        with caplog.at_level(logging.WARNING, logger="handrail.runtime"):
            second = await _ask(runtime, "the second thing", history_id)
        assert second["ask"]["toolCallId"] == ids[1]
        assert any(f"it is {ids[1]!r} here" in r.getMessage() for r in caplog.records), (
            caplog.records
        )
        await _answer(runtime, history_id, ids[1], confirmed=False)
    finally:
        await runtime.aclose()
    rows = [r.data for r in await store.histories.rows(history_id)]
    calls = [(r["toolCallId"], r["ask"]["status"]) for r in rows if r["type"] == "tool-call"]
    assert calls == [(ids[0], "answered"), (ids[1], "answered")]
    results = {r["toolCallId"]: r["result"] for r in rows if r["type"] == "tool-result"}
    assert results[ids[0]]["content"] == {"confirmed": True}
    assert results[ids[1]]["content"] == {"confirmed": False}
