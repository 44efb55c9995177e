"""Responses: ``{data, requestId}`` on success, problem JSON on error, and the request id.

Every request gets a fresh id (a UUID4), sent back in the ``X-Request-Id`` header and in every
JSON body as ``requestId``. Errors are ``application/problem+json`` bodies
``{status, title, detail, code?, fields?, requestId}``:

- a domain error (`handrail.errors.DomainError`) with the status and the spec's title that
  `PROBLEMS` gives its type (the headless ``turn`` route uses `HEADLESS_PROBLEMS` first), its
  detail, and its code and fields;
- a `ProblemError` (the web edge's own errors) as it is;
- a body that fails FastAPI's validation as 400 ``Validation failed`` with ``fields``;
- any other HTTP error of Starlette (an unknown route, a method not allowed) with the HTTP
  reason as its title;
- anything else as 500 ``Internal Server Error``: the exception is logged with the request id,
  and the client never sees a traceback or the exception's text.
"""

from __future__ import annotations

import html
import http
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from .._util import compact_json_bytes, new_uuid4
from ..connections import SecretKeyMissing
from ..connections.oauth import SignInUnknown
from ..errors import (
    AlreadyApproved,
    AnswerIdMissing,
    AnswerNotObject,
    ConfirmationExpired,
    Conflict,
    DomainError,
    FileNotFound,
    Forbidden,
    HistoryNotFound,
    InvalidAnswer,
    InvalidRequest,
    NotApprover,
    NotFound,
    NotOwner,
    NotPending,
    ProblemError,
    PromptRequired,
    UnknownAgent,
    UnknownButton,
    UnknownSurface,
)
from ..runtime.connection_checks import (
    ConnectionReadOnly,
    ConnectionUnknown,
    InvalidConnection,
    NameTaken,
    NoInstructionsTemplate,
    UnknownApp,
)
from ..runtime.page_tools import InvalidPageTools
from ..store import (
    ConfirmationConflict,
    ConfirmationNotFound,
    ConfirmationNotSending,
    GrantConflict,
    HistoryConflict,
)
from ..store.connections import ConnectionConflict, ConnectionNotFound

__all__ = [
    "HEADLESS_PROBLEMS",
    "PAGE_HEADERS",
    "PROBLEMS",
    "PROBLEM_JSON",
    "Problem",
    "forbidden",
    "html_page",
    "install_problem_handlers",
    "not_found",
    "ok",
    "problem_for",
    "problem_response",
    "request_id_of",
]

log = logging.getLogger("handrail.server")

PROBLEM_JSON: Final = "application/problem+json"
REQUEST_ID_HEADER: Final = "X-Request-Id"


@dataclass(frozen=True, slots=True)
class Problem:
    """How a domain error shows on the wire: its status, the spec's title, a default code."""

    status: int
    title: str
    code: str | None = None


#: Every domain error type's status and title (the spec's "Error responses" and the routes'
#: own). A type not listed takes its nearest listed base class.
PROBLEMS: Final[Mapping[type[DomainError], Problem]] = {
    PromptRequired: Problem(400, "prompt is required"),
    AnswerNotObject: Problem(400, "askResponse must be an object"),
    AnswerIdMissing: Problem(400, "askResponse.toolCallId is required"),
    UnknownSurface: Problem(400, "surface is not a known surface"),
    UnknownAgent: Problem(400, "Unknown agent"),
    UnknownButton: Problem(400, "Unknown buttonId", "UNKNOWN_BUTTON"),
    UnknownApp: Problem(400, "Unknown app", "UNKNOWN_APP"),
    SecretKeyMissing: Problem(400, "No secret key", "SECRET_KEY_MISSING"),
    InvalidConnection: Problem(400, "Validation failed"),
    SignInUnknown: Problem(400, "No sign-in under way", "OAUTH_STATE_INVALID"),
    InvalidAnswer: Problem(400, "Invalid askResponse"),
    InvalidPageTools: Problem(400, "Invalid pageTools"),
    InvalidRequest: Problem(400, "Validation failed"),
    HistoryNotFound: Problem(404, "History not found"),
    FileNotFound: Problem(404, "File not found"),
    ConfirmationNotFound: Problem(404, "Confirmation not found"),
    ConnectionUnknown: Problem(404, "Connection not found"),
    ConnectionNotFound: Problem(404, "Connection not found"),
    NotFound: Problem(404, "Not Found"),
    NotOwner: Problem(403, "Not authorized to access this history"),
    NotApprover: Problem(403, "Not an approver of this call", "NOT_APPROVER"),
    Forbidden: Problem(403, "Forbidden"),
    NotPending: Problem(409, "This ask is no longer pending"),
    AlreadyApproved: Problem(409, "Already approved", "ALREADY_APPROVED"),
    ConfirmationExpired: Problem(409, "Confirmation expired", "CONFIRMATION_STALE"),
    ConfirmationNotSending: Problem(409, "Confirmation is not being sent"),
    ConfirmationConflict: Problem(409, "Confirmation is no longer pending"),
    HistoryConflict: Problem(409, "History changed"),
    GrantConflict: Problem(409, "Grant changed"),
    ConnectionConflict: Problem(409, "Connection changed"),
    ConnectionReadOnly: Problem(409, "Connection is read-only", "CONNECTION_READ_ONLY"),
    NameTaken: Problem(409, "Connection name taken", "CONNECTION_NAME_TAKEN"),
    NoInstructionsTemplate: Problem(409, "No instructions template", "NO_INSTRUCTIONS_TEMPLATE"),
    Conflict: Problem(409, "Conflict"),
}

