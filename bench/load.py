"""Benchmark: throughput under load, from outside, against a floor app in the same run.

A script, not a test: it prints what it measured and asserts nothing about time. Run it with
``.venv/bin/python bench/load.py`` (``--help`` for the options; the defaults follow issue 18:
1, 8, 32 and 64 clients, 20 s a level for each setup).

One cycle is what a headless client does to ask and be answered: ``POST /api/histories`` (a
new conversation), ``POST /api/histories/{id}/turn`` with ``{prompt}`` (the scripted model
calls ``ask_choice`` with the spec's "Choose a plan" ask; the turn pauses and answers with the
``pendingAsk``), then the same route with ``{askResponse}`` (the turn resumes and the model
replies). Each client is one keep-alive HTTP/1.1 connection on 127.0.0.1 running cycles one
after another; all clients run in this process on one event loop.

The setups, each a server process (or two) this script starts and stops:

- **floor**: a minimal Starlette app on the same uvicorn (uvloop, httptools) that serves the
  same three requests with the same bearer token, parses the same JSON bodies and makes the
  durable commits the cycle needs on SQLite (WAL, ``synchronous=FULL``): an insert for the new
  conversation, a write for the ask, a claim and a write for the answer (4 commits), each on a
  worker thread with its own connection. No validation, no model, no policy.
- **handrail, SQLite, 1 process**: ``create_app`` on a SQLite file (WAL, ``synchronous=FULL``)
  served as ``handrail serve`` serves it (`uvicorn_config`: the guarded httptools protocol;
  `serving.Server`: the heap of the start-up frozen for the garbage collector).
- **handrail, PostgreSQL, 1 process** and **2 processes** on one database of a throwaway
  cluster (``tests/_pg.py``, durable: ``fsync`` and ``synchronous_commit`` on, unix socket);
  with 2 processes, client i talks to process i mod 2. **pg2split** is 2 processes each on a
  database of its own: they share only the machine and the cluster, neither hears the other's
  events, so against ``pg2`` it tells what sharing one database costs and against ``pg1`` what
  two busy processes on these cores cost. It is the control of the free-core estimate below,
  and runs once with ``--before`` (as the floor does).

How it measures, so that a busy machine moves every setup alike: at each client count, each
setup first runs that many clients for ``--level-warm-up`` seconds, not counted (a PostgreSQL
process's pool grows to the level's concurrent transactions, its new backends plan), then the
setups run interleaved in ``--rounds`` slices (the order rotating and reversing), each slice
``--seconds / --rounds`` long. A slice counts the cycles finished before its end, the latency of
each (the three requests together; p50, p95, p99), the failed ones (any unexpected status or
body, or a time-out), and reads, from each server process's own accounting
(``/proc/<pid>/stat``, user + system time, all threads), the CPU it spent, and the part of it
its event loop's thread spent (``/proc/<pid>/task/<pid>/stat``: the rest is the database
threads on SQLite, and on both the driver's and the default executor's); on PostgreSQL also
the CPU of the cluster's processes and its WAL fsyncs (``pg_stat_wal``). A bench-only route
of each server (in this script's ``--serve`` mode, never in handrail) returns its database
counters: statements, transactions, write transactions (commits) and round trips to the
database; on SQLite the WAL fsyncs are the commits less those that do not wait for the disk
(`handrail.store.db.unsynced`). On SQLite a round trip is one transaction's hop to a worker
thread; on PostgreSQL it is each request asyncpg sends and waits for (BEGIN, a prepare, an
execution, COMMIT). The figures per cycle divide by every cycle the slice ran, including the
ones that finished after its end.

Ratios are to the floor at the same client count in the same run. On this 2-core machine the
load generator, the servers and PostgreSQL share the cores, so cycles/s says little about a
machine with free cores; the server CPU per cycle does: one process can serve at most
1000 / (CPU ms per cycle) cycles/s per core it gets, and the script prints that capacity and,
for 2 processes, the CPU per cycle of each. The estimate of 2 processes with a free core each
(issue 18 asks ≥ 1.7 × one) is 2 × pg2's cycles per CPU second over pg2split's at the same
client count: two processes that share nothing would serve twice one with free cores, and on
these cores both setups pay alike for two busy processes on two cores (each process's CPU per
cycle grows with the other's: caches, preemption), so what pg2 does less than pg2split is what
sharing one database costs (hearing the other's events, waiting on its rows), which free cores
would not take away. The sum of 1000 / CPU ms per cycle over pg2's processes against pg1's is
printed too; it counts that contention of the cores as a cost of the code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from _common import (  # noqa: E402
    PLAN_ASK,
    before_src,
    machine_line,
    package_version,
    print_table,
)

PROMPT = "ask_choice " + json.dumps(PLAN_ASK)
ANSWER: dict[str, Any] = {"action": "accept", "content": {"selected": ["team"]}}
REPLY = "ask_choice returned: " + json.dumps(ANSWER, separators=(",", ":"))
USER = "alice"
TOKEN = "bench-" + uuid.uuid4().hex
CYCLE_TIMEOUT_S = 60.0
SERVER_START_S = 90.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- database counters, installed in a server process -------------------------------------------


class Counters:
    """Database work a server process did, counted from every thread (``next`` on an
    `itertools.count` is one atomic C call, so counting costs the server next to nothing)."""

    NAMES = ("statements", "transactions", "writes", "round_trips", "unsynced")

    def __init__(self) -> None:
        self.counts = {name: itertools.count() for name in self.NAMES}
        self.statements = self.counts["statements"].__next__
        self.transactions = self.counts["transactions"].__next__
        self.writes = self.counts["writes"].__next__
        self.round_trips = self.counts["round_trips"].__next__
        self.unsynced = self.counts["unsynced"].__next__

    def snapshot(self) -> dict[str, int]:
        return {name: count.__reduce__()[1][0] for name, count in self.counts.items()}


#: With ``--trace``: each round trip's statement while tracing is on (``/_bench/trace``).
TRACE: list[str] | None = None


def traced(sql: str, connection: object = None) -> None:
    if TRACE is not None:
        where = f"c{id(connection) % 997:03d} " if connection is not None else ""
        TRACE.append(where + " ".join(sql.split())[:150])


COUNTERS = Counters()


def count_sqlite() -> None:
    """Every ``sqlite3`` connection made from now on counts each statement it is given: BEGIN
    starts a transaction (one hop to a worker thread: a round trip, unless it runs on the
    event loop's own thread, the main one), BEGIN IMMEDIATE a write transaction (its COMMIT
    fsyncs, unless its connection was set to ``synchronous=NORMAL`` or ``OFF``: an unsynced
    commit, see `handrail.store.db.unsynced`), anything else but
    COMMIT/ROLLBACK/SAVEPOINT/RELEASE/PRAGMA is a statement.

    The count is taken where a statement is handed to the driver (a `sqlite3.Connection` and
    `sqlite3.Cursor` subclass, on the thread that already runs Python for it), not by SQLite's
    trace callback: that one formats each statement with its values bound (a conversation's
    pending ask is 1.5 kB of JSON) and takes the GIL in the middle of every step (a two-insert
    transaction 14 µs against 8.6 µs counted here), a cost that grows with the statements a
    cycle runs, more handrail's than the floor's."""
    import sqlite3

    connect = sqlite3.connect

    main = threading.main_thread()

    def count(sql: str, connection: Any) -> None:
        traced(sql)
        head = sql.lstrip()[:16].upper()
        if head.startswith("BEGIN"):
            COUNTERS.transactions()
            if threading.current_thread() is not main:
                COUNTERS.round_trips()
            if "IMMEDIATE" in head or "EXCLUSIVE" in head:
                COUNTERS.writes()
                if connection.unsynced:
                    COUNTERS.unsynced()
        elif head.startswith("PRAGMA"):
            # Not a statement: a connection's level (the store's, or an unsynced commit's
            # before it and the store's after) sets how its commits go, as BEGIN and COMMIT do.
            setting = "".join(sql.split()).upper()
            if setting.startswith("PRAGMASYNCHRONOUS="):
                connection.unsynced = setting.endswith(("=NORMAL", "=OFF", "=1", "=0"))
        elif not head.startswith(("COMMIT", "ROLLBACK", "END", "SAVEPOINT", "RELEASE")):
            COUNTERS.statements()

    class Counting:
        """`execute` and `executemany` that count their statement, for a cursor and a
        connection alike (the class after this one in the bases runs it)."""

        def execute(self, sql: str, parameters: Any = (), /) -> Any:
            count(sql, self._counted)
            return super().execute(sql, parameters)  # type: ignore[misc]

        def executemany(self, sql: str, parameters: Any, /) -> Any:
            count(sql, self._counted)
            return super().executemany(sql, parameters)  # type: ignore[misc]

        @property
        def _counted(self) -> Any:
            """The connection whose level counts."""
            raise NotImplementedError

    class CountingCursor(Counting, sqlite3.Cursor):
        @property
        def _counted(self) -> Any:
            return self.connection

    class CountingConnection(Counting, sqlite3.Connection):
        #: Whether its commits skip the fsync (its ``synchronous`` level).
        unsynced = False

        # The C methods of `sqlite3.Connection` call none of these overrides, so a
        # statement given to `execute` is counted once.
        def cursor(self, factory: Any = CountingCursor) -> Any:
            return super().cursor(factory)

        @property
        def _counted(self) -> Any:
            return self

    def counting_connect(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("factory", CountingConnection)
        return connect(*args, **kwargs)

    # SQLAlchemy's pysqlite dialect calls `sqlite3.dbapi2.connect`.
    sqlite3.connect = sqlite3.dbapi2.connect = counting_connect  # type: ignore[assignment]


def count_asyncpg() -> None:
    """Every request asyncpg sends and waits for is a round trip; a transaction that ran an
    INSERT, UPDATE or DELETE (or a ``WITH`` of one) is a write (its COMMIT flushes the WAL), and
    so is such a statement run outside a transaction (it commits alone)."""
    import asyncpg
    from asyncpg.prepared_stmt import PreparedStatement
    from asyncpg.transaction import Transaction

    wrote: set[int] = set()

    def writes(query: str) -> bool:
        head = query.lstrip()[:6].upper()
        if head == "WITH" or head.startswith("WITH "):
            return re.search(r"\bAS \((INSERT|UPDATE|DELETE) ", query) is not None
        return head in ("INSERT", "UPDATE", "DELETE")

    def wrote_on(connection: Any, query: str) -> None:
        if writes(query):
            if connection.is_in_transaction():
                wrote.add(id(connection))
            else:
                COUNTERS.writes()

    def wrap_connection(name: str) -> None:
        original = getattr(asyncpg.Connection, name)

        async def counted(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
            COUNTERS.round_trips()
            traced(query, self)
            upper = query.lstrip()[:6].upper()
            if upper not in ("BEGIN", "BEGIN;", "COMMIT", "ROLLBA", "SAVEPO", "RELEAS"):
                COUNTERS.statements()
                wrote_on(self, query)
            return await original(self, query, *args, **kwargs)

        setattr(asyncpg.Connection, name, counted)

    for name in ("execute", "executemany", "fetch", "fetchrow", "fetchval"):
        wrap_connection(name)
    prepare = asyncpg.Connection.prepare

    async def counted_prepare(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        COUNTERS.round_trips()
        traced("(prepare) " + query, self)
        return await prepare(self, query, *args, **kwargs)

    asyncpg.Connection.prepare = counted_prepare  # type: ignore[method-assign]

    def wrap_statement(name: str) -> None:
        original = getattr(PreparedStatement, name)

        async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            COUNTERS.round_trips()
            COUNTERS.statements()
            traced(self.get_query(), self._connection)
            wrote_on(self._connection, self.get_query())
            return await original(self, *args, **kwargs)

        setattr(PreparedStatement, name, counted)

    for name in ("fetch", "fetchrow", "fetchval", "executemany"):
        wrap_statement(name)
    start, commit, rollback = Transaction.start, Transaction.commit, Transaction.rollback

    async def counted_start(self: Any) -> Any:
        COUNTERS.transactions()
        wrote.discard(id(self._connection))
        return await start(self)  # its BEGIN goes through Connection.execute: counted there

    async def counted_commit(self: Any) -> Any:
        if id(self._connection) in wrote:
            wrote.discard(id(self._connection))
            COUNTERS.writes()
        return await commit(self)

    async def counted_rollback(self: Any) -> Any:
        wrote.discard(id(self._connection))
        return await rollback(self)

    Transaction.start = counted_start  # type: ignore[method-assign]
    Transaction.commit = counted_commit  # type: ignore[method-assign]
    Transaction.rollback = counted_rollback  # type: ignore[method-assign]


# --- the servers (this script with --serve, in subprocesses) ------------------------------------


def handrail_app(url: str, folder: Path) -> Any:
    from fastapi.responses import JSONResponse

    from handrail.runtime.agent import Agent
    from handrail.server import ServerConfig, UserConfig, create_app
    from handrail.store import Store

    agent = Agent("assistant", instructions="Be brief.")
    config = ServerConfig(
        users=[UserConfig(id=USER, token=os.environ["BENCH_TOKEN"])],
        agents=[agent],
        database_url=url,
        blob_dir=folder / "files",
        model="scripted",
    )
    holder: dict[str, Store] = {}

    async def opened() -> Store:
        if "store" not in holder:
            holder["store"] = await Store.open(url, blob_dir=folder / "files", synchronous="FULL")
        return holder["store"]

    # The store is opened in the server's event loop (`prepare`), then given to create_app.
    def build(store: Store) -> Any:
        app = create_app(config, store=store)

        async def stats() -> JSONResponse:
            return JSONResponse(COUNTERS.snapshot())

        async def trace() -> JSONResponse:
            global TRACE
            out, TRACE = TRACE, []
            return JSONResponse(out or [])

        app.add_api_route("/_bench/stats", stats, methods=["GET"], include_in_schema=False)
        app.add_api_route("/_bench/trace", trace, methods=["GET"], include_in_schema=False)
        return app, config

    return opened, build


def floor_app(url: str, folder: Path) -> Any:
    """The floor: body parsing and the cycle's durable commits, nothing else."""
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    path = url.removeprefix("sqlite:///")
    local = threading.local()
    pool = ThreadPoolExecutor(4, thread_name_prefix="floor-sqlite")
    expected = "Bearer " + os.environ["BENCH_TOKEN"]

    def connection() -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(local, "db", None)
        if db is None:
            db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            local.db = db
        return db

    def write(work: Callable[[sqlite3.Connection], Any]) -> Any:
        db = connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return result

    async def in_thread(work: Callable[[sqlite3.Connection], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, write, work)

    def refused(request: Request) -> JSONResponse | None:
        if request.headers.get("authorization") != expected:
            return JSONResponse({"title": "Unauthorized"}, status_code=401)
        return None

    async def create(request: Request) -> JSONResponse:
        if (bad := refused(request)) is not None:
            return bad
        json.loads(await request.body() or b"{}")
        history_id = uuid.uuid4().hex[:24]

        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO histories (id, owner, version, pending) VALUES (?, ?, 0, NULL)",
                (history_id, USER),
            )

        await in_thread(insert)
        return JSONResponse({"data": {"id": history_id}}, status_code=201)

    async def turn(request: Request) -> JSONResponse:
        if (bad := refused(request)) is not None:
            return bad
        history_id = request.path_params["id"]
        body = json.loads(await request.body())
        if "prompt" in body:
            # What the scripted model does with "ask_choice <json>": the ask is its JSON.
            ask = json.loads(body["prompt"].partition(" ")[2])
            pending = {"toolCallId": uuid.uuid4().hex, "kind": "choice", "input": ask}
            stored = json.dumps(pending)

            def pause(db: sqlite3.Connection) -> int:
                return db.execute(
                    "UPDATE histories SET pending = ?, version = version + 1 "
                    "WHERE id = ? AND owner = ? AND pending IS NULL",
                    (stored, history_id, USER),
                ).rowcount

            if await in_thread(pause) != 1:
                return JSONResponse({"title": "Conflict"}, status_code=409)
            return JSONResponse({"data": {"historyId": history_id, "pendingAsk": pending}})
        answer = body["askResponse"]

        def claim(db: sqlite3.Connection) -> int:
            return db.execute(
                "UPDATE histories SET pending = NULL, version = version + 1 "
                "WHERE id = ? AND owner = ? AND json_extract(pending, '$.toolCallId') = ?",
                (history_id, USER, answer["toolCallId"]),
            ).rowcount

        if await in_thread(claim) != 1:
            return JSONResponse({"title": "Conflict"}, status_code=409)
        text = "ask_choice returned: " + json.dumps(
            {"action": answer["action"], "content": answer["content"]}, separators=(",", ":")
        )
        stored_answer = json.dumps(answer)

        def reply(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO rows (history_id, answer, reply) VALUES (?, ?, ?)",
                (history_id, stored_answer, text),
            )

        await in_thread(reply)
        return JSONResponse({"data": {"historyId": history_id, "text": text}})

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(COUNTERS.snapshot())

    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute(
        "CREATE TABLE IF NOT EXISTS histories (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
        "version INTEGER NOT NULL, pending TEXT)"
    )
    setup.execute(
        "CREATE TABLE IF NOT EXISTS rows (seq INTEGER PRIMARY KEY, history_id TEXT NOT NULL "
        "REFERENCES histories (id), answer TEXT NOT NULL, reply TEXT NOT NULL)"
    )
    setup.close()
    return Starlette(
        routes=[
            Route("/api/histories", create, methods=["POST"]),
            Route("/api/histories/{id}/turn", turn, methods=["POST"]),
            Route("/_bench/stats", stats, methods=["GET"]),
        ]
    )


