"""An answer tries the history as this process's turn paused it (`LastCommits`) before it reads
the history: the same turn as after a fresh read, and never a refusal that only the copy says."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from doubles import RecordingModel, history_record
from examples import PLAN
from handrail.asks import PendingAsk
from handrail.errors import HistoryNotFound, InvalidAnswer, NotPending
from handrail.runtime.agent import Agent
from handrail.runtime.committed import LAST_COMMIT_MESSAGES, LastCommits
from handrail.runtime.messages import UserMessage
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store
from handrail.store.records import HistoryChange

ALICE = Principal(user_id="alice")
ASK = "ask_choice " + json.dumps(PLAN)


def make_runtime(store: Store, model: Any) -> Runtime:
    return Runtime(store=store, agents=Agent("assistant", instructions="Be brief."), model=model)


async def events_of(turn_coro: Any) -> list[dict[str, Any]]:
    turn = await turn_coro
    return [event async for event in turn.stream()]


def count_loads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loads: list[str] = []
    real = store.histories.load

    async def load(history_id: str) -> Any:
        loads.append(history_id)
        return await real(history_id)

    monkeypatch.setattr(store.histories, "load", load)
    return loads


async def conversation(runtime: Runtime) -> tuple[str, str, list[dict[str, Any]]]:
    """Two turns, the second paused on an ask, then its answer: the history id, the ask's id
    and the answer turn's events."""
    first = await events_of(runtime.start_prompt(ALICE, "hello there"))
    history_id = first[-1]["historyId"]
    paused = await events_of(runtime.start_prompt(ALICE, ASK, history_id=history_id))
    call_id = paused[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    return history_id, call_id, await events_of(runtime.start_answer(ALICE, history_id, answer))


async def test_the_answer_replays_what_a_fresh_read_replays(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept_model, read_model = RecordingModel(), RecordingModel()
    kept = make_runtime(store, kept_model)
    loads = count_loads(store, monkeypatch)
    kept_id, _, kept_events = await conversation(kept)
    # The answer read nothing: the paused turn's commit was the history as it is.
    assert loads == []
    # The paused turn's entry was used once; the answer turn's last commit replaced it, for
    # the next prompt (no ask, every row).
    entry = kept.last_commits.take(kept_id)
    assert entry is not None
    assert entry.history.pending_ask is None
    assert entry.replay is None
    assert entry.rows is not None
    assert [r["type"] for r in entry.rows] == [
        r.data["type"] for r in await store.histories.rows(kept_id)
    ]
    read = make_runtime(store, read_model)
    read.last_commits = LastCommits(0)  # keeps nothing: every answer reads the history
    read_id, _, read_events = await conversation(read)
    assert loads == [read_id]
    await kept.aclose()
    await read.aclose()

    def text(events: list[dict[str, Any]]) -> str:
        return "".join(e["text"] for e in events if "text" in e)

    assert text(kept_events) == text(read_events) != ""
    assert [next(iter(e)) for e in kept_events] == [next(iter(e)) for e in read_events]
    assert kept_events[-1] == {**read_events[-1], "historyId": kept_id}
    # The model saw the same messages (the ids of the calls aside).
    assert len(kept_model.requests) == len(read_model.requests) == 3
    for mine, theirs in zip(kept_model.requests, read_model.requests, strict=True):
        assert [m.kind for m in mine.messages] == [m.kind for m in theirs.messages]
        assert [getattr(m, "text", None) for m in mine.messages] == [
            getattr(m, "text", None) for m in theirs.messages
        ]
    kept_rows = [r.data for r in await store.histories.rows(kept_id)]
    read_rows = [r.data for r in await store.histories.rows(read_id)]
    assert [r["type"] for r in kept_rows] == [r["type"] for r in read_rows]


async def test_a_change_made_elsewhere_is_read_before_the_answer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(store, RecordingModel())
    paused = await events_of(runtime.start_prompt(ALICE, ASK))
    history_id, call_id = paused[0]["historyId"], paused[0]["ask"]["toolCallId"]
    # Another writer (another process, a rename) moved the version on: the copy loses its
    # compare-and-set and the answer goes on from a fresh read.
    await store.histories.update_title(history_id, "Renamed")
    loads = count_loads(store, monkeypatch)
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    events = await events_of(runtime.start_answer(ALICE, history_id, answer))
    assert loads == [history_id]
    assert events[-1] == {"done": True, "historyId": history_id, "title": "Renamed"}
    await runtime.aclose()
    stored = [r.data for r in await store.histories.rows(history_id)]
    assert [r["type"] for r in stored] == ["user", "tool-call", "tool-result", "assistant"]


@pytest.mark.parametrize(
    "content", [{"selected": ["team"]}, {"selected": ["no such option"]}], ids=["valid", "invalid"]
)
async def test_an_ask_resolved_elsewhere_is_not_pending_whatever_the_copy_says(
    store: Store, content: dict[str, Any]
) -> None:
    runtime = make_runtime(store, RecordingModel())
    paused = await events_of(runtime.start_prompt(ALICE, ASK))
    history_id, call_id = paused[0]["historyId"], paused[0]["ask"]["toolCallId"]
    # Another process resolved the ask (its write bumps the version like any other).
    current = await store.histories.get(history_id)
    assert current is not None
    await store.histories.apply(
        history_id,
        HistoryChange(pending_ask=None, ask_status={call_id: "cancelled"}),
        expected_version=current.version,
    )
    answer = {"toolCallId": call_id, "action": "accept", "content": content}
    # A 409 from the fresh read, never the copy's answer (nor its 400 for the invalid one).
    with pytest.raises(NotPending):
        await runtime.start_answer(ALICE, history_id, answer)
    await runtime.aclose()


async def test_an_invalid_answer_on_the_copy_is_refused_as_after_a_read(store: Store) -> None:
    runtime = make_runtime(store, RecordingModel())
    paused = await events_of(runtime.start_prompt(ALICE, ASK))
    history_id, call_id = paused[0]["historyId"], paused[0]["ask"]["toolCallId"]
    bad = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["nope"]}}
    with pytest.raises(InvalidAnswer):
        await runtime.start_answer(ALICE, history_id, bad)
    # The ask stays pending; the next answer reads the history and is taken.
    good = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    events = await events_of(runtime.start_answer(ALICE, history_id, good))
    assert next(iter(events[0])) == "askResolved"
    assert events[-1] == {"done": True, "historyId": history_id, "title": events[-1]["title"]}
    await runtime.aclose()


