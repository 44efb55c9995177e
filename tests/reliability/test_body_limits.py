"""What a JSON body may be: within its route's cap (413, with the limit, before more is read)
and at most `MAX_JSON_DEPTH` levels deep (400, never a 500). Only the answer to a pending
`files` ask gets the large cap of its data URLs."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_helpers import db_state, problem, send_raw
from server_helpers import FILES, MARKDOWN, Api, command, sqlite_url, start_api

from handrail.demo.booking_api import create_booking_app
from handrail.runtime.agent import Agent
from handrail.server.bodies import MAX_JSON_DEPTH

CAP = 4096  # max_json_bytes in these tests
UPLOAD_CAP = 3000  # max_upload_bytes: the files-answer cap is 10 * 4000 + 1 MiB
FILES_CAP = UPLOAD_CAP * 10 * 4 // 3 + 1024 * 1024
CHUNK = 256


def agents() -> list[Agent]:
    helper = Agent("helper", instructions="You help people.")

    @helper.tool(read_only=True)
    def list_notes() -> str:
        """List the notes."""
        return "none"

    return [helper]


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(
        sqlite_url(tmp_path),
        tmp_path,
        agents=agents(),
        max_json_bytes=CAP,
        max_upload_bytes=UPLOAD_CAP,
    ) as running:
        yield running


async def paused(
    api: Api, tool: str, args: dict[str, Any], *, user: str = "alice"
) -> tuple[str, str]:
    stream = await api.prompt({"prompt": command(tool, args)}, user=user)
    assert stream.status == 200, stream.problem
    return stream.history_id, stream.ask["toolCallId"]


#: Each JSON route, with the title and code it gives a body that is not JSON.
ROUTES = [
    ("POST", "/prompt", "Invalid JSON", None),
    ("POST", "/histories", "Validation failed", "body-validation-failed"),
    ("PATCH", "/histories/{h}", "Validation failed", "body-validation-failed"),
    ("POST", "/histories/{h}/turn", "Validation failed", "action-body-validation-failed"),
    ("PUT", "/permissions/local:helper", "Validation failed", "body-validation-failed"),
]
IDS = [f"{method} {path}" for method, path, _, _ in ROUTES]


def nested(levels: int, inner: Any = 0) -> Any:
    value = inner
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "body",
    [b"[" * 4000, b"[" * 500 + b"]" * 500, b'{"a":' * 70 + b"1" + b"}" * 70],
    ids=["unclosed", "closed", "objects"],
)
@pytest.mark.parametrize(("method", "path", "title", "code"), ROUTES, ids=IDS)
async def test_deep_json_is_a_400_naming_the_limit_on_every_route(
    api: Api, method: str, path: str, title: str, code: str | None, body: bytes
) -> None:
    history_id, _ = await paused(api, "ask_markdown", MARKDOWN)
    before = await db_state(api)
    response = await send_raw(api, method, path.replace("{h}", history_id), body)
    answer = problem(response, 400)
    assert answer["title"] == title
    assert answer.get("code") == code
    assert f"more than {MAX_JSON_DEPTH} levels deep" in response.text
    assert await db_state(api) == before


async def test_a_hundred_thousand_brackets_under_the_default_cap(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        response = await send_raw(api, "POST", "/prompt", b"[" * 100_000)
        assert problem(response, 400)["title"] == "Invalid JSON"
        response = await send_raw(api, "POST", "/histories", b"[" * 100_000)
        assert problem(response, 400)["code"] == "body-validation-failed"


async def test_the_depth_limit_is_exactly_64(api: Api) -> None:
    # The body is level 1, and attachments 63 arrays around a number: 64 levels in all.
    at_limit = {"prompt": "hi", "attachments": nested(MAX_JSON_DEPTH - 1)}
    response = await send_raw(api, "POST", "/prompt", json.dumps(at_limit).encode())
    assert problem(response, 400)["title"] == "attachments are not supported"
    over = {"prompt": "hi", "attachments": nested(MAX_JSON_DEPTH)}
    response = await send_raw(api, "POST", "/prompt", json.dumps(over).encode())
    assert problem(response, 400)["title"] == "Invalid JSON"


def padded(body: dict[str, Any], key: str, size: int) -> bytes:
    """`body` with `key` a string long enough for the whole to be `size` bytes."""
    base = len(json.dumps({**body, key: ""}).encode())
    return json.dumps({**body, key: "x" * (size - base)}).encode()


@pytest.mark.parametrize(("method", "path", "title", "code"), ROUTES, ids=IDS)
async def test_every_json_route_has_the_small_cap(
    api: Api, method: str, path: str, title: str, code: str | None
) -> None:
    history_id, _ = await paused(api, "ask_markdown", MARKDOWN)
    real_path = path.replace("{h}", history_id)
    key = (
        "level"
        if "permissions" in path
        else ("title" if "/turn" not in path and path != "/prompt" else "prompt")
    )
    fits = padded({}, key, CAP)
    assert len(fits) == CAP
    assert (await send_raw(api, method, real_path, fits)).status_code != 413
    before = await db_state(api)
    response = await send_raw(api, method, real_path, padded({}, key, CAP + 1))
    answer = problem(response, 413)
    assert answer["title"] == "Request body too large"
    assert f"larger than {CAP} bytes" in answer["detail"]
    if path in ("/prompt", "/histories/{h}/turn"):  # the routes a files answer comes to
        assert "Upload large files with POST /api/files/upload" in answer["detail"]
    else:
        assert answer["detail"] == f"The body is larger than {CAP} bytes. Send a smaller body."
    assert await db_state(api) == before


class Body:
    """A request body sent in chunks, counting how many the server pulled."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        data = padded({}, "prompt", self.size)
        for start in range(0, len(data), CHUNK):
            self.pulled += 1
            yield data[start : start + CHUNK]


