"""Crash injection: ``kill -9`` a real ``handrail serve`` process at random moments of the
turns that follow committed answers, on both databases, then start another process on the
same database and check what must hold once it has taken the turns over:

- no turn is left holding a lease, and no history's rows and ``pendingAsk`` disagree;
- an answer that was committed is never lost: its ask is answered and the turn has a reply,
  or (when nothing ran after it) the ask is pending again;
- an approved call is never run twice: the ledger has each invoice at most once, and a call
  whose outcome was not recorded is reported ``TOOL_EXECUTION_UNCERTAIN``;
- an answer that was never committed leaves its ask pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
from racing import HEADERS, TOOLS_MODULE, _paused, _ready, _start, _stop

from handrail.store import Store

#: Rounds per database, conversations per round: bounded, about 10 s a database.
ROUNDS: Final = 3
ASKS: Final = 6
LEASE: Final = "1"

SLOW_TOOLS: Final = textwrap.dedent(
    '''
    """The crash test's agent: pay() is consequential and takes a moment, so a kill can land
    before, while or after it runs."""

    import os
    import random
    import time

    from handrail.runtime.agent import Agent
    from handrail.runtime.tools import ToolSet

    ledger = ToolSet("local:ledger", "Ledger")


    @ledger.tool(consequential=True, open_world=False)
    def pay(invoice: str) -> str:
        """Pay an invoice.

        Args:
            invoice: The invoice's number
        """
        with open(os.environ["RACE_LEDGER"] + ".started", "a", encoding="utf-8") as out:
            out.write(f"{invoice}\\n")
        time.sleep(random.uniform(0, 0.15))
        with open(os.environ["RACE_LEDGER"], "a", encoding="utf-8") as out:
            out.write(f"{invoice} {os.getpid()}\\n")
        time.sleep(random.uniform(0, 0.15))
        return f"Paid {invoice}."


    agents = [Agent("racer", instructions="You pay invoices.", tool_sets=[ledger])]
    '''
)


def _config(folder: Path, database_url: str) -> Path:
    (folder / f"{TOOLS_MODULE}.py").write_text(SLOW_TOOLS, encoding="utf-8")
    config = folder / "handrail.yaml"
    config.write_text(
        f"database_url: {database_url!r}\n"
        f"blob_dir: {str(folder / 'blobs')!r}\n"
        f"turn_lease: {LEASE}\n"
        "users:\n  - {id: alice, token_env: ALICE_TOKEN}\n"
        f'agents:\n  - import: "{TOOLS_MODULE}:agents"\n',
        encoding="utf-8",
    )
    return config


async def _round(
    database_url: str, folder: Path, seed: int, *, while_paying: bool = False
) -> list[str]:
    """One round: pause `ASKS` approvals, answer them all, kill the server at a random
    moment (`while_paying`: as soon as a ``pay()`` has begun, so that the kill surely lands
    mid-turn), start another, and return what broke."""
    rng = random.Random(seed)
    config = _config(folder, database_url)
    first = _start(config, folder, f"first-{seed}")
    problems: list[str] = []
    try:
        await _ready(first)
        async with httpx.AsyncClient(headers=HEADERS, timeout=30) as client:
            level = await client.put(
                f"{first.base}/api/permissions/local:ledger", json={"level": "non-consequential"}
            )
            assert level.status_code == 200, level.text
            paused = [await _paused(client, first.base, 2 * i + 1) for i in range(ASKS)]

            async def answer(history_id: str, tool_call_id: str) -> int | None:
                body = {
                    "askResponse": {
                        "toolCallId": tool_call_id,
                        "action": "accept",
                        "content": {"confirmed": True},
                    }
                }
                with contextlib.suppress(httpx.TransportError):
                    url = f"{first.base}/api/histories/{history_id}/turn"
                    return (await client.post(url, json=body)).status_code
                return None

            sent = [asyncio.create_task(answer(h, t)) for h, t, _kind in paused]
            if while_paying:
                await _paying(folder / "ledger.txt.started")
            else:
                await asyncio.sleep(rng.uniform(0.0, 0.35))
            first.process.send_signal(signal.SIGKILL)
            first.process.wait(timeout=30)
            statuses = await asyncio.gather(*sent)
    finally:
        if first.process.poll() is None:
            _stop(first)
    second = _start(config, folder, f"second-{seed}")
    try:
        await _ready(second)
        store = await Store.open(database_url, blob_dir=folder / "blobs")
        try:
            await _settled(store, [h for h, _t, _k in paused])
            ledger = (
                Counter(
                    line.split()[0]
                    for line in (folder / "ledger.txt").read_text().splitlines()
                    if line.strip()
                )
                if (folder / "ledger.txt").exists()
                else Counter()
            )
            for (history_id, tool_call_id, _kind), status in zip(paused, statuses, strict=True):
                problems += await _check(store, history_id, tool_call_id, status, ledger)
        finally:
            await store.close()
    finally:
        _stop(second)
    for log in folder.glob("second-*.log"):
        if "Traceback" in log.read_text(errors="replace"):
            problems.append(f"a traceback in {log.name}")
    return problems


async def _paying(started: Path, seconds: float = 20) -> None:
    """Until a ``pay()`` has begun (it wrote its invoice to `started`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not (started.exists() and started.read_text().strip()):
        if loop.time() > deadline:
            raise AssertionError(f"no pay() began within {seconds} s")
        await asyncio.sleep(0.005)


async def _settled(store: Store, history_ids: list[str], seconds: float = 20) -> None:
    """Wait until no history of the round holds a turn lease (the new process took every
    stopped turn over and finished it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        held = [h for h in history_ids if await store.leases.get(h) is not None]
        if not held:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"turns still leased after {seconds} s: {held}")


async def _check(
    store: Store, history_id: str, approval_id: str, status: int | None, ledger: Counter[str]
) -> list[str]:
    history = await store.histories.get(history_id)
    assert history is not None
    rows = [r.data for r in await store.histories.rows(history_id)]
    gate = next(r for r in rows if r.get("toolCallId") == approval_id and r["type"] == "tool-call")
    held = next(
        r for r in rows if r["type"] == "tool-call" and "ask" not in r and r["toolName"] == "pay"
    )
    invoice = str(held["args"]["invoice"])
    results = [
        r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == held["toolCallId"]
    ]
    problems: list[str] = []
    where = f"{history_id} ({invoice}, answer {status})"
    if ledger[invoice] > 1:
        problems.append(f"{where}: paid {ledger[invoice]} times")
    pending = history.pending_ask
    if pending is not None:
        if pending.tool_call_id != approval_id or gate["ask"]["status"] != "pending":
            problems.append(f"{where}: the pending ask and the rows disagree")
        if results:
            problems.append(f"{where}: pending, yet the held call has a result")
        if status == 200:
            problems.append(f"{where}: the answer was taken (200), yet the ask is pending")
        return problems
    if gate["ask"]["status"] != "answered":
        problems.append(f"{where}: no pending ask, yet the approval is {gate['ask']['status']}")
    if len(results) != 1:
        problems.append(f"{where}: {len(results)} results for the held call")
        return problems
    result: Any = results[0]["result"]
    if result == f"Paid {invoice}.":
        if ledger[invoice] != 1:
            problems.append(f"{where}: reported paid, but the ledger has it {ledger[invoice]}×")
    elif not (isinstance(result, dict) and result.get("code") == "TOOL_EXECUTION_UNCERTAIN"):
        problems.append(f"{where}: unexpected result {result!r}")
    if rows[-1]["type"] != "assistant":
        problems.append(f"{where}: the turn has no reply")
    return problems


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_kill_9_mid_turn_loses_nothing_and_runs_nothing_twice(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    problems: list[str] = []
    takeovers: list[int] = []
    # `ROUNDS` kills at random moments, then one while a payment runs (the random ones may all
    # land before the first answer or after the last turn).
    for seed in range(ROUNDS + 1):
        folder = tmp_path / f"round-{seed}"
        folder.mkdir()
        if backend == "sqlite":
            url = f"sqlite:///{folder / 'handrail.db'}"
        else:
            url = str(request.getfixturevalue("postgres_cluster").new_database_url())
        problems += await _round(url, folder, seed, while_paying=seed == ROUNDS)
        takeovers.append(
            sum(
                log.read_text(errors="replace").count("taking over the turn")
                for log in folder.glob("second-*.log")
            )
        )
    assert problems == []
    assert takeovers[-1] > 0, "the kill while paying left no turn to take over"
