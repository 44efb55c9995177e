"""An action set saved as a connection reads its secrets from the connection's own sealed
secrets (by the names its file gives: ``auth.secret_env`` and ``{source: secret, env: NAME}``
headers), never from the server's environment; an action set of the configuration file still
reads the environment. The API is a real HTTP server on loopback that checks the headers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, sqlite_url, start_api
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from handrail.actions import load_action_set
from handrail.connections import new_secret_key
from handrail.demo.booking_api import serve_booking_api
from handrail.runtime.agent import Agent

API_KEY = "canary-api-key-5b1d7e"
OTHER = "canary-other-9c2e44"

ACTIONS = """\
id: keyed
name: Keyed
base_url: http://127.0.0.1:9
trusted: true
auth: {type: api-key, header: X-Api-Key, secret_env: TEST_API_KEY}
tools:
  - name: whoami
    description: Which keys the request carried.
    input: {type: object, properties: {}}
    request:
      method: GET
      path: /whoami
      headers:
        X-Other: {source: secret, env: TEST_OTHER_TOKEN}
    behavior:
      effect: read-only
"""


async def whoami(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "apiKey": request.headers.get("x-api-key") == API_KEY,
            "other": request.headers.get("x-other") == OTHER,
            "sent": sorted(h for h in request.headers if h.startswith("x-")),
        }
    )


@pytest.fixture
async def keyed_api() -> AsyncIterator[str]:
    app = Starlette(routes=[Route("/whoami", whoami)])
    async with serve_booking_api(app) as base_url:
        yield base_url


@pytest.fixture
def actions_file(tmp_path: Path) -> Path:
    file = tmp_path / "keyed.yaml"
    file.write_text(ACTIONS, encoding="utf-8")
    return file


@pytest.fixture
async def sapi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    monkeypatch.delenv("TEST_API_KEY", raising=False)
    monkeypatch.delenv("TEST_OTHER_TOKEN", raising=False)
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[Agent("helper")]) as api:
        yield api


def call(name: str) -> str:
    return f"call {name} {{}}"


def results(events: list[dict[str, Any]]) -> list[Any]:
    return [e["toolResult"]["result"] for e in events if "toolResult" in e]


async def read_only(api: Api, connection_id: str) -> None:
    response = await api.request(
        "PUT", f"/permissions/{connection_id}", json={"level": "read-only"}
    )
    assert response.status_code == 200, response.text


async def test_a_saved_action_set_sends_the_connections_own_secrets(
    sapi: Api, keyed_api: str, actions_file: Path
) -> None:
    body = {
        "app": "custom",
        "name": "Keyed",
        "kind": "actions",
        "actions": str(actions_file),
        "settings": {"baseUrl": keyed_api},
        "secrets": {"TEST_API_KEY": API_KEY, "TEST_OTHER_TOKEN": OTHER},
        "trusted": True,
    }
    response = await sapi.post("/connections", body, user="root")
    assert response.status_code == 201, response.text
    added = response.json()["data"]
    assert added["status"]["state"] == "connected", added["status"]
    assert added["secretsSet"] == ["TEST_API_KEY", "TEST_OTHER_TOKEN"]
    await read_only(sapi, added["id"])
    ran = await sapi.say(call("keyed_whoami"))
    [result] = results(ran.events)
    assert result["status"] == "completed", result
    assert result["data"] == {"apiKey": True, "other": True, "sent": ["x-api-key", "x-other"]}
    text = json.dumps(ran.events)
    assert API_KEY not in text
    assert OTHER not in text


async def test_a_missing_secret_names_the_connections_secrets_then_setting_it_connects(
    sapi: Api, keyed_api: str, actions_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's environment has them: a saved connection does not read it.
    monkeypatch.setenv("TEST_API_KEY", API_KEY)
    monkeypatch.setenv("TEST_OTHER_TOKEN", OTHER)
    body = {
        "app": "custom",
        "name": "Keyed",
        "kind": "actions",
        "actions": str(actions_file),
        "settings": {"baseUrl": keyed_api},
        "secrets": {"TEST_API_KEY": API_KEY},
    }
    added = (await sapi.post("/connections", body, user="root")).json()["data"]
    status = added["status"]
    assert status["state"] == "error"
    assert (
        "the secret TEST_OTHER_TOKEN is not set on this connection; set it in the connection's "
        "secrets" in status["message"]
    )
    assert "TEST_API_KEY" not in status["message"]
    assert "environment" not in status["message"]
    changed = await sapi.request(
        "PATCH",
        f"/connections/{added['id']}",
        user="root",
        json={"secrets": {"TEST_OTHER_TOKEN": OTHER}, "trusted": True},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["status"]["state"] == "connected"
    await read_only(sapi, added["id"])
    ran = await sapi.say(call("keyed_whoami"))
    assert results(ran.events)[0]["data"]["other"] is True


async def test_a_configured_action_set_still_reads_the_environment(
    tmp_path: Path, keyed_api: str, actions_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_API_KEY", API_KEY)
    monkeypatch.setenv("TEST_OTHER_TOKEN", OTHER)
    action_set = load_action_set(actions_file)
    action_set = dataclasses.replace(action_set, base_url=keyed_api)
    agents = [Agent("helper", action_sets=[action_set])]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents) as api:
        await read_only(api, "keyed")
        ran = await api.say(call("whoami"))
        [result] = results(ran.events)
        assert result["data"]["apiKey"] is True, result
        assert result["data"]["other"] is True


STAMP = """\
id: stamper
name: Stamper
base_url: http://127.0.0.1:9
trusted: true
auth: {type: api-key, header: X-Api-Key, secret_env: TEST_API_KEY}
tools:
  - name: stamp
    description: Stamp a note.
    input:
      type: object
      properties: {note: {type: string}}
      required: [note]
    request:
      method: POST
      path: /stamp
      headers:
        X-Other: {source: secret, env: TEST_OTHER_TOKEN}
      body: {note: $.input.note}
    behavior:
      effect: side-effect
      confirmation:
        required: true
        preview: {note: $.input.note}