#: The headless ``turn`` route's own titles and codes (the spec's "Headless endpoints").
HEADLESS_PROBLEMS: Final[Mapping[type[DomainError], Problem]] = {
    HistoryNotFound: Problem(404, "Document not found", "document-not-found"),
    NotOwner: Problem(403, "Access denied", "action-access-denied"),
}


def problem_for(error: DomainError, *tables: Mapping[type[DomainError], Problem]) -> dict[str, Any]:
    """The problem JSON of a domain error (without ``requestId``): the first of `tables`
    (then `PROBLEMS`) that lists the error's type or a base of it gives status and title."""
    problem = Problem(500, "Internal Server Error")
    for table in (*tables, PROBLEMS):
        found = next((table[t] for t in type(error).__mro__ if t in table), None)
        if found is not None:
            problem = found
            break
    body: dict[str, Any] = {
        "status": problem.status,
        "title": problem.title,
        "detail": error.detail,
    }
    code = error.code or problem.code
    if code is not None:
        body["code"] = code
    if error.fields is not None:
        body["fields"] = error.fields
    return body


def request_id_of(scope_or_request: Request | Scope) -> str:
    """The id the app's edge gave this request (`handrail.server.edge`; a new one outside
    it)."""
    scope = scope_or_request.scope if isinstance(scope_or_request, Request) else scope_or_request
    state = scope.get("state")
    if isinstance(state, dict) and isinstance(state.get("request_id"), str):
        return str(state["request_id"])
    return new_uuid4()


class _JsonResponse(JSONResponse):
    """A `JSONResponse` whose body is `compact_json_bytes`: Starlette's options (compact, the
    non-ASCII characters kept), made by orjson rather than ``json.dumps``, which builds an
    encoder at each call and escapes each string in a loop of its own."""

    def render(self, content: Any) -> bytes:
        return compact_json_bytes(content)

    @classmethod
    def of(cls, content: Any, status_code: int) -> _JsonResponse:
        """``cls(content, status_code)``, the same status, body and headers, without the
        general constructor's steps for headers given, a media type and a background task."""
        response = cls.__new__(cls)
        body = compact_json_bytes(content)
        response.status_code = status_code
        response.background = None
        response.body = body
        if status_code < 200 or status_code in (204, 304):
            response.raw_headers = [_JSON_TYPE]
        else:
            length = (b"content-length", str(len(body)).encode("latin-1"))
            response.raw_headers = [length, _JSON_TYPE]
        return response


_JSON_TYPE: Final = (b"content-type", b"application/json")


def ok(request: Request, data: Any, *, status_code: int = 200) -> JSONResponse:
    """A success body: ``{data, requestId}``."""
    return _JsonResponse.of({"data": data, "requestId": request_id_of(request)}, status_code)


