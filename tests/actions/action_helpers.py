"""Helpers of the action tests: a scripted HTTP API served by uvicorn on 127.0.0.1 (a real
socket, a real server, in a background thread), the booking action set of
``docs/reference/actions.md``, and small builders of YAML files.

The API records every request it receives. By default ``GET /slots`` answers the free slots
of a date and ``POST /bookings`` books one; a test scripts other answers per path with
`FakeApi.plan`: a status, a JSON or raw body, headers and a delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[2]
ACTIONS_REFERENCE = ROOT / "docs" / "reference" / "actions.md"
SECRET = "s3cr3t-api-key-value"
ENV = {"BOOKING_API_KEY": SECRET}

SLOTS = [
    {"time": "18:00", "token": "tok-1800-secret", "room": "garden"},
    {"time": "19:00", "token": "tok-1900-secret", "room": "garden"},
    {"time": "19:00", "token": "tok-1900b-secret", "room": "terrace"},
    {"time": "20:30", "token": "tok-2030-secret", "room": "terrace"},
]


def reference_yaml() -> str:
    """The example file of the reference (its first ``yaml`` block)."""
    text = ACTIONS_REFERENCE.read_text(encoding="utf-8")
    match = re.search(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert match is not None, "docs/reference/actions.md has no yaml example"
    return match.group(1)


def reference_config() -> dict[str, Any]:
    data = yaml.safe_load(reference_yaml())
    assert isinstance(data, dict)
    return data


def dump(config: dict[str, Any]) -> str:
    """YAML text (always with a line break, so `load_action_set` reads it as text)."""
    return yaml.safe_dump(config, sort_keys=False) + "\n"


def config_for(base_url: str) -> dict[str, Any]:
    """The reference example, calling `base_url`."""
    config = reference_config()
    config["base_url"] = base_url
    return config


@dataclass
class Answer:
    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: Sent as a chunked stream (no Content-Length), one chunk at a time.
    chunks: list[bytes] | None = None


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class FakeApi:
    """The scripted API: `requests` holds what it received; `plan(path, *answers)` queues
    answers for a path (each used once, in order; then the default behaviour)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.plans: dict[str, list[Answer]] = {}
        self.slots: list[dict[str, Any]] = [dict(s) for s in SLOTS]
        self.lock = threading.Lock()
        self.url = ""

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.plans.clear()
            self.slots = [dict(s) for s in SLOTS]

    def plan(self, path: str, *answers: Answer) -> None:
        with self.lock:
            self.plans.setdefault(path, []).extend(answers)

    def received(self, method: str | None = None, path: str | None = None) -> list[Received]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method) and (path is None or r.path == path)
            ]

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        path = "/" + request.path_params["path"]
        with self.lock:
            self.requests.append(
                Received(
                    method=request.method,
                    path=path,
                    query=dict(request.query_params),
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=body,
                )
            )
            queued = self.plans.get(path)
            answer = queued.pop(0) if queued else None
        if answer is not None:
            if answer.delay:
                await asyncio.sleep(answer.delay)
            if answer.chunks is not None:
                return StreamingResponse(
                    _stream(answer.chunks), status_code=answer.status, headers=answer.headers
                )
            if answer.body is not None:
                return Response(answer.body, status_code=answer.status, headers=answer.headers)
            return JSONResponse(answer.json, status_code=answer.status, headers=answer.headers)
        if path == "/slots" and request.method == "GET":
            return JSONResponse({"date": request.query_params.get("date"), "slots": self.slots})
        if path == "/bookings" and request.method == "POST":
            return JSONResponse({"id": "b1", "status": "booked"}, status_code=201)
        return JSONResponse({"path": path, "method": request.method})


async def _stream(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
        await asyncio.sleep(0)


@contextlib.contextmanager
def serve(api: FakeApi) -> Iterator[str]:
    """Serve `api` on a free port of 127.0.0.1 in a background thread; yields its base URL."""
    app = Starlette(
        routes=[
            Route(
                "/{path:path}",
                api.handle,
                methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
            )
        ]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test API did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
