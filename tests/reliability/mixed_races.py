"""Everything at once on one conversation, in process: the harness of ``test_mixed_races.py``
and ``bench/reliability.py``.

Each round pauses one conversation of alice's (on the plan ask, or on the approval of the demo
agent's ``delete_note``), then sends, all at the same time and in a shuffled order: the answer
through the headless turn, another answer through ``POST /prompt``, the card's button, a new
message, a title change, a read and (every third round) a delete. What must hold: no 5xx, no
error in the log, and, on a conversation still there, the ask was settled exactly once (one
answer took it, or the message cancelled it), its rows hold that one result, and what the
conversation waits on now is an ask whose row says pending.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from fuzzing import LogCapture
from server_helpers import Api, command

from handrail.demo.agent import PLAN_PICKER

__all__ = ["MixedFigures", "mixed_races"]

ANSWERS: Final = (
    {"action": "accept", "content": {"selected": ["team"]}},
    {"action": "accept", "content": {"selected": ["starter"]}},
)
APPROVALS: Final = (
    {"action": "accept", "content": {"confirmed": True}},
    {"action": "accept", "content": {"confirmed": False}},
)


@dataclass
class MixedFigures:
    rounds: int = 0
    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    settled: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


async def _round(api: Api, index: int, figures: MixedFigures, rng: random.Random) -> None:
    approval = index % 2 == 1
    if approval:
        paused = await api.say(command("call delete_note", {"title": "Old draft"}))
    else:
        paused = await api.say(command("ask_choice", dict(PLAN_PICKER)))
    history_id, tool_call_id = paused.history_id, paused.ask["toolCallId"]
    first, second = APPROVALS if approval else ANSWERS
    button = "approve" if approval else "option:team"
    calls: dict[str, Any] = {
        "turn answer": api.post(
            f"/histories/{history_id}/turn", {"askResponse": {"toolCallId": tool_call_id, **first}}
        ),
        "prompt answer": api.post(
            "/prompt",
            {"historyId": history_id, "askResponse": {"toolCallId": tool_call_id, **second}},
        ),
        "button": api.post(
            f"/histories/{history_id}/turn", {"toolCallId": tool_call_id, "buttonId": button}
        ),
        "message": api.post("/prompt", {"historyId": history_id, "prompt": "never mind"}),
        "title": api.request("PATCH", f"/histories/{history_id}", json={"title": "Renamed"}),
        "read": api.get(f"/histories/{history_id}"),
    }
    deletes = index % 3 == 2
    if deletes:
        calls["delete"] = api.request("DELETE", f"/histories/{history_id}")
    names = list(calls)
    rng.shuffle(names)
    responses: list[httpx.Response] = await asyncio.gather(*(calls[n] for n in names))
    by_name = dict(zip(names, responses, strict=True))
    for name, response in by_name.items():
        figures.requests += 1
        figures.statuses[f"{name} {response.status_code}"] += 1
        if response.status_code >= 500:
            figures.problems.append(f"{name}: {response.status_code} {response.text[:200]}")
    if deletes:
        return
    read = await api.get(f"/histories/{history_id}")
    if read.status_code != 200:
        figures.problems.append(f"{history_id} reads {read.status_code}")
        return
    _check_settled(read.json()["data"], tool_call_id, by_name, figures)


def _check_settled(
    history: dict[str, Any],
    tool_call_id: str,
    by_name: dict[str, httpx.Response],
    figures: MixedFigures,
) -> None:
    rows = history["rows"]
    where = f"ask {tool_call_id} of {history['id']}"
    results = [r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == tool_call_id]
    won = [n for n in ("turn answer", "prompt answer", "button") if by_name[n].status_code == 200]
    cancelled = [r for r in results if r["result"].get("reason") == "user_sent_message"]
    if len(results) != 1:
        figures.problems.append(f"{where}: {len(results)} results in the rows")
    if len(won) + len(cancelled) != 1:
        figures.problems.append(f"{where}: answers {won} won, {len(cancelled)} cancels")
    figures.settled["cancelled" if cancelled else "answered"] += 1
    asks = {r["toolCallId"]: r["ask"]["status"] for r in rows if "ask" in r}
    if asks.get(tool_call_id) == "pending":
        figures.problems.append(f"{where}: its row still says pending")
    pending = history["pendingAsk"]
    if pending is not None and asks.get(pending["toolCallId"]) != "pending":
        figures.problems.append(f"{where}: waits on {pending['toolCallId']}, not pending")
    held = [r for r in rows if r["type"] == "tool-call" and "ask" not in r]
    for call in held:
        ran = [
            r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == call["toolCallId"]
        ]
        if len(ran) > 1:
            figures.problems.append(f"{where}: {call['toolName']} has {len(ran)} results")


async def mixed_races(api: Api, rounds: int, *, seed: int = 0) -> MixedFigures:
    """`rounds` rounds (see the module docstring) on `api`, whose agent is the demo agent."""
    saved = await api.request(
        "PUT", "/permissions/local:notes", json={"level": "non-consequential"}
    )
    assert saved.status_code == 200, saved.text
    figures = MixedFigures(rounds=rounds)
    rng = random.Random(seed)
    with LogCapture() as logs:
        for index in range(rounds):
            await _round(api, index, figures, rng)
    figures.problems += [f"logged: {r.getMessage()[:200]}" for r in logs.records]
    return figures
