"""The run that carries out an answer: built the same way when a process takes the answer
(`Runtime.start_answer`) and when another takes its turn over after a crash (`Recovery`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..asks import AskSurface, PendingAsk
from ..connections.instructions import Snapshot
from ..store import History, StoredRow
from .agent import Agent
from .gate import queued_asks
from .messages import Message, messages_from_json
from .models.base import Model
from .page_tools import PageTools
from .prompting import build_turn_setup
from .rows import Row, rows_to_messages
from .steps import TurnRun
from .turn import Principal, Turn

__all__ = ["answer_run"]


def answer_run(
    turn: Turn,
    history: History,
    rows: Sequence[StoredRow],
    pending: PendingAsk,
    *,
    principal: Principal,
    agent: Agent,
    model: Model,
    surface: AskSurface,
    log_prompt: str,
    metadata: dict[str, Any],
    lease_owner: str,
    page_tools: PageTools | None,
    replay: Sequence[Message] | None = None,
    stored_rows: tuple[Row, ...] | None = None,
) -> TurnRun:
    """The run of the answer to `pending` on `history` (`rows` as read with it): the model sees
    the conversation up to the ask's prompt and what the paused step said, with the connection
    instructions the turn started with; the gate adds what the answer gives the model.
    `replay` is the conversation up to the prompt when the caller has it already (the paused
    turn's own messages, `LastCommits`): then `rows` are not read. `stored_rows` is the data
    of all the history's rows as of `history`'s version, when the caller knows them (kept
    with the turn's last commit for the next prompt)."""
    setup = build_turn_setup(
        agent, model, surface, Snapshot.from_json(pending.connection_instructions)
    )
    prompt_index = pending.prompt_index if pending.prompt_index is not None else len(rows)
    if replay is None:
        replay = rows_to_messages(r.data for r in rows[:prompt_index])
    return TurnRun(
        turn=turn,
        history=history,
        principal=principal,
        agent=agent,
        model=model,
        setup=setup,
        messages=[*replay, *messages_from_json(pending.response_messages or [])],
        turn_start=len(replay),
        prompt_index=prompt_index,
        stored_rows=stored_rows,
        log_prompt=log_prompt,
        metadata=metadata,
        lease_owner=lease_owner,
        page_tools=page_tools,
        queued=queued_asks(pending),
    )
