"""Benchmark: process CPU per ASGI cycle, this tree against another, with PostgreSQL's own.

A script, not a test: it prints what it measured and asserts nothing about time. For steps that
`bench/instructions.py` cannot count: under callgrind a cycle runs about fifty times slower, so
whatever waits on a timer (the event sender's gather, the running-turns writer's alarm) happens
otherwise than at full speed. Here each tree runs at full speed, in turns:

- a child process per tree and round (rounds interleaved, the order reversed every other
  round) runs `bench/instructions.py`'s ASGI cycle (``POST /api/histories``, the headless turn
  with ``{prompt}``, then with ``{askResponse}``, straight to the app on uvloop, no socket):
  ``--warmup`` cycles, then ``--cycles`` measured ones;
- it reads the child's own CPU (``time.process_time``: every thread, user and system) and its
  event loop thread's (``time.thread_time``) over the measured cycles, and with ``--postgres``
  the CPU of the throwaway cluster's processes (`bench/load.py`'s ``children_cpu_s`` of the
  postmaster) over the same cycles;
- it prints each run and the medians, and after / before.

    .venv/bin/python bench/asgi_cpu.py --postgres --before /work/base --rounds 6

One cycle at a time by default, so it is the one-client case; ``--tasks N`` runs N cycles at
once (each task its own conversations): what a cycle costs alone against N at once is what N
concurrent cycles share (each write's hop to the SQLite writer and back, each transaction and
its commit: see bench/README's "what one client's cycle pays for"). The machine's noise is
about ±10 % a run here, so take the median of several rounds, and a change smaller than that
is better counted with callgrind where it can be.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import before_src, machine_line, package_version  # noqa: E402


def child(url: str | None, warmup: int, cycles: int, tasks: int) -> None:
    """Run the cycles, `tasks` at once; print "ready" before the measured ones (the parent
    reads the cluster's CPU then, and answers with a line) and the process's and the event loop
    thread's CPU ms a cycle after them."""
    import uvloop

    from instructions import _asgi_app, _asgi_cycles

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    folder = Path(tempfile.mkdtemp(prefix="handrail-asgi-cpu-"))
    app = loop.run_until_complete(_asgi_app(folder, url))
    loop.run_until_complete(app.router.lifespan_context(app).__aenter__())

    async def at_once(count: int) -> None:
        await asyncio.gather(*(_asgi_cycles(app, count // tasks) for _ in range(tasks)))

    loop.run_until_complete(at_once(warmup))
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    sys.stdin.readline()
    started, started_loop = time.process_time(), time.thread_time()
    loop.run_until_complete(at_once(cycles))
    process, on_loop = time.process_time() - started, time.thread_time() - started_loop
    print(f"{process * 1000 / cycles} {on_loop * 1000 / cycles}", flush=True)
    sys.stdin.readline()
    os._exit(0)  # no teardown: the parent has its figures


def run(
    src: Path, url: str | None, warmup: int, cycles: int, tasks: int, postmaster: int | None
) -> tuple[float, float, float | None]:
    """One child on `src`: its CPU ms a cycle, its event loop thread's, and the cluster's (None
    on SQLite)."""
    from load import children_cpu_s

    env = {**os.environ, "PYTHONPATH": str(src), "HANDRAIL_ASGI_CPU_URL": url or ""}
    command = [sys.executable, __file__, "--child", str(warmup), str(cycles), str(tasks)]
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the child on {src} did not start (exit {process.wait()})")
    before = children_cpu_s(postmaster) if postmaster is not None else 0.0
    process.stdin.write("\n")
    process.stdin.flush()
    line = process.stdout.readline()
    after = children_cpu_s(postmaster) if postmaster is not None else 0.0
    process.stdin.write("\n")
    process.stdin.flush()
    process.wait()
    if not line.strip():
        raise SystemExit(f"the child on {src} failed (exit {process.returncode})")
    cluster = (after - before) * 1000 / cycles if postmaster is not None else None
    process, on_loop = map(float, line.split())
    return process, on_loop, cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout (its root or its src/)")
    parser.add_argument("--postgres", action="store_true", help="on a throwaway cluster")
    parser.add_argument("--rounds", type=int, default=6, help="runs of each tree (6)")
    parser.add_argument("--warmup", type=int, default=200, help="cycles before the measured")
    parser.add_argument("--cycles", type=int, default=800, help="measured cycles a run (800)")
    parser.add_argument("--tasks", type=int, default=1, help="cycles at once (1)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(os.environ.get("HANDRAIL_ASGI_CPU_URL") or None, *map(int, args.child))
    if not 1 <= args.rounds <= 50 or not 1 <= args.cycles <= 20_000:
        parser.error("--rounds takes 1-50 and --cycles 1-20000")
    if not 1 <= args.tasks <= 64:
        parser.error("--tasks takes 1-64")
    # Whole cycles for every task.
    args.cycles = max(args.cycles - args.cycles % args.tasks, args.tasks)
    args.warmup = max(args.warmup - args.warmup % args.tasks, args.tasks)
    trees = [("after", ROOT / "src")]
    if args.before is not None:
        trees.append(("before", before_src(args.before)))
    print(f"handrail bench: process CPU per ASGI cycle{' on PostgreSQL' if args.postgres else ''}")
    print(machine_line(f"asyncpg {package_version('asyncpg')}, uvloop {package_version('uvloop')}"))
    at_once = "one at a time" if args.tasks == 1 else f"{args.tasks} at once"
    print(f"{args.rounds} rounds, {args.cycles} cycles a run after {args.warmup}, {at_once}")
    cluster = None
    postmaster = None
    if args.postgres:
        sys.path.insert(0, str(ROOT / "tests"))
        from _pg import start_cluster
        from load import postmaster_pid

        cluster = start_cluster()
        postmaster = postmaster_pid(cluster)
    figures: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name, _ in trees}
    try:
        for round_ in range(args.rounds):
            for name, src in trees if round_ % 2 == 0 else trees[::-1]:
                url = None
                if cluster is not None:
                    url = cluster.new_database_url()
                else:
                    url = f"sqlite:///{tempfile.mkdtemp(prefix='handrail-asgi-cpu-')}/a.db"
                figures[name].append(
                    run(src, url, args.warmup, args.cycles, args.tasks, postmaster)
                )
    finally:
        if cluster is not None:
            cluster.stop()
    medians: dict[str, tuple[float, float, float | None]] = {}
    for name, src in trees:
        own = [f[0] for f in figures[name]]
        loop = [f[1] for f in figures[name]]
        theirs = [f[2] for f in figures[name] if f[2] is not None]
        medians[name] = (
            statistics.median(own),
            statistics.median(loop),
            statistics.median(theirs) if theirs else None,
        )
        runs = ", ".join(f"{x:.3f}" for x in own)
        line = f"  {name:6} {src}: process {medians[name][0]:.3f} ms a cycle ({runs})"
        line += f"; its event loop thread {medians[name][1]:.3f} ms"
        if theirs:
            line += (
                f"; PostgreSQL {medians[name][2]:.3f} ms ({', '.join(f'{x:.3f}' for x in theirs)})"
            )
        print(line)
    if "before" in medians:
        (a_own, a_loop, a_pg), (b_own, b_loop, b_pg) = medians["after"], medians["before"]
        line = f"  after / before: process {a_own / b_own:.3f}, event loop {a_loop / b_loop:.3f}"
        if a_pg is not None and b_pg:
            line += f", PostgreSQL {a_pg / b_pg:.3f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
