"""Grants and permission levels: what the caller has said about the tools of a connection.

- ``GET /grants`` lists the caller's grants (standing yeses to one tool, ``conversation`` or
  ``always``), newest first; ``DELETE /grants/{id}`` revokes one, so the tool asks again.
- ``GET /permissions`` lists the caller's saved levels, the levels and what each allows, and
  every connection of the configured agents with its tools and their safety classes;
  ``PUT /permissions/{connectionId}`` saves a level and ``DELETE`` forgets it (the next use
  asks for one again).

Owners only: every route reads and writes the caller's own records, and another user's grant is
as unknown as one that never existed (404, never 403), so nothing tells a caller that it exists.

Connection ids hold ``:`` (``local:notes``) and may hold ``/``: the path parameter takes the
rest of the path, so ``/permissions/local:notes`` works as it is, and so does the URL-encoded
``/permissions/local%3Anotes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Final, cast

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response

from .._util import iso
from ..errors import BadRequest
from ..policy import (
    PERMISSION_DESCRIPTIONS,
    PERMISSION_LABELS,
    PERMISSION_LEVELS,
    SAFETY_CLASSES,
    PermissionLevel,
    allowed_without_asking,
)
from ..runtime.page_tools import is_page_connection
from ..runtime.runtime import Runtime
from ..runtime.tools import Tool, ToolSet
from ..store.records import PermissionRecord
from .auth import Caller
from .bodies import NO_BODY, read_json, runtime_of, store_of
from .openapi import JsonSchema, body, json_ok, problems
from .paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, paged_ok, paged_response
from .problems import not_found, ok

__all__ = ["add_grant_routes", "connection_catalog", "permission_catalog"]

GrantId = Annotated[str, Path(alias="id", description="The grant's id.")]
ConnectionId = Annotated[
    str,
    Path(
        alias="connectionId",
        description="The connection's id, such as local:notes (':' and '/' may be sent as they "
        "are or URL-encoded).",
    ),
]

PERMISSION_FIELDS: Final = ("level",)
GRANT_NOT_FOUND: Final = "Grant not found"
CONNECTION_NOT_FOUND: Final = "Connection not found"
PERMISSION_NOT_FOUND: Final = "Permission level not found"
UNKNOWN_LEVEL: Final = "Unknown permission level"
#: The name of the grants list in its cursors.
GRANTS_LIST: Final = "grants"


# --- the connections of the configured agents ---------------------------------------------------


@dataclass(kw_only=True)
class _Connection:
    """One connection as the agents have it: a connection id may be shared by several agents
    (the same tool set added to each), so its tools and agents are gathered."""

    connection_id: str
    name: str
    trusted: bool
    agents: list[str] = field(default_factory=list)
    tools: dict[str, Tool] = field(default_factory=dict)

    def add(self, agent: str, tool_set: ToolSet) -> None:
        if agent not in self.agents:
            self.agents.append(agent)
        for name, tool in tool_set.tools.items():
            self.tools.setdefault(name, tool)


def _connections(runtime: Runtime) -> dict[str, _Connection]:
    """Every connection of the runtime's agents that has at least one tool, in the order of the
    agents and of each agent's connections (its local one first)."""
    found: dict[str, _Connection] = {}
    for agent in runtime.agents.values():
        for connection_id, tool_set in agent.connections.items():
            if not tool_set.tools:
                continue
            entry = found.get(connection_id)
            if entry is None:
                entry = _Connection(
                    connection_id=connection_id, name=tool_set.name, trusted=tool_set.trusted
                )
                found[connection_id] = entry
            entry.add(agent.name, tool_set)
    return found


def _tool_json(tool: Tool, trusted: bool) -> dict[str, Any]:
    safety = tool.safety(trusted=trusted)
    return {
        "name": tool.name,
        "description": tool.description,
        "safetyClass": safety,
        "hints": tool.hints.to_annotations(),
        "runsWithoutAsking": [
            level for level in PERMISSION_LEVELS if allowed_without_asking(safety, level)
        ],
    }


def _permission_json(record: PermissionRecord) -> dict[str, Any]:
    return {
        "connectionId": record.connection_id,
        "level": record.level,
        "updated": iso(record.updated),
    }


def permission_catalog() -> list[dict[str, str]]:
    """The levels in the order the permission ask offers them, with what each allows."""
    return [
        {
            "id": level,
            "label": PERMISSION_LABELS[level],
            "description": PERMISSION_DESCRIPTIONS[level],
        }
        for level in PERMISSION_LEVELS
    ]


