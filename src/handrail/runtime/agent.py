"""Agents: instructions, a model, the asks they may make and the tools they may call."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..asks import ASK_KINDS, AskKind
from ..asks.limits import DEFAULT_MAX_FILE_SIZE
from ..errors import ConfigError, HandrailError

#: Makes the `confirm` input of an approval ask from the tool call's input.
ApprovalInput = Callable[[dict[str, Any]], dict[str, Any]]
ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]


class ToolSignal(HandrailError):
    """A control-flow signal raised by tool code on purpose, apart from misuse errors."""


class ToolError(ToolSignal):
    """Raised by a tool to fail with a message the model sees (``isError``). Name the way
    forward in it, such as the titles that do exist when a title is wrong."""


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


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A host tool the model may call: its name, a description for the model, the JSON Schema
    of its input, and the function that runs it (sync or async, called with the input's keys as
    keyword arguments)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    function: ToolFunction

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        result = self.function(**arguments)
        if inspect.isawaitable(result):
            result = await result
        return result


class Agent:
    """An agent: a name, instructions, a model name (``HANDRAIL_MODEL`` when None), the asks it
    may make (`AsksOptions`, `True`, or None for none) and its host tools.

    Tools named ``ask_*`` are refused: those names belong to the ask tools."""

    def __init__(
        self,
        name: str,
        *,
        instructions: str = "",
        model: str | None = None,
        asks: AsksOptions | bool | Mapping[str, Any] | None = True,
        tools: Iterable[Tool] = (),
    ) -> None:
        if not name or not name.strip():
            raise ConfigError("an agent needs a name")
        self.name = name
        self.instructions = instructions
        self.model = model
        self.asks = AsksOptions.coerce(asks)
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add_tool(tool)

    @property
    def tools(self) -> Mapping[str, Tool]:
        return dict(self._tools)

    def add_tool(self, tool: Tool) -> Tool:
        if tool.name.startswith("ask_"):
            raise ConfigError(
                f"tool {tool.name!r} starts with 'ask_', which names the ask tools; rename it"
            )
        if tool.name == "clarify" or tool.name in self._tools:
            raise ConfigError(f"agent {self.name!r} already has a tool named {tool.name!r}")
        self._tools[tool.name] = tool
        return tool

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, tools={sorted(self._tools)})"