def serve(kind: str, url: str, folder: Path, max_seconds: float) -> None:
    """Serve `kind` (handrail or floor) on 127.0.0.1, a free port printed as a JSON line on
    stdout. Stops on SIGTERM, when the parent goes away, or after `max_seconds`."""
    import uvicorn
    from uvicorn.loops.auto import auto_loop_factory

    if url.startswith("sqlite"):
        count_sqlite()
    else:
        count_asyncpg()

    async def main() -> None:
        store = None
        server_class = uvicorn.Server
        if kind == "floor":
            app = floor_app(url, folder)
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        else:
            from handrail.server import serving
            from handrail.server.serving import uvicorn_config

            # `handrail serve`'s server (a --before checkout may predate it).
            server_class = getattr(serving, "Server", uvicorn.Server)

            opened, build = handrail_app(url, folder)
            store = await opened()
            app, server_config = build(store)
            config = uvicorn_config(app, server_config, log_level="warning")
            # No access log, as the floor's `access_log=False` (which uvicorn applies to its
            # logger when the Config is made, so setting the attribute afterwards is too late):
            # the protocol builds an access line only when that logger has handlers.
            config.access_log = False
            access = logging.getLogger("uvicorn.access")
            access.handlers = []
            access.propagate = False
        # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets whose proto says TCP.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        server = server_class(config)
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
            if store is not None:
                await store.close()

    with asyncio.Runner(loop_factory=auto_loop_factory(use_subprocess=False)) as runner:
        runner.run(main())


