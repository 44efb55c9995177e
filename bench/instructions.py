"""Benchmark: instructions per ask-and-answer cycle under callgrind, this tree against another.

A script, not a test. Thread CPU time moves by ±10 % between runs on a shared 2-core machine,
more than most single steps change it; the number of instructions a cycle runs does not (repeat
runs agree within about 1 %). For each tree (this checkout, and `--before` another checkout's
root or `src/`), a child process runs `--warmup` cycles, then `--cycles` cycles, under
``valgrind --tool=callgrind``, which writes a profile part at each ``os.getppid()`` the child
calls around the measured cycles (``--dump-before=getppid``), so start-up and warm-up are left
out of the event loop thread's count; every thread's count is the difference between that run
and a second one without the measured cycles (callgrind writes the other threads' counts only
at exit). It prints the instructions per cycle of the event loop's thread and of every thread,
and the ratios after / before.

The cycle (`--mode`):

- ``inproc``: `bench/turn_cycle.py`'s in-process cycle (`Runtime.start_prompt`, the turn's
  events to ``done``, `Runtime.start_answer`, its events), on SQLite with ``synchronous=OFF``
  (the disk's fsync is not an instruction count);
- ``asgi``: the HTTP cycle's three requests (`POST /api/histories`, the headless turn with
  ``{prompt}`` and with ``{askResponse}``) sent straight to the ASGI app on uvloop, without
  uvicorn or a socket.

    .venv/bin/python bench/instructions.py --before /work/base --mode inproc

It needs valgrind (``apt-get install valgrind``); with the defaults a tree takes about five
minutes (callgrind runs the interpreter about fifty times slower).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import before_src  # noqa: E402

# --- the child: the cycles, with a getppid() on each side of the measured ones ----------------


async def _asgi_app(folder: Path, url: str | None = None) -> Any:
    import turn_cycle as tc
    from handrail.runtime import Runtime
    from handrail.runtime.models import ScriptedModel
    from handrail.server import ServerConfig, UserConfig, create_app
    from handrail.store import Store

    url = url or f"sqlite:///{folder / 'i.db'}"
    store = await Store.open(url, blob_dir=folder / "files", synchronous="OFF")
    runtime = Runtime(store=store, agents=tc.agent(), model=ScriptedModel())
    config = ServerConfig(
        users=[UserConfig(id=tc.USER, token=tc.TOKEN)],
        agents=[tc.agent()],
        database_url=url,
        model="scripted",
    )
    return create_app(config, runtime=runtime, store=store)


async def _request(app: Any, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    import turn_cycle as tc

    raw = json.dumps(body).encode()
    headers = [
        (b"host", b"127.0.0.1"),
        (b"authorization", f"Bearer {tc.TOKEN}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw)).encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
        "state": {},
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Future()  # the client never goes away
        raise AssertionError

    out: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    await app(scope, receive, send)
    return out[0]["status"], json.loads(b"".join(m.get("body", b"") for m in out[1:]))


async def _asgi_cycles(app: Any, count: int) -> None:
    import turn_cycle as tc

    for _ in range(count):
        status, body = await _request(app, "/api/histories", {})
        assert status == 201, body
        path = f"/api/histories/{body['data']['id']}/turn"
        status, body = await _request(app, path, {"prompt": tc.PROMPT})
        assert status == 200, body
        call_id = body["data"]["pendingAsk"]["toolCallId"]
        answer = {"askResponse": {"toolCallId": call_id, **tc.ANSWER}}
        status, body = await _request(app, path, answer)
        assert status == 200, body


def child(mode: str, warmup: int, cycles: int, url: str | None = None) -> None:
    import turn_cycle as tc

    folder = Path(tempfile.mkdtemp(prefix="handrail-instructions-"))
    if mode == "asgi":
        import uvloop

        loop = uvloop.new_event_loop()
        asyncio.set_event_loop(loop)
        app = loop.run_until_complete(_asgi_app(folder, url))
        lifespan = app.router.lifespan_context(app)
        loop.run_until_complete(lifespan.__aenter__())
        loop.run_until_complete(_asgi_cycles(app, warmup))
        os.getppid()  # callgrind: the measured part starts
        loop.run_until_complete(_asgi_cycles(app, cycles))
        os.getppid()  # and ends
    else:
        from handrail.runtime import Runtime
        from handrail.runtime.models import ScriptedModel
        from handrail.store import Store

        inproc = tc.InProcess.__new__(tc.InProcess)
        inproc.loop = asyncio.new_event_loop()
        inproc.store = inproc.loop.run_until_complete(
            Store.open(f"sqlite:///{folder / 'i.db'}", blob_dir=folder / "files", synchronous="OFF")
        )
        inproc.runtime = Runtime(store=inproc.store, agents=tc.agent(), model=ScriptedModel())
        inproc.run(warmup)
        os.getppid()
        inproc.run(cycles)
        os.getppid()
    os._exit(0)  # no teardown: nothing after the measured part counts


# --- the parent: one callgrind run per tree -----------------------------------------------------


def _callgrind(
    src: Path, mode: str, warmup: int, cycles: int, cluster: Any = None
) -> dict[str, int]:
    """One child run under callgrind: the instructions of each file it wrote, by file name
    (``cg.PID.PART-01``: the event loop's thread, part by part; ``cg.PID-NN``: another thread,
    its whole life). With `cluster`, on a new database of that PostgreSQL cluster."""
    with tempfile.TemporaryDirectory(prefix="handrail-callgrind-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(src)}
        if cluster is not None:
            env["HANDRAIL_INSTRUCTIONS_URL"] = cluster.new_database_url()
        command = [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            "--dump-before=getppid",
            f"--callgrind-out-file={tmp}/cg.%p",
            sys.executable,
            __file__,
            "--child",
            mode,
            str(warmup),
            str(cycles),
        ]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the callgrind run of {src} failed:\n{done.stderr[-2000:]}")
        return {part.name.split(".", 2)[-1]: _summary(part) for part in Path(tmp).glob("cg.*")}


def measure(
    src: Path, mode: str, warmup: int, cycles: int, cluster: Any = None, *, loop_only: bool = False
) -> tuple[float, float | None]:
    """Instructions per cycle of the event loop's thread and of every thread, for `src`: the
    loop's from the measured part of a run; every thread's as the difference between that run
    and one without the measured cycles (the other threads' counts are written only at exit).
    With `loop_only`, the loop's alone, from the one run (every thread's is None)."""
    full = _callgrind(src, mode, warmup, cycles, cluster)
    measured = [count for name, count in full.items() if name.startswith("2-")]
    if not measured:
        raise SystemExit(f"callgrind wrote no measured part for {src}: {sorted(full)}")
    if loop_only:
        return measured[0] / cycles, None
    base = _callgrind(src, mode, warmup, 0, cluster)
    return measured[0] / cycles, (sum(full.values()) - sum(base.values())) / cycles


def _summary(part: Path) -> int:
    for line in part.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout (its root or its src/)")
    parser.add_argument("--mode", choices=("inproc", "asgi"), default="inproc")
    parser.add_argument("--warmup", type=int, default=100, help="cycles before the measured ones")
    parser.add_argument("--cycles", type=int, default=200, help="measured cycles (1-10000)")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="asgi mode on PostgreSQL (a throwaway cluster, fsync off): the server's side only",
    )
    parser.add_argument(
        "--loop-only",
        action="store_true",
        help="the event loop thread's count only: one callgrind run a tree, not two",
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        url = os.environ.get("HANDRAIL_INSTRUCTIONS_URL")
        child(args.child[0], int(args.child[1]), int(args.child[2]), url)
    if args.postgres and args.mode != "asgi":
        parser.error("--postgres runs the asgi mode: add --mode asgi")
    if not 1 <= args.cycles <= 10_000 or not 0 <= args.warmup <= 10_000:
        parser.error("--cycles takes 1-10000 and --warmup 0-10000")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    trees = [("after", ROOT / "src")]
    if args.before is not None:
        trees.append(("before", before_src(args.before)))
    print(
        f"instructions per {args.mode} cycle{' on PostgreSQL' if args.postgres else ''} under "
        f"callgrind ({args.cycles} cycles after {args.warmup}), thousands"
    )
    cluster = None
    if args.postgres:
        sys.path.insert(0, str(ROOT / "tests"))
        from _pg import start_cluster

        cluster = start_cluster()
    results: dict[str, tuple[float, float | None]] = {}
    try:
        for name, src in trees:
            results[name] = measure(
                src, args.mode, args.warmup, args.cycles, cluster, loop_only=args.loop_only
            )
    finally:
        if cluster is not None:
            cluster.stop()
    for name, src in trees:
        loop_ir, all_ir = results[name]
        every = "" if all_ir is None else f", every thread {all_ir / 1000:,.0f} k"
        print(f"  {name:6} {src}: event loop thread {loop_ir / 1000:,.0f} k{every}")
    if "before" in results:
        (a_loop, a_all), (b_loop, b_all) = results["after"], results["before"]
        every = "" if a_all is None or b_all is None else f", every thread {a_all / b_all:.3f}"
        print(f"  after / before: event loop thread {a_loop / b_loop:.3f}{every}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
