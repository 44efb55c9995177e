"""A prompt's turn starts from this process's last commit of the history (`LastCommits`) once the
store says nothing a turn starts from changed (`Store.turn_unchanged`): no read when nothing did,
and whatever another process changed meanwhile leads to what a fresh read leads to."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from doubles import RecordingModel, history_record
from examples import PLAN
from handrail.asks import PendingAsk
from handrail.errors import HistoryNotFound, NotOwner
from handrail.runtime.agent import Agent
from handrail.runtime.committed import (
    LAST_COMMIT_MESSAGES,
    LAST_COMMIT_ROWS,
    LastCommits,
)
from handrail.runtime.messages import UserMessage
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import Store, TurnLease
from handrail.store.leases import write_lease
from handrail.store.records import History, HistoryChange

ALICE = Principal(user_id="alice")
ASK = "ask_choice " + json.dumps(PLAN)
NOW = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)


def make_runtime(store: Store, model: Any, *, keep: bool = True) -> Runtime:
    runtime = Runtime(
        store=store,
        agents=Agent("assistant", instructions="Be brief."),
        model=model,
        lease_s=0.05,  # a lease another process holds is waited for 0.15 s, then passed
    )
    if not keep:
        runtime.last_commits = LastCommits(0)  # keeps nothing: every turn reads the history
    return runtime


def spy(store: Store, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Record each `load_turn` (its history id) and `turn_unchanged` (what it said)."""
    calls: dict[str, list[Any]] = {"loads": [], "checks": []}
    load, unchanged = store.load_turn, store.turn_unchanged

    async def load_turn(history_id: str) -> Any:
        calls["loads"].append(history_id)
        return await load(history_id)

    async def turn_unchanged(history_id: str, version: int) -> bool:
        said = await unchanged(history_id, version)
        calls["checks"].append(said)
        return said

    monkeypatch.setattr(store, "load_turn", load_turn)
    monkeypatch.setattr(store, "turn_unchanged", turn_unchanged)
    return calls


async def events_of(turn_coro: Awaitable[Any]) -> list[dict[str, Any]]:
    turn = await turn_coro
    return [event async for event in turn.stream()]


async def created(runtime: Runtime) -> History:
    """A history as ``POST /api/histories`` makes it: stored, and kept by the runtime."""
    history = await runtime.store.histories.create("alice", agent="assistant")
    runtime.last_commits.created(history)
    return history


def seen(model: RecordingModel) -> list[list[tuple[str, Any]]]:
    """What the model was shown, request by request (the calls' ids aside)."""
    return [
        [(m.kind, getattr(m, "text", None)) for m in request.messages] for request in model.requests
    ]


# --- the entries ------------------------------------------------------------------------------


def test_an_entry_for_a_prompt_keeps_every_row_up_to_its_bound() -> None:
    commits = LastCommits(3)
    commits.created(history_record("new"))
    entry = commits.take("new")
    assert entry is not None
    assert entry.rows == ()
    assert entry.replay is None
    # A history that waits on no ask is kept only with its rows, and at most LAST_COMMIT_ROWS.
    row = {"type": "user", "text": "hi"}
    commits.keep(history_record("unknown"))
    commits.keep(history_record("long"), rows=[row] * (LAST_COMMIT_ROWS + 1))
    assert len(commits) == 0
    commits.keep(history_record("full"), rows=[row] * LAST_COMMIT_ROWS)
    full = commits.take("full")
    assert full is not None
    assert full.rows is not None
    assert len(full.rows) == LAST_COMMIT_ROWS
    # A paused one keeps its replay (bounded as before) and its rows only when they fit.
    pending = PendingAsk(tool_call_id="c1", kind="confirm", input={}, simple={}, prompt_index=1)
    replay = (UserMessage(text="hi"),)
    commits.keep(history_record("paused", pending), replay, [row] * (LAST_COMMIT_ROWS + 1))
    paused = commits.take("paused")
    assert paused is not None
    assert paused.replay == replay
    assert paused.rows is None
    commits.keep(history_record("paused", pending), replay * (LAST_COMMIT_MESSAGES + 1), [row])
    assert commits.take("paused") is None
    commits.keep(history_record("paused", pending), None, [row])  # nothing to replay: not kept
    assert commits.take("paused") is None


def test_one_entry_per_history_and_the_oldest_go_first() -> None:
    commits = LastCommits(2)
    row = {"type": "user", "text": "hi"}
    for name in ("a", "b", "c"):
        commits.keep(history_record(name), rows=[row])
    assert len(commits) == 2
    assert commits.take("a") is None
    # A newer commit replaces the older entry; one it cannot keep drops it.
    commits.keep(dataclasses.replace(history_record("b"), version=2), rows=[row, row])
    commits.keep(history_record("c"))
    assert len(commits) == 1
    newer = commits.take("b")
    assert newer is not None
    assert newer.history.version == 2
    assert len(newer.rows or ()) == 2
    commits.keep(history_record("d"), rows=[])
    commits.drop("d")
    assert len(commits) == 0


