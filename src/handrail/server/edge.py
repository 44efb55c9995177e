"""The app's edge: one pure ASGI middleware around the routes, and routes that call their
endpoint directly when it needs nothing of FastAPI's parameter machinery.

Every request crosses the edge, so it does in one layer what five middlewares did before (a
request id, the URL's text rule, the exception handlers, the last-line 500 and the stack that
closes uploaded files), with one wrapper around `send`:

- it gives the request a UUID4 (``scope["state"]["request_id"]``, see `request_id_of`) and
  sends it back in the ``X-Request-Id`` header;
- a path or query holding NUL is refused as `bodies.url_text_problems` words it;
- an exception of a route goes to the handler registered for its type (`install_problem_handlers`)
  while no response has started;
- an error that is the storage unavailable (`handrail.store.storage_trouble`) is one log line
  without a traceback and a 503 with ``Retry-After``: the database's connection lost (it
  restarted or failed over; a connection lost during the commit may have saved the change) or
  none to be had (PostgreSQL down, restarting, still starting or out of connections: the
  request never reached it) is a warning and ``Database unavailable`` (``Retry-After: 1``: the
  store opens new connections), as is SQLite's lock held by another program past its wait
  (``Retry-After: 5``); a full disk, the database's or the upload folder's, is an
  error and ``Storage full`` (``Retry-After: 60``: nothing of the request was saved, and it can
  be sent again once an administrator freed space);
- anything else is logged with its traceback and the request id and answered with a 500
  ``Internal Server Error`` that says nothing of the exception (when a response had already
  started, the response ends where it is).

It finds the route through the router's `RouteIndex` (the route the router would pick, without
trying every route), and opens the stack that closes uploaded files only for a route that runs
FastAPI's handler: a lean route (below) takes no files.

`EdgeRoute` is the route class of the app's router. A route whose endpoint takes only the
request, dependencies that take only the request (the caller, `auth.Caller`) and plain text
path parameters, and returns a `Response`, runs without FastAPI's request handler: the same
calls, without solving the dependency graph, two exit stacks and a wrapper per request. Any
other route (query parameters with rules, a body model, dependency overrides set on the app)
runs FastAPI's handler as before. `HandrailAPI` is the FastAPI app that builds this stack.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Final

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_typed_return_annotation
from fastapi.routing import APIRoute
from starlette.datastructures import State
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._util import new_uuid4
from ..errors import ConfigError
from ..store import storage_trouble
from .bodies import unstorable_text, url_text_problems
from .dispatch import RouteIndex
from .problems import REQUEST_ID_HEADER, problem_response, unavailable_response

__all__ = ["AppState", "Edge", "EdgeRoute", "HandrailAPI"]

log = logging.getLogger("handrail.server")

_REQUEST_ID: Final = REQUEST_ID_HEADER.lower().encode("ascii")
#: A request whose store call lost the database's connection (`connection_lost`).
_DATABASE_LOST: Final = {
    "status": 503,
    "title": "Database unavailable",
    "detail": "The server lost its connection to the database and opens a new one. "
    "Send the request again in a moment.",
    "code": "database-unavailable",
}
#: A request that could not be saved because a disk is full (`storage_full`); nothing of it
#: was saved. Freeing space is an administrator's work, so the client waits longer.
_STORAGE_FULL: Final = {
    "status": 503,
    "title": "Storage full",
    "detail": "The server's disk is full, so nothing of this was saved. Send it again once the "
    "server's administrator has freed space.",
    "code": "storage-full",
}
_STORAGE_FULL_RETRY: Final = "60"

#: A request whose store call could not open a connection to the database
#: (`database_unreachable`: PostgreSQL down, restarting, starting or out of connections).
_DATABASE_UNREACHABLE: Final = {
    "status": 503,
    "title": "Database unavailable",
    "detail": "The server cannot reach its database right now. Send the request again in a moment.",
    "code": "database-unavailable",
}

#: A request whose SQLite write waited its time for another connection's lock (``busy``).
_DATABASE_BUSY: Final = {
    "status": 503,
    "title": "Database unavailable",
    "detail": "The server's database is busy (another program holds it). Nothing was saved; "
    "send the request again in a moment.",
    "code": "database-unavailable",
}

Handler = Callable[[Request, Exception], Any]


def _unavailable(exc: Exception) -> tuple[dict[str, Any], str, int, str] | None:
    """The 503 of a request that met its storage unavailable (`storage_trouble`): its
    problem, ``Retry-After``, and the log line's level and words; None for any other error.
    A lost connection or none to be had is a moment's trouble (PostgreSQL restarting, failing
    over); a full disk needs an administrator, so the client waits longer, and is an error."""
    trouble = storage_trouble(exc)
    if trouble is None:
        return None
    kind, words = trouble
    if kind == "connection-lost":
        return _DATABASE_LOST, "1", logging.WARNING, words
    if kind == "unreachable":
        return _DATABASE_UNREACHABLE, "1", logging.WARNING, words
    if kind == "busy":
        return _DATABASE_BUSY, "5", logging.WARNING, words
    return _STORAGE_FULL, _STORAGE_FULL_RETRY, logging.ERROR, f"nothing was saved: {words}"


class Edge:
    """The one middleware between the server and the routes (see the module docstring)."""

    def __init__(self, app: ASGIApp, handlers: Mapping[Any, Handler]) -> None:
        self.app = app
        self._index = app if isinstance(app, RouteIndex) else None
        self._by_status = {k: v for k, v in handlers.items() if isinstance(k, int)}
        self._by_type = {k: v for k, v in handlers.items() if not isinstance(k, int)}
        # What Starlette's exception middleware leaves in the scope for the routes that handle
        # their own exceptions (FastAPI's `request_response`).
        self._in_scope = (self._by_type, self._by_status)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_uuid4()
        state = scope.get("state")
        if not isinstance(state, dict):
            state = {}
            scope["state"] = state
        state["request_id"] = request_id
        header = (_REQUEST_ID, request_id.encode("ascii"))
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [h for h in message.get("headers", ()) if h[0].lower() != _REQUEST_ID]
                headers.append(header)
                message["headers"] = headers
            await send(message)

        nul = url_text_problems(scope)
        if nul:
            problem = unstorable_text(nul).to_problem()
            await problem_response(scope, problem)(scope, receive, send_with_id)
            return
        scope["starlette.exception_handlers"] = self._in_scope
        try:
            try:
                index = self._index
                found = index.find(scope) if index is not None else None
                if index is not None and found is not None and _runs_lean(found[0]):
                    # A lean route takes no uploaded files: it needs no file stack. Its
                    # `handle` is `APIRoute`'s, which only calls its app once the index found it.
                    await index.handle(found, scope, receive, send_with_id, direct=True)
                else:
                    # Uploaded files are closed when the route is done (FastAPI's file stack).
                    async with AsyncExitStack() as files:
                        scope["fastapi_middleware_astack"] = files
                        if index is not None and found is not None:
                            await index.handle(found, scope, receive, send_with_id)
                        else:
                            await self.app(scope, receive, send_with_id)
            except Exception as exc:
                handler = self._handler(exc)
                if handler is None or started:
                    raise
                response = handler(Request(scope, receive, send_with_id), exc)
                if inspect.isawaitable(response):
                    response = await response
                if response is not None:
                    await response(scope, receive, send_with_id)
                exc.__traceback__ = None  # an instance raised again keeps no old frames
        except Exception as exc:
            unavailable = _unavailable(exc)
            if unavailable is not None:
                problem, retry_after, level, what = unavailable
                log.log(
                    level,
                    "%s %s (request %s): %s",
                    scope.get("method"),
                    scope.get("path"),
                    request_id,
                    what,
                )
                if not started:
                    response = unavailable_response(scope, problem, retry_after)
                    await response(scope, receive, send_with_id)
                return
            log.exception(
                "unhandled error in %s %s (request %s)",
                scope.get("method"),
                scope.get("path"),
                request_id,
            )
            if started:
                return
            problem = {
                "status": 500,
                "title": "Internal Server Error",
                "detail": "The server failed. Quote the requestId when you report it.",
            }
            await problem_response(scope, problem)(scope, receive, send_with_id)

    def _handler(self, exc: Exception) -> Handler | None:
        if isinstance(exc, HTTPException):
            handler = self._by_status.get(exc.status_code)
            if handler is not None:
                return handler
        for cls in type(exc).__mro__:
            handler = self._by_type.get(cls)
            if handler is not None:
                return handler
        return None


class AppState(State):
    """The app's `State`, whose values are plain attributes too: a request reads several
    (the runtime, the store, the authenticator, the body caps), and a `State` finds each with a
    call of its ``__getattr__``. Set and deleted as attributes or items alike."""

    def __setattr__(self, key: Any, value: Any) -> None:
        super().__setattr__(key, value)
        object.__setattr__(self, key, value)

    def __delattr__(self, key: Any) -> None:
        super().__delattr__(key)
        object.__delattr__(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)


class HandrailAPI(FastAPI):
    """The FastAPI app with the edge as its only middleware (inside the ones added with
    `add_middleware`, such as CORS), `EdgeRoute` as its router's route class and an
    `AppState`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.router.route_class = EdgeRoute
        self.state = AppState()

    def build_middleware_stack(self) -> ASGIApp:
        handlers = {
            key: value
            for key, value in self.exception_handlers.items()
            if key not in (500, Exception)  # the edge answers those itself
        }
        # The routes are found through an index (`RouteIndex`), as the router would find them.
        app: ASGIApp = Edge(RouteIndex(self.router), handlers)
        middleware: list[Middleware] = list(self.user_middleware)
        for cls, args, kwargs in reversed(middleware):
            app = cls(app, *args, **kwargs)
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await super().__call__(scope, receive, _config_errors_said(send))
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        # Starlette's own call, without FastAPI's per-request telemetry check (handrail sets
        # up no OpenTelemetry).
        if self.root_path:
            scope["root_path"] = self.root_path
        scope["app"] = self
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        await self.middleware_stack(scope, receive, send)


