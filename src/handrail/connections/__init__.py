"""Connections: the catalog of app definitions, the values that fill them, secrets at rest, and
the MCP client (the official ``mcp`` SDK).

A connection is a saved, authorized source of tools: an MCP server over stdio or streamable
HTTP, or an HTTP action set. This layer knows how to describe one (`AppDefinition`), fill its
``${config.*}`` and ``${secret.*}`` values, keep its secrets encrypted (`SecretBox`) and talk to
its MCP server (`McpLink`); saving connections is the store's, and offering their tools to an
agent the runtime's (`handrail.runtime.connected`).
"""

from __future__ import annotations

from .catalog import (
    CATALOG_DIR,
    CONFIG_TYPES,
    CONNECTION_KINDS,
    PROTOCOL_MODES,
    AgentInstructions,
    AppDefinition,
    Catalog,
    CatalogError,
    CatalogProblem,
    ConfigField,
    McpLaunch,
    check_agent_instructions,
    load_catalog,
    load_definition,
)
from .mcp_client import CallOutcome, ListedTool, McpCallFailed, McpLink
from .secrets import (
    SECRET_KEY_ENV,
    SecretBox,
    SecretKeyMissing,
    SecretsUnreadable,
    mask,
    new_secret_key,
)
from .values import MissingValue, fill_launch, model_name, tool_prefix

__all__ = [
    "CATALOG_DIR",
    "CONFIG_TYPES",
    "CONNECTION_KINDS",
    "PROTOCOL_MODES",
    "SECRET_KEY_ENV",
    "AgentInstructions",
    "AppDefinition",
    "CallOutcome",
    "Catalog",
    "CatalogError",
    "CatalogProblem",
    "ConfigField",
    "ListedTool",
    "McpCallFailed",
    "McpLaunch",
    "McpLink",
    "MissingValue",
    "SecretBox",
    "SecretKeyMissing",
    "SecretsUnreadable",
    "check_agent_instructions",
    "fill_launch",
    "load_catalog",
    "load_definition",
    "mask",
    "model_name",
    "new_secret_key",
    "tool_prefix",
]
