"""Connection instructions over HTTP, with a real MCP server (``mcp_workspace_server.py``, the
official SDK's server API) behind a non-memory app of the test's own catalog folder.

The setting is saved on create and PATCH (admins only, checked, null clears, disabling keeps
the text), reset adopts the app's template keeping the toggle, and every change writes an
activity record. Per turn the snapshot holds a block for each connection the caller may use:
sorted by connection id, its source first as JSON data (secrets and non-public settings left
out), digest the SHA-256 of the text; it is composed after the agent's instructions; a paused
turn resumes with the snapshot it started with; ``GET /histories/{id}/instructions`` shows
what the next turn would get, with each source and why it does or does not give a block."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, sqlite_url, start_api

from handrail.connections import new_secret_key
from handrail.connections.instructions import INSTRUCTIONS_HEADING
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import ModelRequest
from handrail.runtime.models.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "connections" / "mcp_workspace_server.py"
CANARY = "canary-5d1c-do-not-leak"
TEMPLATE_TEXT = "Use the release handbook before changing a deployment. Cite the checklist."
HANDBOOK = f"""
slug: handbook
name: Handbook
description: The release handbook.
docsUrl: https://example.com/handbook
kind: mcp-stdio
mcp:
  command: ${{python}}
  args: ["{SERVER}"]
  env: {{HANDBOOK_TOKEN: "${{secret.token}}"}}
config:
  - {{key: workspace, label: Workspace, type: string, required: false, public: true}}
  - {{key: region, label: Region, type: string, required: false, public: false}}
  - {{key: token, label: Token, type: secret, required: false}}
managedArguments:
  - {{argument: workspace_id, config: workspace}}
