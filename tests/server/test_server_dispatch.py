"""The route index (`handrail.server.dispatch.RouteIndex`): the route it picks is the one
Starlette's router picks, and what it does not pick the router still answers (404, 405, a
route added later)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi.responses import JSONResponse
from server_helpers import config_for, sqlite_url, start_api
from starlette.convertors import StringConvertor
from starlette.routing import Match, Route

from handrail.server import create_app
from handrail.server.dispatch import RouteIndex

PATHS = [
    "/api/histories",
    "/api/histories/",
    "/api/histories/pendingAsks",
    "/api/histories/abc",
    "/api/histories/abc/turn",
    "/api/histories/abc/stop",
    "/api/histories/abc/instructions",
    "/api/histories/a%2Fb/turn",
    "/api/histories/a/b/turn",
    "/api/histories//turn",
    "/api/permissions/mcp/x/y",
    "/api/connections/c1/instructions/reset",
    "/api/info",
    "/openapi.json",
    "/static/app.js",
    "/static/a/b/c.css",
    "/links/tok",
    "/c/h1",
    "/",
    "/nowhere",
    "",
]
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _scope(method: str, path: str, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", **extra}


def _router_pick(routes: list[Any], scope: dict[str, Any]) -> Any:
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
    return None  # a 405, a 404 or a redirect: the router's


def test_the_index_picks_the_routers_route(tmp_path: Path) -> None:
    app = create_app(config_for(sqlite_url(tmp_path), tmp_path))
    index = RouteIndex(app.router)
    picked = 0
    for method in METHODS:
        for path in PATHS:
            scope = _scope(method, path)
            found = index.find(dict(scope))
            expected = _router_pick(app.router.routes, dict(scope))
            if found is not None:
                assert found[0] is expected, (method, path)
                picked += 1
    assert picked >= 10
    # The hot routes are found, with their path parameters.
    found = index.find(_scope("POST", "/api/histories/h1/turn"))
    assert found is not None
    assert found[0].path == "/api/histories/{id}/turn"  # type: ignore[attr-defined]
    assert found[1]["path_params"] == {"id": "h1"}
    # A path route ({name:path}) or a root_path leaves the request to the router.
    assert index.find(_scope("GET", "/static/a/b.css")) is None
    assert index.find(_scope("GET", "/api/info", root_path="/x")) is None
    assert index.find({"type": "lifespan"}) is None


def test_every_route_is_found_where_the_router_finds_it(tmp_path: Path) -> None:
    app = create_app(config_for(sqlite_url(tmp_path), tmp_path))
    index = RouteIndex(app.router)
    indexed = 0
    for route in app.router.routes:
        path = re.sub(r"\{[a-z_]+\}", "x1", route.path)  # type: ignore[attr-defined]
        for method in sorted(route.methods or ()):  # type: ignore[attr-defined]
            scope = _scope(method, path)
            found = index.find(dict(scope))
            expected = _router_pick(app.router.routes, dict(scope))
            if found is not None:
                assert found[0] is expected, (method, path)
            if expected is route and _indexable(route):
                # A plain route the router picks is the index's pick too (not the router's).
                assert found is not None, (method, path)
                indexed += 1
    assert indexed >= 20


def _indexable(route: Any) -> bool:
    return (
        isinstance(route, Route)
        and bool(route.methods)
        and all(type(c) is StringConvertor for c in route.param_convertors.values())
    )


async def test_the_router_still_answers_what_the_index_does_not(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        missing = await api.client.get("/api/nowhere")
        assert missing.status_code == 404
        wrong = await api.client.put("/api/histories")
        assert wrong.status_code == 405
        assert wrong.json()["requestId"] == wrong.headers["x-request-id"]

        async def added() -> JSONResponse:
            return JSONResponse({"added": True})

        api.app.add_api_route("/api/histories/{id}/added", added, methods=["GET"])
        later = await api.client.get("/api/histories/h1/added")
        assert later.status_code == 200
        assert later.json() == {"added": True}
        created = await api.post("/histories", {})
        assert created.status_code == 201
