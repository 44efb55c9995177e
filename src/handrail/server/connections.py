"""Connections, the catalog and the activity log.

- ``GET /catalog``: the app definitions connections are made from.
- ``GET /connections``: the saved connections the caller may read (every one for an admin,
  else those an agent may use), then the configuration file's (``readOnly: true``).
- ``POST /connections`` (admin): save one and start it; ``201`` with its status (``error``
  with a message naming the way forward when its server cannot be started or reached).
- ``GET``, ``PATCH`` (admin), ``DELETE`` (admin) ``/connections/{id}``;
  ``POST /connections/{id}/refresh`` (admin) lists its tools again;
  ``GET /connections/{id}/tools`` lists them with their safety classes and overrides.
- ``POST /connections/{id}/authorize`` (admin): sign in to an HTTP server that requires
  authorization (OAuth 2.1 with PKCE, discovered from the server): the answer's
  ``status.authorize`` is the URL for that admin's browser; ``GET /oauth/callback`` (no token:
  the browser comes back from the authorization server) finishes it, checked by its
  ``state``. Adding, changing or refreshing such a connection starts a sign-in the same way.
- ``GET /activity`` (admin): who changed which connection, when, and what, newest first.

Secrets are write-only: a response lists the names of the secrets set (``secretsSet``), never a
value. Launch details (command, environment, URL, headers) and the server's own
``instructions`` are shown to admins only.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Mapping
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from .._util import iso
from ..connections.oauth import SignInUnknown
from ..errors import BadRequest, Forbidden
from ..policy import SAFETY_CLASSES, ToolHints, classify
from ..policy.rules import GateRules
from ..runtime.connected import ConnectionHub, ConnectionTool, Signer
from ..runtime.tools import ToolSet
from ..runtime.turn import Principal
from ..store.connections import ActivityRecord, ConnectionRecord
from ..store.paging import Page, Position
from .auth import Caller
from .bodies import NO_BODY, read_json, runtime_of
from .body_check import BodyCheck
from .connection_schemas import (
    ACTIVITY_SCHEMA,
    APP_SCHEMA,
    CONNECTION_CREATE_SCHEMA,
    CONNECTION_SCHEMA,
    CONNECTION_UPDATE_SCHEMA,
    STATUS_SCHEMA,
    TIMEOUT_MAX,
    TOOL_SCHEMA,
)
from .openapi import body, json_ok, problems
from .paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, paged_ok, paged_response
from .problems import html_page, ok

__all__ = [
    "CONNECTION_CREATE_SCHEMA",
    "CONNECTION_SCHEMA",
    "CONNECTION_UPDATE_SCHEMA",
    "AdminRequired",
    "add_connection_routes",
    "hub_of",
]

ConnectionId = Annotated[
    str,
    Path(
        alias="id",
        description="The connection's id (a saved one's 24 hex characters, or a configured "
        "one's id such as local:helper).",
    ),
]
ACTIVITY_LIST: Final = "activity"
CONNECTIONS_LIST: Final = "connections"
#: Where the configuration's connections sort in the list: after every saved one.
CONFIGURED_AT: Final = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


class AdminRequired(Forbidden):
    """Only an admin may change connections or read the activity log."""


def hub_of(request: Request) -> ConnectionHub:
    """The app's connection hub (made by its lifespan)."""
    hub: ConnectionHub = request.app.state.connections
    return hub


def _admin(principal: Principal, what: str) -> None:
    if not principal.is_admin:
        raise AdminRequired(f"Only an admin may {what}.", code="ADMIN_REQUIRED")


# --- bodies ---------------------------------------------------------------------------------

_CREATE: Final = BodyCheck(CONNECTION_CREATE_SCHEMA)
_UPDATE: Final = BodyCheck(CONNECTION_UPDATE_SCHEMA)


def _invalid(fields: Mapping[str, str]) -> BadRequest:
    return BadRequest(
        "Validation failed",
        "The body does not fit the connection's schema. See fields.",
        code="body-validation-failed",
        fields=dict(sorted(fields.items())),
    )


async def _body(request: Request, check: BodyCheck) -> dict[str, Any]:
    data = await read_json(request, invalid=lambda message: _invalid({"body": message}))
    if data is NO_BODY:
        data = {}
    fields = check.field_errors(data)
    if isinstance(data, dict):
        for name in check.schema.get("required", ()):
            if data.get(name) is None:
                fields.setdefault(name, "is required")
    if not fields:
        _nested(data, fields, nullable=check is _UPDATE)
    if fields:
        raise _invalid(fields)
    out: dict[str, Any] = data
    return out


