"""An ask answered through one server process appears answered in a stream on another: how
long it takes, against the same process's own stream as the baseline, in the same run.

The issue's bar: "an ask answered through process A appears answered in a tab connected to
process B within a second". The script starts a throwaway PostgreSQL cluster (``tests/_pg.py``,
durable: ``fsync`` and ``synchronous_commit`` on, unix socket) and two ``handrail serve``
processes A and B on it (loopback, the scripted model), opens alice's event stream
(``GET /api/events``) on each, and then, round after round (a bounded count), pauses a
conversation on a choice ask through A and answers it through A. From the moment the answer is
sent, it times the ``ask.answered`` event of that ask on A's stream (same process: the
baseline) and on B's (across processes: the event goes through PostgreSQL's ``NOTIFY``). Both
streams are read by this one client process, with one clock.

It prints p50, p95, p99 and max of each, B's figures as ratios of A's, and how many of B's
arrived within a second. Usage::

    .venv/bin/python bench/events.py [--rounds 200] [--warmup 10]

It needs PostgreSQL (``scripts/ensure-postgres.sh``) and pytest (the ``test`` extra) for the
throwaway cluster, and exits 1 when an event never arrives (then the times mean nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _common import PLAN_ASK, machine_line, package_version, print_table  # noqa: E402

PROMPT = "ask_choice " + json.dumps(PLAN_ASK)
ANSWER: dict[str, Any] = {"action": "accept", "content": {"selected": ["team"]}}
TOKEN = "bench-" + uuid.uuid4().hex
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
#: How long one event may take before the run counts it as lost.
EVENT_TIMEOUT_S = 10.0
SERVER_START_S = 90.0


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    name: str
    base: str
    process: subprocess.Popen[bytes]
    log: Path


def start_server(name: str, url: str, folder: Path) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "handrail.yaml"
    config.write_text(
        f"database_url: {url!r}\n"
        f"blob_dir: {str(folder / 'blobs')!r}\n"
        "users:\n  - {id: alice, token_env: ALICE_TOKEN}\n"
        "agents:\n  - name: helper\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env["ALICE_TOKEN"] = TOKEN
    env["HANDRAIL_MODEL"] = "scripted"
    log = folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "handrail.cli", "serve", "--config", str(config)),
                *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Server(name, f"http://127.0.0.1:{port}", process, log)


async def ready(server: Server) -> None:
    deadline = time.monotonic() + SERVER_START_S
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise SystemExit(f"server {server.name} exited:\n{server.log.read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(server.base + "/openapi.json")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise SystemExit(f"server {server.name} did not start:\n{server.log.read_text()}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


@dataclass
class Stream:
    """Alice's event stream on one server: when each ``ask.answered`` arrived, by ask."""

    name: str
    arrived: dict[str, float] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def listening(server: Server) -> AsyncIterator[Stream]:
    stream = Stream(server.name)
    is_ready = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def read() -> None:
        timeout = httpx.Timeout(10, read=None)
        async with (
            httpx.AsyncClient(headers=HEADERS, timeout=timeout) as client,
            client.stream("GET", f"{server.base}/api/events") as response,
        ):
            async for line in response.aiter_lines():
                if line == ": ready":
                    is_ready.set()
                elif line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event["kind"] == "ask.answered":
                        key = f"{event['historyId']}:{event['data']['toolCallId']}"
                        stream.arrived[key] = loop.time()
                        stream.changed.set()

    task = asyncio.create_task(read())
    try:
        await asyncio.wait_for(is_ready.wait(), 30)
        yield stream
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            await task


async def arrival(stream: Stream, key: str) -> float | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + EVENT_TIMEOUT_S
    while key not in stream.arrived:
        left = deadline - loop.time()
        if left <= 0:
            return None
        stream.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stream.changed.wait(), left)
    return stream.arrived[key]


async def one_round(
    client: httpx.AsyncClient, a: Server, streams: tuple[Stream, Stream]
) -> tuple[float, float] | None:
    """Pause a conversation on A, answer it through A; the seconds until each stream heard it
    (None when one never did)."""
    created = await client.post(f"{a.base}/api/histories", json={})
    history_id = created.json()["data"]["id"]
    paused = await client.post(f"{a.base}/api/histories/{history_id}/turn", json={"prompt": PROMPT})
    tool_call_id = paused.json()["data"]["pendingAsk"]["toolCallId"]
    key = f"{history_id}:{tool_call_id}"
    loop = asyncio.get_running_loop()
    sent = loop.time()
    answered = await client.post(
        f"{a.base}/api/histories/{history_id}/turn",
        json={"askResponse": {"toolCallId": tool_call_id, **ANSWER}},
    )
    if answered.status_code != 200:
        raise SystemExit(f"the answer failed: {answered.status_code} {answered.text}")
    same, other = await asyncio.gather(*(arrival(s, key) for s in streams))
    if same is None or other is None:
        return None
    return same - sent, other - sent


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def run(rounds: int, warmup: int) -> int:
    from _pg import start_cluster

    print(
        machine_line(
            f"handrail {package_version('handrail')} | PostgreSQL cluster (durable) | "
            f"2 handrail serve processes"
        )
    )
    with contextlib.ExitStack() as stack:
        cluster = start_cluster(durable=True)
        stack.callback(cluster.stop)
        url = str(cluster.new_database_url()).replace("+asyncpg", "", 1)
        folder = Path(tempfile.mkdtemp(prefix="handrail-bench-events-"))
        a = start_server("A", url, folder / "a")
        stack.callback(stop, a)
        await ready(a)  # first: it migrates the new database
        b = start_server("B", url, folder / "b")
        stack.callback(stop, b)
        await ready(b)
        same: list[float] = []
        other: list[float] = []
        lost = 0
        async with (
            httpx.AsyncClient(headers=HEADERS, timeout=30) as client,
            listening(a) as on_a,
            listening(b) as on_b,
        ):
            for index in range(warmup + rounds):
                got = await one_round(client, a, (on_a, on_b))
                if index < warmup:
                    continue
                if got is None:
                    lost += 1
                    continue
                same.append(got[0])
                other.append(got[1])
        for server in (a, b):
            if "Traceback" in server.log.read_text(errors="replace"):
                print(f"\nserver {server.name} logged a traceback:\n{server.log.read_text()}")
                return 1
    if lost or not same:
        print(f"\n{lost} of {rounds} events never arrived within {EVENT_TIMEOUT_S:.0f} s")
        return 1
    rows = []
    for name, values in (("same process (A -> A)", same), ("across processes (A -> B)", other)):
        rows.append(
            [
                name,
                ms(quantile(values, 0.5)),
                ms(quantile(values, 0.95)),
                ms(quantile(values, 0.99)),
                ms(max(values)),
            ]
        )
    rows.append(
        [
            "ratio B / A",
            f"{quantile(other, 0.5) / quantile(same, 0.5):.2f}",
            f"{quantile(other, 0.95) / quantile(same, 0.95):.2f}",
            f"{quantile(other, 0.99) / quantile(same, 0.99):.2f}",
            f"{max(other) / max(same):.2f}",
        ]
    )
    print_table(
        f"ask.answered from the answer sent through A until a stream heard it ({rounds} rounds)",
        ["stream", "p50", "p95", "p99", "max"],
        rows,
    )
    within = sum(1 for v in other if v < 1.0)
    print(f"\nacross processes within 1 s: {within} of {len(other)}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="answers timed (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="answers first, not timed")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    sys.exit(asyncio.run(run(args.rounds, args.warmup)))


if __name__ == "__main__":
    main()
