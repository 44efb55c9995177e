"""``POST /api/histories/{id}/stop``: a running turn ends cleanly (a running tool's outcome
reported, the rows whole), a paused one's ask is cancelled, a prepared request not yet
consumed is never sent, and only the owner may stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import Api, Stream, compact, sqlite_url, start_api

from handrail.demo.booking_api import booking_action_set, create_booking_app, serve_booking_api
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import Model, ModelRequest, TextDelta
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Principal

DATE = "2026-12-24"


class Slow:
    """Two tools that start, then wait until the test lets them go (or forever)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished: list[str] = []
        self.tools = ToolSet("local:slow", "Slow")

        @self.tools.tool(open_world=False, destructive=False)
        async def write_file(name: str) -> str:
            """Write a file.

            Args:
                name: The file's name
            """
            self.started.set()
            await self.release.wait()
            self.finished.append(name)
            return f"Wrote {name}."

        @self.tools.tool(read_only=True, open_world=False)
        async def read_file(name: str) -> str:
            """Read a file.

            Args:
                name: The file's name
            """
            self.started.set()
            await self.release.wait()
            return "contents"


@pytest.fixture
async def slow_api(tmp_path: Path) -> AsyncIterator[tuple[Api, Slow]]:
    slow = Slow()
    agent = Agent("worker", tool_sets=[slow.tools])
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
        await api.store.permissions.set("alice", "local:slow", "non-consequential")
        yield api, slow


async def _rows(api: Api, history_id: str) -> list[dict[str, Any]]:
    return list((await api.history(history_id))["rows"])


def _every_call_has_a_result(rows: list[dict[str, Any]]) -> None:
    calls = [r["toolCallId"] for r in rows if r["type"] == "tool-call"]
    results = [r["toolCallId"] for r in rows if r["type"] == "tool-result"]
    assert sorted(set(calls)) == sorted(calls)
    assert set(calls) <= set(results), (calls, results)


async def _start(api: Api, prompt: str) -> tuple[str, asyncio.Task[Stream]]:
    created = await api.post("/histories", {})
    history_id = created.json()["data"]["id"]
    task = asyncio.create_task(api.say(prompt, history_id))
    return history_id, task


@pytest.mark.parametrize(
    ("tool", "code"),
    [("write_file", "TOOL_EXECUTION_UNCERTAIN"), ("read_file", "TOOL_STOPPED")],
)
async def test_stop_while_a_tool_runs(slow_api: tuple[Api, Slow], tool: str, code: str) -> None:
    api, slow = slow_api
    history_id, task = await _start(api, f"call {tool} " + compact({"name": "a.txt"}))
    await asyncio.wait_for(slow.started.wait(), 5)
    stopped = await api.post(f"/histories/{history_id}/stop")
    assert stopped.status_code == 200
    assert stopped.json()["data"] == {
        "historyId": history_id,
        "stopped": True,
        "cancelledAsk": None,
    }
    stream = await asyncio.wait_for(task, 5)
    assert stream.done["historyId"] == history_id
    result = next(e for e in stream.events if "toolResult" in e)["toolResult"]["result"]
    assert result["code"] == code
    slow.release.set()
    await asyncio.sleep(0.05)
    assert slow.finished == []  # the tool's task was cancelled, not left running
    rows = await _rows(api, history_id)
    _every_call_has_a_result(rows)
    history = await api.history(history_id)
    assert history["pendingAsk"] is None
    # The conversation goes on.
    after = await api.say("hello", history_id)
    assert after.text == "You said: hello"


async def test_stop_when_nothing_runs_changes_nothing(slow_api: tuple[Api, Slow]) -> None:
    api, _slow = slow_api
    stream = await api.say("hello")
    before = await _rows(api, stream.history_id)
    response = await api.post(f"/histories/{stream.history_id}/stop")
    assert response.json()["data"] == {
        "historyId": stream.history_id,
        "stopped": False,
        "cancelledAsk": None,
    }
    assert await _rows(api, stream.history_id) == before


