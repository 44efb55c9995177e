"""Reliability figures: the checks of ``tests/reliability/`` with large counts.

A script, not a test: it runs the same harnesses as the tests (``tests/reliability/fuzzing.py``,
``access.py``, ``racing.py``) with counts too large for ``make test`` and prints what they saw.
Everything runs on this machine: the app in process, the servers on 127.0.0.1, PostgreSQL a
throwaway cluster on a unix socket (``tests/_pg.py``; ``scripts/ensure-postgres.sh`` installs
the server when missing).

1. **Bad input**, on SQLite and PostgreSQL: ``--examples`` requests per database, spread over
   every operation of ``/openapi.json`` (schemathesis's cases, hostile values swapped in, raw
   bodies, hostile paths and queries, answers and scripted commands that reach the runtime),
   each checked for a 5xx, a traceback in the body or the log, an error that is not problem
   JSON, and a refused request (4xx) that stored anything. ``--seconds`` bounds each database's
   run.
2. **The authorization matrix** on each database: every route × nobody, five bad tokens, bob,
   the admin and the owner.
3. **Everything at once** on one conversation, on each database: ``--mixed`` rounds, each
   pausing a conversation and sending together two answers (the headless turn and
   ``POST /prompt``), the card's button, a message, a title change, a read and sometimes a
   delete; each ask must be settled exactly once (``tests/reliability/mixed_races.py``).
4. **Racing answers**: two ``handrail serve`` processes on one PostgreSQL database,
   ``--races`` paused asks (half plan asks, half approvals of a tool that writes a ledger line),
   two answers at once per ask, one to each process.

Run it with ``.venv/bin/python bench/reliability.py`` (about five minutes with the defaults;
``--examples 300 --races 50`` for a quick look). It exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT / "tests" / "server")]
sys.path.insert(2, str(ROOT / "tests"))

from access import check_route, route_calls  # noqa: E402
from fuzzing import Figures, Fuzzer, LogCapture, fuzz_operations, operations_of, seed  # noqa: E402
from mixed_races import MixedFigures, mixed_races  # noqa: E402
from racing import RaceFigures, race_answers  # noqa: E402
from reliability_helpers import probing_api  # noqa: E402
from server_helpers import sqlite_url, start_api  # noqa: E402

from _common import machine_line, package_version, print_table  # noqa: E402
from _pg import PostgresCluster, start_cluster  # noqa: E402
from handrail.demo.agent import demo_agent  # noqa: E402
from handrail.runtime.agent import Agent  # noqa: E402

FUZZ_COLUMNS = (
    *("database", "cases", "5xx", "tracebacks", "not problem JSON", "stored by a 4xx"),
    *("max latency", "time"),
)
MIXED_COLUMNS = (
    *("database", "rounds", "requests", "5xx", "answered", "cancelled by the message"),
    *("problems", "time"),
)
RACE_COLUMNS = ("asks", "200", "409", "won by one", "won by two", "problems", "max latency", "time")


def _statuses(counter: Counter[int]) -> str:
    return " ".join(f"{status}:{count}" for status, count in sorted(counter.items()))


async def fuzz(url: str, folder: Path, examples: int, seconds: float) -> tuple[Figures, float]:
    agents = [demo_agent(), Agent("quiet", asks=False)]
    async with probing_api(url, folder, agents) as api:
        document = (await api.client.get("/openapi.json")).json()
        per_operation = max(1, math.ceil(examples / len(operations_of(document))))
        seeded = await seed(api)
        started = time.monotonic()
        with LogCapture() as logs:
            fuzzer = Fuzzer(api, folder / "blobs", logs)
            try:
                await fuzz_operations(
                    fuzzer, document, seeded, per_operation, deadline=started + seconds
                )
            finally:
                await fuzzer.aclose()
        return fuzzer.figures, time.monotonic() - started


async def mixed(url: str, folder: Path, rounds: int) -> tuple[MixedFigures, float]:
    async with start_api(url, folder, agents=[demo_agent()], raise_app_exceptions=False) as api:
        started = time.monotonic()
        figures = await mixed_races(api, rounds)
        return figures, time.monotonic() - started


async def matrix(url: str, folder: Path) -> tuple[int, int, list[str], float]:
    async with probing_api(url, folder, [demo_agent()]) as api:
        document = (await api.client.get("/openapi.json")).json()
        started = time.monotonic()
        calls = route_calls(api.app, document)
        outcomes = [await check_route(api, call) for call in calls]
        problems = [f"{o.key}: {p}" for o in outcomes for p in o.problems]
        return len(calls), sum(o.calls for o in outcomes), problems, time.monotonic() - started


def _databases(
    names: list[str], folder: Path, cluster: PostgresCluster | None
) -> list[tuple[str, str, Path]]:
    """(name, URL, folder) of a new empty database of each name."""
    out = []
    for name in names:
        sub = folder / name
        sub.mkdir(parents=True)
        if name == "sqlite":
            url = sqlite_url(sub)
        else:
            assert cluster is not None
            url = cluster.new_database_url()
        out.append((name, url, sub))
    return out


async def main_async(args: argparse.Namespace, folder: Path) -> int:
    print(
        machine_line(
            f"handrail {package_version('handrail')}, schemathesis "
            f"{package_version('schemathesis')}, hypothesis {package_version('hypothesis')}"
        )
    )
    names = [n.strip() for n in args.databases.split(",") if n.strip()]
    cluster = start_cluster() if "postgresql" in names or args.races else None
    failures: list[str] = []
    try:
        rows = []
        for name, url, sub in _databases(names, folder / "fuzz", cluster):
            figures, took = await fuzz(url, sub, args.examples, args.seconds)
            failures += [f"fuzz {name}: {f}" for f in figures.failures]
            rows.append(
                [
                    name,
                    f"{figures.cases:,}",
                    str(sum(c for s, c in figures.by_status.items() if s >= 500)),
                    str(len(figures.tracebacks)),
                    str(len(figures.not_problems)),
                    str(len(figures.stored_by_refused)),
                    f"{figures.max_latency * 1000:.0f} ms",
                    f"{took:.0f} s",
                ]
            )
            print(f"{name} statuses: {_statuses(figures.by_status)}")
            print(f"{name} slowest: {figures.slowest[:160]}")
        print_table(
            "Bad input from /openapi.json (every operation, in process)",
            FUZZ_COLUMNS,
            rows,
        )

        rows = []
        for name, url, sub in _databases(names, folder / "matrix", cluster):
            routes, calls, problems, took = await matrix(url, sub)
            failures += [f"matrix {name}: {p}" for p in problems]
            rows.append([name, str(routes), f"{calls:,}", str(len(problems)), f"{took:.1f} s"])
        print_table(
            "The authorization matrix (every route × nobody, bad tokens, bob, admin, owner)",
            ["database", "routes", "calls", "problems", "time"],
            rows,
        )

        rows = []
        for name, url, sub in _databases(names, folder / "mixed", cluster):
            figures_m, took = await mixed(url, sub, args.mixed)
            failures += [f"mixed {name}: {p}" for p in figures_m.problems]
            fives = sum(
                count
                for key, count in figures_m.statuses.items()
                if int(key.rsplit(" ", 1)[1]) >= 500
            )
            rows.append(
                [
                    name,
                    str(figures_m.rounds),
                    f"{figures_m.requests:,}",
                    str(fives),
                    str(figures_m.settled["answered"]),
                    str(figures_m.settled["cancelled"]),
                    str(len(figures_m.problems)),
                    f"{took:.0f} s",
                ]
            )
        print_table(
            "Everything at once on one conversation (answers, button, message, title, delete)",
            MIXED_COLUMNS,
            rows,
        )

        if args.races and cluster is not None:
            race_folder = folder / "race"
            race_folder.mkdir()
            started = time.monotonic()
            race: RaceFigures = await race_answers(
                cluster.new_database_url(), race_folder, asks=args.races
            )
            took = time.monotonic() - started
            failures += [f"race: {p}" for p in race.problems]
            print_table(
                "Racing answers: two handrail serve processes, one PostgreSQL database",
                RACE_COLUMNS,
                [
                    [
                        f"{race.asks:,}",
                        str(race.statuses["200"]),
                        str(race.statuses["409"]),
                        str(race.won["one"]),
                        str(race.won["two"]),
                        str(len(race.problems)),
                        f"{race.max_latency * 1000:.0f} ms",
                        f"{took:.0f} s",
                    ]
                ],
            )
    finally:
        if cluster is not None:
            cluster.stop()
    for failure in failures[:20]:
        print("FAILED", failure)
    print(f"\n{len(failures)} failures")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add = parser.add_argument
    add("--examples", type=int, default=2000, help="requests per database (default 2000)")
    add("--seconds", type=float, default=300, help="at most this long per database (300)")
    add("--mixed", type=int, default=300, help="rounds of everything at once (default 300)")
    add("--races", type=int, default=500, help="asks to race, 0 to skip (default 500)")
    add(
        "--databases",
        default="sqlite,postgresql",
        help="the databases of the fuzz and the matrix (default sqlite,postgresql)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="handrail-reliability-") as folder:
        return asyncio.run(main_async(args, Path(folder)))


if __name__ == "__main__":
    sys.exit(main())
