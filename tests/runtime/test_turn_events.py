"""A turn's ``turn.*`` events: ``turn.finished`` goes with the turn's last write (its commit
publishes it with the write's own events), and on PostgreSQL in that write's statement, so a
turn's events reach another process without a statement of their own. Two stores on one
database stand for two processes."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from _pg import notifying_statements
from examples import PLAN
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store, UserEvent

ALICE = Principal(user_id="alice")
ASK = "ask_choice " + json.dumps(PLAN)


@contextlib.asynccontextmanager
async def _two_processes(cluster: Any, tmp_path: Path) -> AsyncIterator[tuple[Runtime, Store]]:
    """A runtime on one store and a second store on the same database, both listening."""
    url = str(cluster.new_database_url()).replace("+asyncpg", "", 1)
    one = await Store.open(url, blob_dir=tmp_path / "a")
    two = await Store.open(url, blob_dir=tmp_path / "b")
    runtime = Runtime(store=one, agents=Agent("helper"), model=ScriptedModel())
    try:
        await one.events.start()
        await two.events.start()
        yield runtime, two
    finally:
        await runtime.aclose()
        await one.close()
        await two.close()


async def test_a_turns_events_reach_another_process_with_its_last_write(
    postgres_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long wait of the event sender: an event not carried by a write would be heard only
    # after it, well past the subscription's time-out.
    monkeypatch.setattr("handrail.store.events._SEND_GATHER_S", 30.0)
    async with _two_processes(postgres_cluster, tmp_path) as (runtime, two):
        history = await runtime.store.histories.create("alice", agent="helper")
        statements = notifying_statements(monkeypatch)
        async with two.events.subscribe("alice") as heard:
            turn = await runtime.start_prompt(ALICE, ASK, history_id=history.id)
            events = [event async for event in turn.stream()]
            assert "done" in events[-1]
            kinds: list[str] = []
            finished: UserEvent | None = None
            while finished is None:
                event = await heard.get(timeout=5)
                assert event is not None, kinds
                kinds.append(event.kind)
                if event.kind == "turn.finished":
                    finished = event
        # The pause's write sent them all, the turn's start and its end among them.
        assert kinds == [
            "turn.started",
            "turn.progress",
            "history.renamed",
            "ask.created",
            "turn.finished",
        ]
        assert finished.data == {
            "title": events[-1]["title"],
            "pendingToolCallId": events[0]["ask"]["toolCallId"],
            "turnId": turn.id,
        }
        assert len(statements) == 1
        assert turn.finished_published


async def test_on_sqlite_the_finished_event_comes_once_after_the_writes(
    tmp_path: Path,
) -> None:
    """One ``turn.finished``, last; whoever hears it finds the turn no longer running."""
    store = await Store.open(f"sqlite:///{tmp_path / 'h.db'}", blob_dir=tmp_path / "files")
    runtime = Runtime(store=store, agents=Agent("helper"), model=ScriptedModel())
    try:
        async with store.events.subscribe("alice") as heard:
            for prompt in ("hello", ASK):
                turn = await runtime.start_prompt(ALICE, prompt)
                kinds = []
                while (event := await heard.get(timeout=5)) is not None:
                    kinds.append(event.kind)
                    if event.kind == "turn.finished":
                        # Heard before the turn's task went on: the turn ended all the same.
                        assert await runtime.running.of(turn.history_id) is None
                        break
                assert "done" in [event async for event in turn.stream()][-1]
                assert kinds.index("history.created") < kinds.index("turn.started")
                assert kinds.count("turn.finished") == 1
                assert kinds[-1] == "turn.finished"
            assert await heard.get(timeout=0.2) is None  # and nothing after it
    finally:
        await runtime.aclose()
        await store.close()


async def test_whoever_hears_turn_finished_finds_the_turn_ended(tmp_path: Path) -> None:
    """An answer with a data URL keeps a copy of its bytes until the turn ends, and removes it
    after the turn's last write (store calls the turn's task waits on): ``turn.finished``,
    which that write carries, is heard meanwhile, and the turn is no longer running by then."""
    store = await Store.open(f"sqlite:///{tmp_path / 'h.db'}", blob_dir=tmp_path / "files")
    runtime = Runtime(store=store, agents=Agent("helper"), model=ScriptedModel())
    ask = "ask_files " + json.dumps({"prompt": "Send the receipt.", "accept": ["text"]})
    note = b"Lunch, 2 people\n"
    try:
        turn = await runtime.start_prompt(ALICE, ask)
        events = [event async for event in turn.stream()]
        call_id = next(e["ask"]["toolCallId"] for e in events if "ask" in e)
        url = "data:text/plain;base64," + base64.b64encode(note).decode()
        ref = {"url": url, "filename": "note.txt", "mimeType": "text/plain", "size": len(note)}
        answer = {"toolCallId": call_id, "action": "accept", "content": {"files": [ref]}}
        async with store.events.subscribe("alice", kinds=("turn.finished",)) as heard:
            answering = await runtime.start_answer(ALICE, turn.history_id, answer)
            finished = await heard.get(timeout=5)
            assert finished is not None
            assert finished.data["turnId"] == answering.id
            assert await runtime.running.of(turn.history_id) is None
        assert "done" in [event async for event in answering.stream()][-1]
    finally:
        await runtime.aclose()
        await store.close()
