"""Connections over HTTP, with real MCP servers: the notes server of this project (the official
SDK's server API) and the test server of ``tests/connections`` over stdio and streamable HTTP,
and the npm reference server ``@modelcontextprotocol/server-everything`` over stdio.

A connection is added over the API while the server runs; its tools are listed with their
classes; the model (the scripted one: ``call <modelName> <json>``) calls them through the same
gates as any tool: the permission ask on first use, approvals for what the level does not
allow, an untrusted server's read-only claim ignored. A server killed mid-call, a slow call and
a removed connection are tool errors that name the way forward. Secrets never show in a
response, a row, a log line or a prompt."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import Api, Stream, sqlite_url, start_api

from handrail.connections import new_secret_key
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import ModelRequest
from handrail.runtime.models.scripted import ScriptedModel
from npm_packages import EVERYTHING, installed

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = ROOT / "tests" / "connections" / "mcp_test_server.py"
CANARY = "canary-7f3a91e2-do-not-leak"
READ_ONLY = {"action": "accept", "content": {"selected": ["read-only"]}}
APPROVE = {"action": "accept", "content": {"confirmed": True}}


class RecordingModel(ScriptedModel):
    """The scripted model, keeping every request (system prompt, messages, tools)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


@pytest.fixture
def model() -> RecordingModel:
    return RecordingModel()


@pytest.fixture
async def capi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: RecordingModel
) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    agents = [Agent("helper", instructions="You help people."), Agent("quiet", asks=False)]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents, model=model) as api:
        yield api


def test_stdio(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TEST_SERVER)], **extra}


test_stdio.__test__ = False  # type: ignore[attr-defined]


async def add(api: Api, body: dict[str, Any], *, user: str = "root") -> dict[str, Any]:
    response = await api.post("/connections", body, user=user)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


async def tools(api: Api, connection_id: str, user: str = "alice") -> dict[str, dict[str, Any]]:
    response = await api.get(f"/connections/{connection_id}/tools", user=user)
    assert response.status_code == 200, response.text
    return {t["name"]: t for t in response.json()["data"]}


def call(model_name: str, arguments: dict[str, Any] | None = None) -> str:
    return f"call {model_name} {json.dumps(arguments or {})}"


def results(stream: Stream) -> list[Any]:
    return [e["toolResult"]["result"] for e in stream.events if "toolResult" in e]


async def set_level(api: Api, connection_id: str, level: str, user: str = "alice") -> None:
    response = await api.request(
        "PUT", f"/permissions/{connection_id}", user=user, json={"level": level}
    )
    assert response.status_code == 200, response.text


# --- the catalog and adding ------------------------------------------------------------------


async def test_catalog_lists_the_shipped_apps(capi: Api) -> None:
    response = await capi.get("/catalog", user="bob")
    assert response.status_code == 200
    apps = {a["slug"]: a for a in response.json()["data"]}
    assert sorted(apps) == ["booking", "everything", "memory", "notes"]
    assert apps["memory"]["config"][0]["key"] == "memoryFile"
    assert apps["notes"]["agentInstructions"]["id"] == "notes.usage"


async def test_notes_added_while_running_lists_its_tools_with_classes(capi: Api) -> None:
    before = (await capi.get("/connections", user="root")).json()["data"]
    assert [c["source"] for c in before] == []  # the agents have no tools of their own
    notes = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    assert notes["status"]["state"] == "connected", notes["status"]
    assert notes["status"]["toolCount"] == 4
    assert notes["app"] == "notes"
    assert notes["kind"] == "mcp-stdio"
    assert notes["secretsSet"] == []
    assert notes["serverInstructions"] == (
        "A notes app. Read notes_house_style before adding a note."
    )
    listed = await tools(capi, notes["id"])
    assert {name: (t["modelName"], t["safetyClass"]) for name, t in listed.items()} == {
        "list_notes": ("notes_list_notes", "read-only"),
        "add_note": ("notes_add_note", "mutating"),
        "delete_note": ("notes_delete_note", "consequential"),
        "notes_house_style": ("notes_notes_house_style", "read-only"),
    }
    assert listed["notes_house_style"]["annotations"] == {
        "readOnlyHint": True,
        "openWorldHint": False,
        "skill": True,
    }
    assert listed["add_note"]["override"] is None
    # Non-admins read it without the admin-only parts.
    seen = (await capi.get(f"/connections/{notes['id']}", user="bob")).json()["data"]
    assert "serverInstructions" not in seen
    assert seen["status"]["state"] == "connected"