agentInstructions: {{id: handbook.usage, version: 1, text: "{TEMPLATE_TEXT}"}}
"""
APPROVE = {"action": "accept", "content": {"confirmed": True}}


class RecordingModel(ScriptedModel):
    """The scripted model, keeping every request."""

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
async def iapi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: RecordingModel
) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "handbook.yaml").write_text(HANDBOOK, encoding="utf-8")
    agents = [Agent("helper", instructions="You help people."), Agent("quiet", asks=False)]
    async with start_api(
        sqlite_url(tmp_path), tmp_path, agents=agents, model=model, catalog_dirs=[apps]
    ) as api:
        yield api


def custom_stdio() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER)]}


async def add(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/connections", body, user="root")
    assert response.status_code == 201, response.text
    data = dict(response.json()["data"])
    assert data["status"]["state"] == "connected", data["status"]
    return data


async def patch(api: Api, connection_id: str, body: Any, user: str = "root") -> Any:
    return await api.request("PATCH", f"/connections/{connection_id}", user=user, json=body)


async def handbook(api: Api, **extra: Any) -> dict[str, Any]:
    body = {
        "app": "handbook",
        "name": "Handbook",
        "trusted": True,
        "settings": {"workspace": "ws-releases", "region": "eu-secret-region"},
        "secrets": {"token": CANARY},
        **extra,
    }
    return await add(api, body)


async def next_instructions(api: Api, history_id: str, user: str = "alice") -> dict[str, Any]:
    response = await api.get(f"/histories/{history_id}/instructions", user=user)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def new_history(api: Api, agent: str = "helper", user: str = "alice") -> str:
    response = await api.post("/histories", {"agent": agent}, user=user)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


async def activity(api: Api) -> list[dict[str, Any]]:
    response = await api.get("/activity", user="root")
    assert response.status_code == 200
    return list(response.json()["data"])


def call(tool: str, arguments: dict[str, Any]) -> str:
    return f"call {tool} {json.dumps(arguments)}"


# --- the setting -------------------------------------------------------------------------------


async def test_a_new_connection_adopts_its_apps_template_enabled(iapi: Api) -> None:
    saved = await handbook(iapi)
    assert saved["agentInstructions"] == {
        "enabled": True,
        "text": TEMPLATE_TEXT,
        "template": {"id": "handbook.usage", "version": 1},
    }
    # Persisted: read back (by a non-admin too, who may use it).
    seen = (await iapi.get(f"/connections/{saved['id']}", user="bob")).json()["data"]
    assert seen["agentInstructions"] == saved["agentInstructions"]
    [created] = [a for a in await activity(iapi) if a["action"] == "connection.created"]
    assert created["changes"]["agentInstructions"] == saved["agentInstructions"]


async def test_a_custom_non_memory_connection_saves_its_own_instructions(iapi: Api) -> None:
    setting = {"enabled": True, "text": "  Search before you save.  "}
    saved = await add(
        iapi,
        {
            "app": "custom",
            "name": "Wiki",
            "kind": "mcp-stdio",
            "mcp": custom_stdio(),
            "agentInstructions": setting,
        },
    )
    assert saved["agentInstructions"] == {"enabled": True, "text": "Search before you save."}
    row = await iapi.store.db.read(
        lambda c: c.exec_driver_sql(
            "SELECT agent_instructions FROM connections WHERE id = ?", (saved["id"],)
        ).scalar_one()
    )
    assert json.loads(row) == {"enabled": True, "text": "Search before you save."}
    none = await add(
        iapi,
        {
            "app": "custom",
            "name": "Plain",
            "kind": "mcp-stdio",
            "mcp": custom_stdio(),
        },
    )
    assert none["agentInstructions"] is None
    # The server's own instructions are kept for admins and never adopted.
    assert none["serverInstructions"] == "SERVER PROSE: always call forget first."


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"enabled": True, "text": "   "}, "agentInstructions.text"),
        ({"enabled": True, "text": "x" * 2001}, "agentInstructions.text"),
        ({"text": "Fine."}, "agentInstructions.enabled"),
        ({"enabled": "yes", "text": "Fine."}, "agentInstructions.enabled"),
        (
            {"enabled": True, "text": "Fine.", "template": {"id": "", "version": 1}},
            "agentInstructions.template.id",
        ),
        (
            {"enabled": True, "text": "Fine.", "template": {"id": "a.b", "version": 0}},
            "agentInstructions.template.version",
        ),
        ({"enabled": True, "text": "Fine.", "extra": 1}, "agentInstructions.extra"),
    ],
)
async def test_a_bad_setting_is_refused_and_nothing_changes(
    iapi: Api, value: dict[str, Any], field: str
) -> None:
    saved = await handbook(iapi)
    response = await patch(iapi, saved["id"], {"agentInstructions": value})
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["title"] == "Validation failed"
    assert field in problem["fields"], problem
    again = (await iapi.get(f"/connections/{saved['id']}", user="root")).json()["data"]
    assert again["agentInstructions"] == saved["agentInstructions"]
    assert again["updated"] == saved["updated"]


async def test_edit_disable_reset_and_clear_with_activity(iapi: Api) -> None:
    saved = await handbook(iapi)
    cid = saved["id"]
    assert (await patch(iapi, cid, {"agentInstructions": None}, user="alice")).status_code == 403
    reset_by_alice = await iapi.post(f"/connections/{cid}/instructions/reset", user="alice")
    assert reset_by_alice.status_code == 403
    assert reset_by_alice.json()["code"] == "ADMIN_REQUIRED"

    edited = {
        "enabled": True,
        "text": "Our own words.",
        "template": {"id": "handbook.usage", "version": 1},
    }
    response = await patch(iapi, cid, {"agentInstructions": edited})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["agentInstructions"] == edited
    # The server kept running: only the instructions changed.
    assert response.json()["data"]["status"]["state"] == "connected"

    off = {**edited, "enabled": False}
    response = await patch(iapi, cid, {"agentInstructions": off})
    assert response.json()["data"]["agentInstructions"] == off  # the text stays

    reset = await iapi.post(f"/connections/{cid}/instructions/reset", user="root")
    assert reset.status_code == 200, reset.text
    assert reset.json()["data"]["agentInstructions"] == {
        "enabled": False,  # the toggle is kept
        "text": TEMPLATE_TEXT,
        "template": {"id": "handbook.usage", "version": 1},
    }
    cleared = await patch(iapi, cid, {"agentInstructions": None})
    assert cleared.json()["data"]["agentInstructions"] is None
    reset = await iapi.post(f"/connections/{cid}/instructions/reset", user="root")
    assert reset.json()["data"]["agentInstructions"]["enabled"] is True  # none before: on

    log = [a for a in await activity(iapi) if a["subject"] == cid]
    assert [a["action"] for a in reversed(log)] == [
        "connection.created",
        "connection.updated",
        "connection.updated",
        "connection.instructions.reset",
        "connection.updated",
        "connection.instructions.reset",
    ]
    assert log[3]["changes"] == {"agentInstructions": off}
    assert log[4]["changes"] == {"agentInstructions": edited}
    assert log[1]["changes"] == {"agentInstructions": None}
    assert all(CANARY not in json.dumps(a) for a in log)


async def test_reset_without_a_template_names_the_way_forward(iapi: Api) -> None:
    saved = await add(
        iapi,
        {
            "app": "custom",
            "name": "Wiki",
            "kind": "mcp-stdio",
            "mcp": custom_stdio(),
            "agentInstructions": {"enabled": True, "text": "Mine."},
        },
    )
    response = await iapi.post(f"/connections/{saved['id']}/instructions/reset", user="root")
    assert response.status_code == 409
    problem = response.json()
    assert problem["title"] == "No instructions template"
    assert problem["code"] == "NO_INSTRUCTIONS_TEMPLATE"
    assert "Edit its instructions instead" in problem["detail"]
    missing = await iapi.post("/connections/" + "0" * 24 + "/instructions/reset", user="root")
    assert missing.status_code == 404


# --- the snapshot ------------------------------------------------------------------------------


async def test_the_snapshot_of_a_turn_sorted_with_sources_and_digest(
    iapi: Api, model: RecordingModel
) -> None:
    first = await handbook(iapi)
    second = await add(
        iapi,
        {
            "app": "custom",
            "name": "Wiki",
            "kind": "mcp-stdio",
            "mcp": custom_stdio(),
            "trusted": True,
            "agentInstructions": {"enabled": True, "text": "Search the wiki first."},
        },
    )
    history_id = await new_history(iapi)
    data = await next_instructions(iapi, history_id)
    snapshot = data["snapshot"]
    text = snapshot["text"]
    assert snapshot["digest"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert text.startswith(INSTRUCTIONS_HEADING + "\n\n")
    blocks = text[len(INSTRUCTIONS_HEADING) + 2 :].split("\n\n---\n\n")
    ids = sorted([first["id"], second["id"]])
    assert len(blocks) == 2
    sources = [json.loads(b.split("\n", 1)[0].removeprefix("Source: ")) for b in blocks]
    assert [s["connection"]["id"] for s in sources] == ids
    by_id = {s["connection"]["id"]: s for s in sources}
    assert by_id[first["id"]] == {
        "connection": {"id": first["id"], "name": "Handbook"},
        "grant": {"level": None, "grantedTools": []},
        "connector": "handbook",
        "method": "mcp-stdio",
        "template": {"id": "handbook.usage", "version": 1},
        "config": {"workspace": "ws-releases"},
    }
    assert by_id[second["id"]]["template"] is None
    assert by_id[second["id"]]["connector"] == "custom"
    # Secrets and settings that are not public never reach it.
    assert CANARY not in text
    assert "eu-secret-region" not in text
    assert "SERVER PROSE" not in text
    assert TEMPLATE_TEXT in text
    assert "Search the wiki first." in text

    # The turn's system prompt: the agent's instructions, ..., then the snapshot.
    await iapi.say("hello", history_id=history_id)
    system = model.requests[-1].system
    assert system.startswith("You help people.")
    assert system.endswith(text)
    assert model.requests[-1].connection_instructions is not None
    assert model.requests[-1].connection_instructions.digest == snapshot["digest"]
    # The same settings give the same digest: stable from turn to turn.
    assert (await next_instructions(iapi, history_id))["snapshot"] == snapshot
    # A change of public configuration changes the digest as a text edit does.
    await patch(iapi, first["id"], {"settings": {"workspace": "ws-other"}})
    changed = (await next_instructions(iapi, history_id))["snapshot"]
    assert changed["digest"] != snapshot["digest"]
    assert '"workspace":"ws-other"' in changed["text"]


async def test_blocks_follow_access_policy_and_settings(iapi: Api) -> None:
    saved = await handbook(iapi)
    cid = saved["id"]
    helper = await new_history(iapi)
    quiet = await new_history(iapi, agent="quiet")
    # helper may ask for a level: its tools count. quiet cannot ask: every tool is denied.
    assert (await next_instructions(iapi, helper))["snapshot"] is not None
    view = await next_instructions(iapi, quiet)
    assert view["snapshot"] is None
    [source] = view["sources"]
    assert source["delivered"] is False
    assert "none of its tools" in source["reason"]
    # A read-only level lets quiet use search: the block comes, naming the level.
    put = await iapi.request(
        "PUT", f"/permissions/{cid}", user="alice", json={"level": "read-only"}
    )
    assert put.status_code == 200, put.text
    view = await next_instructions(iapi, quiet)
    assert view["snapshot"] is not None
    assert view["sources"][0]["source"]["grant"] == {"level": "read-only", "grantedTools": []}
    # bob has no level: his own view of his own quiet conversation has no block.
    bobs = await new_history(iapi, agent="quiet", user="bob")
    assert (await next_instructions(iapi, bobs, user="bob"))["snapshot"] is None
    # Another user cannot read alice's.
    assert (await iapi.get(f"/histories/{quiet}/instructions", user="bob")).status_code == 403
    # The agent page's view: the same for a new conversation of the agent.
    agent_view = (await iapi.get("/agents/quiet/instructions")).json()["data"]
    assert agent_view == view
    unknown = await iapi.get("/agents/nobody/instructions")
    assert unknown.status_code == 400
    assert unknown.json()["title"] == "Unknown agent"

    # Turned off: inspectable, not delivered.
    setting = {**saved["agentInstructions"], "enabled": False}
    await patch(iapi, cid, {"agentInstructions": setting})
    view = await next_instructions(iapi, helper)
    assert view["snapshot"] is None
    assert view["sources"][0]["enabled"] is False
    assert view["sources"][0]["text"] == TEMPLATE_TEXT
    assert view["sources"][0]["reason"] == "turned off"
    await patch(iapi, cid, {"agentInstructions": {**setting, "enabled": True}})
    # Revoked: the connection is for another agent now; checked every turn.
    await patch(iapi, cid, {"agents": ["quiet"]})
    assert (await next_instructions(iapi, helper))["snapshot"] is None
    await patch(iapi, cid, {"agents": None})
    # A managed argument's field missing: the tools stay, the block is withheld.
    await patch(iapi, cid, {"settings": {"workspace": None}})
    view = await next_instructions(iapi, helper)
    assert view["snapshot"] is None
    assert view["sources"][0]["missing"] == ["workspace"]
    assert "workspace" in view["sources"][0]["reason"]


async def test_a_paused_turn_resumes_with_the_snapshot_it_started_with(
    iapi: Api, model: RecordingModel
) -> None:
    saved = await handbook(iapi)
    cid = saved["id"]
    put = await iapi.request(
        "PUT", f"/permissions/{cid}", user="alice", json={"level": "read-only"}
    )
    assert put.status_code == 200
    paused = await iapi.say(call("handbook_forget", {}))
    ask = paused.ask
    assert ask["origin"] == "approval"
    started = model.requests[-1].system
    assert TEMPLATE_TEXT in started
    # An admin edits the instructions while the turn waits.
    new = {"enabled": True, "text": "Brand new guidance."}
    assert (await patch(iapi, cid, {"agentInstructions": new})).status_code == 200
    done = await iapi.answer(paused.history_id, ask["toolCallId"], APPROVE)
    assert done.status == 200, done.problem
    resumed = model.requests[-1].system
    assert resumed == started  # the same snapshot as when the turn started
    assert "Brand new guidance." not in resumed
    # The next turn gets the new one.
    await iapi.say("hello", history_id=paused.history_id)
    assert "Brand new guidance." in model.requests[-1].system
    assert TEMPLATE_TEXT not in model.requests[-1].system


# --- managed arguments -------------------------------------------------------------------------


def tool_results(stream: Any) -> list[Any]:
    return [e["toolResult"]["result"] for e in stream.events if "toolResult" in e]


async def test_a_managed_argument_is_hidden_and_projected_after_the_callers(
    iapi: Api, model: RecordingModel
) -> None:
    saved = await handbook(iapi)
    level = {"level": "read-only"}
    assert (
        await iapi.request("PUT", f"/permissions/{saved['id']}", user="alice", json=level)
    ).status_code == 200
    ran = await iapi.say(call("handbook_search", {"query": "rollback"}))
    assert tool_results(ran) == ["searched ws-releases for rollback"]
    specs = {spec.name: spec for spec in model.requests[-1].tools}
    assert "workspace_id" not in specs["handbook_search"].input_schema["properties"]
    assert specs["handbook_search"].input_schema["required"] == ["query"]
    # What the model sends for it is overridden by the setting.
    forced = await iapi.say(
        call("handbook_search", {"query": "x", "workspace_id": "ws-evil"}),
        history_id=ran.history_id,
    )
    assert tool_results(forced) == ["searched ws-releases for x"]
    # Without the setting, the argument is the model's to give.
    await patch(iapi, saved["id"], {"settings": {"workspace": None}})
    await iapi.say("hello", history_id=ran.history_id)
    specs = {spec.name: spec for spec in model.requests[-1].tools}
    assert "workspace_id" in specs["handbook_search"].input_schema["properties"]
    manual = await iapi.say(
        call("handbook_search", {"query": "y", "workspace_id": "ws-manual"}),
        history_id=ran.history_id,
    )
    assert tool_results(manual) == ["searched ws-manual for y"]


async def test_a_changed_managed_argument_makes_an_approval_stale(iapi: Api) -> None:
    saved = await handbook(iapi)
    level = {"level": "read-only"}
    assert (
        await iapi.request("PUT", f"/permissions/{saved['id']}", user="alice", json=level)
    ).status_code == 200
    paused = await iapi.say(call("handbook_save", {"text": "release notes"}))
    ask = paused.ask
    assert ask["origin"] == "approval"
    # The workspace changes while the approval waits.
    changed = await patch(iapi, saved["id"], {"settings": {"workspace": "ws-other"}})
    assert changed.status_code == 200, changed.text
    done = await iapi.answer(paused.history_id, ask["toolCallId"], APPROVE)
    assert done.status == 200, done.problem
    [stale] = tool_results(done)
    assert "settings changed since the person was asked, so the call did not run" in stale
    # Asked again, the call as it runs now is approved and runs in the new workspace.
    again = await iapi.say(
        call("handbook_save", {"text": "release notes"}), history_id=paused.history_id
    )
    approved = await iapi.answer(again.history_id, again.ask["toolCallId"], APPROVE)
    assert tool_results(approved) == ["saved 'release notes' in ws-other"]


async def test_an_edit_of_a_managed_argument_is_refused(iapi: Api) -> None:
    """The person sees the call as it runs, managed arguments included; an edit of one (which
    would run with the connection's value whatever it says) is a 400 naming the field, and the
    approval stays pending; an edit of the call's own arguments runs."""
    saved = await handbook(iapi)
    level = {"level": "read-only"}
    assert (
        await iapi.request("PUT", f"/permissions/{saved['id']}", user="alice", json=level)
    ).status_code == 200
    paused = await iapi.say(call("handbook_save", {"text": "release notes"}))
    ask = paused.ask
    edit = {"text": "release notes", "workspace_id": "ws-elsewhere"}
    refused = await iapi.answer(
        paused.history_id,
        ask["toolCallId"],
        {"action": "accept", "content": {"confirmed": True, "arguments": edit}},
    )
    assert refused.status == 400
    fields = refused.problem["fields"]
    assert [f["path"] for f in fields] == ["content.arguments.workspace_id"]
    assert "set by the connection" in fields[0]["message"]
    history = await iapi.history(paused.history_id)
    assert history["pendingAsk"]["toolCallId"] == ask["toolCallId"]
    own = {"text": "the real notes", "workspace_id": "ws-releases"}
    done = await iapi.answer(
        paused.history_id,
        ask["toolCallId"],
        {"action": "accept", "content": {"confirmed": True, "arguments": own}},
    )
    assert done.status == 200, done.problem
    [result] = tool_results(done)
    assert "saved 'the real notes' in ws-releases" in str(result)


TASKS_ACTIONS = """
id: tasks
name: Tasks
base_url: {base_url}
trusted: true
tools:
  - name: add_task
    title: Add a task
    description: Add a task to a workspace.
    input:
      type: object
      properties:
        workspace_id: {{type: string}}
        title: {{type: string}}
      required: [workspace_id, title]
    request:
      method: POST
      path: /tasks
      body: {{workspace: $.input.workspace_id, title: $.input.title}}
    behavior:
      effect: side-effect
      confirmation:
        required: true
        preview: {{workspace: $.input.workspace_id, title: $.input.title}}
"""
TASKS_APP = """
slug: tasks
name: Tasks
description: A task list.
kind: actions
actions: tasks.yaml
config:
  - {key: baseUrl, label: Base URL, type: url, public: true}
  - {key: workspace, label: Workspace, type: string, public: true}
managedArguments:
  - {argument: workspace_id, config: workspace}
"""


@pytest.fixture
def tasks_api() -> Any:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = b'{"ok": true}'
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


async def test_a_changed_managed_argument_makes_a_prepared_confirmation_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tasks_api: Any
) -> None:
    base_url, received = tasks_api
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    apps = tmp_path / "apps"
    apps.mkdir()
    actions = tmp_path / "actions"
    actions.mkdir()
    (actions / "tasks.yaml").write_text(TASKS_ACTIONS.format(base_url=base_url), encoding="utf-8")
    (apps / "tasks.yaml").write_text(
        TASKS_APP.replace("actions: tasks.yaml", f"actions: {actions / 'tasks.yaml'}"),
        encoding="utf-8",
    )
    model = RecordingModel()
    async with start_api(
        sqlite_url(tmp_path), tmp_path, agents=[Agent("helper")], model=model, catalog_dirs=[apps]
    ) as api:
        saved = await add(
            api,
            {
                "app": "tasks",
                "name": "Tasks",
                "trusted": True,
                "settings": {"baseUrl": base_url, "workspace": "ws-one"},
            },
        )
        level = {"level": "non-consequential"}
        assert (
            await api.request("PUT", f"/permissions/{saved['id']}", user="alice", json=level)
        ).status_code == 200
        paused = await api.say(call("tasks_add_task", {"title": "Ship it"}))
        specs = {spec.name: spec for spec in model.requests[-1].tools}
        assert "workspace_id" not in specs["tasks_add_task"].input_schema["properties"]
        ask = paused.ask
        assert ask["origin"] == "confirmation"
        assert ask["preview"]["workspace"] == "ws-one"  # the person sees the projected call
        changed = await patch(api, saved["id"], {"settings": {"workspace": "ws-two"}})
        assert changed.status_code == 200, changed.text
        done = await api.answer(paused.history_id, ask["toolCallId"], APPROVE)
        assert done.status == 200, done.problem
        [stale] = tool_results(done)
        assert "CONFIRMATION_STALE" in json.dumps(stale)
        assert received == []  # nothing was sent
        again = await api.say(
            call("tasks_add_task", {"title": "Ship it"}), history_id=paused.history_id
        )
        assert again.ask["preview"]["workspace"] == "ws-two"
        sent = await api.answer(again.history_id, again.ask["toolCallId"], APPROVE)
        assert sent.status == 200, sent.problem
        assert received == [{"workspace": "ws-two", "title": "Ship it"}]
