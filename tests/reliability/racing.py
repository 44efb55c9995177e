"""Racing answers across two server processes on one PostgreSQL database: the harness of
``test_racing_processes.py`` and ``bench/reliability.py``.

`two_servers` starts two ``handrail serve`` processes on loopback with one configuration: the
database, alice, and an agent (imported from a module written beside the configuration) whose
one tool, ``pay``, is consequential, so each call waits on an approval, and appends a line
``<invoice> <pid>`` to a ledger file when it runs. `race_answers` pauses conversations, half on
the plan ask and half on an approval of ``pay``, then sends each ask two answers at the same
time, one to each process (the headless turn to the first; the turn or, for every other ask,
``POST /prompt`` to the second), and checks what must hold: exactly one 200 and one 409 ``This
ask is no longer pending`` per ask, the ask's rows show exactly one answer (the winner's), and
each approved ``pay`` ran once, in the process that won.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
from server_helpers import TOKENS, command

from demo_server import free_port
from handrail.demo.agent import PLAN_PICKER

__all__ = ["RaceFigures", "Server", "race_answers", "two_servers"]

TOOLS_MODULE: Final = "handrail_race_tools"
TOOLS_SOURCE: Final = textwrap.dedent(
    '''
    """The racing test's agent: pay() is consequential, so it waits on an approval;
    wait_long() takes its time (a turn to stop from another process)."""

    import asyncio
    import os

    from handrail.runtime.agent import Agent
    from handrail.runtime.tools import ToolSet

    ledger = ToolSet("local:ledger", "Ledger")


    @ledger.tool(consequential=True, open_world=False)
    def pay(invoice: str) -> str:
        """Pay an invoice.

        Args:
            invoice: The invoice's number
        """
        with open(os.environ["RACE_LEDGER"], "a", encoding="utf-8") as out:
            out.write(f"{invoice} {os.getpid()}\\n")
        return f"Paid {invoice}."


    @ledger.tool(title="Wait a long time", read_only=True, open_world=False)
    async def wait_long(seconds: int) -> str:
        """Wait, then say so.

        Args:
            seconds: How long to wait
        """
        await asyncio.sleep(seconds)
        return "Waited."


    agents = [Agent("racer", instructions="You pay invoices.", tool_sets=[ledger])]
    '''
)
HEADERS: Final = {"Authorization": f"Bearer {TOKENS['alice']}"}
NOT_PENDING: Final = "This ask is no longer pending"


@dataclass
class Server:
    """One ``handrail serve`` process."""

    base: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class RaceFigures:
    """What a race run saw; `problems` lists what must not happen."""

    asks: int = 0
    won: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    max_latency: float = 0.0
    problems: list[str] = field(default_factory=list)
    #: Which server (0 or 1) won, by history id.
    winners: dict[str, int] = field(default_factory=dict)


def _config(folder: Path, database_url: str, extra: str = "") -> Path:
    (folder / f"{TOOLS_MODULE}.py").write_text(TOOLS_SOURCE, encoding="utf-8")
    config = folder / "handrail.yaml"
    config.write_text(
        f"database_url: {database_url!r}\n"
        f"blob_dir: {str(folder / 'blobs')!r}\n"
        "users:\n  - {id: alice, token_env: ALICE_TOKEN}\n"
        f'agents:\n  - import: "{TOOLS_MODULE}:agents"\n' + extra,
        encoding="utf-8",
    )
    return config


def _start(config: Path, folder: Path, name: str) -> Server:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env["ALICE_TOKEN"] = TOKENS["alice"]
    env["RACE_LEDGER"] = str(folder / "ledger.txt")
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *sys.path])
    log = folder / f"{name}.log"
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
    return Server(base=f"http://127.0.0.1:{port}", process=process, log=log)


async def _ready(server: Server, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise AssertionError(f"the server exited:\n{server.log.read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(server.base + "/openapi.json")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise AssertionError(f"the server did not start:\n{server.log.read_text()}")


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


@contextlib.asynccontextmanager
async def two_servers(
    database_url: str, folder: Path, *, settings: str = ""
) -> AsyncIterator[tuple[Server, Server]]:
    """Two ``handrail serve`` processes on `database_url`, started at the same time (so both
    migrate the empty database at once), stopped at the end. `settings` are more lines of
    the configuration file (``turn_lease: 2``)."""
    config = _config(folder, database_url, settings)
    servers = (_start(config, folder, "one"), _start(config, folder, "two"))
    try:
        await asyncio.gather(*(_ready(server) for server in servers))
        yield servers
    finally:
        for server in servers:
            _stop(server)


async def _turn(client: httpx.AsyncClient, base: str, history_id: str, body: Any) -> Any:
    response = await client.post(f"{base}/api/histories/{history_id}/turn", json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def _paused(client: httpx.AsyncClient, base: str, index: int) -> tuple[str, str, str]:
    """A conversation paused on the plan ask (even `index`) or on the approval of paying
    invoice ``inv-<index>`` (odd): its id, the ask's toolCallId and the ask's kind."""
    created = await client.post(f"{base}/api/histories", json={})
    assert created.status_code == 201, created.text
    history_id = created.json()["data"]["id"]
    if index % 2 == 0:
        prompt = command("ask_choice", dict(PLAN_PICKER))
    else:
        prompt = command("call pay", {"invoice": f"inv-{index}"})
    data = await _turn(client, base, history_id, {"prompt": prompt})
    pending = data.get("pendingAsk")
    assert pending, data
    return history_id, pending["toolCallId"], "choice" if index % 2 == 0 else "approval"


def _answer(kind: str, server: int) -> dict[str, Any]:
    if kind == "choice":
        return {"action": "accept", "content": {"selected": ["team" if server == 0 else "starter"]}}
    return {"action": "accept", "content": {"confirmed": True}}


async def race_answers(
    database_url: str, folder: Path, *, asks: int = 20, concurrency: int = 10
) -> RaceFigures:
    """Start `two_servers`, pause `asks` conversations, race two answers at each, and check
    (see the module docstring)."""
    figures = RaceFigures(asks=asks)
    async with two_servers(database_url, folder) as servers:
        limits = httpx.Limits(max_connections=2 * concurrency + 4)
        async with httpx.AsyncClient(headers=HEADERS, timeout=120, limits=limits) as client:
            first = servers[0].base
            level = await client.put(
                f"{first}/api/permissions/local:ledger", json={"level": "non-consequential"}
            )
            assert level.status_code == 200, level.text
            gate = asyncio.Semaphore(concurrency)

            async def pause(index: int) -> tuple[str, str, str]:
                async with gate:
                    return await _paused(client, servers[index % 2].base, index)

            paused = await asyncio.gather(*(pause(i) for i in range(asks)))

            async def race(history_id: str, tool_call_id: str, kind: str) -> None:
                async with gate:
                    await _race_one(client, servers, history_id, tool_call_id, kind, figures)

            await asyncio.gather(*(race(*one) for one in paused))
            pids = {str(server.process.pid): index for index, server in enumerate(servers)}
            _check_ledger(folder / "ledger.txt", paused, pids, figures)
    for server in servers:
        if "Traceback" in server.log.read_text(errors="replace"):
            figures.problems.append(f"a traceback in {server.log.name}")
    return figures


async def _race_one(
    client: httpx.AsyncClient,
    servers: tuple[Server, Server],
    history_id: str,
    tool_call_id: str,
    kind: str,
    figures: RaceFigures,
) -> None:
    # The second server gets every other answer through POST /prompt (its SSE stream) rather
    # than the headless turn, so both answer routes race.
    by_prompt = int(history_id, 16) % 2 == 1

    async def send(index: int) -> tuple[httpx.Response, float]:
        answer = {"toolCallId": tool_call_id, **_answer(kind, index)}
        base = servers[index].base
        started = time.perf_counter()
        if index == 1 and by_prompt:
            body = {"historyId": history_id, "askResponse": answer}
            response = await client.post(f"{base}/api/prompt", json=body)
        else:
            body = {"askResponse": answer}
            response = await client.post(f"{base}/api/histories/{history_id}/turn", json=body)
        return response, time.perf_counter() - started

    results = await asyncio.gather(send(0), send(1))
    statuses = [response.status_code for response, _ in results]
    figures.max_latency = max(figures.max_latency, *(elapsed for _, elapsed in results))
    for status in statuses:
        figures.statuses[str(status)] += 1
    where = f"{kind} ask {tool_call_id} of {history_id}"
    if sorted(statuses) != [200, 409]:
        figures.problems.append(f"{where}: {statuses}")
        return
    winner = statuses.index(200)
    figures.won["one" if winner == 0 else "two"] += 1
    loser = results[1 - winner][0]
    if loser.json().get("title") != NOT_PENDING:
        figures.problems.append(f"{where}: the loser got {loser.text[:200]}")
    read = await client.get(f"{servers[0].base}/api/histories/{history_id}")
    data = read.json()["data"]
    rows = data["rows"]
    answers = [r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == tool_call_id]
    if len(answers) != 1:
        figures.problems.append(f"{where}: {len(answers)} answers in the rows")
    elif answers[0]["result"] != _answer(kind, winner):
        figures.problems.append(f"{where}: the rows hold {answers[0]['result']}, not the winner's")
    if data["pendingAsk"] is not None:
        figures.problems.append(f"{where}: still pending after the race")
    if kind == "approval":
        held = {r["toolCallId"] for r in rows if r["type"] == "tool-call" and "ask" not in r}
        paid = [r for r in rows if r["type"] == "tool-result" and r["toolCallId"] in held]
        if len(held) != 1 or len(paid) != 1:
            figures.problems.append(f"{where}: {len(held)} held calls, {len(paid)} results")
    figures.winners[history_id] = winner


def _check_ledger(
    ledger: Path,
    paused: list[tuple[str, str, str]],
    pids: dict[str, int],
    figures: RaceFigures,
) -> None:
    lines = ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []
    ran = Counter(line.split()[0] for line in lines)
    for index, (history_id, _tool_call_id, kind) in enumerate(paused):
        if kind != "approval":
            continue
        invoice = f"inv-{index}"
        if ran[invoice] != 1:
            figures.problems.append(f"pay({invoice}) ran {ran[invoice]} times")
            continue
        pid = next(line.split()[1] for line in lines if line.split()[0] == invoice)
        winner = figures.winners.get(history_id)
        if winner is not None and pids.get(pid) != winner:
            figures.problems.append(f"pay({invoice}) ran in the process that lost")
