"""The headless endpoints: ``GET /histories/pendingAsks`` and ``POST /histories/{id}/turn``, their
error table, every body shape, button answers, and the conformance schemas."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import jsonschema
import pytest
from server_helpers import (
    CONFIRM,
    FORM,
    MARKDOWN,
    Api,
    command,
    compact,
    load_schema,
)

from examples import PLAN, plan_card
from handrail.asks import PendingAsk
from handrail.store.records import HistoryChange

TURN_RESPONSE = load_schema("turnResponse")
PENDING_ASKS = load_schema("pendingAsksResponse")
TURN_REQUEST = load_schema("turnRequest")


def _valid(document: dict[str, Any], instance: Any) -> None:
    jsonschema.validate(instance, document, format_checker=jsonschema.FormatChecker())


async def turn(api: Api, history_id: str, body: Any, *, user: str = "alice") -> httpx.Response:
    response = await api.post(f"/histories/{history_id}/turn", body, user=user)
    if response.status_code == 200:
        _valid(TURN_RESPONSE, response.json())
        assert response.json()["requestId"] == response.headers["x-request-id"]
    else:
        assert response.headers["content-type"] == "application/problem+json"
    return response


async def new_history(api: Api, *, user: str = "alice") -> str:
    response = await api.post("/histories", {}, user=user)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


async def paused(
    api: Api, args: dict[str, Any] = PLAN, tool: str = "ask_choice"
) -> tuple[str, str]:
    history_id = await new_history(api)
    response = await turn(api, history_id, {"prompt": command(tool, args)})
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    return history_id, data["pendingAsk"]["toolCallId"]


async def test_headless_wire_example(any_api: Api) -> None:
    """The spec's small client: ask, then answer with a button id."""
    history_id = await new_history(any_api)
    first = await turn(any_api, history_id, {"prompt": command("ask_choice", PLAN)})
    assert first.status_code == 200
    data = first.json()["data"]
    tool_call_id = data["pendingAsk"]["toolCallId"]
    assert data["historyId"] == history_id
    assert data["text"] == ""
    assert data["pendingAsk"] == {
        "kind": "choice",
        "simple": plan_card(tool_call_id),
        "toolCallId": tool_call_id,
    }
    assert "error" not in data

    listed = await any_api.get("/histories/pendingAsks")
    assert listed.status_code == 200
    _valid(PENDING_ASKS, listed.json())
    [entry] = listed.json()["data"]
    assert entry["historyId"] == history_id
    assert entry["toolCallId"] == tool_call_id
    assert entry["kind"] == "choice"
    assert entry["simple"] == plan_card(tool_call_id)
    assert entry["created"].endswith("Z")

    second = await turn(
        any_api, history_id, {"toolCallId": tool_call_id, "buttonId": "option:team"}
    )
    assert second.status_code == 200
    result = second.json()["data"]
    answer = {"action": "accept", "content": {"selected": ["team"]}}
    assert result["text"] == f"ask_choice returned: {compact(answer)}"
    assert "pendingAsk" not in result
    assert isinstance(result["title"], str)
    assert (await any_api.get("/histories/pendingAsks")).json()["data"] == []
    rows = await any_api.rows(history_id)
    assert [r["type"] for r in rows] == ["user", "tool-call", "tool-result", "assistant"]
    assert rows[2]["result"] == answer