class ServerProcess:
    """One ``--serve`` subprocess."""

    def __init__(
        self, kind: str, url: str, folder: Path, max_seconds: float, src: Path | None = None
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, __file__, "--serve", kind, "--url", url]
        command += ["--folder", str(folder), "--max-seconds", str(max_seconds)]
        env = {**os.environ, "BENCH_TOKEN": TOKEN}
        if src is not None:  # handrail imported from another checkout (--before)
            env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
        self.log = (folder / f"{kind}-{uuid.uuid4().hex[:6]}.log").open("w+")
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.log, env=env, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(
                f"the {kind} server did not start (exit {self.process.wait()}):\n{self.log.read()}"
            )
        self.port: int = json.loads(line)["port"]
        self.pid = self.process.pid

    def cpu_s(self) -> float:
        return process_cpu_s(self.pid)

    def loop_cpu_s(self) -> float:
        """CPU seconds of the server's main thread, the one its event loop runs on."""
        return process_cpu_s(self.pid, thread=self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def tracebacks(self) -> int:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace").count("Traceback")


def process_cpu_s(pid: int, thread: int | None = None) -> float:
    """User + system CPU seconds of `pid` (all its threads), from /proc/<pid>/stat; of its
    thread `thread` alone when given (/proc/<pid>/task/<thread>/stat)."""
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    try:
        raw = Path(path).read_text()
    except OSError:
        return 0.0
    fields = raw.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children_cpu_s(parent: int) -> float:
    """CPU seconds of `parent` and its child processes, the live ones and those that exited
    (PostgreSQL's postmaster, its backends and helpers)."""
    try:
        raw = Path(f"/proc/{parent}/stat").read_text()
    except OSError:
        return 0.0
    own = raw.rpartition(")")[2].split()
    # utime, stime, and cutime, cstime: the children it waited for.
    total = sum(int(own[i]) for i in (11, 12, 13, 14)) / CLK_TCK
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw.rpartition(")")[2].split()
        if int(fields[1]) == parent:
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


# --- the load -----------------------------------------------------------------------------------


class Connection:
    """A keep-alive HTTP/1.1 connection with the bench user's token."""

    def __init__(
        self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.port, self.reader, self.writer = port, reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(port, reader, writer)

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        payload = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        data = await self.reader.readexactly(length)
        return status, json.loads(data) if data else None

    def close(self) -> None:
        self.writer.close()


async def cycle(http: Connection) -> None:
    """One ask-then-answer cycle; raises on anything unexpected."""
    status, body = await http.request("POST", "/api/histories", {})
    if status != 201:
        raise RuntimeError(f"create: {status} {str(body)[:200]}")
    path = f"/api/histories/{body['data']['id']}/turn"
    status, body = await http.request("POST", path, {"prompt": PROMPT})
    if status != 200 or "pendingAsk" not in body["data"]:
        raise RuntimeError(f"prompt turn: {status} {str(body)[:200]}")
    answer = {"askResponse": {"toolCallId": body["data"]["pendingAsk"]["toolCallId"], **ANSWER}}
    status, body = await http.request("POST", path, answer)
    if status != 200 or body["data"].get("text") != REPLY:
        raise RuntimeError(f"answer turn: {status} {str(body)[:200]}")


async def trace_cycle(setup: Setup) -> None:
    """One cycle on `setup`'s first process, printing each request's round trips to the
    database in order (``--trace``); on PostgreSQL each line names its connection."""
    port = setup.ports[0]
    http = await Connection.open(port)
    await http_get(port, "/_bench/trace")  # tracing on, anything before it dropped
    steps: list[tuple[str, list[str]]] = []
    status, body = await http.request("POST", "/api/histories", {})
    await asyncio.sleep(0.3)  # what the request left to background tasks (event sends)
    steps.append((f"POST /api/histories ({status})", await http_get(port, "/_bench/trace")))
    path = f"/api/histories/{body['data']['id']}/turn"
    status, body = await http.request("POST", path, {"prompt": PROMPT})
    await asyncio.sleep(0.3)
    steps.append((f"POST turn {{prompt}} ({status})", await http_get(port, "/_bench/trace")))
    answer = {"askResponse": {"toolCallId": body["data"]["pendingAsk"]["toolCallId"], **ANSWER}}
    status, body = await http.request("POST", path, answer)
    await asyncio.sleep(0.3)
    steps.append((f"POST turn {{askResponse}} ({status})", await http_get(port, "/_bench/trace")))
    http.close()
    total = sum(len(lines) for _, lines in steps)
    print(f"\n{setup.name}: one cycle, {total} round trips")
    for title, lines in steps:
        print(f"  {title}: {len(lines)}")
        for line in lines:
            print(f"    {line}")


@dataclass
class Slice:
    """What one run of one setup at one client count measured."""

    seconds: float = 0.0
    cycles: int = 0  # finished before the end
    all_cycles: int = 0  # also those that finished after it
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    server_cpu_s: float = 0.0
    loop_cpu_s: float = 0.0  # the event loop threads' share of server_cpu_s
    per_process_cpu_s: list[float] = field(default_factory=list)
    per_process_cycles: list[int] = field(default_factory=list)  # all_cycles, by process
    db_cpu_s: float | None = None
    wal_syncs: int | None = None
    counters: dict[str, int] = field(default_factory=dict)


async def run_clients(ports: Sequence[int], clients: int, seconds: float, into: Slice) -> None:
    """`clients` clients running cycles: for a ramp (a quarter of `seconds`, at most 1 s) in
    which nothing is counted but the work, then `seconds` in which the cycles that finish are
    counted and timed; the cycles under way then finish (counted in `all_cycles` only)."""
    connections = [await Connection.open(ports[i % len(ports)]) for i in range(clients)]
    into.per_process_cycles = [0] * len(ports)
    begin = time.perf_counter() + min(1.0, seconds / 4)
    end = begin + seconds

    async def client(http: Connection) -> None:
        while time.perf_counter() < end:
            began = time.perf_counter()
            try:
                async with asyncio.timeout(CYCLE_TIMEOUT_S):
                    await cycle(http)
            except Exception as exc:
                into.errors += 1
                if len(into.error_samples) < 3:
                    into.error_samples.append(f"{type(exc).__name__}: {exc}")
                # A connection in an unknown state is replaced.
                http.close()
                http = await Connection.open(http.port)
                continue
            done = time.perf_counter()
            into.all_cycles += 1
            into.per_process_cycles[ports.index(http.port)] += 1
            if begin <= done <= end:
                into.cycles += 1
                into.latencies.append(done - began)
        http.close()

    try:
        await asyncio.gather(*(client(c) for c in connections))
    finally:
        for c in connections:
            c.close()
    into.seconds = seconds


async def http_get(port: int, path: str) -> Any:
    http = await Connection.open(port)
    try:
        status, body = await http.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body}")
        return body
    finally:
        http.close()


@dataclass
class Setup:
    key: str
    name: str
    servers: list[ServerProcess]
    cluster: Any = None  # a PostgresCluster for the PostgreSQL setups

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.servers]


