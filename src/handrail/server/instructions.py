"""Connection instructions over HTTP.

- ``POST /connections/{id}/instructions/reset`` (admin): adopt the app's current template as
  the connection's instructions, keeping the toggle; an activity record says so.
- ``GET /histories/{id}/instructions`` (the owner): the snapshot ``{text, digest}`` (or null)
  the conversation's next turn would get now, and every connection with instructions, each
  with its source and whether (and why not) it gives a block.
- ``GET /agents/{name}/instructions``: the same for a new conversation of that agent (the
  agent page's read-only "From connections").

The setting itself is ``agentInstructions`` on ``POST`` and ``PATCH /connections``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from ..runtime.instructions import ResolvedInstructions
from .auth import Caller
from .bodies import runtime_of
from .connection_schemas import CONNECTION_SCHEMA
from .connections import ConnectionId, _admin, connection_json, hub_of
from .histories import owned_history
from .openapi import JsonSchema, json_ok, problems
from .problems import ok

__all__ = ["HISTORY_INSTRUCTIONS_SCHEMA", "add_instruction_routes"]

HistoryId = Annotated[str, Path(alias="id", description="The history's id.")]
AgentName = Annotated[str, Path(alias="name", description="The agent's name.")]

_SNAPSHOT: Final[JsonSchema] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "digest": {"type": "string", "description": "SHA-256 hex of the UTF-8 text."},
            },
            "required": ["text", "digest"],
        },
        {"type": "null"},
    ]
}

HISTORY_INSTRUCTIONS_SCHEMA: Final[JsonSchema] = {
    "title": "HistoryInstructions",
    "type": "object",
    "properties": {
        "snapshot": _SNAPSHOT,
        "sources": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "connectionId": {"type": "string"},
                    "name": {"type": "string"},
                    "connector": {"type": "string"},
                    "method": {"type": "string"},
                    "enabled": {"type": "boolean"},
                    "text": {"type": "string"},
                    "template": {"oneOf": [{"type": "object"}, {"type": "null"}]},
                    "delivered": {"type": "boolean"},
                    "reason": {
                        "oneOf": [{"type": "string"}, {"type": "null"}],
                        "description": "Why it gives no block (null when it does).",
                    },
                    "missing": {"type": "array", "items": {"type": "string"}},
                    "docsUrl": {"oneOf": [{"type": "string"}, {"type": "null"}]},
                    "source": {
                        "type": "object",
                        "description": "The block's source as the prompt states it.",
                    },
                },
                "required": ["connectionId", "name", "enabled", "delivered", "reason"],
            },
        },
    },
    "required": ["snapshot", "sources"],
}


async def reset_instructions(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    _admin(principal, "change connections")
    hub = hub_of(request)
    record = await hub.reset_instructions(principal, connection_id)
    return ok(request, connection_json(hub, record, admin=True))


async def history_instructions(
    request: Request, principal: Caller, history_id: HistoryId
) -> JSONResponse:
    await owned_history(request, principal, history_id)
    resolved = await runtime_of(request).next_instructions(principal, history_id)
    return ok(request, _resolved_json(resolved))


async def agent_instructions(request: Request, principal: Caller, name: AgentName) -> JSONResponse:
    resolved = await runtime_of(request).agent_instructions(principal, name)
    return ok(request, _resolved_json(resolved))


def _resolved_json(resolved: ResolvedInstructions) -> dict[str, Any]:
    return {
        "snapshot": resolved.snapshot.to_json() if resolved.snapshot else None,
        "sources": [view.to_json() for view in resolved.sources],
    }


def add_instruction_routes(router: APIRouter, prefix: str) -> None:
    router.add_api_route(
        prefix + "/connections/{id}/instructions/reset",
        reset_instructions,
        methods=["POST"],
        name="resetConnectionInstructions",
        operation_id="resetConnectionInstructions",
        tags=["connections"],
        summary="Adopt the app's current instructions template, keeping the toggle (admin)",
        responses={
            **json_ok(CONNECTION_SCHEMA, "The connection with its instructions reset."),
            **problems(
                403,
                404,
                409,
                notes={
                    403: "Only an admin may do this.",
                    404: "No connection has that id.",
                    409: "Its app has no template, it comes from the configuration file, or "
                    "it changed meanwhile.",
                },
            ),
        },
    )
    router.add_api_route(
        prefix + "/histories/{id}/instructions",
        history_instructions,
        methods=["GET"],
        name="readHistoryInstructions",
        operation_id="readHistoryInstructions",
        tags=["histories"],
        summary="The connection instructions the conversation's next turn would get",
        responses={
            **json_ok(HISTORY_INSTRUCTIONS_SCHEMA, "The snapshot and its sources."),
            **problems(403, 404, notes={403: "Another user's history."}),
        },
    )
    router.add_api_route(
        prefix + "/agents/{name}/instructions",
        agent_instructions,
        methods=["GET"],
        name="readAgentInstructions",
        operation_id="readAgentInstructions",
        tags=["connections"],
        summary="The connection instructions a new conversation of the agent would get",
        responses={
            **json_ok(HISTORY_INSTRUCTIONS_SCHEMA, "The snapshot and its sources."),
            **problems(400, notes={400: "No agent has that name (Unknown agent)."}),
        },
    )
