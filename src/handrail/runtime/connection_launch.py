"""How a saved connection starts: its MCP server's launch filled from its settings and secrets
(`mcp_launch`), or its HTTP action set compiled from its file with its own secrets
(`action_set_of`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..actions import ActionConfigError, ActionSet, load_action_set
from ..connections import (
    AppDefinition,
    Catalog,
    McpLaunch,
    MissingValue,
    SecretBox,
    SecretsUnreadable,
    fill_launch,
)
from ..connections.catalog import PROTOCOL_MODES
from ..connections.oauth import OAUTH_SECRET
from ..connections.values import missing_required
from ..errors import ConfigError
from ..store.connections import ConnectionRecord
from .connection_checks import CUSTOM

__all__ = ["action_set_of", "authorizes", "launch_from_json", "mcp_launch", "sentence"]

#: How the action set compiler says a secret is missing (it speaks of the environment).
_SECRET_MISSING: Final = re.compile(
    r"the environment variable ([A-Za-z_][A-Za-z0-9_]*) is not set; set it to [^\n(]*"
)


def mcp_launch(
    record: ConnectionRecord, catalog: Catalog, box: SecretBox
) -> tuple[McpLaunch, dict[str, str], str | None]:
    """The saved MCP connection's launch, filled from its settings and secrets; its
    secrets (without the sign-in's), and the sign-in's saved tokens. `MissingValue` or
    `SecretsUnreadable` when it cannot start."""
    secrets = box.open(record.secrets)
    oauth = secrets.pop(OAUTH_SECRET, None)
    if record.app == CUSTOM:
        launch = launch_from_json(record.launch or {}, record.kind, record.protocol)
    else:
        definition = catalog.get(record.app)
        if definition is None or definition.mcp is None:
            raise MissingValue(
                f"the app {record.app!r} is not in the catalog any more; add its "
                "definition back, or remove this connection"
            )
        missing = missing_required(definition, record.settings, secrets)
        if missing:
            raise MissingValue(
                f"the required settings {', '.join(missing)} are not set; set them on the "
                "connection"
            )
        launch = dataclasses.replace(definition.mcp, protocol=record.protocol)  # type: ignore[arg-type]
    return fill_launch(launch, record.settings, secrets), secrets, oauth


def action_set_of(
    record: ConnectionRecord, definition: AppDefinition | None, box: SecretBox
) -> ActionSet | str:
    """An HTTP action set: compiled from its file, under the connection's id and name,
    at the connection's ``baseUrl`` when it sets one. The secrets its file names
    (``auth.secret_env``, ``{source: secret, env: NAME}``) are the connection's own secrets
    of those names, never the server's environment. A text instead when it cannot start:
    the message for the connection's status."""
    file = definition.actions if definition is not None else None
    if file is None and record.launch is not None and record.launch.get("actions"):
        file = Path(str(record.launch["actions"]))
    if file is None:
        return "The connection names no action set file."
    try:
        secrets = box.open(record.secrets)
    except SecretsUnreadable as exc:
        return sentence(str(exc))
    secrets.pop(OAUTH_SECRET, None)
    try:
        action_set = load_action_set(file, env=secrets)
    except ActionConfigError as exc:
        problems = _SECRET_MISSING.sub(
            r"the secret \1 is not set on this connection; set it in the connection's secrets",
            str(exc),
        )
        return f"The action set {file.name} has problems: {problems}".strip()
    except ConfigError as exc:
        return sentence(str(exc))
    base_url = record.settings.get("baseUrl") or action_set.base_url
    return dataclasses.replace(
        action_set,
        id=record.id,
        name=record.name,
        trusted=record.trusted,
        base_url=base_url.rstrip("/"),
        secrets=secrets,
    )


def launch_from_json(data: Mapping[str, Any], kind: str, protocol: str) -> McpLaunch:
    mode = protocol if protocol in PROTOCOL_MODES else "auto"
    if kind == "mcp-http":
        return McpLaunch(
            transport="http",
            url=str(data.get("url") or ""),
            headers=dict(data.get("headers") or {}),
            protocol=mode,
        )
    return McpLaunch(
        transport="stdio",
        command=str(data.get("command") or ""),
        args=tuple(data.get("args") or ()),
        env=dict(data.get("env") or {}),
        protocol=mode,
    )


def authorizes(headers: Mapping[str, str]) -> bool:
    """Whether the connection sends its own Authorization header (then it never signs in)."""
    return any(key.lower() == "authorization" for key in headers)


def sentence(text: str) -> str:
    """`text` as a sentence of a status message: a capital first, a full stop last."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."
