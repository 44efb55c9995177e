"""A conversation opened mid-turn: the history view's ``running`` says what its turn does now
(``{turnId, phase, tool?, since}``, the phase of its last ``turn.progress`` event), and is
``null`` when no turn runs: before, after, and while the conversation waits on an ask. On
both backends, in the process that runs the turn (``tests/reliability/
test_running_across_processes.py`` reads it through another process)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, Stream, command, compact, start_api

from examples import plan
from handrail._util import utc_now
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import Model, ModelRequest, TextDelta
from handrail.runtime.running import WRITE_AFTER
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Turn
from handrail.store.running import RunningTurn

#: How many times a test reads the view while it waits for the turn to get somewhere.
READS = 200


class Gate:
    """A tool that starts, then waits until the test lets it go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.tools = ToolSet("local:gate", "Gate")

        @self.tools.tool(read_only=True, open_world=False, title="Fetch a report")
        async def fetch_report(name: str) -> str:
            """Fetch a report.

            Args:
                name: The report's name
            """
            self.started.set()
            await self.release.wait()
            return "Fetched."


@pytest.fixture
async def gated(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[Api, Gate]]:
    gate = Gate()
    agent = Agent("worker", tool_sets=[gate.tools])
    async with start_api(database_url, tmp_path, agents=[agent]) as api:
        await api.store.permissions.set("alice", "local:gate", "non-consequential")
        yield api, gate


async def _start(api: Api, prompt: str) -> tuple[str, asyncio.Task[Stream]]:
    created = await api.post("/histories", {})
    history_id = str(created.json()["data"]["id"])
    return history_id, asyncio.create_task(api.say(prompt, history_id))


async def _running(api: Api, history_id: str, phase: str) -> dict[str, Any]:
    for _ in range(READS):
        running = (await api.history(history_id))["running"]
        if running is not None and running["phase"] == phase:
            return dict(running)
        await asyncio.sleep(0.01)
    raise AssertionError(f"the view never showed phase {phase}")


async def test_the_view_shows_the_running_tool_then_null(gated: tuple[Api, Gate]) -> None:
    api, gate = gated
    history_id, task = await _start(api, "call fetch_report " + compact({"name": "q3"}))
    await asyncio.wait_for(gate.started.wait(), 10)
    running = await _running(api, history_id, "tool")
    turn = api.app.state.runtime.stopper.running[history_id]
    call = turn.progress["toolCallId"]
    assert running == {
        "turnId": turn.id,
        "phase": "tool",
        "tool": {"toolName": "fetch_report", "toolTitle": "Fetch a report", "toolCallId": call},
        "since": running["since"],
    }
    assert running["since"].endswith("Z")
    # An admin reading the conversation sees it too; bob may not read it at all.
    assert (await api.history(history_id, user="root"))["running"] == running
    assert (await api.get(f"/histories/{history_id}", user="bob")).status_code == 403
    gate.release.set()
    stream = await asyncio.wait_for(task, 10)
    assert stream.done["historyId"] == history_id
    assert (await api.history(history_id))["running"] is None
    # The list's summaries have no running field: it is the history view's.
    listed = (await api.get("/histories")).json()["data"]
    assert all("running" not in item for item in listed)


async def test_the_turn_events_name_the_turn(gated: tuple[Api, Gate]) -> None:
    api, gate = gated
    async with api.store.events.subscribe("alice") as events:
        history_id, task = await _start(api, "call fetch_report " + compact({"name": "q3"}))
        await asyncio.wait_for(gate.started.wait(), 10)
        running = await _running(api, history_id, "tool")
        gate.release.set()
        await asyncio.wait_for(task, 10)
        seen: list[tuple[str, dict[str, Any]]] = []
        while not seen or seen[-1][0] != "turn.finished":
            event = await events.get(timeout=10)
            assert event is not None
            if event.kind.startswith("turn."):
                seen.append((event.kind, event.data))
    assert {data["turnId"] for _, data in seen} == {running["turnId"]}
    assert seen[0][0] == "turn.started"
    tool = next(data for kind, data in seen if data.get("phase") == "tool")
    assert tool == {
        "phase": "tool",
        "toolName": "fetch_report",
        "toolTitle": "Fetch a report",
        "toolCallId": running["tool"]["toolCallId"],
        "turnId": running["turnId"],
    }


