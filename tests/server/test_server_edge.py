"""The app's edge (`handrail.server.edge`) and the joined writes of handrail's uvicorn protocol
(`handrail.server.serving.JoinedWritesCycle`): what the lean routes keep of FastAPI's request
handling, and how responses reach the socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import uvicorn
from server_helpers import TOKENS, config_for, sqlite_url, start_api

from demo_server import free_port
from handrail.runtime.turn import Principal
from handrail.server import create_app
from handrail.server.auth import current_principal
from handrail.server.serving import GuardedProtocol


async def test_a_lean_route_honours_dependency_overrides(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        plain = await api.get("/info")
        assert plain.status_code == 200
        assert plain.json()["data"]["user"]["id"] == "alice"

        async def as_bob() -> Principal:
            return Principal(user_id="bob")

        api.app.dependency_overrides[current_principal] = as_bob
        try:
            overridden = await api.get("/info")
        finally:
            api.app.dependency_overrides.clear()
        assert overridden.status_code == 200
        assert overridden.json()["data"]["user"]["id"] == "bob"
        assert overridden.json()["requestId"] == overridden.headers["x-request-id"]


async def test_a_path_parameter_with_a_rule_is_still_checked(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        response = await api.post("/approvals/" + "a" * 65, {"toolCallId": "x"})
        assert response.status_code == 400
        body = response.json()
        assert body["title"] == "Validation failed"
        assert "historyId" in body["fields"]
        assert body["requestId"] == response.headers["x-request-id"]
        # A plain one goes to the route, which words its own 404.
        missing = await api.post("/histories/" + "0" * 24 + "/turn", {"prompt": "hi"})
        assert missing.status_code == 404
        assert missing.json()["code"] == "document-not-found"


async def test_an_error_in_a_lean_route_is_a_500_without_its_text(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path, raise_app_exceptions=False) as api:
        store = api.app.state.store

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret details of the failure")

        store.histories.create = broken
        response = await api.post("/histories", {})
        assert response.status_code == 500
        body = response.json()
        assert body["title"] == "Internal Server Error"
        assert "secret" not in response.text
        assert body["requestId"] == response.headers["x-request-id"]
        assert response.headers["content-type"] == "application/problem+json"


# --- the socket writes ---------------------------------------------------------------------


class _Recorded:
    """The real transport, with each write also kept in `writes`."""

    def __init__(self, real: asyncio.Transport, writes: list[bytes]) -> None:
        self._real = real
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(bytes(data))
        self._real.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class RecordingProtocol(GuardedProtocol):
    writes: ClassVar[list[bytes]] = []

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Recorded(transport, self.writes))  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def recorded_server(app: Any) -> AsyncIterator[int]:
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", http=RecordingProtocol, ws="none"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def _exchange(port: int, request: bytes, until: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        data = b""
        while until not in data:
            chunk = await asyncio.wait_for(reader.read(65536), 5)
            assert chunk, data
            data += chunk
        return data
    finally:
        writer.close()


async def test_a_json_response_goes_out_in_one_write_and_a_stream_s_head_at_once(
    tmp_path: Path,
) -> None:
    app = create_app(config_for(sqlite_url(tmp_path), tmp_path))
    RecordingProtocol.writes.clear()
    async with recorded_server(app) as port:
        body = b"{}"
        request = (
            b"POST /api/histories HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
            + TOKENS["alice"].encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
            + body
        )
        answer = await _exchange(port, request, b'"requestId"')
        assert answer.startswith(b"HTTP/1.1 201 ")
        created = [w for w in RecordingProtocol.writes if w.startswith(b"HTTP/1.1 201")]
        assert len(created) == 1
        head, _, rest = created[0].partition(b"\r\n\r\n")
        assert b"x-request-id: " in head
        assert rest.startswith(b'{"data":')
        assert rest.endswith(b"}")

        # HEAD: the head alone, once.
        RecordingProtocol.writes.clear()
        answer = await _exchange(port, b"HEAD /watch HTTP/1.1\r\nHost: t\r\n\r\n", b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert [w.endswith(b"\r\n\r\n") for w in RecordingProtocol.writes] == [True]

        # An event stream's head goes out before any event, on its own.
        RecordingProtocol.writes.clear()
        request = (
            b"GET /api/events HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n"
            b"Authorization: Bearer " + TOKENS["bob"].encode() + b"\r\n\r\n"
        )
        answer = await _exchange(port, request, b"ready")
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert RecordingProtocol.writes[0].endswith(b"\r\n\r\n")
        assert b"ready" not in RecordingProtocol.writes[0]


def test_a_success_body_is_the_response_starlette_makes() -> None:
    from handrail.server.problems import _JsonResponse

    content = {"data": {"title": "Café ✓", "n": [1, 2.5, None, True]}, "requestId": "r"}
    for status in (200, 201, 204, 304):
        made = _JsonResponse.of(content, status)
        general = _JsonResponse(content, status)
        assert made.status_code == general.status_code == status
        assert made.body == general.body
        assert made.raw_headers == general.raw_headers
        assert made.background is general.background is None
        assert made.media_type == general.media_type
        assert dict(made.headers) == dict(general.headers)
