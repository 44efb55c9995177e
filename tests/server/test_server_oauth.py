"""Signing in to an MCP server that requires authorization (OAuth 2.1 with PKCE, discovered from
the server) through the SDK's client auth, against an authorization server run in the test on
loopback (`tests/connections/mcp_auth_server.py`: the SDK's `MCPServer` with ``auth=`` and an
authorization server provider). The browser's part is plain HTTP: the test follows the
authorization URL's redirect and brings its answer to the callback route.

Adding the connection waits on the admin's sign-in (``state: starting``, ``signIn: waiting``,
the ``authorize`` URL for that admin only); the callback is checked by its state (a wrong or
used one is refused); tokens are sealed among the connection's secrets and refreshed; a
revoked token turns the status to ``error`` with the way forward; a refused sign-in keeps the
connection's settings."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from server_helpers import Api, sqlite_url, start_api

from handrail.connections import SecretBox, new_secret_key
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import ModelRequest
from handrail.runtime.models.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
AUTH_SERVER = ROOT / "tests" / "connections" / "mcp_auth_server.py"


class RecordingModel(ScriptedModel):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AuthServer:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"

    def counts(self) -> dict[str, int]:
        return dict(httpx.get(f"{self.base}/test/counts", timeout=5).json())

    def revoke(self) -> None:
        assert httpx.post(f"{self.base}/test/revoke", timeout=5).status_code == 200

    def deny_next(self) -> None:
        assert httpx.post(f"{self.base}/test/deny-next", timeout=5).status_code == 200


def _serve(token_seconds: int) -> Iterator[AuthServer]:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(AUTH_SERVER),
            "--port",
            str(port),
            "--token-seconds",
            str(token_seconds),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = AuthServer(port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{server.base}/test/counts", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield server
    process.terminate()
    process.wait(10)


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    yield from _serve(3600)


@pytest.fixture
def short_tokens() -> Iterator[AuthServer]:
    """Access tokens that last two seconds, so the client refreshes them."""
    yield from _serve(2)


#: How long `slow_tokens` access tokens last.
SLOW_TOKEN_S = 6


@pytest.fixture
def slow_tokens() -> Iterator[AuthServer]:
    """Access tokens that last `SLOW_TOKEN_S` seconds: long enough for a second process to
    start and an admin to change the connection before they expire, short enough for a
    refresh after that."""
    yield from _serve(SLOW_TOKEN_S)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = new_secret_key()
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", value)
    return value


@pytest.fixture
def model() -> RecordingModel:
    return RecordingModel()


AGENTS = [Agent("helper", instructions="You help people.")]


@pytest.fixture
async def oapi(tmp_path: Path, key: str, model: RecordingModel) -> AsyncIterator[Api]:
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=AGENTS, model=model) as api:
        yield api


def remote(server: AuthServer, **extra: Any) -> dict[str, Any]:
    return {
        "app": "custom",
        "name": "Remote",
        "kind": "mcp-http",
        "mcp": {"url": server.url},
        "trusted": True,
        **extra,
    }


def browser(authorize: str) -> str:
    """What the admin's browser does at the authorization server: it is sent back to the
    callback URL (the path and query on handrail)."""
    response = httpx.get(authorize, follow_redirects=False, timeout=10)
    assert response.status_code in (302, 303, 307), response.text
    location = urlparse(response.headers["location"])
    assert location.path == "/api/oauth/callback", location
    return f"{location.path}?{location.query}"


async def callback(api: Api, path: str) -> httpx.Response:
    return await api.client.get(path)  # no token: a browser coming back


async def sign_in(api: Api, connection: dict[str, Any]) -> dict[str, Any]:
    status = connection["status"]
    assert (status["state"], status["signIn"]) == ("starting", "waiting"), status
    response = await callback(api, browser(status["authorize"]))
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def saved_oauth(api: Api, connection_id: str, key: str) -> dict[str, Any]:
    return dict(json.loads((await stored_secrets(api, connection_id, key))["oauth"]))


async def stored_secrets(api: Api, connection_id: str, key: str) -> dict[str, str]:
    from sqlalchemy import Connection, select

    from handrail.store.tables import connections

    def read(connection: Connection) -> str | None:
        row = connection.execute(
            select(connections.c.secrets).where(connections.c.id == connection_id)
        ).first()
        return None if row is None else row[0]

    return SecretBox(key).open(await api.store.db.read(read))


async def every_row(api: Api) -> str:
    from sqlalchemy import Connection, select

    from handrail.store.tables import metadata

    def dump(connection: Connection) -> str:
        out = []
        for table in metadata.sorted_tables:
            out.extend(str(tuple(row)) for row in connection.execute(select(table)))
        return "\n".join(out)

    return await api.store.db.read(dump)


def call(name: str) -> str:
    return f"call {name} {{}}"


def results(events: list[dict[str, Any]]) -> list[Any]:
    return [e["toolResult"]["result"] for e in events if "toolResult" in e]


async def read_only(api: Api, connection_id: str) -> None:
    response = await api.request(
        "PUT", f"/permissions/{connection_id}", user="alice", json={"level": "read-only"}
    )
    assert response.status_code == 200, response.text


# --- the tests ---------------------------------------------------------------------------------


async def test_adding_a_server_that_requires_sign_in_waits_on_the_admin_then_connects(
    oapi: Api,
    auth_server: AuthServer,
    key: str,
    model: RecordingModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    response = await oapi.post("/connections", remote(auth_server), user="root")
    assert response.status_code == 201, response.text
    added = response.json()["data"]
    status = added["status"]
    assert status["state"] == "starting"
    assert status["signIn"] == "waiting"
    assert status["message"] == "Waiting for root to sign in to Remote in their browser."
    assert status["authorize"].startswith(f"{auth_server.base}/authorize?")
    assert "code_challenge_method=S256" in status["authorize"]
    assert "redirect_uri=http%3A%2F%2Fhandrail%2Fapi%2Foauth%2Fcallback" in status["authorize"]
    # The URL is for the admin who started the sign-in only.
    seen = (await oapi.get(f"/connections/{added['id']}", user="bob")).json()["data"]
    assert seen["status"]["signIn"] == "waiting"
    assert "authorize" not in seen["status"]
    again = (await oapi.get(f"/connections/{added['id']}", user="root")).json()["data"]
    assert again["status"]["authorize"] == status["authorize"]

    path = browser(status["authorize"])
    done = await callback(oapi, path)
    assert done.status_code == 200, done.text
    data = done.json()["data"]
    assert data["status"]["state"] == "connected", data
    assert data["status"]["toolCount"] == 1
    assert "authorize" not in data["status"]
    assert "signIn" not in data["status"]
    assert auth_server.counts()["registered"] == 1

    # The same callback again, and a made-up one, are refused and change nothing.
    used = await callback(oapi, path)
    assert used.status_code == 400
    problem = used.json()
    assert (problem["title"], problem["code"]) == ("No sign-in under way", "OAUTH_STATE_INVALID")
    assert "finished already" in problem["detail"]
    assert "Sign in" in problem["detail"]
    wrong = await callback(oapi, "/api/oauth/callback?code=x&state=made-up")
    assert wrong.status_code == 400
    assert "No sign-in under way has this state" in wrong.json()["detail"]
    none = await callback(oapi, "/api/oauth/callback?code=x")
    assert none.status_code == 400
    assert none.json()["fields"] == {"state": "is required"}

    # Its tools run with the token.
    await read_only(oapi, added["id"])
    ran = await oapi.say(call("remote_whoami"))
    [result] = results(ran.events)
    assert result.startswith("client ")

    # The tokens are sealed among the connection's secrets: never in a row, a response, a
    # log line or a prompt.
    saved = await saved_oauth(oapi, added["id"], key)
    token = saved["tokens"]["access_token"]
    refresh = saved["tokens"]["refresh_token"]
    assert token.startswith("at-")
    assert refresh.startswith("rt-")
    assert saved["client"]["redirect_uris"] == ["http://handrail/api/oauth/callback"]
    listed = (await oapi.get("/connections", user="root")).text
    rows = await every_row(oapi)
    prompts = json.dumps([repr(r) for r in model.requests])
    for value in (token, refresh):
        assert value not in listed
        assert value not in rows
        assert value not in caplog.text
        assert value not in prompts
    assert (await oapi.get(f"/connections/{added['id']}", user="root")).json()["data"][
        "secretsSet"
    ] == []


async def test_the_saved_sign_in_serves_the_next_start(
    oapi: Api, auth_server: AuthServer, tmp_path: Path
) -> None:
    added = (await oapi.post("/connections", remote(auth_server), user="root")).json()["data"]
    assert (await sign_in(oapi, added))["status"]["state"] == "connected"
    # Another server process on the same database starts it with the saved tokens.
    async with start_api(sqlite_url(tmp_path), tmp_path / "other", agents=AGENTS) as other:
        seen = (await other.get(f"/connections/{added['id']}", user="root")).json()["data"]
        assert seen["status"]["state"] == "connected", seen["status"]
        assert "signIn" not in seen["status"]
    assert auth_server.counts()["registered"] == 1
    assert auth_server.counts()["issued"] == 1


async def test_a_process_waiting_for_the_sign_in_takes_it_once_made(
    oapi: Api, auth_server: AuthServer, tmp_path: Path
) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path / "other", agents=AGENTS) as other:
        added = (await oapi.post("/connections", remote(auth_server), user="root")).json()["data"]

        async def seen() -> dict[str, Any]:
            data = (await other.get(f"/connections/{added['id']}", user="root")).json()["data"]
            return dict(data["status"])

        # The other process starts it too, with no sign-in to use: it waits for one.
        for _ in range(100):
            if (await seen())["state"] == "error":
                break
            await asyncio.sleep(0.1)
        assert (await seen())["signIn"] == "needed"
        assert (await sign_in(oapi, added))["status"]["state"] == "connected"
        for _ in range(100):
            if (await seen())["state"] == "connected":
                break
            await asyncio.sleep(0.1)
        assert (await seen())["state"] == "connected"
        assert "signIn" not in await seen()
    assert auth_server.counts()["registered"] == 1


async def test_tokens_are_refreshed_and_saved_again(
    oapi: Api, short_tokens: AuthServer, key: str
) -> None:
    added = (await oapi.post("/connections", remote(short_tokens), user="root")).json()["data"]
    assert (await sign_in(oapi, added))["status"]["state"] == "connected"
    first = (await saved_oauth(oapi, added["id"], key))["tokens"]
    await read_only(oapi, added["id"])
    await asyncio.sleep(2.5)  # the access token expires
    ran = await oapi.say(call("remote_whoami"))
    [result] = results(ran.events)
    assert result.startswith("client "), result
    assert short_tokens.counts()["refreshed"] >= 1
    second = (await saved_oauth(oapi, added["id"], key))["tokens"]
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]


async def test_a_refresh_in_another_process_keeps_an_admins_change_of_the_secrets(
    oapi: Api, slow_tokens: AuthServer, key: str, tmp_path: Path
) -> None:
    """Another process whose link started before an admin changed the secrets refreshes the
    tokens before it starts again with the change: the tokens are saved among the secrets
    stored then, so the admin's change stays (it used to be written over with the secrets
    that link started with)."""
    server = slow_tokens
    added = (await oapi.post("/connections", remote(server), user="root")).json()["data"]
    assert (await sign_in(oapi, added))["status"]["state"] == "connected"
    issued = time.monotonic()  # the tokens were issued before this
    await read_only(oapi, added["id"])
    first = (await saved_oauth(oapi, added["id"], key))["tokens"]
    async with start_api(sqlite_url(tmp_path), tmp_path / "other", agents=AGENTS) as other:
        seen = (await other.get(f"/connections/{added['id']}", user="root")).json()["data"]
        assert seen["status"]["state"] == "connected", seen["status"]

        # The other process keeps the link it started (it reads the saved connections every
        # couple of seconds, and would start it again with the change).
        async def keep_the_link() -> None:
            return None

        other.app.state.connections.sync = keep_the_link
        patched = await oapi.request(
            "PATCH",
            f"/connections/{added['id']}",
            user="root",
            json={"secrets": {"note": "rotated"}},
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["data"]["secretsSet"] == ["note"]
        # This process started its link again with the tokens still good: no refresh yet.
        assert server.counts()["refreshed"] == 0
        await asyncio.sleep(max(0.0, issued + SLOW_TOKEN_S + 0.3 - time.monotonic()))
        ran = await other.say(call("remote_whoami"))
        [result] = results(ran.events)
        assert result.startswith("client "), result
    assert server.counts()["refreshed"] == 1
    stored = await stored_secrets(oapi, added["id"], key)
    assert stored["note"] == "rotated"
    tokens = json.loads(stored["oauth"])["tokens"]
    assert tokens["refresh_token"] != first["refresh_token"]  # the refreshed ones


async def test_a_revoked_token_is_an_error_with_the_way_forward_then_a_new_sign_in(
    oapi: Api, auth_server: AuthServer
) -> None:
    added = (await oapi.post("/connections", remote(auth_server), user="root")).json()["data"]
    await sign_in(oapi, added)
    await read_only(oapi, added["id"])
    auth_server.revoke()
    ran = await oapi.say(call("remote_whoami"))
    [result] = results(ran.events)
    assert "sign-in was revoked or expired" in result
    assert "an admin must sign in to this connection again" in result

    async def status() -> dict[str, Any]:
        data = (await oapi.get(f"/connections/{added['id']}", user="root")).json()["data"]
        return dict(data["status"])

    for _ in range(100):
        if (await status())["state"] == "error":
            break
        await asyncio.sleep(0.1)
    now = await status()
    assert now["state"] == "error"
    assert now["signIn"] == "needed"
    assert f"POST /api/connections/{added['id']}/authorize" in now["message"]
    assert "Sign in on the Connections page" in now["message"]

    # Only an admin may sign in again; then the same flow connects it.
    refused = await oapi.post(f"/connections/{added['id']}/authorize", user="alice")
    assert refused.status_code == 403
    again = await oapi.post(f"/connections/{added['id']}/authorize", user="root")
    assert again.status_code == 200, again.text
    assert (await sign_in(oapi, again.json()["data"]))["status"]["state"] == "connected"
    ran = await oapi.say(call("remote_whoami"))
    assert results(ran.events)[0].startswith("client ")
    activity = (await oapi.get("/activity", user="root")).json()["data"]
    assert "connection.authorized" in [a["action"] for a in activity]


async def test_a_refused_sign_in_keeps_the_connection_and_its_settings(
    oapi: Api, auth_server: AuthServer
) -> None:
    auth_server.deny_next()
    body = remote(auth_server, timeout=42, agents=["helper"])
    added = (await oapi.post("/connections", body, user="root")).json()["data"]
    status = added["status"]
    response = await callback(oapi, browser(status["authorize"]))
    assert response.status_code == 200, response.text
    failed = response.json()["data"]["status"]
    assert failed["state"] == "error"
    assert "did not finish" in failed["message"]
    assert "The person said no." in failed["message"]
    kept = (await oapi.get(f"/connections/{added['id']}", user="root")).json()["data"]
    assert kept["mcp"] == {"url": auth_server.url, "headers": {}}
    assert (kept["timeout"], kept["agents"], kept["name"]) == (42, ["helper"], "Remote")
    assert kept["status"]["state"] == "error"
    # A browser sees a page, not JSON.
    again = await oapi.post(f"/connections/{added['id']}/authorize", user="root")
    path = browser(again.json()["data"]["status"]["authorize"])
    page = await oapi.client.get(path, headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "<h1>Signed in to Remote</h1>" in page.text
    # The tab reloaded (the callback used): a page that says so and the way forward, not
    # problem JSON, and the connection stays connected.
    reloaded = await oapi.client.get(path, headers={"Accept": "text/html"})
    assert reloaded.status_code == 400
    assert reloaded.headers["content-type"].startswith("text/html")
    assert reloaded.headers["cache-control"] == "no-store"
    assert "<h1>Signing in did not work</h1>" in reloaded.text
    assert "finished already" in reloaded.text
    assert "Sign in on the Connections page" in reloaded.text
    assert '"status"' not in reloaded.text
    kept = (await oapi.get(f"/connections/{added['id']}", user="root")).json()["data"]
    assert kept["status"]["state"] == "connected"


async def test_a_sign_in_replaced_by_a_newer_one_is_refused(
    oapi: Api, auth_server: AuthServer
) -> None:
    added = (await oapi.post("/connections", remote(auth_server), user="root")).json()["data"]
    old = added["status"]["authorize"]
    # A refresh while it waits starts the sign-in again, and the first one is over.
    again = (await oapi.post(f"/connections/{added['id']}/refresh", user="root")).json()
    new = again["data"]["status"]["authorize"]
    assert new != old
    stale = await callback(oapi, browser(old))
    assert stale.status_code == 400
    assert "stopped" in stale.json()["detail"]
    assert (await sign_in(oapi, again["data"]))["status"]["state"] == "connected"


async def test_without_a_secret_key_the_sign_in_is_not_started(
    tmp_path: Path, auth_server: AuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HANDRAIL_SECRET_KEY", raising=False)
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=AGENTS) as api:
        added = (await api.post("/connections", remote(auth_server), user="root")).json()["data"]
        assert added["status"]["state"] == "error"
        assert "HANDRAIL_SECRET_KEY" in added["status"]["message"]
        assert added["status"]["signIn"] == "needed"
        assert "authorize" not in added["status"]
