"""The checks of what an admin sends for a saved connection (``POST`` and ``PATCH
/connections``), each problem written into the route's ``fields``, and the errors the
connections' changes raise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..connections import AppDefinition, Catalog, CatalogProblem
from ..connections.catalog import SECRET_TYPES, check_refs
from ..errors import Conflict, InvalidRequest, NotFound
from ..policy import SAFETY_CLASSES
from ..store.connections import ConnectionRecord

__all__ = [
    "CREATE_FIELDS",
    "CUSTOM",
    "ConnectionReadOnly",
    "ConnectionUnknown",
    "InvalidConnection",
    "NameTaken",
    "NoInstructionsTemplate",
    "UnknownApp",
    "agent_names",
    "app_definition",
    "checked_overrides",
    "checked_secrets",
    "checked_settings",
    "custom_launch",
    "invalid",
    "name_taken",
    "problems_json",
    "public_changes",
    "timeout_of",
]

#: The ``app`` of a connection that names its own server or action set file.
CUSTOM: Final = "custom"


class InvalidConnection(InvalidRequest):
    """A connection's settings cannot be used; ``fields`` names each."""


class UnknownApp(InvalidRequest):
    """``app`` names no definition of the catalog."""


class NameTaken(Conflict):
    """Another connection's tools would start with the same prefix (names too much alike)."""


class ConnectionReadOnly(Conflict):
    """A connection from the configuration file: change the file, not the connection."""


class NoInstructionsTemplate(Conflict):
    """The connection's app has no instructions template to reset to."""


class ConnectionUnknown(NotFound):
    """No connection (saved or configured) has that id."""


def app_definition(catalog: Catalog, app: str) -> AppDefinition | None:
    """The catalog's definition `app` names; None for a custom connection."""
    if app == CUSTOM:
        return None
    definition = catalog.get(app)
    if definition is None:
        raise UnknownApp(
            f"No app of the catalog is named {app!r}; the apps are "
            f"{', '.join(catalog.slugs) or 'none'}, or custom.",
            fields={"app": f"must be one of {', '.join([*catalog.slugs, CUSTOM])}"},
        )
    return definition


def custom_launch(
    body: Mapping[str, Any], kind: str, fields: dict[str, str]
) -> dict[str, Any] | None:
    if kind == "actions":
        file = body.get("actions")
        if not isinstance(file, str) or not Path(file).is_file():
            fields["actions"] = "is required: the path of an action set file on the server"
            return None
        return {"actions": file}
    if kind not in ("mcp-stdio", "mcp-http"):
        fields["kind"] = "a custom connection needs kind mcp-stdio, mcp-http or actions"
        return None
    mcp = body.get("mcp")
    if not isinstance(mcp, Mapping):
        fields["mcp"] = (
            'is required: {"command", "args", "env"} for mcp-stdio, {"url", "headers"} for mcp-http'
        )
        return None
    problems = _FieldProblems(fields)
    if kind == "mcp-stdio":
        command = mcp.get("command")
        if not isinstance(command, str) or not command.strip():
            fields["mcp.command"] = "is required: the command that starts the server"
            return None
        for key in ("url", "headers"):
            if key in mcp:
                fields[f"mcp.{key}"] = "is for mcp-http connections"
        args = [str(a) for a in mcp.get("args") or []]
        env = {str(k): str(v) for k, v in (mcp.get("env") or {}).items()}
        check_refs(problems, "mcp.command", command, None, secrets_allowed=False)
        for index, arg in enumerate(args):
            check_refs(problems, f"mcp.args[{index}]", arg, None, secrets_allowed=False)
        for key, value in env.items():
            check_refs(problems, f"mcp.env.{key}", value, None, secrets_allowed=True)
        return {"command": command.strip(), "args": args, "env": env}
    url = mcp.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        fields["mcp.url"] = "is required: the server's streamable HTTP URL (http or https)"
        return None
    for key in ("command", "args", "env"):
        if key in mcp:
            fields[f"mcp.{key}"] = "is for mcp-stdio connections"
    headers = {str(k): str(v) for k, v in (mcp.get("headers") or {}).items()}
    check_refs(problems, "mcp.url", url, None, secrets_allowed=False)
    for key, value in headers.items():
        check_refs(problems, f"mcp.headers.{key}", value, None, secrets_allowed=True)
    return {"url": url, "headers": headers}


