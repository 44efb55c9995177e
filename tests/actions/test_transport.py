"""Sending over real HTTP (the scripted API on 127.0.0.1): success, redirects blocked,
timeouts, the response cap, 4xx and 5xx, and retries only where allowed, keeping one
idempotency key across the attempts of one prepared request."""

from __future__ import annotations

import copy
import json
import socket
from typing import Any

import httpx
import pytest
from action_helpers import ENV, SECRET, Answer, FakeApi, config_for, dump

from handrail.actions import (
    ActionSet,
    NeedsSelection,
    PreparedRequest,
    Resolved,
    load_action_set,
    prepare,
    retry_delay_ms,
    run_read_only,
    send,
)
from handrail.errors import HandrailError

ARGS = {"date": "2026-05-02", "time": "19:00", "notes": "window seat"}
CHOSEN = {"time": "19:00", "token": "tok-1900-secret"}


class Sleeps:
    """An injected sleep: records the waits, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def action_set_for(api: FakeApi, change: Any = None) -> ActionSet:
    config = copy.deepcopy(config_for(api.url))
    if change is not None:
        change(config)
    return load_action_set(dump(config), env=ENV)


def booking(action_set: ActionSet) -> PreparedRequest:
    return prepare(
        action_set,
        "book_slot",
        ARGS,
        resolved=Resolved(values={"availability": CHOSEN}, facts={"time": "19:00"}),
    )


async def sent(
    api: FakeApi, client: httpx.AsyncClient, change: Any = None, **kwargs: Any
) -> tuple[Any, PreparedRequest, Sleeps]:
    action_set = action_set_for(api, change)
    prepared = booking(action_set)
    sleeps = Sleeps()
    result = await send(
        action_set, prepared, client=client, env=ENV, sleep=sleeps, rand=lambda: 0.0, **kwargs
    )
    return result, prepared, sleeps


def no_idempotency(config: dict[str, Any]) -> None:
    del config["tools"][1]["transport"]["idempotency"]


async def test_a_confirmed_write_is_sent_once_with_its_secret_and_key(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    result, prepared, sleeps = await sent(fake_api, client)
    assert result.status == "completed"
    assert result.http_status == 201
    assert result.data == {"id": "b1", "status": "booked"}
    assert result.attempts == 1
    assert result.to_tool_result() == {
        "status": "completed",
        "httpStatus": 201,
        "data": {"id": "b1", "status": "booked"},
    }
    (request,) = fake_api.received()
    assert (request.method, request.path) == ("POST", "/bookings")
    assert request.headers["x-api-key"] == SECRET
    assert request.headers["idempotency-key"] == prepared.idempotency_key
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == {
        "date": "2026-05-02",
        "slot_token": "tok-1900-secret",
        "notes": "window seat",
    }
    assert sleeps.waits == []


async def test_5xx_is_retried_with_the_same_idempotency_key(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    fake_api.plan("/bookings", Answer(status=503), Answer(status=502))
    result, prepared, sleeps = await sent(fake_api, client)
    assert result.status == "completed"
    assert result.attempts == 3
    keys = [r.headers["idempotency-key"] for r in fake_api.received("POST", "/bookings")]
    assert keys == [prepared.idempotency_key] * 3
    assert sleeps.waits == [0.5, 1.0]


async def test_a_new_prepared_request_gets_a_new_key(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    await sent(fake_api, client)
    await sent(fake_api, client)
    keys = [r.headers["idempotency-key"] for r in fake_api.received("POST", "/bookings")]
    assert len(keys) == 2
    assert keys[0] != keys[1]


async def test_retries_stop_after_the_allowed_attempts(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    fake_api.plan("/bookings", *[Answer(status=503, json={"error": "busy"})] * 3)
    result, _, sleeps = await sent(fake_api, client)
    assert result.status == "error"
    assert result.code == "TOOL_SERVER_ERROR"
    assert result.http_status == 503
    assert result.data == {"error": "busy"}
    assert result.attempts == 3
    assert "after 3 attempts" in (result.message or "")
    assert len(fake_api.received("POST")) == 3
    assert len(sleeps.waits) == 2


async def test_a_write_without_an_idempotency_key_is_never_retried(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    fake_api.plan("/bookings", Answer(status=503))
    result, prepared, sleeps = await sent(fake_api, client, no_idempotency)
    assert prepared.idempotency_key is None
    assert result.code == "TOOL_SERVER_ERROR"
    assert result.attempts == 1
    (request,) = fake_api.received("POST")
    assert "idempotency-key" not in request.headers
    assert sleeps.waits == []


async def test_a_write_without_a_key_is_not_retried_after_a_timeout(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def change(config: dict[str, Any]) -> None:
        no_idempotency(config)
        config["tools"][1]["transport"]["timeout_ms"] = 150

    fake_api.plan("/bookings", Answer(delay=1.0))
    result, _, _ = await sent(fake_api, client, change)
    assert result.code == "TOOL_TIMEOUT"
    assert result.attempts == 1
    assert len(fake_api.received("POST")) == 1
    # The request reached the API (as this one did): the model is told to check first.
    assert "may have reached the API" in (result.message or "")


async def test_a_write_that_never_connected_is_not_said_to_have_reached_the_api(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    """Nothing listens on the port: the connection is refused before anything is written."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # free once the socket closes, nothing listens

    def change(config: dict[str, Any]) -> None:
        no_idempotency(config)
        config["base_url"] = f"http://127.0.0.1:{closed}"

    result, _, _ = await sent(fake_api, client, change)
    assert result.code == "TOOL_CONNECTION_ERROR"
    assert "ConnectError" in (result.message or "")
    assert "may have reached the API" not in (result.message or "")


