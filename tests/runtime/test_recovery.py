"""Turns that survive a crash, in process on both databases: runtime A stops renewing its turn
lease mid-turn (as a process that died would), runtime B on the same database takes the turn
over once the lease lapses, and A, when it wakes up, writes nothing (its lease was lost)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from doubles import GatedModel
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Principal, Turn
from handrail.store import Store

ALICE = Principal(user_id="alice")
LEASE = 0.4


def dead(runtime: Runtime) -> Runtime:
    """`runtime` as a process that stopped would be: its leases are never renewed."""

    async def no_heartbeat(history_id: str, **_: Any) -> None:
        await asyncio.Event().wait()

    runtime.recovery.heartbeat = no_heartbeat  # type: ignore[method-assign]
    return runtime


def tools_agent(
    ran: list[str], *, idempotent: bool | None = None, trusted: bool | None = None
) -> Agent:
    """The ``wipe`` tool on the agent's own connection, or (with `trusted` set) on a tool set
    ``ops-tools`` that is or is not trusted."""
    if trusted is None:
        agent = Agent("ops", instructions="Run jobs.")
        where = agent
    else:
        where = ToolSet("ops-tools", "Ops tools", trusted=trusted)
        agent = Agent("ops", instructions="Run jobs.", tool_sets=[where])

    @where.tool(destructive=True, idempotent=idempotent)
    async def wipe(name: str) -> str:
        """Wipe a disk."""
        ran.append(name)
        return f"wiped {name}"

    return agent


async def result(turn: Turn) -> dict[str, Any]:
    return (await turn.result()).to_json()


async def rows(store: Store, history_id: str) -> list[dict[str, Any]]:
    return [r.data for r in await store.histories.rows(history_id)]


async def lapse() -> None:
    await asyncio.sleep(LEASE * 1.5)


def ask_choice() -> str:
    return "ask_choice " + json.dumps(
        {
            "prompt": "Which plan?",
            "select": "one",
            "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
        }
    )


async def paused_choice(runtime: Runtime) -> tuple[str, str]:
    turn = await runtime.start_prompt(ALICE, ask_choice())
    events = [e async for e in turn.stream()]
    ask = next(e["ask"] for e in events if "ask" in e)
    return turn.history_id, ask["toolCallId"]


async def test_an_answer_whose_process_stopped_is_finished_by_another(store: Store) -> None:
    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["b"]}}
    turn_a = await a.start_answer(ALICE, history_id, answer)
    await model_a.waiting.wait()  # the answer is committed; A "dies" before replying
    lease = await store.leases.get(history_id)
    assert lease is not None
    assert lease.owner == a.owner
    await lapse()
    [taken] = await b.recovery.sweep()
    done = await result(taken)
    reply = 'ask_choice returned: {"action":"accept","content":{"selected":["b"]}}'
    assert done["text"] == reply
    assert await store.leases.get(history_id) is None
    # A wakes up: its lease is gone, so it writes nothing.
    model_a.release.set()
    late = await result(turn_a)
    assert "taken over" in late["error"]
    replies = [r for r in await rows(store, history_id) if r["type"] == "assistant"]
    assert replies == [{"type": "assistant", "text": reply}]
    # The same answer again is still refused: the ask was answered once.
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is None
    await a.aclose()
    await b.aclose()


async def test_a_live_process_renews_its_lease_and_keeps_its_turn(store: Store) -> None:
    model_a = GatedModel()
    a = Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE)
    b = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["b"]}}
    turn_a = await a.start_answer(ALICE, history_id, answer)
    await model_a.waiting.wait()  # the answer is committed; the reply's step waits
    first = await store.leases.get(history_id)
    assert first is not None
    await asyncio.sleep(LEASE * 2.5)  # past the first lease: only renewals keep it
    renewed = await store.leases.get(history_id)
    assert renewed is not None
    assert renewed.owner == a.owner
    assert renewed.until > first.until
    assert await b.recovery.sweep() == []
    model_a.release.set()
    done = await result(turn_a)
    assert done["text"] == 'ask_choice returned: {"action":"accept","content":{"selected":["b"]}}'
    assert await store.leases.get(history_id) is None
    await a.aclose()
    await b.aclose()


@pytest.mark.parametrize(
    ("idempotent", "trusted"),
    [(None, None), (True, None), (True, True), (True, False)],
    ids=["not-idempotent", "idempotent", "idempotent-trusted-set", "idempotent-untrusted-set"],
)
async def test_an_approved_call_that_may_have_run_is_uncertain(
    store: Store, idempotent: bool | None, trusted: bool | None
) -> None:
    """A call that may have run is run again only when its hints say that is safe and its
    connection is trusted: an untrusted server's idempotent hint loosens nothing."""
    ran: list[str] = []
    agent_a = tools_agent(ran, idempotent=idempotent, trusted=trusted)
    agent_b = tools_agent(ran, idempotent=idempotent, trusted=trusted)
    connection = "local:ops" if trusted is None else "ops-tools"
    await store.permissions.set("alice", connection, "non-consequential")
    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=agent_a, model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=agent_b, model=ScriptedModel(), lease_s=LEASE)
    turn = await a.start_prompt(ALICE, 'call wipe {"name": "disk1"}')
    events = [e async for e in turn.stream()]
    approval = next(e["ask"] for e in events if "ask" in e)
    assert approval["origin"] == "approval"
    model_a.armed = True
    answered = await a.start_answer(
        ALICE,
        turn.history_id,
        {"toolCallId": approval["toolCallId"], "action": "accept", "content": {"confirmed": True}},
    )
    await model_a.waiting.wait()  # the tool ran; A stops before recording it
    assert ran == ["disk1"]
    await lapse()
    [taken] = await b.recovery.sweep()
    done = await result(taken)
    if idempotent and trusted is not False:
        assert ran == ["disk1", "disk1"]  # safe to run again: it ran again
        assert done["text"] == 'wipe returned: "wiped disk1"'
    else:
        assert ran == ["disk1"]  # never run twice by itself
        assert "TOOL_EXECUTION_UNCERTAIN" in done["text"]
        results = [r for r in await rows(store, turn.history_id) if r["type"] == "tool-result"]
        assert results[-1]["result"]["code"] == "TOOL_EXECUTION_UNCERTAIN"
        assert results[-1]["isError"] is True
    model_a.release.set()
    assert "taken over" in (await result(answered))["error"]
    assert len([r for r in await rows(store, turn.history_id) if r["type"] == "assistant"]) == 1
    await a.aclose()
    await b.aclose()