async def pg_wal_syncs(cluster: Any) -> int:
    import asyncpg

    connection = await asyncpg.connect(
        host=str(cluster.socket_dir), port=cluster.port, user="postgres", database="postgres"
    )
    try:
        return int(await connection.fetchval("SELECT wal_sync FROM pg_stat_wal"))
    finally:
        await connection.close()


def postmaster_pid(cluster: Any) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


async def measure(setup: Setup, clients: int, seconds: float) -> Slice:
    out = Slice()
    before = [await http_get(p, "/_bench/stats") for p in setup.ports]
    db_before = wal_before = None
    if setup.cluster is not None:
        await asyncio.sleep(1.1)  # PostgreSQL's backends report their statistics each second
        wal_before = await pg_wal_syncs(setup.cluster)
        db_before = children_cpu_s(postmaster_pid(setup.cluster))
    cpu_before = [s.cpu_s() for s in setup.servers]
    loop_before = sum(s.loop_cpu_s() for s in setup.servers)
    await run_clients(setup.ports, clients, seconds, out)
    cpu_after = [s.cpu_s() for s in setup.servers]
    out.loop_cpu_s = sum(s.loop_cpu_s() for s in setup.servers) - loop_before
    out.per_process_cpu_s = [a - b for a, b in zip(cpu_after, cpu_before, strict=True)]
    out.server_cpu_s = sum(out.per_process_cpu_s)
    if setup.cluster is not None:
        assert db_before is not None
        assert wal_before is not None
        out.db_cpu_s = children_cpu_s(postmaster_pid(setup.cluster)) - db_before
        await asyncio.sleep(1.1)
        out.wal_syncs = await pg_wal_syncs(setup.cluster) - wal_before
    after = [await http_get(p, "/_bench/stats") for p in setup.ports]
    out.counters = {
        name: sum(a[name] - b[name] for a, b in zip(after, before, strict=True))
        for name in Counters.NAMES
    }
    return out


