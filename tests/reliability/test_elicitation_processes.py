"""An MCP elicitation paused in one ``handrail serve`` process and answered in another, on one
PostgreSQL database, after the first process stopped. On a 2026-07-28 server the call's
``requestState`` is stored with the pending ask, and the second process (its own MCP server
child, sharing the server's state key) sends the retry with the answer and the state,
byte-exact. A legacy server's call was parked in the process that stopped: the answer cancels
the ask (``server_restarted``) and the model reads to call the tool again. While the process
that parked it runs, an answer that reaches another process is stored there and forwarded (over
LISTEN/NOTIFY) to the one holding the call, which finishes it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from racing import Server, _ready, _stop
from server_helpers import TOKENS

from _pg import PostgresCluster
from demo_server import free_port
from handrail.connections import new_secret_key

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = ROOT / "tests" / "connections" / "mcp_test_server.py"
AGENTS = textwrap.dedent(
    '''
    """The elicitation test's agent: no tools of its own, the saved connection's only."""

    from handrail.runtime.agent import Agent

    agents = [Agent("helper", instructions="You help people.")]
    '''
)
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "title": "City"}, "nights": {"type": "integer"}},
    "required": ["city"],
}


def _start(config: Path, folder: Path, name: str, key: str) -> Server:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env.update(ALICE_TOKEN=TOKENS["alice"], ROOT_TOKEN=TOKENS["root"], HANDRAIL_SECRET_KEY=key)
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *sys.path])
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "handrail.cli", "serve", "--config", str(config)),
                *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Server(base=f"http://127.0.0.1:{port}", process=process, log=log)


def _headers(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[user]}"}


async def _connected_in(client: httpx.AsyncClient, server: Server, connection_id: str) -> None:
    """Wait until `server` runs the saved connection (it reads saved connections every 2 s)."""
    for _ in range(300):
        response = await client.get(
            f"{server.base}/api/connections/{connection_id}", headers=_headers("root")
        )
        if response.status_code == 200 and response.json()["data"]["status"]["state"] == (
            "connected"
        ):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"the connection never connected in {server.base}")


@pytest.mark.parametrize("protocol", ["2026-07-28", "legacy"])
async def test_an_elicitation_paused_in_one_process_is_answered_in_another(
    postgres_cluster: PostgresCluster, tmp_path: Path, protocol: str
) -> None:
    (tmp_path / "handrail_elicit_agents.py").write_text(AGENTS, encoding="utf-8")
    config = tmp_path / "handrail.yaml"
    config.write_text(
        f"database_url: {postgres_cluster.new_database_url()!r}\n"
        f"blob_dir: {str(tmp_path / 'blobs')!r}\n"
        "users:\n"
        "  - {id: alice, token_env: ALICE_TOKEN}\n"
        "  - {id: root, token_env: ROOT_TOKEN, admin: true}\n"
        'agents:\n  - import: "handrail_elicit_agents:agents"\n',
        encoding="utf-8",
    )
    key = new_secret_key()
    one = _start(config, tmp_path, "one", key)
    await _ready(one)
    two: Server | None = None
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            body = {
                "app": "custom",
                "name": "Test",
                "kind": "mcp-stdio",
                "mcp": {
                    "command": sys.executable,
                    "args": [str(TEST_SERVER)],
                    "env": {"TEST_STATE_KEY": "s" * 48},
                },
                "protocol": protocol,
                "trusted": True,
            }
            created = await client.post(
                f"{one.base}/api/connections", json=body, headers=_headers("root")
            )
            assert created.status_code == 201, created.text
            connection_id = created.json()["data"]["id"]
            level = await client.put(
                f"{one.base}/api/permissions/{connection_id}",
                json={"level": "read-only"},
                headers=_headers("alice"),
            )
            assert level.status_code == 200, level.text
            history = await client.post(
                f"{one.base}/api/histories", json={}, headers=_headers("alice")
            )
            history_id = history.json()["data"]["id"]
            arguments = {"message": "Where to?", "schema": json.dumps(SCHEMA)}
            paused = await client.post(
                f"{one.base}/api/histories/{history_id}/turn",
                json={"prompt": f"call test_elicit {json.dumps(arguments)}"},
                headers=_headers("alice"),
            )
            assert paused.status_code == 200, paused.text
            pending: dict[str, Any] = paused.json()["data"]["pendingAsk"]
            assert pending["kind"] == "form"
            # The first process stops: whatever it held in memory is gone.
            _stop(one)
            two = _start(config, tmp_path, "two", key)
            await _ready(two)
            await _connected_in(client, two, connection_id)
            view = await client.get(
                f"{two.base}/api/histories/{history_id}", headers=_headers("alice")
            )
            stored = view.json()["data"]["pendingAsk"]
            assert stored["origin"] == "elicitation"
            assert stored["elicitation"] == {"mode": "form", "server": "Test"}
            assert "mcp" not in stored  # the call's state never leaves the server
            answer = {
                "toolCallId": pending["toolCallId"],
                "action": "accept",
                "content": {"values": {"city": "Porto", "nights": 2}},
            }
            done = await client.post(
                f"{two.base}/api/histories/{history_id}/turn",
                json={"askResponse": answer},
                headers=_headers("alice"),
            )
            assert done.status_code == 200, done.text
            result = done.json()["data"]
            assert "pendingAsk" not in result
            if protocol == "legacy":
                assert result["text"].startswith("test_elicit failed: The call of test_elicit")
                assert result["text"].endswith("Call the tool again to ask once more.")
                rows = (
                    await client.get(
                        f"{two.base}/api/histories/{history_id}", headers=_headers("alice")
                    )
                ).json()["data"]["rows"]
                [answered] = [
                    r
                    for r in rows
                    if r["type"] == "tool-result" and r["toolCallId"] == pending["toolCallId"]
                ]
                assert answered["result"] == {"action": "cancel", "reason": "server_restarted"}
            else:
                assert result["text"] == (
                    'test_elicit returned: "accept {\\"city\\": \\"Porto\\", \\"nights\\": 2}"'
                )
    finally:
        if two is not None:
            _stop(two)
        if one.process.poll() is None:
            _stop(one)


CONFIRM = {"title": "Book it", "prompt": "Shall I book the trip?"}


async def _turn(
    client: httpx.AsyncClient, server: Server, history_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(
        f"{server.base}/api/histories/{history_id}/turn", json=body, headers=_headers("alice")
    )
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


@dataclass
class Deployment:
    """Two live ``handrail serve`` processes on one PostgreSQL database, with a saved legacy
    connection to the test server (which writes what it heard to `heard`)."""

    client: httpx.AsyncClient
    one: Server
    two: Server
    heard: Path

    async def conversation(self) -> str:
        history = await self.client.post(
            f"{self.one.base}/api/histories", json={}, headers=_headers("alice")
        )
        return str(history.json()["data"]["id"])

    async def turn(self, server: Server, history_id: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post(
            f"{server.base}/api/histories/{history_id}/turn",
            json=body,
            headers=_headers("alice"),
        )
        assert response.status_code == 200, response.text
        return dict(response.json()["data"])

    async def rows(self, history_id: str) -> list[dict[str, Any]]:
        view = await self.client.get(
            f"{self.two.base}/api/histories/{history_id}", headers=_headers("alice")
        )
        return list(view.json()["data"]["rows"])

    async def heard_lines(self, lines: int) -> list[str]:
        for _ in range(200):
            if self.heard.exists() and len(self.heard.read_text().splitlines()) >= lines:
                break
            await asyncio.sleep(0.05)
        return self.heard.read_text().splitlines() if self.heard.exists() else []


@contextlib.asynccontextmanager
async def deployment(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> AsyncIterator[Deployment]:
    (tmp_path / "handrail_elicit_agents.py").write_text(AGENTS, encoding="utf-8")
    config = tmp_path / "handrail.yaml"
    config.write_text(
        f"database_url: {postgres_cluster.new_database_url()!r}\n"
        f"blob_dir: {str(tmp_path / 'blobs')!r}\n"
        "users:\n"
        "  - {id: alice, token_env: ALICE_TOKEN}\n"
        "  - {id: root, token_env: ROOT_TOKEN, admin: true}\n"
        'agents:\n  - import: "handrail_elicit_agents:agents"\n',
        encoding="utf-8",
    )
    heard = tmp_path / "heard.log"
    key = new_secret_key()
    one = _start(config, tmp_path, "one", key)
    two = _start(config, tmp_path, "two", key)
    try:
        await _ready(one)
        await _ready(two)
        async with httpx.AsyncClient(timeout=60) as client:
            body = {
                "app": "custom",
                "name": "Test",
                "kind": "mcp-stdio",
                "mcp": {
                    "command": sys.executable,
                    "args": [str(TEST_SERVER)],
                    "env": {"TEST_LOG": str(heard)},
                },
                "protocol": "legacy",
                "trusted": True,
            }
            created = await client.post(
                f"{one.base}/api/connections", json=body, headers=_headers("root")
            )
            assert created.status_code == 201, created.text
            connection_id = created.json()["data"]["id"]
            await _connected_in(client, two, connection_id)
            level = await client.put(
                f"{one.base}/api/permissions/{connection_id}",
                json={"level": "read-only"},
                headers=_headers("alice"),
            )
            assert level.status_code == 200, level.text
            yield Deployment(client=client, one=one, two=two, heard=heard)
    finally:
        _stop(two)
        _stop(one)


CONFIRM = {"title": "Book it", "prompt": "Shall I book the trip?"}
ELICIT = "call test_elicit " + json.dumps({"message": "Where to?", "schema": json.dumps(SCHEMA)})


async def test_a_legacy_answer_reaching_another_live_process_goes_on_where_the_call_is_open(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    """The model asks and calls an eliciting tool in one step on process one; the elicitation
    waits in line behind the model's ask. Both answers go to process two: the first brings the
    elicitation up (any process can), the second is stored by process two and forwarded over
    LISTEN/NOTIFY to process one, which holds the open call and finishes it; process two's
    client gets the outcome."""
    async with deployment(postgres_cluster, tmp_path) as live:
        history_id = await live.conversation()
        prompt = f"ask_confirm {json.dumps(CONFIRM)}\n{ELICIT}"
        paused = await live.turn(live.one, history_id, {"prompt": prompt})
        first = paused["pendingAsk"]
        assert first["kind"] == "confirm"
        yes = {
            "toolCallId": first["toolCallId"],
            "action": "accept",
            "content": {"confirmed": True},
        }
        shown = await live.turn(live.two, history_id, {"askResponse": yes})
        elicitation = shown["pendingAsk"]
        assert elicitation["kind"] == "form"
        assert not live.heard.exists()  # the server still waits, in process one
        answer = {
            "toolCallId": elicitation["toolCallId"],
            "action": "accept",
            "content": {"values": {"city": "Porto", "nights": 2}},
        }
        done = await live.turn(live.two, history_id, {"askResponse": answer})
        said = 'accept {\\"city\\": \\"Porto\\", \\"nights\\": 2}'
        assert f'test_elicit returned: "{said}"' in done["text"], done
        assert "pendingAsk" not in done
        assert live.heard.read_text().splitlines() == [
            'Where to?: accept {"city": "Porto", "nights": 2}'
        ]
        rows = await live.rows(history_id)
        [stored] = [
            r
            for r in rows
            if r["type"] == "tool-result" and r["toolCallId"] == elicitation["toolCallId"]
        ]
        assert stored["result"]["action"] == "accept"  # stored as sent, not cancelled
        [result] = [
            r
            for r in rows
            if r["type"] == "tool-result"
            and r["toolName"] == "test_elicit"
            and r["toolCallId"] != elicitation["toolCallId"]
        ]
        assert result["result"] == 'accept {"city": "Porto", "nights": 2}'


@pytest.mark.parametrize("how", ["stop", "message"])
async def test_a_legacy_ask_cancelled_in_another_process_releases_the_open_call(
    postgres_cluster: PostgresCluster, tmp_path: Path, how: str
) -> None:
    """The elicitation's call is open in process one; Stop (or a new message) reaches process
    two: the model reads that the call did not run, and the server, in process one, hears
    ``cancel``."""
    async with deployment(postgres_cluster, tmp_path) as live:
        history_id = await live.conversation()
        paused = await live.turn(live.one, history_id, {"prompt": ELICIT})
        ask = paused["pendingAsk"]
        assert ask["kind"] == "form"
        if how == "stop":
            stopped = await live.client.post(
                f"{live.two.base}/api/histories/{history_id}/stop", headers=_headers("alice")
            )
            assert stopped.status_code == 200, stopped.text
            assert stopped.json()["data"]["cancelledAsk"] == ask["toolCallId"]
            reason = "stopped"
        else:
            await live.turn(live.two, history_id, {"prompt": "Never mind."})
            reason = "user_sent_message"
        assert await live.heard_lines(1) == ["Where to?: cancel"]
        rows = await live.rows(history_id)
        denied = [
            r["result"]
            for r in rows
            if r["type"] == "tool-result"
            and r["toolName"] == "test_elicit"
            and r["toolCallId"] != ask["toolCallId"]
        ]
        assert denied == [{"type": "execution-denied", "reason": reason}]
