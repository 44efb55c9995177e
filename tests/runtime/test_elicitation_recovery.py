"""The elicitation gate when the process that took the answer stops before the turn's end, in
process on both databases: runtime A goes on with the call (the server's retry was sent) and
stops renewing its lease; runtime B takes the turn over. A call of a tool that is not safe to
run again is reported uncertain, never sent again; a read-only one is sent again; a legacy
call, parked in A, is gone with it and the model reads to call the tool again.

An elicitation waiting in line behind another ask (stored on that ask's ``queued``) is asked
once that ask is answered, by whichever process carries the answer out: one that took the turn
over, or the sweeper that expired the ask."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest
from test_recovery import ALICE, ask_choice, dead, lapse, result, rows

from doubles import GatedModel
from handrail.policy import ToolHints
from handrail.runtime.agent import Agent
from handrail.runtime.connected import ConnectionTool
from handrail.runtime.gate import GateRequired
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.store import Store, UserEvent

FORM = {
    "title": "Shop asks",
    "prompt": "Which city?",
    "fields": [{"id": "city", "label": "City", "type": "text", "required": True}],
    "submitLabel": "Send",
    "allowDecline": True,
}


def shop_agent(
    sent: list[dict[str, Any]],
    *,
    read_only: bool,
    protocol: str,
    parked: str | None = None,
    **clock: Any,
) -> Agent:
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
                "mcp": {
                    "protocol": protocol,
                    "requestState": "opaque-1",
                    "key": "q",
                    **({"parked": parked} if parked else {}),
                },
            },
        )

    async def resume(
        arguments: Mapping[str, Any], state: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> Any:
        sent.append({"state": state["requestState"], "answer": dict(answer)})
        return f"booked in {answer['content']['City']}"

    agent = Agent("ops", instructions="Book trips.", **clock)
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


CITY = {"action": "accept", "content": {"values": {"city": "Porto"}}}


async def asked(turn: Any) -> dict[str, Any]:
    events = [e async for e in turn.stream()]
    return dict(next(e["ask"] for e in events if "ask" in e))


async def test_an_elicitation_in_line_is_asked_by_the_process_that_took_the_turn_over(
    store: Store,
) -> None:
    sent: list[dict[str, Any]] = []
    await store.permissions.set("alice", "local:ops", "non-consequential")
    a = dead(
        Runtime(
            store=store,
            agents=shop_agent(sent, read_only=False, protocol="2026-07-28"),
            model=ScriptedModel(),
            lease_s=0.4,
        )
    )
    b = Runtime(
        store=store,
        agents=shop_agent(sent, read_only=False, protocol="2026-07-28"),
        model=ScriptedModel(),
        lease_s=0.4,
    )
    turn = await a.start_prompt(ALICE, ask_choice() + "\ncall book {}")
    choice = await asked(turn)
    assert "origin" not in choice  # the model's own ask first; the elicitation waits in line
    # A stops after it committed the answer, before it carried it out.
    stalled, go_on = asyncio.Event(), asyncio.Event()
    resolve = a._calls.resolve

    async def stopped_here(*args: Any) -> None:
        stalled.set()
        await go_on.wait()
        await resolve(*args)

    a._calls.resolve = stopped_here  # type: ignore[method-assign]
    pick = {"toolCallId": choice["toolCallId"], "action": "accept", "content": {"selected": ["a"]}}
    answered = await a.start_answer(ALICE, turn.history_id, pick)
    await stalled.wait()
    await lapse()
    [taken] = await b.recovery.sweep()
    elicitation = await asked(taken)
    assert elicitation["origin"] == "elicitation"
    assert elicitation["input"]["prompt"] == "Which city?"
    assert sent == []  # nothing was sent to the server before the person answered
    done = await b.start_answer(
        ALICE, turn.history_id, {**CITY, "toolCallId": elicitation["toolCallId"]}
    )
    assert (await result(done))["text"].startswith("ask_choice returned: ")
    assert sent == [
        {"state": "opaque-1", "answer": {"action": "accept", "content": {"City": "Porto"}}}
    ]
    assert any(
        r["type"] == "tool-result" and r["result"] == "booked in Porto"
        for r in await rows(store, turn.history_id)
    )
    go_on.set()
    assert "taken over" in (await result(answered))["error"]
    await a.aclose()
    await b.aclose()


async def test_an_expired_ask_brings_up_the_elicitation_waiting_behind_it(store: Store) -> None:
    sent: list[dict[str, Any]] = []
    await store.permissions.set("alice", "local:ops", "non-consequential")
    runtime = Runtime(
        store=store,
        agents=shop_agent(sent, read_only=True, protocol="2026-07-28", expires_after=60),
        model=ScriptedModel(),
    )
    turn = await runtime.start_prompt(ALICE, ask_choice() + "\ncall book {}")
    choice = await asked(turn)
    expires = dt.datetime.fromisoformat(choice["expiresAt"].replace("Z", "+00:00"))
    [expired] = await runtime.sweep_gates(expires + dt.timedelta(seconds=1))
    elicitation = await asked(expired)
    assert elicitation["origin"] == "elicitation"
    # Its own clock starts when it is asked.
    assert elicitation["expiresAt"] > choice["expiresAt"]
    done = await runtime.start_answer(
        ALICE, turn.history_id, {**CITY, "toolCallId": elicitation["toolCallId"]}
    )
    assert 'book returned: "booked in Porto"' in (await result(done))["text"]
    await runtime.aclose()


async def test_a_forwarded_answer_whose_holder_stopped_is_taken_over(store: Store) -> None:
    """A legacy call another process holds: on PostgreSQL the answer goes to the holder, which
    says it holds the call and then stops before it takes the turn; its lease lapses, this
    process takes the turn over, and the model reads that the call did not finish. On SQLite
    (no other process to ask) the answer is cancelled ``server_restarted`` at once. Either
    way the client that answered gets the turn's outcome."""
    sent: list[dict[str, Any]] = []
    await store.permissions.set("alice", "local:ops", "non-consequential")
    runtime = Runtime(
        store=store,
        agents=shop_agent(sent, read_only=True, protocol="legacy", parked="held-elsewhere"),
        model=ScriptedModel(),
        lease_s=0.4,
    )
    holder = store.events.open(None)

    async def holds_then_stops() -> None:
        """The other process: it says it holds the call, then it is gone."""
        async for event in holder:
            if event.kind == "ask.forwarding" and event.data.get("step") == "find":
                data = {"step": "held", "key": event.data["key"]}
                await store.events.publish(
                    UserEvent(
                        kind="ask.forwarding",
                        user_id=event.user_id,
                        history_id=event.history_id,
                        data=data,
                    )
                )

    listening = asyncio.create_task(holds_then_stops())
    try:
        turn = await runtime.start_prompt(ALICE, "call book {}")
        elicitation = await asked(turn)
        answered = await runtime.start_answer(
            ALICE, turn.history_id, {**CITY, "toolCallId": elicitation["toolCallId"]}
        )
        if store.events.crosses_processes:
            await lapse()
            [taken] = await runtime.recovery.sweep()
            await taken.wait()
        done = await result(answered)
        assert done["text"].startswith("book failed: The call of book waited"), done
        assert sent == []  # the call never went on anywhere
        stored = [
            r["result"]
            for r in await rows(store, turn.history_id)
            if r["type"] == "tool-result" and r["toolCallId"] == elicitation["toolCallId"]
        ]
        if store.events.crosses_processes:
            assert stored == [CITY]  # stored as sent; the takeover told the model
        else:
            assert stored == [{"action": "cancel", "reason": "server_restarted"}]
    finally:
        listening.cancel()
        store.events.discard(holder)
        await runtime.aclose()