def merge(slices: Sequence[Slice]) -> Slice:
    out = Slice()
    for s in slices:
        out.seconds += s.seconds
        out.cycles += s.cycles
        out.all_cycles += s.all_cycles
        out.latencies += s.latencies
        out.errors += s.errors
        out.error_samples += s.error_samples
        out.server_cpu_s += s.server_cpu_s
        out.loop_cpu_s += s.loop_cpu_s
        if not out.per_process_cpu_s:
            out.per_process_cpu_s = [0.0] * len(s.per_process_cpu_s)
        out.per_process_cpu_s = [
            a + b for a, b in zip(out.per_process_cpu_s, s.per_process_cpu_s, strict=True)
        ]
        if not out.per_process_cycles:
            out.per_process_cycles = [0] * len(s.per_process_cycles)
        out.per_process_cycles = [
            a + b for a, b in zip(out.per_process_cycles, s.per_process_cycles, strict=True)
        ]
        if s.db_cpu_s is not None:
            out.db_cpu_s = (out.db_cpu_s or 0.0) + s.db_cpu_s
        if s.wal_syncs is not None:
            out.wal_syncs = (out.wal_syncs or 0) + s.wal_syncs
        for name, value in s.counters.items():
            out.counters[name] = out.counters.get(name, 0) + value
    return out


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds * 1000:.1f} ms"


