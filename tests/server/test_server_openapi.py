"""``GET /openapi.json``: every route, the schemas they point at, ``pendingAsk`` read-only, and
nothing for the model only (``promptIndex``, ``responseMessages``) in any schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.routing import APIRoute
from server_helpers import Api, sqlite_url, start_api

from handrail.runtime.agent import Agent
from handrail.server.openapi import component_schemas

ROUTES = {
    ("/api/prompt", "post"),
    ("/api/histories", "post"),
    ("/api/histories", "get"),
    ("/api/histories/pendingAsks", "get"),
    ("/api/inbox", "get"),
    ("/api/histories/{id}", "get"),
    ("/api/histories/{id}", "patch"),
    ("/api/histories/{id}", "delete"),
    ("/api/histories/{id}/turn", "post"),
    ("/api/files/upload", "post"),
    ("/api/grants", "get"),
    ("/api/grants/{id}", "delete"),
    ("/api/permissions", "get"),
    ("/api/permissions/{connectionId}", "put"),
    ("/api/permissions/{connectionId}", "delete"),
    ("/api/confirmations/{id}", "get"),
    ("/api/info", "get"),
    ("/api/catalog", "get"),
    ("/api/connections", "get"),
    ("/api/connections", "post"),
    ("/api/connections/{id}", "get"),
    ("/api/connections/{id}", "patch"),
    ("/api/connections/{id}", "delete"),
    ("/api/connections/{id}/refresh", "post"),
    ("/api/connections/{id}/authorize", "post"),
    ("/api/oauth/callback", "get"),
    ("/api/connections/{id}/tools", "get"),
    ("/api/activity", "get"),
    ("/api/audit", "get"),
    ("/api/approvals", "get"),
    ("/api/approvals/{historyId}", "post"),
    ("/api/connections/{id}/authorize", "post"),
    ("/api/oauth/callback", "get"),
    ("/api/approvals", "get"),
    ("/api/approvals/{historyId}", "post"),
    ("/api/audit", "get"),
    ("/api/deliveries", "get"),
    ("/api/deliveries/{id}", "get"),
    ("/api/events", "get"),
    ("/api/tokens", "post"),
    ("/api/histories/{id}/stop", "post"),
    ("/api/connections/{id}/instructions/reset", "post"),
    ("/api/histories/{id}/instructions", "get"),
    ("/api/agents/{name}/instructions", "get"),
}


def _refs(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            found.add(value["$ref"].removeprefix("#/components/schemas/"))
        for item in value.values():
            found |= _refs(item)
    elif isinstance(value, list):
        for item in value:
            found |= _refs(item)
    return found


async def _document(api: Api) -> dict[str, Any]:
    response = await api.client.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


async def test_every_route_is_documented(api: Api) -> None:
    document = await _document(api)
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert documented == ROUTES
    app_routes = {
        (route.path.replace(":path}", "}"), method.lower())
        for route in api.app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    assert app_routes == ROUTES
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "422" not in responses, (path, method)
            if operation.get("security") == []:
                # The one route without a token: the browser back from a sign-in.
                assert (path, method) == ("/api/oauth/callback", "get")
                assert "401" not in responses
            else:
                assert "401" in responses
            assert operation["operationId"]
            success = [s for s in responses if s.startswith("2")]
            assert len(success) == 1, (path, method)
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"


async def test_every_reference_resolves(api: Api) -> None:
    document = await _document(api)
    schemas = document["components"]["schemas"]
    assert _refs(document) <= set(schemas)
    assert "HTTPValidationError" not in schemas


async def test_pending_ask_is_read_only(api: Api) -> None:
    schemas = (await _document(api))["components"]["schemas"]
    for name in ("History", "HistorySummary"):
        assert schemas[name]["properties"]["pendingAsk"]["readOnly"] is True
    for name in ("HistoryCreate", "HistoryUpdate"):
        assert "pendingAsk" not in schemas[name]["properties"]
        assert "userId" not in schemas[name]["properties"]


async def test_model_only_fields_are_in_no_schema(api: Api) -> None:
    text = json.dumps(await _document(api))
    assert "promptIndex" not in text
    assert "responseMessages" not in text
    assert "promptIndex" not in json.dumps(component_schemas())


async def test_headless_schemas_match_the_published_ones(api: Api) -> None:
    schemas = (await _document(api))["components"]["schemas"]
    assert schemas["TurnRequest"]["title"] == "TurnRequest"
    assert schemas["TurnResult"]["title"] == "TurnResult"
    assert schemas["PendingAsk"]["title"] == "PendingAsk"
    turn = (await _document(api))["paths"]["/api/histories/{id}/turn"]["post"]
    schema = turn["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/TurnRequest"}
    stream = (await _document(api))["paths"]["/api/prompt"]["post"]["responses"]["200"]
    assert list(stream["content"]) == ["text/event-stream"]


async def test_headless_routes_need_asks(tmp_path: Path) -> None:
    agents = [Agent("plain", asks=False)]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents) as api:
        paths = set((await _document(api))["paths"])
        assert "/api/histories/pendingAsks" not in paths
        assert "/api/inbox" not in paths
        assert "/api/histories/{id}/turn" not in paths
        assert "/api/prompt" in paths


async def test_prefix(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path, api_prefix="/v1/chat/") as api:
        paths = set((await _document(api))["paths"])
        assert "/v1/chat/prompt" in paths
        response = await api.client.get(
            "/v1/chat/histories", headers={"Authorization": "Bearer " + "alice-token-0123456789"}
        )
        assert response.status_code == 200


async def test_body_schemas_say_what_the_server_takes(api: Api) -> None:
    schemas = (await _document(api))["components"]["schemas"]
    agents = sorted(api.app.state.runtime.agents)
    for name in ("HistoryCreate", "HistoryUpdate", "PromptRequest"):
        assert schemas[name]["additionalProperties"] is False
    assert schemas["HistoryCreate"]["properties"]["agent"]["enum"] == agents
    assert schemas["PromptRequest"]["properties"]["agent"]["enum"] == agents
    assert schemas["PromptRequest"]["oneOf"] == [
        {"required": ["prompt"]},
        {"required": ["askResponse"]},
    ]
    assert schemas["PromptRequest"]["dependentSchemas"] == {
        "askResponse": {"not": {"required": ["attachments"]}}
    }
    assert schemas["PromptRequest"]["dependentRequired"] == {"askResponse": ["historyId"]}
    assert schemas["HistoryUpdate"]["properties"]["title"]["pattern"] == "\\S"


async def test_the_answer_routes_document_edit_then_approve(api: Api) -> None:
    """The edited-arguments extension of an approval's or a confirmation's answer is in the
    document where the owner sends it (``prompt`` and ``turn``), not only on the approvers'
    route."""
    paths = (await _document(api))["paths"]
    for path in ("/api/prompt", "/api/histories/{id}/turn"):
        description = paths[path]["post"]["description"]
        assert '"arguments"' in description, path
        assert "input schema" in description, path
    approver = paths["/api/approvals/{historyId}"]["post"]["requestBody"]
    content = approver["content"]["application/json"]["schema"]["properties"]["content"]
    assert content["properties"]["arguments"] == {"type": "object"}


def _media(response: Any) -> str:
    return str(response.headers["content-type"]).split(";")[0].strip()


async def test_what_a_route_sends_is_in_its_document(api: Api) -> None:
    """The audit log's exports and the sign-in callback's pages send media types their
    operation documents, beside the JSON."""
    paths = (await _document(api))["paths"]
    audit = paths["/api/audit"]["get"]["responses"]["200"]["content"]
    for format in ("json", "jsonl", "csv"):
        response = await api.get(f"/audit?format={format}", user="root")
        assert response.status_code == 200, response.text
        assert _media(response) in audit, format
    callback = paths["/api/oauth/callback"]["get"]["responses"]
    for accept in ("application/json", "text/html"):
        response = await api.client.get(
            "/api/oauth/callback?code=x&state=made-up", headers={"Accept": accept}
        )
        assert response.status_code == 400, response.text
        assert _media(response) in callback["400"]["content"], accept
    assert set(callback["200"]["content"]) == {"application/json", "text/html"}
    # The connection's own refusals, before any route, are said once for every route.
    description = (await _document(api))["info"]["description"]
    for status in ("431", "408", "503"):
        assert status in description, status
