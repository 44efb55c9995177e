"""Which of a turn's writes wait for the disk on SQLite (``synchronous=FULL``).

A turn's input (the prompt, the answer) waits for the disk before anything follows it. The
last change of a turn that holds a lease (taken with its answer) holds only the model's text,
which the lease would have made again had a power loss undone it: its commit does not wait
(`HistoryChange.synced`). A last change that holds a tool's result, a new ask, an audit
record or an event the outbox keeps waits as any other. A lease's renewal never waits: on SQLite
only a power loss could undo it, and that stops its holder too.

Each test reads the ``synchronous`` level of every write transaction that names the
conversation, from the statements the store's connections ran (their trace callback)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from doubles import GatedModel
from handrail._util import utc_now
from handrail.runtime.agent import Agent
from handrail.runtime.messages import ToolCall
from handrail.runtime.models.base import ModelEvent, ModelRequest, StepEnd, ToolCallPart
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal, Turn
from handrail.store import Store
from handrail.store.records import HistoryChange
from synced_writes import Traced, open_traced

ALICE = Principal(user_id="alice")
LEASE = 0.4
CHOICE = {
    "prompt": "Which plan?",
    "select": "one",
    "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
}
REPLY = 'ask_choice returned: {"action":"accept","content":{"selected":["b"]}}'


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[Traced]:
    opened = await open_traced(tmp_path / "t.db")
    try:
        yield opened
    finally:
        await opened.store.close()


async def finished(turn: Turn) -> list[dict[str, Any]]:
    events = [e async for e in turn.stream()]
    assert events[-1]["done"] is True
    return events


async def paused_choice(runtime: Runtime) -> tuple[str, str]:
    events = await finished(await runtime.start_prompt(ALICE, "ask_choice " + json.dumps(CHOICE)))
    ask = next(e["ask"] for e in events if "ask" in e)
    return events[-1]["historyId"], ask["toolCallId"]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


def choose_b(call_id: str) -> dict[str, Any]:
    return {"toolCallId": call_id, "action": "accept", "content": {"selected": ["b"]}}


async def test_the_reply_after_an_answer_does_not_wait_for_the_disk(traced: Traced) -> None:
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=ScriptedModel())
    history_id, call_id = await paused_choice(runtime)
    events = await finished(await runtime.start_answer(ALICE, history_id, choose_b(call_id)))
    assert text_of(events) == REPLY
    assert await traced.store.leases.get(history_id) is None
    # The conversation made for the prompt does not wait by itself; the pause (with the
    # prompt) and the answer's claim (with its lease) wait for the disk; the reply, which ends
    # the lease, does not.
    assert traced.writes(history_id) == [
        ("NORMAL", "INSERT INTO histories"),
        ("FULL", "UPDATE histories"),
        ("FULL", "UPDATE histories"),
        ("NORMAL", "UPDATE histories"),
    ]
    # The next write waits again: the connection went back to the store's level.
    await finished(await runtime.start_prompt(ALICE, "hello", history_id=history_id))
    assert traced.writes(history_id)[4:] == [("FULL", "UPDATE histories")]
    stored = [r.data for r in await traced.store.histories.rows(history_id)]
    assert [r["type"] for r in stored] == [
        "user",
        "tool-call",
        "tool-result",
        "assistant",
        "user",
        "assistant",
    ]
    await runtime.aclose()


async def test_a_turn_without_a_lease_waits_for_the_disk(traced: Traced) -> None:
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=ScriptedModel())
    history = await traced.store.histories.create("alice", agent="ops")
    await finished(await runtime.start_prompt(ALICE, "hello", history_id=history.id))
    # A prompt's turn ends in the write that holds the prompt: it waits.
    assert traced.writes(history.id) == [
        ("FULL", "INSERT INTO histories"),
        ("FULL", "UPDATE histories"),
    ]
    await runtime.aclose()


async def test_a_turn_end_that_holds_a_tools_result_waits_for_the_disk(traced: Traced) -> None:
    ran: list[str] = []
    agent = Agent("ops", instructions="Run jobs.")

    @agent.tool(destructive=True)
    async def wipe(name: str) -> str:
        """Wipe a disk."""
        ran.append(name)
        return f"wiped {name}"

    await traced.store.permissions.set("alice", "local:ops", "non-consequential")
    runtime = Runtime(store=traced.store, agents=agent, model=ScriptedModel())
    events = await finished(await runtime.start_prompt(ALICE, 'call wipe {"name": "disk1"}'))
    history_id = events[-1]["historyId"]
    approval = next(e["ask"] for e in events if "ask" in e)
    assert approval["origin"] == "approval"
    accept = {
        "toolCallId": approval["toolCallId"],
        "action": "accept",
        "content": {"confirmed": True},
    }
    events = await finished(await runtime.start_answer(ALICE, history_id, accept))
    assert ran == ["disk1"]
    assert text_of(events) == 'wipe returned: "wiped disk1"'
    # The tool ran after the answer: the write with its result waits for the disk.
    assert [level for level, _ in traced.writes(history_id)] == ["NORMAL", "FULL", "FULL", "FULL"]
    await runtime.aclose()


class AskingAgain:
    """A model that asks the same choice at every step (its turn after an answer pauses on a
    new ask)."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def name(self) -> str:
        return "asking-again"

    @property
    def supports_tools(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        call = ToolCall(id=f"call-{self.calls}", name="ask_choice", arguments=dict(CHOICE))
        yield ToolCallPart(call=call)
        yield StepEnd(finish_reason="tool_calls")


async def test_a_turn_end_with_a_new_ask_waits_for_the_disk(traced: Traced) -> None:
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=AskingAgain())
    history_id, call_id = await paused_choice(runtime)
    events = await finished(await runtime.start_answer(ALICE, history_id, choose_b(call_id)))
    asked = [e["ask"]["toolCallId"] for e in events if "ask" in e]
    assert asked == ["call-2"]
    assert [level for level, _ in traced.writes(history_id)][1:] == ["FULL", "FULL", "FULL"]
    history = await traced.store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert history.pending_ask.tool_call_id == "call-2"
    await runtime.aclose()