# --- a prompt on the copy ---------------------------------------------------------------------


async def test_prompts_after_a_create_and_after_a_reply_read_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = spy(store, monkeypatch)

    async def conversation(runtime: Runtime) -> list[list[dict[str, Any]]]:
        history = await created(runtime)
        first = await events_of(runtime.start_prompt(ALICE, "hello there", history_id=history.id))
        paused = await events_of(runtime.start_prompt(ALICE, ASK, history_id=history.id))
        answer = {
            "toolCallId": paused[0]["ask"]["toolCallId"],
            "action": "accept",
            "content": {"selected": ["team"]},
        }
        answered = await events_of(runtime.start_answer(ALICE, history.id, answer))
        again = await events_of(runtime.start_prompt(ALICE, "and now?", history_id=history.id))
        return [first, paused, answered, again]

    kept_model, read_model = RecordingModel(), RecordingModel()
    kept = make_runtime(store, kept_model)
    kept_events = await conversation(kept)
    # Three prompts, each checked and none read: after the create, after a reply, after the
    # answer turn's reply.
    assert calls["loads"] == []
    assert calls["checks"] == [True, True, True]
    read = make_runtime(store, read_model, keep=False)
    read_events = await conversation(read)
    assert len(calls["loads"]) == 3
    await kept.aclose()
    await read.aclose()
    assert seen(kept_model) == seen(read_model)
    assert len(kept_model.requests) == 4
    assert seen(kept_model)[-1][-1] == ("user", "and now?")
    for mine, theirs in zip(kept_events, read_events, strict=True):
        assert [next(iter(e)) for e in mine] == [next(iter(e)) for e in theirs]
        assert "".join(e.get("text", "") for e in mine) == "".join(
            e.get("text", "") for e in theirs
        )


async def _pending_confirmation(other: Store, history: History) -> None:
    await other.confirmations.create(
        history_id=history.id,
        user_id="alice",
        connection_id="api",
        tool_name="send",
        tool_call_id="call_sent",
        request={"method": "POST"},
        digest="d1",
        preview={},
        expires_at=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
    )


async def _lapsed_confirmation(other: Store, history: History) -> None:
    """A confirmation consumed by a process that stopped while sending: its lease lapsed."""
    await _pending_confirmation(other, history)
    (record,) = await other.confirmations.for_history(history.id)
    await other.confirmations.consume(
        record.id, digest="d1", lease_ms=1, now=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    )


async def _lease_elsewhere(other: Store, history: History) -> None:
    """Another process's turn lease, written without the history change that comes with one:
    the check reads the lease itself, not only the version."""
    lease = TurnLease(
        history_id=history.id,
        owner="elsewhere:1:lease",
        until=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
        state={"kind": "prompt", "prompt": "elsewhere"},
        created=dt.datetime.now(dt.UTC),
    )
    await other.db.write(write_lease, lease)


async def _paused_elsewhere(other: Store, history: History) -> None:
    runtime = make_runtime(other, RecordingModel())
    await events_of(runtime.start_prompt(ALICE, ASK, history_id=history.id))
    await runtime.aclose()


async def _replied_elsewhere(other: Store, history: History) -> None:
    runtime = make_runtime(other, RecordingModel())
    await events_of(runtime.start_prompt(ALICE, "said elsewhere", history_id=history.id))
    await runtime.aclose()


async def _renamed(other: Store, history: History) -> None:
    await other.histories.update_title(history.id, "Renamed")


async def _deleted(other: Store, history: History) -> None:
    await other.histories.delete(history.id)


async def _cancelled_by_cas(other: Store, history: History) -> None:
    await other.histories.apply(history.id, HistoryChange(), expected_version=history.version)


#: What another process does between the create and the prompt, and whether the copy still
#: holds (a pending confirmation is nothing a turn reports).
CHANGES: dict[str, tuple[Callable[[Store, History], Awaitable[None]], bool]] = {
    "nothing": (lambda _other, _history: _noop(), True),
    "pending confirmation": (_pending_confirmation, True),
    "lapsed confirmation": (_lapsed_confirmation, False),
    "lease": (_lease_elsewhere, False),
    "paused turn": (_paused_elsewhere, False),
    "finished turn": (_replied_elsewhere, False),
    "renamed": (_renamed, False),
    "deleted": (_deleted, False),
    "empty change": (_cancelled_by_cas, False),
}


def _code(row: dict[str, Any]) -> Any:
    result = row.get("result")
    return result.get("code") if isinstance(result, dict) else None


async def _noop() -> None:
    return None


