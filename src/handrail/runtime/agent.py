"""Agents: instructions, a model, the asks they may make and the tools they may call."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, Unpack, overload

from ..actions import ActionSet, ActionTool
from ..asks import ASK_KINDS, AskKind
from ..asks.limits import DEFAULT_MAX_FILE_SIZE
from ..connections.instructions import InstructionSource
from ..errors import ConfigError
from ..policy import ToolHints
from ..policy.rules import GateRules, rules_problems
from .tools import Tool, ToolError, ToolFunction, ToolOptions, ToolSet, ToolSignal

__all__ = [
    "Agent",
    "ApprovalInput",
    "AsksOptions",
    "SourcedSets",
    "Tool",
    "ToolError",
    "ToolFunction",
    "ToolSet",
    "ToolSignal",
    "ToolSource",
]

#: Makes the `confirm` input of an approval ask from the tool call's input.
ApprovalInput = Callable[[dict[str, Any]], dict[str, Any]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True, slots=True)
class SourcedSets:
    """What a tool source gives an agent now: connections' tool sets, and the HTTP actions
    among their tools by name (as `Agent.actions` holds them)."""

    tool_sets: Sequence[ToolSet] = ()
    actions: Mapping[str, tuple[ActionSet, ActionTool]] = field(default_factory=dict)
    #: What each connection could give a turn as instructions, by connection id.
    guidance: Mapping[str, InstructionSource] = field(default_factory=dict)


#: A source of connections that change while the server runs (saved connections): called with
#: the agent whenever its tools are read, it answers from memory, never with I/O.
ToolSource = Callable[["Agent"], SourcedSets]


@dataclass(frozen=True, kw_only=True)
class AsksOptions:
    """Which asks an agent may make ("Enable asks"): the kinds offered to the model, the inputs
    of approval asks by tool name, and the per-file cap of `files` answers."""

    kinds: tuple[AskKind, ...] = ASK_KINDS
    approvals: Mapping[str, ApprovalInput] = field(default_factory=dict)
    max_file_size_bytes: int = DEFAULT_MAX_FILE_SIZE

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in ASK_KINDS]
        if unknown:
            raise ConfigError(
                f"asks.kinds lists unknown kinds {unknown}; the kinds are {list(ASK_KINDS)}"
            )
        if not isinstance(self.max_file_size_bytes, int) or self.max_file_size_bytes < 1:
            raise ConfigError("asks.max_file_size_bytes must be a positive number of bytes")

    @classmethod
    def coerce(cls, value: AsksOptions | bool | Mapping[str, Any] | None) -> AsksOptions | None:
        """`True` or ``{}`` offers every kind; `False` or None turns asks off; a mapping takes
        ``kinds``, ``approvals`` and ``maxFileSizeBytes`` (or ``max_file_size_bytes``)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, AsksOptions):
            return value
        known = {"kinds", "approvals", "maxFileSizeBytes", "max_file_size_bytes"}
        extra = sorted(set(value) - known)
        if extra:
            raise ConfigError(f"asks has unknown options {extra}; the options are {sorted(known)}")
        kinds = value.get("kinds", ASK_KINDS)
        if isinstance(kinds, str) or not isinstance(kinds, Iterable):
            raise ConfigError('asks.kinds must be a list of kinds, such as ["choice"]')
        size = value.get("maxFileSizeBytes", value.get("max_file_size_bytes"))
        return cls(
            kinds=tuple(kinds),
            approvals=dict(value.get("approvals") or {}),
            max_file_size_bytes=DEFAULT_MAX_FILE_SIZE if size is None else size,
        )


