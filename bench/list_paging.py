"""Benchmark: one page of ``GET /histories/pendingAsks`` and ``GET /histories`` at 1,000, 10,000
and 100,000 pending asks on SQLite.

A script, not a test: it prints figures and ratios measured in one run and asserts nothing about
time. Run it with ``.venv/bin/python bench/list_paging.py`` (about a minute; ``make bench`` runs
it too).

Three databases, each its own SQLite file with the real app on it (``create_app``, its lifespan
entered, answering in this process over httpx's ASGI transport), hold one user's 1,000, 10,000
and 100,000 conversations, each waiting on the spec's "Choose a plan" ask. They are written
straight into the table; the stored ``pendingAsk`` is the one a real scripted turn saved, copied
with a new ``toolCallId`` and time per conversation. Then every request below runs on every
size, all interleaved in rounds (the order rotating and reversing between rounds), so the sizes
are compared under the same load:

- the first page of each list (``limit`` 50, the default) and a page from the middle of the list
  (a cursor at the middle conversation), and the first page of 200 pending asks;
- the old unpaged route's work, the whole list read and turned into JSON (what the route did
  before it had pages), at the sizes up to ``--unpaged-max`` (10,000 by default: at 100,000 it
  takes seconds and hundreds of MiB). Its rounds come after the pages' rounds, so its garbage
  does not land on the pages' figures.

Before the rounds, the script's own objects are frozen out of the garbage collector
(``gc.freeze``), so the rows it made do not make a collection during a request dearer than in a
server. The figure is the median over the rounds; "noise" is half the interquartile range. The
columns put the sizes side by side, then the time at 10,000 and at 100,000 over the time at
1,000: a page that costs the same at any size shows ratios near 1.0.
While each request runs, a task on the event loop wakes every millisecond and records the
longest it waited past its time: the longest stall any other caller of the server would have
seen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from handrail.store import Store
from handrail.store.paging import Position
from handrail.store.tables import histories

USER = "alice"
TOKEN = "bench-list-paging-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIZES = (1_000, 10_000, 100_000)
FILL_BATCH = 5_000
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
UNPAGED = "unpaged: whole pending list to JSON"


@dataclass
class Case:
    name: str
    run: Callable[[], Awaitable[int]]  # returns the body size in bytes
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
    """The longest the event loop kept a 1 ms timer waiting past its time, including a wait
    still running when the measured request returns (work that never awaited)."""

    def __init__(self) -> None:
        self.worst = 0
        self._due = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            self._due = perf_counter_ns() + 1_000_000
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, perf_counter_ns() - self._due)

    def __enter__(self) -> StallMeter:
        self.worst = 0
        self._due = perf_counter_ns() + 1_000_000
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        self.worst = max(self.worst, perf_counter_ns() - self._due)


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


class Target:
    """One size: its own SQLite file and app, filled with `size` pending asks of `USER`."""

    def __init__(self, size: int, folder: Path) -> None:
        self.size = size
        url = f"sqlite:///{folder / 'handrail.db'}"
        config = ServerConfig(
            users=[UserConfig(id=USER, token=TOKEN)],
            agents=[Agent("assistant", instructions="Be brief.")],
            database_url=url,
            blob_dir=folder / "files",
            model="scripted",
        )
        self.app = create_app(config)
        self.cursors: dict[str, str] = {}

    async def start(self, stack: contextlib.AsyncExitStack) -> None:
        await stack.enter_async_context(self.app.router.lifespan_context(self.app))
        self.store: Store = self.app.state.store
        self.client = await stack.enter_async_context(
            httpx.AsyncClient(
                transport=httpx.ASGITransport(self.app), base_url="http://bench", headers=AUTH
            )
        )

    async def fill(self) -> float:
        """The ask of one real turn, then `size` conversations waiting on a copy of it."""
        from sqlalchemy import Connection, insert, select

        start = time.monotonic()
        prompt = "ask_choice " + json.dumps(PLAN_ASK)
        response = await self.client.post("/api/prompt", json={"prompt": prompt})
        assert response.status_code == 200, response.text
        real = (await self.store.histories.pending(USER))[0]
        template: dict[str, Any] = dict(
            await self.store.db.read(
                lambda c: c.execute(
                    select(histories.c.pending_ask).where(histories.c.id == real.id)
                ).scalar_one()
            )
        )
        await self.store.db.write(
            lambda c: c.execute(histories.delete().where(histories.c.id == real.id))
        )

        def insert_rows(connection: Connection, rows: list[dict[str, Any]]) -> None:
            connection.execute(insert(histories), rows)

        middle: tuple[dt.datetime, str] | None = None
        for first in range(0, self.size, FILL_BATCH):
            rows = fill_rows(template, first, min(first + FILL_BATCH, self.size))
            for row in rows:
                if row["created"] == BASE + dt.timedelta(milliseconds=self.size // 2):
                    middle = (row["created"], row["id"])
            await self.store.db.write(insert_rows, rows)
        assert middle is not None
        for name in ("pendingAsks", "histories"):
            at, history_id = middle
            self.cursors[name] = encode_cursor(name, USER, Position(at=at, id=history_id))
        return time.monotonic() - start

    async def get(self, path: str, params: dict[str, Any] | None = None) -> int:
        """One request; the body's size. The body is not parsed here: the client's own work
        would count as a stall of the server's loop (`verify` checks the bodies once)."""
        response = await self.client.get(path, params=params)
        assert response.status_code == 200, response.text
        return len(response.content)

    async def verify(self) -> None:
        """Each page holds what it should, and has a next page."""
        pending, listed = "/api/histories/pendingAsks", "/api/histories"
        for path, params, count in (
            (pending, {}, 50),
            (pending, {"cursor": self.cursors["pendingAsks"]}, 50),
            (pending, {"limit": 200}, 200),
            (listed, {}, 50),
            (listed, {"cursor": self.cursors["histories"]}, 50),
        ):
            response = await self.client.get(path, params=params)
            assert response.status_code == 200, response.text
            assert len(response.json()["data"]) == count, (path, params)
            assert response.links.get("next"), (path, params)

    async def unpaged(self) -> int:
        """What the route did before it had pages: read the whole list, turn it into JSON."""
        listed = await self.store.histories.pending(USER)
        assert len(listed) == self.size
        body = json.dumps(
            {"data": [pending_ask_summary(h) for h in listed], "requestId": "x"},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        return len(body)

    def cases(self, args: argparse.Namespace) -> list[Case]:
        pending, listed = "/api/histories/pendingAsks", "/api/histories"
        cases = [
            Case("pendingAsks, first page (50)", lambda: self.get(pending)),
            Case(
                "pendingAsks, middle page (50)",
                lambda: self.get(pending, {"cursor": self.cursors["pendingAsks"]}),
            ),
            Case("pendingAsks, first page (200)", lambda: self.get(pending, {"limit": 200})),
            Case("histories, first page (50)", lambda: self.get(listed)),
            Case(
                "histories, middle page (50)",
                lambda: self.get(listed, {"cursor": self.cursors["histories"]}),
            ),
        ]
        if self.size <= args.unpaged_max:
            cases.append(Case(UNPAGED, self.unpaged, rounds=args.unpaged_rounds))
        return cases


async def run_rounds(
    jobs: list[tuple[int, Case]], rounds: int, results: dict[tuple[str, int], Result]
) -> None:
    """`rounds` rounds of every job (fewer for a case with its own `Case.rounds`), the order
    rotating and reversing between rounds."""
    meter = StallMeter()
    for round_no in range(rounds):
        if not jobs:
            return
        shift = round_no % len(jobs)
        order = jobs[shift:] + jobs[:shift]
        if round_no % 2:
            order.reverse()
        for size, case in order:
            wanted = case.rounds if case.rounds is not None else rounds
            result = results.setdefault((case.name, size), Result())
            if len(result.times_ns) >= wanted:
                continue
            await asyncio.sleep(0.002)  # a gap: what the last request left behind settles
            with meter:
                start = perf_counter_ns()
                result.size = await case.run()
                result.times_ns.append(perf_counter_ns() - start)
            result.stalls_ns.append(meter.worst)


async def main_async(args: argparse.Namespace, folder: Path) -> int:
    print(
        machine_line(
            f"handrail {package_version('handrail')}, sqlalchemy {package_version('sqlalchemy')}, "
            f"fastapi {package_version('fastapi')}, httpx {package_version('httpx')}"
        )
    )
    print(
        "In process: one app per size under httpx.ASGITransport, each on its own SQLite file "
        f"(WAL, synchronous NORMAL); {args.rounds} rounds, every size and request interleaved; "
        "median per request, noise = half the interquartile range / median"
    )
    deadline = time.monotonic() + args.max_seconds
    async with contextlib.AsyncExitStack() as stack:
        targets: list[Target] = []
        for size in SIZES:
            if time.monotonic() > deadline:
                print(f"Not filling {size:,}: the time cap (--max-seconds) was hit.")
                break
            target = Target(size, folder / str(size))
            await target.start(stack)
            took = await target.fill()
            print(f"   filled {size:,} pending asks in {took:.1f} s", flush=True)
            targets.append(target)
        # The script's own objects stay out of the collector's way (see the module docstring).
        gc.collect()
        gc.freeze()
        all_jobs = [(target.size, case) for target in targets for case in target.cases(args)]
        for target in targets:
            await target.verify()
        for _, case in all_jobs:  # a warm-up call each
            await case.run()
        results: dict[tuple[str, int], Result] = {}
        # The pages first, then the unpaged work, whose garbage would otherwise land on the
        # requests after it.
        for jobs in (
            [job for job in all_jobs if job[1].name != UNPAGED],
            [job for job in all_jobs if job[1].name == UNPAGED],
        ):
            await run_rounds(jobs, args.rounds, results)
        names = [case.name for case in targets[0].cases(args)] if targets else []
        if UNPAGED not in names:
            names.append(UNPAGED)
        print_results(names, [t.size for t in targets], results)
    return 0


def print_results(
    names: list[str], sizes: list[int], results: dict[tuple[str, int], Result]
) -> None:
    headers = ["request", *(f"{size:,}" for size in sizes)]
    ratio_headers = [f"{size:,} / {sizes[0]:,}" for size in sizes[1:]]
    rows = []
    for name in names:
        cells = [name]
        medians: list[float | None] = []
        for size in sizes:
            result = results.get((name, size))
            medians.append(result.median if result else None)
            cells.append(
                f"{fmt_time(result.median)} ±{result.noise:.0%}" if result else "(not run)"
            )
        first = medians[0]
        for m in medians[1:]:
            cells.append(f"{m / first:.2f}×" if m is not None and first else "")
        rows.append(cells)
    print_table("Median time per request", headers + ratio_headers, rows)

    stall_rows = []
    for name in names:
        cells = [name]
        for size in sizes:
            result = results.get((name, size))
            cells.append(
                f"{fmt_time(statistics.median(result.stalls_ns))} / "
                f"{fmt_time(max(result.stalls_ns))}"
                if result
                else ""
            )
        stall_rows.append(cells)
    print_table(
        "Longest event-loop stall during the request (median / worst over the rounds)",
        headers,
        stall_rows,
    )

    size_rows = []
    for name in names:
        cells = [name]
        for size in sizes:
            result = results.get((name, size))
            cells.append(f"{result.size:,} B" if result else "")
        size_rows.append(cells)
    print_table("Body size", headers, size_rows)


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