def per_cycle(value: float | None, s: Slice, digits: int = 2) -> str:
    if value is None or not s.all_cycles:
        return "-"
    return f"{value / s.all_cycles:.{digits}f}"


def rate(s: Slice) -> float:
    return s.cycles / s.seconds if s.seconds else 0.0


def cpu_ms(s: Slice) -> float:
    return s.server_cpu_s * 1000 / s.all_cycles if s.all_cycles else float("nan")


# --- main ---------------------------------------------------------------------------------------

SETUP_NAMES = {
    "floor": "floor (Starlette + sqlite3)",
    "sqlite": "handrail, SQLite, 1 process",
    "pg1": "handrail, PostgreSQL, 1 process",
    "pg2": "handrail, PostgreSQL, 2 processes",
    "pg2split": "handrail, PostgreSQL, 2 processes on 2 databases",
}


BEFORE = "-before"


def start_setups(
    keys: Sequence[str],
    folder: Path,
    max_seconds: float,
    stack: contextlib.ExitStack,
    before: Path | None = None,
) -> list[Setup]:
    cluster = None
    if any(k.startswith("pg") for k in keys):
        sys.path.insert(0, str(ROOT / "tests"))
        from _pg import start_cluster

        # Room for every process's full pool (PG_POOL_SIZE + PG_POOL_OVERFLOW) and listener.
        cluster = start_cluster(durable=True, max_connections=400)
        stack.callback(cluster.stop)
    setups = []
    for key in keys:
        sub = folder / key
        base = key.removesuffix(BEFORE)
        src = before if key.endswith(BEFORE) else None
        name = SETUP_NAMES[base] + (f" (before: {before})" if src else "")
        if base in ("floor", "sqlite"):
            url = f"sqlite:///{sub / 'db.sqlite'}"
            kind = "floor" if base == "floor" else "handrail"
            sub.mkdir(parents=True)
            servers = [ServerProcess(kind, url, sub, max_seconds, src)]
            setups.append(Setup(key, name, servers))
        else:
            assert cluster is not None
            url = cluster.new_database_url()
            count = 1 if base == "pg1" else 2
            # pg2split: each process on a database of its own (nothing shared but the machine).
            urls = [url, cluster.new_database_url() if base == "pg2split" else url][:count]
            # One after the other: the first migrates the new database.
            servers = [
                ServerProcess("handrail", u, sub / str(i), max_seconds, src)
                for i, u in enumerate(urls)
            ]
            setups.append(Setup(key, name, servers, cluster))
        for server in setups[-1].servers:
            stack.callback(server.stop)
    return setups


async def warm_up(setups: Sequence[Setup], clients: int = 0, seconds: float = 0.5) -> None:
    """Cycles on each setup that nothing counts: `clients` clients (at least 2 a process) for
    `seconds`, so that the slices after it do not pay for first-time work. Before each client
    level (`--level-warm-up`), that level's clients: a PostgreSQL process's pool opens a
    connection for each transaction that runs beside the others (about 35 at 32 clients), and
    each new backend plans each statement 5 times before it keeps a generic plan; a process
    under a steady load has done that long before."""
    for setup in setups:
        await run_clients(setup.ports, max(clients, 2 * len(setup.ports)), seconds, Slice())


def before_after(
    setups: Sequence[Setup], levels: Sequence[int], results: dict[tuple[str, int], Slice]
) -> None:
    """With --before: each setup against its own run with the other checkout."""
    keys = {s.key for s in setups}
    pairs = [s for s in setups if s.key + BEFORE in keys]
    if not pairs:
        return
    rows = []
    for setup in pairs:
        for level in levels:
            a, b = results[(setup.key, level)], results[(setup.key + BEFORE, level)]
            trips = [x.counters.get("round_trips", 0) / max(1, x.all_cycles) for x in (a, b)]
            rows.append(
                [
                    f"{setup.name}, {level}",
                    f"{rate(a) / rate(b):.2f}" if rate(b) else "-",
                    f"{cpu_ms(a) / cpu_ms(b):.2f}",
                    f"{cpu_ms(a):.2f} / {cpu_ms(b):.2f}",
                    f"{trips[0]:.1f} / {trips[1]:.1f}",
                ]
            )
    print_table(
        "After / before (the --before checkout), same run",
        ("setup, clients", "cycles/s ratio", "CPU/cycle ratio", "CPU ms", "round trips"),
        rows,
    )