class Agent:
    """An agent: a name, instructions, a model name (``HANDRAIL_MODEL`` when None), the asks it
    may make (`AsksOptions`, `True`, or None for none), and its tools.

    Its tools come from connections (`ToolSet`): Python tools added to the agent itself
    (``tools=[...]``, `add_tool`, ``@agent.tool``) belong to its local connection,
    ``local:<name>``, which is trusted; other tool sets join with ``tool_sets=[...]`` or
    `add_tool_set`. Tool names are unique across all of them, and names starting with ``ask_``
    and the name ``clarify`` are refused: those belong to the ask tools and clarify."""

    def __init__(
        self,
        name: str,
        *,
        instructions: str = "",
        model: str | None = None,
        asks: AsksOptions | bool | Mapping[str, Any] | None = True,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        tool_sets: Iterable[ToolSet] = (),
        action_sets: Iterable[ActionSet] = (),
        clarify: bool = False,
        expires_after: float | None = None,
        remind_after: float | None = None,
        adapter: Any = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("an agent needs a name")
        problems = rules_problems(expires_after=expires_after, remind_after=remind_after)
        if problems:
            raise ConfigError(f"agent {name!r}: " + "; ".join(problems))
        #: The clocks of every gate of the agent (a tool's own `expires_after` and
        #: `remind_after` win): asks, approvals, confirmations.
        self.gate_clock = GateRules(expires_after=expires_after, remind_after=remind_after)
        self.name = name
        self.instructions = instructions
        self.model = model
        #: A model object that runs this agent instead of `model` (an ``http`` or ``process``
        #: adapter, `handrail.runtime.models.adapters`): it is used whatever the runtime's
        #: model is.
        self.adapter = adapter
        self.asks = AsksOptions.coerce(asks)
        #: Whether the model is offered the ``clarify`` tool (batched questions, which needs
        #: asks on to pause).
        self.clarify = bool(clarify)
        self._local = ToolSet(f"local:{name}", name)
        self._sets: dict[str, ToolSet] = {}
        self.add_tool_set(self._local)
        for item in tools:
            self.add_tool(item)
        for tool_set in tool_sets:
            self.add_tool_set(tool_set)
        self._actions: dict[str, tuple[ActionSet, ActionTool]] = {}
        self._action_set_ids: set[str] = set()
        self._sources: list[ToolSource] = []
        for action_set in action_sets:
            self.add_action_set(action_set)

    def rules_for(self, tool_name: str | None) -> GateRules:
        """The gate rules of a tool's calls (a Python or MCP tool's, or the HTTP action's),
        with the agent's clocks where the tool sets none; the agent's alone for other gates."""
        own: GateRules | None = None
        if tool_name:
            found = self.actions.get(tool_name)
            if found is not None:
                own = found[1].rules
            else:
                tool = self.tools.get(tool_name)
                own = tool.rules if tool is not None else None
        return (own or GateRules()).over(self.gate_clock)

    @property
    def actions(self) -> dict[str, tuple[ActionSet, ActionTool]]:
        """The tools that are HTTP actions, by name: the runtime prepares, confirms and sends
        them instead of calling a function (the agent's own, then its sources')."""
        if not self._sources:
            return self._actions
        found = dict(self._actions)
        for sourced in self._sourced():
            for name, action in sourced.actions.items():
                found.setdefault(name, action)
        return found

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every tool of every connection by name: the local tools first, then each tool set's
        in the order the sets were added, then the tool sources' (a sourced tool whose name is
        taken already is left out)."""
        found = {name: t for tool_set in self._sets.values() for name, t in tool_set.tools.items()}
        for tool_set in self._sourced_sets():
            for name, t in tool_set.tools.items():
                found.setdefault(name, t)
        return found

    @property
    def connections(self) -> dict[str, ToolSet]:
        """The agent's tool sets by connection id, the local one (``local:<name>``) first,
        then the tool sources' as they are now."""
        found = dict(self._sets)
        for tool_set in self._sourced_sets():
            found.setdefault(tool_set.connection_id, tool_set)
        return found

    def instruction_sources(self) -> dict[str, InstructionSource]:
        """What each of the agent's connections could give a turn as instructions, by
        connection id: a configured tool set's own ``instructions`` (always on), a saved
        connection's setting (from its tool source)."""
        found: dict[str, InstructionSource] = {}
        for connection_id, tool_set in self._sets.items():
            if tool_set.instructions:
                found[connection_id] = InstructionSource(
                    connection_id=connection_id,
                    name=tool_set.name,
                    connector="config",
                    method="actions" if connection_id in self._action_set_ids else "python",
                    setting={"enabled": True, "text": tool_set.instructions},
                )
        for sourced in self._sourced():
            for connection_id, source in sourced.guidance.items():
                found.setdefault(connection_id, source)
        return found

    def add_tool_source(self, source: ToolSource) -> None:
        """Read connections that change while the server runs from `source` too (see
        `ToolSource`): its tool sets join the agent's own each time they are read."""
        if source not in self._sources:
            self._sources.append(source)

    def remove_tool_source(self, source: ToolSource) -> None:
        if source in self._sources:
            self._sources.remove(source)

    def _sourced(self) -> list[SourcedSets]:
        return [source(self) for source in self._sources]

    def _sourced_sets(self) -> list[ToolSet]:
        return [t for sourced in self._sourced() for t in sourced.tool_sets]

    def add_action_set(self, action_set: ActionSet) -> ToolSet:
        """Add an HTTP action set (`handrail.actions.load_action_set`) as a connection: its
        tools are offered to the model with hints from their effect (read-only, side effect:
        mutating, destructive: consequential), and every non-read-only one is sent only after
        the person confirms its prepared request."""
        tools = [
            Tool(
                name=action.name,
                description=action.description,
                input_schema=dict(action.input_schema),
                function=_run_by_the_runtime,
                hints=_EFFECT_HINTS[action.effect],
            )
            for action in action_set.tools.values()
        ]
        tool_set = ToolSet(
            action_set.id,
            action_set.name,
            tools=tools,
            trusted=action_set.trusted,
            instructions=action_set.instructions,
        )
        self.add_tool_set(tool_set)
        self._action_set_ids.add(tool_set.connection_id)
        for action in action_set.tools.values():
            self._actions[action.name] = (action_set, action)
        return tool_set

    def connection_of(self, tool_name: str) -> ToolSet:
        """The tool set that holds the tool named `tool_name` (`KeyError` when none does)."""
        for tool_set in [*self._sets.values(), *self._sourced_sets()]:
            if tool_name in tool_set.tools:
                return tool_set
        raise KeyError(f"agent {self.name!r} has no tool named {tool_name!r}")

    def add_tool(self, tool: Tool | Callable[..., Any]) -> Tool:
        """Add a tool to the local connection: a `Tool`, a function marked with
        `handrail.runtime.tools.tool`, or a plain function (see `Tool.from_function`).
        Returns the tool as registered."""
        return self._local.add_tool(tool)

    @overload
    def tool(self, function: F, /) -> F: ...
    @overload
    def tool(
        self, function: None = None, /, **options: Unpack[ToolOptions]
    ) -> Callable[[F], F]: ...
    def tool(
        self, function: F | None = None, /, **options: Unpack[ToolOptions]
    ) -> F | Callable[[F], F]:
        """Register a function as a tool of the local connection: ``@agent.tool`` or
        ``@agent.tool(name=..., description=..., read_only=..., destructive=...,
        idempotent=..., open_world=..., consequential=..., untrusted_content=...,
        skill=...)``. Returns the function as it is, so it stays callable and testable."""
        if function is None:
            return self._local.tool(**options)
        if options:
            return self._local.tool(**options)(function)
        return self._local.tool(function)

    def add_tool_set(self, tool_set: ToolSet) -> ToolSet:
        """Add a connection's tools. Its connection id and its tool names must be new to this
        agent, now and for tools added to the set later."""
        if not isinstance(tool_set, ToolSet):
            raise ConfigError(f"{tool_set!r} is not a ToolSet")
        if tool_set.connection_id in self._sets:
            raise ConfigError(
                f"agent {self.name!r} already has a connection {tool_set.connection_id!r}"
            )
        for tool in tool_set.tools.values():
            self._refuse_clash(tool_set, tool)
        tool_set._watch(self._refuse_clash)
        self._sets[tool_set.connection_id] = tool_set
        return tool_set

    def _refuse_clash(self, tool_set: ToolSet, tool: Tool) -> None:
        for other in self._sets.values():
            if other is not tool_set and tool.name in other.tools:
                raise ConfigError(
                    f"agent {self.name!r} already has a tool named {tool.name!r} (from "
                    f"connection {other.connection_id!r}); tool names must be unique across "
                    f"its connections, so rename the one in {tool_set.connection_id!r}"
                )

    def __copy__(self) -> Agent:
        """A copy that shares the tools but has its own list of tool sources."""
        clone = Agent.__new__(Agent)
        clone.__dict__.update(self.__dict__)
        clone._sources = list(self._sources)
        return clone

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, tools={sorted(self.tools)})"


_EFFECT_HINTS: dict[str, ToolHints] = {
    "read-only": ToolHints(read_only=True),
    "side-effect": ToolHints(read_only=False, consequential=False),
    "destructive": ToolHints(read_only=False, destructive=True, consequential=True),
}


def _run_by_the_runtime(**_arguments: Any) -> Any:
    raise ToolError("HTTP action tools are prepared, confirmed and sent by the runtime.")
