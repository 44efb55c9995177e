"""The OpenAPI document: the schemas of the bodies the routes read and send, and the helpers the
routes use to point at them.

The ask-protocol schemas (``TurnRequest``, ``TurnResult``, ``PendingAsk``, ``SimpleCard``...)
come from the published JSON Schema documents of `handrail.asks.schemas`, so the OpenAPI
document and the files clients generate code from never disagree. ``pendingAsk`` is
``readOnly`` in ``History``; ``promptIndex`` and ``responseMessages`` are in no schema.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from .._version import __version__
from ..asks import ASK_KINDS, ASK_SURFACES, ask_json_schemas
from ..store import EVENT_KINDS
from .auth import BEARER_SCHEME

__all__ = [
    "EDITED_ARGUMENTS",
    "PROBLEM_REF",
    "body",
    "component_schemas",
    "install_openapi",
    "json_ok",
    "problems",
    "ref",
]

REF_PREFIX: Final = "#/components/schemas/"
JsonSchema = dict[str, Any]


def ref(name: str) -> JsonSchema:
    return {"$ref": REF_PREFIX + name}


PROBLEM_REF: Final = ref("Problem")

#: The edit-then-approve extension of an answer, said on each route the owner answers through.
EDITED_ARGUMENTS: Final = (
    " An approval (origin approval) or a confirmation (origin confirmation) may be approved with "
    'edited arguments: `{"action": "accept", "content": {"confirmed": true, "arguments": '
    "{...}}}`. They are checked against the tool's input schema (400 with `fields` "
    "`content.arguments.<name>` otherwise, the ask still pending); an approval runs the tool "
    "once with them, an edited confirmation is prepared again as a new confirmation."
)

_STATUS_TEXT: Final = {
    400: "The request is not valid; see title, code and fields.",
    401: "No bearer token, or one this server does not know.",
    403: "The history belongs to another user.",
    404: "No such history (or it was deleted).",
    409: "The ask is no longer pending.",
    413: "The body or file is larger than the server accepts.",
    500: "The server failed; quote the requestId.",
    503: "The database's connection was lost (`database-unavailable`; a change may have been "
    "saved, so read before sending it again) or a disk is full (`storage-full`; nothing was "
    "saved). Send the request again after `Retry-After` seconds.",
}


def problems(*statuses: int, notes: dict[int, str] | None = None) -> dict[int | str, Any]:
    """The ``responses`` entries of the problem JSON errors a route returns."""
    notes = notes or {}
    out: dict[int | str, Any] = {}
    for status in (*statuses, 401, 500, 503):
        out[status] = {
            "description": notes.get(status, _STATUS_TEXT.get(status, "An error.")),
            "content": {"application/problem+json": {"schema": PROBLEM_REF}},
        }
    return out


def json_ok(data: JsonSchema, description: str, status: int = 200) -> dict[int | str, Any]:
    """The success entry of ``responses``: ``{data, requestId}`` with `data`."""
    return {
        status: {
            "description": description,
            "content": {"application/json": {"schema": envelope(data)}},
        }
    }


def envelope(data: JsonSchema) -> JsonSchema:
    return {
        "type": "object",
        "properties": {"data": data, "requestId": ref("RequestId")},
        "required": ["data", "requestId"],
    }


def body(schema: JsonSchema, *, required: bool = True, media: str = "application/json") -> Any:
    """An ``openapi_extra`` that documents a request body the route reads itself."""
    return {"requestBody": {"required": required, "content": {media: {"schema": schema}}}}


def _strip(document: JsonSchema) -> JsonSchema:
    schema = copy.deepcopy(document)
    schema.pop("$schema", None)
    return schema


def _ask_components() -> dict[str, JsonSchema]:
    documents = ask_json_schemas()
    turn_request = _strip(documents["turnRequest"])
    turn_result = _strip(documents["turnResponse"]["properties"]["data"])
    pending = _strip(documents["pendingAsksResponse"]["properties"]["data"]["items"])
    card = _strip(documents["simpleCard"])
    card["title"] = "SimpleCard"
    ask_answer = copy.deepcopy(turn_request["properties"]["askResponse"])
    return {
        "TurnRequest": turn_request,
        "TurnResult": turn_result,
        "PendingAsk": pending,
        "InboxItem": _inbox_item(pending),
        "SimpleCard": card,
        "AskAnswer": ask_answer,
    }


def _inbox_item(pending: JsonSchema) -> JsonSchema:
    """An item of ``GET /inbox``: a ``pendingAsks`` item, the conversation's agent, and the ask
    as the history view shows it."""
    item = copy.deepcopy(pending)
    item["title"] = "InboxItem"
    item["description"] = (
        "A pendingAsks item (a gate as a plain ask of its kind), with the conversation's agent "
        "and the ask as the history view shows it (origin, expiresAt, toolName...)."
    )
    item.pop("additionalProperties", None)
    item["properties"] = {
        **item.get("properties", {}),
        "agent": {"type": "string", "description": "The conversation's agent."},
        "pendingAsk": ref("StoredPendingAsk"),
    }
    item["required"] = [*item.get("required", []), "agent", "pendingAsk"]
    return item


def _problem() -> JsonSchema:
    return {
        "title": "Problem",
        "type": "object",
        "description": "An error (media type application/problem+json).",
        "properties": {
            "status": {"type": "integer", "description": "The HTTP status."},
            "title": {"type": "string", "description": "What went wrong, as the spec names it."},
            "detail": {"type": "string", "description": "What went wrong here, and the fix."},
            "code": {"type": "string", "description": "A stable code, when the error has one."},
            "fields": {
                "description": "The errors per field: a map of field to message for a body "
                "of the wrong shape, or a list of {path, code, message, fix} for an answer "
                "that fails validation.",
                "oneOf": [
                    {"type": "object", "additionalProperties": {"type": "string"}},
                    {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string"},
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                                "fix": {"type": "string"},
                            },
                            "required": ["path", "code", "message", "fix"],
                        },
                    },
                ],
            },
            "requestId": ref("RequestId"),
        },
        "required": ["status", "title", "detail", "requestId"],
    }


def _stored_pending_ask() -> JsonSchema:
    return {
        "title": "StoredPendingAsk",
        "type": "object",
        "description": "The ask the conversation waits on. Only a chat turn writes it.",
        "properties": {
            "toolCallId": {"type": "string", "description": "Answers must name it."},
            "kind": {"type": "string", "enum": list(ASK_KINDS)},
            "input": {"type": "object", "description": "The validated ask input."},
            "simple": ref("SimpleCard"),
            "created": {"type": "string", "format": "date-time"},
            "origin": {
                "type": "string",
                "description": '"approval" for an approval ask; unset when the model asked.',
            },
            "toolName": {"type": "string", "description": "An approval ask's host tool."},
            "approvalId": {"type": "string"},
            "preview": {"description": "A confirmation's preview of the prepared request."},
            "expiresAt": {"type": "string", "format": "date-time"},
        },
        "required": ["toolCallId", "kind", "input", "simple", "created"],
    }


def _history(with_rows: bool) -> JsonSchema:
    properties: JsonSchema = {
        "id": {"type": "string", "readOnly": True},
        "userId": {"type": "string", "readOnly": True, "description": "The owner."},
        "agent": {"type": "string", "description": "The agent that answers in it."},
        "title": {"type": ["string", "null"]},
        "created": {"type": "string", "format": "date-time", "readOnly": True},
        "updated": {"type": "string", "format": "date-time", "readOnly": True},
        "pendingAsk": {
            "readOnly": True,
            "description": "The ask the conversation waits on, or null. Read-only: create and "
            "update drop it.",
            "oneOf": [ref("StoredPendingAsk"), {"type": "null"}],
        },
    }
    required = ["id", "userId", "agent", "title", "created", "updated", "pendingAsk"]
    if with_rows:
        properties["rows"] = {
            "type": "array",
            "readOnly": True,
            "items": ref("HistoryRow"),
            "description": "The conversation's rows, oldest first.",
        }
        required.append("rows")
        properties["running"] = {
            "readOnly": True,
            "description": "The turn running on the conversation now (in any server process), "
            "or null: what it does, as its last turn.progress event said.",
            "oneOf": [ref("RunningTurn"), {"type": "null"}],
        }
        required.append("running")
    return {
        "title": "History" if with_rows else "HistorySummary",
        "type": "object",
        "properties": properties,
        "required": required,
    }


def _running_turn() -> JsonSchema:
    return {
        "title": "RunningTurn",
        "type": "object",
        "description": "A turn running now: what it does, as its last turn.progress event "
        "said, and since when.",
        "properties": {
            "turnId": {
                "type": "string",
                "description": "The turn's id, as in the data of its turn.* events.",
            },
            "phase": {
                "type": "string",
                "enum": ["starting", "thinking", "tool", "stopping"],
                "description": "starting (before its first turn.progress), thinking (a model "
                "step), tool (a tool runs), stopping (Stop was pressed).",
            },
            "tool": {
                "type": "object",
                "description": "In phase tool: the tool that runs.",
                "properties": {
                    "toolName": {"type": "string", "description": "The name the model called."},
                    "toolTitle": {
                        "type": "string",
                        "description": "What a person reads for the tool: its declared title, "
                        "else one made from its name (create_invoice: Create invoice).",
                    },
                    "toolCallId": {"type": "string"},
                },
                "required": ["toolName", "toolTitle", "toolCallId"],
            },
            "since": {
                "type": "string",
                "format": "date-time",
                "description": "When the turn entered this phase.",
            },
        },
        "required": ["turnId", "phase", "since"],
    }


def _row() -> JsonSchema:
    return {
        "title": "HistoryRow",
        "type": "object",
        "description": "One row: user or assistant text (text), a tool call (toolName, "
        "toolCallId, args, and ask: {kind, status, origin?} for an ask), or a tool result "
        "(toolName, toolCallId, result, isError?).",
        "properties": {
            "type": {"type": "string", "enum": ["user", "assistant", "tool-call", "tool-result"]},
            "text": {"type": "string"},
            "toolName": {"type": "string"},
            "toolCallId": {"type": "string"},
            "args": {},
            "result": {},
            "isError": {"type": "boolean"},
            "ask": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(ASK_KINDS)},
                    "status": {"type": "string", "enum": ["pending", "answered", "cancelled"]},
                    "origin": {"type": "string"},
                },
            },
            "created": {"type": "string", "format": "date-time"},
        },
        "required": ["type", "created"],
        "additionalProperties": True,
    }


def _agent_field(agents: Sequence[str]) -> JsonSchema:
    field: JsonSchema = {
        "type": "string",
        "description": "The agent of a new conversation (default: the first agent).",
    }
    if agents:
        field["enum"] = list(agents)
    return field


def _history_write(create: bool, agents: Sequence[str]) -> JsonSchema:
    properties: JsonSchema = {
        "title": {
            "type": ["string", "null"],
            "maxLength": 200,
            "pattern": "\\S",
            "description": "The title (not blank; trimmed); null clears it.",
        }
    }
    if create:
        properties["agent"] = _agent_field(agents)
    return {
        "title": "HistoryCreate" if create else "HistoryUpdate",
        "type": "object",
        "description": "Any field but these is a 400, except the read-only fields of History "
        "(id, userId, created, updated, pendingAsk, rows), which the server ignores.",
        "properties": properties,
        "additionalProperties": False,
    }


def _prompt_request(agents: Sequence[str]) -> JsonSchema:
    return {
        "title": "PromptRequest",
        "type": "object",
        "description": "Send prompt (a new message) or askResponse (an answer to the pending "
        "ask, with historyId), not both.",
        "properties": {
            "prompt": {"type": "string", "minLength": 1},
            "historyId": {
                "type": "string",
                "description": "The conversation; without it a new one is started.",
            },
            "askResponse": ref("AskAnswer"),
            "surface": {"type": "string", "enum": list(ASK_SURFACES)},
            "attachments": {
                "type": "array",
                "maxItems": 0,
                "description": "Not supported yet: send an empty list or leave it out.",
            },
            "agent": _agent_field(agents),
            "pageTools": ref("PageTools"),
        },
        "additionalProperties": False,
        "oneOf": [{"required": ["prompt"]}, {"required": ["askResponse"]}],
        "dependentRequired": {"askResponse": ["historyId"]},
        "dependentSchemas": {"askResponse": {"not": {"required": ["attachments"]}}},
    }


def _page_tools() -> JsonSchema:
    hints = {
        name: {"type": "boolean"}
        for name in (
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
            "consequentialHint",
            "untrustedContentHint",
            "skill",
        )
    }
    tool = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name the model calls it by."},
            "description": {"type": "string"},
            "inputSchema": {"type": "object", "description": "A JSON Schema object."},
            "annotations": {
                "type": "object",
                "properties": hints,
                "description": "The tool's hints; none at all makes it consequential.",
            },
        },
        "required": ["name", "description"],
    }
    return {
        "title": "PageTools",
        "type": "object",
        "description": "The tools a web page registered with WebMCP (navigator.modelContext), "
        "offered for this turn as the connection page:<origin>. Names the model cannot take are "
        "refused and named in the turn's pageTools event. With askResponse it is ignored: the "
        "turn goes on with the tools it started with.",
        "properties": {
            "origin": {
                "type": "string",
                "minLength": 1,
                "description": "The page's origin (scheme, host and port); a browser's Origin "
                "header must match it.",
            },
            "tools": {"type": "array", "maxItems": 64, "items": tool},
        },
        "required": ["origin", "tools"],
        "additionalProperties": False,
    }


def _event() -> JsonSchema:
    def one(name: str, value: JsonSchema, *extra: str) -> JsonSchema:
        properties: JsonSchema = {name: value}
        for key in extra:
            properties[key] = {"type": "string"}
        return {
            "type": "object",
            "properties": properties,
            "required": [name, *extra],
        }

    tool = {
        "type": "object",
        "properties": {
            "toolCallId": {"type": "string"},
            "toolName": {"type": "string"},
            "args": {},
            "result": {},
        },
    }
    ask = {
        "type": "object",
        "properties": {
            "toolCallId": {"type": "string"},
            "kind": {"type": "string", "enum": list(ASK_KINDS)},
            "input": {"type": "object"},
            "simple": ref("SimpleCard"),
            "origin": {"type": "string"},
            "toolName": {"type": "string"},
        },
        "required": ["toolCallId", "kind", "input", "simple"],
    }
    resolved = {
        "type": "object",
        "properties": {
            "toolCallId": {"type": "string"},
            "action": {"type": "string", "enum": ["accept", "decline", "cancel"]},
        },
        "required": ["toolCallId", "action"],
    }
    done = {
        "type": "object",
        "properties": {
            "done": {"const": True},
            "historyId": {"type": "string"},
            "title": {"type": "string"},
            "pendingAsk": {
                "type": "object",
                "properties": {"toolCallId": {"type": "string"}},
                "required": ["toolCallId"],
            },
        },
        "required": ["done", "historyId"],
    }
    return {
        "title": "TurnEvent",
        "description": "One server-sent event: each line is `data: <this JSON>` and a blank line.",
        "oneOf": [
            one("text", {"type": "string"}),
            one("toolCall", tool),
            one("toolResult", tool),
            one("ask", ask, "historyId"),
            one("askResolved", resolved),
            one("error", {"type": "string"}),
            one(
                "pageTools",
                {
                    "type": "object",
                    "description": "At the start of a turn with page tools: the tools offered "
                    "and those refused, each with its reason.",
                    "properties": {
                        "origin": {"type": "string"},
                        "connectionId": {"type": "string"},
                        "offered": {"type": "array", "items": {"type": "string"}},
                        "refused": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "reason": {"type": "string"},
                                },
                                "required": ["name", "reason"],
                            },
                        },
                    },
                    "required": ["origin", "connectionId", "offered", "refused"],
                },
            ),
            done,
        ],
    }


def _user_event() -> JsonSchema:
    return {
        "title": "UserEvent",
        "description": "One change that concerns the user (GET /events): `id: <id>`, then "
        "`data: <this JSON>` and a blank line. `reload` (sent without an id) means events "
        "were missed: read the state again.",
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string", "enum": list(EVENT_KINDS)},
            "userId": {"type": "string"},
            "historyId": {"type": ["string", "null"]},
            "created": {"type": "string", "format": "date-time"},
            "data": {"type": "object"},
            "approvers": {
                "type": "array",
                "items": {"type": "string"},
                "description": "An ask event of a gate with approvers: they hear it too "
                "(user ids, or admins for every admin).",
            },
        },
        "required": ["id", "kind", "userId", "historyId", "created", "data"],
    }


def _uploaded_file() -> JsonSchema:
    return {
        "title": "UploadedFile",
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Answer a files ask with it as fileId."},
            "filename": {"type": "string"},
            "mimeType": {"type": "string"},
            "size": {"type": "integer", "description": "The real byte count."},
        },
        "required": ["id", "filename", "mimeType", "size"],
    }


#: The request bodies a route checks with the schema the document publishes for it.
CHECKED_BODIES: Final = ("HistoryCreate", "HistoryUpdate", "PromptRequest", "TurnRequest")


def _inline(schema: Any, components: Mapping[str, JsonSchema]) -> Any:
    """`schema` with every ``#/components/schemas/...`` reference replaced by its schema."""
    if isinstance(schema, dict):
        target = schema.get("$ref")
        if isinstance(target, str) and target.startswith("#/components/schemas/"):
            return _inline(components[target.rsplit("/", 1)[1]], components)
        return {k: _inline(v, components) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, components) for v in schema]
    return schema