async def test_a_streamed_body_is_refused_as_soon_as_it_passes_the_cap(api: Api) -> None:
    body = Body(100 * CAP)
    response = await api.request(
        "POST", "/prompt", content=body, headers={"content-type": "application/json"}
    )
    assert problem(response, 413)["title"] == "Request body too large"
    assert body.pulled == CAP // CHUNK + 1  # nothing read past the chunk that passed it


async def test_a_declared_length_over_the_cap_is_refused_before_reading(api: Api) -> None:
    body = Body(100 * CAP)
    headers = {"content-type": "application/json", "content-length": str(100 * CAP)}
    response = await api.request("POST", "/prompt", content=body, headers=headers)
    assert problem(response, 413)["title"] == "Request body too large"
    assert body.pulled == 0
    huge = {"content-type": "application/json", "content-length": "9" * 5000}
    response = await api.request("POST", "/histories", content=Body(10), headers=huge)
    assert problem(response, 413)["title"] == "Request body too large"


def text_file(size: int) -> dict[str, Any]:
    data = b"a" * size
    return {
        "url": "data:text/plain;base64," + base64.b64encode(data).decode(),
        "filename": "notes.txt",
        "mimeType": "text/plain",
        "size": size,
    }


def files_answer(tool_call_id: str, size: int = UPLOAD_CAP) -> dict[str, Any]:
    return {"toolCallId": tool_call_id, "action": "accept", "content": {"files": [text_file(size)]}}


async def test_a_files_answer_gets_the_large_cap_on_both_routes(api: Api) -> None:
    history_id, tool_call_id = await paused(api, "ask_files", FILES)
    raw = json.dumps({"historyId": history_id, "askResponse": files_answer(tool_call_id)}).encode()
    assert len(raw) > CAP
    response = await send_raw(api, "POST", "/prompt", raw)
    assert response.status_code == 200, response.text
    [stored] = [
        row
        for row in await api.rows(history_id)
        if row["type"] == "tool-result" and row["toolCallId"] == tool_call_id
    ]
    assert stored["result"]["content"]["files"] == [
        {"filename": "notes.txt", "mimeType": "text/plain", "size": UPLOAD_CAP}
    ]

    history_id, tool_call_id = await paused(api, "ask_files", FILES)
    raw = json.dumps({"askResponse": files_answer(tool_call_id)}).encode()
    response = await send_raw(api, "POST", f"/histories/{history_id}/turn", raw)
    assert response.status_code == 200, response.text
    assert (await api.history(history_id))["pendingAsk"] is None


