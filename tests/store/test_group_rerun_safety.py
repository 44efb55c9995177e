"""The store's writes run again without harm (SQLite group commit, `Database._write_group`).

A write queued in a group with one that fails later runs twice: its first run is rolled back
with the group, the second commits (each in a savepoint then). A group whose commit fails runs
again write by write. Each test here puts a store operation in such a group on a real SQLite
database, checks that its work did run twice, and that the database, the operation's result
and the objects the caller passed in are as one run leaves them, and that what it publishes
goes out once.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy import Connection, select, text
from sqlalchemy.exc import IntegrityError

from handrail._util import new_id, utc_now
from handrail.asks import PendingAsk
from handrail.store import (
    BlobMissing,
    ConfirmationRecord,
    History,
    HistoryChange,
    ReleaseLease,
    Store,
    TurnLease,
    UserEvent,
    audit,
    confirmations,
    connections,
    files,
    histories,
    leases,
    outbox,
    permissions,
    request_record,
    running,
    tables,
)
from handrail.store import requests as request_log
from handrail.store.audit import audit_record
from handrail.store.connections import ConnectionRecord, ConnectionRepo
from handrail.store.outbox import AnswerLink, DeliveryRepo, new_delivery
from handrail.store.running import RunningTurn

HOLD = dt.timedelta(minutes=2)
AUDIT = tables.activity.c


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store on a SQLite file (the writer thread groups its writes)."""
    opened = await Store.open(f"sqlite:///{tmp_path / 'rerun.db'}", blob_dir=tmp_path / "blobs")
    try:
        yield opened
    finally:
        await opened.close()


class SiblingFailed(Exception):
    """The write queued after the ones under test: it fails, so they run again."""


def _hold(connection: Connection, started: threading.Event, go: threading.Event) -> None:
    """Holds the writer thread until `go`, so that the writes sent meanwhile queue up."""
    started.set()
    assert go.wait(10)


def _look_then_fail(
    connection: Connection, look: Callable[[Connection], Any] | None, seen: list[Any]
) -> None:
    """What `look` finds in the group's transaction (the writes before this one ran), then a
    failure: the group is rolled back and the writes before this one run again."""
    if look is not None:
        seen.append(look(connection))
    raise SiblingFailed


