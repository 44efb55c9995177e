"""Histories: create, read, list, delete, and the one atomic change with its compare-and-set."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from handrail.asks import PendingAsk
from handrail.errors import NotFound
from handrail.server.problems import HEADLESS_PROBLEMS, problem_for
from handrail.store import UNSET, History, HistoryChange, HistoryConflict, Store, StoredRow

ZERO = dt.timedelta(0)


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "content": text}


def ask_call(tool_call_id: str, status: str = "pending") -> dict[str, Any]:
    return {
        "type": "tool-call",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "args": {"question": "Which plan?", "options": [{"id": "a", "label": "A"}]},
        "ask": {"kind": "choice", "status": status},
    }


def ask_result(tool_call_id: str, action: str = "accept") -> dict[str, Any]:
    return {
        "type": "tool-result",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "result": {"action": action, "content": {"selected": ["a"]}},
    }


def pending_ask(tool_call_id: str, created: str = "2026-03-01T10:00:00.000Z") -> PendingAsk:
    return PendingAsk.from_json(
        {
            "toolCallId": tool_call_id,
            "kind": "choice",
            "input": {"question": "Which plan?"},
            "simple": {"buttons": []},
            "promptIndex": 1,
            "responseMessages": [{"role": "assistant", "content": []}],
            "created": created,
        }
    )


def datas(rows: list[StoredRow]) -> list[dict[str, Any]]:
    return [row.data for row in rows]


def assert_utc(moment: dt.datetime) -> None:
    assert moment.tzinfo is not None
    assert moment.utcoffset() == ZERO


# --- create, read, list, delete -----------------------------------------------------------------


async def test_create_and_get(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo", title="Plans")
    assert len(history.id) == 24
    assert int(history.id, 16) >= 0
    assert (history.owner_id, history.agent, history.title) == ("u1", "demo", "Plans")
    assert history.pending_ask is None
    assert history.version == 1
    assert history.created == history.updated
    assert await store.histories.get(history.id) == history
    assert await store.histories.get("0" * 24) is None
    assert await store.histories.rows(history.id) == []


async def test_timestamps_are_aware_utc(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    changed = await store.histories.apply(
        history.id, HistoryChange(append=[user("hi")]), expected_version=1
    )
    read = await store.histories.get(history.id)
    assert read is not None
    rows = await store.histories.rows(history.id)
    for moment in (
        history.created,
        changed.created,
        changed.updated,
        read.updated,
        rows[0].created,
    ):
        assert_utc(moment)
    assert read.updated == changed.updated
    assert read.created == history.created


async def test_list_is_newest_first_per_owner_without_deleted(store: Store) -> None:
    created = []
    for _ in range(3):
        created.append(await store.histories.create("u1", agent="demo"))
        await asyncio.sleep(0.002)  # distinct milliseconds
    other = await store.histories.create("u2", agent="demo")
    listed = await store.histories.list("u1")
    assert [h.id for h in listed] == [h.id for h in reversed(created)]
    await store.histories.delete(created[1].id)
    assert [h.id for h in await store.histories.list("u1")] == [created[2].id, created[0].id]
    assert [h.id for h in await store.histories.list("u2")] == [other.id]
    assert await store.histories.list("nobody") == []


async def test_delete_is_soft_and_final(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    await store.histories.apply(history.id, HistoryChange(append=[user("hi")]), expected_version=1)
    await store.histories.delete(history.id)
    assert await store.histories.get(history.id) is None
    assert await store.histories.load(history.id) is None
    assert await store.histories.rows(history.id) == []
    with pytest.raises(NotFound) as caught:
        await store.histories.delete(history.id)
    assert problem_for(caught.value, HEADLESS_PROBLEMS)["code"] == "document-not-found"
    with pytest.raises(NotFound):
        await store.histories.apply(history.id, HistoryChange(), expected_version=3)
    with pytest.raises(NotFound):
        await store.histories.update_title(history.id, "x")


async def test_update_title_bumps_the_version(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    renamed = await store.histories.update_title(history.id, "Team plan setup")
    assert (renamed.title, renamed.version) == ("Team plan setup", 2)
    assert renamed.updated >= history.updated
    cleared = await store.histories.update_title(history.id, None)
    assert (cleared.title, cleared.version) == (None, 3)
    with pytest.raises(HistoryConflict):
        await store.histories.apply(history.id, HistoryChange(title="old"), expected_version=1)
    with pytest.raises(NotFound):
        await store.histories.update_title("f" * 24, "x")


# --- rows and apply -----------------------------------------------------------------------------


async def test_rows_round_trip_in_order(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    first = [user("Set up billing"), {"type": "assistant", "content": [{"text": "é ✓ \u2028"}]}]
    second = [ask_call("call_1"), {"type": "tool-call", "toolName": "lookup", "toolCallId": "c2"}]
    h2 = await store.histories.apply(history.id, HistoryChange(append=first), expected_version=1)
    h3 = await store.histories.apply(history.id, HistoryChange(append=second), expected_version=2)
    assert (h2.version, h3.version) == (2, 3)
    rows = await store.histories.rows(history.id)
    assert [row.seq for row in rows] == [0, 1, 2, 3]
    assert datas(rows) == [*first, *second]
    loaded = await store.histories.load(history.id)
    assert loaded == (h3, rows)


async def test_apply_pending_ask_and_title_unset_none_and_value(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo", title="T")
    ask = pending_ask("call_1")
    h = await store.histories.apply(
        history.id, HistoryChange(append=[ask_call("call_1")], pending_ask=ask), expected_version=1
    )
    assert (h.pending_ask, h.title, h.version) == (ask, "T", 2)
    h = await store.histories.apply(history.id, HistoryChange(title="New"), expected_version=2)
    assert (h.pending_ask, h.title) == (ask, "New")  # UNSET keeps the ask
    h = await store.histories.apply(
        history.id, HistoryChange(pending_ask=None, title=UNSET), expected_version=3
    )
    assert (h.pending_ask, h.title, h.version) == (None, "New", 4)
    h = await store.histories.apply(history.id, HistoryChange(title=None), expected_version=4)
    assert (h.pending_ask, h.title) == (None, None)
    assert await store.histories.get(history.id) == h
    assert await store.histories.pending("u1") == []


async def test_answer_then_undo(store: Store) -> None:
    """The spec's answer (result row, status answered, ask cleared) and its undo."""
    history = await store.histories.create("u1", agent="demo")
    ask = pending_ask("call_1")
    await store.histories.apply(
        history.id,
        HistoryChange(append=[user("plan?"), ask_call("call_1")], pending_ask=ask),
        expected_version=1,
    )
    answered = await store.histories.apply(
        history.id,
        HistoryChange(
            append=[ask_result("call_1")], ask_status={"call_1": "answered"}, pending_ask=None
        ),
        expected_version=2,
    )
    rows = await store.histories.rows(history.id)
    assert datas(rows) == [user("plan?"), ask_call("call_1", "answered"), ask_result("call_1")]
    assert answered.pending_ask is None

    undone = await store.histories.apply(
        history.id,
        HistoryChange(remove_results=["call_1"], ask_status={"call_1": "pending"}, pending_ask=ask),
        expected_version=3,
    )
    assert undone.pending_ask == ask
    rows = await store.histories.rows(history.id)
    assert datas(rows) == [user("plan?"), ask_call("call_1", "pending")]
    assert [row.seq for row in rows] == [0, 1]

    # A removed row's seq is never reused.
    await store.histories.apply(
        history.id, HistoryChange(append=[ask_result("call_1", "cancel")]), expected_version=4
    )
    assert [row.seq for row in await store.histories.rows(history.id)] == [0, 1, 3]


