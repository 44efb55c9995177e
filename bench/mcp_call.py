"""Benchmark: one call of a read-only MCP tool through handrail against the same call made with
the official SDK's client alone, over stdio and over streamable HTTP.

A script, not a test: it prints figures measured in one run and asserts nothing about time. Run
it with ``.venv/bin/python bench/mcp_call.py`` (about a minute).

The server is the demo's notes server (``handrail.demo.notes_mcp``, the official SDK's server
API); the tool is ``list_notes`` (read-only: no gate). For each transport, in one process, the
contenders are interleaved in rounds (the order rotating between rounds):

- **sdk**: ``Client.call_tool("list_notes")`` on a client of its own;
- **tool**: the same call through handrail's tool layer: the saved connection's tool
  (``ConnectionTool.run``: the arguments checked against the schema, the call through the
  connection's link, the result made storable), what a turn does for the call itself;
- **turn**: a whole turn that makes the call: ``Runtime.start_prompt`` with the scripted model's
  ``call notes_list_notes {}`` in a new conversation of a user who allowed read-only tools: the
  policy decision (a permission level and a grant read from the store), the model's two steps and
  the turn's rows committed to SQLite;
- **local turn**: the same turn calling a local Python tool that returns the same notes: what a
  turn costs without MCP.

The figures are medians over the rounds; "noise" is half the interquartile range. The last
columns are handrail's added time per call: tool - sdk (the target: at most 1 ms), turn - sdk
(which includes a SQLite commit and two model steps) and turn - local (what MCP adds to a
turn).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from mcp import StdioServerParameters
from mcp.client import Client

from _common import fmt_time, machine_line, package_version, print_table
from handrail.connections import Catalog, SecretBox
from handrail.demo.notes_mcp import SEED_NOTES
from handrail.runtime.agent import Agent
from handrail.runtime.connected import ConnectionHub
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store

NOTES = [sys.executable, "-m", "handrail.demo.notes_mcp"]
ADMIN = Principal(user_id="admin", is_admin=True)
USER = Principal(user_id="alice")


def signed(ns: float) -> str:
    return ("-" if ns < 0 else "+") + fmt_time(abs(ns))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server() -> Any:
    port = _free_port()
    process = subprocess.Popen(
        [*NOTES, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@contextlib.asynccontextmanager
async def handrail(folder: Path, mcp: dict[str, Any], kind: str) -> AsyncIterator[Any]:
    store = await Store.open(f"sqlite:///{folder / 'bench.db'}", blob_dir=folder / "blobs")
    agent = Agent("bench")

    @agent.tool(read_only=True)
    def local_notes() -> str:
        """The seed notes, from a local Python tool."""
        return json.dumps([dict(n) for n in SEED_NOTES])

    runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
    hub = ConnectionHub(store, catalog=Catalog(), secrets=SecretBox(None), sync_every=0)
    await hub.start([agent])
    try:
        record = await hub.create(
            ADMIN, {"app": "custom", "name": "Notes", "kind": kind, "mcp": mcp, "trusted": True}
        )
        assert record.status["state"] == "connected", record.status
        await store.permissions.set(USER.user_id, record.id, "read-only")
        await store.permissions.set(USER.user_id, "local:bench", "read-only")
        yield runtime, agent.tools["notes_list_notes"]
    finally:
        await hub.aclose()
        await runtime.aclose()
        await store.close()


async def measure(
    contenders: dict[str, Callable[[], Awaitable[str]]], rounds: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    expected = None
    for name, run in contenders.items():  # warm up, and check each gets the same notes
        got = await run()
        expected = expected or got
        if "Shopping list" not in got:
            raise SystemExit(f"{name} answered {got[:200]!r}")
    names = list(contenders)
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            started = time.perf_counter_ns()
            await contenders[name]()
            times[name].append(time.perf_counter_ns() - started)
    return times


async def transport(
    label: str, sdk_server: Any, mcp: dict[str, Any], kind: str, rounds: int
) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Client(sdk_server) as client, handrail(Path(tmp), mcp, kind) as (runtime, tool):

            async def sdk() -> str:
                result = await client.call_tool("list_notes", {})
                return str(result.content[0].text)  # type: ignore[union-attr]

            async def through_tool() -> str:
                return str(await tool.run({}))

            async def turn() -> str:
                running = await runtime.start_prompt(USER, "call notes_list_notes {}")
                return (await running.result()).text

            async def local_turn() -> str:
                running = await runtime.start_prompt(USER, "call local_notes {}")
                return (await running.result()).text

            times = await measure(
                {"sdk": sdk, "tool": through_tool, "turn": turn, "local turn": local_turn},
                rounds,
            )
    median = {name: statistics.median(values) for name, values in times.items()}
    noise = {
        name: (statistics.quantiles(values, n=4)[2] - statistics.quantiles(values, n=4)[0]) / 2
        for name, values in times.items()
    }
    return [
        [
            label,
            *(
                f"{fmt_time(median[n])} ± {fmt_time(noise[n])}"
                for n in ("sdk", "tool", "turn", "local turn")
            ),
            signed(median["tool"] - median["sdk"]),
            signed(median["turn"] - median["sdk"]),
            signed(median["turn"] - median["local turn"]),
        ]
    ]


async def main_async(rounds: int) -> None:
    rows: list[list[str]] = []
    stdio = StdioServerParameters(command=NOTES[0], args=NOTES[1:])
    rows += await transport(
        "stdio", stdio, {"command": NOTES[0], "args": NOTES[1:]}, "mcp-stdio", rounds
    )
    with http_server() as url:
        rows += await transport("http", url, {"url": url}, "mcp-http", rounds)
    print(machine_line(f"mcp {package_version('mcp')}"))
    print_table(
        f"list_notes, median of {rounds} interleaved rounds",
        [
            "transport",
            "sdk",
            "tool",
            "turn",
            "local turn",
            "tool - sdk",
            "turn - sdk",
            "turn - local",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds per transport")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