def connection_catalog(
    runtime: Runtime, saved: dict[str, PermissionRecord]
) -> list[dict[str, Any]]:
    """Every connection of the configured agents with its tools, their safety classes and the
    caller's saved level (None when the next use asks for one)."""
    out: list[dict[str, Any]] = []
    for entry in _connections(runtime).values():
        record = saved.get(entry.connection_id)
        out.append(
            {
                "connectionId": entry.connection_id,
                "name": entry.name,
                "trusted": entry.trusted,
                "agents": list(entry.agents),
                "level": record.level if record is not None else None,
                "tools": [_tool_json(tool, entry.trusted) for tool in entry.tools.values()],
            }
        )
    return out


# --- bodies ---------------------------------------------------------------------------------


def _invalid(fields: dict[str, str]) -> BadRequest:
    return BadRequest(
        "Validation failed",
        'The body must be {"level": "<level>"}. See fields.',
        code="body-validation-failed",
        fields=fields,
    )


async def _level_body(request: Request) -> PermissionLevel:
    """The ``level`` of a ``{level}`` body: any other shape is 400 ``Validation failed``, a
    level that is not one of the levels 400 ``Unknown permission level``."""
    data = await read_json(request, invalid=lambda message: _invalid({"body": message}))
    if data is NO_BODY or not isinstance(data, dict):
        raise _invalid({"body": 'must be a JSON object such as {"level": "read-only"}'})
    fields = {
        key: "is not a field; the fields are " + ", ".join(PERMISSION_FIELDS)
        for key in data
        if key not in PERMISSION_FIELDS
    }
    levels = ", ".join(PERMISSION_LEVELS)
    if "level" not in data:
        fields["level"] = f"is required: one of {levels}"
    elif not isinstance(data["level"], str):
        fields["level"] = f"must be a string: one of {levels}"
    if fields:
        raise _invalid(dict(sorted(fields.items())))
    level = data["level"]
    if level not in PERMISSION_LEVELS:
        raise BadRequest(
            UNKNOWN_LEVEL,
            f"{level!r} is not a permission level; the levels are {levels}.",
            code="body-validation-failed",
            fields={"level": f"must be one of {levels}"},
        )
    return cast(PermissionLevel, level)


# --- routes ---------------------------------------------------------------------------------


async def list_grants(
    request: Request, principal: Caller, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> Response:
    after = decode_cursor(cursor, GRANTS_LIST, principal.user_id)
    page = await store_of(request).grants.list_page(principal.user_id, limit=limit, after=after)
    return await paged_response(
        request,
        page,
        lambda grant: grant.to_json(),
        list_name=GRANTS_LIST,
        user_id=principal.user_id,
        limit=limit,
    )


async def delete_grant(request: Request, principal: Caller, grant_id: GrantId) -> JSONResponse:
    deleted = await store_of(request).grants.delete(grant_id, user_id=principal.user_id)
    if not deleted:
        raise not_found(GRANT_NOT_FOUND, f"You have no grant with the id {grant_id!r}.")
    return ok(request, {"id": grant_id, "deleted": True})


async def list_permissions(request: Request, principal: Caller) -> JSONResponse:
    records = await store_of(request).permissions.list(principal.user_id)
    saved = {record.connection_id: record for record in records}
    return ok(
        request,
        {
            "levels": permission_catalog(),
            "saved": [_permission_json(record) for record in records],
            "connections": connection_catalog(runtime_of(request), saved),
        },
    )


async def set_permission(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    known = _connections(runtime_of(request))
    hub = getattr(request.app.state, "connections", None)
    saved = hub.live_record(connection_id) if hub is not None else None
    if connection_id not in known and saved is None and not is_page_connection(connection_id):
        raise not_found(
            CONNECTION_NOT_FOUND,
            f"No agent has a connection with tools named {connection_id!r}; the connections "
            f"are {', '.join(known) or 'none'}.",
        )
    level = await _level_body(request)
    record = await store_of(request).permissions.set(principal.user_id, connection_id, level)
    return ok(request, _permission_json(record))


async def delete_permission(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    forgotten = await store_of(request).permissions.clear(principal.user_id, connection_id)
    if not forgotten:
        raise not_found(
            PERMISSION_NOT_FOUND,
            f"You have no saved level for {connection_id!r}: its next use asks for one already.",
        )
    return ok(request, {"connectionId": connection_id, "deleted": True})


# --- OpenAPI --------------------------------------------------------------------------------

_ISO: Final[JsonSchema] = {"type": "string", "format": "date-time"}
_LEVEL: Final[JsonSchema] = {"type": "string", "enum": list(PERMISSION_LEVELS)}

GRANT_SCHEMA: Final[JsonSchema] = {
    "title": "Grant",
    "type": "object",
    "description": "A standing yes to one tool of one connection: always, or for one "
    "conversation (historyId).",
    "properties": {
        "id": {"type": "string"},
        "connectionId": {"type": "string"},
        "toolName": {"type": "string"},
        "scope": {"type": "string", "enum": ["conversation", "always"]},
        "historyId": {"type": "string", "description": "Only for scope conversation."},
        "created": _ISO,
    },
    "required": ["id", "connectionId", "toolName", "scope", "created"],
}

SAVED_LEVEL_SCHEMA: Final[JsonSchema] = {
    "title": "SavedPermission",
    "type": "object",
    "properties": {"connectionId": {"type": "string"}, "level": _LEVEL, "updated": _ISO},
    "required": ["connectionId", "level", "updated"],
}

PERMISSIONS_SCHEMA: Final[JsonSchema] = {
    "title": "Permissions",
    "type": "object",
    "properties": {
        "levels": {
            "type": "array",
            "description": "The levels, in the order the permission ask offers them.",
            "items": {
                "type": "object",
                "properties": {
                    "id": _LEVEL,
                    "label": {"type": "string"},
                    "description": {"type": "string"},
                },
                "required": ["id", "label", "description"],
            },
        },
        "saved": {"type": "array", "items": SAVED_LEVEL_SCHEMA},
        "connections": {
            "type": "array",
            "description": "Every connection of the configured agents that has tools.",
            "items": {
                "type": "object",
                "properties": {
                    "connectionId": {"type": "string"},
                    "name": {"type": "string"},
                    "trusted": {"type": "boolean"},
                    "agents": {"type": "array", "items": {"type": "string"}},
                    "level": {"oneOf": [_LEVEL, {"type": "null"}]},
                    "tools": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "description": {"type": "string"},
                                "safetyClass": {"type": "string", "enum": list(SAFETY_CLASSES)},
                                "hints": {
                                    "type": "object",
                                    "additionalProperties": {"type": "boolean"},
                                },
                                "runsWithoutAsking": {"type": "array", "items": _LEVEL},
                            },
                            "required": [
                                "name",
                                "description",
                                "safetyClass",
                                "hints",
                                "runsWithoutAsking",
                            ],
                        },
                    },
                },
                "required": ["connectionId", "name", "trusted", "agents", "level", "tools"],
            },
        },
    },
    "required": ["levels", "saved", "connections"],
}