async def test_permission_ask_on_first_use_then_a_read_only_tool_runs(
    capi: Api, model: RecordingModel
) -> None:
    notes = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    asked = await capi.say(call("notes_list_notes"))
    ask = asked.ask
    assert ask["origin"] == "permission"
    assert ask["connectionId"] == notes["id"]
    answered = await capi.answer(asked.history_id, ask["toolCallId"], READ_ONLY)
    assert answered.status == 200, answered.problem
    [listed] = results(answered)
    assert json.loads(listed)[0]["title"] == "Shopping list"
    # The next read-only call runs at once; the server's instructions reach no prompt.
    again = await capi.say(call("notes_notes_house_style"), history_id=asked.history_id)
    assert results(again) == [
        "Title a note with two to four words in sentence case. Write the body as one line. "
        "Never delete a note without saying which one first."
    ]
    assert all("A notes app." not in r.system for r in model.requests)
    # The connection's own instructions (its app's template, enabled) do.
    assert "Say which note you will delete" in model.requests[-1].system
    offered = {spec.name for spec in model.requests[-1].tools}
    assert {"notes_list_notes", "notes_delete_note"} <= offered


async def test_a_destructive_tool_pauses_on_approval_and_runs_once_after(capi: Api) -> None:
    notes = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    await set_level(capi, notes["id"], "non-consequential")
    added = await capi.say(call("notes_add_note", {"title": "Fresh", "body": "New."}))
    assert results(added) == ["Added the note “Fresh”."]
    paused = await capi.say(call("notes_delete_note", {"title": "Old draft"}))
    ask = paused.ask
    assert ask["origin"] == "approval"
    assert results(paused) == []
    done = await capi.answer(paused.history_id, ask["toolCallId"], APPROVE)
    assert results(done) == ["Deleted the note “Old draft”."]
    listing = await capi.say(call("notes_list_notes"), history_id=paused.history_id)
    titles = [n["title"] for n in json.loads(results(listing)[0])]
    assert titles == ["Shopping list", "Meeting agenda", "Fresh"]


async def test_an_untrusted_servers_read_only_claim_is_ignored(capi: Api) -> None:
    test = await add(
        capi, {"app": "custom", "name": "Test", "kind": "mcp-stdio", "mcp": test_stdio()}
    )
    listed = await tools(capi, test["id"])
    assert listed["echo"]["annotations"]["readOnlyHint"] is True
    assert listed["echo"]["safetyClass"] == "consequential"
    await set_level(capi, test["id"], "read-only")
    paused = await capi.say(call("test_echo", {"text": "hi"}))
    assert paused.ask["origin"] == "approval"
    # Trusting it (admin) makes its hints count: echo then runs at read-only.
    changed = await capi.request(
        "PATCH", f"/connections/{test['id']}", user="root", json={"trusted": True}
    )
    assert changed.status_code == 200, changed.text
    ran = await capi.say(call("test_echo", {"text": "hi"}))
    assert results(ran) == ["echo: hi"]


async def test_overrides_fix_a_tools_class(capi: Api) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(),
            "trusted": True,
            "overrides": {"echo": "consequential", "wipe": "read-only"},
        },
    )
    listed = await tools(capi, test["id"])
    assert (listed["echo"]["safetyClass"], listed["echo"]["override"]) == (
        "consequential",
        "consequential",
    )
    assert listed["echo"]["hintsClass"] == "read-only"
    assert listed["wipe"]["safetyClass"] == "read-only"
    await set_level(capi, test["id"], "read-only")
    assert (await capi.say(call("test_echo", {"text": "x"}))).ask["origin"] == "approval"