def _nested(data: Mapping[str, Any], fields: dict[str, str], *, nullable: bool) -> None:
    """What the compiled check leaves to the route: values inside maps and lists."""
    for key in ("settings", "secrets"):
        for name, value in (data.get(key) or {}).items():
            if not (isinstance(value, str) or (nullable and value is None)):
                fields[f"{key}.{name}"] = "must be a string" + (" or null" if nullable else "")
    for tool, safety in (data.get("overrides") or {}).items():
        if safety not in SAFETY_CLASSES:
            fields[f"overrides.{tool}"] = f"must be one of {', '.join(SAFETY_CLASSES)}"
    for index, agent in enumerate(data.get("agents") or []):
        if not isinstance(agent, str):
            fields[f"agents[{index}]"] = "must be a string"
    timeout = data.get("timeout")
    if timeout is not None and not (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and 1 <= timeout <= TIMEOUT_MAX
    ):
        fields["timeout"] = f"must be a number of seconds from 1 to {TIMEOUT_MAX}"
    mcp = data.get("mcp")
    if isinstance(mcp, Mapping):
        for index, arg in enumerate(mcp.get("args") or []):
            if not isinstance(arg, str):
                fields[f"mcp.args[{index}]"] = "must be a string"
        for key in ("env", "headers"):
            part = mcp.get(key)
            if part is not None and not isinstance(part, Mapping):
                fields[f"mcp.{key}"] = "must be an object of strings"
                continue
            for name, value in (part or {}).items():
                if not isinstance(value, str):
                    fields[f"mcp.{key}.{name}"] = "must be a string"
        for key in ("command", "url"):
            if key in mcp and not isinstance(mcp[key], str):
                fields[f"mcp.{key}"] = "must be a string"
        if "args" in mcp and not isinstance(mcp["args"], list):
            fields["mcp.args"] = "must be a list of strings"


# --- views ----------------------------------------------------------------------------------


def connection_json(
    hub: ConnectionHub, record: ConnectionRecord, *, admin: bool, viewer: str | None = None
) -> dict[str, Any]:
    """A saved connection as a response shows it (never a secret's value); the sign-in URL
    of a server that waits on one only to the admin (`viewer`) who started it."""
    definition = hub.catalog.get(record.app)
    settings = dict(record.settings)
    if not admin:
        public = {f.key for f in definition.config if f.public} if definition else set()
        settings = {k: v for k, v in settings.items() if k in public}
    status: dict[str, Any] = {
        "state": record.status.get("state", "starting"),
        "toolCount": record.status.get("toolCount", 0),
        "listedAt": record.status.get("listedAt"),
    }
    if record.status.get("message"):
        status["message"] = record.status["message"]
    if record.status.get("signIn"):
        status["signIn"] = record.status["signIn"]
    if viewer is not None and admin:
        sign_in = hub.pending_sign_in(record.id, viewer)
        if sign_in is not None:
            status["authorize"] = sign_in.authorize_url
    out: dict[str, Any] = {
        "id": record.id,
        "app": record.app,
        "name": record.name,
        "kind": record.kind,
        "settings": settings,
        "secretsSet": list(record.secret_keys),
        "trusted": record.trusted,
        "agents": None if record.agents is None else list(record.agents),
        "overrides": dict(record.overrides),
        "approvals": record.approvals,
        "status": status,
        "source": "saved",
        "readOnly": False,
        "toolPrefix": record.prefix,
        "protocol": record.protocol,
        "timeout": record.call_timeout,
        "agentInstructions": record.agent_instructions,
        "created": iso(record.created),
        "updated": iso(record.updated),
    }
    if admin:
        if record.launch is not None and record.kind == "actions":
            out["actions"] = record.launch.get("actions")
        elif record.launch is not None:
            out["mcp"] = record.launch
        out["serverInstructions"] = record.server_instructions
    return out


def config_connection_json(
    connection_id: str, tool_set: ToolSet, agents: list[str]
) -> dict[str, Any]:
    """A connection of the configuration file (read-only here)."""
    return {
        "id": connection_id,
        "app": "config",
        "name": tool_set.name,
        "kind": "python" if connection_id.startswith("local:") else "actions",
        "settings": {},
        "secretsSet": [],
        "trusted": tool_set.trusted,
        "agents": agents,
        "overrides": {},
        "status": {"state": "connected", "toolCount": len(tool_set.tools), "listedAt": None},
        "source": "config",
        "readOnly": True,
    }


