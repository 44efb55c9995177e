"""``GET /confirmations/{id}``: a prepared side effect's state, preview, expiry and outcome, for
the person who owns it. A confirmation consumed but never finished (the process died between
sending and recording) shows as ``uncertain`` once its lease has passed: it is never resent."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from .auth import Caller
from .bodies import store_of
from .openapi import JsonSchema, json_ok, problems
from .problems import not_found, ok

__all__ = ["add_confirmation_routes"]

ConfirmationId = Annotated[str, Path(alias="id", description="The confirmation's id.")]
NOT_FOUND: Final = "Confirmation not found"

CONFIRMATION_SCHEMA: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "historyId": {"type": "string"},
        "toolCallId": {"type": "string"},
        "connectionId": {"type": "string"},
        "toolName": {"type": "string"},
        "state": {
            "type": "string",
            "enum": [
                "pending",
                "consumed",
                "succeeded",
                "failed",
                "cancelled",
                "stale",
                "uncertain",
            ],
        },
        "request": {
            "type": "object",
            "properties": {"method": {"type": "string"}, "path": {"type": "string"}},
        },
        "preview": {"type": "object"},
        "expiresAt": {"type": "string", "format": "date-time"},
        "outcome": {"type": "object"},
        "code": {"type": "string", "description": "TOOL_EXECUTION_UNCERTAIN when uncertain."},
        "created": {"type": "string", "format": "date-time"},
        "updated": {"type": "string", "format": "date-time"},
    },
    "required": ["id", "historyId", "toolName", "state", "preview", "expiresAt"],
}


async def get_confirmation(
    request: Request, principal: Caller, confirmation_id: ConfirmationId
) -> JSONResponse:
    store = store_of(request)
    record = await store.confirmations.get(confirmation_id)
    if record is None or record.user_id != principal.user_id:
        raise not_found(NOT_FOUND, f"You have no confirmation with the id {confirmation_id!r}.")
    record = await store.confirmations.settled(confirmation_id)
    data: dict[str, Any] = dict(record.to_json())
    if record.state == "uncertain":
        data["code"] = "TOOL_EXECUTION_UNCERTAIN"
    return ok(request, data)


def add_confirmation_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/confirmations/{id}``."""
    router.add_api_route(
        prefix + "/confirmations/{id}",
        get_confirmation,
        methods=["GET"],
        name="getConfirmation",
        operation_id="getConfirmation",
        tags=["actions"],
        summary="A prepared side effect: state, preview, expiry and outcome",
        responses={
            **json_ok(CONFIRMATION_SCHEMA, "The confirmation."),
            **problems(404, notes={404: "The caller has no confirmation with that id."}),
        },
    )