def _config_errors_said(send: Send) -> Send:
    """`send` for the lifespan, where a start-up that fails on a `ConfigError` (a bad
    HANDRAIL_SECRET_KEY, a database that cannot be opened, ...) is reported with its message,
    which names the way forward, instead of Starlette's traceback: the server's log then reads
    ``ERROR:    <message>``. Any other error keeps its traceback."""

    async def said(message: Message) -> None:
        if message["type"] in ("lifespan.startup.failed", "lifespan.shutdown.failed"):
            # Starlette sends this from inside its `except` block: the error is the one handled.
            error = sys.exc_info()[1]
            if isinstance(error, ConfigError):
                message = {**message, "message": str(error)}
        await send(message)

    return said


# --- routes ------------------------------------------------------------------------------------


Endpoint = Callable[..., Awaitable[Response]]


class _Plan:
    """How a lean route calls its endpoint: the request's parameter name, the dependencies
    (each a name and a function of the request) and the path parameters (name, alias)."""

    __slots__ = ("dependencies", "endpoint", "path", "request")

    def __init__(
        self,
        endpoint: Endpoint,
        request: str | None,
        dependencies: tuple[tuple[str, Callable[[Request], Awaitable[Any]]], ...],
        path: tuple[tuple[str, str], ...],
    ) -> None:
        self.endpoint = endpoint
        self.request = request
        self.dependencies = dependencies
        self.path = path


