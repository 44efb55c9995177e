"""Errors: every row of the spec's "Error responses" table on ``POST /prompt`` (raised before the
stream starts), the problem JSON shape, 401, unknown routes and the catch-all 500."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import TOKENS, Api, command, sqlite_url, start_api

from examples import PLAN
from handrail.server.auth import bearer_token
from handrail.store import HistoryConflict


async def _paused(api: Api) -> tuple[str, str]:
    stream = await api.say(command("ask_choice", PLAN))
    return stream.history_id, stream.ask["toolCallId"]


def _problem(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == response.status_code
    assert body["requestId"] == response.headers["x-request-id"]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    return dict(body)


ANSWER = {"action": "accept", "content": {"selected": ["team"]}}


@pytest.mark.parametrize(
    ("body", "title"),
    [
        ({}, "prompt is required"),
        ({"historyId": "HISTORY"}, "prompt is required"),
        ({"prompt": None, "askResponse": None}, "prompt is required"),
        ({"prompt": ""}, "prompt is required"),
        ({"prompt": "   "}, "prompt is required"),
        (
            {"prompt": "hi", "historyId": "HISTORY", "askResponse": "ASK"},
            "Send either prompt or askResponse, not both",
        ),
        ({"historyId": "HISTORY", "askResponse": "yes"}, "askResponse must be an object"),
        ({"historyId": "HISTORY", "askResponse": ["ASK"]}, "askResponse must be an object"),
        ({"historyId": "HISTORY", "askResponse": {"action": "decline"}}, ("TOOLCALLID")),
        (
            {"historyId": "HISTORY", "askResponse": {"toolCallId": "", "action": "decline"}},
            "TOOLCALLID",
        ),
        (
            {"historyId": "HISTORY", "askResponse": "ASK", "attachments": []},
            "attachments cannot be sent with askResponse",
        ),
        ({"askResponse": "ASK"}, "historyId is required with askResponse"),
        ({"historyId": "", "askResponse": "ASK"}, "historyId is required with askResponse"),
        ({"prompt": "hi", "surface": "watch"}, "surface is not a known surface"),
        (
            {"historyId": "HISTORY", "askResponse": "ASK", "surface": "tiny"},
            "surface is not a known surface",
        ),
        (
            {
                "historyId": "HISTORY",
                "askResponse": {
                    "toolCallId": "TOOL",
                    "action": "accept",
                    "content": {"selected": ["gold"]},
                },
            },
            "Invalid askResponse",
        ),
    ],
)
async def test_prompt_400s(api: Api, body: dict[str, Any], title: str) -> None:
    history_id, tool_call_id = await _paused(api)
    if title == "TOOLCALLID":
        title = "askResponse.toolCallId is required"
    concrete: dict[str, Any] = {}
    for key, value in body.items():
        if value == "HISTORY":
            value = history_id
        elif value == "ASK":
            value = {"toolCallId": tool_call_id, **ANSWER}
        elif isinstance(value, dict) and value.get("toolCallId") == "TOOL":
            value = {**value, "toolCallId": tool_call_id}
        concrete[key] = value
    response = await api.post("/prompt", concrete)
    assert response.status_code == 400, response.text
    problem = _problem(response)
    assert problem["title"] == title
    if title == "surface is not a known surface":
        assert "full" in problem["detail"]
        assert "compact" in problem["detail"]
    if title == "Invalid askResponse":
        assert problem["fields"] == [
            {
                "code": "OPTION_NOT_OFFERED",
                "fix": problem["fields"][0]["fix"],
                "message": problem["fields"][0]["message"],
                "path": "content.selected[0]",
            }
        ]
        assert problem["detail"] == "The answer does not match the ask. See fields."
    # Nothing changed: the ask is still pending.
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id


async def test_prompt_403_for_another_users_history(api: Api) -> None:
    history_id, tool_call_id = await _paused(api)
    for user in ("bob", "root"):
        answer = await api.answer(history_id, tool_call_id, ANSWER, user=user)
        assert answer.status == 403
        assert answer.problem is not None
        assert answer.problem["title"] == "Not authorized to access this history"
        message = await api.prompt({"prompt": "hi", "historyId": history_id}, user=user)
        assert message.status == 403
    assert (await api.history(history_id))["pendingAsk"] is not None


async def test_prompt_404(api: Api) -> None:
    for body in (
        {"prompt": "hi", "historyId": "0" * 24},
        {"historyId": "0" * 24, "askResponse": {"toolCallId": "x", "action": "decline"}},
    ):
        response = await api.post("/prompt", body)
        assert response.status_code == 404
        assert _problem(response)["title"] == "History not found"


async def test_prompt_404_after_delete(api: Api) -> None:
    history_id, tool_call_id = await _paused(api)
    assert (await api.request("DELETE", f"/histories/{history_id}")).status_code == 200
    answer = await api.answer(history_id, tool_call_id, ANSWER)
    assert answer.status == 404


async def test_prompt_409(api: Api) -> None:
    history_id, tool_call_id = await _paused(api)
    wrong = await api.answer(history_id, "call_other", ANSWER)
    assert wrong.status == 409
    assert wrong.problem is not None
    assert wrong.problem["title"] == "This ask is no longer pending"
    assert (await api.answer(history_id, tool_call_id, ANSWER)).status == 200
    again = await api.answer(history_id, tool_call_id, ANSWER)
    assert again.status == 409
    assert again.problem is not None
    assert again.problem["title"] == "This ask is no longer pending"
    # A prompt is never rejected this way.
    assert (await api.say("hello", history_id)).status == 200


async def test_409_on_a_history_that_never_asked(api: Api) -> None:
    stream = await api.say("hi")
    answer = await api.answer(stream.history_id, "call_1_0", {"action": "decline"})
    assert answer.status == 409


async def test_other_prompt_body_mistakes(api: Api) -> None:
    for raw, title in (
        (b"{not json", "Invalid JSON"),
        (b"[1, 2]", "Invalid JSON"),
        (b'{"prompt": "hi", "model": "gpt"}', "Validation failed"),
        (b'{"prompt": "hi", "historyId": 42}', "Validation failed"),
        (b'{"prompt": "hi", "attachments": [{"url": "data:,x"}]}', "attachments are not supported"),
        (b'{"prompt": "hi", "agent": "nobody"}', "Unknown agent"),
    ):
        response = await api.request(
            "POST", "/prompt", content=raw, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, raw
        assert _problem(response)["title"] == title, raw


async def test_problem_shape_is_pinned(api: Api) -> None:
    """One test pins the whole error shape: status, title, detail, code, fields, requestId."""
    response = await api.post("/histories/" + "0" * 24 + "/turn", {"prompt": "hi", "x": 1})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body == {
        "status": 400,
        "title": "Validation failed",
        "detail": "The body does not have the shape this route takes. See fields.",
        "code": "action-body-validation-failed",
        "fields": {"x": body["fields"]["x"]},
        "requestId": response.headers["x-request-id"],
    }
    uuid.UUID(body["requestId"], version=4)


class TestUnauthorized:
    ROUTES = (
        ("POST", "/prompt"),
        ("GET", "/histories"),
        ("POST", "/histories"),
        ("GET", "/histories/pendingAsks"),
        ("GET", "/histories/abc"),
        ("PATCH", "/histories/abc"),
        ("DELETE", "/histories/abc"),
        ("POST", "/histories/abc/turn"),
        ("POST", "/files/upload"),
    )

    @pytest.mark.parametrize(("method", "path"), ROUTES)
    @pytest.mark.parametrize(
        "authorization",
        [None, "Bearer nope", "Bearer ", "Basic YWxpY2U6eA==", TOKENS["alice"], "Bearer  x"],
    )
    async def test_401(self, api: Api, method: str, path: str, authorization: str | None) -> None:
        headers = {} if authorization is None else {"Authorization": authorization}
        response = await api.request(method, path, user=None, headers=headers, json={})
        assert response.status_code == 401
        problem = _problem(response)
        assert problem["title"] == "Unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"

    async def test_valid_token(self, api: Api) -> None:
        response = await api.request(
            "GET", "/histories", user=None, headers={"Authorization": "bearer " + TOKENS["bob"]}
        )
        assert response.status_code == 200


async def test_unknown_route_and_method(api: Api) -> None:
    response = await api.get("/nothing/here")
    assert response.status_code == 404
    assert _problem(response)["title"] == "Not Found"
    outside = await api.client.get("/somewhere")
    assert outside.status_code == 404
    assert _problem(outside)["title"] == "Not Found"
    wrong = await api.request("PUT", "/histories")
    assert wrong.status_code == 405
    assert _problem(wrong)["title"] == "Method Not Allowed"


async def test_request_ids(api: Api) -> None:
    first = await api.get("/histories")
    second = await api.get("/histories")
    ids = {first.headers["x-request-id"], second.headers["x-request-id"]}
    assert len(ids) == 2
    assert first.json()["requestId"] == first.headers["x-request-id"]
    stream = await api.say("hi")
    uuid.UUID(stream.response.headers["x-request-id"], version=4)


async def test_catch_all_500(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path, raise_app_exceptions=False) as api:

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret internals: password=hunter2")

        monkeypatch.setattr(api.store.histories, "list_page", broken)
        with caplog.at_level(logging.ERROR, logger="handrail.server"):
            response = await api.get("/histories")
        assert response.status_code == 500
        body = _problem(response)
        assert body["title"] == "Internal Server Error"
        assert "hunter2" not in response.text
        assert "Traceback" not in response.text
        assert body["requestId"] in caplog.text
        assert "hunter2" in caplog.text  # the log has the details


async def test_runtime_conflict_surfaces_as_409(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lost compare-and-set in the answer's one atomic update is the spec's 409."""
    history_id, tool_call_id = await _paused(api)
    real_apply = api.store.histories.apply

    async def losing_apply(*args: Any, **kwargs: Any) -> Any:
        raise HistoryConflict(history_id, expected_version=2, current_version=3)

    monkeypatch.setattr(api.store.histories, "apply", losing_apply)
    answer = await api.answer(history_id, tool_call_id, ANSWER)
    assert answer.status == 409
    assert answer.problem is not None
    assert answer.problem["title"] == "This ask is no longer pending"
    monkeypatch.setattr(api.store.histories, "apply", real_apply)
    assert (await api.answer(history_id, tool_call_id, ANSWER)).status == 200