class Pondering(Model):
    """Says a word, then thinks until the test lets it go."""

    name = "pondering"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield TextDelta(text="Hmm")
        await self.release.wait()
        yield TextDelta(text=", done.")


async def test_a_model_step_shows_as_thinking(database_url: str, tmp_path: Path) -> None:
    model = Pondering()
    async with start_api(database_url, tmp_path, model=model) as api:
        history_id, task = await _start(api, "hello")
        thinking = await _running(api, history_id, "thinking")
        assert "tool" not in thinking
        model.release.set()
        stream = await asyncio.wait_for(task, 10)
        assert stream.text == "Hmm, done."
        assert (await api.history(history_id))["running"] is None


async def test_the_board_follows_a_turns_phases(any_api: Api) -> None:
    """Started, each progress (Stop's ``stopping`` too: a turn stops at once, too soon for a
    view to catch), ended; a turn that ended never removes a newer turn's state."""
    board = any_api.app.state.runtime.running
    history = await any_api.store.histories.create("alice", agent="helper")
    turn = Turn(history.id, user_id="alice")
    board.started(turn)
    started = await board.of(history.id)
    assert started is not None
    assert (started.turn_id, started.phase, started.tool_name) == (turn.id, "starting", None)
    tool = {"phase": "tool", "toolName": "lookup", "toolTitle": "Look up", "toolCallId": "c1"}
    board.progressed(turn, tool)
    running = await board.of(history.id)
    assert running is not None
    assert running.to_json()["tool"] == {
        "toolName": "lookup",
        "toolTitle": "Look up",
        "toolCallId": "c1",
    }
    board.progressed(turn, {"phase": "stopping"})
    stopping = await board.of(history.id)
    assert stopping is not None
    shown = stopping.to_json()
    assert shown == {"turnId": turn.id, "phase": "stopping", "since": shown["since"]}
    assert shown["since"].endswith("Z")
    assert stopping.since >= started.since
    assert turn.progress == {"phase": "stopping"}
    newer = Turn(history.id, user_id="alice")
    board.started(newer)
    board.ended(turn)
    still = await board.of(history.id)
    assert still is not None
    assert still.turn_id == newer.id
    board.ended(newer)
    assert await board.of(history.id) is None


async def test_no_turn_runs_while_an_ask_waits(any_api: Api) -> None:
    stream = await any_api.say(command("ask_choice", plan()))
    view = await any_api.history(stream.history_id)
    assert view["pendingAsk"] is not None
    assert view["running"] is None


async def test_the_board_reads_another_processs_row_and_never_its_own_lapsed_one(
    gated: tuple[Api, Gate],
) -> None:
    """The rows another process wrote are what a view shows for a turn not running here (on
    SQLite there is one process, so the board never reads rows)."""
    api, _ = gated
    runtime = api.app.state.runtime
    history = await api.store.histories.create("alice", agent="worker")
    now = utc_now()
    other = RunningTurn(
        history_id=history.id,
        turn_id="a" * 24,
        owner="elsewhere:1",
        phase="thinking",
        since=now,
        until=now + dt.timedelta(minutes=1),
    )
    await api.store.running.flush("elsewhere:1", [other], [])
    view = await api.history(history.id)
    if api.store.db.backend == "postgresql":
        assert view["running"] == other.to_json()
    else:
        assert view["running"] is None
    mine = RunningTurn(**{**_fields(other), "owner": runtime.owner})
    await api.store.running.flush(runtime.owner, [mine], [])
    assert (await api.history(history.id))["running"] is None  # ended here, row not yet gone