async def test_only_the_owner_may_stop(slow_api: tuple[Api, Slow]) -> None:
    api, _slow = slow_api
    stream = await api.say("hello")
    for user in ("bob", "root"):
        refused = await api.post(f"/histories/{stream.history_id}/stop", user=user)
        assert refused.status_code == 403
        assert refused.json()["title"] == "Not authorized to access this history"
    missing = await api.post("/histories/" + "0" * 24 + "/stop")
    assert missing.status_code == 404


class SlowTalker(Model):
    """Streams a few words, then waits forever (until Stop)."""

    name = "slow-talker"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield TextDelta(text="Thinking about ")
        yield TextDelta(text="it")
        await asyncio.Event().wait()


async def test_stop_cuts_a_model_step_and_keeps_its_text(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path, model=SlowTalker()) as api:
        history_id, task = await _start(api, "hello")
        for _ in range(200):
            if api.app.state.runtime.stopper.running.get(history_id) is not None:
                turn = api.app.state.runtime.stopper.running[history_id]
                if "".join(e.get("text", "") for e in turn.events) == "Thinking about it":
                    break
            await asyncio.sleep(0.01)
        stopped = await api.post(f"/histories/{history_id}/stop")
        assert stopped.json()["data"]["stopped"] is True
        stream = await asyncio.wait_for(task, 5)
        assert stream.text == "Thinking about it"
        rows = await _rows(api, history_id)
        assert [r["type"] for r in rows] == ["user", "assistant"]
        assert rows[1]["text"] == "Thinking about it"


async def test_stop_cancels_a_waiting_confirmation_and_it_is_never_sent(tmp_path: Path) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
            await api.store.permissions.set("alice", "booking", "non-consequential")
            prompt = "call book_slot " + compact({"date": DATE, "time": "19:00", "notes": "Hi"})
            stream = await api.say(prompt)
            ask = stream.ask
            assert ask["origin"] == "confirmation"
            stopped = await api.post(f"/histories/{stream.history_id}/stop")
            assert stopped.json()["data"] == {
                "historyId": stream.history_id,
                "stopped": False,
                "cancelledAsk": ask["toolCallId"],
            }
            confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
            state = await api.get(f"/confirmations/{confirmation_id}")
            assert state.json()["data"]["state"] == "cancelled"
            late = await api.answer(
                stream.history_id,
                ask["toolCallId"],
                {"action": "accept", "content": {"confirmed": True}},
            )
            assert late.status == 409
            rows = await _rows(api, stream.history_id)
            _every_call_has_a_result(rows)
            cancel = next(
                r
                for r in rows
                if r["type"] == "tool-result" and r["toolCallId"] == ask["toolCallId"]
            )
            assert cancel["result"] == {"action": "cancel", "reason": "stopped"}
            async with httpx.AsyncClient(base_url=base_url) as http:
                stats = (await http.get("/stats")).json()["requests"]
            assert [r for r in stats if r["path"] == "/bookings"] == []


async def test_a_confirm_stopped_before_it_is_consumed_is_never_sent(tmp_path: Path) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
            await api.store.permissions.set("alice", "booking", "non-consequential")
            prompt = "call book_slot " + compact({"date": DATE, "time": "19:00", "notes": "Hi"})
            stream = await api.say(prompt)
            ask = stream.ask
            runtime = api.app.state.runtime
            turn = await runtime.start_answer(
                Principal(user_id="alice"),
                stream.history_id,
                {
                    "toolCallId": ask["toolCallId"],
                    "action": "accept",
                    "content": {"confirmed": True},
                },
            )
            # Stop lands (as Stop does: the turn's flag) before the turn's task reached the
            # confirmation: the prepared request is cancelled, never consumed.
            turn.stop_requested.set()
            await turn.wait()
            assert turn.stopped
            confirmation_id = ask["toolCallId"].removeprefix("confirmation_")
            state = await api.get(f"/confirmations/{confirmation_id}")
            assert state.json()["data"]["state"] == "cancelled"
            rows = await _rows(api, stream.history_id)
            _every_call_has_a_result(rows)
            async with httpx.AsyncClient(base_url=base_url) as http:
                stats = (await http.get("/stats")).json()["requests"]
            assert [r for r in stats if r["path"] == "/bookings"] == []
