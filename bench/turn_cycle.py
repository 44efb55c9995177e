"""Benchmark: one ask-and-answer cycle, in process and over HTTP, against LangGraph.

A script, not a test: it prints figures and ratios measured in one run and asserts nothing about
time. Run it with ``make bench`` (installs the ``bench`` extra: LangGraph and its SQLite saver)
or ``.venv/bin/python bench/turn_cycle.py``.

One cycle: a prompt, the scripted model calls ``ask_choice`` (the spec's "Choose a plan" ask),
the turn pauses and the pause is saved, the person answers, the turn resumes and the model
replies ``ask_choice returned: ...``. Every contender is durable on a SQLite file in WAL mode
with ``PRAGMA synchronous=FULL``, and every cycle starts a new conversation:

- **handrail, in process**: ``Runtime.start_prompt`` on a new history, read the turn's events
  to ``done`` (the ask is saved in the history's ``pendingAsk``), ``Runtime.start_answer``,
  read the events to ``done``.
- **handrail, HTTP**: a uvicorn server on 127.0.0.1 (a random free port) in a subprocess
  started and stopped by this script; a keep-alive ``http.client`` connection sends
  ``POST /api/histories`` (the headless ``turn`` route needs an existing history), then
  ``POST /api/histories/{id}/turn`` with ``{prompt}``, then with ``{askResponse}``; each turn
  answers with its JSON result once the turn has finished and been saved.
- **LangGraph**: a one-node graph on ``SqliteSaver`` whose node calls
  ``interrupt({"question": ...})`` and returns a reply; ``invoke`` on a new ``thread_id``
  (returns ``__interrupt__``), then ``invoke(Command(resume=answer))``.

Then it shows where an in-process cycle's time goes: every store call timed, the SQL statements,
transactions (on the event loop's own connection, or each one hop to a store thread) and writes
of one cycle, and unit costs probed on the machine (``--profile N`` adds a cProfile listing of N
cycles).

Last, it measures the memory of a fresh server holding many paused conversations: it pauses
histories through the HTTP API (1,000, then up to 10,000), and at each mark reads the server
process's resident size (``VmRSS``, ``VmHWM`` from ``/proc``) and its Python heap
(``tracemalloc``, current and the peak since the last mark) through a bench-only route.

Fairness: the three cycle contenders run interleaved in rounds (each round times a batch of
cycles of each, the order rotating and reversing between rounds); the reported time is the
median over the rounds. The garbage collector stays on: the server's cannot be paused, and a
cycle allocates enough that collecting is part of its cost.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import http.client
import io
import json
import os
import pstats
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter_ns
from typing import Any, TypedDict

from _common import PLAN_ASK, machine_line, package_version, print_table
from _common import fmt_time as common_fmt_time
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store

PROMPT = "ask_choice " + json.dumps(PLAN_ASK)
ANSWER: dict[str, Any] = {"action": "accept", "content": {"selected": ["team"]}}
REPLY = "ask_choice returned: " + json.dumps(ANSWER, separators=(",", ":"))

USER = "alice"
TOKEN = "bench-" + uuid.uuid4().hex
PRINCIPAL = Principal(user_id=USER)
INSTRUCTIONS = "Be brief."
SERVER_START_S = 60.0


def agent() -> Agent:
    return Agent("assistant", instructions=INSTRUCTIONS)


# --- the server (this script with --serve, in a subprocess) -------------------------------------


def serve(db_path: Path, *, trace: bool, max_seconds: float) -> None:
    """Run handrail's app under uvicorn on 127.0.0.1, a free port, printed as a JSON line on
    stdout. Stops on SIGTERM, when the parent goes away, or after `max_seconds`."""
    if trace:
        import tracemalloc

        tracemalloc.start(1)
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from sqlalchemy import text
    from uvicorn.loops.auto import auto_loop_factory

    from handrail.server import ServerConfig, UserConfig, create_app
    from handrail.server.serving import Server
    from handrail.store.db import first_row

    async def main() -> None:
        store = await Store.open(
            f"sqlite:///{db_path}", blob_dir=db_path.with_suffix(".files"), synchronous="FULL"
        )
        runtime = Runtime(store=store, agents=agent(), model=ScriptedModel())
        config = ServerConfig(
            users=[UserConfig(id=USER, token=os.environ["BENCH_TOKEN"])],
            agents=[agent()],
            database_url=f"sqlite:///{db_path}",
            model="scripted",
        )
        app: FastAPI = create_app(config, runtime=runtime, store=store)

        async def memory(reset: int = 0) -> JSONResponse:
            """Bench only: the process's memory after a full collection."""
            gc.collect()
            out: dict[str, Any] = proc_memory(os.getpid())
            out["tasks"] = runtime.running_turns  # 0 when every turn is paused
            if trace:
                import tracemalloc

                out["traced"], out["traced_peak"] = tracemalloc.get_traced_memory()
                if reset:
                    tracemalloc.reset_peak()
            row = await store.db.read(first_row, text("PRAGMA synchronous"))
            out["synchronous"] = row[0] if row else None
            out["loop"] = type(asyncio.get_running_loop()).__module__.split(".")[0]
            out["http"] = server.config.http_protocol_class.__name__
            return JSONResponse(out)

        app.add_api_route("/_bench/memory", memory, methods=["GET"], include_in_schema=False)

        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP;
        # without it, Nagle and delayed ACKs add about 40 ms to every response but the first.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        # `handrail serve`'s server class (the start-up's heap frozen for the collector).
        server = Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        parent = os.getppid()

        async def watchdog() -> None:
            deadline = time.monotonic() + max_seconds
            while not server.should_exit:
                if os.getppid() != parent or time.monotonic() > deadline:
                    server.should_exit = True
                await asyncio.sleep(0.5)

        print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
        guard = asyncio.create_task(watchdog())
        try:
            await server.serve(sockets=[sock])
        finally:
            guard.cancel()
            await store.close()

    # The event loop `handrail serve` gets: uvicorn's "auto" (uvloop when it is installed).
    with asyncio.Runner(loop_factory=auto_loop_factory(use_subprocess=False)) as runner:
        runner.run(main())


