"""The JSON Schemas of the connection routes: the bodies of ``POST`` and ``PATCH
/connections`` (checked by `BodyCheck`, published in the OpenAPI document) and their answers
(a connection, its status and tools, an app of the catalog, an activity record).
"""

from __future__ import annotations

from typing import Final

from ..connections import CONNECTION_KINDS, PROTOCOL_MODES
from ..policy import SAFETY_CLASSES
from .openapi import JsonSchema

__all__ = [
    "ACTIVITY_SCHEMA",
    "APP_SCHEMA",
    "CONNECTION_CREATE_SCHEMA",
    "CONNECTION_SCHEMA",
    "CONNECTION_UPDATE_SCHEMA",
    "STATUS_SCHEMA",
    "TIMEOUT_MAX",
    "TOOL_SCHEMA",
]

# --- bodies ---------------------------------------------------------------------------------

#: The longest a connection's tool call may take, in seconds.
TIMEOUT_MAX: Final = 600
_STRING_MAP: Final[JsonSchema] = {"type": "object", "additionalProperties": {"type": "string"}}
_NULLABLE_STRING_MAP: Final[JsonSchema] = {
    "type": "object",
    "additionalProperties": {"type": ["string", "null"]},
}
_MCP: Final[JsonSchema] = {
    "type": "object",
    "description": 'How to start a custom server: {"command", "args", "env"} (mcp-stdio), or '
    'reach it: {"url", "headers"} (mcp-http). Values may hold ${config.<key>} and (in env and '
    "headers only) ${secret.<key>}.",
    "properties": {
        "command": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}, "maxItems": 100},
        "env": _STRING_MAP,
        "url": {"type": "string", "minLength": 1},
        "headers": _STRING_MAP,
    },
    "additionalProperties": False,
}
_COMMON: Final[dict[str, JsonSchema]] = {
    "name": {
        "type": "string",
        "minLength": 1,
        "maxLength": 80,
        "pattern": "\\S",
        "description": "Its name; a short form of it prefixes its tools' names.",
    },
    "trusted": {
        "type": "boolean",
        "description": "Whether its tools' hints are believed (untrusted: consequential).",
    },
    "agents": {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "maxItems": 100,
        "description": "The agents that may use it (null: every agent).",
    },
    "overrides": {
        "type": "object",
        "additionalProperties": {"type": "string", "enum": list(SAFETY_CLASSES)},
        "description": "A safety class per tool (the server's tool name), set by an admin.",
    },
    "approvals": {
        "type": ["object", "null"],
        "description": 'Who must approve its tools\' calls: {"approvers"?: [user ids or '
        '"admins"], "quorum"? (default 1), "expiresAfter"?, "remindAfter"? (seconds), '
        "\"tools\"?: {<the server's tool name>: the same keys}}. A tool's entry goes over the "
        "connection's values; null removes the setting.",
    },
    "protocol": {"type": "string", "enum": list(PROTOCOL_MODES)},
    "timeout": {
        "type": ["number", "null"],
        "description": f"Seconds a tool call may take (1-{TIMEOUT_MAX}; null: the server's "
        "default).",
    },
    "mcp": _MCP,
    "agentInstructions": {
        "type": ["object", "null"],
        "description": 'Guidance for the agents that use it: {"enabled", "text" (trimmed, '
        '1-2000 characters), "template"?: {"id", "version"}}, or null for none. Disabling '
        "keeps the text. Left out on create: its app's template, enabled.",
        "properties": {
            "enabled": {"type": "boolean"},
            "text": {"type": "string"},
            "template": {
                "type": ["object", "null"],
                "properties": {"id": {"type": "string"}, "version": {"type": "integer"}},
            },
        },
    },
}

CONNECTION_CREATE_SCHEMA: Final[JsonSchema] = {
    "title": "ConnectionCreate",
    "type": "object",
    "properties": {
        "app": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "description": "A catalog slug, or custom.",
        },
        **_COMMON,
        "settings": _STRING_MAP,
        "secrets": _STRING_MAP,
        "kind": {"type": "string", "enum": list(CONNECTION_KINDS)},
        "actions": {
            "type": "string",
            "minLength": 1,
            "description": "A custom actions connection's action set file, on the server.",
        },
    },
    "required": ["app", "name"],
    "additionalProperties": False,
}

CONNECTION_UPDATE_SCHEMA: Final[JsonSchema] = {
    "title": "ConnectionUpdate",
    "type": "object",
    "description": "The fields to change. settings and secrets are merged (null removes one).",
    "properties": {
        **_COMMON,
        "settings": _NULLABLE_STRING_MAP,
        "secrets": _NULLABLE_STRING_MAP,
    },
    "additionalProperties": False,
}