def _fields(running: RunningTurn) -> dict[str, Any]:
    return {name: getattr(running, name) for name in RunningTurn.__slots__}


async def _row_when(api: Api, history_id: str, *, present: bool) -> RunningTurn | None:
    """The conversation's running-turn row once it is there (`present`) or gone, reading it
    again every quarter of `WRITE_AFTER` (at most `READS` times)."""
    row = None
    for _ in range(READS):
        row = await api.store.running.get(history_id, now=utc_now())
        if (row is not None) is present:
            break
        await asyncio.sleep(WRITE_AFTER / 4)
    return row


async def test_a_turn_that_ends_before_the_write_costs_the_database_nothing(
    gated: tuple[Api, Gate],
) -> None:
    """On PostgreSQL the board writes `WRITE_AFTER` after a change: a turn that is over by
    then writes no row and removes none; one that runs longer is written, then removed."""
    api, _ = gated
    runtime = api.app.state.runtime
    board = runtime.running
    flushes: list[tuple[list[str], list[str]]] = []
    flush = api.store.running.flush

    async def counted(owner: str, put: Any, drop: Any) -> None:
        flushes.append(([r.history_id for r in put], list(drop)))
        await flush(owner, put, drop)

    api.store.running.flush = counted  # type: ignore[method-assign]
    quick = await api.store.histories.create("alice", agent="worker")
    turn = Turn(quick.id, user_id="alice")
    board.started(turn)
    board.progressed(turn, {"phase": "thinking"})
    board.ended(turn)
    await asyncio.sleep(WRITE_AFTER * 4)
    assert all(quick.id not in put + drop for put, drop in flushes)

    slow = await api.store.histories.create("alice", agent="worker")
    turn = Turn(slow.id, user_id="alice")
    board.started(turn)
    if api.store.db.backend == "sqlite":
        await asyncio.sleep(WRITE_AFTER * 4)
        board.ended(turn)
        assert flushes == []  # one process: the board is all there is
        return
    written = await _row_when(api, slow.id, present=True)
    assert written is not None
    assert written.turn_id == turn.id
    board.ended(turn)
    assert await _row_when(api, slow.id, present=False) is None
    assert ([], [slow.id]) in flushes


@pytest.mark.parametrize("backend", ["postgresql"])  # one SQLite process writes no rows
async def test_quick_turns_move_the_writers_alarm_without_waking_it(
    gated: tuple[Api, Gate],
) -> None:
    """On PostgreSQL a change brings the writer's alarm forward instead of waking the writer:
    turns that start and end within `WRITE_AFTER` of the first cost it one wake-up (when the
    first is due, with nothing left to write), not one each; a turn still running then is
    written."""
    api, _ = gated
    board = api.app.state.runtime.running
    assert board.shared
    sleeps: list[float] = []
    sleep_until = board._sleep_until

    async def counted(loop: asyncio.AbstractEventLoop, at: float) -> None:
        sleeps.append(at - loop.time())
        await sleep_until(loop, at)

    board._sleep_until = counted  # type: ignore[method-assign]
    histories = [await api.store.histories.create("alice", agent="worker") for _ in range(21)]
    for history in histories[:20]:
        turn = Turn(history.id, user_id="alice")
        board.started(turn)
        board.progressed(turn, {"phase": "thinking"})
        board.ended(turn)
        await asyncio.sleep(0)  # the writer gets the loop between the turns
    await asyncio.sleep(WRITE_AFTER * 3)
    # A sleep until the first change is due (or the renewal, brought forward by it), then
    # the one until the next renewal: not a wake-up for each of the 20 turns.
    assert 1 <= len(sleeps) <= 3
    assert sleeps[-1] > WRITE_AFTER * 10
    slow = Turn(histories[20].id, user_id="alice")
    board.started(slow)
    written = await _row_when(api, slow.history_id, present=True)
    assert written is not None
    assert written.turn_id == slow.id
    board.ended(slow)
