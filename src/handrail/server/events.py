"""``GET /events``: the signed-in user's events, as one server-sent-event stream.

Every change that concerns the caller (see `handrail.store.events` for the kinds and their
data) goes out as::

    id: <event id>
    data: {"id", "kind", "userId", "historyId", "created", "data"}

A client that reconnects sends the last id it got as ``Last-Event-ID`` (browsers' EventSource
does) or as the ``lastEventId`` query parameter: the events it missed come first, from the
bounded window the process keeps, or one ``reload`` event (no ``id:``) when that id is out of
the window; the client then reads the state again. The stream opens with ``retry: 3000`` and a
``: ready`` comment (sent once the subscription is in place), and a ``: heartbeat`` comment
follows every `HEARTBEAT_S` seconds of quiet, so proxies keep it open and a dead client is
noticed. With the app state ``event_stream_max_s`` set, a stream ends after that many seconds
(the client reconnects with its last id), as a proxy that limits a response's lifetime
would. A client that disconnects ends only its own subscription; a server shutting down ends
every stream (its protocol calls the function the route leaves in the scope under
`END_STREAM_KEY`).

Owners hear only their own events, and the ask events of the gates they may approve (they are
named as an approver, or they are an admin and ``admins`` is). An admin may hear another
user's with ``?userId=`` (read only, as an admin may read another user's history); anyone else
naming another user gets 403.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Final

from fastapi import APIRouter, Header, Query, Request

from .._util import json_encoder
from ..store import EventBus, UserEvent
from .auth import Caller
from .bodies import store_of
from .chat import EventStreamResponse
from .openapi import problems, ref
from .problems import forbidden

__all__ = ["END_STREAM_KEY", "HEARTBEAT_S", "add_event_routes", "event_lines"]

#: Seconds of quiet before a ``: heartbeat`` comment (the app's ``event_heartbeat_s`` state
#: overrides it).
HEARTBEAT_S: Final = 15.0
#: The scope key of the function that ends an open event stream (called at shutdown).
END_STREAM_KEY: Final = "handrail.end_stream"
#: How long a browser waits before reconnecting, in milliseconds.
RETRY_MS: Final = 3000
#: The longest ``Last-Event-ID`` taken (ids are 24 characters).
LAST_ID_MAX: Final = 64


#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, built once.
_COMPACT: Final = json_encoder(ensure_ascii=False, separators=(",", ":"))


def event_lines(event: UserEvent) -> str:
    """One event on the wire: ``id:`` (not for ``reload``), ``data:`` and a blank line."""
    data = _COMPACT(event.to_json())
    if event.kind == "reload":
        return f"data: {data}\n\n"
    return f"id: {event.id}\ndata: {data}\n\n"


async def _stream(
    request: Request,
    bus: EventBus,
    user_id: str,
    last_event_id: str | None,
    heartbeat_s: float,
    max_s: float | None,
    is_admin: bool = False,
) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    deadline = None if max_s is None else loop.time() + max_s
    async with bus.subscribe(
        user_id, last_event_id=last_event_id, is_admin=is_admin
    ) as subscription:
        request.scope[END_STREAM_KEY] = subscription.end
        yield f"retry: {RETRY_MS}\n: ready\n\n"
        while True:
            wait = heartbeat_s
            if deadline is not None:
                wait = min(wait, deadline - loop.time())
                if wait <= 0:
                    return  # the client reconnects with Last-Event-ID
            event = await subscription.get(timeout=wait)
            if subscription.ended:
                return
            if event is None:
                if deadline is None or loop.time() < deadline:
                    yield ": heartbeat\n\n"
                continue
            yield event_lines(event)


async def events(
    request: Request,
    principal: Caller,
    user_id: Annotated[
        str | None,
        Query(
            alias="userId",
            max_length=200,
            description="Admins only: hear this user's events instead of their own.",
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        Query(
            alias="lastEventId",
            max_length=LAST_ID_MAX,
            description="The last event id the client got (as the Last-Event-ID header).",
        ),
    ] = None,
    last_event_header: Annotated[
        str | None, Header(alias="Last-Event-ID", include_in_schema=False)
    ] = None,
) -> EventStreamResponse:
    whose = principal.user_id
    if user_id is not None and user_id != principal.user_id:
        if not principal.is_admin:
            raise forbidden(
                "Not authorized to hear another user's events",
                "Leave out userId to hear your own events; only admins may name another user.",
            )
        whose = user_id
    last = last_event_header or last_event_id
    if last is not None:
        last = last.strip()[:LAST_ID_MAX] or None
    state = request.app.state
    heartbeat = float(getattr(state, "event_heartbeat_s", HEARTBEAT_S))
    max_s = getattr(state, "event_stream_max_s", None)
    return EventStreamResponse(
        _stream(
            request,
            store_of(request).events,
            whose,
            last,
            heartbeat,
            None if max_s is None else float(max_s),
            # An admin hears the gates that admins approve (on their own stream only).
            principal.is_admin and whose == principal.user_id,
        )
    )


def add_event_routes(router: APIRouter, prefix: str) -> None:
    """Add ``GET <prefix>/events``."""
    router.add_api_route(
        prefix + "/events",
        events,
        methods=["GET"],
        name="events",
        operation_id="events",
        tags=["events"],
        summary="The caller's events (asks, turns, conversations) as server-sent events",
        description="One `id: <event id>` and `data: <UserEvent JSON>` per event. Reconnect "
        "with Last-Event-ID (or lastEventId) to get what was missed, or a `reload` event "
        "(without an id) when it is out of the replay window. `: heartbeat` comments come "
        "every 15 seconds of quiet.",
        response_class=EventStreamResponse,
        status_code=200,
        responses={
            200: {
                "description": "The caller's events, as server-sent events.",
                "content": {"text/event-stream": {"schema": ref("UserEvent")}},
            },
            **problems(
                400,
                403,
                notes={
                    400: "userId or lastEventId is too long.",
                    403: "userId names another user and the caller is not an admin.",
                },
            ),
        },
    )