# --- failures the model can act on ---------------------------------------------------------


async def test_a_server_killed_mid_call_is_a_tool_error_and_it_starts_again(capi: Api) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(),
            "trusted": True,
        },
    )
    await set_level(capi, test["id"], "read-only")
    pid = int(results(await capi.say(call("test_pid")))[0])
    slow = asyncio.create_task(capi.say(call("test_slow", {"seconds": 30})))
    await asyncio.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    stream = await asyncio.wait_for(slow, 20)
    [error] = results(stream)
    assert "stopped during the call of slow" in error
    assert "may or may not have been carried out" in error
    # It is started again (a new process) and works.
    for _ in range(50):
        status = (await capi.get(f"/connections/{test['id']}", user="root")).json()["data"]
        if status["status"]["state"] == "connected":
            break
        await asyncio.sleep(0.2)
    again = await capi.say(call("test_pid"))
    assert int(results(again)[0]) != pid


async def test_a_slow_call_outlasts_its_timeout(capi: Api) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(),
            "trusted": True,
            "timeout": 1,
        },
    )
    await set_level(capi, test["id"], "read-only")
    started = time.monotonic()
    stream = await capi.say(call("test_slow", {"seconds": 10}))
    assert time.monotonic() - started < 8
    [error] = results(stream)
    assert error.startswith("slow on Test did not answer within 1 seconds")
    # An error result of the server reaches the model as an error, in the server's words.
    failed = await capi.say(call("test_fail"), history_id=stream.history_id)
    assert results(failed) == ["Error executing tool fail: it failed on purpose; try echo instead"]


async def test_a_server_that_cannot_start_is_saved_in_error(capi: Api) -> None:
    broken = await add(
        capi,
        {"app": "custom", "name": "Broken", "kind": "mcp-stdio", "mcp": {"command": "/no/such"}},
    )
    assert broken["status"]["state"] == "error"
    assert "cannot be run" in broken["status"]["message"]
    assert "refresh the connection" in broken["status"]["message"]
    memory = await add(capi, {"app": "memory", "name": "Memory"})
    assert memory["status"] == {
        "state": "error",
        "toolCount": 0,
        "listedAt": None,
        "message": "The required settings memoryFile are not set; set them on the connection.",
    }


async def test_deleting_a_connection_fails_its_paused_gate_with_a_tool_error(capi: Api) -> None:
    notes = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    await set_level(capi, notes["id"], "non-consequential")
    paused = await capi.say(call("notes_delete_note", {"title": "Old draft"}))
    ask = paused.ask
    deleted = await capi.request("DELETE", f"/connections/{notes['id']}", user="root")
    assert deleted.json()["data"] == {"id": notes["id"], "deleted": True}
    done = await capi.answer(paused.history_id, ask["toolCallId"], APPROVE)
    assert done.status == 200, done.problem
    assert "notes_delete_note failed: The tool notes_delete_note is no longer available" in (
        done.text
    )
    rows = await capi.rows(paused.history_id)
    gone = [r for r in rows if r["type"] == "tool-result" and r.get("isError")]
    assert gone[-1]["toolName"] == "notes_delete_note"
    # The next turn does not offer its tools.
    after = await capi.say(call("notes_list_notes"), history_id=paused.history_id)
    assert "There is no tool named 'notes_list_notes'" in results(after)[0]
    assert (await capi.get(f"/connections/{notes['id']}", user="root")).status_code == 404


# --- transports and the reference server -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Any:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(10)


