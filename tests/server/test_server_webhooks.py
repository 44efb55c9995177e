"""Webhooks against a real receiver on loopback: each event is one POST signed the Standard
Webhooks way (checked with the `standardwebhooks` library), retried with backoff until the
receiver says 2xx, delivered once per event id however often it is handled, kept in a durable
outbox across a restart, and logged (``GET /api/deliveries``) for its owner and admins only."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest
from reach_helpers import WEBHOOK_SECRET, Event, eventually, receiving
from server_helpers import Api, command, sqlite_url, start_api
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from handrail.errors import ConfigError
from handrail.runtime.agent import Agent
from handrail.server import ServerConfig
from handrail.server.reach import retry_delay
from handrail.server.reach_config import WebhookConfig, webhook_configs
from handrail.server.webhooks import sign

ENV = {"OPS_SECRET": WEBHOOK_SECRET}


def hook(url: str, **extra: Any) -> WebhookConfig:
    settings: dict[str, Any] = {"name": "ops", "url": url, "secret_env": "OPS_SECRET"}
    settings.update({"attempts": 4, "backoff": 0.05, **extra})
    return webhook_configs([settings], ENV)[0]


def ask_event(user: str = "alice", history_id: str = "a" * 24, **extra: Any) -> Event:
    data = {"ask": {"toolCallId": "call_1", "kind": "confirm", "prompt": "Ship it?"}}
    return Event(kind="ask.created", user_id=user, history_id=history_id, data=data, **extra)


async def deliveries(api: Api, user: str = "alice") -> list[dict[str, Any]]:
    response = await api.get("/deliveries", user=user)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


async def settled(api: Api, count: int = 1) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        found = await deliveries(api, "root")
        done = [d for d in found if d["status"] != "pending"]
        return found if len(done) >= count else None

    return list(await eventually(check))


async def test_an_event_is_one_signed_post_in_the_standard_webhooks_format(tmp_path: Path) -> None:
    with receiving() as receiver:
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=[hook(receiver.url)]) as api:
            event = ask_event()
            assert await api.app.state.reach.handle(event) == 1
            [delivery] = await settled(api)
    assert delivery["status"] == "delivered"
    assert delivery["attempts"] == 1
    assert delivery["eventId"] == event.id
    [got] = receiver.received
    assert got.headers["webhook-id"] == event.id
    assert got.headers["content-type"] == "application/json"
    # The receiver's own check, with the library of the convention: the body as sent.
    body = Webhook(WEBHOOK_SECRET).verify(got.body, got.headers)
    assert body["type"] == "ask.created"
    assert body["data"]["userId"] == "alice"
    assert body["data"]["historyId"] == "a" * 24
    assert body["data"]["ask"]["prompt"] == "Ship it?"
    assert body["timestamp"].endswith("Z")
    # A body changed on the way, or another secret, fails the check.
    with pytest.raises(WebhookVerificationError):
        Webhook(WEBHOOK_SECRET).verify(got.body.replace(b"Ship", b"Sink"), got.headers)
    other = "whsec_" + "A" * 43
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)


def test_the_signature_is_hmac_sha256_over_id_timestamp_and_body() -> None:
    # The convention's own example (svix and Standard Webhooks documentation).
    secret = Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")._whsecret
    body = b'{"test": 2432232314}'
    assert (
        sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
        == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )


async def test_a_failing_receiver_is_retried_with_backoff_then_delivered(tmp_path: Path) -> None:
    with receiving(plan=[500, 503]) as receiver:
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=[hook(receiver.url)]) as api:
            event = ask_event()
            await api.app.state.reach.handle(event)
            [delivery] = await settled(api)
            detail = (await api.get(f"/deliveries/{delivery['id']}")).json()["data"]
    assert delivery["status"] == "delivered"
    assert [a["statusCode"] for a in detail["log"]] == [500, 503, 200]
    assert detail["log"][0]["error"] == "The receiver answered 500."
    # The receiver's body is never kept.
    assert "receiver says no" not in json.dumps(detail)
    # Every attempt carries the same id, so the receiver can drop repeats.
    assert [r.headers["webhook-id"] for r in receiver.received] == [event.id] * 3
    # Each attempt is signed anew and each verifies.
    for got in receiver.received:
        Webhook(WEBHOOK_SECRET).verify(got.body, got.headers)


def test_retry_delays_double_from_the_backoff_capped_at_an_hour_with_some_jitter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(random, "random", lambda: 0.0)
    assert [retry_delay(5, attempt) for attempt in (1, 2, 3, 4)] == [5, 10, 20, 40]
    assert retry_delay(5, 30) == 3600
    monkeypatch.setattr(random, "random", lambda: 0.999)
    assert 5 < retry_delay(5, 1) < 5.5
    assert 3600 < retry_delay(5, 30) < 3960


async def test_a_failed_attempt_waits_its_backoff_before_the_next(tmp_path: Path) -> None:
    with receiving(plan=[500]) as receiver:
        webhooks = [hook(receiver.url, backoff=60)]
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
            reach = api.app.state.reach
            await reach.handle(ask_event())

            async def tried_once() -> list[dict[str, Any]] | None:
                found = await deliveries(api, "root")
                return found if found and found[0]["attempts"] == 1 else None

            [delivery] = await eventually(tried_once)
            assert delivery["status"] == "pending"
            waits = dt.datetime.fromisoformat(delivery["nextAttempt"]) - dt.datetime.fromisoformat(
                delivery["updated"]
            )
            assert 59.9 <= waits.total_seconds() <= 66.1  # 60 s and up to 10% jitter
            # However often the worker looks, nothing is sent again before then.
            for _ in range(5):
                assert await reach.run_due() == 0
            assert len(receiver.received) == 1


async def test_attempts_run_out_and_the_delivery_fails(tmp_path: Path) -> None:
    with receiving(plan=[500, 500, 500, 500, 500]) as receiver:
        webhooks = [hook(receiver.url, attempts=3)]
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
            await api.app.state.reach.handle(ask_event())
            [delivery] = await settled(api)
    assert delivery["status"] == "failed"
    assert delivery["attempts"] == 3
    assert delivery["lastError"] == "The receiver answered 500."
    assert len(receiver.received) == 3


async def test_a_receiver_that_is_down_is_retried(tmp_path: Path) -> None:
    with receiving() as receiver:
        url = receiver.url
    # The receiver is gone: the port refuses connections.
    async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=[hook(url, attempts=2)]) as api:
        await api.app.state.reach.handle(ask_event())
        [delivery] = await settled(api)
    assert delivery["status"] == "failed"
    assert delivery["attempts"] == 2
    assert delivery["lastError"].startswith("Could not reach the receiver")


async def test_the_same_event_twice_is_delivered_once(tmp_path: Path) -> None:
    with receiving() as receiver:
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=[hook(receiver.url)]) as api:
            reach = api.app.state.reach
            event = ask_event()
            assert await reach.handle(event) == 1
            assert await reach.handle(event) == 0
            second = ask_event()
            assert await reach.handle(second) == 1
            found = await settled(api, count=2)
    assert len(found) == 2
    assert sorted(r.headers["webhook-id"] for r in receiver.received) == sorted(
        [event.id, second.id]
    )


async def test_the_outbox_outlives_the_process(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with receiving() as receiver:
        async with start_api(url, tmp_path, webhooks=[hook(receiver.url)]) as api:
            reach = api.app.state.reach
            await reach.aclose()  # this process stops sending before the event comes
            event = ask_event()
            assert await reach.handle(event) == 1
            [pending] = await deliveries(api, "root")
            assert pending["status"] == "pending"
        assert receiver.received == []
        async with start_api(url, tmp_path, webhooks=[hook(receiver.url)]) as api:
            [delivery] = await settled(api)
    assert delivery["status"] == "delivered"
    assert [r.headers["webhook-id"] for r in receiver.received] == [event.id]


async def test_webhooks_are_chosen_by_event_user_and_agent(tmp_path: Path) -> None:
    with receiving() as receiver:
        webhooks = [
            hook(receiver.url, name="bobs", users=["bob"]),
            hook(receiver.url, name="quiet", agents=["quiet"]),
            hook(receiver.url, name="answers", events=["ask.answered"]),
        ]
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
            reach = api.app.state.reach
            helper = await api.store.histories.create("alice", agent="helper")
            quiet = await api.store.histories.create("alice", agent="quiet")
            assert await reach.handle(ask_event("alice", helper.id)) == 0
            assert await reach.handle(ask_event("bob", helper.id)) == 1  # bobs
            assert await reach.handle(ask_event("alice", quiet.id)) == 1  # quiet
            answered = Event(kind="ask.answered", user_id="alice", history_id=helper.id)
            assert await reach.handle(answered) == 1  # answers
            found = await settled(api, count=3)
    assert sorted(d["target"] for d in found) == ["answers", "bobs", "quiet"]
    assert len(receiver.received) == 3


async def test_the_delivery_log_is_the_owners_and_the_admins(tmp_path: Path) -> None:
    with receiving() as receiver:
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=[hook(receiver.url)]) as api:
            await api.app.state.reach.handle(ask_event("alice"))
            [delivery] = await settled(api)
            assert [d["id"] for d in await deliveries(api, "alice")] == [delivery["id"]]
            assert await deliveries(api, "bob") == []
            theirs = await api.get(f"/deliveries/{delivery['id']}", user="bob")
            assert theirs.status_code == 404
            assert theirs.headers["content-type"] == "application/problem+json"
            assert theirs.json()["title"] == "Delivery not found"
            mine = (await api.get(f"/deliveries/{delivery['id']}")).json()["data"]
            assert mine["target"] == "ops"
            assert mine["channel"] == "webhook"
            assert "payload" not in mine


def test_webhook_settings_are_checked() -> None:
    good = {"name": "ops", "url": "https://hooks.example.com/h", "secret_env": "OPS_SECRET"}
    [one] = webhook_configs([good], ENV)
    assert one.secret == bytes(range(32))
    assert "secret" not in repr(one).replace("secret_env", "")
    cases = [
        ({**good, "url": "ftp://x"}, "webhooks[0].url"),
        ({**good, "url": "https://u:p@x.example"}, "webhooks[0].url: must not hold"),
        ({**good, "secret_env": "NOPE"}, "NOPE is not set"),
        ({**good, "events": ["ask.exploded"]}, "webhooks[0].events"),
        ({**good, "name": "Ops!"}, "webhooks[0].name"),
        ({**good, "attempts": 0}, "webhooks[0].attempts"),
        ({**good, "color": "red"}, "webhooks[0].color: unknown setting"),
    ]
    for entry, message in cases:
        with pytest.raises(ConfigError) as caught:
            webhook_configs([entry], ENV)
        assert message in str(caught.value), (entry, caught.value)
    with pytest.raises(ConfigError, match="used twice"):
        webhook_configs([good, good], ENV)


def test_webhooks_come_from_the_configuration_file() -> None:
    data = {
        "users": [{"id": "alice", "token": "a" * 20}],
        "agents": [{"name": "helper"}],
        "webhooks": [{"name": "ops", "url": "https://hooks.example.com/h", "secret_env": "S"}],
    }
    config = ServerConfig.from_mapping(data, env={"S": "a-long-enough-secret"})
    assert [h.name for h in config.webhooks] == ["ops"]
    assert config.webhooks[0].secret == b"a-long-enough-secret"


async def test_the_runtimes_ask_events_are_posted(database_url: str, tmp_path: Path) -> None:
    with receiving() as receiver:
        async with start_api(database_url, tmp_path, webhooks=[hook(receiver.url)]) as api:
            stream = await api.say(command("ask_confirm", {"prompt": "Ship it?"}))
            tool_call_id = stream.ask["toolCallId"]
            no = {"action": "accept", "content": {"confirmed": False}}
            answered = await api.answer(stream.history_id, tool_call_id, no)
            assert answered.status == 200
            found = await settled(api, count=2)
    assert sorted(d["type"] for d in found) == ["ask.answered", "ask.created"]
    bodies = [Webhook(WEBHOOK_SECRET).verify(r.body, r.headers) for r in receiver.received]
    by_type = {b["type"]: b["data"] for b in bodies}
    assert by_type["ask.created"]["ask"]["toolCallId"] == tool_call_id
    assert by_type["ask.created"]["historyId"] == stream.history_id
    assert by_type["ask.answered"]["toolCallId"] == tool_call_id
    assert by_type["ask.answered"]["action"] == "accept"
    assert {r.headers["webhook-id"] for r in receiver.received} == {d["eventId"] for d in found}


async def test_a_reminder_is_posted_too(tmp_path: Path) -> None:
    agents = [Agent("helper", instructions="You help people.", remind_after=30)]
    with receiving() as receiver:
        webhooks = [hook(receiver.url)]
        async with start_api(
            sqlite_url(tmp_path), tmp_path, webhooks=webhooks, agents=agents
        ) as api:
            stream = await api.say(command("ask_confirm", {"prompt": "Ship it?"}))
            await settled(api, count=1)
            later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=31)
            await api.app.state.runtime.sweep_gates(later)
            found = await settled(api, count=2)
    assert sorted(d["type"] for d in found) == ["ask.created", "ask.reminder"]
    bodies = [Webhook(WEBHOOK_SECRET).verify(r.body, r.headers) for r in receiver.received]
    [reminder] = [b for b in bodies if b["type"] == "ask.reminder"]
    assert reminder["data"]["historyId"] == stream.history_id
    assert reminder["data"]["ask"]["toolCallId"] == stream.ask["toolCallId"]
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 2


async def test_two_processes_on_postgresql_post_each_event_once(
    postgres_cluster: Any, tmp_path: Path
) -> None:
    # Both processes hear every event (LISTEN/NOTIFY) and both queue it: the outbox keeps one.
    url = str(postgres_cluster.new_database_url()).replace("+asyncpg", "", 1)
    with receiving() as receiver:
        webhooks = [hook(receiver.url)]
        async with (
            start_api(url, tmp_path / "a", webhooks=webhooks) as first,
            start_api(url, tmp_path / "b", webhooks=webhooks) as second,
        ):
            async with second.store.events.subscribe("alice") as heard:
                stream = await first.say(command("ask_confirm", {"prompt": "Ship it?"}))
                assert stream.status == 200
                [delivery] = await settled(second)
                assert delivery["type"] == "ask.created"
                # The second process heard the event too (so its reach queued it as well).
                kinds = []
                while (event := await heard.get(timeout=5)) is not None:
                    kinds.append((event.kind, event.id))
                    if event.id == delivery["eventId"]:
                        break
                assert ("ask.created", delivery["eventId"]) in kinds
            for _ in range(20):  # the other process had every chance to post it again
                await first.app.state.reach.run_due()
                await second.app.state.reach.run_due()
    assert [r.headers["webhook-id"] for r in receiver.received] == [delivery["eventId"]]


def test_a_webhook_names_only_configured_users_and_agents() -> None:
    base = {"users": [{"id": "alice", "token": "a" * 20}], "agents": [{"name": "helper"}]}
    hook_entry = {"name": "ops", "url": "https://hooks.example.com/h", "secret_env": "S"}
    env = {"S": "a-long-enough-secret"}
    with pytest.raises(ConfigError, match=r"webhooks\[0\]\.users: 'carol' is not a user"):
        ServerConfig.from_mapping(
            {**base, "webhooks": [{**hook_entry, "users": ["carol"]}]}, env=env
        )
    with pytest.raises(ConfigError, match=r"webhooks\[0\]\.agents: 'sales' is not an agent"):
        ServerConfig.from_mapping(
            {**base, "webhooks": [{**hook_entry, "agents": ["sales"]}]}, env=env
        )