def problem_response(
    scope: Request | Scope, problem: dict[str, Any], *, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A problem JSON response for `problem` (which holds at least ``status`` and ``title``)."""
    status = int(problem["status"])
    body = {**problem, "requestId": request_id_of(scope)}
    body.setdefault("detail", problem["title"])
    extra = dict(headers or {})
    if status == 401:
        extra.setdefault("WWW-Authenticate", "Bearer")
    return _JsonResponse(body, status, headers=extra, media_type=PROBLEM_JSON)


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def not_found(title: str, detail: str, *, code: str | None = None) -> ProblemError:
    """A 404 of the web edge (a route's own resource: a grant, a page, a file of the UI)."""
    return ProblemError(title, detail, status=404, code=code)


def forbidden(title: str, detail: str, *, code: str | None = None) -> ProblemError:
    """A 403 of the web edge."""
    return ProblemError(title, detail, status=403, code=code)


#: The headers of every page the server writes itself (no script: the not-found page, an
#: email link's pages, a sign-in's end): kept by no cache, framed by no other site, never
#: sniffed as another type, and sending no referrer (a link's token is in its URL).
PAGE_HEADERS: Final = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def _browser_navigation(request: Request) -> bool:
    """A browser opening a page: GET or HEAD, asking for HTML, outside the API."""
    return request.method in ("GET", "HEAD") and _reads_pages(request)


def _reads_pages(request: Request) -> bool:
    """A browser's request outside the API, asking for HTML: a page it opens, or the form of
    a page it sends (an email link's confirm)."""
    if "text/html" not in request.headers.get("accept", ""):
        return False
    app = request.scope.get("app")
    prefix = getattr(getattr(app, "state", None), "api_prefix", "/api")
    path = request.url.path
    return not (prefix and (path == prefix or path.startswith(prefix + "/")))


def unavailable_response(scope: Scope, problem: dict[str, Any], retry_after: str) -> Response:
    """The 503 of a request that met the storage unavailable, with ``Retry-After``: problem
    JSON, or for a browser's request outside the API (an email link's page or its confirm) a
    page that says the same to the person."""
    headers = {"Retry-After": retry_after}
    if _reads_pages(Request(scope)):
        body = f'<p class="muted">{html.escape(str(problem["detail"]))}</p>'
        return html_page(
            str(problem["title"]), body, status=503, headers={**PAGE_HEADERS, **headers}
        )
    return problem_response(scope, problem, headers=headers)


#: The style of those pages: readable on a phone, in the system's dark mode too.
_PAGE_STYLE: Final = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:2em auto;padding:0 1em;"
    "color:#111;background:#fff}a{color:#1d4ed8}.card{border:1px solid #bbb;border-radius:10px;"
    "padding:1em 1.25em;margin:1em 0}button{font:inherit;padding:.6em 1.2em;"
    "border-radius:8px;border:1px solid #1d4ed8;background:#1d4ed8;color:#fff;cursor:pointer}"
    ".danger{background:#b91c1c;border-color:#b91c1c}.muted{color:#444}"
    "@media (prefers-color-scheme:dark){body{background:#111;color:#eee}a{color:#93c5fd}"
    ".muted{color:#ccc}.card{border-color:#555}}"
)


def html_page(
    title: str, body: str, *, status: int = 200, headers: Mapping[str, str] = PAGE_HEADERS
) -> HTMLResponse:
    """A page the server writes itself: `title` as its heading and `body` (HTML, its text
    escaped by the caller) under it, with `PAGE_HEADERS` unless told other ones."""
    text = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)} · handrail</title><style>{_PAGE_STYLE}</style></head>"
        f"<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=dict(headers))


def page_not_found(request: Request) -> HTMLResponse:
    """The HTML 404 page a person reads, with the way back to the app (a browser that opens
    a page that does not exist gets it, not problem JSON)."""
    path = html.escape(request.url.path)
    body = (
        f"<p>There is no page at <code>{path}</code>.</p>"
        '<p><a href="/">Go to handrail\'s start page</a></p>'
    )
    return html_page("Page not found", body, status=404)


async def _on_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProblemError)
    if exc.status == 404 and _browser_navigation(request):
        return page_not_found(request)
    return problem_response(request, exc.to_problem())


async def _on_domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    return problem_response(request, problem_for(exc))


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    title = _reason(status)
    detail = exc.detail if isinstance(exc.detail, str) and exc.detail != title else None
    if status == 404 and _browser_navigation(request):
        return page_not_found(request)
    if status == 404 and detail is None:
        detail = f"No route matches {request.method} {request.url.path}."
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"}
    if status == 405:
        # Starlette names the methods of the first route on the path; a path has a route per
        # method, so gather them all.
        methods = _methods_on(request) or [
            m.strip()
            for m in headers.pop("Allow", headers.pop("allow", "")).split(",")
            if m.strip()
        ]
        headers = {"Allow": ", ".join(methods)} if methods else {}
        if detail is None:
            detail = f"{request.method} is not allowed on {request.url.path}" + (
                f"; use {' or '.join(m for m in methods if m != 'HEAD')}." if methods else "."
            )
    problem = {"status": status, "title": title, "detail": detail or title}
    return problem_response(request, problem, headers=headers)


def _methods_on(request: Request) -> list[str]:
    """Every method the app's routes take on the request's path, sorted. When both a literal
    path and a template match (``/histories/pendingAsks`` and ``/histories/{id}``), only the
    routes with the fewest path parameters count: that is the resource the path names."""
    path = request.url.path
    by_params: dict[int, set[str]] = {}
    for route in request.app.routes:
        pattern = getattr(route, "path_regex", None)
        route_methods = getattr(route, "methods", None)
        if pattern is not None and route_methods and pattern.match(path):
            params = len(getattr(route, "param_convertors", {}))
            by_params.setdefault(params, set()).update(route_methods)
    return sorted(by_params[min(by_params)]) if by_params else []


def validation_fields(errors: Any) -> dict[str, str]:
    """FastAPI's validation errors as ``{field: message}`` (the field as a dotted path without
    the leading ``body``, ``query`` or ``path``)."""
    fields: dict[str, str] = {}
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        if location and location[0] in ("body", "query", "path", "header", "cookie"):
            location = location[1:] or [location[0]]
        key = ".".join(location) or "body"
        fields.setdefault(key, str(error.get("msg", "is not valid")))
    return fields


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problem = {
        "status": 400,
        "title": "Validation failed",
        "detail": "The request does not match what this route takes. See fields.",
        "code": "body-validation-failed",
        "fields": validation_fields(exc.errors()),
    }
    return problem_response(request, problem)


def install_problem_handlers(app: FastAPI) -> None:
    """Turn every error into problem JSON (see the module docstring)."""
    app.add_exception_handler(ProblemError, _on_problem)
    app.add_exception_handler(DomainError, _on_domain_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
