"""The delivery log of webhooks and emails.

- ``GET /deliveries``: the caller's deliveries, newest first (an admin's: everyone's), paged.
- ``GET /deliveries/{id}``: one delivery with every attempt (its HTTP status or error).

A delivery shows its event's type and id, where it went (a webhook's name, or the user an
email went to), its state and its attempts; never its body, the receiver's answer or a link.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response

from ..store.outbox import Delivery, DeliveryRepo
from .auth import Caller
from .bodies import store_of
from .openapi import JsonSchema, json_ok, problems
from .paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, paged_ok, paged_response
from .problems import not_found, ok

__all__ = ["DELIVERY_SCHEMA", "add_delivery_routes"]

DELIVERY_LIST: Final = "deliveries"
DeliveryId = Annotated[str, Path(alias="id", description="The delivery's id.")]

_ISO: Final[JsonSchema] = {"type": "string", "format": "date-time"}
DELIVERY_SCHEMA: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "eventId": {"type": "string", "description": "The event's id (the webhook-id header)."},
        "channel": {"type": "string", "enum": ["webhook", "email"]},
        "target": {"type": "string", "description": "The webhook's name, or the user emailed."},
        "userId": {"type": "string"},
        "type": {"type": "string", "description": "The event's type, such as ask.created."},
        "status": {"type": "string", "enum": ["pending", "delivered", "failed"]},
        "attempts": {"type": "integer"},
        "nextAttempt": {**_ISO, "type": ["string", "null"]},
        "lastError": {"type": ["string", "null"]},
        "created": _ISO,
        "updated": _ISO,
    },
    "required": ["id", "eventId", "channel", "target", "type", "status", "attempts"],
}
ATTEMPT_SCHEMA: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "attempt": {"type": "integer"},
        "statusCode": {"type": ["integer", "null"]},
        "error": {"type": ["string", "null"]},
        "durationMs": {"type": "integer"},
        "created": _ISO,
    },
}


def _repo(request: Request) -> DeliveryRepo:
    return DeliveryRepo(store_of(request).db)


async def list_deliveries(
    request: Request, principal: Caller, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> Response:
    after = decode_cursor(cursor, DELIVERY_LIST, principal.user_id)
    page = await _repo(request).list_page(
        user_id=None if principal.is_admin else principal.user_id, limit=limit, after=after
    )
    return await paged_response(
        request,
        page,
        Delivery.to_json,
        list_name=DELIVERY_LIST,
        user_id=principal.user_id,
        limit=limit,
    )


async def get_delivery(
    request: Request, principal: Caller, delivery_id: DeliveryId
) -> JSONResponse:
    repo = _repo(request)
    delivery = await repo.get(delivery_id)
    if delivery is None or (not principal.is_admin and delivery.user_id != principal.user_id):
        raise not_found("Delivery not found", f"You have no delivery with the id {delivery_id!r}.")
    data: dict[str, Any] = delivery.to_json()
    data["log"] = [a.to_json() for a in await repo.attempts(delivery.id)]
    return ok(request, data)


def add_delivery_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/deliveries`` and ``<prefix>/deliveries/{id}``."""
    router.add_api_route(
        prefix + "/deliveries",
        list_deliveries,
        methods=["GET"],
        name="listDeliveries",
        operation_id="listDeliveries",
        tags=["reach"],
        summary="Webhook and email deliveries, newest first (an admin sees everyone's)",
        responses={
            **paged_ok({"type": "array", "items": DELIVERY_SCHEMA}, "A page of deliveries."),
            **problems(400),
        },
    )
    router.add_api_route(
        prefix + "/deliveries/{id}",
        get_delivery,
        methods=["GET"],
        name="getDelivery",
        operation_id="getDelivery",
        tags=["reach"],
        summary="One delivery and the log of its attempts",
        responses={
            **json_ok(
                {
                    **DELIVERY_SCHEMA,
                    "properties": {
                        **DELIVERY_SCHEMA["properties"],
                        "log": {"type": "array", "items": ATTEMPT_SCHEMA},
                    },
                },
                "The delivery and its attempts.",
            ),
            **problems(404, notes={404: "The caller has no delivery with that id."}),
        },
    )