async def test_a_redirect_is_never_followed(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    elsewhere = f"{fake_api.url}/elsewhere"
    fake_api.plan("/bookings", Answer(status=307, headers={"location": elsewhere}))
    async with httpx.AsyncClient(trust_env=False, follow_redirects=True) as following:
        result, _, _ = await sent(fake_api, following)
    assert result.status == "error"
    assert result.code == "TOOL_REDIRECT_BLOCKED"
    assert result.http_status == 307
    assert result.attempts == 1
    assert elsewhere in (result.message or "")
    assert [r.path for r in fake_api.received()] == ["/bookings"]


async def test_a_slow_answer_times_out_after_the_allowed_retries(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][1]["transport"]["timeout_ms"] = 150
        config["tools"][1]["transport"]["retry"]["attempts"] = 2

    fake_api.plan("/bookings", Answer(delay=1.0), Answer(delay=1.0))
    result, prepared, _ = await sent(fake_api, client, change)
    assert result.code == "TOOL_TIMEOUT"
    assert result.http_status is None
    assert result.attempts == 2
    keys = {r.headers["idempotency-key"] for r in fake_api.received("POST")}
    assert keys == {prepared.idempotency_key}


async def test_a_large_answer_hits_the_output_limit(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][1]["transport"]["max_response_bytes"] = 100

    fake_api.plan("/bookings", Answer(status=201, body=b"x" * 1000))
    result, _, _ = await sent(fake_api, client, change)
    assert result.code == "TOOL_OUTPUT_LIMIT"
    assert result.data is None
    assert result.attempts == 1


async def test_a_streamed_answer_is_capped_while_it_is_read(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][1]["transport"]["max_response_bytes"] = 100

    fake_api.plan("/bookings", Answer(status=201, chunks=[b"y" * 60] * 5))
    result, _, _ = await sent(fake_api, client, change)
    assert result.code == "TOOL_OUTPUT_LIMIT"
    fake_api.plan("/bookings", Answer(status=201, chunks=[b'{"ok":', b" true}"]))
    result, _, _ = await sent(fake_api, client, change)
    assert result.status == "completed"
    assert result.data == {"ok": True}


async def test_a_4xx_is_a_client_error_kept_with_its_status(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    fake_api.plan("/bookings", Answer(status=409, json={"error": "slot taken"}))
    result, _, sleeps = await sent(fake_api, client)
    assert result.code == "TOOL_CLIENT_ERROR"
    assert result.http_status == 409
    assert result.data == {"error": "slot taken"}
    assert result.attempts == 1
    assert sleeps.waits == []
    assert result.to_tool_result()["code"] == "TOOL_CLIENT_ERROR"


async def test_a_text_answer_is_kept_as_text(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    fake_api.plan(
        "/bookings", Answer(status=200, body=b"booked", headers={"content-type": "text/plain"})
    )
    result, _, _ = await sent(fake_api, client)
    assert result.data == "booked"


async def test_a_missing_secret_at_send_time_sends_nothing(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    action_set = action_set_for(fake_api)
    result = await send(action_set, booking(action_set), client=client, env={})
    assert result.code == "TOOL_SECRET_MISSING"
    assert "BOOKING_API_KEY" in (result.message or "")
    assert SECRET not in (result.message or "")
    assert fake_api.received() == []


@pytest.mark.parametrize("secret", ["key-with-a-newline\n", "clé", "a\x00b"])
async def test_a_secret_no_header_can_carry_sends_nothing_and_is_not_shown(
    fake_api: FakeApi, client: httpx.AsyncClient, secret: str
) -> None:
    """A secret with a line break, an accent or a control character: refused before anything
    is sent, with the variable named and nothing of the secret in the message."""
    action_set = action_set_for(fake_api)
    env = {"BOOKING_API_KEY": secret}
    result = await send(action_set, booking(action_set), client=client, env=env)
    assert result.code == "TOOL_SECRET_MISSING"
    assert "BOOKING_API_KEY" in (result.message or "")
    assert "no HTTP header can carry" in (result.message or "")
    assert secret.strip() not in (result.message or "")
    assert fake_api.received() == []


async def test_session_auth_sends_a_cookie(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    def change(config: dict[str, Any]) -> None:
        config["auth"] = {"type": "session", "cookie": "sid", "secret_env": "BOOKING_API_KEY"}

    result, _, _ = await sent(fake_api, client, change)
    assert result.ok
    (request,) = fake_api.received()
    assert request.headers["cookie"] == f"sid={SECRET}"
    assert "x-api-key" not in request.headers


async def test_retry_delays_grow_with_jitter() -> None:
    config = config_for("http://api.test")
    tool = load_action_set(dump(config), env=ENV).tools["book_slot"]
    assert retry_delay_ms(tool, 1, rand=lambda: 0.0) == 500
    assert retry_delay_ms(tool, 2, rand=lambda: 0.0) == 1000
    assert retry_delay_ms(tool, 3, rand=lambda: 0.0) == 2000
    assert retry_delay_ms(tool, 1, rand=lambda: 1.0) == 625


# --------------------------------------------------------------------------------- read-only


async def test_a_read_only_tool_runs_at_once(fake_api: FakeApi, client: httpx.AsyncClient) -> None:
    action_set = action_set_for(fake_api)
    result = await run_read_only(
        action_set, "find_slots", {"date": "2026-05-02"}, client=client, env=ENV
    )
    assert not isinstance(result, NeedsSelection)
    assert result.ok
    assert result.data["date"] == "2026-05-02"
    (request,) = fake_api.received()
    assert (request.method, request.path, request.query) == (
        "GET",
        "/slots",
        {"date": "2026-05-02"},
    )
    assert request.headers["x-api-key"] == SECRET


async def test_a_read_only_get_is_retried_on_5xx_and_429(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    def change(config: dict[str, Any]) -> None:
        config["tools"][0]["transport"] = {"retry": {"attempts": 3, "backoff_ms": 10}}

    action_set = action_set_for(fake_api, change)
    fake_api.plan("/slots", Answer(status=500), Answer(status=429, headers={"retry-after": "0"}))
    sleeps = Sleeps()
    result = await run_read_only(
        action_set, "find_slots", {"date": "d"}, client=client, env=ENV, sleep=sleeps,
        rand=lambda: 0.0,
    )  # fmt: skip
    assert not isinstance(result, NeedsSelection)
    assert result.ok
    assert result.attempts == 3
    assert sleeps.waits == [0.01, 0.02]


async def test_a_read_only_get_is_retried_after_a_connection_error(
    client: httpx.AsyncClient,
) -> None:
    def change(config: dict[str, Any]) -> None:
        config["base_url"] = "http://127.0.0.1:9"
        config["tools"][0]["transport"] = {"retry": {"attempts": 2, "backoff_ms": 0}}

    config = copy.deepcopy(config_for("http://unused"))
    change(config)
    action_set = load_action_set(dump(config), env=ENV)
    result = await run_read_only(action_set, "find_slots", {"date": "d"}, client=client, env=ENV)
    assert not isinstance(result, NeedsSelection)
    assert result.code == "TOOL_CONNECTION_ERROR"
    assert result.attempts == 2


async def test_run_read_only_checks_input_and_refuses_writes(
    fake_api: FakeApi, client: httpx.AsyncClient
) -> None:
    action_set = action_set_for(fake_api)
    result = await run_read_only(action_set, "find_slots", {"day": "x"}, client=client, env=ENV)
    assert not isinstance(result, NeedsSelection)
    assert result.status == "needs_input"
    assert result.data == {
        "problems": ["date: required", "day: unknown property; the properties are: date"]
    }
    with pytest.raises(HandrailError, match="confirmed"):
        await run_read_only(action_set, "book_slot", ARGS, client=client, env=ENV)
    assert fake_api.received() == []
