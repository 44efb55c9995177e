"""The notes application of the spec (tool-safety-classes.md) behind a running app: the agent,
a scripted model that records what it was shown, the app built from a YAML-shaped configuration
(the notes agent ``import``ed from a module put in ``sys.modules``, and an ``asker`` agent written
in YAML with ``clarify: true``), and small helpers for the gate tests."""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from server_helpers import USERS, Api, Stream, compact, load_schema

from doubles import add_notes_tools, starting_notes
from handrail.runtime.agent import Agent
from handrail.runtime.messages import Message
from handrail.runtime.models.base import Model, ModelEvent, ModelRequest
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import ToolSet
from handrail.server import ServerConfig, create_app
from handrail.store import Store

TURN_RESPONSE = load_schema("turnResponse")
PENDING_ASKS = load_schema("pendingAsksResponse")
SIMPLE_CARD = load_schema("simpleCard")

MODULE = "handrail_test_notes_app"
NOTES = "local:notes"
ARCHIVE = "mcp:acme/archive"
FALLBACK = {
    "title": "delete_note",
    "prompt": "Allow delete_note, title: Old draft?",
    "confirmLabel": "Allow",
    "denyLabel": "Deny",
}
CLARIFY = {
    "title": "Create database",
    "prompts": [
        {"id": "name", "kind": "text", "question": "Database name", "placeholder": "main"},
        {
            "id": "id_mode",
            "kind": "choice",
            "question": "Database ID",
            "options": [
                {"id": "unique", "label": "Auto-generate (unique())"},
                {"id": "custom", "label": "I'll provide a custom ID"},
            ],
        },
    ],
}
CLARIFY_ANSWERS = {
    "protocol": "appwrite.clarify/v1",
    "answers": [
        {"id": "name", "kind": "text", "value": "main"},
        {"id": "id_mode", "kind": "choice", "values": ["unique"]},
    ],
}


# --- the notes application --------------------------------------------------------------------


class NotesApp:
    """The notes application of tool-safety-classes.md as an agent's tools (from
    ``tests/doubles.py``, shared with ``tests/runtime/test_gates.py``), plus an untrusted
    archive connection whose read-only hint counts for nothing. `ran` records every tool body
    that ran."""

    def __init__(self, **options: Any) -> None:
        self.notes = starting_notes()
        self.ran: list[str] = []
        options.setdefault("clarify", True)
        agent = Agent("notes", instructions="You manage notes.", **options)
        add_notes_tools(agent, self.notes, self.ran)
        ran = self.ran

        archive = ToolSet(ARCHIVE, "Acme archive", trusted=False)

        @archive.tool(read_only=True)
        def find_archived(title: str) -> str:
            """Find an archived note by its title."""
            ran.append("find_archived")
            return f"No archived note is titled “{title}”."

        agent.add_tool_set(archive)
        self.agent = agent


def configuration(url: str, tmp_path: Path) -> dict[str, Any]:
    return {
        "database_url": url,
        "blob_dir": str(tmp_path / "blobs"),
        "model": "scripted",
        "users": [{"id": u.id, "token": u.token, "admin": u.admin} for u in USERS],
        "agents": [
            {"import": f"{MODULE}:agent"},
            {"name": "asker", "instructions": "Ask before you act.", "clarify": True},
        ],
    }


class RecordingModel(ScriptedModel):
    """The scripted model, keeping every request: what the model was shown."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        return super().stream(request)

    @property
    def seen(self) -> list[Message]:
        return list(self.requests[-1].messages)


@asynccontextmanager
async def notes_api(
    url: str, tmp_path: Path, notes: NotesApp, *, model: Model | None = None
) -> AsyncIterator[Api]:
    """The app for `configuration`, with `notes` behind the import, its lifespan entered. With
    `model`, the app gets a runtime (and store) of the test's own that uses it."""
    module = types.ModuleType(MODULE)
    module.agent = notes.agent  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    store: Store | None = None
    try:
        config = ServerConfig.from_mapping(configuration(url, tmp_path), env={})
        runtime: Runtime | None = None
        if model is not None:
            store = await Store.open(url, blob_dir=tmp_path / "blobs")
            runtime = Runtime(store=store, agents=config.resolved_agents(), model=model)
        app = create_app(config, runtime=runtime, store=store)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app)
            async with httpx.AsyncClient(transport=transport, base_url="http://handrail") as c:
                yield Api(c, app, app.state.store, url)
    finally:
        del sys.modules[MODULE]
        if store is not None:
            await store.close()


# --- helpers --------------------------------------------------------------------------------


def call(tool: str, args: dict[str, Any] | None = None) -> str:
    return f"call {tool} {compact(args or {})}"


def kinds(stream: Stream) -> list[str]:
    return [next(iter(event)) for event in stream.events]


def approve(scope: str | None = None) -> dict[str, Any]:
    content: dict[str, Any] = {"confirmed": True}
    if scope is not None:
        content["scope"] = scope
    return {"action": "accept", "content": content}


def denied_text(reason: str) -> str:
    return "delete_note failed: " + compact({"type": "execution-denied", "reason": reason})


def valid(document: dict[str, Any], instance: Any) -> None:
    jsonschema.validate(instance, document, format_checker=jsonschema.FormatChecker())


async def put(api: Api, path: str, body: Any, *, user: str = "alice") -> httpx.Response:
    return await api.request("PUT", path, user=user, json=body)


async def delete(api: Api, path: str, *, user: str = "alice") -> httpx.Response:
    return await api.request("DELETE", path, user=user)


async def set_level(api: Api, level: str, connection_id: str = NOTES) -> None:
    response = await put(api, f"/permissions/{connection_id}", {"level": level})
    assert response.status_code == 200, response.text


def problem(response: httpx.Response, status: int, title: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = dict(response.json())
    assert body["title"] == title, body
    return body


async def turn(api: Api, history_id: str, body: Any, *, user: str = "alice") -> dict[str, Any]:
    """A headless turn that succeeds; its ``data``, checked against the published schema."""
    response = await api.post(f"/histories/{history_id}/turn", body, user=user)
    assert response.status_code == 200, response.text
    valid(TURN_RESPONSE, response.json())
    return dict(response.json()["data"])


async def new_history(api: Api, agent: str | None = None) -> str:
    response = await api.post("/histories", {"agent": agent} if agent else {})
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


async def pending_asks(api: Api, *, user: str = "alice") -> list[dict[str, Any]]:
    response = await api.get("/histories/pendingAsks", user=user)
    assert response.status_code == 200, response.text
    valid(PENDING_ASKS, response.json())
    return list(response.json()["data"])


async def grants(api: Api, *, user: str = "alice") -> list[dict[str, Any]]:
    response = await api.get("/grants", user=user)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


async def paused_delete(api: Api, title: str = "Old draft") -> tuple[Stream, str, str]:
    """A conversation whose delete_note call waits on its approval: the stream, the held
    call's id and the approval's id."""
    stream = await api.say(call("delete_note", {"title": title}))
    held = next(e["toolCall"] for e in stream.events if "toolCall" in e)
    return stream, held["toolCallId"], stream.ask["toolCallId"]