def tools_json(record: ConnectionRecord | None, tool_set: ToolSet | None) -> list[dict[str, Any]]:
    """Each tool: its name, the name the model calls, its annotations, class and override."""
    out: list[dict[str, Any]] = []
    if tool_set is None:
        return out
    trusted = tool_set.trusted
    for tool in tool_set.tools.values():
        hints = tool.hints
        name = tool.server_name if isinstance(tool, ConnectionTool) else tool.name
        override = record.overrides.get(name) if record is not None else None
        out.append(
            {
                "name": name,
                "title": tool.title,
                "modelName": tool.name,
                "description": tool.description,
                "annotations": hints.to_annotations(),
                "safetyClass": tool.safety(trusted=trusted),
                "hintsClass": classify(hints, trusted=trusted),
                "override": override,
                "rules": _rules_json(tool.rules),
            }
        )
    if record is not None:
        listed = {t.get("name") for t in record.tools}
        offered = {entry["name"] for entry in out}
        for data in record.tools:
            server_name = str(data.get("name"))
            if server_name in offered or server_name not in listed:
                continue
            hints = ToolHints.from_annotations(data.get("annotations"))
            out.append(
                {
                    "name": server_name,
                    "title": data.get("title"),
                    "modelName": None,
                    "description": data.get("description") or "",
                    "annotations": hints.to_annotations(),
                    "safetyClass": classify(hints, trusted=trusted),
                    "hintsClass": classify(hints, trusted=trusted),
                    "override": record.overrides.get(server_name),
                    "rules": None,
                }
            )
    return out


def _rules_json(rules: GateRules | None) -> dict[str, Any] | None:
    """A tool's gate rules as a response shows them (None: it names none)."""
    if rules is None or rules.empty:
        return None
    return {
        "approvers": list(rules.approvers),
        "quorum": rules.quorum,
        "expiresAfter": rules.expires_after,
        "remindAfter": rules.remind_after,
    }


def _activity_json(record: ActivityRecord) -> dict[str, Any]:
    return record.to_json()


# --- routes ---------------------------------------------------------------------------------


def _signer(request: Request, principal: Principal) -> Signer:
    """The admin making the change, and the callback URL their browser comes back to."""
    return Signer(user_id=principal.user_id, redirect_uri=str(request.url_for("finishSignIn")))


def _shown(hub: ConnectionHub, record: ConnectionRecord, principal: Principal) -> dict[str, Any]:
    return connection_json(hub, record, admin=principal.is_admin, viewer=principal.user_id)


async def list_catalog(request: Request, principal: Caller) -> JSONResponse:
    hub = hub_of(request)
    return ok(request, [definition.to_json() for definition in hub.catalog])


