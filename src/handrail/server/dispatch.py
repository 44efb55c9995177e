"""Finding a request's route without trying every route: `RouteIndex`.

Starlette's router tries its routes one after another (a regular expression each) until one
matches the path and the method; the app has about fifty, so a request to a route near the end
tried every one before it. `RouteIndex` sorts the routes once by method and by the number of
``/`` in their path (a ``{name}`` parameter never holds one), keeping their order, and tries
only the routes of the request's method and shape whose literal start (the path up to its first
parameter) the request's path has. The route that answers is the one the router would pick,
since every route that could match the request is among those tried, in the router's order:

- a route with a ``{name:path}`` parameter, without methods, or that is not a plain `Route`
  (a mount, an included router) is tried for every request, where it stands; when it, or a
  route whose match holds more than the plain match's keys, matches, the router takes the
  request, as it does whenever no tried route matches (a 404, a 405, a redirect to the path
  with or without its trailing ``/``);
- the index is rebuilt when the number of routes changes (a route added after the app was
  made, as a test or a benchmark adds one); the router takes every request of a router with
  its own middleware or form limits, and every request with a ``root_path`` (routes then match
  on the path without it), FastAPI's telemetry or FastAPI's context of an included router.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.convertors import StringConvertor
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send

__all__ = ["RouteIndex"]

#: The keys a plain route's match puts in the scope (FastAPI adds ``route``).
_PLAIN_MATCH: Final = frozenset({"endpoint", "path_params", "route"})

#: One candidate: the route, the literal start a matching path has, and whether the index may
#: answer with it (else the router takes the request once it matches).
_Candidate = tuple[BaseRoute, str, bool]


class RouteIndex:
    """The routes of `router` by method and path shape (see the module docstring); calling
    it routes a request as the router does."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self._count = -1
        self._buckets: dict[tuple[str, int], tuple[_Candidate, ...]] = {}
        self._enabled = False

    def _build(self) -> None:
        router = self.router
        routes = list(router.routes)
        stack = getattr(router, "middleware_stack", router.app)
        self._enabled = stack == router.app and not getattr(router, "form_limits", None)
        shaped: list[tuple[BaseRoute, str, frozenset[str], int] | None] = []
        keys: set[tuple[str, int]] = set()
        for route in routes:
            shape = _shape(route)
            shaped.append(shape)
            if shape is not None:
                keys.update((method, shape[3]) for method in shape[2])
        buckets: dict[tuple[str, int], list[_Candidate]] = {key: [] for key in keys}
        for route, shape in zip(routes, shaped, strict=True):
            for (method, slashes), bucket in buckets.items():
                if shape is None:
                    bucket.append((route, "", False))
                elif method in shape[2] and slashes == shape[3]:
                    bucket.append((route, shape[1], True))
        self._buckets = {key: tuple(bucket) for key, bucket in buckets.items()}
        self._count = len(routes)

    def find(self, scope: Scope) -> tuple[BaseRoute, Scope] | None:
        """The route the router would answer `scope` with and its match, or None when the
        router is to take the request (see the module docstring)."""
        router = self.router
        if len(router.routes) != self._count:
            self._build()
        if (
            not self._enabled
            or scope["type"] != "http"
            or scope.get("root_path")
            or "fastapi.telemetry" in scope
            or "fastapi" in scope  # an included router's context (FastAPI)
        ):
            return None
        path: str = scope["path"]
        for route, start, answers in self._buckets.get((scope["method"], path.count("/")), ()):
            if not path.startswith(start):
                continue
            match, child = route.matches(scope)
            if match is Match.NONE:
                continue
            if match is Match.FULL and answers and child.keys() <= _PLAIN_MATCH:
                return route, child
            return None
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.find(scope)
        if found is None:
            await self.router(scope, receive, send)
        else:
            await self.handle(found, scope, receive, send)

    async def handle(
        self,
        found: tuple[BaseRoute, Scope],
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        direct: bool = False,
    ) -> None:
        """Answer with the route `find` found, as the router does once a route matches. With
        `direct`, the route's app is called without its ``handle``, which for a route found
        here (its method is one of the route's, no route of an included router) only calls
        it; the caller vouches that its route class does not change ``handle`` further."""
        route, child = found
        if "router" not in scope:
            scope["router"] = self.router
        scope.update(child)
        if direct and isinstance(route, Route):
            await route.app(scope, receive, send)
        else:
            await route.handle(scope, receive, send)


def _shape(route: BaseRoute) -> tuple[BaseRoute, str, frozenset[str], int] | None:
    """A plain route's literal start, methods and number of ``/``, or None when the index
    cannot tell which paths it matches without trying it."""
    if not isinstance(route, Route) or not route.methods:
        return None
    convertors: dict[str, Any] = route.param_convertors
    if any(type(c) is not StringConvertor for c in convertors.values()):
        return None
    path = route.path
    start = path.split("{", 1)[0]
    return route, start, frozenset(route.methods), path.count("/")