async def test_json_body_limit(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path, max_upload_bytes=10) as api:
        limit = api.app.state.max_json_bytes
        big = {"prompt": "x" * (limit + 10)}
        response = await api.post("/prompt", big)
        assert response.status_code == 413
        assert _problem(response)["title"] == "Request body too large"
        turn = await api.post("/histories/" + "0" * 24 + "/turn", big)
        assert turn.status_code == 413


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic YWxpY2U6eA==", None),
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("Bearer  abc", " abc"),  # as sent: a token with a leading space is another token
    ],
)
def test_bearer_token_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize(
    ("method", "path", "allowed", "use"),
    [
        ("PUT", "/histories", "GET, POST", "GET or POST"),
        ("POST", "/histories/abc", "DELETE, GET, PATCH", "DELETE or GET or PATCH"),
        ("OPTIONS", "/permissions/notes", "DELETE, PUT", "DELETE or PUT"),
        ("OPTIONS", "/histories/pendingAsks", "GET", "GET"),
    ],
)
async def test_405_names_every_method_of_the_path(
    api: Api, method: str, path: str, allowed: str, use: str
) -> None:
    response = await api.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert _problem(response)["detail"].endswith(f"; use {use}.")


@pytest.mark.parametrize("raw", [b"\x0c", b"\x0b\x0b", b" \x1c "])
async def test_a_body_of_non_json_whitespace_is_not_an_empty_body(api: Api, raw: bytes) -> None:
    response = await api.request(
        "POST", "/histories", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert _problem(response)["title"] in ("Invalid JSON", "Validation failed")


async def test_a_body_of_json_whitespace_is_empty(api: Api) -> None:
    response = await api.request(
        "POST", "/histories", content=b" \r\n\t", headers={"content-type": "application/json"}
    )
    assert response.status_code == 201