async def _outcome(
    store: Store,
    other: Store,
    change: str,
    principal: Principal,
    *,
    keep: bool,
    caplog: pytest.LogCaptureFixture,
) -> dict[str, Any]:
    """Create a history here, let `other` make `change`, then prompt it here: what came of it
    (the refusal, or the events, the rows and what the model was shown), the ids aside."""
    model = RecordingModel()
    runtime = make_runtime(store, model, keep=keep)
    history = await created(runtime)
    await CHANGES[change][0](other, history)
    caplog.clear()
    try:
        events = await events_of(runtime.start_prompt(principal, "mine", history_id=history.id))
    except (HistoryNotFound, NotOwner) as exc:
        await runtime.aclose()
        return {"refused": type(exc).__name__}
    await runtime.aclose()
    rows = [r.data for r in await store.histories.rows(history.id)]
    return {
        "events": [(next(iter(e)), e.get("text"), e.get("title")) for e in events],
        "rows": [(r["type"], r.get("text"), r.get("isError"), _code(r)) for r in rows],
        "seen": seen(model),
        "waited": any("kept its lease" in r.getMessage() for r in caplog.records),
    }


@pytest.mark.parametrize("change", list(CHANGES))
async def test_a_change_made_elsewhere_leads_where_a_fresh_read_leads(
    store: Store,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    change: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="handrail.runtime")
    other = await Store.open(database_url, blob_dir=tmp_path / "other")  # another process
    try:
        calls = spy(store, monkeypatch)
        kept = await _outcome(store, other, change, ALICE, keep=True, caplog=caplog)
        holds = CHANGES[change][1]
        # Checked once; read only when the check failed.
        assert calls["checks"] == [holds]
        assert (calls["loads"] == []) is holds
        read = await _outcome(store, other, change, ALICE, keep=False, caplog=caplog)
    finally:
        await other.close()
    assert kept == read
    # What a fresh read made of each change (so that the comparison compares something).
    if change == "deleted":
        assert kept == {"refused": "HistoryNotFound"}
        return
    last_seen = kept["seen"][0]
    assert last_seen[-1] == ("user", "mine")
    types = [r[0] for r in kept["rows"]]
    if change == "paused turn":
        # The other process's ask was cancelled by this message (user_sent_message).
        assert ("askResolved", None, None) in kept["events"]
        assert types == ["user", "tool-call", "tool-result", "user", "assistant"]
        assert ("user", ASK) in last_seen
    elif change == "finished turn":
        assert ("user", "said elsewhere") in last_seen
        assert types == ["user", "assistant", "user", "assistant"]
    elif change == "lapsed confirmation":
        assert kept["rows"][0][0] == "tool-result"
        assert kept["rows"][0][2] is True
        assert kept["rows"][0][3] == "TOOL_EXECUTION_UNCERTAIN"
    elif change == "renamed":
        assert kept["events"][-1] == ("done", None, "Renamed")
    else:
        assert types == ["user", "assistant"]
    assert kept["waited"] is (change == "lease")


async def test_another_user_is_refused_as_after_a_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = spy(store, monkeypatch)
    runtime = make_runtime(store, RecordingModel())
    history = await created(runtime)
    with pytest.raises(NotOwner):
        await runtime.start_prompt(Principal(user_id="bob"), "mine", history_id=history.id)
    # Refused on a fresh read, not on the copy (which it does not even check).
    assert calls == {"loads": [history.id], "checks": []}
    await runtime.aclose()


# --- the check --------------------------------------------------------------------------------


async def test_turn_unchanged_reads_the_version_the_lease_and_the_confirmations(
    store: Store,
) -> None:
    history = await store.histories.create("alice", agent="assistant")
    neighbour = await store.histories.create("alice", agent="assistant")
    assert await store.turn_unchanged(history.id, history.version)
    assert not await store.turn_unchanged(history.id, history.version + 1)
    assert not await store.turn_unchanged("no such history", 1)
    # Another history's lease and confirmations are not this one's.
    await _lease_elsewhere(store, neighbour)
    await _lapsed_confirmation(store, neighbour)
    assert await store.turn_unchanged(history.id, history.version)
    await _pending_confirmation(store, history)
    assert await store.turn_unchanged(history.id, history.version)
    (record,) = await store.confirmations.for_history(history.id)
    await store.confirmations.consume(record.id, digest="d1", lease_ms=60_000)
    assert not await store.turn_unchanged(history.id, history.version)  # being sent
    await store.confirmations.finish(record.id, state="succeeded", outcome={})
    assert await store.turn_unchanged(history.id, history.version)
    await _lease_elsewhere(store, history)
    assert not await store.turn_unchanged(history.id, history.version)
    await store.leases.release(history.id, "elsewhere:1:lease")
    assert await store.turn_unchanged(history.id, history.version)
    await store.histories.delete(history.id)
    assert not await store.turn_unchanged(history.id, history.version)
    assert not await store.turn_unchanged(history.id, history.version + 1)