# --- responses --------------------------------------------------------------------------------

_ISO: Final[JsonSchema] = {"type": "string", "format": "date-time"}
STATUS_SCHEMA: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "state": {"type": "string", "enum": ["connected", "starting", "error"]},
        "message": {"type": "string", "description": "Why it is in error, and the way forward."},
        "signIn": {
            "type": "string",
            "enum": ["waiting", "needed"],
            "description": "The server requires signing in (OAuth): an admin is signing in "
            "(waiting), or one must (needed: POST /connections/{id}/authorize).",
        },
        "authorize": {
            "type": "string",
            "description": "The URL to open in a browser to sign in; only in answers to the "
            "admin who started the sign-in.",
        },
        "toolCount": {"type": "integer"},
        "listedAt": {"oneOf": [_ISO, {"type": "null"}]},
    },
    "required": ["state", "toolCount", "listedAt"],
}

CONNECTION_SCHEMA: Final[JsonSchema] = {
    "title": "Connection",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "app": {"type": "string", "description": "Its catalog slug, custom, or config."},
        "name": {"type": "string"},
        "kind": {"type": "string"},
        "settings": _STRING_MAP,
        "secretsSet": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The names of the secrets set (never a value).",
        },
        "trusted": {"type": "boolean"},
        "agents": {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "overrides": _STRING_MAP,
        "approvals": {
            "oneOf": [{"type": "object"}, {"type": "null"}],
            "description": "Who must approve its tools' calls (see ConnectionCreate).",
        },
        "status": STATUS_SCHEMA,
        "source": {"type": "string", "enum": ["saved", "config"]},
        "readOnly": {"type": "boolean"},
        "toolPrefix": {"type": "string"},
        "protocol": {"type": "string", "enum": list(PROTOCOL_MODES)},
        "timeout": {"oneOf": [{"type": "number"}, {"type": "null"}]},
        "mcp": {"type": "object", "description": "A custom connection's launch (admins only)."},
        "serverInstructions": {
            "oneOf": [{"type": "string"}, {"type": "null"}],
            "description": "What the server says about itself (admins only; never put into a "
            "prompt).",
        },
        "agentInstructions": {
            "oneOf": [{"type": "object"}, {"type": "null"}],
            "description": '{"enabled", "text", "template"?} or null.',
        },
        "created": _ISO,
        "updated": _ISO,
    },
    "required": [
        "id",
        "app",
        "name",
        "kind",
        "settings",
        "secretsSet",
        "trusted",
        "agents",
        "overrides",
        "status",
        "source",
        "readOnly",
    ],
}

TOOL_SCHEMA: Final[JsonSchema] = {
    "title": "ConnectionTool",
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The server's name of the tool."},
        "title": {
            "oneOf": [{"type": "string"}, {"type": "null"}],
            "description": "Its name in the person's words (the server's title of the tool), "
            "used by the asks about it.",
        },
        "modelName": {
            "oneOf": [{"type": "string"}, {"type": "null"}],
            "description": "The name the model calls (null: not offered, see the status).",
        },
        "description": {"type": "string"},
        "annotations": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "safetyClass": {"type": "string", "enum": list(SAFETY_CLASSES)},
        "hintsClass": {"type": "string", "enum": list(SAFETY_CLASSES)},
        "override": {"oneOf": [{"type": "string", "enum": list(SAFETY_CLASSES)}, {"type": "null"}]},
        "rules": {
            "oneOf": [{"type": "object"}, {"type": "null"}],
            "description": "Who must approve its calls, as the gate applies it: {approvers, "
            "quorum, expiresAfter, remindAfter}, or null for none.",
        },
    },
    "required": ["name", "modelName", "description", "annotations", "safetyClass", "override"],
}

APP_SCHEMA: Final[JsonSchema] = {
    "title": "AppDefinition",
    "type": "object",
    "properties": {
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "kind": {"type": "string", "enum": list(CONNECTION_KINDS)},
        "docsUrl": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        "config": {"type": "array", "items": {"type": "object"}},
        "agentInstructions": {"oneOf": [{"type": "object"}, {"type": "null"}]},
        "mcp": {"type": "object"},
        "actions": {"type": "string"},
    },
    "required": ["slug", "name", "description", "kind", "docsUrl", "config"],
}

ACTIVITY_SCHEMA: Final[JsonSchema] = {
    "title": "Activity",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "actor": {"type": "string"},
        "action": {"type": "string"},
        "subject": {"type": "string"},
        "changes": {"type": "object"},
        "created": _ISO,
    },
    "required": ["id", "actor", "action", "subject", "changes", "created"],
}
