"""The demo's booking service: its fault injection and request log are for the demo admin only.

``/demo/booking/stats``, ``/demo/booking/control`` and ``/demo/booking/control/reset`` let whoever
calls them read every booking request and make the next ones fail, so the demo server answers
them only with the demo admin's bearer token; the booking routes the action set calls stay open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.demo import create_demo_app
from handrail.demo.booking_api import create_booking_app

ADMIN = {"Authorization": "Bearer demo-admin"}
ALICE = {"Authorization": "Bearer demo-alice"}

CONTROL_ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/demo/booking/stats", None),
    ("POST", "/demo/booking/control", {"next": [{"status": 503}]}),
    ("POST", "/demo/booking/control/reset", None),
]


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_demo_app(tmp_path / "demo" / "handrail.db")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
            yield client


def _is_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = dict(response.json())
    assert problem["status"] == status
    assert "demo-admin" not in problem["detail"]  # the admin's token is named, never quoted
    return problem


@pytest.mark.parametrize(("method", "path", "body"), CONTROL_ROUTES)
async def test_without_a_token_the_control_routes_are_401(
    demo: httpx.AsyncClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    problem = _is_problem(await demo.request(method, path, json=body), 401)
    assert problem["title"] == "Unauthorized"
    assert problem["code"] == "ADMIN_TOKEN_REQUIRED"
    assert "admin" in problem["detail"]
    response = await demo.request(method, path, json=body, headers={"Authorization": "Basic x"})
    assert _is_problem(response, 401)["code"] == "ADMIN_TOKEN_REQUIRED"


@pytest.mark.parametrize(("method", "path", "body"), CONTROL_ROUTES)
async def test_another_users_token_is_403(
    demo: httpx.AsyncClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    for headers in (ALICE, {"Authorization": "Bearer not-a-token"}):
        problem = _is_problem(await demo.request(method, path, json=body, headers=headers), 403)
        assert problem["title"] == "Forbidden"
        assert problem["code"] == "ADMIN_TOKEN_WRONG"


async def test_the_demo_admin_may_use_them(demo: httpx.AsyncClient) -> None:
    queued = await demo.post(
        "/demo/booking/control", json={"next": [{"status": 503}]}, headers=ADMIN
    )
    assert queued.status_code == 200, queued.text
    assert queued.json() == {"queued": {"/bookings": 1, "/slots": 0}}
    # A refused call changes nothing: the fault queued above is the only one.
    await demo.post("/demo/booking/control", json={"next": [{"status": 503}]}, headers=ALICE)
    slots = await demo.get("/demo/booking/slots", params={"date": "2026-12-01"})
    assert slots.status_code == 200  # the action set's routes need no token
    stats = await demo.get("/demo/booking/stats", headers=ADMIN)
    assert stats.status_code == 200
    assert stats.json() == {
        "requests": [{"method": "GET", "path": "/slots", "idempotencyKey": None}]
    }
    reset = await demo.post("/demo/booking/control/reset", headers=ADMIN)
    assert reset.json() == {"reset": True}
    assert (await demo.get("/demo/booking/stats", headers=ADMIN)).json() == {"requests": []}


async def test_a_booking_app_made_without_a_token_stays_open() -> None:
    """`create_booking_app()` alone (tests, a loopback server of one's own) needs no token."""
    transport = httpx.ASGITransport(create_booking_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://booking") as client:
        assert (await client.get("/stats")).status_code == 200


async def test_a_booking_app_with_a_token_checks_it() -> None:
    transport = httpx.ASGITransport(create_booking_app(control_token="s3cret"))
    async with httpx.AsyncClient(transport=transport, base_url="http://booking") as client:
        assert (await client.get("/stats")).status_code == 401
        wrong = await client.get("/stats", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        ok = await client.get("/stats", headers={"Authorization": "bearer s3cret"})
        assert ok.status_code == 200