async def _sent(store: Store, call: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
    """`call` started, once the write it makes is in the writer's queue."""
    writer = store.db._writer
    assert writer is not None
    before = writer._sent
    future = asyncio.ensure_future(call)
    for _ in range(2000):
        if writer._sent > before or future.done():
            break
        await asyncio.sleep(0.001)
    assert writer._sent > before, "the call sent no write"
    return future


async def _grouped(
    store: Store,
    calls: list[Coroutine[Any, Any, Any]],
    last: Callable[..., Any],
    *args: Any,
) -> tuple[list[Any], BaseException]:
    """Run `calls` (store operations, each one write) so that their writes reach the writer
    in one group, in order, followed by ``last(*args)`` (a failing write); the calls'
    results (or errors) and the last one's error."""
    started, go = threading.Event(), threading.Event()
    held = asyncio.ensure_future(store.db.write(_hold, started, go))
    await asyncio.to_thread(started.wait, 10)
    try:
        futures = [await _sent(store, call) for call in calls]
        failing = await _sent(store, store.db.write(last, *args))
        for future in [*futures, failing]:
            assert not future.done()  # nobody hears of anything before the commit
    finally:
        go.set()
        await held
    results = await asyncio.gather(*futures, return_exceptions=True)
    try:
        await failing
    except Exception as error:
        return results, error
    pytest.fail("the last write did not fail")


async def _beside_a_failing_write(
    store: Store,
    calls: list[Coroutine[Any, Any, Any]],
    look: Callable[[Connection], Any] | None = None,
) -> tuple[list[Any], list[Any]]:
    """`_grouped` with a last write that fails after reading what the calls' first run wrote
    (with `look`); the calls' results and what `look` found."""
    seen: list[Any] = []
    results, error = await _grouped(store, calls, _look_then_fail, look, seen)
    assert isinstance(error, SiblingFailed)
    return results, seen


def _counted(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str, *, copied: bool = False
) -> list[tuple[Any, ...]]:
    """The arguments (after the connection) of each run of the work `module.name`, from now
    on; with `copied`, a deep copy of them as the run began (for plain data: the arguments
    of two runs then compare equal when the first run changed none of them)."""
    work = getattr(module, name)
    runs: list[tuple[Any, ...]] = []

    def counted(connection: Connection, *args: Any, **kwargs: Any) -> Any:
        runs.append(copy.deepcopy(args) if copied else args)
        return work(connection, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return runs


def _all(table: Any, *where: Any) -> Callable[[Connection], list[dict[str, Any]]]:
    """A work that reads every row of `table` (where `where` holds), decoded."""

    def read(connection: Connection) -> list[dict[str, Any]]:
        query = select(table).where(*where)
        return [dict(row._mapping) for row in connection.execute(query)]

    return read


def _history_row(history_id: str) -> Callable[[Connection], dict[str, Any]]:
    def read(connection: Connection) -> dict[str, Any]:
        query = select(tables.histories).where(tables.histories.c.id == history_id)
        row = connection.execute(query).one()
        return dict(row._mapping)

    return read


# --- rows, asks and events ----------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "text": text}


def ask_call(tool_call_id: str, status: str = "pending") -> dict[str, Any]:
    return {
        "type": "tool-call",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "args": {"question": "Which plan?"},
        "ask": {"kind": "choice", "status": status},
    }


def ask_result(tool_call_id: str) -> dict[str, Any]:
    return {
        "type": "tool-result",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "result": {"action": "accept"},
    }


def pending_ask(tool_call_id: str) -> PendingAsk:
    """An ask with a clock and approvers: it has an open gate."""
    return PendingAsk.from_json(
        {
            "toolCallId": tool_call_id,
            "kind": "choice",
            "input": {"title": "Which plan?"},
            "simple": {"buttons": []},
            "created": "2026-03-01T10:00:00.000Z",
            "expiresAt": "2026-03-02T10:00:00.000Z",
            "remindAt": "2026-03-01T12:00:00.000Z",
            "approvers": ["bob"],
        }
    )


def event(kind: Any, history_id: str) -> UserEvent:
    return UserEvent(kind=kind, user_id="alice", history_id=history_id, data={"n": 1})


async def _history(store: Store) -> History:
    """A history of alice's at version 2: a message, an answered ask c1 with its result."""
    made = await store.histories.create("alice", agent="demo")
    start = HistoryChange(append=[user("plan"), ask_call("c1", "answered"), ask_result("c1")])
    return await store.histories.apply(made.id, start, expected_version=1)


def _full_change(history_id: str) -> tuple[HistoryChange, Any]:
    """A change that writes everything `apply` writes, and the request log entry with it."""
    now = utc_now()
    change = HistoryChange(
        append=[user("go on"), ask_call("c2")],
        ask_status={"c1": "cancelled", "c2": "pending"},
        remove_results=["c1"],
        pending_ask=pending_ask("c2"),
        title="Plans",
        lease=TurnLease(
            history_id=history_id,
            owner="process-1",
            until=now + HOLD,
            state={"step": 1, "calls": ["c2"]},
            created=now,
        ),
        audit=[
            audit_record(
                actor="alice",
                action="gate.asked",
                subject="c2",
                changes={"approvers": ["bob"]},
                history_id=history_id,
                owner_id="alice",
                tool="ask_choice",
            ),
            audit_record(
                actor="alice",
                action="gate.cancelled",
                subject="c1",
                changes={},
                history_id=history_id,
                owner_id="alice",
            ),
        ],
        events=[event("ask.created", history_id), event("history.renamed", history_id)],
    )
    log = request_record(
        history_id=history_id,
        owner_id="alice",
        prompt="go on",
        response="asking",
        model="demo",
        metadata={"ask": {"phase": "asked"}},
    )
    return change, log


async def _check_full_change(
    store: Store, history: History, change: HistoryChange, log: Any, result: Any
) -> None:
    """The database and `result` are what one run of `_full_change` on `history` gives."""
    assert isinstance(result, History)
    assert (result.version, result.title) == (3, "Plans")
    assert result.pending_ask == change.pending_ask
    assert await store.histories.get(history.id) == result
    stored = await store.db.read(_history_row(history.id))
    # Three rows before, two appended: a change that ran twice would have counted four.
    assert (stored["version"], stored["next_seq"]) == (3, 5)
    rows = await store.histories.rows(history.id)
    assert [(r.seq, r.data["type"], r.data.get("toolCallId")) for r in rows] == [
        (0, "user", None),
        (1, "tool-call", "c1"),
        (3, "user", None),
        (4, "tool-call", "c2"),
    ]
    assert [r.data["ask"]["status"] for r in rows if "ask" in r.data] == ["cancelled", "pending"]
    [lease] = await store.db.read(_all(tables.turn_leases))
    assert lease["history_id"] == history.id
    assert (lease["owner"], lease["state"]) == ("process-1", {"step": 1, "calls": ["c2"]})
    [gate] = await store.db.read(_all(tables.open_gates))
    assert (gate["history_id"], gate["ask_id"], gate["approvers"]) == (history.id, "c2", ["bob"])
    written = await store.db.read(_all(tables.activity, AUDIT.history_id == history.id))
    assert sorted(r["id"] for r in written) == sorted(r.id for r in change.audit)
    kept = await store.db.read(_all(tables.outbox_events))
    assert [r["id"] for r in kept] == [change.events[0].id]
    logged = await store.db.read(_all(tables.requests))
    assert [(r["id"], r["metadata"]) for r in logged] == [(log.id, {"ask": {"phase": "asked"}})]


async def test_apply_with_everything_runs_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.outbox.keep(["ask.created"])
    history = await _history(store)
    change, log = _full_change(history.id)
    before = copy.deepcopy((change, log))
    heard = store.events.open("alice")
    runs = _counted(monkeypatch, histories, "_apply", copied=True)

    def look(connection: Connection) -> tuple[int, int, int]:
        row = _history_row(history.id)(connection)
        return row["version"], row["next_seq"], len(_all(tables.activity)(connection))

    [result], seen = await _beside_a_failing_write(
        store, [store.histories.apply(history.id, change, expected_version=2, log=log)], look
    )
    # The first run wrote (the failing write saw it), was rolled back, and ran again.
    assert seen == [(3, 5, 2)]
    assert len(runs) == 2
    assert runs[0] == runs[1]  # the first run changed none of its arguments
    await _check_full_change(store, history, change, log, result)
    # Nothing the caller passed in was changed by either run.
    assert (change, log) == before
    assert change.append == [user("go on"), ask_call("c2")]
    # The change's events were published once, after the commit.
    got = [await heard.get(timeout=1) for _ in range(2)]
    assert [e.id if e else None for e in got] == [e.id for e in change.events]
    assert await heard.get(timeout=0.1) is None


def _create_child(connection: Connection) -> None:
    connection.execute(
        text(
            "CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT NOT NULL"
            " REFERENCES histories (id) DEFERRABLE INITIALLY DEFERRED)"
        )
    )


def _break_the_commit(connection: Connection) -> None:
    """An insert that breaks a deferred foreign key: SQLite refuses the group's ``COMMIT``."""
    connection.execute(text("INSERT INTO child (id, parent) VALUES ('x', 'no such history')"))


async def test_apply_in_a_group_whose_commit_fails_runs_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.outbox.keep(["ask.created"])
    await store.db.write(_create_child)
    history = await _history(store)
    change, log = _full_change(history.id)
    before = copy.deepcopy((change, log))
    heard = store.events.open("alice")
    runs = _counted(monkeypatch, histories, "_apply", copied=True)
    [result], error = await _grouped(
        store,
        [store.histories.apply(history.id, change, expected_version=2, log=log)],
        _break_the_commit,
    )
    # The group's commit failed; each write ran again in a transaction of its own.
    assert isinstance(error, IntegrityError)
    assert len(runs) == 2
    assert runs[0] == runs[1]
    await _check_full_change(store, history, change, log, result)
    assert (change, log) == before
    got = [await heard.get(timeout=1) for _ in range(2)]
    assert [e.id if e else None for e in got] == [e.id for e in change.events]
    assert await heard.get(timeout=0.1) is None


async def test_two_applies_of_one_history_in_a_failing_group_each_win_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two changes of one history in a group: the second's compare-and-set reads what the
    first wrote, in both runs."""
    history = await _history(store)
    runs = _counted(monkeypatch, histories, "_apply", copied=True)
    first = HistoryChange(append=[user("one")], title="One")
    second = HistoryChange(append=[user("two")], title="Two")
    results, _ = await _beside_a_failing_write(
        store,
        [
            store.histories.apply(history.id, first, expected_version=2),
            store.histories.apply(history.id, second, expected_version=3),
        ],
    )
    assert len(runs) == 4
    assert runs[:2] == runs[2:]
    assert [(r.version, r.title) for r in results] == [(3, "One"), (4, "Two")]
    stored = await store.db.read(_history_row(history.id))
    assert (stored["version"], stored["next_seq"], stored["title"]) == (4, 5, "Two")
    rows = await store.histories.rows(history.id)
    assert [r.data.get("text") for r in rows[-2:]] == ["one", "two"]
    assert [r.seq for r in rows] == [0, 1, 2, 3, 4]


async def test_apply_that_releases_its_lease_runs_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release's check (the lease is still the owner's) holds in the second run too: the
    first run's delete was rolled back."""
    history = await _history(store)
    now = utc_now()
    lease = TurnLease(
        history_id=history.id, owner="process-1", until=now + HOLD, state={}, created=now
    )
    await store.histories.apply(history.id, HistoryChange(lease=lease), expected_version=2)
    runs = _counted(monkeypatch, histories, "_apply", copied=True)
    done = HistoryChange(append=[user("done")], lease=ReleaseLease(owner="process-1"))
    [result], seen = await _beside_a_failing_write(
        store,
        [store.histories.apply(history.id, done, expected_version=3)],
        _all(tables.turn_leases),
    )
    assert seen == [[]]  # the first run released it
    assert len(runs) == 2
    assert runs[0] == runs[1]
    assert isinstance(result, History)
    assert result.version == 4
    assert await store.db.read(_all(tables.turn_leases)) == []
    assert (await store.db.read(_history_row(history.id)))["next_seq"] == 4


async def test_create_runs_again_as_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    heard = store.events.open("alice")
    runs = _counted(monkeypatch, histories, "_insert_history", copied=True)
    [made], _ = await _beside_a_failing_write(
        store, [store.histories.create("alice", agent="demo", title="Trip", announce=True)]
    )
    assert len(runs) == 2
    assert isinstance(made, History)
    assert await store.histories.get(made.id) == made
    assert [h.id for h in await store.histories.list("alice")] == [made.id]
    # The work was given the same values both times (its first run changed none).
    assert runs[0] == runs[1]
    assert runs[0][0]["id"] == made.id
    got = await heard.get(timeout=1)
    assert got is not None
    assert (got.kind, got.history_id) == ("history.created", made.id)
    assert await heard.get(timeout=0.1) is None


# --- the other writes -----------------------------------------------------------------------


async def test_request_log_and_audit_records_run_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = await _history(store)
    log = request_record(
        history_id=history.id, owner_id="alice", prompt="p", response="r", model="demo"
    )
    records = [
        audit_record(actor="admin", action="connection.added", subject="github", changes={}),
        audit_record(actor="admin", action="connection.changed", subject="github", changes={}),
    ]
    before = copy.deepcopy((log, records))
    request_runs = _counted(monkeypatch, request_log, "insert_request", copied=True)
    audit_runs = _counted(monkeypatch, audit, "insert_audit", copied=True)
    results, _ = await _beside_a_failing_write(
        store, [store.requests.add(log), store.audit.add(records)]
    )
    assert (len(request_runs), len(audit_runs)) == (2, 2)
    assert (request_runs[0], audit_runs[0]) == (request_runs[1], audit_runs[1])
    assert results == [log, None]
    assert [r.id for r in await store.requests.list(history.id)] == [log.id]
    written = await store.db.read(_all(tables.activity, AUDIT.history_id.is_(None)))
    assert sorted(r["id"] for r in written) == sorted(r.id for r in records)
    assert (log, records) == before


async def test_remind_runs_again_as_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its compare-and-set (not reminded yet) holds in the second run too."""
    store.outbox.keep(["ask.reminder"])
    history = await _history(store)
    asked = HistoryChange(append=[ask_call("c2")], pending_ask=pending_ask("c2"))
    await store.histories.apply(history.id, asked, expected_version=2)
    runs = _counted(monkeypatch, audit, "insert_audit", copied=True)
    record = audit_record(
        actor="system",
        action="gate.reminded",
        subject="c2",
        changes={},
        history_id=history.id,
        owner_id="alice",
    )
    reminder = event("ask.reminder", history.id)
    records, events = [record], [reminder]
    at = utc_now()
    [reminded], seen = await _beside_a_failing_write(
        store,
        [store.audit.remind(history.id, "c2", at, records=records, events=events)],
        _all(tables.open_gates),
    )
    assert seen[0][0]["reminded"] == at  # the first run marked it
    assert reminded is True
    assert len(runs) == 2
    assert runs[0] == runs[1]
    [gate] = await store.db.read(_all(tables.open_gates))
    assert gate["reminded"] == at
    written = await store.db.read(_all(tables.activity, AUDIT.action == "gate.reminded"))
    assert [r["id"] for r in written] == [record.id]
    assert [r["id"] for r in await store.db.read(_all(tables.outbox_events))] == [reminder.id]
    assert (records, events) == ([record], [reminder])


async def test_outbox_claim_and_enqueue_run_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim claims the same events, and queueing counts its deliveries new, in the run that
    commits: the first run's claims and inserts were rolled back."""
    store.outbox.keep(["ask.created", "ask.answered"])
    history = await _history(store)
    asked, answered = event("ask.created", history.id), event("ask.answered", history.id)
    both = HistoryChange(events=[asked, answered])
    await store.histories.apply(history.id, both, expected_version=2)
    claims = _counted(monkeypatch, outbox, "_claim_events", copied=True)
    enqueues = _counted(monkeypatch, outbox, "_enqueue_event", copied=True)
    repo = DeliveryRepo(store.db)
    queued = [
        new_delivery(
            event_id=asked.id,
            channel="webhook",
            target=target,
            user_id="alice",
            kind="ask.created",
            payload={"type": "ask.created"},
        )
        for target in ("one", "two")
    ]
    link = AnswerLink(
        id=new_id(),
        user_id="alice",
        history_id=history.id,
        tool_call_id="c1",
        button_id="yes",
        expires=utc_now() + HOLD,
    )
    links = {queued[0].id: [link]}
    before = copy.deepcopy((queued, links))
    now = utc_now()
    [claimed, new], _ = await _beside_a_failing_write(
        store,
        [store.outbox.claim(now=now, hold=HOLD), repo.enqueue_event(asked.id, queued, links)],
    )
    assert (len(claims), len(enqueues)) == (2, 2)
    assert (claims[0], enqueues[0]) == (claims[1], enqueues[1])
    assert sorted(e.id for e in claimed) == sorted([asked.id, answered.id])
    assert asked in claimed
    assert new == 2
    assert (queued, links) == before
    rows = await store.db.read(_all(tables.deliveries))
    assert sorted(r["id"] for r in rows) == sorted(d.id for d in queued)
    assert [r["id"] for r in await store.db.read(_all(tables.answer_links))] == [link.id]
    # The claimed event queued its deliveries and went; the other is held until the claim ends.
    kept = await store.db.read(_all(tables.outbox_events))
    assert [(r["id"], r["claimed_until"]) for r in kept] == [(answered.id, now + HOLD)]


async def test_running_turns_leases_and_grants_run_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = await _history(store)
    now = utc_now()
    lease = TurnLease(
        history_id=history.id, owner="process-1", until=now - HOLD, state={"a": 1}, created=now
    )
    await store.histories.apply(history.id, HistoryChange(lease=lease), expected_version=2)
    [stale] = await store.leases.lapsed(now)
    flushes = _counted(monkeypatch, running, "_flush", copied=True)
    claims = _counted(monkeypatch, leases, "row_count")
    adds = _counted(monkeypatch, permissions, "_insert_or_find")
    put = [
        RunningTurn(
            history_id=history.id,
            turn_id="t1",
            owner="process-2",
            phase="tool",
            since=now,
            until=now + HOLD,
            tool_name="search",
            tool_call_id="c9",
        )
    ]
    drop = ["other-history"]
    before = copy.deepcopy((put, drop))
    [flushed, taken, grant], _ = await _beside_a_failing_write(
        store,
        [
            store.running.flush("process-2", put, drop),
            store.leases.claim(stale, "process-2", now + HOLD, now),
            store.grants.add("alice", "github", "search", "conversation", history_id=history.id),
        ],
    )
    assert (len(flushes), len(claims), len(adds)) == (2, 2, 2)
    assert flushes[0] == flushes[1]
    assert flushed is None
    assert (put, drop) == before
    assert await store.running.get(history.id, now=now) == put[0]
    assert len(await store.db.read(_all(tables.running_turns))) == 1
    # The claim's compare-and-set held in the second run too.
    assert isinstance(taken, TurnLease)
    assert (taken.owner, taken.until) == ("process-2", now + HOLD)
    assert await store.leases.get(history.id) == taken
    [row] = await store.db.read(_all(tables.grants))
    assert grant is not None
    assert grant.id == row["id"]
    assert await store.grants.get(grant.id) == grant


async def test_confirmation_consume_runs_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its compare-and-set from ``pending`` holds in the second run: no conflict."""
    history = await _history(store)
    made = await store.confirmations.create(
        history_id=history.id,
        user_id="alice",
        connection_id="github",
        tool_name="create_issue",
        tool_call_id="c3",
        request={"method": "POST"},
        digest="d1",
        preview={"title": "Bug"},
        expires_at=utc_now() + HOLD,
    )
    runs = _counted(monkeypatch, confirmations, "_change")
    [consumed], seen = await _beside_a_failing_write(
        store,
        [store.confirmations.consume(made.id, digest="d1", lease_ms=60_000)],
        _all(tables.confirmations),
    )
    assert seen[0][0]["state"] == "consumed"  # the first run consumed it
    assert len(runs) == 2
    assert isinstance(consumed, ConfirmationRecord)
    assert consumed.state == "consumed"
    assert await store.confirmations.get(made.id) == consumed


async def test_file_delete_and_connection_update_run_again_as_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's row is found (and marked) in the second run too, and its bytes go once the
    write committed; the connection's compare-and-set on its version holds in the second run."""
    record = await store.files.create("alice", "a.txt", "text/plain", b"bytes")
    repo = ConnectionRepo(store.db)
    saved = await repo.add(
        ConnectionRecord(id=new_id(), app="notes", name="Notes", prefix="notes", kind="mcp-stdio")
    )
    deletes = _counted(monkeypatch, files, "first_row")
    updates = _counted(monkeypatch, connections, "_update_and_read")
    changes = {"name": "Notes 2", "agents": ("helper",)}
    [deleted, updated], seen = await _beside_a_failing_write(
        store,
        [store.files.delete(record.id), repo.update(saved.id, 1, changes)],
        _all(tables.connections),
    )
    assert seen[0][0]["version"] == 2  # the first run changed it
    assert (len(deletes), len(updates)) == (2, 2)
    assert deleted is None
    assert await store.files.get(record.id) is None
    assert (await store.files.get(record.id, include_deleted=True)) is not None
    with pytest.raises(BlobMissing):
        await store.blobs.get(record.blob_key)
    assert isinstance(updated, ConnectionRecord)
    assert (updated.version, updated.name, updated.agents) == (2, "Notes 2", ("helper",))
    assert await repo.get(saved.id) == updated
    assert changes == {"name": "Notes 2", "agents": ("helper",)}
