"""HTTP actions over the API: the confirmation ask over SSE, answering it, and
``GET /api/confirmations/{id}`` for its owner only; a config with a broken action set refuses
to start."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from server_helpers import compact, config_for, sqlite_url, start_api

from handrail.demo.booking_api import (
    BOOKING_YAML,
    booking_action_set,
    create_booking_app,
    serve_booking_api,
)
from handrail.errors import ConfigError
from handrail.runtime.agent import Agent
from handrail.server.config import load_config

DATE = "2026-12-24"
USERS = "users:\n  - {id: alice, token: secret-alice-token}\n"


async def test_confirm_over_http_and_the_status_route(tmp_path: Path) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        agent = Agent("concierge", action_sets=[booking_action_set(base_url)])
        async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
            await api.store.permissions.set("alice", "booking", "non-consequential")
            prompt = "call book_slot " + compact({"date": DATE, "time": "19:00", "notes": "Hi"})
            stream = await api.say(prompt)
            ask_event = next(e for e in stream.events if "ask" in e)
            ask = ask_event["ask"]
            history_id = ask_event["historyId"]
            assert ask["origin"] == "confirmation"
            assert ask["preview"] == {"date": DATE, "time": "19:00", "notes": "Hi"}
            assert "expiresAt" in ask
            history = await api.history(history_id)
            assert history["pendingAsk"]["preview"] == ask["preview"]
            assert "confirmationId" not in history["pendingAsk"]
            assert "slt_" not in json.dumps(history)
            confirmation_id = ask["toolCallId"].removeprefix("confirmation_")

            pending = await api.get(f"/confirmations/{confirmation_id}")
            assert pending.status_code == 200
            assert pending.json()["data"]["state"] == "pending"
            assert pending.json()["data"]["request"] == {"method": "POST", "path": "/bookings"}
            assert "slt_" not in pending.text
            assert (
                await api.get(f"/confirmations/{confirmation_id}", user="bob")
            ).status_code == 404
            assert (await api.get("/confirmations/" + "0" * 24)).status_code == 404

            stream = await api.answer(
                history_id, ask["toolCallId"], {"action": "accept", "content": {"confirmed": True}}
            )
            assert stream.status == 200
            result = next(e for e in stream.events if "toolResult" in e)["toolResult"]["result"]
            assert result["status"] == "completed"
            done = await api.get(f"/confirmations/{confirmation_id}")
            assert done.json()["data"]["state"] == "succeeded"
            assert done.json()["data"]["outcome"]["httpStatus"] == 201
            again = await api.answer(
                history_id, ask["toolCallId"], {"action": "accept", "content": {"confirmed": True}}
            )
            assert again.status == 409
            async with httpx.AsyncClient(base_url=base_url) as http:
                stats = (await http.get("/stats")).json()["requests"]
            assert [r["method"] for r in stats if r["path"] == "/bookings"] == ["POST"]


def test_a_broken_action_set_stops_start_up(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        BOOKING_YAML.read_text(encoding="utf-8").replace(
            "effect: side-effect", "effect: read-only"
        ),
        encoding="utf-8",
    )
    config = tmp_path / "handrail.yaml"
    config.write_text(
        USERS + "agents:\n  - name: concierge\n    actions: [broken.yaml]\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config, env={})
    message = str(caught.value)
    assert "agents[0].actions[0]" in message
    assert "CONFIG_EFFECT_INVALID" in message
    good = tmp_path / "good.yaml"
    good.write_text(BOOKING_YAML.read_text(encoding="utf-8"), encoding="utf-8")
    config.write_text(
        USERS + "agents:\n  - name: concierge\n    actions: [good.yaml]\n", encoding="utf-8"
    )
    loaded = load_config(config, env={})
    assert sorted(loaded.agents[0].actions) == ["book_slot", "find_slots"]
    assert config_for  # the helper module is shared with the other server tests