def proc_memory(pid: int) -> dict[str, int]:
    """Resident size now and at its peak, in bytes, from /proc (Linux)."""
    out = {"rss": 0, "hwm": 0}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out["rss" if key == "VmRSS" else "hwm"] = int(value.split()[0]) * 1024
    return out


class ServerProcess:
    """This script's --serve mode in a subprocess, and a keep-alive client to it."""

    def __init__(self, db_path: Path, *, trace: bool, max_seconds: float) -> None:
        command = [sys.executable, __file__, "--serve", str(db_path)]
        command += ["--max-seconds", str(max_seconds)]
        if trace:
            command.append("--trace")
        env = {**os.environ, "BENCH_TOKEN": TOKEN}
        self.db_path = db_path
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server did not start (exit code {self.process.wait()})")
        self.port: int = json.loads(line)["port"]
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                self.info = self.memory()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.05)

    def client(self) -> Client:
        return Client(self.port)

    def memory(self, *, reset: bool = False) -> dict[str, Any]:
        client = self.client()
        try:
            return dict(client.get(f"/_bench/memory?reset={int(reset)}"))
        finally:
            client.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Client:
    """A keep-alive HTTP/1.1 client on 127.0.0.1 with the bench user's bearer token."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.connection.connect()
        assert self.connection.sock is not None
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        self.connection.request(method, path, body=data, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())

    def get(self, path: str) -> Any:
        status, data = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {data}")
        return data

    def close(self) -> None:
        self.connection.close()


# --- the contenders -----------------------------------------------------------------------------

#: One cycle's phases, in nanoseconds.
Phases = tuple[int, ...]


class InProcess:
    """handrail's runtime in this process, on its own SQLite file."""

    name = "handrail, in process"
    phases = ("prompt → paused", "answer → reply")

    def __init__(self, db_path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.store = self.loop.run_until_complete(
            Store.open(
                f"sqlite:///{db_path}", blob_dir=db_path.with_suffix(".files"), synchronous="FULL"
            )
        )
        self.runtime = Runtime(store=self.store, agents=agent(), model=ScriptedModel())

    def synchronous(self) -> int:
        from sqlalchemy import text

        from handrail.store.db import first_row

        row = self.loop.run_until_complete(
            self.store.db.read(first_row, text("PRAGMA synchronous"))
        )
        assert row is not None
        return int(row[0])

    async def _cycle(self) -> tuple[Phases, str]:
        start = perf_counter_ns()
        turn = await self.runtime.start_prompt(PRINCIPAL, PROMPT)
        events = [event async for event in turn.stream()]
        paused = perf_counter_ns()
        ask = events[0]["ask"]
        answer = {"toolCallId": ask["toolCallId"], **ANSWER}
        turn = await self.runtime.start_answer(PRINCIPAL, events[0]["historyId"], answer)
        events = [event async for event in turn.stream()]
        end = perf_counter_ns()
        text = "".join(event["text"] for event in events if "text" in event)
        return (paused - start, end - paused), text

    async def _cycles(self, count: int) -> list[Phases]:
        return [(await self._cycle())[0] for _ in range(count)]

    def run(self, count: int) -> list[Phases]:
        return self.loop.run_until_complete(self._cycles(count))

    def check(self) -> str:
        return self.loop.run_until_complete(self._cycle())[1]

    def close(self) -> None:
        self.loop.run_until_complete(self.runtime.aclose())
        self.loop.run_until_complete(self.store.close())
        self.loop.close()


class OverHttp:
    """handrail's headless ``turn`` route on a uvicorn server in a subprocess."""

    name = "handrail, HTTP"
    phases = ("create history", "prompt turn", "answer turn")

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.http = server.client()

    def _cycle(self) -> tuple[Phases, str]:
        start = perf_counter_ns()
        status, body = self.http.request("POST", "/api/histories", {})
        if status != 201:
            raise RuntimeError(f"create: {status} {body}")
        history_id = body["data"]["id"]
        created = perf_counter_ns()
        path = f"/api/histories/{history_id}/turn"
        status, body = self.http.request("POST", path, {"prompt": PROMPT})
        if status != 200 or "pendingAsk" not in body["data"]:
            raise RuntimeError(f"prompt turn: {status} {body}")
        call_id = body["data"]["pendingAsk"]["toolCallId"]
        paused = perf_counter_ns()
        answer = {"askResponse": {"toolCallId": call_id, **ANSWER}}
        status, body = self.http.request("POST", path, answer)
        end = perf_counter_ns()
        if status != 200:
            raise RuntimeError(f"answer turn: {status} {body}")
        return (created - start, paused - created, end - paused), body["data"]["text"]

    def run(self, count: int) -> list[Phases]:
        return [self._cycle()[0] for _ in range(count)]

    def check(self) -> str:
        return self._cycle()[1]

    def close(self) -> None:
        self.http.close()


class PlanState(TypedDict, total=False):
    prompt: str
    reply: str


def ask_node(state: PlanState) -> PlanState:
    from langgraph.types import interrupt

    answer = interrupt({"question": PLAN_ASK["prompt"], "ask": PLAN_ASK})
    return {"reply": "ask_choice returned: " + json.dumps(answer, separators=(",", ":"))}


class LangGraphCycle:
    """LangGraph's ``interrupt()`` / ``Command(resume=...)`` on ``SqliteSaver``."""

    name = "LangGraph SqliteSaver"
    phases = ("invoke → interrupt", "resume → reply")

    def __init__(self, db_path: Path) -> None:
        # Imported here, so that the server subprocess does not load LangGraph.
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command

        self.command = Command
        # The saver's setup() turns WAL on; synchronous is set here, on its one connection.
        self.connection = sqlite3.connect(db_path, check_same_thread=False)
        self.connection.execute("PRAGMA synchronous=FULL")
        saver = SqliteSaver(self.connection)
        saver.setup()
        graph = StateGraph(PlanState)
        graph.add_node("ask", ask_node)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        self.graph = graph.compile(checkpointer=saver)

    def synchronous(self) -> tuple[int, str]:
        return (
            self.connection.execute("PRAGMA synchronous").fetchone()[0],
            self.connection.execute("PRAGMA journal_mode").fetchone()[0],
        )

    def _cycle(self) -> tuple[Phases, str]:
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        start = perf_counter_ns()
        paused_state = self.graph.invoke({"prompt": PROMPT}, config)
        paused = perf_counter_ns()
        if "__interrupt__" not in paused_state:
            raise RuntimeError(f"no interrupt: {paused_state}")
        final = self.graph.invoke(self.command(resume=ANSWER), config)
        end = perf_counter_ns()
        return (paused - start, end - paused), str(final.get("reply"))

    def run(self, count: int) -> list[Phases]:
        return [self._cycle()[0] for _ in range(count)]

    def check(self) -> str:
        return self._cycle()[1]

    def close(self) -> None:
        self.connection.close()


# --- timing -------------------------------------------------------------------------------------


@dataclass
class Contender:
    impl: Any
    calls: int = 1
    samples: list[float] = field(default_factory=list)
    phase_samples: list[Phases] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.impl.name)

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median, a rough noise figure."""
        if len(self.samples) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return (q3 - q1) / self.median_ns

    def batch(self) -> None:
        start = perf_counter_ns()
        phases = self.impl.run(self.calls)
        self.samples.append((perf_counter_ns() - start) / self.calls)
        self.phase_samples.extend(phases)

    def phase_medians(self) -> list[float]:
        return [
            statistics.median(p[i] for p in self.phase_samples)
            for i in range(len(self.impl.phases))
        ]


def calibrate(contender: Contender, batch_ns: float, max_calls: int) -> None:
    """Warm up, then size the batch so that it lasts about `batch_ns`."""
    contender.impl.run(5)
    start = perf_counter_ns()
    contender.impl.run(5)
    per_cycle = (perf_counter_ns() - start) / 5
    contender.calls = max(1, min(max_calls, round(batch_ns / per_cycle)))


def run_rounds(contenders: Sequence[Contender], rounds: int, budget_s: float) -> int:
    """Time every contender in up to `rounds` rounds, interleaved: each round runs one batch of
    each, in an order that rotates every round and reverses every other round. Stops early
    (after at least 3 rounds) when `budget_s` is spent; returns the rounds run."""
    count = len(contenders)
    deadline = time.monotonic() + budget_s
    done = 0
    for index in range(rounds):
        order = [contenders[(index + offset) % count] for offset in range(count)]
        if index % 2:
            order.reverse()
        for contender in order:
            contender.batch()
        done += 1
        if done >= 3 and time.monotonic() > deadline:
            break
    return done


# --- where an in-process cycle's time goes ------------------------------------------------------

STORE_CALLS = (
    ("", ("load_turn",)),
    ("histories", ("create", "get", "rows", "load", "apply")),
    ("requests", ("add",)),
)


def store_call_times(inproc: InProcess, cycles: int) -> tuple[float, dict[str, list[int]]]:
    """Run `cycles` in-process cycles with every store call timed (wall clock, awaits
    included). Returns the mean cycle time and, per call, ``[calls, total ns]``."""
    times: dict[str, list[int]] = {}

    def timed(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = perf_counter_ns()
            try:
                return await original(*args, **kwargs)
            finally:
                entry = times.setdefault(label, [0, 0])
                entry[0] += 1
                entry[1] += perf_counter_ns() - start

        setattr(owner, name, wrapper)  # on the instance: the class is left alone

    owners = [
        (getattr(inproc.store, attr) if attr else inproc.store, names, attr)
        for attr, names in STORE_CALLS
    ]
    for owner, names, attr in owners:
        for name in names:
            timed(owner, name, f"{attr}.{name}" if attr else f"store.{name}")
    try:
        start = perf_counter_ns()
        inproc.run(cycles)
        elapsed = perf_counter_ns() - start
    finally:
        for owner, names, _ in owners:
            for name in names:
                delattr(owner, name)
    return elapsed / cycles, times


def count_sql(folder: Path, lg: LangGraphCycle) -> dict[str, int]:
    """SQL statements, transactions (on the event loop's own connection, or each one hop to a
    store thread) and write transactions of one cycle of each, as SQLite itself runs them
    (``sqlite3``'s trace callback on every connection: handrail's store runs some statements
    on the driver's cursor directly), and the writes whose commit waits for the disk (by the
    ``synchronous`` level of the connection each commits on)."""
    from sqlalchemy import Engine, event

    statements: list[str] = []
    # (connection, statement): a commit waits for the disk at its own connection's level.
    traced: list[tuple[int, str]] = []

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        key = id(dbapi_connection)
        dbapi_connection.set_trace_callback(lambda statement: traced.append((key, statement)))

    event.listen(Engine, "connect", on_connect)  # every engine made from now on
    counter = InProcess(folder / "count.db")
    try:
        counter.check()  # the first cycle opens the connections
        first = len(traced)
        counter.check()
    finally:
        counter.close()
        event.remove(Engine, "connect", on_connect)
    ours = [s.lstrip().upper() for _, s in traced[first:]]
    # A write whose commit does not wait for the disk (the store's `unsynced`) runs on a
    # connection at ``synchronous=NORMAL``: the writer's, set so before its BEGIN and back
    # after its commit, or the event loop's own, set so when it opened.
    # The event loop's own connection is the one set to wait for no lock.
    levels: dict[int, str] = {}
    on_loop: set[int] = set()
    synced = here = 0
    for index, (key, statement) in enumerate(traced):
        statement = statement.lstrip().upper()
        if statement.startswith("PRAGMA SYNCHRONOUS="):
            levels[key] = statement.rpartition("=")[2].strip()
        elif statement.replace(" ", "") == "PRAGMABUSY_TIMEOUT=0":
            on_loop.add(key)
        elif index >= first and statement.startswith("BEGIN"):
            here += key in on_loop
            if statement.startswith("BEGIN IMMEDIATE"):
                synced += levels.get(key, "FULL") in ("FULL", "EXTRA")
    counts = {
        "statements": sum(
            not s.startswith(("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")) for s in ours
        ),
        "transactions": sum(s.startswith("BEGIN") for s in ours),
        "here": here,
        "writes": sum(s.startswith("BEGIN IMMEDIATE") for s in ours),
        "synced": synced,
    }

    statements.clear()
    lg.connection.set_trace_callback(statements.append)
    try:
        lg.check()
    finally:
        lg.connection.set_trace_callback(None)
    theirs = [s.lstrip().upper() for s in statements]
    counts["lg_statements"] = sum(not s.startswith(("BEGIN", "COMMIT", "ROLLBACK")) for s in theirs)
    counts["lg_commits"] = sum(s.startswith("COMMIT") for s in theirs)
    return counts


def _nothing(_connection: Any) -> None:
    return None


def probe_units(inproc: InProcess, folder: Path, count: int = 300) -> dict[str, float]:
    """Median unit costs on this machine: a bare hop to a worker thread and back, an empty read
    transaction through the store (`Database.read`: the hop, BEGIN and COMMIT), and a small write
    transaction on plain sqlite3 (WAL) with ``synchronous`` FULL and OFF (the difference is the
    fsync). The write is timed once the WAL is reused from its start after a checkpoint, as in
    the cycles' long runs: while the WAL file still grows, each fsync also waits for the file's
    new size (about twice the time here)."""
    from concurrent.futures import ThreadPoolExecutor

    async def probe() -> tuple[float, float]:
        hops, reads = [], []
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(1) as executor:
            for _ in range(count):
                start = perf_counter_ns()
                await loop.run_in_executor(executor, int)
                hops.append(perf_counter_ns() - start)
        for _ in range(count):
            start = perf_counter_ns()
            await inproc.store.db.read(_nothing)
            reads.append(perf_counter_ns() - start)
        return statistics.median(hops), statistics.median(reads)

    out: dict[str, float] = {}
    out["hop"], out["read"] = inproc.loop.run_until_complete(probe())
    for level in ("FULL", "OFF"):
        db = sqlite3.connect(folder / f"probe-{level.lower()}.db", isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={level}")
            db.execute("PRAGMA wal_autocheckpoint=100")
            db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)")
            samples = []
            for i in range(2 * count):  # the first half fills the WAL: not timed
                start = perf_counter_ns()
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT INTO t (data) VALUES (?)", ("x" * 500,))
                db.execute("COMMIT")
                if i >= count:
                    samples.append(perf_counter_ns() - start)
        finally:
            db.close()
        out[level] = statistics.median(samples)
    return out


def profile_in_process(inproc: InProcess, cycles: int, top: int = 25) -> None:
    """cProfile over `cycles` in-process cycles, sorted by own time. Only this thread is
    profiled: the store's worker threads (SQLite itself, the fsyncs) show up as time in
    epoll."""
    profiler = cProfile.Profile()
    start = perf_counter_ns()
    profiler.enable()
    inproc.run(cycles)
    profiler.disable()
    elapsed = perf_counter_ns() - start
    print(
        f"\ncProfile of {cycles} in-process cycles ({fmt_time(elapsed / cycles)} per cycle "
        "under the profiler; totals over all cycles), by own time"
    )
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats("tottime").print_stats(top)
    text = buffer.getvalue()
    print(text[text.find("   ncalls") :].rstrip())


# --- memory with many paused histories ----------------------------------------------------------


def pause_some(server: ServerProcess, count: int, deadline: float) -> int:
    """Pause `count` new histories through the API (create, then a prompt turn that ends on
    the ask), one after another, until `deadline`. Returns how many were paused."""
    client = server.client()
    done = 0
    try:
        while done < count and time.monotonic() < deadline:
            status, body = client.request("POST", "/api/histories", {})
            if status != 201:
                raise RuntimeError(f"create: {status} {body}")
            path = f"/api/histories/{body['data']['id']}/turn"
            status, body = client.request("POST", path, {"prompt": PROMPT})
            if status != 200 or "pendingAsk" not in body["data"]:
                raise RuntimeError(f"prompt turn: {status} {body}")
            done += 1
    finally:
        client.close()
    return done


def count_paused(db_path: Path) -> int:
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        query = "SELECT count(*) FROM histories WHERE pending_ask IS NOT NULL"
        return int(connection.execute(query).fetchone()[0])
    finally:
        connection.close()


def db_bytes(db_path: Path) -> int:
    return sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())


# --- reporting ----------------------------------------------------------------------------------


def fmt_time(ns: float) -> str:
    return common_fmt_time(ns, micro_digits=0)


def fmt_mb(value: float, *, sign: bool = False) -> str:
    return f"{value / 1_048_576:{'+' if sign else ''}.1f} MiB"


def versions_line() -> str:
    names = ("handrail", "langgraph", "langgraph-checkpoint-sqlite", "sqlalchemy", "uvicorn")
    versions = ", ".join(f"{name} {package_version(name)}" for name in (*names, "uvloop"))
    return f"SQLite {sqlite3.sqlite_version} | {versions}"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


# --- the run ------------------------------------------------------------------------------------


def race(args: argparse.Namespace, folder: Path) -> int:
    """Section 1 (the cycle race) and 2 (where the time goes). Returns the exit status."""
    inproc = InProcess(folder / "inproc.db")
    server = ServerProcess(folder / "http.db", trace=False, max_seconds=args.budget_s + 600)
    impls: list[Any] = [inproc, OverHttp(server), LangGraphCycle(folder / "langgraph.db")]
    lg: LangGraphCycle = impls[2]
    try:
        lg_sync, lg_journal = lg.synchronous()
        print(
            f"PRAGMA synchronous (2 = FULL): in process {inproc.synchronous()}, server "
            f"{server.info['synchronous']}, LangGraph {lg_sync} (journal {lg_journal}). "
            f"Server: uvicorn on 127.0.0.1 (event loop {server.info['loop']}, "
            f"{server.info['http']}), no access log; client: http.client, keep-alive."
        )
        wrong = [f"{i.name}: {got!r}" for i in impls if (got := i.check()) != REPLY]
        for line in wrong:
            print(f"WRONG REPLY from {line} (expected {REPLY!r})")
        if wrong:
            return 1

        contenders = [Contender(impl) for impl in impls]
        for contender in contenders:
            calibrate(contender, args.batch_ms * 1e6, max_calls=1000)
        rounds = run_rounds(contenders, args.rounds, args.budget_s)
        print(
            f"{rounds} interleaved rounds, batches of about {args.batch_ms:g} ms, a new "
            "conversation per cycle; median per cycle; noise = half the interquartile range "
            "/ median"
        )
        ours, http, base = contenders
        print_table(
            "1. One ask-and-answer cycle",
            ("contender", "median/cycle", "cycles/s", "noise", "cycles/batch", "time/LangGraph"),
            [
                [
                    c.name,
                    fmt_time(c.median_ns),
                    f"{1e9 / c.median_ns:,.0f}/s",
                    f"±{c.spread * 50:.0f}%",
                    f"{c.calls}",
                    f"{c.median_ns / base.median_ns:.2f}×",
                ]
                for c in contenders
            ],
        )
        print_table(
            "   phases (median over every timed cycle)",
            ("phase", "median"),
            [
                [f"{c.name}: {name}", fmt_time(median)]
                for c in contenders
                for name, median in zip(c.impl.phases, c.phase_medians(), strict=True)
            ],
        )
        in_ms = ours.median_ns / 1e6
        in_ratio = ours.median_ns / base.median_ns
        http_ratio = http.median_ns / base.median_ns
        print(
            "\nTargets:\n"
            f"   in-process cycle median = {in_ms:.2f} ms  (target <= 1 ms): "
            f"{verdict(in_ms <= 1.0)}\n"
            f"   HTTP cycle / LangGraph  = {http_ratio:.2f}  (target <= 1.00): "
            f"{verdict(http_ratio <= 1.0)}\n"
            f"   (in-process cycle / LangGraph = {in_ratio:.2f})\n"
            "Targets (issue 18), in the same run:\n"
            f"   in-process cycle / LangGraph = {in_ratio:.2f}  (target <= 0.35): "
            f"{verdict(in_ratio <= 0.35)}\n"
            f"   HTTP cycle / LangGraph       = {http_ratio:.2f}  (target <= 0.60): "
            f"{verdict(http_ratio <= 0.6)}"
        )

        counts = count_sql(folder, lg)
        units = probe_units(inproc, folder)
        cycle_ns, times = store_call_times(inproc, args.attribution_cycles)
        store_ns = sum(total for _, total in times.values()) / args.attribution_cycles
        rows = [
            [
                label,
                f"{calls / args.attribution_cycles:g}",
                fmt_time(total / args.attribution_cycles),
                fmt_time(total / calls),
            ]
            for label, (calls, total) in sorted(times.items(), key=lambda kv: -kv[1][1])
        ]
        rows.append(["store calls, all", "", fmt_time(store_ns), ""])
        rows.append(
            ["the rest (runtime, model, asks, events)", "", fmt_time(cycle_ns - store_ns), ""]
        )
        rows.append(["cycle (mean of these cycles)", "", fmt_time(cycle_ns), ""])
        print_table(
            f"2. Where an in-process cycle's time goes ({args.attribution_cycles} more cycles, "
            "each store call timed from call to return)",
            ("store call", "calls/cycle", "time/cycle", "time/call"),
            rows,
        )
        fsync_ns = max(0.0, units["FULL"] - units["OFF"])
        print(
            "   SQL per cycle (BEGIN, COMMIT and PRAGMA not counted): handrail "
            f"{counts['statements']} statements in {counts['transactions']} transactions "
            f"({counts['writes']} writing, {counts['synced']} of them waiting for the disk; "
            f"{counts['here']} on the event loop's own connection, the others each one hop to "
            f"a store thread); LangGraph {counts['lg_statements']} statements, "
            f"{counts['lg_commits']} commits, no thread hops (sqlite3 on the caller's thread)\n"
            "   unit costs here: a concurrent.futures thread hop "
            f"{fmt_time(units['hop'])}; empty read transaction through the store "
            f"{fmt_time(units['read'])}; "
            f"sqlite3 write transaction FULL {fmt_time(units['FULL'])}, OFF "
            f"{fmt_time(units['OFF'])} (fsync ≈ {fmt_time(fsync_ns)})\n"
            f"   fsyncs alone: handrail {counts['synced']} × ≈ "
            f"{fmt_time(counts['synced'] * fsync_ns)}, LangGraph {counts['lg_commits']} × ≈ "
            f"{fmt_time(counts['lg_commits'] * fsync_ns)}"
        )
        if args.profile:
            profile_in_process(inproc, args.profile)
    finally:
        for impl in impls:
            impl.close()
        server.stop()
    return 0


def memory(args: argparse.Namespace, folder: Path) -> None:
    """Section 3: a fresh server's memory as paused histories pile up."""
    trace = not args.no_trace
    marks = sorted({m for m in (100, 1_000, 2_000, 5_000, args.paused) if m <= args.paused})
    print(
        f"\n3. Server memory with paused histories (a fresh server"
        f"{' with tracemalloc' if trace else ''}; histories paused through the API; each mark "
        "read after a full collection)"
    )
    db_path = folder / "memory.db"
    server = ServerProcess(db_path, trace=trace, max_seconds=args.memory_budget_s + 300)
    result: list[tuple[int, dict[str, Any], int]] = []
    try:
        start = time.monotonic()
        deadline = start + args.memory_budget_s
        paused = 0
        server.memory(reset=True)
        for mark in marks:
            paused += pause_some(server, mark - paused, deadline)
            result.append((paused, server.memory(reset=True), db_bytes(db_path)))
            print(f"   {paused:>6,} paused after {time.monotonic() - start:.0f} s", flush=True)
            if paused < mark:
                print(f"   stopped: the memory budget of {args.memory_budget_s:g} s is spent")
                break
        tasks = server.memory()["tasks"]
    finally:
        server.stop()

    headers = ["paused", "RSS", "RSS growth", "peak RSS", "DB + WAL"]
    if trace:
        headers[3:3] = ["Python heap", "heap growth", "heap peak since last mark"]
    rows = []
    previous: dict[str, Any] = result[0][1]
    for paused, mem, size in result:
        row = [
            f"{paused:,}",
            fmt_mb(mem["rss"]),
            fmt_mb(mem["rss"] - previous["rss"], sign=True),
            fmt_mb(mem["hwm"]),
            fmt_mb(size),
        ]
        if trace:
            row[3:3] = [
                fmt_mb(mem["traced"]),
                fmt_mb(mem["traced"] - previous["traced"], sign=True),
                fmt_mb(mem["traced_peak"]),
            ]
        rows.append(row)
        previous = mem
    print_table("   server process (growth: since the previous mark)", headers, rows)
    print(
        f"   paused histories in its database afterwards: {count_paused(db_path):,}; turns "
        f"still running in the server: {tasks}"
    )
    low = next((r for r in result if r[0] == 1_000), None)
    high = result[-1]
    if low is not None and high[0] > low[0]:
        span = high[0] - low[0]
        line = (
            f"   from {low[0]:,} to {high[0]:,} paused: RSS "
            f"{fmt_mb(high[1]['rss'] - low[1]['rss'], sign=True)} "
            f"({(high[1]['rss'] - low[1]['rss']) / span:+,.0f} B per history)"
        )
        if trace:
            heap = high[1]["traced"] - low[1]["traced"]
            line += f", Python heap {fmt_mb(heap, sign=True)} ({heap / span:+,.0f} B per history)"
        print(f"{line}; database {(high[2] - low[2]) / span:+,.0f} B per history")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add = parser.add_argument
    add("--rounds", type=int, default=20, help="rounds of the cycle race, 0 to skip it (20)")
    add("--batch-ms", type=float, default=250.0, help="length of one batch in ms (250)")
    add("--budget-s", type=float, default=300.0, help="time cap of the race in s (300)")
    add("--attribution-cycles", type=int, default=50, help="cycles timed per store call (50)")
    add("--profile", type=int, default=0, metavar="N", help="cProfile N in-process cycles too")
    add("--paused", type=int, default=10_000, help="paused histories, 0 to skip (10000)")
    add("--memory-budget-s", type=float, default=900.0, help="time cap of the memory run (900)")
    add("--no-trace", action="store_true", help="memory run without tracemalloc (RSS only)")
    add("--serve", type=Path, help=argparse.SUPPRESS)
    add("--trace", action="store_true", help=argparse.SUPPRESS)
    add("--max-seconds", type=float, default=600.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, trace=args.trace, max_seconds=args.max_seconds)
        return 0

    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError as error:
        print(
            f"{error.name} is missing: install the bench extra (make bench, or "
            "pip install -e '.[bench]') and run again.",
            file=sys.stderr,
        )
        return 2
    print("handrail bench: one ask-and-answer cycle, durable on SQLite (synchronous=FULL)")
    print(machine_line(versions_line()))
    with tempfile.TemporaryDirectory(prefix="handrail-bench-") as folder:
        status = race(args, Path(folder)) if args.rounds > 0 else 0
        if status == 0 and args.paused > 0:
            memory(args, Path(folder))
    return status


if __name__ == "__main__":
    sys.exit(main())
