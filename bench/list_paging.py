"""Benchmark: one page of ``GET /histories/pendingAsks`` and ``GET /histories`` at 1,000, 10,000
and 100,000 pending asks on SQLite.

A script, not a test: it prints figures and ratios measured in one run and asserts nothing about
time. Run it with ``.venv/bin/python bench/list_paging.py`` (about a minute; ``make bench`` runs
it too).

One user's conversations, each waiting on the spec's "Choose a plan" ask, are written straight
into a fresh SQLite file (the stored ``pendingAsk`` is the one a real scripted turn saved, copied
with a new ``toolCallId`` and time per conversation), 1,000, then up to 10,000, then up to
100,000. At each size the real app (``create_app``, its lifespan entered) answers in this
process over httpx's ASGI transport, the requests interleaved in rounds:

- the first page of each list (``limit`` 50, the default) and a page from the middle of the list
  (a cursor at the middle conversation), and the first page of 200;
- the old unpaged route's work, the whole list read and turned into JSON (what the route did
  before it had pages), at the sizes up to ``--unpaged-max`` (10,000 by default: at 100,000 it
  takes seconds and hundreds of MiB).

Before the rounds at each size the script's own objects are frozen out of the garbage
collector (``gc.freeze``), so the 100,000 keys it keeps do not make a collection during a
request dearer than in a server. The figure is the median over the rounds; "noise" is half the
interquartile range. The columns put the sizes side by side, then the time at 10,000 and at
100,000 over the time at 1,000: a page that costs the same at any size shows ratios near 1.0.
While each request runs, a task on the event loop wakes every millisecond and records the
longest it waited past its time: the longest stall any other caller of the server would have
seen.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter_ns
from typing import Any

import httpx

from _common import PLAN_ASK, fmt_time, machine_line, package_version, print_table
from handrail._util import new_id
from handrail.runtime.agent import Agent
from handrail.server import ServerConfig, UserConfig, create_app
from handrail.server.paging import encode_cursor
from handrail.server.views import pending_ask_summary
from handrail.store.paging import Position
from handrail.store.tables import histories

USER = "alice"
TOKEN = "bench-list-paging-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIZES = (1_000, 10_000, 100_000)
FILL_BATCH = 5_000
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass
class Case:
    name: str
    run: Callable[[], Awaitable[int]]  # returns the body size in bytes
    max_size: int = SIZES[-1]
    rounds: int | None = None  # None: the script's --rounds


@dataclass
class Result:
    times_ns: list[int] = field(default_factory=list)
    stalls_ns: list[int] = field(default_factory=list)
    size: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.times_ns)

    @property
    def noise(self) -> float:
        if len(self.times_ns) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_ns, n=4)
        return (q3 - q1) / 2 / self.median


class StallMeter:
    """The longest the event loop kept a 1 ms timer waiting past its time."""

    def __init__(self) -> None:
        self.worst = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            due = perf_counter_ns() + 1_000_000
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, perf_counter_ns() - due)

    def __enter__(self) -> StallMeter:
        self.worst = 0
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def stored_pending_ask(client_ask: dict[str, Any], n: int, at: dt.datetime) -> dict[str, Any]:
    """The saved ask of a real turn, as conversation `n` would have stored it at `at`."""
    ask = json.loads(json.dumps(client_ask))
    ask["toolCallId"] = f"call_{n}_0"
    ask["simple"]["toolCallId"] = ask["toolCallId"]
    ask["created"] = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    return ask


def fill_rows(template: dict[str, Any], start: int, stop: int) -> list[dict[str, Any]]:
    rows = []
    for n in range(start, stop):
        at = BASE + dt.timedelta(milliseconds=n)
        rows.append(
            {
                "id": new_id(),
                "owner_id": USER,
                "agent": "assistant",
                "title": f"Set up billing {n}",
                "pending_ask": stored_pending_ask(template, n, at),
                "pending_created": at,
                "version": 3,
                "next_seq": 2,
                "created": at,
                "updated": at,
                "deleted_at": None,
            }
        )
    return rows


async def main_async(args: argparse.Namespace, folder: Path) -> int:
    from sqlalchemy import Connection, insert, select

    url = f"sqlite:///{folder / 'handrail.db'}"
    config = ServerConfig(
        users=[UserConfig(id=USER, token=TOKEN)],
        agents=[Agent("assistant", instructions="Be brief.")],
        database_url=url,
        blob_dir=folder / "files",
        model="scripted",
    )
    app = create_app(config)
    deadline = time.monotonic() + args.max_seconds
    print(
        machine_line(
            f"handrail {package_version('handrail')}, sqlalchemy {package_version('sqlalchemy')}, "
            f"fastapi {package_version('fastapi')}, httpx {package_version('httpx')}"
        )
    )
    print(
        "In process: the app under httpx.ASGITransport, SQLite (WAL, synchronous NORMAL); "
        f"{args.rounds} interleaved rounds per size; median per request, noise = half the "
        "interquartile range / median"
    )
    async with app.router.lifespan_context(app):
        store = app.state.store
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=AUTH
        ) as client:
            # One real turn: the ask as the runtime stores it.
            prompt = "ask_choice " + json.dumps(PLAN_ASK)
            response = await client.post("/api/prompt", json={"prompt": prompt})
            assert response.status_code == 200, response.text
            real = (await store.histories.pending(USER))[0]
            template: dict[str, Any] = dict(
                await store.db.read(
                    lambda c: c.execute(
                        select(histories.c.pending_ask).where(histories.c.id == real.id)
                    ).scalar_one()
                )
            )
            await store.db.write(
                lambda c: c.execute(histories.delete().where(histories.c.id == real.id))
            )

            count = 0
            keys: list[tuple[dt.datetime, str]] = []

            def insert_rows(connection: Connection, rows: list[dict[str, Any]]) -> None:
                connection.execute(insert(histories), rows)

            async def grow(to: int) -> float:
                nonlocal count
                start = time.monotonic()
                while count < to:
                    stop = min(count + FILL_BATCH, to)
                    rows = fill_rows(template, count, stop)
                    keys.extend((row["created"], row["id"]) for row in rows)
                    await store.db.write(insert_rows, rows)
                    count = stop
                return time.monotonic() - start

            def middle_cursor(list_name: str) -> str:
                ordered = sorted(keys, reverse=True)
                at, history_id = ordered[len(ordered) // 2]
                return encode_cursor(list_name, USER, Position(at=at, id=history_id))

            async def get(path: str, params: dict[str, Any] | None = None) -> int:
                response = await client.get(path, params=params)
                assert response.status_code == 200, response.text
                return len(response.content)

            async def unpaged() -> int:
                listed = await store.histories.pending(USER)
                body = json.dumps(
                    {"data": [pending_ask_summary(h) for h in listed], "requestId": "x"},
                    ensure_ascii=False,
                    separators=(",", ":"),
                ).encode()
                return len(body)

            cursors: dict[str, str] = {}
            cases = [
                Case("pendingAsks, first page (50)", lambda: get("/api/histories/pendingAsks")),
                Case(
                    "pendingAsks, middle page (50)",
                    lambda: get("/api/histories/pendingAsks", {"cursor": cursors["pendingAsks"]}),
                ),
                Case(
                    "pendingAsks, first page (200)",
                    lambda: get("/api/histories/pendingAsks", {"limit": 200}),
                ),
                Case("histories, first page (50)", lambda: get("/api/histories")),
                Case(
                    "histories, middle page (50)",
                    lambda: get("/api/histories", {"cursor": cursors["histories"]}),
                ),
                Case(
                    "unpaged: whole pending list to JSON",
                    unpaged,
                    max_size=args.unpaged_max,
                    rounds=args.unpaged_rounds,
                ),
            ]
            results: dict[tuple[str, int], Result] = {}
            meter = StallMeter()
            for size in SIZES:
                if time.monotonic() > deadline:
                    print(f"\nStopped before {size:,}: the time cap (--max-seconds) was hit.")
                    break
                took = await grow(size)
                # The script's own bookkeeping (every key it wrote) stays out of the collector's
                # way, so a collection during a request costs what it would in a server.
                gc.collect()
                gc.freeze()
                print(f"\n{size:,} pending asks (filled in {took:.1f} s)", flush=True)
                cursors["pendingAsks"] = middle_cursor("pendingAsks")
                cursors["histories"] = middle_cursor("histories")
                active = [case for case in cases if size <= case.max_size]
                for case in active:  # a warm-up call each
                    await case.run()
                for round_no in range(args.rounds):
                    order = active[round_no % len(active) :] + active[: round_no % len(active)]
                    if round_no % 2:
                        order.reverse()
                    for case in order:
                        wanted = case.rounds if case.rounds is not None else args.rounds
                        result = results.setdefault((case.name, size), Result())
                        if len(result.times_ns) >= wanted:
                            continue
                        await asyncio.sleep(0.002)  # let the meter tick once
                        with meter:
                            start = perf_counter_ns()
                            result.size = await case.run()
                            result.times_ns.append(perf_counter_ns() - start)
                            await asyncio.sleep(0)
                        result.stalls_ns.append(meter.worst)
            print_results(cases, results)
    return 0


def print_results(cases: list[Case], results: dict[tuple[str, int], Result]) -> None:
    sizes = [size for size in SIZES if any((c.name, size) in results for c in cases)]
    headers = ["request", *(f"{size:,}" for size in sizes)]
    headers += [f"{size:,} / {sizes[0]:,}" for size in sizes[1:]]
    rows = []
    for case in cases:
        cells = [case.name]
        medians: list[float | None] = []
        for size in sizes:
            result = results.get((case.name, size))
            medians.append(result.median if result else None)
            cells.append(
                f"{fmt_time(result.median)} ±{result.noise:.0%}" if result else "(not run)"
            )
        for m in medians[1:]:
            first = medians[0]
            cells.append(f"{m / first:.2f}×" if m is not None and first else "")
        rows.append(cells)
    print_table("Median time per request", headers, rows)

    stall_rows = []
    for case in cases:
        cells = [case.name]
        for size in sizes:
            result = results.get((case.name, size))
            cells.append(
                f"{fmt_time(statistics.median(result.stalls_ns))} / "
                f"{fmt_time(max(result.stalls_ns))}"
                if result
                else ""
            )
        stall_rows.append(cells)
    print_table(
        "Longest event-loop stall during the request (median / worst over the rounds)",
        ["request", *(f"{size:,}" for size in sizes)],
        stall_rows,
    )

    size_rows = []
    for case in cases:
        cells = [case.name]
        for size in sizes:
            result = results.get((case.name, size))
            cells.append(f"{result.size:,} B" if result else "")
        size_rows.append(cells)
    print_table("Body size", ["request", *(f"{size:,}" for size in sizes)], size_rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add = parser.add_argument
    add("--rounds", type=int, default=30, help="rounds per size (default 30)")
    add(
        "--unpaged-max",
        type=int,
        default=10_000,
        help="the largest size at which to time the old unpaged work (default 10,000)",
    )
    add("--unpaged-rounds", type=int, default=5, help="rounds of the unpaged work (default 5)")
    add("--max-seconds", type=float, default=600.0, help="stop filling after this (default 600)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="handrail-bench-paging-") as folder:
        return asyncio.run(main_async(args, Path(folder)))


if __name__ == "__main__":
    sys.exit(main())