def per_process_ms(s: Slice) -> list[float]:
    """Each server process's CPU ms per cycle it served."""
    return [
        cpu * 1000 / n if n else float("nan")
        for cpu, n in zip(s.per_process_cpu_s, s.per_process_cycles, strict=True)
    ]


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def postgresql_targets(
    setups: Sequence[Setup], levels: Sequence[int], results: dict[tuple[str, int], Slice]
) -> None:
    """The PostgreSQL targets of issue 18, and how 2 processes would scale with free cores."""
    keys = {s.key for s in setups}
    at = 32 if 32 in levels else max(levels)
    if not {"pg1", "pg2"} & keys:
        return
    print(f"\nTargets (issue 18), PostgreSQL at {at} clients:")
    if {"sqlite", "pg1"} <= keys:
        r = rate(results[("pg1", at)]) / rate(results[("sqlite", at)])
        c = cpu_ms(results[("pg1", at)]) / cpu_ms(results[("sqlite", at)])
        print(
            f"   PostgreSQL 1 process / SQLite = {r:.2f} cycles/s (≥ 0.8): {verdict(r >= 0.8)}; "
            f"server CPU per cycle {c:.2f} × SQLite's"
        )
    if not {"pg1", "pg2"} <= keys:
        return
    one, two = results[("pg1", at)], results[("pg2", at)]
    r = rate(two) / rate(one)
    print(f"   PostgreSQL 2 processes / 1 = {r:.2f} cycles/s (≥ 1.0 here): {verdict(r >= 1.0)}")
    per = per_process_ms(two)
    print(
        "   server CPU per cycle of each process: 1 process "
        f"{cpu_ms(one):.2f} ms; 2 processes "
        + ", ".join(
            f"{ms_:.2f} ms ({n} cycles)" for ms_, n in zip(per, two.per_process_cycles, strict=True)
        )
    )

    def per_core(s: Slice) -> float:  # cycles per second of CPU, the server's and the cluster's
        used = s.server_cpu_s + (s.db_cpu_s or 0.0)
        return s.all_cycles / used if used else float("nan")

    print(
        f"   cycles/s per core used (server + PostgreSQL CPU): 1 process {per_core(one):.0f}, "
        f"2 processes {per_core(two):.0f} ({per_core(two) / per_core(one):.2f} ×)"
    )
    # With a free core for each process (and PostgreSQL's own), each serves 1000 / (its CPU ms
    # per cycle) cycles/s: two of them against one. Measured here, each process's CPU per cycle
    # also holds what two busy processes cost each other on these two cores.
    scale = sum(1000 / p for p in per) / (1000 / cpu_ms(one))
    print(
        f"   with a free core per process, from this machine's CPU: 2 processes ≈ {scale:.2f} × "
        "one (the sum of 1000 / CPU ms per cycle over the processes)"
    )
    if "pg2split" not in keys:
        print(
            f"   (≥ 1.7: {verdict(scale >= 1.7)}; add pg2split to --setups for the estimate "
            "without the two processes' contention on these cores)"
        )
        return
    # pg2split: two processes at the same load that share nothing but the machine (and the
    # cluster). Two such processes with a free core each serve 2 × one; what pg2 does less than
    # pg2split is what sharing one database costs, which free cores do not take away.
    split = results[("pg2split", at)]
    split_per = per_process_ms(split)
    free = 2 * sum(1000 / p for p in per) / sum(1000 / p for p in split_per)
    print(
        "   two processes on 2 databases (pg2split, the same contention, nothing shared): "
        + ", ".join(f"{p:.2f} ms" for p in split_per)
        + " a cycle"
    )
    print(
        f"   with a free core per process: 2 processes ≈ {free:.2f} × one (2 × pg2's cycles per "
        "CPU second / pg2split's: what sharing one database costs; ≥ 1.7): "
        f"{verdict(free >= 1.7)}"
    )


def wal_fsyncs(s: Slice) -> int | None:
    """The slice's WAL fsyncs: on PostgreSQL from ``pg_stat_wal``, on SQLite the write
    transactions less the unsynced ones (each other commit at ``FULL`` fsyncs the WAL once; a
    checkpoint's fsync of the database file is not counted)."""
    if s.wal_syncs is not None:
        return s.wal_syncs
    if "writes" not in s.counters:
        return None
    return s.counters["writes"] - s.counters.get("unsynced", 0)