async def list_connections(
    request: Request, principal: Caller, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> Response:
    """A page of the saved connections the caller may read, oldest first; the last page ends
    with the configuration file's."""
    hub = hub_of(request)
    agents = sorted(runtime_of(request).agents)
    after = decode_cursor(cursor, CONNECTIONS_LIST, principal.user_id)
    # Each item with its place in the list: a saved one by (created, id), then the
    # configuration's in their order (after every saved one).
    items: list[tuple[Position, Any]] = [
        (Position(at=record.created, id=record.id), record)
        for record in hub.visible_to(principal, agents)
    ]
    for index, entry in enumerate(hub.config_connections().items()):
        items.append((Position(at=CONFIGURED_AT, id=f"{index:024x}"), entry))
    if after is not None:
        items = [item for item in items if (item[0].at, item[0].id) > (after.at, after.id)]
    following = items[limit - 1][0] if len(items) > limit else None

    def shown(item: tuple[Position, Any]) -> dict[str, Any]:
        value = item[1]
        if isinstance(value, ConnectionRecord):
            return connection_json(hub, value, admin=principal.is_admin, viewer=principal.user_id)
        connection_id, (tool_set, used_by) = value
        return config_connection_json(connection_id, tool_set, used_by)

    return await paged_response(
        request,
        Page(items=items[:limit], next=following),
        shown,
        list_name=CONNECTIONS_LIST,
        user_id=principal.user_id,
        limit=limit,
    )


async def create_connection(request: Request, principal: Caller) -> JSONResponse:
    _admin(principal, "add connections")
    data = await _body(request, _CREATE)
    hub = hub_of(request)
    record = await hub.create(principal, data, signer=_signer(request, principal))
    return ok(request, _shown(hub, record, principal), status_code=201)


async def _readable(request: Request, principal: Principal, connection_id: str) -> Any:
    """The saved record (or None for a configured connection) the caller may read."""
    hub = hub_of(request)
    config = hub.config_connections().get(connection_id)
    if config is not None:
        return None, config
    record = await hub.record_of(connection_id)
    if not principal.is_admin and record.agents is not None:
        agents = set(runtime_of(request).agents)
        if not agents & set(record.agents):
            raise AdminRequired("No agent you use may use this connection.")
    return record, None


async def get_connection(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    record, config = await _readable(request, principal, connection_id)
    if config is not None:
        return ok(request, config_connection_json(connection_id, config[0], config[1]))
    return ok(request, _shown(hub_of(request), record, principal))


async def update_connection(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    _admin(principal, "change connections")
    data = await _body(request, _UPDATE)
    hub = hub_of(request)
    record = await hub.update(principal, connection_id, data, signer=_signer(request, principal))
    return ok(request, _shown(hub, record, principal))


async def delete_connection(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    _admin(principal, "remove connections")
    await hub_of(request).delete(principal, connection_id)
    return ok(request, {"id": connection_id, "deleted": True})


async def refresh_connection(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    _admin(principal, "refresh connections")
    hub = hub_of(request)
    record = await hub.refresh(principal, connection_id, signer=_signer(request, principal))
    return ok(request, _shown(hub, record, principal))


async def authorize_connection(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    _admin(principal, "sign in to connections")
    hub = hub_of(request)
    record = await hub.authorize(principal, connection_id, signer=_signer(request, principal))
    return ok(request, _shown(hub, record, principal))


async def finish_sign_in(
    request: Request,
    state: Annotated[str | None, Query(max_length=512)] = None,
    code: Annotated[str | None, Query(max_length=4096)] = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
    error_description: Annotated[str | None, Query(max_length=1000)] = None,
    iss: Annotated[str | None, Query(max_length=2048)] = None,
) -> Response:
    """The browser comes back from the authorization server. No token: the ``state`` names
    the sign-in (only the admin who started it was given it), and is good once."""
    hub = hub_of(request)
    browser = "text/html" in request.headers.get("accept", "")
    try:
        record = await hub.finish_sign_in(
            state, code=code, error=error, error_description=error_description, iss=iss
        )
    except SignInUnknown as exc:
        if not browser:
            raise
        # The admin's tab, reloaded or opened late: a page that says why, not problem JSON.
        return _sign_in_page("Signing in did not work", exc.detail, status=400)
    status = record.status
    if browser:
        if status.get("state") == "connected":
            title = f"Signed in to {record.name}"
            text = "handrail can use this connection now. You can close this tab."
        else:
            title = f"Signing in to {record.name} did not work"
            text = (status.get("message") or "The connection is not connected.") + (
                " Close this tab and try again from the Connections page."
            )
        return _sign_in_page(title, text)
    data = {
        "id": record.id,
        "name": record.name,
        "status": {k: v for k, v in status.items() if k in STATUS_SCHEMA["properties"]},
    }
    return ok(request, data)


def _sign_in_page(title: str, text: str, *, status: int = 200) -> HTMLResponse:
    """What the admin's browser tab shows when the sign-in comes back."""
    return html_page(title, f"<p>{html.escape(text)}</p>", status=status)


async def list_connection_tools(
    request: Request, principal: Caller, connection_id: ConnectionId
) -> JSONResponse:
    record, config = await _readable(request, principal, connection_id)
    hub = hub_of(request)
    if config is not None:
        return ok(request, tools_json(None, config[0]))
    return ok(request, tools_json(record, hub.tool_set_of(record.id)))


async def list_activity(
    request: Request, principal: Caller, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> Response:
    _admin(principal, "read the activity log")
    after = decode_cursor(cursor, ACTIVITY_LIST, principal.user_id)
    page = await hub_of(request).activity_page(limit=limit, after=after)
    return await paged_response(
        request,
        page,
        _activity_json,
        list_name=ACTIVITY_LIST,
        user_id=principal.user_id,
        limit=limit,
    )


_NO_SIGN_IN: Final = (
    "The state names no sign-in under way (wrong, used or expired); a browser that asks for "
    "HTML gets a page that says so."
)
_NOTES: Final = {
    403: "Only an admin may do this (or read this connection).",
    404: "No connection has that id.",
    409: "The connection comes from the configuration file, changed meanwhile, or its name "
    "is too much like another's.",
}


def add_connection_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/catalog``, ``<prefix>/connections...`` and ``<prefix>/activity``."""

    def route(path: str, endpoint: Any, method: str, name: str, summary: str, **extra: Any) -> None:
        router.add_api_route(
            prefix + path,
            endpoint,
            methods=[method],
            name=name,
            operation_id=name,
            tags=["connections"],
            summary=summary,
            **extra,
        )

    array = {"type": "array", "items": CONNECTION_SCHEMA}
    route(
        "/catalog",
        list_catalog,
        "GET",
        "listCatalog",
        "The app definitions connections are made from",
        responses={**json_ok({"type": "array", "items": APP_SCHEMA}, "The apps."), **problems()},
    )
    route(
        "/connections",
        list_connections,
        "GET",
        "listConnections",
        "The connections the caller may read: saved ones (oldest first, a page at a time), "
        "then the configuration's",
        responses={**paged_ok(array, "A page of the connections."), **problems(400)},
    )
    route(
        "/connections",
        create_connection,
        "POST",
        "createConnection",
        "Save a connection and start it (admin)",
        status_code=201,
        responses={
            **json_ok(CONNECTION_SCHEMA, "Saved, with how its start went.", status=201),
            **problems(400, 403, 409, 413, notes=_NOTES),
        },
        openapi_extra=body(CONNECTION_CREATE_SCHEMA),
    )
    route(
        "/connections/{id}",
        get_connection,
        "GET",
        "getConnection",
        "One connection",
        responses={
            **json_ok(CONNECTION_SCHEMA, "The connection."),
            **problems(403, 404, notes=_NOTES),
        },
    )
    route(
        "/connections/{id}",
        update_connection,
        "PATCH",
        "updateConnection",
        "Change a saved connection (admin); its server starts again when needed",
        responses={
            **json_ok(CONNECTION_SCHEMA, "The changed connection."),
            **problems(400, 403, 404, 409, 413, notes=_NOTES),
        },
        openapi_extra=body(CONNECTION_UPDATE_SCHEMA),
    )
    route(
        "/connections/{id}",
        delete_connection,
        "DELETE",
        "deleteConnection",
        "Remove a saved connection (admin): its tools leave the next turn",
        responses={
            **json_ok(
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "deleted": {"const": True}},
                    "required": ["id", "deleted"],
                },
                "Removed.",
            ),
            **problems(403, 404, 409, notes=_NOTES),
        },
    )
    route(
        "/connections/{id}/refresh",
        refresh_connection,
        "POST",
        "refreshConnection",
        "List a saved connection's tools again (admin)",
        responses={
            **json_ok(CONNECTION_SCHEMA, "The connection, listed again."),
            **problems(403, 404, 409, notes=_NOTES),
        },
    )
    route(
        "/connections/{id}/authorize",
        authorize_connection,
        "POST",
        "authorizeConnection",
        "Sign in to a saved HTTP connection's server (admin): OAuth, in the admin's browser",
        responses={
            **json_ok(
                CONNECTION_SCHEMA,
                "The connection: status.authorize is the URL to open while it waits.",
            ),
            **problems(400, 403, 404, 409, notes=_NOTES),
        },
    )
    signed_in = json_ok(
        {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "name": {"type": "string"},
                "status": STATUS_SCHEMA,
            },
            "required": ["id", "name", "status"],
        },
        "How the sign-in went: JSON, or a page for a browser (`Accept: text/html`).",
    )
    signed_in[200]["content"]["text/html"] = {"schema": {"type": "string"}}
    not_signed_in = {
        status: entry
        for status, entry in problems(400, notes={400: _NO_SIGN_IN}).items()
        if status != 401  # it takes no token
    }
    not_signed_in[400]["content"]["text/html"] = {"schema": {"type": "string"}}
    route(
        "/oauth/callback",
        finish_sign_in,
        "GET",
        "finishSignIn",
        "Where the browser comes back from an authorization server (no token: checked by state)",
        responses={**signed_in, **not_signed_in},
        openapi_extra={"security": []},
    )
    route(
        "/connections/{id}/tools",
        list_connection_tools,
        "GET",
        "listConnectionTools",
        "A connection's tools with their safety classes and overrides",
        responses={
            **json_ok({"type": "array", "items": TOOL_SCHEMA}, "The tools."),
            **problems(403, 404, notes=_NOTES),
        },
    )
    route(
        "/activity",
        list_activity,
        "GET",
        "listActivity",
        "What admins changed, newest first (admin)",
        responses={
            **paged_ok({"type": "array", "items": ACTIVITY_SCHEMA}, "A page of the log."),
            **problems(400, 403, notes=_NOTES),
        },
    )
