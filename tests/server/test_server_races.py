"""Races, undo and keep, durability across apps and processes, and a client that disconnects."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import (
    TOKENS,
    Api,
    command,
    compact,
    config_for,
    parse_sse,
    sqlite_url,
    start_api,
    start_uvicorn,
    stop_uvicorn,
)

from demo_server import free_port
from doubles import FlakyModel
from examples import PLAN
from handrail.runtime.models.base import ModelEvent, ModelRequest, TextDelta
from handrail.runtime.runtime import Runtime
from handrail.server import create_app
from handrail.store import Store

ANSWER = {"action": "accept", "content": {"selected": ["team"]}}


class GatedModel:
    """Says "first", then waits for `gate` before it says " second" (on every call)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    @property
    def name(self) -> str:
        return "gated"

    @property
    def supports_tools(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="first")
        self.started.set()
        await self.gate.wait()
        yield TextDelta(text=" second")


async def _paused(api: Api) -> tuple[str, str]:
    stream = await api.say(command("ask_choice", PLAN))
    return stream.history_id, stream.ask["toolCallId"]


async def _results_for(api: Api, history_id: str, tool_call_id: str) -> list[dict[str, Any]]:
    return [
        r
        for r in await api.rows(history_id)
        if r["type"] == "tool-result" and r["toolCallId"] == tool_call_id
    ]


class TestRaces:
    async def test_two_concurrent_answers(self, any_api: Api) -> None:
        history_id, tool_call_id = await _paused(any_api)
        first, second = await asyncio.gather(
            any_api.answer(history_id, tool_call_id, ANSWER),
            any_api.answer(history_id, tool_call_id, {"action": "decline"}),
        )
        assert sorted([first.status, second.status]) == [200, 409]
        loser = first if first.status == 409 else second
        assert loser.problem is not None
        assert loser.problem["title"] == "This ask is no longer pending"
        assert len(await _results_for(any_api, history_id, tool_call_id)) == 1

    async def test_two_concurrent_headless_answers(self, any_api: Api) -> None:
        history_id, tool_call_id = await _paused(any_api)
        body = {"toolCallId": tool_call_id, "buttonId": "option:team"}
        path = f"/histories/{history_id}/turn"
        responses = await asyncio.gather(*(any_api.post(path, body) for _ in range(3)))
        assert sorted(r.status_code for r in responses) == [200, 409, 409]
        assert len(await _results_for(any_api, history_id, tool_call_id)) == 1

    async def test_two_prompts_cancel_one_ask_once(self, any_api: Api) -> None:
        history_id, tool_call_id = await _paused(any_api)
        one, two = await asyncio.gather(
            any_api.say("first message", history_id), any_api.say("second message", history_id)
        )
        resolved = [
            e
            for stream in (one, two)
            for e in stream.events
            if "askResolved" in e and e["askResolved"]["toolCallId"] == tool_call_id
        ]
        assert resolved == [{"askResolved": {"action": "cancel", "toolCallId": tool_call_id}}]
        results = await _results_for(any_api, history_id, tool_call_id)
        assert [r["result"] for r in results] == [
            {"action": "cancel", "reason": "user_sent_message"}
        ]
        rows = await any_api.rows(history_id)
        assert [r["text"] for r in rows if r["type"] == "user"][1:] in (
            ["first message", "second message"],
            ["second message", "first message"],
        )

    async def test_prompt_racing_an_answer(self, any_api: Api) -> None:
        history_id, tool_call_id = await _paused(any_api)
        answer, message = await asyncio.gather(
            any_api.answer(history_id, tool_call_id, ANSWER),
            any_api.say("what about now", history_id),
        )
        assert message.status == 200  # a prompt is never rejected
        cancelled = any("askResolved" in e for e in message.events)
        results = await _results_for(any_api, history_id, tool_call_id)
        assert len(results) == 1
        if answer.status == 200:
            assert not cancelled
            assert results[0]["result"] == ANSWER
        else:
            assert answer.status == 409
            assert cancelled
            assert results[0]["result"] == {"action": "cancel", "reason": "user_sent_message"}
        assert (await any_api.history(history_id))["pendingAsk"] is None


