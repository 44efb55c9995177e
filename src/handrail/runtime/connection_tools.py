"""The tools of a saved connection: `ConnectionTool`, and the tool lists built from what its
MCP server listed (`mcp_tools`) or from its HTTP action set (`action_tools`), named for the
model, with the classes an admin fixed and the managed arguments its settings fill.

A name another connection's tool already has, or two of the server's tools sharing one, is a
clash: the tool is left out and the clash named for the connection's status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ..actions import ActionSet, ActionTool
from ..connections import AppDefinition, ListedTool, McpLink, model_name
from ..connections.approvals import tool_rules
from ..policy import SafetyClass, ToolHints, classify
from ..store.connections import ConnectionRecord
from .agent import _EFFECT_HINTS, _run_by_the_runtime
from .elicitation import call_mcp_tool
from .tools import Tool, ToolError

__all__ = ["ActionTools", "ConnectionTool", "action_tools", "managed_values", "mcp_tools"]


@dataclass(frozen=True, kw_only=True)
class ConnectionTool(Tool):
    """A tool of a saved connection: its server's own name, and the class an admin fixed for
    it (None: its hints decide)."""

    server_name: str = ""
    fixed_class: SafetyClass | None = None
    #: Goes on with a call that paused on an elicitation: ``(arguments, state, answer)``.
    resume: (
        Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Awaitable[Any]] | None
    ) = field(default=None, compare=False, repr=False)
    #: Arguments filled from the connection's settings (its app's ``managedArguments``): left
    #: out of the schema the model sees, set after the caller's arguments.
    managed: Mapping[str, str] = field(default_factory=dict)

    def project(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {**arguments, **self.managed}

    @property
    def safety_class(self) -> SafetyClass:
        return self.safety(True)

    def safety(self, trusted: bool = True) -> SafetyClass:
        if self.fixed_class is not None:
            return self.fixed_class
        return classify(self.hints, trusted=trusted)


@dataclass(kw_only=True)
class ActionTools:
    """An action set connection's tools: for the model, the HTTP actions they run (by the
    names the model calls them), the listing shown to admins, and the clashes."""

    tools: list[Tool]
    actions: dict[str, tuple[ActionSet, ActionTool]]
    listing: list[dict[str, Any]]
    clashes: list[str]


def mcp_tools(
    record: ConnectionRecord,
    link: McpLink | None,
    *,
    taken: Mapping[str, str],
    managed: Mapping[str, str],
) -> tuple[list[Tool], list[str]]:
    """The tools of a listed connection, named for the model, with their classes; and the
    clashes (`taken`: the names other connections' tools have, with whose they are)."""
    tools: list[Tool] = []
    clashes: list[str] = []
    seen: dict[str, str] = {}
    for data in record.tools:
        listed = ListedTool.from_json(data)
        name = model_name(record.prefix, listed.name)
        if name in taken:
            clashes.append(
                f"its tool {listed.name} would be called {name}, which is the name of a tool "
                f"of {taken[name]}: rename the connection"
            )
            continue
        if name in seen:
            clashes.append(f"its tools {seen[name]} and {listed.name} would both be called {name}")
            continue
        seen[name] = listed.name
        override = record.overrides.get(listed.name)
        schema, filled = _without_managed(listed.input_schema, managed)
        tools.append(
            ConnectionTool(
                name=name,
                title=listed.title,
                description=_description(listed, record.name),
                input_schema=schema,
                function=_caller(link, listed.name, record.name, record.id, filled),
                hints=ToolHints.from_annotations(listed.annotations),
                server_name=listed.name,
                fixed_class=cast(SafetyClass, override) if override else None,
                resume=_resumer(link, listed.name, record.id, filled),
                managed=filled,
                rules=tool_rules(record.approvals, listed.name),
            )
        )
    return tools, clashes


def action_tools(
    record: ConnectionRecord,
    action_set: ActionSet,
    *,
    taken: Mapping[str, str],
    managed: Mapping[str, str],
) -> ActionTools:
    """The tools of an action set connection (run by the runtime, as HTTP actions)."""
    out = ActionTools(tools=[], actions={}, listing=[], clashes=[])
    for action in action_set.tools.values():
        name = model_name(record.prefix, action.name)
        hints = _EFFECT_HINTS[action.effect]
        out.listing.append(
            {
                "name": action.name,
                "title": action.title,
                "description": action.description,
                "inputSchema": dict(action.input_schema),
                "annotations": hints.to_annotations(),
            }
        )
        if name in taken:
            out.clashes.append(
                f"its tool {action.name} would be called {name}, which is the name of a "
                f"tool of {taken[name]}: rename the connection"
            )
            continue
        override = record.overrides.get(action.name)
        schema, filled = _without_managed(action.input_schema, managed)
        action = dataclasses.replace(
            action, rules=tool_rules(record.approvals, action.name, action.rules)
        )
        out.tools.append(
            ConnectionTool(
                name=name,
                title=action.title,
                description=action.description,
                input_schema=schema,
                function=_run_by_the_runtime,
                hints=hints,
                server_name=action.name,
                fixed_class=cast(SafetyClass, override) if override else None,
                managed=filled,
                rules=action.rules,
            )
        )
        out.actions[name] = (action_set, action)
    return out


def managed_values(definition: AppDefinition | None, record: ConnectionRecord) -> dict[str, str]:
    """The managed arguments of the connection's app (`definition`) whose settings are set:
    argument name -> value."""
    if definition is None:
        return {}
    out: dict[str, str] = {}
    for managed in definition.managed_arguments:
        value = record.settings.get(managed.config, "")
        if value.strip():
            out[managed.argument] = value
    return out


def _description(listed: ListedTool, connection: str) -> str:
    text = (listed.description or listed.title or "").strip()
    return text or f"The tool {listed.name} of {connection}."


def _without_managed(
    schema: Mapping[str, Any], managed: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A tool's input schema without the managed arguments it declares, and those arguments
    with their values (a tool that declares none keeps its schema as it is)."""
    properties = schema.get("properties")
    if not managed or not isinstance(properties, Mapping):
        return dict(schema), {}
    filled = {name: value for name, value in managed.items() if name in properties}
    if not filled:
        return dict(schema), {}
    out = dict(schema)
    out["properties"] = {k: v for k, v in properties.items() if k not in filled}
    required = schema.get("required")
    if isinstance(required, list):
        out["required"] = [r for r in required if r not in filled]
    return out, filled


def _caller(
    link: McpLink | None,
    tool: str,
    connection: str,
    connection_id: str,
    managed: Mapping[str, str] | None = None,
) -> Any:
    fixed = dict(managed or {})

    async def call(**arguments: Any) -> Any:
        # Managed arguments go after the caller's: the connection's setting wins.
        arguments = {**arguments, **fixed}
        if link is None:
            raise ToolError(
                f"The connection {connection} has no server to call. Tell the user; an admin can "
                "fix it in the connection's settings."
            )
        return await call_mcp_tool(link, tool, arguments, connection_id=connection_id)

    call.__name__ = tool
    return call


def _resumer(
    link: McpLink | None,
    tool: str,
    connection_id: str,
    managed: Mapping[str, str] | None = None,
) -> Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Awaitable[Any]] | None:
    if link is None:
        return None
    fixed = dict(managed or {})

    async def resume(
        arguments: Mapping[str, Any], state: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> Any:
        arguments = {**arguments, **fixed}  # the same call: managed arguments after
        return await call_mcp_tool(
            link, tool, arguments, connection_id=connection_id, resume=state, answer=answer
        )

    return resume