Make = Callable[[str, str, str, str], tuple[str, dict[str, Any]]]

#: Bodies over the small cap that the large cap is not for, while alice has a files ask
#: pending in history F (ask f) and a markdown ask in history M (ask m).
NOT_FOR_IT: list[tuple[str, Make]] = [
    ("a-prompt", lambda f, tf, m, tm: ("/prompt", {"historyId": f, "prompt": "x" * (2 * CAP)})),
    ("new-conversation", lambda f, tf, m, tm: ("/prompt", {"prompt": "x" * (2 * CAP)})),
    (
        "files-for-another-history",
        lambda f, tf, m, tm: ("/prompt", {"historyId": m, "askResponse": files_answer(tm)}),
    ),
    (
        "cancel-reason",
        lambda f, tf, m, tm: (
            "/prompt",
            {
                "historyId": f,
                "askResponse": {"toolCallId": tf, "action": "cancel", "reason": "x" * 2 * CAP},
            },
        ),
    ),
    ("turn-prompt", lambda f, tf, m, tm: (f"/histories/{f}/turn", {"prompt": "x" * (2 * CAP)})),
    (
        "turn-on-markdown",
        lambda f, tf, m, tm: (f"/histories/{m}/turn", {"askResponse": files_answer(tm)}),
    ),
]


@pytest.mark.parametrize("make", [m for _, m in NOT_FOR_IT], ids=[n for n, _ in NOT_FOR_IT])
async def test_the_large_cap_is_only_for_a_files_answer(api: Api, make: Make) -> None:
    files_id, files_call = await paused(api, "ask_files", FILES)
    markdown_id, markdown_call = await paused(api, "ask_markdown", MARKDOWN)
    path, body = make(files_id, files_call, markdown_id, markdown_call)
    raw = json.dumps(body).encode()
    assert len(raw) > CAP
    before = await db_state(api)
    response = await send_raw(api, "POST", path, raw)
    answer = problem(response, 413)
    assert f"larger than {CAP} bytes" in answer["detail"]
    assert "Only the answer to a pending files ask may be larger" in answer["detail"]
    assert await db_state(api) == before  # the files ask is not cancelled either
    assert (await api.history(files_id))["pendingAsk"]["toolCallId"] == files_call


async def test_another_users_files_ask_opens_nothing(api: Api) -> None:
    files_id, files_call = await paused(api, "ask_files", FILES)
    raw = json.dumps({"askResponse": files_answer(files_call)}).encode()
    before = await db_state(api)
    response = await send_raw(api, "POST", f"/histories/{files_id}/turn", raw, user="bob")
    assert problem(response, 413)["title"] == "Request body too large"
    raw = json.dumps({"historyId": files_id, "askResponse": files_answer(files_call)}).encode()
    response = await send_raw(api, "POST", "/prompt", raw, user="bob")
    assert problem(response, 413)["title"] == "Request body too large"
    assert await db_state(api) == before


async def test_a_files_answer_over_the_large_cap_is_413_with_that_limit(api: Api) -> None:
    files_id, files_call = await paused(api, "ask_files", FILES)
    body = {"historyId": files_id, "askResponse": files_answer(files_call, FILES_CAP)}
    raw = json.dumps(body).encode()
    assert len(raw) > FILES_CAP
    before = await db_state(api)
    for path, sent in (("/prompt", raw), (f"/histories/{files_id}/turn", raw)):
        response = await send_raw(api, "POST", path, sent)
        answer = problem(response, 413)
        assert f"larger than {FILES_CAP} bytes" in answer["detail"], path
        assert "answer with their fileId" in answer["detail"]
    assert await db_state(api) == before


async def test_the_demo_booking_api_takes_deep_json_as_a_422() -> None:
    """The demo's example API reads JSON too: deep JSON is its 422, never a 500."""
    app = create_booking_app()
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://booking") as client:
        response = await client.post("/bookings", content=b"[" * 100_000)
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "INVALID_BODY"