class TestUndoAndKeep:
    async def test_failure_before_output_undoes_the_answer(
        self, database_url: str, tmp_path: Path
    ) -> None:
        model = FlakyModel(fail_on={2})
        async with start_api(database_url, tmp_path, model=model) as api:
            history_id, tool_call_id = await _paused(api)
            failed = await api.answer(history_id, tool_call_id, ANSWER)
            assert failed.status == 200
            kinds = [next(iter(e)) for e in failed.events]
            assert kinds == ["askResolved", "error", "done"]
            assert failed.done["pendingAsk"] == {"toolCallId": tool_call_id}
            history = await api.history(history_id)
            assert history["pendingAsk"]["toolCallId"] == tool_call_id
            assert "promptIndex" not in history["pendingAsk"]
            rows = await api.rows(history_id)
            assert [r["type"] for r in rows] == ["user", "tool-call"]
            assert rows[1]["ask"]["status"] == "pending"

            again = await api.answer(history_id, tool_call_id, ANSWER)
            assert again.status == 200
            assert again.text == f"ask_choice returned: {compact(ANSWER)}"
            assert len(await _results_for(api, history_id, tool_call_id)) == 1

    async def test_headless_undo_reports_the_error_and_the_pending_ask(
        self, tmp_path: Path
    ) -> None:
        async with start_api(sqlite_url(tmp_path), tmp_path, model=FlakyModel(fail_on={2})) as api:
            history_id = (await api.post("/histories", {})).json()["data"]["id"]
            path = f"/histories/{history_id}/turn"
            asked = await api.post(path, {"prompt": command("ask_choice", PLAN)})
            pending = asked.json()["data"]["pendingAsk"]
            body = {"toolCallId": pending["toolCallId"], "buttonId": "option:team"}
            undone = (await api.post(path, body)).json()["data"]
            assert (await api.history(history_id))["pendingAsk"] is not None
            assert isinstance(undone.get("error"), str)
            assert undone.get("pendingAsk") == pending

    async def test_failure_after_output_keeps_the_answer(
        self, database_url: str, tmp_path: Path
    ) -> None:
        model = FlakyModel(fail_after_text_on={2})
        async with start_api(database_url, tmp_path, model=model) as api:
            history_id, tool_call_id = await _paused(api)
            failed = await api.answer(history_id, tool_call_id, ANSWER)
            assert failed.status == 200
            assert failed.events[0] == {
                "askResolved": {"action": "accept", "toolCallId": tool_call_id}
            }
            assert failed.text == f"ask_choice returned: {compact(ANSWER)}"
            assert any("error" in e for e in failed.events)
            assert "pendingAsk" not in failed.done
            rows = await api.rows(history_id)
            assert rows[1]["ask"]["status"] == "answered"
            again = await api.answer(history_id, tool_call_id, ANSWER)
            assert again.status == 409
            follow_up = await api.say("go on", history_id)
            assert follow_up.text == "You said: go on"

    async def test_scripted_fail_commands(self, api: Api) -> None:
        failed = await api.say("fail")
        assert [next(iter(e)) for e in failed.events] == ["error", "done"]
        kept = await api.say("fail-after-text Hello", failed.history_id)
        assert kept.text == "Hello"
        assert "error" in kept.events[-2]
        # A failed turn that had started an ask leaves no pending ask behind.
        dropped = await api.say(command("ask_choice", PLAN) + "\nfail", failed.history_id)
        assert not any("ask" in e for e in dropped.events)
        assert "pendingAsk" not in dropped.done
        rows = await api.rows(failed.history_id)
        assert all(r["ask"]["status"] != "pending" for r in rows if "ask" in r)


async def test_durable_across_apps(database_url: str, tmp_path: Path) -> None:
    """Pause in one app, close it, answer from a new app on the same database."""
    async with start_api(database_url, tmp_path) as first:
        history_id, tool_call_id = await _paused(first)
    async with start_api(database_url, tmp_path) as second:
        listed = (await second.get("/histories/pendingAsks")).json()["data"]
        assert [e["toolCallId"] for e in listed] == [tool_call_id]
        answer = await second.answer(history_id, tool_call_id, ANSWER)
        assert answer.status == 200
        assert answer.text == f"ask_choice returned: {compact(ANSWER)}"
        assert len(await second.rows(history_id)) == 4


