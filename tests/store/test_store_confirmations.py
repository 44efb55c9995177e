"""Confirmations: create, the compare-and-set consume, the other transitions, and the wire
form, on both backends."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, insert, inspect, text
from sqlalchemy.exc import IntegrityError
from test_store_db import HEAD

from handrail.errors import Conflict, NotFound
from handrail.server.problems import problem_for
from handrail.store import (
    CONFIRMATION_STALE,
    ConfirmationConflict,
    ConfirmationRecord,
    ConfirmationRepo,
    Database,
    Store,
)
from handrail.store.db import alembic_config, all_rows, row_count
from handrail.store.tables import confirmations

HEX24 = re.compile(r"^[0-9a-f]{24}$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
DIGEST = "a" * 64
SLOT_TOKEN = "slt_9f2c61d0b7e84a55"
IDEMPOTENCY_KEY = "idem-5b0f3e2a7c9d41e6"

REQUEST: dict[str, Any] = {
    "method": "POST",
    "url": "http://127.0.0.1:8123/demo/booking/bookings?src=agent",
    "headers": {"Content-Type": "application/json", "Idempotency-Key": IDEMPOTENCY_KEY},
    "body": {"date": "2026-05-01", "slot_token": SLOT_TOKEN, "notes": "window seat"},
}
PREVIEW: dict[str, Any] = {"notes": "window seat", "date": "2026-05-01", "time": "19:00"}


def later(**delta: float) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(**delta)


async def make(
    store: Store,
    *,
    expires_at: dt.datetime | None = None,
    history_id: str = "h" * 24,
    tool_call_id: str = "call_1",
) -> ConfirmationRecord:
    return await store.confirmations.create(
        history_id=history_id,
        user_id="u1",
        connection_id="booking",
        tool_name="book_slot",
        tool_call_id=tool_call_id,
        request=REQUEST,
        digest=DIGEST,
        preview=PREVIEW,
        expires_at=expires_at if expires_at is not None else later(minutes=5),
    )


# --- migration ----------------------------------------------------------------------------------


def _upgrade(connection: Connection, revision: str) -> None:
    command.upgrade(alembic_config(connection), revision)


def _downgrade(connection: Connection, revision: str) -> None:
    command.downgrade(alembic_config(connection), revision)


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def test_migration_0003_adds_confirmations_and_goes_back(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.write(_upgrade, "0002")
        assert "confirmations" not in await db.read(_tables)
        await db.migrate()
        assert "confirmations" in await db.read(_tables)
        version = await db.read(all_rows, text("SELECT version_num FROM alembic_version"))
        assert [row[0] for row in version] == [HEAD]
        await db.write(_downgrade, "0002")
        tables = await db.read(_tables)
        assert "confirmations" not in tables
        assert {"permissions", "grants", "histories"} <= tables


async def test_the_table_refuses_an_unknown_state(store: Store) -> None:
    now = dt.datetime.now(dt.UTC)
    row = {
        "id": "0" * 24,
        "history_id": "h" * 24,
        "user_id": "u1",
        "connection_id": "booking",
        "tool_name": "book_slot",
        "tool_call_id": "call_1",
        "request": {},
        "digest": DIGEST,
        "preview": [],
        "expires_at": now,
        "state": "sent",
        "created": now,
        "updated": now,
    }
    with pytest.raises(IntegrityError):
        await store.db.write(row_count, insert(confirmations).values(row))


# --- create and read ----------------------------------------------------------------------------


async def test_create_and_get(store: Store) -> None:
    assert isinstance(store.confirmations, ConfirmationRepo)
    expires_at = later(seconds=30)
    record = await make(store, expires_at=expires_at)
    assert HEX24.match(record.id)
    assert record.state == "pending"
    assert record.history_id == "h" * 24
    assert (record.user_id, record.connection_id, record.tool_name, record.tool_call_id) == (
        "u1",
        "booking",
        "book_slot",
        "call_1",
    )
    assert record.request == REQUEST
    assert record.digest == DIGEST
    assert record.preview == PREVIEW
    assert record.expires_at == expires_at
    assert record.lease_until is None
    assert record.outcome is None
    assert record.created == record.updated
    for moment in (record.expires_at, record.created, record.updated):
        assert moment.utcoffset() == dt.timedelta(0)
    assert await store.confirmations.get(record.id) == record
    assert await store.confirmations.get("f" * 24) is None


async def test_the_preview_keeps_its_field_order(store: Store) -> None:
    record = await make(store)
    stored = await store.confirmations.get(record.id)
    assert stored is not None
    assert list(stored.preview) == ["notes", "date", "time"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("digest", ""), ("expires_at", dt.datetime(2030, 1, 1))],  # naive on purpose
)
async def test_create_checks_its_arguments(store: Store, field: str, value: Any) -> None:
    arguments: dict[str, Any] = {
        "history_id": "h" * 24,
        "user_id": "u1",
        "connection_id": "booking",
        "tool_name": "book_slot",
        "tool_call_id": "call_1",
        "request": REQUEST,
        "digest": DIGEST,
        "preview": PREVIEW,
        "expires_at": later(minutes=5),
        field: value,
    }
    with pytest.raises(ValueError, match=field):
        await store.confirmations.create(**arguments)
    assert await store.confirmations.for_history("h" * 24) == []


async def test_for_history_lists_oldest_first(store: Store) -> None:
    first = await make(store, tool_call_id="call_1")
    second = await make(store, tool_call_id="call_2")
    await make(store, history_id="g" * 24)
    assert [c.id for c in await store.confirmations.for_history("h" * 24)] == [
        first.id,
        second.id,
    ]
    assert await store.confirmations.for_history("x" * 24) == []


# --- consume ------------------------------------------------------------------------------------


async def test_consume_leases_a_pending_confirmation(store: Store) -> None:
    record = await make(store)
    now = dt.datetime.now(dt.UTC)
    consumed = await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000, now=now)
    assert consumed.state == "consumed"
    assert consumed.lease_until == now + dt.timedelta(seconds=60)
    assert consumed.updated >= record.updated
    assert consumed.request == REQUEST
    assert await store.confirmations.get(record.id) == consumed


async def test_a_second_consume_is_refused(store: Store) -> None:
    record = await make(store)
    await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    error = caught.value
    assert isinstance(error, Conflict)
    assert problem_for(error)["status"] == 409
    assert problem_for(error)["title"] == "Confirmation is no longer pending"
    assert error.code == CONFIRMATION_STALE == "CONFIRMATION_STALE"
    assert (error.reason, error.state, error.confirmation_id) == ("state", "consumed", record.id)
    assert "consumed" in error.detail


async def test_concurrent_consumes_have_exactly_one_winner(store: Store) -> None:
    record = await make(store)
    outcomes = await asyncio.gather(
        *(store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000) for _ in range(8)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if isinstance(o, ConfirmationRecord)]
    losers = [o for o in outcomes if isinstance(o, ConfirmationConflict)]
    assert len(winners) == 1
    assert len(losers) == 7
    assert {loser.reason for loser in losers} == {"state"}
    assert winners[0].state == "consumed"


async def test_concurrent_consumes_from_two_stores_have_one_winner(
    store: Store, database_url: str, tmp_path: Any
) -> None:
    record = await make(store)
    async with await Store.open(database_url, blob_dir=tmp_path / "blobs") as other:
        outcomes = await asyncio.gather(
            store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000),
            other.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000),
            return_exceptions=True,
        )
    assert sorted(type(o).__name__ for o in outcomes) == [
        "ConfirmationConflict",
        "ConfirmationRecord",
    ]


async def test_an_expired_confirmation_is_refused(store: Store) -> None:
    record = await make(store, expires_at=later(seconds=30))
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(
            record.id, digest=DIGEST, lease_ms=60_000, now=later(seconds=31)
        )
    assert caught.value.reason == "expired"
    assert caught.value.code == CONFIRMATION_STALE
    assert "expired" in caught.value.detail
    # exactly at the expiry is too late as well
    with pytest.raises(ConfirmationConflict):
        await store.confirmations.consume(
            record.id, digest=DIGEST, lease_ms=60_000, now=record.expires_at
        )
    assert await store.confirmations.get(record.id) == record


async def test_an_already_expired_confirmation_is_refused_now(store: Store) -> None:
    record = await make(store, expires_at=later(seconds=-1))
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    assert caught.value.reason == "expired"


async def test_a_wrong_digest_is_refused(store: Store) -> None:
    record = await make(store)
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(record.id, digest="b" * 64, lease_ms=60_000)
    assert caught.value.reason == "digest"
    assert caught.value.code == CONFIRMATION_STALE
    assert await store.confirmations.get(record.id) == record
    # the right digest still works
    consumed = await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    assert consumed.state == "consumed"


async def test_consume_of_an_unknown_id_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.confirmations.consume("f" * 24, digest=DIGEST, lease_ms=60_000)


@pytest.mark.parametrize(
    "arguments",
    [{"lease_ms": 0}, {"lease_ms": 1000, "now": dt.datetime(2030, 1, 1)}],  # naive
)
async def test_consume_checks_its_arguments(store: Store, arguments: dict[str, Any]) -> None:
    record = await make(store)
    with pytest.raises(ValueError, match=r"lease_ms|timezone-aware"):
        await store.confirmations.consume(record.id, digest=DIGEST, **arguments)
    assert await store.confirmations.get(record.id) == record


# --- finish, cancel, stale ----------------------------------------------------------------------


@pytest.mark.parametrize("state", ["succeeded", "failed"])
async def test_finish_records_the_outcome_of_a_consumed_confirmation(
    store: Store, state: Any
) -> None:
    record = await make(store)
    await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    outcome = {"status": 201, "body": {"id": "b1", "status": "confirmed"}}
    finished = await store.confirmations.finish(record.id, state=state, outcome=outcome)
    assert finished.state == state
    assert finished.outcome == outcome
    assert await store.confirmations.get(record.id) == finished
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.finish(record.id, state="failed", outcome={})
    assert caught.value.state == state
    assert caught.value.code is None
    with pytest.raises(ConfirmationConflict):
        await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)


async def test_finish_needs_a_consumed_confirmation(store: Store) -> None:
    record = await make(store)
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.finish(record.id, state="succeeded", outcome={})
    assert (caught.value.reason, caught.value.state) == ("state", "pending")
    with pytest.raises(ValueError, match="finished state"):
        await store.confirmations.finish(record.id, state="pending", outcome={})  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        await store.confirmations.finish("f" * 24, state="succeeded", outcome={})
    assert await store.confirmations.get(record.id) == record


async def test_cancel_a_pending_confirmation(store: Store) -> None:
    record = await make(store)
    cancelled = await store.confirmations.cancel(record.id, "user_sent_message")
    assert cancelled.state == "cancelled"
    assert cancelled.outcome == {"reason": "user_sent_message"}
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    assert (caught.value.reason, caught.value.state) == ("state", "cancelled")
    with pytest.raises(ConfirmationConflict):
        await store.confirmations.cancel(record.id, "declined")
    with pytest.raises(NotFound):
        await store.confirmations.cancel("f" * 24, "declined")


async def test_a_consumed_confirmation_cannot_be_cancelled_or_made_stale(store: Store) -> None:
    record = await make(store)
    consumed = await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=60_000)
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.cancel(record.id, "declined")
    assert caught.value.code == CONFIRMATION_STALE
    with pytest.raises(ConfirmationConflict):
        await store.confirmations.mark_stale(record.id)
    assert await store.confirmations.get(record.id) == consumed


async def test_mark_stale(store: Store) -> None:
    first = await make(store)
    stale = await store.confirmations.mark_stale(first.id)
    assert (stale.state, stale.outcome) == ("stale", None)
    second = await make(store)
    stale = await store.confirmations.mark_stale(second.id, reason="recovery")
    assert (stale.state, stale.outcome) == ("stale", {"reason": "recovery"})
    with pytest.raises(ConfirmationConflict):
        await store.confirmations.consume(second.id, digest=DIGEST, lease_ms=60_000)


# --- uncertain ----------------------------------------------------------------------------------


async def test_a_lapsed_lease_without_outcome_becomes_uncertain(store: Store) -> None:
    record = await make(store)
    now = dt.datetime.now(dt.UTC)
    await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=10_000, now=now)
    # within the lease: still consumed, nothing to reconcile
    assert await store.confirmations.find_uncertain(now + dt.timedelta(seconds=9)) == []
    kept = await store.confirmations.reconcile(record.id, now + dt.timedelta(seconds=9))
    assert kept.state == "consumed"

    after = now + dt.timedelta(seconds=11)
    lapsed = await store.confirmations.find_uncertain(after)
    assert [c.id for c in lapsed] == [record.id]
    assert await store.confirmations.find_uncertain(after, history_id="g" * 24) == []
    assert [c.id for c in await store.confirmations.find_uncertain(after, history_id="h" * 24)] == [
        record.id
    ]

    uncertain = await store.confirmations.reconcile(record.id, after)
    assert uncertain.state == "uncertain"
    assert uncertain.outcome is None
    assert await store.confirmations.find_uncertain(after) == []
    # reconciling again changes nothing, and it is never consumable again
    assert await store.confirmations.reconcile(record.id, after) == uncertain
    with pytest.raises(ConfirmationConflict) as caught:
        await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=10_000, now=after)
    assert caught.value.state == "uncertain"
    # a consumer slower than its lease may still record what happened
    finished = await store.confirmations.finish(
        record.id, state="succeeded", outcome={"status": 201}
    )
    assert finished.state == "succeeded"


async def test_reconcile_leaves_other_states_alone(store: Store) -> None:
    pending = await make(store)
    far = later(hours=1)
    assert await store.confirmations.reconcile(pending.id, far) == pending
    consumed = await store.confirmations.consume(pending.id, digest=DIGEST, lease_ms=1000)
    finished = await store.confirmations.finish(consumed.id, state="failed", outcome={"s": 503})
    assert await store.confirmations.reconcile(finished.id, far) == finished
    assert await store.confirmations.find_uncertain(far) == []
    with pytest.raises(NotFound):
        await store.confirmations.reconcile("f" * 24)


# --- the wire form ------------------------------------------------------------------------------


async def test_to_json_shows_no_secret_and_no_request_body(store: Store) -> None:
    record = await make(store)
    body = record.to_json()
    assert body == {
        "id": record.id,
        "historyId": "h" * 24,
        "toolCallId": "call_1",
        "connectionId": "booking",
        "toolName": "book_slot",
        "state": "pending",
        "request": {"method": "POST", "path": "/demo/booking/bookings"},
        "preview": PREVIEW,
        "expiresAt": body["expiresAt"],
        "created": body["created"],
        "updated": body["updated"],
    }
    for moment in (body["expiresAt"], body["created"], body["updated"]):
        assert ISO_Z.match(moment)
    text_form = json.dumps(body)
    for secret in (SLOT_TOKEN, IDEMPOTENCY_KEY, DIGEST, "slot_token", "src=agent", "u1"):
        assert secret not in text_form

    consumed = await store.confirmations.consume(record.id, digest=DIGEST, lease_ms=1000)
    finished = await store.confirmations.finish(
        consumed.id, state="succeeded", outcome={"status": 201, "body": {"id": "b1"}}
    )
    assert finished.to_json()["outcome"] == {"status": 201, "body": {"id": "b1"}}
    assert finished.to_json()["state"] == "succeeded"


def test_to_json_request_summary_forms() -> None:
    moment = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    base = ConfirmationRecord(
        id="0" * 24,
        history_id="h" * 24,
        user_id="u1",
        connection_id="booking",
        tool_name="book_slot",
        tool_call_id="call_1",
        request={"method": "delete", "path": "/bookings/b1?x=1"},
        digest=DIGEST,
        preview={},
        expires_at=moment,
        state="pending",
        lease_until=None,
        outcome=None,
        created=moment,
        updated=moment,
    )
    assert base.to_json()["request"] == {"method": "DELETE", "path": "/bookings/b1"}
    assert base.to_json()["expiresAt"] == "2026-05-01T00:00:00.000Z"
    assert "outcome" not in base.to_json()