@functools.lru_cache(maxsize=16)
def body_schemas(agents: tuple[str, ...] = ()) -> Mapping[str, JsonSchema]:
    """The published schemas of the checked request bodies, references inlined."""
    components = component_schemas(agents)
    return {name: _inline(components[name], components) for name in CHECKED_BODIES}


def component_schemas(agents: Sequence[str] = ()) -> dict[str, JsonSchema]:
    """Every schema the routes refer to, by name. With `agents`, an ``agent`` field of a body
    is one of those names."""
    schemas: dict[str, JsonSchema] = {
        "RequestId": {
            "type": "string",
            "description": "The request's id (also in the X-Request-Id header); quote it when "
            "reporting a problem.",
        },
        "Problem": _problem(),
        "History": _history(with_rows=True),
        "HistorySummary": _history(with_rows=False),
        "HistoryRow": _row(),
        "HistoryCreate": _history_write(create=True, agents=agents),
        "HistoryUpdate": _history_write(create=False, agents=agents),
        "StoredPendingAsk": _stored_pending_ask(),
        "RunningTurn": _running_turn(),
        "PromptRequest": _prompt_request(agents),
        "PageTools": _page_tools(),
        "TurnEvent": _event(),
        "UserEvent": _user_event(),
        "UploadedFile": _uploaded_file(),
        **_ask_components(),
    }
    return dict(sorted(schemas.items()))


