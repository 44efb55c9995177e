"""The elicitation gate when the process that took the answer stops before the turn's end, in
process on both databases: runtime A goes on with the call (the server's retry was sent) and
stops renewing its lease; runtime B takes the turn over. A call of a tool that is not safe to
run again is reported uncertain, never sent again; a read-only one is sent again; a legacy
call, parked in A, is gone with it and the model reads to call the tool again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from test_recovery import ALICE, GatedModel, dead, lapse, result, rows

from handrail.policy import ToolHints
from handrail.runtime.agent import Agent
from handrail.runtime.connected import ConnectionTool
from handrail.runtime.gate import GateRequired
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.store import Store

FORM = {
    "title": "Shop asks",
    "prompt": "Which city?",
    "fields": [{"id": "city", "label": "City", "type": "text", "required": True}],
    "submitLabel": "Send",
    "allowDecline": True,
}


def shop_agent(sent: list[dict[str, Any]], *, read_only: bool, protocol: str) -> Agent:
    """An agent with one connection tool whose "server" asks for a city, and records each
    retry it gets (`sent`)."""

    async def book() -> Any:
        raise GateRequired(
            "elicitation",
            kind="form",
            input=FORM,
            state={
                "connectionId": "local:ops",
                "elicitation": {"mode": "form", "server": "Shop"},
                "elicitationForm": {
                    "mode": "form",
                    "kind": "form",
                    "fields": {"city": {"name": "City", "type": "string"}},
                },
                "mcp": {"protocol": protocol, "requestState": "opaque-1", "key": "q"},
            },
        )

    async def resume(
        arguments: Mapping[str, Any], state: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> Any:
        sent.append({"state": state["requestState"], "answer": dict(answer)})
        return f"booked in {answer['content']['City']}"

    agent = Agent("ops", instructions="Book trips.")
    agent.add_tool(
        ConnectionTool(
            name="book",
            description="Book a trip.",
            input_schema={"type": "object", "properties": {}},
            function=book,
            hints=ToolHints(read_only=read_only, destructive=False, open_world=False),
            resume=resume,
        )
    )
    return agent


@pytest.mark.parametrize(
    ("read_only", "protocol"),
    [(False, "2026-07-28"), (True, "2026-07-28"), (True, "legacy")],
)
async def test_a_taken_over_elicitation_answer(
    store: Store, read_only: bool, protocol: str
) -> None:
    sent: list[dict[str, Any]] = []
    await store.permissions.set("alice", "local:ops", "non-consequential")
    model_a = GatedModel()
    a = dead(
        Runtime(
            store=store,
            agents=shop_agent(sent, read_only=read_only, protocol=protocol),
            model=model_a,
            lease_s=0.4,
        )
    )
    b = Runtime(
        store=store,
        agents=shop_agent(sent, read_only=read_only, protocol=protocol),
        model=ScriptedModel(),
        lease_s=0.4,
    )
    turn = await a.start_prompt(ALICE, "call book {}")
    events = [e async for e in turn.stream()]
    ask = next(e["ask"] for e in events if "ask" in e)
    assert ask["origin"] == "elicitation"
    model_a.armed = True
    answer = {
        "toolCallId": ask["toolCallId"],
        "action": "accept",
        "content": {"values": {"city": "Porto"}},
    }
    # (A legacy call is parked nowhere here: the answer is the cancel that says so.)
    answered = await a.start_answer(ALICE, turn.history_id, answer)
    await model_a.waiting.wait()  # A went on with the call, then stops
    assert len(sent) == (0 if protocol == "legacy" else 1)
    await lapse()
    [taken] = await b.recovery.sweep()
    done = await result(taken)
    if protocol == "legacy":
        assert sent == []
        assert done["text"].startswith("book failed: The call of book waited")
    elif read_only:
        retry = {"state": "opaque-1", "answer": {"action": "accept", "content": {"City": "Porto"}}}
        assert sent == [retry, retry]  # safe to send again: sent again
        assert done["text"] == 'book returned: "booked in Porto"'
    else:
        assert len(sent) == 1  # never sent again by itself
        assert "TOOL_EXECUTION_UNCERTAIN" in done["text"]
    model_a.release.set()
    assert "taken over" in (await result(answered))["error"]
    assert len([r for r in await rows(store, turn.history_id) if r["type"] == "assistant"]) == 1
    await a.aclose()
    await b.aclose()
