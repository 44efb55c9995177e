"""Preparing requests: URL, headers and body built from references, no secret kept, the
preview, the expiry, storage round trips, and the digest that binds a request to its context."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import uuid
from typing import Any

import pytest
from action_helpers import ENV, SECRET, config_for, dump

from handrail.actions import (
    REDACTED,
    ActionSet,
    InvalidInput,
    PreparedRequest,
    PrepareError,
    Resolved,
    check_input,
    digest,
    load_action_set,
    prepare,
)
from handrail.errors import HandrailError

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
ARGS = {"date": "2026-05-02", "time": "19:00", "notes": "window seat"}
CHOSEN = {"time": "19:00", "token": "tok-1900-secret", "room": "garden"}


def booking(change: Any = None) -> ActionSet:
    config = copy.deepcopy(config_for("http://api.test/v1"))
    if change is not None:
        change(config)
    return load_action_set(dump(config), env=ENV)


def resolved(expires_at: dt.datetime | None = None) -> Resolved:
    return Resolved(
        values={"availability": CHOSEN},
        facts={"time": "19:00"},
        expires_at=expires_at,
    )


def prepared_booking(**kwargs: Any) -> PreparedRequest:
    return prepare(booking(), "book_slot", ARGS, resolved=resolved(), now=NOW, **kwargs)


def test_a_write_is_prepared_in_full() -> None:
    prepared = prepared_booking()
    assert prepared.action_set == "booking"
    assert prepared.tool == "book_slot"
    assert prepared.method == "POST"
    assert prepared.url == "http://api.test/v1/bookings"
    assert prepared.has_body
    assert prepared.body == {
        "date": "2026-05-02",
        "slot_token": "tok-1900-secret",
        "notes": "window seat",
    }
    assert prepared.idempotency_key is not None
    assert uuid.UUID(prepared.idempotency_key).version == 4
    assert prepared.headers == {"Idempotency-Key": prepared.idempotency_key}
    assert prepared.secret_headers == ("X-Api-Key",)
    assert prepared.created_at == NOW
    assert prepared.expires_at == NOW + dt.timedelta(milliseconds=30000)


def test_every_prepared_request_gets_a_new_idempotency_key() -> None:
    keys = {prepared_booking().idempotency_key for _ in range(5)}
    assert len(keys) == 5


def test_no_secret_is_ever_in_a_prepared_request() -> None:
    def with_secret_header(config: dict[str, Any]) -> None:
        config["tools"][1]["request"]["headers"] = {
            "X-Trace": {"source": "secret", "env": "BOOKING_API_KEY"},
            "X-Source": "handrail",
        }

    prepared = prepare(booking(with_secret_header), "book_slot", ARGS, resolved=resolved(), now=NOW)
    assert prepared.secret_headers == ("X-Api-Key", "X-Trace")
    assert prepared.headers["X-Source"] == "handrail"
    stored = json.dumps(prepared.to_json())
    assert SECRET not in stored
    assert SECRET not in repr(prepared)
    assert prepared.public["headers"]["X-Api-Key"] == REDACTED


def test_sensitive_values_are_redacted_in_the_public_view_and_absent_from_the_preview() -> None:
    prepared = prepared_booking()
    assert prepared.public == {
        "method": "POST",
        "url": "http://api.test/v1/bookings",
        "headers": {"Idempotency-Key": prepared.idempotency_key, "X-Api-Key": REDACTED},
        "body": {"date": "2026-05-02", "slot_token": REDACTED, "notes": "window seat"},
    }
    assert "tok-1900-secret" not in json.dumps(prepared.preview)
    assert "tok-1900-secret" not in json.dumps(prepared.public)


def test_the_explicit_preview_reads_input_and_selection_facts() -> None:
    assert prepared_booking().preview == {
        "date": "2026-05-02",
        "time": "19:00",
        "notes": "window seat",
    }


def test_a_preview_field_with_no_value_is_null() -> None:
    prepared = prepare(
        booking(), "book_slot", {"date": "2026-05-02", "time": "19:00"}, resolved=resolved()
    )
    assert prepared.preview == {"date": "2026-05-02", "time": "19:00", "notes": None}
    assert "notes" not in prepared.body


def test_without_a_preview_the_model_visible_input_is_shown_in_schema_order() -> None:
    def no_preview(config: dict[str, Any]) -> None:
        del config["tools"][1]["behavior"]["confirmation"]["preview"]
        config["tools"][1]["input"]["properties"]["slot_token"] = {"type": "string"}
        deps = config["tools"][1]["dependencies"]["availability"]
        deps["fills"] = {"slot_token": "$.item.token"}

    action_set = booking(no_preview)
    found = Resolved(values={"availability": CHOSEN}, filled={"slot_token": "tok-1900-secret"})
    prepared = prepare(
        action_set, "book_slot", {"notes": "n", "time": "19:00", "date": "d"}, resolved=found
    )
    assert list(prepared.preview.items()) == [("date", "d"), ("time", "19:00"), ("notes", "n")]
    assert prepared.public["body"]["slot_token"] == REDACTED


def test_expiry_is_the_earliest_of_the_ttl_and_the_dependencies() -> None:
    soon = NOW + dt.timedelta(seconds=5)
    prepared = prepare(booking(), "book_slot", ARGS, resolved=resolved(soon), now=NOW)
    assert prepared.expires_at == soon
    later = NOW + dt.timedelta(hours=1)
    prepared = prepare(booking(), "book_slot", ARGS, resolved=resolved(later), now=NOW)
    assert prepared.expires_at == NOW + dt.timedelta(seconds=30)
    assert prepared.expired(NOW + dt.timedelta(seconds=30))
    assert not prepared.expired(NOW + dt.timedelta(seconds=29))


def test_input_is_checked_against_the_schema_first() -> None:
    action_set = booking()
    tool = action_set.tools["book_slot"]
    assert check_input(tool, ARGS) == []
    problems = check_input(tool, {"date": 5, "extra": True})
    assert problems == [
        "time: required",
        "date: expected a string, got 5",
        "extra: unknown property; the properties are: date, time, notes",
    ]
    with pytest.raises(InvalidInput) as info:
        prepare(action_set, tool, {"date": 5, "extra": True}, resolved=resolved())
    assert info.value.problems == problems
    assert str(info.value).startswith("Invalid arguments for book_slot: time: required;")


def test_path_parameters_are_encoded_and_query_values_spelled() -> None:
    def change(config: dict[str, Any]) -> None:
        tool = config["tools"][0]
        tool["input"]["properties"]["room"] = {"type": "string"}
        tool["input"]["properties"]["seats"] = {"type": "array", "items": {"type": "integer"}}
        tool["input"]["properties"]["terrace"] = {"type": "boolean"}
        tool["request"]["path"] = "/rooms/{room}/slots"
        tool["request"]["path_params"] = {"room": "$.input.room"}
        tool["request"]["query"] = {
            "date": "$.input.date",
            "seats": "$.input.seats",
            "terrace": "$.input.terrace",
            "missing": "$.input.nope_not_given",
            "fixed": ["a", 1],
        }
        tool["input"]["properties"]["nope_not_given"] = {"type": "string"}

    action_set = booking(change)
    prepared = prepare(
        action_set,
        "find_slots",
        {"date": "2026-05-02", "room": "a/b c?", "seats": [2, 4], "terrace": True},
    )
    assert prepared.url == (
        "http://api.test/v1/rooms/a%2Fb%20c%3F/slots?date=2026-05-02&seats=2&seats=4"
        "&terrace=true&fixed=a&fixed=1"
    )
    assert not prepared.has_body
    assert prepared.idempotency_key is None
    with pytest.raises(PrepareError, match="path parameter room"):
        prepare(action_set, "find_slots", {"date": "2026-05-02"})


def test_a_header_value_with_a_line_break_is_refused() -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][1]["request"]["headers"] = {"X-Note": "$.input.notes"}

    bad = {**ARGS, "notes": "hi\r\nX-Evil: 1"}
    with pytest.raises(PrepareError, match="line break"):
        prepare(booking(change), "book_slot", bad, resolved=resolved())


def test_a_generated_value_is_the_request_id() -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][1]["request"]["body"]["request_id"] = {"source": "generated"}

    prepared = prepare(booking(change), "book_slot", ARGS, resolved=resolved())
    assert prepared.body["request_id"] == prepared.idempotency_key


def test_prepared_requests_round_trip_through_json() -> None:
    prepared = prepared_booking()
    stored = json.loads(json.dumps(prepared.to_json()))
    assert stored["expiresAt"] == "2026-05-01T12:00:30.000Z"
    assert PreparedRequest.from_json(stored) == prepared
    with pytest.raises(ValueError, match="not a prepared request"):
        PreparedRequest.from_json({"kind": "other"})
    with pytest.raises(ValueError, match="not a prepared request"):
        PreparedRequest.from_json({"kind": "preparedRequest", "version": 1})


# --------------------------------------------------------------------------------- digests

CONTEXT: dict[str, Any] = {
    "history_id": "a" * 24,
    "user_id": "alice",
    "tool": "book_slot",
    "arguments": ARGS,
    "dependency_values": {"availability": CHOSEN},
    "fingerprint": "f" * 64,
}


def test_the_digest_is_stable() -> None:
    prepared = prepared_booking()
    first = digest(prepared, **CONTEXT)
    assert len(first) == 64
    assert int(first, 16) >= 0
    again = PreparedRequest.from_json(json.loads(json.dumps(prepared.to_json())))
    reordered = {**CONTEXT, "arguments": dict(reversed(list(ARGS.items())))}
    assert digest(again, **reordered) == first


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("history_id", "b" * 24),
        ("user_id", "bob"),
        ("tool", "find_slots"),
        ("arguments", {**ARGS, "notes": "aisle"}),
        ("dependency_values", {"availability": {**CHOSEN, "token": "other"}}),
        ("fingerprint", "0" * 64),
    ],
)
def test_the_digest_changes_with_any_part_of_the_context(name: str, value: Any) -> None:
    prepared = prepared_booking()
    assert digest(prepared, **{**CONTEXT, name: value}) != digest(prepared, **CONTEXT)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("url", "http://api.test/v1/bookings?x=1"),
        ("method", "PUT"),
        ("body", {"date": "2026-05-03"}),
        ("headers", {"Idempotency-Key": "other"}),
        ("secret_headers", ()),
        ("idempotency_key", "other"),
        ("preview", {"date": "2026-05-03"}),
        ("expires_at", NOW + dt.timedelta(minutes=10)),
    ],
)
def test_the_digest_changes_with_any_part_of_the_request(field: str, value: Any) -> None:
    prepared = prepared_booking()
    changed = dataclasses.replace(prepared, **{field: value})
    assert digest(changed, **CONTEXT) != digest(prepared, **CONTEXT)


def test_a_tool_whose_dependencies_did_not_run_is_not_prepared() -> None:
    with pytest.raises(HandrailError, match="resolve its dependencies"):
        prepare(booking(), "book_slot", ARGS)


def test_resolved_dependencies_round_trip_through_json() -> None:
    found = Resolved(
        values={"availability": CHOSEN},
        facts={"time": "19:00"},
        filled={"room": "garden"},
        expires_at=NOW,
    )
    stored = json.loads(json.dumps(found.to_json()))
    assert stored["expiresAt"] == "2026-05-01T12:00:00.000Z"
    assert Resolved.from_json(stored) == found
    assert Resolved.from_json(Resolved().to_json()) == Resolved()