async def test_a_turn_end_whose_event_the_outbox_keeps_waits_for_the_disk(
    traced: Traced,
) -> None:
    # As a server with a webhook for finished turns does: the event goes out of the process.
    traced.store.outbox.keep(["turn.finished"])
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=ScriptedModel())
    history_id, call_id = await paused_choice(runtime)
    await finished(await runtime.start_answer(ALICE, history_id, choose_b(call_id)))
    assert [level for level, _ in traced.writes(history_id)][1:] == ["FULL", "FULL", "FULL"]
    kept = await traced.store.outbox.claim(now=utc_now(), hold=dt.timedelta(seconds=60))
    assert [e.kind for e in kept].count("turn.finished") == 2
    await runtime.aclose()


async def test_a_power_loss_that_undoes_the_reply_leaves_it_to_the_lease(tmp_path: Path) -> None:
    """What the disk holds when the reply's commit is lost (a copy of the database files
    taken as that write starts, every commit before it flushed) is a turn another process
    finishes once its lease lapsed, with the person's answer."""
    traced = await open_traced(tmp_path / "live.db")
    lost = tmp_path / "lost"
    lost.mkdir()
    apply = traced.store.histories.apply

    async def copy_then_apply(history_id: str, change: HistoryChange, **kwargs: Any) -> Any:
        if not change.synced:
            for suffix in ("", "-wal"):
                shutil.copy(f"{traced.path}{suffix}", lost / f"lost.db{suffix}")
        return await apply(history_id, change, **kwargs)

    traced.store.histories.apply = copy_then_apply  # type: ignore[method-assign]
    a = Runtime(store=traced.store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    try:
        history_id, call_id = await paused_choice(a)
        events = await finished(await a.start_answer(ALICE, history_id, choose_b(call_id)))
        assert text_of(events) == REPLY
    finally:
        await a.aclose()
        await traced.store.close()
    assert (lost / "lost.db").exists()

    store = await Store.open(f"sqlite:///{lost / 'lost.db'}", blob_dir=tmp_path / "blobs")
    b = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel(), lease_s=LEASE)
    try:
        # The answer is there, with the lease it took; the reply is not.
        lease = await store.leases.get(history_id)
        assert lease is not None
        assert lease.owner == a.owner
        before = [r.data["type"] for r in await store.histories.rows(history_id)]
        assert before == ["user", "tool-call", "tool-result"]
        await asyncio.sleep(LEASE * 1.5)
        [taken] = await b.recovery.sweep()
        done = (await taken.result()).to_json()
        assert done["text"] == REPLY
        assert await store.leases.get(history_id) is None
        rows = [r.data for r in await store.histories.rows(history_id)]
        assert [r["type"] for r in rows] == ["user", "tool-call", "tool-result", "assistant"]
        assert rows[2]["result"] == {"action": "accept", "content": {"selected": ["b"]}}
    finally:
        await b.aclose()
        await store.close()