def report(
    setups: Sequence[Setup], levels: Sequence[int], results: dict[tuple[str, int], Slice]
) -> None:
    headers = (
        "clients", "cycles/s", "p50", "p95", "p99", "errors", "CPU ms/cycle",
        "loop CPU ms/cycle", "DB CPU ms/cycle", "commits/cycle", "round trips/cycle",
        "statements/cycle", "WAL fsyncs/cycle",
    )  # fmt: skip
    for setup in setups:
        rows = []
        for level in levels:
            s = results[(setup.key, level)]
            lat = s.latencies
            rows.append(
                [
                    str(level),
                    f"{rate(s):.0f}",
                    ms(quantile(lat, 0.5)),
                    ms(quantile(lat, 0.95)),
                    ms(quantile(lat, 0.99)),
                    str(s.errors),
                    f"{cpu_ms(s):.2f}",
                    per_cycle(s.loop_cpu_s * 1000, s),
                    per_cycle(None if s.db_cpu_s is None else s.db_cpu_s * 1000, s),
                    per_cycle(s.counters.get("writes"), s),
                    per_cycle(s.counters.get("round_trips"), s),
                    per_cycle(s.counters.get("statements"), s),
                    per_cycle(wal_fsyncs(s), s),
                ]
            )
        print_table(setup.name, headers, rows)
        if len(setup.servers) > 1:
            per = [
                "/".join(f"{cpu / max(1e-9, s.server_cpu_s):.0%}" for cpu in s.per_process_cpu_s)
                for s in (results[(setup.key, level)] for level in levels)
            ]
            print(
                "   share of the server CPU per process (client i talks to process i mod 2): "
                + ", ".join(f"{lv} clients {p}" for lv, p in zip(levels, per, strict=True))
            )
        samples = {e for level in levels for e in results[(setup.key, level)].error_samples}
        for sample in sorted(samples)[:3]:
            print(f"   error: {sample}")
    before_after(setups, levels, results)
    postgresql_targets(setups, levels, results)
    floor = next((s for s in setups if s.key == "floor"), None)
    if floor is None:
        return
    rows = []
    for setup in setups:
        if setup is floor:
            continue
        for level in levels:
            s, f = results[(setup.key, level)], results[("floor", level)]
            rows.append(
                [
                    f"{setup.name}, {level}",
                    f"{rate(s) / rate(f):.2f}" if rate(f) else "-",
                    f"{cpu_ms(s) / cpu_ms(f):.2f}",
                    f"{quantile(s.latencies, 0.99) / quantile(f.latencies, 0.99):.2f}",
                    f"{1000 / cpu_ms(s):.0f}",
                ]
            )
    rows += [
        [
            "floor, " + str(level),
            "1.00",
            "1.00",
            "1.00",
            f"{1000 / cpu_ms(results[('floor', level)]):.0f}",
        ]
        for level in levels
    ]
    print_table(
        "Against the floor at the same client count (same run)",
        ("setup, clients", "cycles/s ratio", "CPU/cycle ratio", "p99 ratio", "cycles/s per core"),
        rows,
    )
    print("\nTargets (issue 18), against the floor:")
    at = 32 if 32 in levels else max(levels)
    f = results[("floor", at)]

    for setup in setups:
        if setup is floor:
            continue
        worst_cpu = max(
            cpu_ms(results[(setup.key, lv)]) / cpu_ms(results[("floor", lv)]) for lv in levels
        )
        s = results[(setup.key, at)]
        thr = rate(s) / rate(f)
        p99 = quantile(s.latencies, 0.99) / quantile(f.latencies, 0.99)
        errors = sum(results[(setup.key, lv)].errors for lv in levels)
        print(
            f"   {setup.name}: CPU/cycle ≤ 1.5 × floor (worst level {worst_cpu:.2f}): "
            f"{verdict(worst_cpu <= 1.5)}; cycles/s at {at} ≥ 0.8 × ({thr:.2f}): "
            f"{verdict(thr >= 0.8)}; p99 at {at} ≤ 2 × ({p99:.2f}): {verdict(p99 <= 2)}; "
            f"errors {errors}: {verdict(errors == 0)}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,8,32,64", help="client counts (default 1,8,32,64)")
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="seconds per setup and client count (20)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved slices per level (2)")
    parser.add_argument(
        "--setups",
        default="floor,sqlite,pg1,pg2,pg2split",
        help="which setups (floor,sqlite,pg1,pg2,pg2split)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="print the database round trips of one cycle on each handrail setup, then stop",
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also run each handrail setup with handrail imported from SRC (another "
        "checkout: its root or its src/), interleaved in the same run, and print after/before "
        "ratios",
    )
    parser.add_argument(
        "--level-warm-up",
        type=float,
        default=1.0,
        metavar="S",
        help="before each client level, S seconds of that level's clients on each setup, not "
        "counted (1; 0: none, only the 2 clients' warm-up at the start)",
    )
    parser.add_argument("--serve", choices=("handrail", "floor"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--max-seconds", type=float, default=3600.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.url, args.folder, args.max_seconds)
        return 0
    levels = [int(x) for x in args.clients.split(",")]
    keys = [k for k in args.setups.split(",") if k]
    unknown = {k.removesuffix(BEFORE) for k in keys} - set(SETUP_NAMES)
    if unknown or not keys or any(lv < 1 or lv > 1000 for lv in levels):
        parser.error(f"setups are {', '.join(SETUP_NAMES)}; clients between 1 and 1000")
    # Each slice adds its ramp and, on PostgreSQL, two statistics waits of 1.1 s: bounded too.
    if args.seconds <= 0 or args.seconds > 600 or not 1 <= args.rounds <= 100:
        parser.error("--seconds must be in (0, 600] and --rounds between 1 and 100")
    if not 0 <= args.level_warm_up <= 60:
        parser.error("--level-warm-up must be in [0, 60]")
    slice_s = args.seconds / args.rounds
    per_level = args.seconds + 3 * args.rounds + 2 * args.level_warm_up
    versions = ", ".join(
        f"{name} {package_version(name)}"
        for name in (
            "handrail",
            "sqlalchemy",
            "uvicorn",
            "uvloop",
            "starlette",
            "fastapi",
            "asyncpg",
        )
    )
    import sqlite3

    if args.before is not None:
        args.before = before_src(args.before)
    print("handrail bench: ask-then-answer cycles under load, against a floor app")
    print(machine_line(f"SQLite {sqlite3.sqlite_version} | {versions}"))
    print(
        f"clients {levels}, {args.seconds:g} s per setup and level in {args.rounds} interleaved "
        f"slices of {slice_s:g} s after {args.level_warm_up:g} s of warm-up at the level; a "
        "cycle = create + prompt turn + answer turn (3 requests)"
    )
    uvloop_ok = package_version("uvloop") != "?"
    with (
        contextlib.ExitStack() as stack,
        tempfile.TemporaryDirectory(prefix="handrail-load-") as tmp,
    ):
        if args.before is not None:
            # The floor and the pg2split control run once: they are not what changed.
            keys = [
                k
                for key in keys
                for k in ([key] if key in ("floor", "pg2split") else [key, key + BEFORE])
            ]
        # How long a server may live (it stops by itself after that, should this script die
        # without stopping it): every setup's levels, the --before ones too, and a margin.
        budget = len(levels) * len(keys) * per_level + 300
        setups = start_setups(keys, Path(tmp), budget, stack, args.before)
        results: dict[tuple[str, int], Slice] = {}
        loop_factory = None
        if uvloop_ok:
            import uvloop

            loop_factory = uvloop.new_event_loop

        async def run() -> None:
            await warm_up(setups)
            if args.trace:
                for setup in setups:
                    if setup.key != "floor":
                        await trace_cycle(setup)
                return
            for level in levels:
                if args.level_warm_up > 0:
                    await warm_up(setups, level, args.level_warm_up)
                slices: dict[str, list[Slice]] = {s.key: [] for s in setups}
                for r in range(args.rounds):
                    order = setups[r % len(setups) :] + setups[: r % len(setups)]
                    if r % 2:
                        order = order[::-1]
                    for setup in order:
                        slices[setup.key].append(await measure(setup, level, slice_s))
                for setup in setups:
                    results[(setup.key, level)] = merge(slices[setup.key])
                print(
                    f"   {level} clients: "
                    + ", ".join(
                        f"{s.key} {rate(results[(s.key, level)]):.0f}/s "
                        f"{cpu_ms(results[(s.key, level)]):.2f} ms CPU"
                        for s in setups
                    ),
                    flush=True,
                )

        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(run())
        if args.trace:
            return 0
        report(setups, levels, results)
        tracebacks = sum(server.tracebacks() for setup in setups for server in setup.servers)
        print(f"\n   tracebacks in the servers' logs: {tracebacks}")
        failed = tracebacks > 0 or any(s.errors for s in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