async def test_streamable_http_with_a_header_from_a_secret(capi: Api, http_server: str) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Remote",
            "kind": "mcp-http",
            "mcp": {"url": http_server, "headers": {"Authorization": "Bearer ${secret.token}"}},
            "secrets": {"token": CANARY},
            "trusted": True,
        },
    )
    assert test["status"]["state"] == "connected", test["status"]
    assert test["secretsSet"] == ["token"]
    await set_level(capi, test["id"], "read-only")
    ran = await capi.say(call("remote_header"))
    assert results(ran) == [f"authorization of {len('Bearer ') + len(CANARY)} characters"]


async def test_the_npm_everything_server_over_stdio(capi: Api) -> None:
    installed(EVERYTHING)
    everything = await add(
        capi,
        {
            "app": "custom",
            "name": "Everything",
            "kind": "mcp-stdio",
            "mcp": {"command": str(EVERYTHING), "args": ["stdio"]},
            "protocol": "legacy",
            "trusted": True,
        },
    )
    assert everything["status"]["state"] == "connected", everything["status"]
    assert "Everything Server" in (everything["serverInstructions"] or "")
    listed = await tools(capi, everything["id"])
    assert listed["echo"]["safetyClass"] == "read-only"
    assert listed["echo"]["modelName"] == "everything_echo"
    await set_level(capi, everything["id"], "read-only")
    ran = await capi.say(call("everything_echo", {"message": "hello"}))
    assert results(ran) == ["Echo: hello"]
    image = await capi.say(call("everything_get-tiny-image"), history_id=ran.history_id)
    [content] = results(image)
    assert [p["type"] for p in content["content"]] == ["text", "image", "text"]
    assert "data" not in content["content"][1]


# --- secrets ---------------------------------------------------------------------------------


async def test_secrets_never_show_in_responses_rows_logs_or_prompts(
    capi: Api, model: RecordingModel, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(env={"TEST_TOKEN": "${secret.token}"}),
            "secrets": {"token": CANARY},
            "trusted": True,
        },
    )
    seen.append(json.dumps(test))
    assert test["secretsSet"] == ["token"]
    assert test["mcp"]["env"] == {"TEST_TOKEN": "${secret.token}"}
    await set_level(capi, test["id"], "read-only")
    whispered = await capi.say(call("test_whisper"))
    assert results(whispered) == ["whispered"]
    for _ in range(50):  # the server's stderr reaches the log through a thread
        if any("the token is" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.05)
    assert any("the token is ********" in r.getMessage() for r in caplog.records)
    changed = await capi.request(
        "PATCH",
        f"/connections/{test['id']}",
        user="root",
        json={"secrets": {"token": CANARY + "-2"}, "name": "Test"},
    )
    seen.append(changed.text)
    for path in ("/connections", f"/connections/{test['id']}", "/activity", "/permissions"):
        seen.append((await capi.get(path, user="root")).text)
    seen.append((await capi.get(f"/connections/{test['id']}/tools")).text)
    seen.append(json.dumps(await capi.history(whispered.history_id)))
    seen.extend(r.getMessage() for r in caplog.records)
    seen.extend(
        request.system + json.dumps([str(m) for m in request.messages])
        for request in model.requests
    )
    rows = await _every_row(capi)
    assert "gAAAA" in rows  # the ciphertext is there
    seen.append(rows)
    assert [text for text in seen if CANARY in text] == []
    # The server's own instructions reach no prompt either.
    assert all("IGNORE ALL PREVIOUS" not in r.system for r in model.requests)
    activity = (await capi.get("/activity", user="root")).json()["data"]
    assert activity[0]["changes"]["secrets"] == {"set": ["token"], "removed": []}


async def _every_row(api: Api) -> str:
    """Every row of every table of the database, as text."""
    from sqlalchemy import Connection, select

    from handrail.store.tables import metadata

    def dump(connection: Connection) -> str:
        out = []
        for table in metadata.sorted_tables:
            out.extend(repr(tuple(row)) for row in connection.execute(select(table)))
        return "\n".join(out)

    return str(await api.store.db.read(dump))