def _tidy(document: JsonSchema) -> None:
    """Undo two FastAPI defaults: the 422 it adds to routes with parameters (handrail answers
    400 problem JSON), and the schema keys it merges next to a ``$ref`` of a stream."""
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            responses = operation.get("responses", {})
            responses.pop("422", None)
            for response in responses.values():
                for media in response.get("content", {}).values():
                    schema = media.get("schema")
                    if isinstance(schema, dict) and "$ref" in schema:
                        media["schema"] = {"$ref": schema["$ref"]}
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


def _used_refs(value: Any, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        target = value.get("$ref")
        if isinstance(target, str) and target.startswith(REF_PREFIX):
            found.add(target.removeprefix(REF_PREFIX))
        for item in value.values():
            _used_refs(item, found)
    elif isinstance(value, list):
        for item in value:
            _used_refs(item, found)
    return found


def build_openapi(app: FastAPI, *, description: str) -> JsonSchema:
    document = get_openapi(
        title="handrail",
        version=__version__,
        summary="Put a person in the loop of an AI agent's tool calls.",
        description=description,
        routes=app.routes,
    )
    _tidy(document)
    components = document.setdefault("components", {})
    runtime = getattr(app.state, "runtime", None)
    available = component_schemas(sorted(runtime.agents) if runtime is not None else ())
    needed = _used_refs(document.get("paths", {}), set())
    # Pull in the schemas the used ones refer to, until nothing new turns up.
    while True:
        more = _used_refs([available[n] for n in needed if n in available], set()) - needed
        if not more:
            break
        needed |= more
    schemas = components.setdefault("schemas", {})
    for name in sorted(needed):
        if name in available:
            schemas[name] = available[name]
    components["schemas"] = dict(sorted(schemas.items()))
    components["securitySchemes"] = {"bearerAuth": dict(BEARER_SCHEME)}
    document["security"] = [{"bearerAuth": []}]
    return document


def install_openapi(app: FastAPI, *, description: str) -> None:
    """Serve the document built by `build_openapi` at ``/openapi.json`` (built once)."""

    def openapi() -> JsonSchema:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, description=description)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
