"""A small example booking API: free table slots per date, and bookings that honour
``Idempotency-Key``. The demo's action set (``booking.yaml``) calls it over real HTTP, and the
tests drive it to every answer the action runtime must handle.

Routes (JSON in and out; errors are ``{"error": <message>, "code": <CODE>}``):

- ``GET /slots?date=YYYY-MM-DD``: ``{"date", "slots": [{"time", "token", "seats"}, ...]}``, the
  free slots of the date. A slot's ``token`` is opaque and sensitive: it is what books the slot,
  and it expires (`token_ttl_s` after it was handed out; the next listing hands out a new one).
- ``POST /bookings`` ``{"date", "slot_token", "notes"?}``: books the slot, ``201`` with
  ``{"id", "date", "time", "notes", "status": "confirmed"}``. The slot then disappears from
  ``/slots``. A taken slot answers ``409`` (``SLOT_TAKEN``); an unknown or expired token ``410``
  (``SLOT_GONE``); a bad body ``422``. With an ``Idempotency-Key`` header, repeating the key
  with the same body answers ``200`` with the same booking and books nothing; the key with
  another body answers ``422`` (``IDEMPOTENCY_KEY_REUSED``). Only a request that booked is
  remembered under its key.
- ``GET /bookings/{id}``: the booking, or ``404``.
- ``GET /stats``: ``{"requests": [{"method", "path", "idempotencyKey"}, ...]}``, every request
  received so far, oldest first (``/control`` and ``/stats`` themselves are left out). Paths are
  the app's own, without the prefix it is mounted at.

Fault injection, for tests:

- ``POST /control`` ``{"next": [<fault>, ...], "path"?: "/bookings" | "/slots"}`` queues
  faults for the following requests of ``POST /bookings`` (the default) or ``GET /slots``, one
  fault per request, in order. A fault is an object with any of:

  - ``"delay_ms": 3000``: wait that long first (then answer normally, unless the fault also
    says how to answer);
  - ``"status": 503`` (with an optional JSON ``"body"``): answer that status instead;
  - ``"redirect": "/elsewhere"``: answer ``307`` (or ``"status"``) with that ``Location``;
  - ``"process": true``: handle the request for real first (the booking is made), then answer
    as the fault says: an API that did the work but whose answer was lost.

  It answers ``{"queued": {"/bookings": n, "/slots": m}}``.
- ``POST /control/reset``: forget everything (slots, bookings, keys, faults, stats).

With a ``control_token`` (the demo server passes its admin's token), ``/stats``, ``/control``
and ``/control/reset`` answer only a request with ``Authorization: Bearer <control_token>``:
without a bearer token they answer ``401`` (``ADMIN_TOKEN_REQUIRED``), with another token ``403``
(``ADMIN_TOKEN_WRONG``), both as problem JSON (``{status, title, detail, code}``). The booking
routes stay open. Without one (the default, for tests on a loopback port) every route is open.

Every app from `create_booking_app` has its own state, in memory. `serve_booking_api` runs one
with uvicorn on a loopback port, and `booking_action_set` compiles the action set that calls it
(``booking.yaml`` beside this module) with that base URL::

    async with serve_booking_api() as base_url:
        actions = booking_action_set(base_url)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import re
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from handrail.actions import ActionSet, compile_action_set

__all__ = [
    "BOOKING_YAML",
    "SLOTS",
    "BookingService",
    "booking_action_set",
    "create_booking_app",
    "serve_booking_api",
]

#: The action set that calls this API: tools ``find_slots`` and ``book_slot``.
BOOKING_YAML: Final = Path(__file__).with_name("booking.yaml")

#: The slots every date starts with: ``(time, seats)``.
SLOTS: Final[tuple[tuple[str, int], ...]] = (
    ("18:00", 2),
    ("19:00", 4),
    ("20:00", 4),
    ("21:00", 2),
)

#: How long a slot token stays valid after it is handed out, by default.
TOKEN_TTL_S: Final = 600.0

#: The longest ``notes`` a booking takes.
MAX_NOTES: Final = 1000

#: The paths faults can be queued for, and the request each applies to.
FAULT_TARGETS: Final[Mapping[str, str]] = {"/bookings": "POST", "/slots": "GET"}

#: The longest delay a fault may ask for.
MAX_DELAY_MS: Final = 60_000

_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UNRECORDED: Final = re.compile(r"^/(control(/.*)?|stats)$")


@dataclass(kw_only=True, slots=True)
class _Token:
    date: str
    time: str
    expires: float


@dataclass(frozen=True, kw_only=True, slots=True)
class _Fault:
    delay_ms: int = 0
    status: int | None = None
    body: Any = None
    redirect: str | None = None
    process: bool = False

    @property
    def answers(self) -> bool:
        """Whether the fault replaces the answer (not only delays it)."""
        return self.status is not None or self.redirect is not None


@dataclass(kw_only=True)
class BookingService:
    """The state of one booking API: slot tokens, bookings, idempotency keys, queued faults and
    the requests received. `clock` gives seconds (monotonic) for token expiry."""

    token_ttl_s: float = TOKEN_TTL_S
    clock: Callable[[], float] = time.monotonic
    tokens: dict[str, _Token] = field(default_factory=dict)
    #: ``(date, time) -> token``: the token handed out last for a slot.
    current: dict[tuple[str, str], str] = field(default_factory=dict)
    #: ``(date, time) -> booking id``.
    taken: dict[tuple[str, str], str] = field(default_factory=dict)
    bookings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``Idempotency-Key -> (fingerprint of the body, booking id)``.
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)
    faults: dict[str, deque[_Fault]] = field(default_factory=dict)
    requests: list[dict[str, str | None]] = field(default_factory=list)

    def reset(self) -> None:
        self.tokens.clear()
        self.current.clear()
        self.taken.clear()
        self.bookings.clear()
        self.keys.clear()
        self.faults.clear()
        self.requests.clear()

    # --- slots ---------------------------------------------------------------------------------

    def free_slots(self, date: str) -> list[dict[str, Any]]:
        """The date's free slots, each with a valid token (a new one when the last expired)."""
        now = self.clock()
        slots = []
        for slot_time, seats in SLOTS:
            if (date, slot_time) in self.taken:
                continue
            token = self.current.get((date, slot_time))
            if token is None or self.tokens[token].expires <= now:
                token = "slt_" + secrets.token_urlsafe(18)
                self.tokens[token] = _Token(
                    date=date, time=slot_time, expires=now + self.token_ttl_s
                )
                self.current[(date, slot_time)] = token
            slots.append({"time": slot_time, "token": token, "seats": seats})
        return slots

    # --- bookings ------------------------------------------------------------------------------

    def book(self, body: Mapping[str, Any], key: str | None) -> Response:
        """Book the slot of ``body`` (already checked), honouring the idempotency `key`."""
        fingerprint = _fingerprint(body)
        if key is not None and key in self.keys:
            known, booking_id = self.keys[key]
            if known != fingerprint:
                return _error(
                    422,
                    "IDEMPOTENCY_KEY_REUSED",
                    "This Idempotency-Key was used with another request.",
                )
            return JSONResponse(self.bookings[booking_id], status_code=200)
        token = self.tokens.get(body["slot_token"])
        if token is None or token.expires <= self.clock():
            return _error(410, "SLOT_GONE", "The slot token expired or is unknown.")
        if token.date != body["date"]:
            return _error(422, "INVALID_BODY", "The slot token is for another date.")
        if (token.date, token.time) in self.taken:
            return _error(409, "SLOT_TAKEN", "The slot is already booked.")
        booking_id = "bk_" + secrets.token_hex(8)
        booking: dict[str, Any] = {
            "id": booking_id,
            "date": token.date,
            "time": token.time,
            "notes": body.get("notes"),
            "status": "confirmed",
        }
        self.bookings[booking_id] = booking
        self.taken[(token.date, token.time)] = booking_id
        if key is not None:
            self.keys[key] = (fingerprint, booking_id)
        return JSONResponse(booking, status_code=201)

    # --- faults and stats ----------------------------------------------------------------------

    def queue(self, path: str, faults: list[_Fault]) -> dict[str, int]:
        self.faults.setdefault(path, deque()).extend(faults)
        return {target: len(self.faults.get(target, ())) for target in FAULT_TARGETS}

    def next_fault(self, path: str) -> _Fault | None:
        queued = self.faults.get(path)
        return queued.popleft() if queued else None

    def record(self, method: str, path: str, idempotency_key: str | None) -> None:
        self.requests.append({"method": method, "path": path, "idempotencyKey": idempotency_key})