async def test_a_secret_needs_the_secret_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HANDRAIL_SECRET_KEY", raising=False)
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        response = await api.post(
            "/connections",
            {
                "app": "custom",
                "name": "Remote",
                "kind": "mcp-http",
                "mcp": {"url": "http://127.0.0.1:9/mcp"},
                "secrets": {"token": CANARY},
            },
            user="root",
        )
        assert response.status_code == 400
        problem = response.json()
        assert problem["title"] == "No secret key"
        assert problem["code"] == "SECRET_KEY_MISSING"
        assert "HANDRAIL_SECRET_KEY" in problem["detail"]
        assert CANARY not in response.text
        assert (await api.get("/connections", user="root")).json()["data"] == []


# --- who may do what -------------------------------------------------------------------------


async def test_non_admins_cannot_add_change_or_read_secrets(capi: Api) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(env={"TEST_TOKEN": "${secret.token}"}),
            "secrets": {"token": CANARY},
        },
    )
    body = {"app": "notes", "name": "Mine"}
    attempts = [
        await capi.post("/connections", body, user="alice"),
        await capi.request(
            "PATCH", f"/connections/{test['id']}", user="alice", json={"trusted": True}
        ),
        await capi.request("PATCH", f"/connections/{test['id']}", user="bob", json={"secrets": {}}),
        await capi.request("DELETE", f"/connections/{test['id']}", user="alice"),
        await capi.post(f"/connections/{test['id']}/refresh", user="bob"),
        await capi.get("/activity", user="alice"),
    ]
    assert [r.status_code for r in attempts] == [403] * 6
    assert {r.json()["code"] for r in attempts} == {"ADMIN_REQUIRED"}
    seen = (await capi.get(f"/connections/{test['id']}", user="alice")).json()["data"]
    assert seen["secretsSet"] == ["token"]
    assert "mcp" not in seen
    assert CANARY not in json.dumps(seen)
    assert len((await capi.get("/connections", user="alice")).json()["data"]) == 1


async def test_bad_bodies_are_problems_never_500(capi: Api) -> None:
    cases: list[tuple[Any, int, str]] = [
        ({"app": "nope", "name": "X"}, 400, "app"),
        ({"app": "notes"}, 400, "name"),
        ({"app": "notes", "name": "X", "colour": 1}, 400, "colour"),
        ({"app": "notes", "name": "X", "settings": {"a": 1}}, 400, "settings.a"),
        ({"app": "notes", "name": "X", "overrides": {"a": "safe"}}, 400, "overrides.a"),
        ({"app": "notes", "name": "X", "agents": ["ghost"]}, 400, "agents"),
        ({"app": "notes", "name": "X", "timeout": 0}, 400, "timeout"),
        ({"app": "memory", "name": "X", "settings": {"nope": "1"}}, 400, "settings.nope"),
        ({"app": "notes", "name": "X", "mcp": {"command": "x"}}, 400, "mcp"),
        ({"app": "custom", "name": "X"}, 400, "kind"),
        (
            {"app": "custom", "name": "X", "kind": "mcp-stdio", "mcp": {"args": "x"}},
            400,
            "mcp.args",
        ),
        (
            {"app": "custom", "name": "X", "kind": "mcp-stdio", "mcp": {"command": "${secret.a}"}},
            400,
            "mcp.command",
        ),
        (
            {"app": "custom", "name": "X", "kind": "mcp-http", "mcp": {"url": "ftp://x"}},
            400,
            "mcp.url",
        ),
        ([1, 2], 400, "body"),
    ]
    for body, status, field in cases:
        response = await capi.post("/connections", body, user="root")
        assert response.status_code == status, (body, response.text)
        assert field in response.json().get("fields", {}), (body, response.json())
    missing = await capi.request("PATCH", "/connections/" + "0" * 24, user="root", json={})
    assert (missing.status_code, missing.json()["title"]) == (404, "Connection not found")