def _deleted(key: str) -> JsonSchema:
    return {
        "type": "object",
        "properties": {key: {"type": "string"}, "deleted": {"const": True}},
        "required": [key, "deleted"],
    }


def add_grant_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/grants`` and ``<prefix>/permissions``."""
    router.add_api_route(
        prefix + "/grants",
        list_grants,
        methods=["GET"],
        name="listGrants",
        operation_id="listGrants",
        tags=["policy"],
        summary="The caller's grants, newest first, a page at a time",
        responses={
            **paged_ok({"type": "array", "items": GRANT_SCHEMA}, "A page of the grants."),
            **problems(400),
        },
    )
    router.add_api_route(
        prefix + "/grants/{id}",
        delete_grant,
        methods=["DELETE"],
        name="deleteGrant",
        operation_id="deleteGrant",
        tags=["policy"],
        summary="Revoke a grant: the tool asks again",
        responses={
            **json_ok(_deleted("id"), "The grant is revoked."),
            **problems(404, notes={404: "The caller has no grant with that id."}),
        },
    )
    router.add_api_route(
        prefix + "/permissions",
        list_permissions,
        methods=["GET"],
        name="listPermissions",
        operation_id="listPermissions",
        tags=["policy"],
        summary="The caller's permission levels, and the connections and tools they govern",
        responses={**json_ok(PERMISSIONS_SCHEMA, "The levels and connections."), **problems()},
    )
    router.add_api_route(
        prefix + "/permissions/{connectionId:path}",
        set_permission,
        methods=["PUT"],
        name="setPermission",
        operation_id="setPermission",
        tags=["policy"],
        summary="Save the caller's permission level for a connection",
        responses={
            **json_ok(SAVED_LEVEL_SCHEMA, "The saved level."),
            **problems(
                400, 404, 413, notes={404: "No agent has a connection with tools by that id."}
            ),
        },
        openapi_extra=body(
            {
                "type": "object",
                "properties": {"level": _LEVEL},
                "required": ["level"],
                "additionalProperties": False,
            }
        ),
    )
    router.add_api_route(
        prefix + "/permissions/{connectionId:path}",
        delete_permission,
        methods=["DELETE"],
        name="deletePermission",
        operation_id="deletePermission",
        tags=["policy"],
        summary="Forget the caller's permission level for a connection: its next use asks",
        responses={
            **json_ok(_deleted("connectionId"), "The level is forgotten."),
            **problems(404, notes={404: "The caller has no saved level for that connection."}),
        },
    )