def create_booking_app(
    *,
    token_ttl_s: float = TOKEN_TTL_S,
    clock: Callable[[], float] = time.monotonic,
    control_token: str | None = None,
) -> Starlette:
    """A new booking API (an ASGI app) with its own empty state, kept in ``app.state.booking``
    (a `BookingService`). Slot tokens stay valid `token_ttl_s` seconds after they are handed
    out, measured with `clock`. With `control_token`, ``/stats`` and ``/control`` need it as
    a bearer token (401 or 403 otherwise)."""
    if control_token is not None and not control_token:
        raise ValueError("control_token must be a non-empty string, or None for open routes.")
    service = BookingService(token_ttl_s=token_ttl_s, clock=clock)

    async def slots(request: Request) -> Response:
        date = request.query_params.get("date", "")
        if not _valid_date(date):
            return _error(422, "INVALID_DATE", "Give the date as ?date=YYYY-MM-DD.")
        return await _with_fault(
            service,
            "/slots",
            lambda: JSONResponse({"date": date, "slots": service.free_slots(date)}),
        )

    async def create_booking(request: Request) -> Response:
        key = request.headers.get("idempotency-key")
        body = await _booking_body(request)  # read first: a slow answer's client may leave
        return await _with_fault(
            service,
            "/bookings",
            lambda: body if isinstance(body, Response) else service.book(body, key),
        )

    async def get_booking(request: Request) -> Response:
        booking = service.bookings.get(request.path_params["booking_id"])
        if booking is None:
            return _error(404, "NOT_FOUND", "No such booking.")
        return JSONResponse(booking)

    async def control(request: Request) -> Response:
        refused = _refused(request, control_token)
        if refused is not None:
            return refused
        try:
            data = await request.json()
            path, faults = _parse_control(data)
        except RecursionError:
            return _error(422, "INVALID_CONTROL", "The body nests too deep to be a control.")
        except (ValueError, TypeError) as exc:
            return _error(422, "INVALID_CONTROL", str(exc))
        return JSONResponse({"queued": service.queue(path, faults)})

    async def reset(request: Request) -> Response:
        refused = _refused(request, control_token)
        if refused is not None:
            return refused
        service.reset()
        return JSONResponse({"reset": True})

    async def stats(request: Request) -> Response:
        refused = _refused(request, control_token)
        if refused is not None:
            return refused
        return JSONResponse({"requests": list(service.requests)})

    app = Starlette(
        routes=[
            Route("/slots", slots, methods=["GET"]),
            Route("/bookings", create_booking, methods=["POST"]),
            Route("/bookings/{booking_id}", get_booking, methods=["GET"]),
            Route("/control", control, methods=["POST"]),
            Route("/control/reset", reset, methods=["POST"]),
            Route("/stats", stats, methods=["GET"]),
        ],
    )
    app.state.booking = service
    app.add_middleware(_RecordRequests, service=service)
    return app