@pytest.mark.parametrize("change", ["stop", "delete"])
async def test_a_stop_or_delete_in_this_process_is_never_answered_from_the_copy(
    store: Store, change: str
) -> None:
    # The paused turn kept its commit here; this same runtime then stops the conversation (the
    # ask is cancelled) or the history is deleted: the answer is refused as after a read.
    model = RecordingModel()
    runtime = make_runtime(store, model)
    paused = await events_of(runtime.start_prompt(ALICE, ASK))
    history_id, call_id = paused[0]["historyId"], paused[0]["ask"]["toolCallId"]
    assert len(runtime.last_commits) == 1
    if change == "stop":
        stopped = await runtime.stop(ALICE, history_id)
        assert stopped.cancelled_ask == call_id
    else:
        await store.histories.delete(history_id)
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    with pytest.raises(NotPending if change == "stop" else HistoryNotFound):
        await runtime.start_answer(ALICE, history_id, answer)
    assert len(runtime.last_commits) == 0
    await runtime.aclose()
    # Nothing was carried out: the model was called by the paused turn only.
    assert len(model.requests) == 1
    if change == "stop":
        history = await store.histories.get(history_id)
        assert history is not None
        assert history.pending_ask is None


def test_last_commits_keep_the_newest_up_to_their_size() -> None:
    commits = LastCommits(2)
    pending = PendingAsk(tool_call_id="c1", kind="confirm", input={}, simple={}, prompt_index=1)
    for name in ("a", "b", "c"):
        commits.keep(history_record(name, pending), ())
    assert len(commits) == 2
    assert commits.take("a") is None
    taken = commits.take("c")
    assert taken is not None
    assert taken.history.id == "c"
    assert commits.take("c") is None
    assert len(commits) == 1
    # A history that waits on no ask, or on one without its prompt's row, is not kept.
    commits.keep(dataclasses.replace(taken.history, id="d", pending_ask=None), ())
    unplaced = dataclasses.replace(pending, prompt_index=None)
    commits.keep(dataclasses.replace(taken.history, id="e", pending_ask=unplaced), ())
    assert len(commits) == 1
    # Nor one whose answer would replay more than LAST_COMMIT_MESSAGES messages (and its
    # older entry goes).
    long = tuple(UserMessage(text="hi") for _ in range(LAST_COMMIT_MESSAGES + 1))
    commits.keep(dataclasses.replace(taken.history, id="f"), ())
    commits.keep(dataclasses.replace(taken.history, id="f"), long)
    assert commits.take("f") is None
    commits.keep(dataclasses.replace(taken.history, id="g"), long[:LAST_COMMIT_MESSAGES])
    assert commits.take("g") is not None
