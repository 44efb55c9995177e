"""Grants and permission levels over HTTP (``/grants``, ``/permissions``): made by approvals,
listed and revoked by their owner only, levels saved, forgotten and described with each
connection's tools; and the agents' ``clarify`` and ``import`` in the configuration."""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from gates_helpers import (
    ARCHIVE,
    MODULE,
    NOTES,
    NotesApp,
    approve,
    call,
    configuration,
    delete,
    grants,
    kinds,
    notes_api,
    paused_delete,
    problem,
    put,
    set_level,
)
from server_helpers import TOKENS, Api, sqlite_url

from handrail.errors import ConfigError
from handrail.server import ServerConfig


@pytest.fixture
def notes() -> NotesApp:
    return NotesApp()


@pytest.fixture
async def api(tmp_path: Path, notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(sqlite_url(tmp_path), tmp_path, notes) as running:
        yield running


@pytest.fixture
async def any_api(database_url: str, tmp_path: Path, notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(database_url, tmp_path, notes) as running:
        yield running


# --- grants -----------------------------------------------------------------------------------


async def test_grants_are_listed_and_revoked(any_api: Api, notes: NotesApp) -> None:
    await set_level(any_api, "non-consequential")
    # "always" for delete_note.
    stream, _held, approval_id = await paused_delete(any_api)
    answered = await any_api.answer(stream.history_id, approval_id, approve("always"))
    assert answered.status == 200, answered.problem
    [always] = await grants(any_api)
    assert set(always) == {"id", "connectionId", "toolName", "scope", "created"}
    assert (always["connectionId"], always["toolName"], always["scope"]) == (
        NOTES,
        "delete_note",
        "always",
    )
    assert len(always["id"]) == 24
    assert always["created"].endswith("Z")

    # delete_note runs without a question in any conversation now.
    quiet = await any_api.say(call("delete_note", {"title": "Shopping list"}))
    assert "ask" not in kinds(quiet)
    assert notes.ran == ["delete_note", "delete_note"]

    # A conversation grant of another tool (at level read-only, add_note asks).
    await set_level(any_api, "read-only")
    adding = await any_api.say(call("add_note", {"title": "A", "body": "B"}))
    answered = await any_api.answer(
        adding.history_id, adding.ask["toolCallId"], approve("conversation")
    )
    assert answered.status == 200, answered.problem
    listed = await grants(any_api)
    assert [(g["toolName"], g["scope"]) for g in listed] == [
        ("add_note", "conversation"),
        ("delete_note", "always"),
    ]
    assert listed[0]["historyId"] == adding.history_id
    assert "historyId" not in listed[1]

    # Another user sees none of them and cannot revoke them.
    assert await grants(any_api, user="bob") == []
    refused = await delete(any_api, f"/grants/{always['id']}", user="bob")
    body = problem(refused, 404, "Grant not found")
    assert always["id"] in body["detail"]
    assert len(await grants(any_api)) == 2
    # An admin neither.
    assert await grants(any_api, user="root") == []
    problem(await delete(any_api, f"/grants/{always['id']}", user="root"), 404, "Grant not found")

    # The owner revokes "always": delete_note asks again.
    revoked = await delete(any_api, f"/grants/{always['id']}")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["data"] == {"id": always["id"], "deleted": True}
    assert revoked.json()["requestId"] == revoked.headers["x-request-id"]
    problem(await delete(any_api, f"/grants/{always['id']}"), 404, "Grant not found")
    problem(await delete(any_api, "/grants/" + "0" * 24), 404, "Grant not found")
    asks_again = await any_api.say(call("delete_note", {"title": "Meeting agenda"}))
    assert asks_again.ask["toolName"] == "delete_note"
    assert [g["toolName"] for g in await grants(any_api)] == ["add_note"]


async def test_a_conversation_grant_stays_in_its_conversation(api: Api, notes: NotesApp) -> None:
    await set_level(api, "non-consequential")
    stream, _held, approval_id = await paused_delete(api)
    await api.answer(stream.history_id, approval_id, approve("conversation"))
    same = await api.say(call("delete_note", {"title": "Shopping list"}), stream.history_id)
    assert "ask" not in kinds(same)
    other = await api.say(call("delete_note", {"title": "Meeting agenda"}))
    assert other.ask["toolName"] == "delete_note"
    assert notes.ran == ["delete_note", "delete_note"]
    # Revoking it makes the same conversation ask again.
    [grant] = await grants(api)
    assert (await delete(api, f"/grants/{grant['id']}")).status_code == 200
    again = await api.say(call("delete_note", {"title": "Meeting agenda"}), stream.history_id)
    assert again.ask["toolName"] == "delete_note"


@pytest.mark.parametrize(
    ("envelope", "runs"),
    [
        (approve("once"), True),
        ({"action": "accept", "content": {"confirmed": False, "scope": "always"}}, False),
    ],
    ids=["once", "deny-always"],
)
async def test_scopes_that_record_nothing(
    api: Api, notes: NotesApp, envelope: dict[str, Any], runs: bool
) -> None:
    await set_level(api, "non-consequential")
    stream, _held, approval_id = await paused_delete(api)
    answered = await api.answer(stream.history_id, approval_id, envelope)
    assert answered.status == 200, answered.problem
    assert notes.ran == (["delete_note"] if runs else [])
    assert await grants(api) == []
    again = await api.say(call("delete_note", {"title": "Meeting agenda"}), stream.history_id)
    assert again.ask["toolName"] == "delete_note"


async def test_scope_is_refused_on_the_permission_ask(api: Api, notes: NotesApp) -> None:
    stream = await api.say(call("list_notes"))
    envelope = {"action": "accept", "content": {"selected": ["ask"], "scope": "always"}}
    refused = await api.answer(stream.history_id, stream.ask["toolCallId"], envelope)
    assert refused.status == 400
    assert refused.problem is not None
    assert [f["code"] for f in refused.problem["fields"]] == ["UNKNOWN_KEY"]
    assert notes.ran == []
    assert await grants(api) == []


async def test_grant_routes_need_a_token(api: Api) -> None:
    for method, path in (("GET", "/grants"), ("DELETE", "/grants/" + "a" * 24)):
        response = await api.request(method, path, user=None)
        problem(response, 401, "Unauthorized")


# --- permission levels ------------------------------------------------------------------------


async def test_permissions_describe_levels_connections_and_tools(api: Api) -> None:
    response = await api.get("/permissions")
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert [level["id"] for level in data["levels"]] == ["ask", "read-only", "non-consequential"]
    assert data["levels"][2]["label"] == "Allow read/write"
    assert all(level["description"] for level in data["levels"])
    assert data["saved"] == []
    # The asker agent has no tools, so no connection of its own.
    assert data["connections"] == [
        {
            "connectionId": NOTES,
            "name": "notes",
            "trusted": True,
            "agents": ["notes"],
            "level": None,
            "tools": [
                {
                    "name": "list_notes",
                    "description": "List every note, with its title and body.",
                    "safetyClass": "read-only",
                    "hints": {"readOnlyHint": True, "openWorldHint": False},
                    "runsWithoutAsking": ["read-only", "non-consequential"],
                },
                {
                    "name": "add_note",
                    "description": "Add a note with a title and a body.",
                    "safetyClass": "mutating",
                    "hints": {
                        "readOnlyHint": False,
                        "openWorldHint": False,
                        "consequentialHint": False,
                    },
                    "runsWithoutAsking": ["non-consequential"],
                },
                {
                    "name": "delete_note",
                    "description": "Delete the note with this exact title. It cannot be undone.",
                    "safetyClass": "consequential",
                    "hints": {
                        "destructiveHint": True,
                        "openWorldHint": False,
                        "consequentialHint": True,
                    },
                    "runsWithoutAsking": [],
                },
                {
                    "name": "notes_house_style",
                    "description": "How notes in this app should be titled and written. Read "
                    "this before adding a note.",
                    "safetyClass": "read-only",
                    "hints": {"readOnlyHint": True, "openWorldHint": False, "skill": True},
                    "runsWithoutAsking": ["read-only", "non-consequential"],
                },
            ],
        },
        {
            "connectionId": ARCHIVE,
            "name": "Acme archive",
            "trusted": False,
            "agents": ["notes"],
            "level": None,
            # Untrusted: its read-only hint cannot loosen it.
            "tools": [
                {
                    "name": "find_archived",
                    "description": "Find an archived note by its title.",
                    "safetyClass": "consequential",
                    "hints": {"readOnlyHint": True},
                    "runsWithoutAsking": [],
                }
            ],
        },
    ]


async def test_the_levels_have_the_names_the_permission_ask_uses(api: Api) -> None:
    asked = await api.say(call("list_notes"))
    assert asked.ask["origin"] == "permission"
    offered = [(o["id"], o["label"], o["description"]) for o in asked.ask["input"]["options"]]
    levels = (await api.get("/permissions")).json()["data"]["levels"]
    # The Grants page shows these: a person who chose "Allow read/write" reads it there.
    assert [(level["id"], level["label"], level["description"]) for level in levels] == offered
    assert [label for _id, label, _description in offered] == [
        "Ask every time",
        "Allow read-only",
        "Allow read/write",
    ]


async def test_set_and_forget_a_level(any_api: Api, notes: NotesApp) -> None:
    response = await put(any_api, f"/permissions/{NOTES}", {"level": "read-only"})
    assert response.status_code == 200, response.text
    saved = response.json()["data"]
    assert set(saved) == {"connectionId", "level", "updated"}
    assert (saved["connectionId"], saved["level"]) == (NOTES, "read-only")
    assert saved["updated"].endswith("Z")
    # The URL-encoded id names the same connection; a second PUT replaces the level.
    response = await put(any_api, "/permissions/local%3Anotes", {"level": "non-consequential"})
    assert response.status_code == 200, response.text
    # An id with '/' in it works as it is.
    await set_level(any_api, "ask", ARCHIVE)
    data = (await any_api.get("/permissions")).json()["data"]
    assert sorted((s["connectionId"], s["level"]) for s in data["saved"]) == [
        (NOTES, "non-consequential"),
        (ARCHIVE, "ask"),
    ]
    assert [(c["connectionId"], c["level"]) for c in data["connections"]] == [
        (NOTES, "non-consequential"),
        (ARCHIVE, "ask"),
    ]
    # The level is used: list_notes runs without the permission ask.
    listed = await any_api.say(call("list_notes"))
    assert "ask" not in kinds(listed)
    # Bob has his own levels.
    assert (await any_api.get("/permissions", user="bob")).json()["data"]["saved"] == []
    problem(
        await delete(any_api, f"/permissions/{NOTES}", user="bob"),
        404,
        "Permission level not found",
    )

    # Forgetting it: the next use asks for a level again.
    forgotten = await delete(any_api, f"/permissions/{NOTES}")
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["data"] == {"connectionId": NOTES, "deleted": True}
    problem(await delete(any_api, f"/permissions/{NOTES}"), 404, "Permission level not found")
    asked = await any_api.say(call("list_notes"))
    assert asked.ask["origin"] == "permission"
    assert notes.ran == ["list_notes"]
    archive_gone = await delete(any_api, "/permissions/mcp%3Aacme%2Farchive")
    assert archive_gone.status_code == 200, archive_gone.text


@pytest.mark.parametrize(
    ("body", "title", "fields"),
    [
        ({"level": "everything"}, "Unknown permission level", ["level"]),
        ({"level": "Read-Only"}, "Unknown permission level", ["level"]),
        ({}, "Validation failed", ["level"]),
        ({"level": 2}, "Validation failed", ["level"]),
        ({"level": "ask", "scope": "always"}, "Validation failed", ["scope"]),
        ([], "Validation failed", ["body"]),
        (None, "Validation failed", ["body"]),
    ],
)
async def test_a_bad_level_is_400(api: Api, body: Any, title: str, fields: list[str]) -> None:
    response = await put(api, f"/permissions/{NOTES}", body)
    found = problem(response, 400, title)
    assert found["code"] == "body-validation-failed"
    assert sorted(found["fields"]) == fields
    if title == "Unknown permission level":
        assert "ask, read-only, non-consequential" in found["detail"]
        assert found["fields"]["level"] == "must be one of ask, read-only, non-consequential"
    assert (await api.get("/permissions")).json()["data"]["saved"] == []


async def test_not_json_is_400(api: Api) -> None:
    response = await api.request(
        "PUT",
        f"/permissions/{NOTES}",
        content=b"{level",
        headers={"content-type": "application/json"},
    )
    assert problem(response, 400, "Validation failed")["fields"]["body"].startswith(
        "The body is not valid JSON"
    )


@pytest.mark.parametrize("connection_id", ["local:nope", "local:asker", "notes", "local:notes/x"])
async def test_a_connection_no_agent_has_is_404(api: Api, connection_id: str) -> None:
    response = await put(api, f"/permissions/{connection_id}", {"level": "ask"})
    body = problem(response, 404, "Connection not found")
    assert NOTES in body["detail"]
    assert ARCHIVE in body["detail"]
    problem(await delete(api, f"/permissions/{connection_id}"), 404, "Permission level not found")


async def test_permission_routes_need_a_token(api: Api) -> None:
    for method, path in (
        ("GET", "/permissions"),
        ("PUT", f"/permissions/{NOTES}"),
        ("DELETE", f"/permissions/{NOTES}"),
    ):
        problem(await api.request(method, path, user=None), 401, "Unauthorized")


async def test_the_routes_are_in_the_openapi_document(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    paths = document["paths"]
    assert set(paths["/api/grants"]) == {"get"}
    assert set(paths["/api/grants/{id}"]) == {"delete"}
    assert set(paths["/api/permissions"]) == {"get"}
    assert set(paths["/api/permissions/{connectionId}"]) == {"put", "delete"}
    put_op = paths["/api/permissions/{connectionId}"]["put"]
    assert put_op["requestBody"]["content"]["application/json"]["schema"]["required"] == ["level"]
    listing = (await api.get("/permissions")).json()
    schema = paths["/api/permissions"]["get"]["responses"]["200"]["content"]["application/json"]
    jsonschema.validate(listing, schema["schema"] | {"components": document["components"]})


# --- configuration ----------------------------------------------------------------------------


def test_clarify_in_yaml(tmp_path: Path) -> None:
    data = configuration(sqlite_url(tmp_path), tmp_path)
    data["agents"] = [
        {"name": "a", "clarify": True},
        {"name": "b"},
        {"name": "c", "clarify": False, "asks": False},
    ]
    config = ServerConfig.from_mapping(data, env={})
    assert [agent.clarify for agent in config.agents] == [True, False, False]


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"name": "a", "clarify": "yes"}, "agents[0].clarify: must be true or false"),
        (
            {"name": "a", "clarify": True, "asks": False},
            "agents[0].clarify: clarify pauses the turn on an ask, so it needs asks on",
        ),
        (
            {"import": f"{MODULE}:agent", "clarify": True},
            "agents[0].clarify: unknown setting; the settings here are import",
        ),
    ],
)
def test_clarify_mistakes(tmp_path: Path, agent: dict[str, Any], message: str) -> None:
    data = configuration(sqlite_url(tmp_path), tmp_path)
    data["agents"] = [agent]
    with pytest.raises(ConfigError) as caught:
        ServerConfig.from_mapping(data, env={})
    assert str(caught.value).startswith(message)


@pytest.fixture
def imported(notes: NotesApp) -> Iterator[NotesApp]:
    module = types.ModuleType(MODULE)
    module.agent = notes.agent  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    yield notes
    del sys.modules[MODULE]


def test_an_imported_agent_keeps_its_tools_and_clarify(tmp_path: Path, imported: NotesApp) -> None:
    config = ServerConfig.from_mapping(configuration(sqlite_url(tmp_path), tmp_path), env={})
    notes_agent, asker = config.resolved_agents()
    assert notes_agent.name == "notes"
    assert notes_agent.model == "scripted"
    assert notes_agent.clarify is True
    assert sorted(notes_agent.tools) == [
        "add_note",
        "delete_note",
        "find_archived",
        "list_notes",
        "notes_house_style",
    ]
    assert (asker.name, asker.clarify, dict(asker.tools)) == ("asker", True, {})
    assert TOKENS["alice"] in {user.token for user in config.users}