class _RecordRequests:
    """Records every HTTP request but those to ``/control`` and ``/stats``, before routing."""

    def __init__(self, app: ASGIApp, *, service: BookingService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = _app_path(scope)
            if not _UNRECORDED.match(path):
                key = None
                for name, value in scope.get("headers", ()):
                    if name.lower() == b"idempotency-key":
                        key = value.decode("latin-1")
                self.service.record(scope["method"], path, key)
        await self.app(scope, receive, send)


@asynccontextmanager
async def serve_booking_api(
    app: ASGIApp | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Run `app` (default: a new `create_booking_app()`) with uvicorn in the running event
    loop, on `host` and `port` (0: a free port), and yield its base URL
    (``http://127.0.0.1:<port>``). The server stops when the block ends."""
    if app is None:
        app = create_booking_app()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        ws="none",
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("The booking API stopped before it started.")
            await asyncio.sleep(0.01)
        bound_port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def booking_action_set(base_url: str | None = None) -> ActionSet:
    """The compiled `BOOKING_YAML`. With `base_url` (where the booking API runs, such as the
    URL `serve_booking_api` yields, or ``http://host:port/demo/booking`` for the demo server's
    mount), it is compiled with that base URL instead of the file's own
    (``http://127.0.0.1:8000/demo/booking``); the URL is checked like the file's.

    Raises `handrail.actions.ActionConfigError` when it does not compile."""
    text = BOOKING_YAML.read_text(encoding="utf-8")
    if base_url is not None:
        line = "base_url: " + json.dumps(base_url)
        text, count = re.subn(r"(?m)^base_url:.*$", lambda _: line, text)
        if count != 1:  # pragma: no cover - the packaged file has exactly one
            raise RuntimeError(f"{BOOKING_YAML} has no top-level base_url line.")
    return compile_action_set(text, source=str(BOOKING_YAML), env=os.environ)


# --- helpers --------------------------------------------------------------------------------------


async def _with_fault(
    service: BookingService, path: str, answer: Callable[[], Response]
) -> Response:
    fault = service.next_fault(path)
    if fault is None:
        return answer()
    if fault.delay_ms:
        await asyncio.sleep(fault.delay_ms / 1000)
    if not fault.answers:
        return answer()
    if fault.process:
        answer()
    return _fault_response(fault)


def _fault_response(fault: _Fault) -> Response:
    if fault.redirect is not None:
        return Response(
            status_code=fault.status if fault.status is not None else 307,
            headers={"Location": fault.redirect},
        )
    assert fault.status is not None
    if fault.body is not None:
        return JSONResponse(fault.body, status_code=fault.status)
    return _error(fault.status, "INJECTED", f"An injected {fault.status} answer.")


async def _booking_body(request: Request) -> dict[str, Any] | Response:
    """The checked body of ``POST /bookings``, or the 422 to answer."""
    try:
        body = await request.json()
    except (ValueError, RecursionError):  # deep JSON raises RecursionError
        return _error(422, "INVALID_BODY", "The body must be JSON.")
    if not isinstance(body, dict):
        return _error(422, "INVALID_BODY", "The body must be a JSON object.")
    unknown = set(body) - {"date", "slot_token", "notes"}
    if unknown:
        return _error(422, "INVALID_BODY", f"Unknown fields: {', '.join(sorted(unknown))}.")
    if not isinstance(body.get("date"), str) or not _valid_date(body["date"]):
        return _error(422, "INVALID_BODY", "date must be a YYYY-MM-DD string.")
    if not isinstance(body.get("slot_token"), str) or not body["slot_token"]:
        return _error(422, "INVALID_BODY", "slot_token must be a non-empty string.")
    notes = body.get("notes")
    if notes is not None and (not isinstance(notes, str) or len(notes) > MAX_NOTES):
        return _error(422, "INVALID_BODY", f"notes must be a string of at most {MAX_NOTES}.")
    return body


def _parse_control(data: Any) -> tuple[str, list[_Fault]]:
    if not isinstance(data, dict):
        raise ValueError("The body must be a JSON object.")
    path = data.get("path", "/bookings")
    if path not in FAULT_TARGETS:
        raise ValueError(f"path must be one of {', '.join(FAULT_TARGETS)}.")
    entries = data.get("next")
    if not isinstance(entries, list):
        raise ValueError("next must be a list of faults.")
    return path, [_parse_fault(entry) for entry in entries]


def _parse_fault(entry: Any) -> _Fault:
    if not isinstance(entry, dict):
        raise ValueError("A fault is an object.")
    unknown = set(entry) - {"delay_ms", "status", "body", "redirect", "process"}
    if unknown:
        raise ValueError(f"Unknown fault fields: {', '.join(sorted(unknown))}.")
    delay = entry.get("delay_ms", 0)
    if not isinstance(delay, int) or isinstance(delay, bool) or not 0 <= delay <= MAX_DELAY_MS:
        raise ValueError(f"delay_ms must be an integer from 0 to {MAX_DELAY_MS}.")
    status = entry.get("status")
    if status is not None and (
        not isinstance(status, int) or isinstance(status, bool) or not 200 <= status <= 599
    ):
        raise ValueError("status must be an HTTP status from 200 to 599.")
    redirect = entry.get("redirect")
    if redirect is not None and (not isinstance(redirect, str) or not redirect):
        raise ValueError("redirect must be a non-empty URL.")
    process = entry.get("process", False)
    if not isinstance(process, bool):
        raise ValueError("process must be true or false.")
    fault = _Fault(
        delay_ms=delay,
        status=status,
        body=entry.get("body"),
        redirect=redirect,
        process=process,
    )
    if not fault.answers and not fault.delay_ms:
        raise ValueError("A fault needs delay_ms, status or redirect.")
    return fault


def _valid_date(value: str) -> bool:
    if not _DATE.match(value):
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _fingerprint(body: Mapping[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _app_path(scope: Scope) -> str:
    """The request's path inside the app, without the prefix it is mounted at."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path or "/"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "code": code}, status_code=status)


_CONTROL_ROUTES: Final = "GET /stats, POST /control and POST /control/reset"


def _refused(request: Request, control_token: str | None) -> Response | None:
    """The 401 or 403 for a control route called without `control_token` as its bearer
    token; None when it may go on (or every route is open)."""
    if control_token is None:
        return None
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return _problem(
            401,
            "Unauthorized",
            "ADMIN_TOKEN_REQUIRED",
            f"{_CONTROL_ROUTES} of the booking API need the admin's bearer token "
            "(the demo's admin user): send Authorization: Bearer <token>.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not secrets.compare_digest(token.encode(), control_token.encode()):
        return _problem(
            403,
            "Forbidden",
            "ADMIN_TOKEN_WRONG",
            f"{_CONTROL_ROUTES} of the booking API take only the admin's bearer token "
            "(the demo's admin user), not this one.",
        )
    return None


def _problem(
    status: int, title: str, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"status": status, "title": title, "detail": detail, "code": code},
        status_code=status,
        headers=headers,
        media_type="application/problem+json",
    )