async def test_names_that_clash_are_refused_naming_both(capi: Api) -> None:
    first = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    response = await capi.post("/connections", {"app": "notes", "name": "NOTES!"}, user="root")
    assert response.status_code == 409
    problem = response.json()
    assert problem["title"] == "Connection name taken"
    assert f"the connection “Notes” (id {first['id']})" in problem["detail"]
    assert problem["fields"] == {
        "name": "its tools would clash with those of the connection “Notes”"
    }
    assert "notes_" in problem["detail"]


async def test_changes_write_activity_and_rename_the_tools(capi: Api) -> None:
    notes = await add(capi, {"app": "notes", "name": "Notes", "trusted": True})
    renamed = await capi.request(
        "PATCH",
        f"/connections/{notes['id']}",
        user="root",
        json={"name": "Jots", "agents": ["helper"], "overrides": {"add_note": "consequential"}},
    )
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["data"]["toolPrefix"] == "jots"
    listed = await tools(capi, notes["id"])
    assert listed["add_note"]["modelName"] == "jots_add_note"
    assert listed["add_note"]["safetyClass"] == "consequential"
    refreshed = await capi.post(f"/connections/{notes['id']}/refresh", user="root")
    assert refreshed.json()["data"]["status"]["toolCount"] == 4
    await capi.request("DELETE", f"/connections/{notes['id']}", user="root")
    log = (await capi.get("/activity", user="root")).json()["data"]
    assert [(e["action"], e["actor"], e["subject"]) for e in log] == [
        ("connection.deleted", "root", notes["id"]),
        ("connection.refreshed", "root", notes["id"]),
        ("connection.updated", "root", notes["id"]),
        ("connection.created", "root", notes["id"]),
    ]
    assert log[2]["changes"] == {
        "name": "Jots",
        "agents": ["helper"],
        "overrides": {"add_note": "consequential"},
    }
    paged = await capi.get("/activity?limit=2", user="root")
    assert len(paged.json()["data"]) == 2
    assert 'rel="next"' in paged.headers["link"]


# --- the configuration's connections and the catalog at start-up ----------------------------------


async def test_configured_connections_are_listed_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent("helper")

    @agent.tool(read_only=True, name="test_echo")
    def today() -> str:
        """Today's date."""
        return "2026-12-01"

    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
        listed = (await api.get("/connections", user="bob")).json()["data"]
        assert listed == [
            {
                "id": "local:helper",
                "app": "config",
                "name": "helper",
                "kind": "python",
                "settings": {},
                "secretsSet": [],
                "trusted": True,
                "agents": ["helper"],
                "overrides": {},
                "status": {"state": "connected", "toolCount": 1, "listedAt": None},
                "source": "config",
                "readOnly": True,
            }
        ]
        [tool] = (await api.get("/connections/local:helper/tools")).json()["data"]
        assert (tool["modelName"], tool["safetyClass"]) == ("test_echo", "read-only")
        for method in ("PATCH", "DELETE"):
            response = await api.request(
                method, "/connections/local:helper", user="root", json={"trusted": False}
            )
            assert response.status_code == 409, response.text
            assert response.json()["title"] == "Connection is read-only"
        # A saved connection's tool may not take a configured tool's name: it is left out,
        # and the status names both.
        monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
        clash = await add(
            api,
            {"app": "custom", "name": "Test", "kind": "mcp-stdio", "mcp": test_stdio()},
        )
        assert clash["status"]["state"] == "error"
        assert clash["status"]["message"] == (
            "its tool echo would be called test_echo, which is the name of a tool of the "
            "connection 'helper': rename the connection"
        )
        offered = await tools(api, clash["id"])
        assert offered["echo"]["modelName"] is None
        assert offered["pid"]["modelName"] == "test_pid"
        # The name is the configured tool's: its permission ask is for its connection.
        asked = await api.say("call test_echo {}")
        assert asked.ask["connectionId"] == "local:helper"


