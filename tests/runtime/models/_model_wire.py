"""Helpers for the model adapter tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from handrail.runtime.models.base import ModelEvent, ModelRequest

API_KEY = "sk-test-SECRETSECRETSECRET-0123456789"

Handler = Callable[[httpx2.Request], httpx2.Response]


@dataclass
class Recorder:
    """A MockTransport handler that records each request's JSON body and answers with the next
    of `responses`."""

    responses: list[httpx2.Response] = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    @property
    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]


def sse_response(body: str, status: int = 200) -> httpx2.Response:
    return httpx2.Response(
        status, content=body.encode(), headers={"content-type": "text/event-stream"}
    )


async def collect(model: Any, request: ModelRequest) -> list[ModelEvent]:
    """Every event of one step."""
    return [event async for event in model.stream(request)]


async def collect_until_error(
    model: Any, request: ModelRequest
) -> tuple[list[ModelEvent], BaseException]:
    """The events of one step that must fail, and its error."""
    events: list[ModelEvent] = []
    try:
        async for event in model.stream(request):
            events.append(event)
    except Exception as exc:
        return events, exc
    raise AssertionError(f"the step did not fail: {events}")
