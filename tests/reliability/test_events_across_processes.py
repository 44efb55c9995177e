"""Events across two ``handrail serve`` processes on one PostgreSQL database: an ask answered
through process A shows in an event stream connected to process B at once (LISTEN/NOTIFY), and
Stop sent to one process stops a turn the other runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
from racing import HEADERS, two_servers
from server_helpers import command

#: How long a test waits for an event (a bound for a loaded machine, not a measure: speed is
#: measured in bench/).
WAIT_S = 5.0


@asynccontextmanager
async def _events(
    client: httpx.AsyncClient, base: str, last: str | None = None
) -> AsyncIterator[asyncio.Queue[Any]]:
    """Alice's event stream on `base` (after event `last`): a queue of its events."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    ready = asyncio.Event()

    async def read() -> None:
        headers = {**HEADERS, **({"Last-Event-ID": last} if last else {})}
        async with client.stream("GET", f"{base}/api/events", headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line == ": ready":
                    ready.set()
                elif line.startswith("data: "):
                    queue.put_nowait(json.loads(line[6:]))

    task = asyncio.create_task(read())
    try:
        await asyncio.wait_for(ready.wait(), 10)
        yield queue
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError, httpx.HTTPError):
            await task


async def _until(queue: asyncio.Queue[Any], kind: str, timeout: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        event = await asyncio.wait_for(queue.get(), max(deadline - loop.time(), 0.001))
        if event["kind"] == kind:
            return dict(event)


async def test_an_answer_through_one_process_reaches_a_stream_on_the_other(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    async with (
        two_servers(url, tmp_path) as (one, two),
        httpx.AsyncClient(headers=HEADERS, timeout=30) as client,
        _events(client, two.base) as heard,
    ):
        level = await client.put(
            f"{one.base}/api/permissions/local:ledger", json={"level": "non-consequential"}
        )
        assert level.status_code == 200, level.text
        created = await client.post(f"{one.base}/api/histories", json={})
        history_id = created.json()["data"]["id"]
        # On process one: a conversation pauses on the approval of pay.
        turn = await client.post(
            f"{one.base}/api/histories/{history_id}/turn",
            json={"prompt": command("call pay", {"invoice": "inv-1"})},
        )
        pending = turn.json()["data"]["pendingAsk"]
        asked = await _until(heard, "ask.created", WAIT_S)
        assert asked["historyId"] == history_id
        assert asked["data"]["ask"]["toolCallId"] == pending["toolCallId"]
        # Answered through process one: process two's stream hears it.
        answered = await client.post(
            f"{one.base}/api/histories/{history_id}/turn",
            json={
                "askResponse": {
                    "toolCallId": pending["toolCallId"],
                    "action": "accept",
                    "content": {"confirmed": True},
                }
            },
        )
        assert answered.status_code == 200
        event = await _until(heard, "ask.answered", WAIT_S)
        assert event["data"]["toolCallId"] == pending["toolCallId"]
        finished = await _until(heard, "turn.finished", WAIT_S)
        assert finished["historyId"] == history_id


async def test_a_rename_crosses_and_replays_on_the_other(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    async with (
        two_servers(url, tmp_path) as (one, two),
        httpx.AsyncClient(headers=HEADERS, timeout=30) as client,
        _events(client, two.base) as heard,
    ):
        created = await client.post(f"{one.base}/api/histories", json={})
        history_id = created.json()["data"]["id"]
        first = await _until(heard, "history.created", WAIT_S)
        renamed = await client.patch(
            f"{one.base}/api/histories/{history_id}", json={"title": "Across"}
        )
        assert renamed.status_code == 200
        event = await _until(heard, "history.renamed", WAIT_S)
        assert event["data"] == {"title": "Across"}
        # Process two kept what it heard from process one: a reconnect there replays it.
        async with _events(client, two.base, last=first["id"]) as again:
            replayed = await _until(again, "history.renamed", WAIT_S)
            assert replayed["id"] == event["id"]


async def test_stop_through_one_process_stops_the_turn_the_other_runs(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    async with (
        two_servers(url, tmp_path) as (one, two),
        httpx.AsyncClient(headers=HEADERS, timeout=60) as client,
        _events(client, two.base) as heard,
    ):
        level = await client.put(
            f"{one.base}/api/permissions/local:ledger", json={"level": "non-consequential"}
        )
        assert level.status_code == 200, level.text
        created = await client.post(f"{one.base}/api/histories", json={})
        history_id = created.json()["data"]["id"]
        turn = asyncio.create_task(
            client.post(
                f"{one.base}/api/histories/{history_id}/turn",
                json={"prompt": command("call wait_long", {"seconds": 50})},
            )
        )
        running = await _until(heard, "turn.progress", WAIT_S)
        while running["data"].get("phase") != "tool":
            running = await _until(heard, "turn.progress", WAIT_S)
        assert running["data"]["toolName"] == "wait_long"
        # Stop goes to process two; process one runs the turn.
        stopped = await client.post(f"{two.base}/api/histories/{history_id}/stop")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json()["data"] == {
            "historyId": history_id,
            "stopped": True,
            "cancelledAsk": None,
        }
        result = await asyncio.wait_for(turn, WAIT_S)
        assert result.status_code == 200
        finished = await _until(heard, "turn.finished", WAIT_S)
        assert finished["data"]["stopped"] is True
        view = await client.get(f"{two.base}/api/histories/{history_id}")
        rows = view.json()["data"]["rows"]
        outcome = next(r for r in rows if r["type"] == "tool-result")
        assert outcome["result"]["code"] == "TOOL_STOPPED"
        assert view.json()["data"]["pendingAsk"] is None