"""


async def test_the_audit_log_of_a_confirmed_call_holds_none_of_its_secrets(
    sapi: Api, tmp_path: Path
) -> None:
    """A canary: a side-effecting action that sends two of the connection's secrets is asked,
    confirmed and sent; neither secret is in the audit log, its exports, or the events."""
    stamped: list[bool] = []

    async def stamp(request: Request) -> JSONResponse:
        ok = request.headers.get("x-api-key") == API_KEY and request.headers.get("x-other") == OTHER
        stamped.append(ok)
        return JSONResponse({"stamped": True})

    file = tmp_path / "stamper.yaml"
    file.write_text(STAMP, encoding="utf-8")
    app = Starlette(routes=[Route("/stamp", stamp, methods=["POST"])])
    async with serve_booking_api(app) as base_url:
        body = {
            "app": "custom",
            "name": "Stamper",
            "kind": "actions",
            "actions": str(file),
            "settings": {"baseUrl": base_url},
            "secrets": {"TEST_API_KEY": API_KEY, "TEST_OTHER_TOKEN": OTHER},
            "trusted": True,
        }
        response = await sapi.post("/connections", body, user="root")
        assert response.status_code == 201, response.text
        added = response.json()["data"]
        level = {"level": "non-consequential"}
        await sapi.request("PUT", f"/permissions/{added['id']}", json=level)
        asked = await sapi.say('call stamper_stamp {"note": "Hello"}')
        assert asked.ask["origin"] == "confirmation"
        yes = {"action": "accept", "content": {"confirmed": True}}
        done = await sapi.answer(asked.history_id, asked.ask["toolCallId"], yes)
        assert done.status == 200, done.problem
        assert stamped == [True]
        texts = [json.dumps(asked.events), json.dumps(done.events)]
        for user in ("alice", "root"):
            page = await sapi.get("/audit", user=user)
            assert page.status_code == 200, page.text
            actions = [r["action"] for r in page.json()["data"]]
            assert "gate.approved" in actions, actions
            texts.append(page.text)
            for export in ("jsonl", "csv"):
                texts.append((await sapi.get(f"/audit?format={export}", user=user)).text)
        for text in texts:
            assert API_KEY not in text
            assert OTHER not in text
