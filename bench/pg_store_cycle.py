"""Benchmark: the store's own CPU per cycle on PostgreSQL, this checkout against another.

A script, not a test. It starts a throwaway PostgreSQL cluster (as the tests do), then, in
turns, a subprocess for each tree that opens a `Store` on a new database and runs cycles from
``--tasks`` concurrent tasks for ``--seconds``: a cycle is what the headless turn route asks of
the store for an ask-then-answer cycle (create; load; a change that appends the prompt and the
ask and sets the pending ask and title; load; the answer's change with its ask status and a
lease; the reply's change that releases the lease). It prints each run's CPU per cycle (the
subprocess's own, from `time.process_time`; and PostgreSQL's: its backends serving that run's
database, from /proc) and the median ratios, after / before:

    .venv/bin/python bench/pg_store_cycle.py --before /work/base --rounds 4

No HTTP, runtime or model: the figure is the store path alone (SQLAlchemy, asyncpg, the
statements' own work), which `bench/load.py` shows only among the rest of a server's CPU. The
backends' CPU leaves out the cluster's shared helpers (the WAL writer, the checkpointer), which
`bench/load.py` and `bench/asgi_cpu.py` count with the rest of the cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def backends_cpu_s(database: str) -> float:
    """CPU seconds of the live PostgreSQL backends serving `database` (each one's process title
    is ``postgres: <user> <database> ...``), from /proc."""
    from load import process_cpu_s

    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            continue
        if title.startswith("postgres: ") and title.split()[2:3] == [database]:
            total += process_cpu_s(int(entry.name))
    return total


async def cycles(url: str, seconds: float, tasks: int) -> dict[str, float]:
    from handrail.asks import PendingAsk
    from handrail.store import HistoryChange, ReleaseLease, Store, TurnLease

    store = await Store.open(url)
    pending = PendingAsk.from_json(
        {
            "toolCallId": "c1",
            "kind": "choice",
            "input": {"question": "Which plan?"},
            "simple": {"buttons": []},
            "promptIndex": 1,
            "responseMessages": [{"role": "assistant", "content": []}],
            "created": "2026-03-01T10:00:00.000Z",
        }
    )
    ask = {
        "type": "tool-call",
        "toolName": "ask_choice",
        "toolCallId": "c1",
        "ask": {"kind": "choice", "status": "pending"},
    }
    done = 0

    async def one() -> None:
        nonlocal done
        history = await store.histories.create("alice", agent="demo")
        loaded = await store.histories.load(history.id)
        assert loaded is not None
        prompt = HistoryChange(
            append=[{"type": "user", "content": "hi"}, ask], pending_ask=pending, title="t"
        )
        await store.histories.apply(history.id, prompt, expected_version=loaded[0].version)
        loaded = await store.histories.load(history.id)
        assert loaded is not None
        now = history.created
        lease = TurnLease(history_id=history.id, owner="p1", until=now, state={}, created=now)
        answer = HistoryChange(
            append=[{"type": "tool-result", "toolCallId": "c1"}],
            ask_status={"c1": "answered"},
            pending_ask=None,
            lease=lease,
        )
        step = await store.histories.apply(history.id, answer, expected_version=loaded[0].version)
        reply = HistoryChange(
            append=[{"type": "assistant", "content": "ok"}], lease=ReleaseLease(owner="p1")
        )
        await store.histories.apply(history.id, reply, expected_version=step.version)
        done += 1

    async def worker(until: float) -> None:
        while time.monotonic() < until:
            await one()

    database = urlsplit(url).path.lstrip("/")
    try:
        for _ in range(20):  # connections opened, statements prepared
            await one()
        done = 0
        backends = backends_cpu_s(database)
        start, cpu = time.monotonic(), time.process_time()
        await asyncio.gather(*(worker(start + seconds) for _ in range(tasks)))
        wall, cpu = time.monotonic() - start, time.process_time() - cpu
        # Before the store closes: its backends end with their connections.
        backends = backends_cpu_s(database) - backends
    finally:
        await store.close()
    return {
        "cycles": done,
        "cpu_ms": cpu * 1000 / done,
        "pg_ms": backends * 1000 / done,
        "per_s": done / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", type=Path, required=True, help="another checkout (its root or its src/)"
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.url:
        print(json.dumps(asyncio.run(cycles(args.url, args.seconds, args.tasks))))
        return
    from _common import before_src

    args.before = before_src(args.before)
    sys.path.insert(0, str(ROOT / "tests"))
    from _pg import start_cluster

    cluster = start_cluster(durable=True, max_connections=200)
    runs: dict[str, list[dict[str, float]]] = {"after": [], "before": []}
    try:
        for _ in range(args.rounds):
            for name, src in (("after", ROOT / "src"), ("before", args.before)):
                command = [sys.executable, __file__, "--before", str(args.before)]
                command += ["--seconds", str(args.seconds), "--tasks", str(args.tasks)]
                command += ["--url", cluster.new_database_url()]
                env = {**os.environ, "PYTHONPATH": str(src)}
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                runs[name].append(json.loads(out.stdout))
    finally:
        cluster.stop()
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, results in runs.items():
        cpu = ", ".join(f"{r['cpu_ms']:.3f}" for r in results)
        pg = ", ".join(f"{r['pg_ms']:.3f}" for r in results)
        rate = ", ".join(f"{r['per_s']:.0f}" for r in results)
        print(f"{name}: CPU ms/cycle {cpu}; PostgreSQL backends {pg}; cycles/s {rate}")
    for key, what in (("cpu_ms", "CPU ms/cycle"), ("pg_ms", "PostgreSQL backends' CPU ms/cycle")):
        after = statistics.median(r[key] for r in runs["after"])
        before = statistics.median(r[key] for r in runs["before"])
        print(f"median {what} after / before: {after:.3f} / {before:.3f} ({after / before:.2f})")
    after = statistics.median(r["per_s"] for r in runs["after"])
    before = statistics.median(r["per_s"] for r in runs["before"])
    print(f"median cycles/s after / before: {after:.0f} / {before:.0f} ({after / before:.2f})")


if __name__ == "__main__":
    main()