def _wait_for(url: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"the server did not answer at {url}")


def _serve(config: Path, port: int, cwd: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env["ALICE_TOKEN"] = TOKENS["alice"]
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "handrail.cli", "serve", "--config", str(config)),
            *("--port", str(port), "--log-level", "warning"),
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def test_durable_across_processes(tmp_path: Path) -> None:
    """``handrail serve`` pauses a turn; a new process on the same SQLite file answers it."""
    config = tmp_path / "handrail.yaml"
    config.write_text(
        "database_url: sqlite:///state.db\n"
        "users:\n  - {id: alice, token_env: ALICE_TOKEN}\n"
        "agents:\n  - {name: helper, instructions: Be brief.}\n"
    )
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = _serve(config, port, tmp_path)
    try:
        _wait_for(base + "/openapi.json", process)
        response = httpx.post(
            base + "/api/prompt",
            json={"prompt": command("ask_choice", PLAN)},
            headers=headers,
            timeout=30,
        )
        events = parse_sse(response.text)
        history_id = events[-1]["historyId"]
        tool_call_id = events[-1]["pendingAsk"]["toolCallId"]
    finally:
        _stop(process)
    assert (tmp_path / "state.db").exists()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = _serve(config, port, tmp_path)
    try:
        _wait_for(base + "/openapi.json", process)
        response = httpx.post(
            f"{base}/api/histories/{history_id}/turn",
            json={"toolCallId": tool_call_id, "buttonId": "option:team"},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert response.json()["data"]["text"] == f"ask_choice returned: {compact(ANSWER)}"
    finally:
        _stop(process)


@pytest.mark.parametrize("route", ["prompt", "turn"])
async def test_client_disconnect_does_not_stop_the_turn(tmp_path: Path, route: str) -> None:
    url = sqlite_url(tmp_path)
    model = GatedModel()
    store = await Store.open(url, blob_dir=tmp_path / "blobs")
    config = config_for(url, tmp_path)
    runtime = Runtime(store=store, agents=config.resolved_agents(), model=model)
    app = create_app(config, runtime=runtime, store=store)
    running = await start_uvicorn(app)
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    try:
        async with httpx.AsyncClient(base_url=running.base, headers=headers, timeout=30) as c:
            created = await c.post("/api/histories", json={})
            history_id = created.json()["data"]["id"]
            if route == "prompt":
                body = {"prompt": "hello", "historyId": history_id}
                async with c.stream("POST", "/api/prompt", json=body) as response:
                    assert response.status_code == 200
                    async for line in response.aiter_lines():
                        if line.startswith("data: "):
                            assert parse_sse(line + "\n\n") == [{"text": "first"}]
                            break
                # The client has gone; the turn goes on.
            else:
                request = asyncio.create_task(
                    c.post(f"/api/histories/{history_id}/turn", json={"prompt": "hello"})
                )
                await asyncio.wait_for(model.started.wait(), 10)
                request.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await request
            model.gate.set()
            for _ in range(500):
                read = await c.get(f"/api/histories/{history_id}")
                rows = read.json()["data"]["rows"]
                if any(r["type"] == "assistant" for r in rows):
                    break
                await asyncio.sleep(0.02)
            assert [(r["type"], r["text"]) for r in rows] == [
                ("user", "hello"),
                ("assistant", "first second"),
            ]
    finally:
        await stop_uvicorn(running)
        await store.close()


async def test_shutdown_waits_for_running_turns(tmp_path: Path) -> None:
    """The app's shutdown waits for a turn whose client has gone, and the turn is saved."""
    url = sqlite_url(tmp_path)
    model = GatedModel()
    async with start_api(url, tmp_path, model=model) as api:
        history_id = (await api.post("/histories", {})).json()["data"]["id"]
        request = asyncio.create_task(api.post(f"/histories/{history_id}/turn", {"prompt": "hi"}))
        await asyncio.wait_for(model.started.wait(), 10)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        asyncio.get_running_loop().call_later(0.1, model.gate.set)
    async with start_api(url, tmp_path) as again:
        rows = await again.rows(history_id)
        assert rows == [
            {"type": "user", "text": "hi"},
            {"type": "assistant", "text": "first second"},
        ]