def _takes_only_the_request(dependant: Dependant, *, path: bool = False) -> bool:
    """Whether `dependant` takes nothing but the request (and, with `path`, path
    parameters and dependencies)."""
    return not (
        (dependant.path_params and not path)
        or (dependant.dependencies and not path)
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
        or dependant.websocket_param_name
        or dependant.http_connection_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.own_oauth_scopes
    )


def _lean_plan(route: APIRoute) -> _Plan | None:
    """The plan of a route whose endpoint needs nothing of FastAPI's request handler, or
    None."""
    dependant = route.dependant
    endpoint = dependant.call
    if endpoint is None or not inspect.iscoroutinefunction(endpoint):
        return None
    returns = get_typed_return_annotation(endpoint)
    if not (inspect.isclass(returns) and issubclass(returns, Response)):
        return None
    if route.body_field is not None or route.dependencies or route.max_body_size is not None:
        return None
    if not _takes_only_the_request(dependant, path=True):
        return None
    path: list[tuple[str, str]] = []
    for field in dependant.path_params:
        info = field.field_info
        if info.annotation is not str or info.metadata:
            return None  # a rule FastAPI checks (a length, a pattern) or a conversion
        path.append((field.name, field.alias))
    dependencies: list[tuple[str, Callable[[Request], Awaitable[Any]]]] = []
    for sub in dependant.dependencies:
        call = sub.call
        if (
            sub.name is None
            or call is None
            or sub.request_param_name is None
            or not _takes_only_the_request(sub)
            or not inspect.iscoroutinefunction(call)
            or list(inspect.signature(call).parameters) != [sub.request_param_name]
        ):
            return None
        dependencies.append((sub.name, call))
    return _Plan(endpoint, dependant.request_param_name, tuple(dependencies), tuple(path))


def _runs_lean(route: object) -> bool:
    return isinstance(route, EdgeRoute) and route.runs_lean()


class EdgeRoute(APIRoute):
    """An `APIRoute` that calls a lean endpoint directly (see the module docstring)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        plan = _lean_plan(self)
        self._lean = plan is not None
        if plan is not None:
            self.app = self._lean_app(plan, self.app)

    def runs_lean(self) -> bool:
        """Whether a request now runs the endpoint directly (not FastAPI's handler, as it does
        while the app has dependency overrides): it then needs no file stack."""
        overrides = self.dependency_overrides_provider
        return self._lean and not (
            overrides is not None and getattr(overrides, "dependency_overrides", None)
        )

    def _lean_app(self, plan: _Plan, handled: ASGIApp) -> ASGIApp:
        overrides = self.dependency_overrides_provider

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if overrides is not None and getattr(overrides, "dependency_overrides", None):
                await handled(scope, receive, send)  # a test's overrides: FastAPI's handler
                return
            request = Request(scope, receive, send)
            kwargs: dict[str, Any] = {}
            if plan.request is not None:
                kwargs[plan.request] = request
            for name, dependency in plan.dependencies:
                kwargs[name] = await dependency(request)
            params = scope["path_params"]
            for name, alias in plan.path:
                kwargs[name] = params[alias]
            response = await plan.endpoint(**kwargs)
            if not isinstance(response, Response):
                raise TypeError(f"{plan.endpoint.__name__} returned {type(response).__name__}")
            await response(scope, receive, send)

        return app
