"""A conversation opened mid-turn, through another ``handrail serve`` process on the same
PostgreSQL database: its history view says what the turn running in the first process does
(``running: {turnId, phase, tool, since}``), and ``null`` once it ended, or once the process
that ran it was killed and its row lapsed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any, Final

import httpx
from racing import HEADERS, two_servers
from server_helpers import command
from test_events_across_processes import WAIT_S, _events, _until

#: How many times a test reads a view while it waits for another process's write (each read
#: is followed by a short pause: a bound on a loaded machine, not a measure).
READS: Final = 100


async def _view(client: httpx.AsyncClient, base: str, history_id: str) -> dict[str, Any]:
    response = await client.get(f"{base}/api/histories/{history_id}")
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def _running_until(
    client: httpx.AsyncClient, base: str, history_id: str, *, shown: bool
) -> dict[str, Any]:
    """The view once its ``running`` is set (`shown`) or null; fails after `READS` reads."""
    for _ in range(READS):
        view = await _view(client, base, history_id)
        if (view["running"] is not None) == shown:
            return view
        await asyncio.sleep(0.1)
    raise AssertionError(f"running stayed {view['running']!r}")


async def _start_waiting_turn(
    client: httpx.AsyncClient, base: str, heard: asyncio.Queue[Any], seconds: int
) -> tuple[str, asyncio.Task[httpx.Response], dict[str, Any]]:
    level = await client.put(
        f"{base}/api/permissions/local:ledger", json={"level": "non-consequential"}
    )
    assert level.status_code == 200, level.text
    created = await client.post(f"{base}/api/histories", json={})
    history_id = str(created.json()["data"]["id"])
    turn = asyncio.create_task(
        client.post(
            f"{base}/api/histories/{history_id}/turn",
            json={"prompt": command("call wait_long", {"seconds": seconds})},
        )
    )
    progress = await _until(heard, "turn.progress", WAIT_S)
    while progress["data"].get("phase") != "tool":
        progress = await _until(heard, "turn.progress", WAIT_S)
    return history_id, turn, progress


async def test_a_view_through_the_other_process_shows_the_running_tool(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    async with (
        two_servers(url, tmp_path) as (one, two),
        httpx.AsyncClient(headers=HEADERS, timeout=60) as client,
        _events(client, two.base) as heard,
    ):
        history_id, turn, progress = await _start_waiting_turn(client, one.base, heard, 50)
        # Process one runs it: its own view knows at once.
        here = (await _view(client, one.base, history_id))["running"]
        assert here == {
            "turnId": progress["data"]["turnId"],
            "phase": "tool",
            "tool": {
                "toolName": "wait_long",
                "toolTitle": "Wait a long time",
                "toolCallId": progress["data"]["toolCallId"],
            },
            "since": here["since"],
        }
        # Process two reads it from the database, the tool's title with it.
        there = (await _running_until(client, two.base, history_id, shown=True))["running"]
        assert there == here
        assert there["since"].endswith("Z")
        stopped = await client.post(f"{two.base}/api/histories/{history_id}/stop")
        assert stopped.json()["data"]["stopped"] is True
        assert (await asyncio.wait_for(turn, WAIT_S)).status_code == 200
        finished = await _until(heard, "turn.finished", WAIT_S)
        assert finished["data"]["turnId"] == here["turnId"]
        assert (await _view(client, one.base, history_id))["running"] is None
        await _running_until(client, two.base, history_id, shown=False)


async def test_the_turn_of_a_killed_process_stops_showing_as_running(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    async with (
        two_servers(url, tmp_path, settings="turn_lease: 1\n") as (one, two),
        httpx.AsyncClient(headers=HEADERS, timeout=60) as client,
        _events(client, two.base) as heard,
    ):
        history_id, turn, _ = await _start_waiting_turn(client, one.base, heard, 50)
        await _running_until(client, two.base, history_id, shown=True)
        one.process.kill()
        one.process.wait(timeout=10)
        turn.cancel()
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            await turn
        # Nobody renews its row: once it lapses, the view says no turn is running.
        view = await _running_until(client, two.base, history_id, shown=False)
        assert view["running"] is None