async def test_turn_with_ask_response_and_surface(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    body = {
        "askResponse": {"toolCallId": tool_call_id, "action": "decline"},
        "surface": "compact",
    }
    _valid(TURN_REQUEST, body)
    response = await turn(api, history_id, body)
    assert response.status_code == 200
    assert response.json()["data"]["text"] == 'ask_choice returned: {"action":"decline"}'


async def test_turn_prompt_cancels_pending(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    response = await turn(api, history_id, {"prompt": "Actually, never mind"})
    assert response.status_code == 200
    assert response.json()["data"]["text"] == "You said: Actually, never mind"
    rows = await api.rows(history_id)
    assert rows[2] == {
        "type": "tool-result",
        "toolName": "ask_choice",
        "toolCallId": tool_call_id,
        "result": {"action": "cancel", "reason": "user_sent_message"},
    }


@pytest.mark.parametrize(
    ("args", "tool", "button", "answer"),
    [
        (CONFIRM, "ask_confirm", "approve", {"action": "accept", "content": {"confirmed": True}}),
        (CONFIRM, "ask_confirm", "deny", {"action": "accept", "content": {"confirmed": False}}),
        (
            FORM,
            "ask_form",
            "submit-defaults",
            {"action": "accept", "content": {"values": {"due": "2026-10-01"}}},
        ),
        (FORM, "ask_form", "cancel", {"action": "decline"}),
        (
            MARKDOWN,
            "ask_markdown",
            "approve",
            {"action": "accept", "content": {"markdown": MARKDOWN["initial"], "changed": False}},
        ),
        (PLAN, "ask_choice", "option:enterprise", None),
    ],
)
async def test_button_answers(
    api: Api, args: dict[str, Any], tool: str, button: str, answer: dict[str, Any] | None
) -> None:
    history_id, tool_call_id = await paused(api, args, tool)
    response = await turn(api, history_id, {"toolCallId": tool_call_id, "buttonId": button})
    assert response.status_code == 200, response.text
    if answer is None:
        answer = {"action": "accept", "content": {"selected": ["enterprise"]}}
    assert response.json()["data"]["text"] == f"{tool} returned: {compact(answer)}"


async def test_unknown_button(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    response = await turn(api, history_id, {"toolCallId": tool_call_id, "buttonId": "option:gold"})
    assert response.status_code == 400
    problem = response.json()
    assert problem["title"] == "Unknown buttonId"
    assert problem["code"] == "UNKNOWN_BUTTON"
    [error] = problem["fields"]
    assert error["code"] == "UNKNOWN_BUTTON"
    assert "option:team" in error["fix"]
    # The ask stays pending.
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id


async def test_invalid_ask_response(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    body = {
        "askResponse": {
            "toolCallId": tool_call_id,
            "action": "accept",
            "content": {"selected": ["gold"]},
        }
    }
    response = await turn(api, history_id, body)
    assert response.status_code == 400
    problem = response.json()
    assert problem["title"] == "Invalid askResponse"
    assert "code" not in problem
    assert [f["code"] for f in problem["fields"]] == ["OPTION_NOT_OFFERED"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["prompt"]),
        ([], ["body"]),
        ("hello", ["body"]),
        ({"surface": "full"}, ["prompt"]),
        ({"prompt": "hi", "extra": 1}, ["extra"]),
        ({"prompt": "hi", "historyId": "x"}, ["historyId"]),
        ({"prompt": "hi", "surface": "watch"}, ["surface"]),
        ({"prompt": "hi", "surface": None}, ["surface"]),
        ({"prompt": ""}, ["prompt"]),
        ({"prompt": 5}, ["prompt"]),
        ({"prompt": "hi", "askResponse": {"toolCallId": "TOOL", "action": "decline"}}, None),
        ({"prompt": "hi", "toolCallId": "TOOL", "buttonId": "skip"}, ["prompt", "toolCallId"]),
        ({"askResponse": "yes"}, ["askResponse"]),
        ({"askResponse": {"action": "decline"}}, ["askResponse.toolCallId"]),
        ({"toolCallId": "TOOL"}, ["buttonId"]),
        ({"buttonId": "skip"}, ["toolCallId"]),
        ({"toolCallId": "TOOL", "buttonId": ""}, ["buttonId"]),
        ({"toolCallId": 1, "buttonId": "skip"}, ["toolCallId"]),
    ],
)
async def test_turn_validation_failed(api: Api, body: Any, fields: list[str] | None) -> None:
    history_id, tool_call_id = await paused(api)
    if isinstance(body, dict):
        body = {k: (tool_call_id if v == "TOOL" else v) for k, v in body.items()}
        if isinstance(body.get("askResponse"), dict):
            body["askResponse"] = {
                k: (tool_call_id if v == "TOOL" else v) for k, v in body["askResponse"].items()
            }
    response = await turn(api, history_id, body)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["title"] == "Validation failed"
    assert problem["code"] == "action-body-validation-failed"
    assert isinstance(problem["fields"], dict)
    assert all(isinstance(m, str) and m for m in problem["fields"].values())
    if fields is None:
        fields = ["askResponse", "prompt"]
    assert sorted(problem["fields"]) == sorted(fields)
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id


async def test_turn_body_not_json(api: Api) -> None:
    history_id = await new_history(api)
    response = await api.request(
        "POST",
        f"/histories/{history_id}/turn",
        content=b"{oops",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "action-body-validation-failed"


async def test_turn_401(api: Api) -> None:
    history_id = await new_history(api)
    response = await api.request(
        "POST", f"/histories/{history_id}/turn", user=None, json={"prompt": "hi"}
    )
    assert response.status_code == 401
    assert response.json()["title"] == "Unauthorized"
    assert "code" not in response.json()


async def test_turn_403_for_another_user(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    for body in (
        {"prompt": "hi"},
        {"askResponse": {"toolCallId": tool_call_id, "action": "decline"}},
        {"toolCallId": tool_call_id, "buttonId": "skip"},
    ):
        response = await turn(api, history_id, body, user="bob")
        assert response.status_code == 403
        assert response.json()["title"] == "Access denied"
        assert response.json()["code"] == "action-access-denied"
        admin = await turn(api, history_id, body, user="root")
        assert admin.status_code == 403
        assert admin.json()["title"] == "Not authorized to access this history"
        assert "code" not in admin.json()
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id


async def test_turn_404(api: Api) -> None:
    for history_id in ("0" * 24, "nope"):
        response = await turn(api, history_id, {"prompt": "hi"})
        assert response.status_code == 404
        assert response.json()["title"] == "Document not found"
        assert response.json()["code"] == "document-not-found"
    deleted = await new_history(api)
    await api.request("DELETE", f"/histories/{deleted}")
    response = await turn(api, deleted, {"prompt": "hi"})
    assert response.status_code == 404
    assert response.json()["code"] == "document-not-found"


async def test_turn_409(api: Api) -> None:
    history_id, tool_call_id = await paused(api)
    for body in (
        {"askResponse": {"toolCallId": "call_other", "action": "decline"}},
        {"toolCallId": "call_other", "buttonId": "skip"},
    ):
        response = await turn(api, history_id, body)
        assert response.status_code == 409
        assert response.json()["title"] == "This ask is no longer pending"
    ok = await turn(api, history_id, {"toolCallId": tool_call_id, "buttonId": "option:team"})
    assert ok.status_code == 200
    again = await turn(api, history_id, {"toolCallId": tool_call_id, "buttonId": "option:team"})
    assert again.status_code == 409
    assert (await turn(api, history_id, {"prompt": "still here?"})).status_code == 200


async def test_turn_error_result_has_status_200(api: Api) -> None:
    history_id = await new_history(api)
    response = await turn(api, history_id, {"prompt": "fail-after-text Let me check."})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["text"] == "Let me check."
    assert isinstance(data["error"], str)


async def test_pending_asks_lists_only_the_callers_newest_first(api: Api) -> None:
    first, first_call = await paused(api)
    await asyncio.sleep(0.01)
    second, second_call = await paused(api, CONFIRM, "ask_confirm")
    bobs = await new_history(api, user="bob")
    assert (await turn(api, bobs, {"prompt": command("ask_choice", PLAN)}, user="bob")).is_success
    deleted, _ = await paused(api)
    await api.request("DELETE", f"/histories/{deleted}")
    answered, answered_call = await paused(api)
    assert (
        await turn(api, answered, {"toolCallId": answered_call, "buttonId": "option:team"})
    ).is_success

    response = await api.get("/histories/pendingAsks")
    _valid(PENDING_ASKS, response.json())
    entries = response.json()["data"]
    assert [(e["historyId"], e["toolCallId"]) for e in entries] == [
        (second, second_call),
        (first, first_call),
    ]
    assert entries[0]["kind"] == "confirm"
    for entry in entries:
        assert set(entry) <= {"historyId", "title", "toolCallId", "kind", "simple", "created"}
    bob_entries = (await api.get("/histories/pendingAsks", user="bob")).json()["data"]
    assert [e["historyId"] for e in bob_entries] == [bobs]
    # An admin sees only their own.
    assert (await api.get("/histories/pendingAsks", user="root")).json()["data"] == []


async def test_pending_asks_title(api: Api) -> None:
    history_id = (await api.post("/histories", {"title": "Billing"})).json()["data"]["id"]
    await turn(api, history_id, {"prompt": command("ask_choice", PLAN)})
    [entry] = (await api.get("/histories/pendingAsks")).json()["data"]
    assert entry["title"] == "Billing"


async def test_request_bodies_match_the_published_schema(api: Api) -> None:
    """Every body shape the server accepts is valid against turnRequest.schema.json."""
    for body in (
        {"prompt": "hi"},
        {"prompt": "hi", "surface": "compact"},
        {"askResponse": {"toolCallId": "c", "action": "accept", "content": {"x": 1}}},
        {"askResponse": {"toolCallId": "c", "action": "cancel", "reason": "no"}},
        {"toolCallId": "c", "buttonId": "skip", "surface": "full"},
    ):
        _valid(TURN_REQUEST, body)


async def test_approval_asks_show_as_plain_asks(api: Api) -> None:
    """An approval ask lists as a plain confirm: no origin or toolName in pendingAsks."""
    history_id = await new_history(api)
    card = {
        "toolCallId": "call_appr",
        "kind": "confirm",
        "text": "Allow deleteTodos?",
        "buttons": [
            {
                "id": "approve",
                "label": "Allow",
                "style": "primary",
                "response": {"action": "accept", "content": {"confirmed": True}},
            },
            {
                "id": "deny",
                "label": "Deny",
                "style": "cancel",
                "response": {"action": "accept", "content": {"confirmed": False}},
            },
        ],
        "handoff": False,
    }
    pending = {
        "toolCallId": "call_appr",
        "kind": "confirm",
        "input": {"prompt": "Allow deleteTodos?", "confirmLabel": "Allow", "denyLabel": "Deny"},
        "simple": card,
        "created": "2026-11-30T07:08:38.123Z",
        "origin": "approval",
        "approvalId": "call_appr",
        "toolName": "deleteTodos",
        "promptIndex": 1,
        "responseMessages": [{"secret": "model only"}],
    }
    history = await api.store.histories.get(history_id)
    assert history is not None
    await api.store.histories.apply(
        history_id,
        HistoryChange(pending_ask=PendingAsk.from_json(pending)),
        expected_version=history.version,
    )
    response = await api.get("/histories/pendingAsks")
    _valid(PENDING_ASKS, response.json())
    assert response.json()["data"] == [
        {
            "historyId": history_id,
            "toolCallId": "call_appr",
            "kind": "confirm",
            "simple": card,
            "created": "2026-11-30T07:08:38.123Z",
        }
    ]
    read = await api.history(history_id)
    assert read["pendingAsk"] == {
        key: pending[key]
        for key in ("toolCallId", "kind", "input", "simple", "created", "origin", "toolName")
    } | {"approvalId": "call_appr"}