def checked_settings(
    definition: AppDefinition | None, values: Mapping[str, Any], fields: dict[str, str]
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        where = f"settings.{key}"
        if definition is not None:
            declared = definition.field(key)
            if declared is None:
                known = ", ".join(f.key for f in definition.config if not f.is_secret)
                fields[where] = f"is not a setting of {definition.slug}; the settings are " + (
                    known or "none"
                )
                continue
            if declared.type in SECRET_TYPES:
                fields[where] = f"is a {declared.type}: send it in secrets, not settings"
                continue
            if declared.type == "url" and not str(value).startswith(("http://", "https://")):
                fields[where] = "must be an http(s) URL"
                continue
        if not isinstance(value, str):
            fields[where] = "must be text"
            continue
        out[key] = value
    return out


def checked_secrets(
    definition: AppDefinition | None, values: Mapping[str, Any], fields: dict[str, str]
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        where = f"secrets.{key}"
        if definition is not None:
            declared = definition.field(key)
            if declared is None or not declared.is_secret:
                known = ", ".join(f.key for f in definition.config if f.is_secret)
                fields[where] = f"is not a secret of {definition.slug}; the secrets are " + (
                    known or "none"
                )
                continue
        if not isinstance(value, str) or not value:
            fields[where] = "must be non-empty text"
            continue
        out[key] = value
    return out


class _FieldProblems:
    """`check_refs`'s problem sink, writing into a route's ``fields``."""

    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = fields

    def add(self, path: str, message: str, fix: str) -> None:
        self.fields.setdefault(path, f"{message}; {fix}")


def invalid(fields: Mapping[str, str]) -> InvalidConnection:
    return InvalidConnection(
        "The connection cannot be saved as it is. See fields.",
        code="body-validation-failed",
        fields=dict(sorted(fields.items())),
    )


def checked_overrides(value: Mapping[str, Any], fields: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for tool, safety in value.items():
        if safety not in SAFETY_CLASSES:
            fields[f"overrides.{tool}"] = f"must be one of {', '.join(SAFETY_CLASSES)}"
            continue
        out[str(tool)] = str(safety)
    return out


def timeout_of(value: Any) -> float | None:
    return None if value is None else float(value)


def agent_names(value: Any, known: set[str], fields: dict[str, str]) -> tuple[str, ...] | None:
    """The agents a connection is for (None: every agent); each must be `known`."""
    if value is None:
        return None
    names = [str(v) for v in value]
    unknown = [n for n in names if n not in known]
    if unknown:
        fields["agents"] = (
            f"names no agent: {', '.join(unknown)}; the agents are {', '.join(sorted(known))}"
        )
    return tuple(dict.fromkeys(names))


def name_taken(prefix: str, name: str, other: ConnectionRecord | None) -> NameTaken:
    """The error for a name whose tools' prefix `other` (when known) has already."""
    them = f"the connection “{other.name}”" if other else "another connection"
    # The detail names the other connection's id too, for a client of the API; the field's
    # message is what the form shows under the name, for a person.
    which = f"{them} (id {other.id})" if other else them
    return NameTaken(
        f"The name “{name}” makes the tools' names start with {prefix}_, as those of {which} "
        "do; choose a name that differs in its letters or digits.",
        code="CONNECTION_NAME_TAKEN",
        fields={"name": f"its tools would clash with those of {them}"},
    )


#: What a new connection's activity record says it was created with.
CREATE_FIELDS: Final = (
    "app",
    "name",
    "kind",
    "settings",
    "trusted",
    "agents",
    "overrides",
    "approvals",
    "agent_instructions",
)


def public_changes(
    record: ConnectionRecord, changed: Iterable[str], *, body: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What an activity record says changed: the new public values, and only the names of
    the secrets set or removed (never a value)."""
    out: dict[str, Any] = {}
    for name in changed:
        if name in ("secrets", "secret_keys", "prefix"):
            continue
        if name == "call_timeout":
            out["timeout"] = record.call_timeout
        elif name == "launch":
            out["mcp"] = record.launch
        elif name == "agents":
            out["agents"] = None if record.agents is None else list(record.agents)
        elif name == "agent_instructions":
            out["agentInstructions"] = record.agent_instructions
        else:
            out[name] = getattr(record, name)
    sent = (body or {}).get("secrets")
    if isinstance(sent, Mapping):
        out["secrets"] = {
            "set": sorted(k for k, v in sent.items() if v is not None),
            "removed": sorted(k for k, v in sent.items() if v is None),
        }
    elif body is None and record.secret_keys:
        out["secrets"] = {"set": list(record.secret_keys), "removed": []}
    return out


def problems_json(problems: Sequence[CatalogProblem]) -> list[dict[str, Any]]:
    return [p.to_json() for p in problems]