async def test_a_message_and_the_cancel_it_causes_commit_together(store: Store) -> None:
    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    turn_a = await a.start_prompt(ALICE, "never mind", history_id=history_id)
    await model_a.waiting.wait()
    stored = await rows(store, history_id)
    # The cancel and the message are both stored before the model is called.
    assert stored[-2]["toolCallId"] == call_id
    assert stored[-2]["result"] == {"action": "cancel", "reason": "user_sent_message"}
    assert stored[-1] == {"type": "user", "text": "never mind"}
    await lapse()
    [taken] = await b.recovery.sweep()
    assert (await result(taken))["text"] == "You said: never mind"
    model_a.release.set()
    await result(turn_a)
    texts = [(r["type"], r.get("text")) for r in await rows(store, history_id)]
    assert texts[-2:] == [("user", "never mind"), ("assistant", "You said: never mind")]
    assert texts.count(("user", "never mind")) == 1
    await a.aclose()
    await b.aclose()


async def test_a_prompt_waits_for_a_stopped_turn_and_takes_it_over_first(store: Store) -> None:
    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["a"]}}
    await a.start_answer(ALICE, history_id, answer)
    await model_a.waiting.wait()
    # B gets a new message at once: it waits for A's lease, takes the turn over, then runs.
    turn_b = await b.start_prompt(ALICE, "and now?", history_id=history_id)
    assert (await result(turn_b))["text"] == "You said: and now?"
    texts = [r.get("text") for r in await rows(store, history_id) if r["type"] == "assistant"]
    assert texts == [
        'ask_choice returned: {"action":"accept","content":{"selected":["a"]}}',
        "You said: and now?",
    ]
    model_a.release.set()
    await a.aclose()
    await b.aclose()


async def test_a_taken_over_answer_that_fails_puts_the_ask_back(store: Store) -> None:
    from doubles import FlakyModel

    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=FlakyModel(fail_on=[1]), lease_s=LEASE)
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["a"]}}
    await a.start_answer(ALICE, history_id, answer)
    await model_a.waiting.wait()
    await lapse()
    [taken] = await b.recovery.sweep()
    assert (await result(taken))["error"]
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert history.pending_ask.tool_call_id == call_id  # the person can answer it again
    assert await store.leases.get(history_id) is None
    model_a.release.set()
    await a.aclose()
    await b.aclose()


async def test_only_one_process_takes_a_lapsed_turn_over(store: Store) -> None:
    model_a = GatedModel()
    a = dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    others = [
        Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
        for _ in range(3)
    ]
    history_id, call_id = await paused_choice(a)
    model_a.armed = True
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["a"]}}
    await a.start_answer(ALICE, history_id, answer)
    await model_a.waiting.wait()
    await lapse()
    swept = await asyncio.gather(*(o.recovery.sweep() for o in others))
    taken = [turn for turns in swept for turn in turns]
    assert len(taken) == 1
    await result(taken[0])
    replies = [r for r in await rows(store, history_id) if r["type"] == "assistant"]
    assert len(replies) == 1
    model_a.release.set()
    for runtime in (a, *others):
        await runtime.aclose()