async def test_a_broken_definition_stops_the_start_up(tmp_path: Path) -> None:
    from server_helpers import config_for

    from handrail.connections import CatalogError
    from handrail.server import create_app

    folder = tmp_path / "apps"
    folder.mkdir()
    (folder / "wiki.yaml").write_text("slug: wiki\nname: Wiki\nkind: nope\n", encoding="utf-8")
    with pytest.raises(CatalogError) as raised:
        create_app(config_for(sqlite_url(tmp_path), tmp_path, catalog_dirs=[folder]))
    assert [p.path for p in raised.value.problems] == ["description", "kind"]
    (folder / "wiki.yaml").write_text(
        "slug: wiki\nname: Wiki\ndescription: A wiki.\nkind: mcp-http\nmcp: {url: 'http://127.0.0.1:9/mcp'}\n",
        encoding="utf-8",
    )
    async with start_api(sqlite_url(tmp_path), tmp_path, catalog_dirs=[folder]) as api:
        slugs = [a["slug"] for a in (await api.get("/catalog")).json()["data"]]
        assert "wiki" in slugs


def test_catalog_dirs_and_tool_timeout_settings(tmp_path: Path) -> None:
    from handrail.errors import ConfigError
    from handrail.server import ServerConfig

    (tmp_path / "apps").mkdir()
    base = {"users": [{"id": "a", "token": "t"}], "agents": [{"name": "helper"}]}
    config = ServerConfig.from_mapping(
        {**base, "catalog_dirs": ["apps"], "tool_timeout": 5},
        env={"HANDRAIL_TOOL_TIMEOUT": "7.5"},
        base_dir=tmp_path,
    )
    assert config.catalog_dirs == (tmp_path / "apps",)
    assert config.tool_timeout == 7.5
    with pytest.raises(ConfigError, match=r"catalog_dirs\[0\]: no folder at"):
        ServerConfig.from_mapping({**base, "catalog_dirs": ["nope"]}, env={}, base_dir=tmp_path)
    with pytest.raises(ConfigError, match="tool_timeout: must be a positive number"):
        ServerConfig.from_mapping({**base, "tool_timeout": 0}, env={})


async def test_the_booking_action_set_saved_at_run_time(capi: Api) -> None:
    from handrail.demo.booking_api import create_booking_app, serve_booking_api

    async with serve_booking_api(create_booking_app()) as base_url:
        booking = await add(
            capi,
            {
                "app": "booking",
                "name": "Tables",
                "settings": {"baseUrl": base_url},
                "trusted": True,
            },
        )
        assert booking["status"]["state"] == "connected", booking["status"]
        listed = await tools(capi, booking["id"])
        assert {n: (t["modelName"], t["safetyClass"]) for n, t in listed.items()} == {
            "find_slots": ("tables_find_slots", "read-only"),
            "book_slot": ("tables_book_slot", "mutating"),
        }
        await set_level(capi, booking["id"], "non-consequential")
        found = await capi.say(call("tables_find_slots", {"date": "2026-12-24"}))
        [slots] = results(found)
        assert slots["status"] == "completed", slots
        booked = await capi.say(
            call("tables_book_slot", {"date": "2026-12-24", "time": "19:00"}),
            history_id=found.history_id,
        )
        ask = booked.ask
        assert (ask["origin"], ask["connectionId"]) == ("confirmation", booking["id"])
        done = await capi.answer(found.history_id, ask["toolCallId"], APPROVE)
        [result] = results(done)
        assert result["status"] == "completed", result