async def test_a_files_answers_kept_copy_goes_after_a_write_that_waits(traced: Traced) -> None:
    """A data URL's bytes are kept while the answer's lease names them. The reply that ends
    the lease does not wait for the disk, so their removal marks the copy deleted with a
    write that does (putting the reply on the disk with it) before the bytes go."""
    model = GatedModel()
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=model)
    ask = {"prompt": "Send the note.", "accept": ["text"]}
    events = await finished(await runtime.start_prompt(ALICE, "ask_files " + json.dumps(ask)))
    history_id = events[-1]["historyId"]
    call_id = next(e["ask"]["toolCallId"] for e in events if "ask" in e)
    note = b"Lunch, 2 people\n"
    ref = {
        "url": "data:text/plain;base64," + base64.b64encode(note).decode(),
        "filename": "note.txt",
        "mimeType": "text/plain",
        "size": len(note),
    }
    answer = {"toolCallId": call_id, "action": "accept", "content": {"files": [ref]}}
    model.armed = True
    turn = await runtime.start_answer(ALICE, history_id, answer)
    await model.waiting.wait()  # the answer and its lease are committed; the reply waits
    lease = await traced.store.leases.get(history_id)
    assert lease is not None
    [kept] = lease.state["keptFiles"]
    model.release.set()
    await finished(turn)
    for _ in range(200):  # the removal runs once the turn's events ended
        if await traced.store.files.get(kept) is None:
            break
        await asyncio.sleep(0.01)
    assert await traced.store.files.get(kept) is None
    assert await traced.store.files.get(kept, include_deleted=True) is not None
    await runtime.aclose()
    assert [level for level, _ in traced.writes(history_id)][-1] == "NORMAL"
    removal = [level for level, first in traced.writes(kept) if first == "UPDATE files"]
    assert removal == ["FULL"]
    ended = next(
        i for i, s in enumerate(traced.statements) if s.startswith("DELETE FROM turn_leases")
    )
    marked = next(i for i, s in enumerate(traced.statements) if s.startswith("UPDATE files"))
    assert ended < marked


async def test_a_lease_renewal_does_not_wait_for_the_disk(traced: Traced) -> None:
    model = GatedModel()
    runtime = Runtime(store=traced.store, agents=Agent("ops"), model=model, lease_s=LEASE)
    history_id, call_id = await paused_choice(runtime)
    model.armed = True
    turn = await runtime.start_answer(ALICE, history_id, choose_b(call_id))
    await model.waiting.wait()  # the answer and its lease are committed; the reply waits
    first = await traced.store.leases.get(history_id)
    assert first is not None
    await asyncio.sleep(LEASE)  # three beats of a third of a lease
    renewed = await traced.store.leases.get(history_id)
    assert renewed is not None
    assert renewed.until > first.until
    model.release.set()
    assert text_of(await finished(turn)) == REPLY
    renewals = [w for w in traced.writes(history_id) if w[1] == "UPDATE turn_leases"]
    assert len(renewals) >= 2
    assert {level for level, _ in renewals} == {"NORMAL"}
    await runtime.aclose()


async def test_the_reply_after_an_answer_on_each_backend(store: Store) -> None:
    runtime = Runtime(store=store, agents=Agent("ops"), model=ScriptedModel())
    history_id, call_id = await paused_choice(runtime)
    events = await finished(await runtime.start_answer(ALICE, history_id, choose_b(call_id)))
    assert text_of(events) == REPLY
    assert await store.leases.get(history_id) is None
    rows = [r.data for r in await store.histories.rows(history_id)]
    assert rows[-1] == {"type": "assistant", "text": REPLY}
    await runtime.aclose()