async def test_ask_status_may_name_a_row_appended_by_the_same_change(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    await store.histories.apply(
        history.id,
        HistoryChange(
            append=[ask_call("call_9"), ask_result("call_9", "cancel")],
            ask_status={"call_9": "cancelled"},
        ),
        expected_version=1,
    )
    rows = await store.histories.rows(history.id)
    assert rows[0].data["ask"] == {"kind": "choice", "status": "cancelled"}


async def test_approval_ask_rows_keep_their_origin(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    row = {
        "type": "tool-call",
        "toolName": "send_invoice",
        "toolCallId": "call_a",
        "args": {"to": "x"},
        "ask": {"kind": "confirm", "origin": "approval"},  # status defaults to pending
    }
    await store.histories.apply(history.id, HistoryChange(append=[row]), expected_version=1)
    [stored] = await store.histories.rows(history.id)
    assert stored.data["ask"] == {"kind": "confirm", "origin": "approval", "status": "pending"}
    await store.histories.apply(
        history.id, HistoryChange(ask_status={"call_a": "answered"}), expected_version=2
    )
    [stored] = await store.histories.rows(history.id)
    assert stored.data["ask"]["status"] == "answered"


# --- nothing half written -----------------------------------------------------------------------


async def _state(store: Store, history_id: str) -> tuple[History | None, list[StoredRow]]:
    return await store.histories.get(history_id), await store.histories.rows(history_id)


async def test_stale_version_conflicts_and_changes_nothing(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    await store.histories.apply(
        history.id,
        HistoryChange(append=[user("a"), ask_call("call_1")], pending_ask=pending_ask("call_1")),
        expected_version=1,
    )
    before = await _state(store, history.id)
    stale = HistoryChange(
        append=[ask_result("call_1")],
        ask_status={"call_1": "answered"},
        pending_ask=None,
        title="stale",
    )
    for expected in (1, 3, 0):
        with pytest.raises(HistoryConflict) as caught:
            await store.histories.apply(history.id, stale, expected_version=expected)
        problem = problem_for(caught.value)
        assert problem["status"] == 409
        assert (caught.value.expected_version, caught.value.current_version) == (expected, 2)
    assert await _state(store, history.id) == before


async def test_unknown_history_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.histories.apply("a" * 24, HistoryChange(), expected_version=1)


async def test_a_change_to_a_missing_history_writes_no_rows(store: Store) -> None:
    """No foreign key keeps rows from a missing history (migration 0019): the change's own
    compare-and-set does, on both backends, and writes none of them."""
    missing = "b" * 24
    change = HistoryChange(
        append=[user("a"), ask_call("call_1")], pending_ask=pending_ask("call_1"), title="t"
    )
    with pytest.raises(NotFound):
        await store.histories.apply(missing, change, expected_version=1)
    assert await _state(store, missing) == (None, [])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (HistoryChange(append=[user("ok"), {"content": "no type"}]), "type"),
        (HistoryChange(append=[user("ok"), ask_call("c", "maybe")]), "status"),
        (HistoryChange(append=[user("ok")], ask_status={"call_1": "done"}), "status"),  # type: ignore[dict-item]
        (HistoryChange(append=[user("ok")], ask_status={"nope": "answered"}), "nope"),
        (HistoryChange(append=[user("ok")], remove_results=["call_1", "nope"]), "nope"),
    ],
)
async def test_a_bad_change_writes_nothing(
    store: Store, change: HistoryChange, message: str
) -> None:
    history = await store.histories.create("u1", agent="demo")
    await store.histories.apply(
        history.id,
        HistoryChange(append=[ask_call("call_1"), ask_result("call_1")]),
        expected_version=1,
    )
    before = await _state(store, history.id)
    with pytest.raises(ValueError, match=message):
        await store.histories.apply(history.id, change, expected_version=2)
    assert await _state(store, history.id) == before


async def test_concurrent_applies_exactly_one_wins(store: Store) -> None:
    history = await store.histories.create("u1", agent="demo")
    await store.histories.apply(
        history.id,
        HistoryChange(append=[ask_call("call_1")], pending_ask=pending_ask("call_1")),
        expected_version=1,
    )
    racers = 8

    async def answer(n: int) -> History:
        return await store.histories.apply(
            history.id,
            HistoryChange(
                append=[ask_result("call_1") | {"racer": n}],
                ask_status={"call_1": "answered"},
                pending_ask=None,
            ),
            expected_version=2,
        )

    outcomes = await asyncio.gather(*(answer(n) for n in range(racers)), return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, History)]
    losers = [o for o in outcomes if isinstance(o, HistoryConflict)]
    assert (len(winners), len(losers)) == (1, racers - 1), outcomes
    assert winners[0].version == 3
    rows = await store.histories.rows(history.id)
    assert len(rows) == 2
    assert rows[1].data["racer"] == outcomes.index(winners[0])
    assert rows[0].data["ask"]["status"] == "answered"