async def test_a_change_in_one_process_reaches_another_on_the_same_database(
    capi: Api, tmp_path: Path
) -> None:
    other_model = RecordingModel()
    agents = [Agent("helper", instructions="You help people."), Agent("quiet", asks=False)]
    async with start_api(
        sqlite_url(tmp_path), tmp_path / "other", agents=agents, model=other_model
    ) as other:
        test = await add(
            capi,
            {
                "app": "custom",
                "name": "Test",
                "kind": "mcp-stdio",
                "mcp": test_stdio(),
                "trusted": True,
            },
        )
        await set_level(capi, test["id"], "read-only")

        async def listed_in_other() -> list[str]:
            data = (await other.get("/connections", user="root")).json()["data"]
            return [c["status"]["state"] for c in data]

        for _ in range(100):
            if await listed_in_other() == ["connected"]:
                break
            await asyncio.sleep(0.1)
        assert await listed_in_other() == ["connected"]
        ran = await other.say(call("test_echo", {"text": "there"}))
        assert results(ran) == ["echo: there"]
        await capi.request("DELETE", f"/connections/{test['id']}", user="root")
        for _ in range(100):
            if await listed_in_other() == []:
                break
            await asyncio.sleep(0.1)
        assert await listed_in_other() == []
        gone = await other.say(call("test_echo", {"text": "there"}))
        assert "There is no tool named 'test_echo'" in results(gone)[0]


async def test_secrets_saved_under_another_key_are_reported_and_can_be_set_again(
    capi: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(env={"TEST_TOKEN": "${secret.token}"}),
            "secrets": {"token": CANARY},
        },
    )
    hub = capi.app.state.connections
    monkeypatch.setattr(hub, "secrets", type(hub.secrets)(new_secret_key()))
    refreshed = await capi.request(
        "PATCH", f"/connections/{test['id']}", user="root", json={"trusted": True}
    )
    status = refreshed.json()["data"]["status"]
    assert status["state"] == "error"
    assert "cannot be read with the current HANDRAIL_SECRET_KEY" in status["message"]
    fixed = await capi.request(
        "PATCH",
        f"/connections/{test['id']}",
        user="root",
        json={"secrets": {"token": CANARY}},
    )
    assert fixed.status_code == 200, fixed.text
    assert fixed.json()["data"]["status"]["state"] == "connected"


async def test_a_server_that_comes_up_later_is_connected_without_a_refresh(capi: Api) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    down = await add(
        capi,
        {"app": "custom", "name": "Late", "kind": "mcp-http", "mcp": {"url": url}, "trusted": True},
    )
    assert down["status"]["state"] == "error"
    assert "cannot be reached" in down["status"]["message"]
    process = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        state = "error"
        for _ in range(300):
            data = (await capi.get(f"/connections/{down['id']}", user="root")).json()["data"]
            state = data["status"]["state"]
            if state == "connected":
                break
            await asyncio.sleep(0.1)
        assert state == "connected"
        # Every tool the test server declares is listed.
        assert data["status"]["toolCount"] == TEST_SERVER.read_text().count("@server.tool(")
        await set_level(capi, down["id"], "read-only")
        ran = await capi.say(call("late_echo", {"text": "at last"}))
        assert results(ran) == ["echo: at last"]
    finally:
        process.terminate()
        process.wait(10)


async def test_a_slow_call_times_out_beside_an_ask_that_stays_pending(capi: Api) -> None:
    test = await add(
        capi,
        {
            "app": "custom",
            "name": "Test",
            "kind": "mcp-stdio",
            "mcp": test_stdio(),
            "trusted": True,
            "timeout": 1,
        },
    )
    await set_level(capi, test["id"], "read-only")
    confirm = {"prompt": "Go on?", "confirmLabel": "Yes", "denyLabel": "No"}
    stream = await capi.say(
        f"ask_confirm {json.dumps(confirm)}\n" + call("test_slow", {"seconds": 10})
    )
    assert stream.ask["input"]["prompt"] == "Go on?"
    [timed_out] = results(stream)
    assert timed_out.startswith("slow on Test did not answer within 1 seconds")
    history = await capi.history(stream.history_id)
    assert history["pendingAsk"]["kind"] == "confirm"
    answered = await capi.answer(stream.history_id, stream.ask["toolCallId"], APPROVE)
    assert answered.status == 200, answered.problem
    assert (await capi.history(stream.history_id))["pendingAsk"] is None
