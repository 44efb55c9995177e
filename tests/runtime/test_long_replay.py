"""A long history's rows become the model's messages on a thread, not on the event loop: the
loop's part of a turn does not grow with the history (`handrail.runtime.rows.replayed`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from doubles import RecordingModel
from examples import PLAN
from handrail.runtime import answer_run, rows
from handrail.runtime.agent import Agent
from handrail.runtime.committed import LastCommits
from handrail.runtime.messages import Message
from handrail.runtime.rows import THREAD_ROWS, assistant_row, user_row
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store
from handrail.store.records import HistoryChange

ALICE = Principal(user_id="alice")
ASK = "ask_choice " + json.dumps(PLAN)


def threads_of_replays(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Each replay's thread and number of messages."""
    seen: list[tuple[int, int]] = []
    real = rows.rows_to_messages

    def spy(stored: Iterable[Mapping[str, Any]]) -> list[Message]:
        out = real(stored)
        seen.append((threading.get_ident(), len(out)))
        return out

    monkeypatch.setattr(rows, "rows_to_messages", spy)
    monkeypatch.setattr(answer_run, "rows_to_messages", spy)  # a short history's answer
    return seen


async def history_of(store: Store, pairs: int) -> str:
    history = await store.histories.create("alice", agent="assistant")
    talk = [row for i in range(pairs) for row in (user_row(f"q{i}"), assistant_row(f"a{i}"))]
    await store.histories.apply(
        history.id, HistoryChange(append=talk), expected_version=history.version
    )
    return history.id


@pytest.mark.parametrize("pairs", [THREAD_ROWS // 2 - 1, THREAD_ROWS // 2 + 1])
async def test_a_long_history_is_replayed_on_a_thread(
    store: Store, monkeypatch: pytest.MonkeyPatch, pairs: int
) -> None:
    model = RecordingModel()
    runtime = Runtime(store=store, agents=Agent("assistant", instructions="Hi."), model=model)
    runtime.last_commits = LastCommits(0)  # the answer reads the history and replays it
    history_id = await history_of(store, pairs)
    seen = threads_of_replays(monkeypatch)
    loop = threading.get_ident()
    prompt = await runtime.start_prompt(ALICE, ASK, history_id=history_id)
    paused = [e async for e in prompt.stream()]
    call_id = paused[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    answered = await runtime.start_answer(ALICE, history_id, answer)
    done = [e async for e in answered.stream()]
    await runtime.aclose()
    assert "done" in done[-1]
    # The prompt's replay of the rows before it, and the answer's of the rows up to the prompt:
    # on the loop's thread for a short history, on another for a long one.
    assert [count for _, count in seen] == [2 * pairs, 2 * pairs + 1]
    long = 2 * pairs > THREAD_ROWS
    assert [thread != loop for thread, _ in seen] == [long, long]
    # What the model was shown is the whole conversation, on a thread or not.
    first, *_, last = model.requests
    assert [getattr(m, "text", None) for m in first.messages][:2] == ["q0", "a0"]
    assert len(first.messages) == 2 * pairs + 1
    assert len(last.messages) > len(first.messages)