async def test_concurrent_appends_keep_every_turn(store: Store) -> None:
    """Turns that reload and retry on conflict all land, each one whole."""
    history = await store.histories.create("u1", agent="demo")

    async def turn(n: int) -> None:
        while True:
            current = await store.histories.get(history.id)
            assert current is not None
            try:
                await store.histories.apply(
                    history.id,
                    HistoryChange(append=[user(f"q{n}"), {"type": "assistant", "n": n}]),
                    expected_version=current.version,
                )
                return
            except HistoryConflict:
                await asyncio.sleep(0)

    await asyncio.gather(*(turn(n) for n in range(5)))
    rows = await store.histories.rows(history.id)
    assert [row.seq for row in rows] == list(range(10))
    pairs = [(rows[i].data["content"], rows[i + 1].data["n"]) for i in range(0, 10, 2)]
    assert sorted(pairs) == [(f"q{n}", n) for n in range(5)]
    final = await store.histories.get(history.id)
    assert final is not None
    assert final.version == 6


# --- pending asks -------------------------------------------------------------------------------


async def test_pending_is_newest_ask_first_and_leaves_out_deleted(store: Store) -> None:
    made = {}
    for name, created in [
        ("middle", "2026-03-01T10:00:05.000Z"),
        ("oldest", "2026-03-01T10:00:01.000Z"),
        ("newest", "2026-03-01T10:00:09.000Z"),
        ("cleared", "2026-03-01T10:00:07.000Z"),
        ("deleted", "2026-03-01T10:00:08.000Z"),
    ]:
        history = await store.histories.create("u1", agent="demo", title=name)
        made[name] = await store.histories.apply(
            history.id,
            HistoryChange(append=[ask_call(name)], pending_ask=pending_ask(name, created)),
            expected_version=1,
        )
    await store.histories.create("u1", agent="demo", title="never asked")
    other = await store.histories.create("u2", agent="demo")
    await store.histories.apply(
        other.id, HistoryChange(pending_ask=pending_ask("x")), expected_version=1
    )
    await store.histories.apply(
        made["cleared"].id, HistoryChange(pending_ask=None), expected_version=2
    )
    await store.histories.delete(made["deleted"].id)

    pending = await store.histories.pending("u1")
    assert [h.title for h in pending] == ["newest", "middle", "oldest"]
    assert pending[0].pending_ask == pending_ask("newest", "2026-03-01T10:00:09.000Z")
    assert [h.id for h in await store.histories.pending("u2")] == [other.id]
