"""Python tools: `Tool`, the `tool` decorators, and `ToolSet`, a named group of tools under one
connection id.

A tool is a function the model may call. Its input schema comes from the function's type hints
(`handrail.runtime.tool_schemas`), its description from the docstring's first paragraph, its
parameter descriptions from ``Annotated[T, "..."]`` or the docstring's ``Args:`` section, and
its hints (`ToolHints`) from the decorator's options; the hints give its safety class
(`handrail.policy.classify`). Arguments are checked against the schema before the function runs
(`handrail.runtime.tool_arguments`), and what is wrong goes back to the model as a tool error.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict, TypeVar, Unpack, overload

from .._util import storable, storable_text
from ..errors import ConfigError, HandrailError
from ..policy import SafetyClass, ToolHints, classify
from ..policy.rules import GateRules, read_rules
from .messages import FilePart
from .tool_arguments import check_arguments
from .tool_schemas import (
    Convert,
    derive_type,
    docstring_of,
    docstring_summary,
    input_schema_from_function,
    qualname_of,
    signature_of,
    to_json,
    unwrap,
)

__all__ = [
    "CALLING_USER",
    "INSTRUCTIONS_MAX_CHARS",
    "TITLE_MAX_CHARS",
    "TOOL_NAME_PATTERN",
    "UNSTORABLE_NOTE",
    "InvalidArguments",
    "Tool",
    "ToolError",
    "ToolFunction",
    "ToolOptions",
    "ToolOutput",
    "ToolSet",
    "ToolSignal",
    "as_tool",
    "calling_user_id",
    "check_arguments",
    "input_schema_from_function",
    "invalid_arguments_text",
    "storable_result",
    "tool",
]

ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]

#: The user whose turn runs the tool now (set around each host tool call).
CALLING_USER: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "handrail_calling_user", default=None
)


def calling_user_id() -> str | None:
    """Inside a host tool: the id of the user whose turn called it (None outside a call). A
    tool that keeps data per person keys it by this."""
    return CALLING_USER.get()


F = TypeVar("F", bound=Callable[..., Any])

#: The names the model APIs accept (OpenAI and Anthropic alike).
TOOL_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: A tool's `title` (its name in the person's words) is 1-80 characters.
TITLE_MAX_CHARS: Final = 80
#: Connection instructions are trimmed and 1-2000 characters ("connection-instructions").
INSTRUCTIONS_MAX_CHARS: Final = 2000
_MARK: Final = "__handrail_tool__"

#: What a result says when some of its characters could not be stored (`storable_result`).
UNSTORABLE_NOTE: Final = (
    "Some characters of this result could not be stored (NUL or unpaired surrogates) and were "
    "replaced with U+FFFD."
)


def storable_result(result: Any, *, as_field: bool = False) -> Any:
    """A result from a tool, an MCP server or an HTTP action, made storable before it is
    stored or shown: returned as it is when clean; otherwise every NUL and lone surrogate in it
    (strings, keys, at any depth) becomes U+FFFD and the result says so with `UNSTORABLE_NOTE`:

    - text gets the note after it, in parentheses, on a line of its own;
    - any other value becomes ``{"result": <the value>, "note": UNSTORABLE_NOTE}``;
    - with `as_field`, a JSON object gets the note as its ``note`` field instead (for results
      whose fields handrail makes itself, such as an HTTP action's ``{status, ...}``).
    """
    cleaned, replaced = storable(result)
    if not replaced:
        return cleaned
    if isinstance(cleaned, str):
        return _noted_text(cleaned)
    if as_field and isinstance(cleaned, dict):
        return {**cleaned, "note": UNSTORABLE_NOTE}
    return {"result": cleaned, "note": UNSTORABLE_NOTE}


def _noted_text(text: str) -> str:
    return f"{text}\n\n({UNSTORABLE_NOTE})"


class ToolSignal(HandrailError):
    """A control-flow signal raised by tool code on purpose, apart from misuse errors."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOutput:
    """What a tool returns when its result comes with files for the model to see (an MCP
    server's images): `content` is stored and streamed as any result; `parts` are shown to the
    model with it on that turn only, and never stored."""

    content: Any
    parts: tuple[FilePart, ...] = ()


class ToolError(ToolSignal):
    """Raised by a tool to fail with a message the model sees (``isError``). Name the way
    forward in it, such as the titles that do exist when a title is wrong."""


class InvalidArguments(ToolError):
    """The arguments of a call do not match the tool's input schema, so the tool did not run.
    The message is `invalid_arguments_text`; `errors` holds the sentences one by one."""

    def __init__(self, tool_name: str, errors: Iterable[str]) -> None:
        self.tool_name = tool_name
        self.errors = list(errors)
        super().__init__(invalid_arguments_text(tool_name, self.errors))


def invalid_arguments_text(tool_name: str, errors: Iterable[str]) -> str:
    """The tool error the model gets for arguments that do not match the schema."""
    return (
        f"Invalid arguments for {tool_name}: {'; '.join(errors)}. It did not run; call it "
        "again with arguments that match its input schema."
    )


class ToolOptions(TypedDict, total=False):
    """The options of `tool`, `Agent.tool`, `ToolSet.tool` and `Tool.from_function`. A hint
    left out (or None) is undeclared; a tool that declares no hint at all is consequential."""

    name: str | None
    title: str | None
    description: str | None
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None
    consequential: bool | None
    untrusted_content: bool | None
    skill: bool | None
    approvers: Sequence[str] | None
    quorum: int | None
    expires_after: float | None
    remind_after: float | None


def _rules(name: str, options: Mapping[str, Any]) -> GateRules | None:
    """The gate rules of a tool's options (`approvers`, `quorum`, `expires_after`,
    `remind_after`), None when it sets none; a wrong one is a `ConfigError`."""
    rules, problems = read_rules(options)
    if problems:
        raise ConfigError(f"tool {name!r}: " + "; ".join(p for _, p in problems))
    return rules


_HINT_OPTIONS: Final = (
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "consequential",
    "untrusted_content",
    "skill",
)


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A host tool the model may call: its name, a description for the model, the JSON Schema
    of its input, the function that runs it (sync or async, called with the input's keys as
    keyword arguments), the hints it declares, and the connection it belongs to (None until it
    is registered: then the agent's local connection, or its tool set's).

    `title` is the tool's name in the person's words ("Delete a note"): the asks the server
    makes about it (approval, permission) use it in place of `name`; the model never sees it.

    Build one from a function with `Tool.from_function` or the `tool` decorators, or by hand
    with a hand-written schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    function: ToolFunction
    hints: ToolHints = field(default_factory=ToolHints)
    connection_id: str | None = None
    title: str | None = None
    #: Who must approve its calls and how many, and its gates' clocks (`GateRules`).
    rules: GateRules | None = None
    _binder: _Binder = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TOOL_NAME_PATTERN.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is not usable: use 1-64 letters, digits, '_' or '-'"
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigError(
                f"tool {self.name!r} needs a description: pass description=... or give its "
                "function a docstring"
            )
        if not isinstance(self.input_schema, Mapping) or self.input_schema.get("type") != "object":
            raise ConfigError(
                f"tool {self.name!r}: input_schema must be a JSON Schema object, such as "
                '{"type": "object", "properties": {...}}'
            )
        if not callable(self.function):
            raise ConfigError(f"tool {self.name!r}: function must be callable")
        if self.title is not None and (
            not isinstance(self.title, str)
            or not self.title.strip()
            or len(self.title) > TITLE_MAX_CHARS
        ):
            raise ConfigError(
                f"tool {self.name!r}: title must be 1-{TITLE_MAX_CHARS} characters of text"
            )
        if not isinstance(self.hints, ToolHints):
            raise ConfigError(f"tool {self.name!r}: hints must be a ToolHints")
        if self.connection_id is not None and (
            not isinstance(self.connection_id, str) or not self.connection_id.strip()
        ):
            raise ConfigError(f"tool {self.name!r}: connection_id must be a non-empty string")
        _check_skill(self.name, self.hints)
        object.__setattr__(self, "_binder", _binder_for(self.function))

    @classmethod
    def from_function(cls, function: ToolFunction, /, **options: Unpack[ToolOptions]) -> Tool:
        """A tool from a function: the name defaults to the function's, the description to
        its docstring's first paragraph, the input schema comes from its type hints
        (`input_schema_from_function`), and the hint options become its `ToolHints`."""
        unknown = sorted(set(options) - set(ToolOptions.__annotations__))
        if unknown:
            raise ConfigError(
                f"unknown tool options {unknown}; the options are "
                f"{sorted(ToolOptions.__annotations__)}"
            )
        target = unwrap(function)
        name = options.get("name") or getattr(target, "__name__", None)
        if not isinstance(name, str):
            raise ConfigError(f"{function!r} has no __name__: pass name=... for its tool")
        description = options.get("description")
        if description is None:
            description = docstring_summary(docstring_of(function))
        if not description:
            raise ConfigError(
                f"tool {name!r} needs a description: give {qualname_of(function)} a docstring "
                "or pass description=..."
            )
        hints = ToolHints(**{k: options.get(k) for k in _HINT_OPTIONS})  # type: ignore[arg-type]
        _check_skill(name, hints)
        rules = _rules(name, options)
        try:
            schema = input_schema_from_function(function)
        except ConfigError as exc:
            raise ConfigError(f"tool {name!r}: {exc}") from None
        return cls(
            name=name,
            description=description,
            input_schema=schema,
            function=function,
            hints=hints,
            title=options.get("title"),
            rules=rules,
        )

    @property
    def label(self) -> str:
        """What the person reads for it: its `title`, else its name."""
        return self.title or self.name

    @property
    def safety_class(self) -> SafetyClass:
        """The class its hints give, as if its connection is trusted (`safety` otherwise)."""
        return classify(self.hints)

    def safety(self, trusted: bool = True) -> SafetyClass:
        """The class its hints give; a connection not marked trusted makes it consequential."""
        return classify(self.hints, trusted=trusted)

    @property
    def is_skill(self) -> bool:
        """Whether it is a skill: a read-only tool that returns guidance text."""
        return self.hints.skill is True

    def project(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the tool runs with, from the caller's: the same for a plain tool; a
        connection's tool sets its managed arguments after the caller's."""
        return dict(arguments)

    def check(self, arguments: Any) -> list[str]:
        """What is wrong with `arguments` for this tool, as sentences; empty when they fit.
        Never raises (see `check_arguments`)."""
        return check_arguments(self.input_schema, arguments)

    def with_connection(self, connection_id: str) -> Tool:
        """This tool under `connection_id`; a tool already under another one is refused."""
        if self.connection_id == connection_id:
            return self
        if self.connection_id is not None:
            raise ConfigError(
                f"tool {self.name!r} belongs to connection {self.connection_id!r}; it cannot "
                f"join {connection_id!r}"
            )
        return dataclasses.replace(self, connection_id=connection_id)

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Check the arguments (`InvalidArguments` when they do not fit), convert them to the
        parameter types (dataclasses, enums), and call the function: a sync one in a worker
        thread, so a slow tool does not block the event loop; an async one awaited. The result
        comes back JSON-ready (dataclasses as objects, enums as their values, tuples as
        arrays) and storable (`storable_result`: NUL and lone surrogates replaced, with a note).
        A `ToolError` raised by the function passes through, its message made storable too."""
        try:
            result = await self._call(arguments)
        except ToolError as exc:
            message, replaced = storable_text(str(exc))
            if replaced:
                exc.args = (_noted_text(message),)
            raise
        if isinstance(result, ToolOutput):
            return ToolOutput(content=storable_result(to_json(result.content)), parts=result.parts)
        if self.is_skill and not isinstance(result, str):
            raise ConfigError(
                f"skill {self.name!r} returned {type(result).__name__}; a skill returns its "
                "guidance as text"
            )
        return storable_result(to_json(result))

    async def _call(self, arguments: Mapping[str, Any]) -> Any:
        errors = self.check(arguments)
        if errors:
            raise InvalidArguments(self.name, errors)
        kwargs = self._binder.bind(self.name, arguments)
        if self._binder.is_async:
            return await self.function(**kwargs)
        result = await asyncio.to_thread(self.function, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def _check_skill(name: str, hints: ToolHints) -> None:
    if hints.skill is not True:
        return
    wrong = [
        label
        for label, bad in (
            ("read_only=False", hints.read_only is False),
            ("destructive=True", hints.destructive is True),
            ("consequential=True", hints.consequential is True),
        )
        if bad
    ]
    if wrong:
        raise ConfigError(
            f"tool {name!r} is a skill, and a skill only returns guidance text, so it cannot "
            f"declare {', '.join(wrong)}; drop those hints, or make it a tool without skill=True"
        )


# --------------------------------------------------------------------------------- decorators


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(function: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...
def tool(function: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
    """Mark a function as a tool without registering it anywhere: ``@tool`` or
    ``@tool(read_only=True, ...)``. The function is returned as it is (still callable and
    testable), and `Agent(tools=[...])`, `ToolSet(tools=[...])` and ``add_tool`` take it.
    The tool is built at once, so a bad annotation fails at import time."""

    def mark(fn: F) -> F:
        built = Tool.from_function(fn, **options)
        try:
            setattr(fn, _MARK, built)
        except (AttributeError, TypeError):
            raise ConfigError(
                f"{fn!r} cannot be marked as a tool; pass Tool.from_function(...) instead"
            ) from None
        return fn

    return mark if function is None else mark(function)


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    """A `Tool` as it is, a function marked with `tool` as its tool, any other function
    through `Tool.from_function`."""
    if isinstance(value, Tool):
        return value
    marked = getattr(value, _MARK, None)
    if isinstance(marked, Tool):
        return marked
    if callable(value):
        return Tool.from_function(value)
    raise ConfigError(f"{value!r} is not a tool: pass a Tool or a function")


# --------------------------------------------------------------------------------- tool sets


class ToolSet:
    """A named group of tools under one connection id: the connection's tools, whether its
    hints are trusted (an untrusted connection's tools are all consequential), and the
    instructions it gives agents (trimmed, 1-2000 characters). Its ``.tool`` decorator works
    as `Agent.tool` does. A tool set joins an agent with ``Agent(tool_sets=[...])`` or
    `Agent.add_tool_set`; tool names must be unique across an agent's sets."""

    def __init__(
        self,
        connection_id: str,
        name: str,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        trusted: bool = True,
        instructions: str | None = None,
    ) -> None:
        if not isinstance(connection_id, str) or not connection_id.strip():
            raise ConfigError("a tool set needs a connection id")
        if connection_id != connection_id.strip():
            raise ConfigError(f"connection id {connection_id!r} has spaces around it")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"tool set {connection_id!r} needs a name")
        if not isinstance(trusted, bool):
            raise ConfigError(f"tool set {connection_id!r}: trusted must be True or False")
        self._connection_id = connection_id
        self._name = name
        self._trusted = trusted
        self._instructions = _instructions(connection_id, instructions)
        self._tools: dict[str, Tool] = {}
        self._vetters: list[Callable[[ToolSet, Tool], None]] = []
        for item in tools:
            self.add_tool(item)

    @property
    def connection_id(self) -> str:
        return self._connection_id

    @property
    def name(self) -> str:
        return self._name

    @property
    def trusted(self) -> bool:
        return self._trusted

    @property
    def instructions(self) -> str | None:
        return self._instructions

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Its tools by name, in the order they were added."""
        return dict(self._tools)

    def add_tool(self, value: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (or a function, see `as_tool`) under this set's connection id; returns
        the tool as registered. Names starting with ``ask_`` and the name ``clarify`` are
        refused: they belong to the ask tools."""
        added = as_tool(value).with_connection(self._connection_id)
        if added.name.startswith("ask_"):
            raise ConfigError(
                f"tool {added.name!r} starts with 'ask_', which names the ask tools; rename it"
            )
        if added.name == "clarify":
            raise ConfigError("the name 'clarify' belongs to the clarify tool; rename the tool")
        if added.name in self._tools:
            raise ConfigError(
                f"connection {self._connection_id!r} already has a tool named {added.name!r}"
            )
        for vet in self._vetters:
            vet(self, added)
        self._tools[added.name] = added
        return added

    @overload
    def tool(self, function: F, /) -> F: ...
    @overload
    def tool(
        self, function: None = None, /, **options: Unpack[ToolOptions]
    ) -> Callable[[F], F]: ...
    def tool(
        self, function: F | None = None, /, **options: Unpack[ToolOptions]
    ) -> F | Callable[[F], F]:
        """Register a function as a tool of this set: ``@tools.tool`` or
        ``@tools.tool(read_only=True, ...)``. Returns the function as it is."""

        def register(fn: F) -> F:
            self.add_tool(Tool.from_function(fn, **options))
            return fn

        return register if function is None else register(function)

    def _watch(self, vet: Callable[[ToolSet, Tool], None]) -> None:
        """Call `vet` before each tool added from now on (an agent refusing name clashes)."""
        self._vetters.append(vet)

    def __repr__(self) -> str:
        return (
            f"ToolSet({self._connection_id!r}, {self._name!r}, tools={list(self._tools)}, "
            f"trusted={self._trusted})"
        )


def _instructions(connection_id: str, text: str | None) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(
            f"tool set {connection_id!r}: instructions must be text (1-{INSTRUCTIONS_MAX_CHARS} "
            "characters once trimmed), or None for none"
        )
    trimmed = text.strip()
    if len(trimmed) > INSTRUCTIONS_MAX_CHARS:
        raise ConfigError(
            f"tool set {connection_id!r}: instructions have {len(trimmed)} characters; the "
            f"most is {INSTRUCTIONS_MAX_CHARS}"
        )
    return trimmed


# --------------------------------------------------------------------------------- binding


@dataclass(frozen=True, kw_only=True, slots=True)
class _Binder:
    """How a tool's function takes the checked arguments: the converters of its parameters,
    those it requires, and whether it takes any keyword (``**kwargs``, or no signature)."""

    converters: Mapping[str, Convert | None]
    required: frozenset[str]
    open: bool
    is_async: bool

    def bind(self, tool_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        errors = [f"{name}: required" for name in sorted(self.required - set(arguments))]
        out: dict[str, Any] = {}
        for key, value in arguments.items():
            if key not in self.converters:
                if not self.open:
                    known = ", ".join(self.converters)
                    there = f"the properties are: {known}" if known else "there are none"
                    errors.append(f"{key}: unknown property; {there}")
                    continue
                out[key] = value
                continue
            convert = self.converters[key]
            try:
                out[key] = value if convert is None else convert(value)
            except (TypeError, ValueError) as exc:
                errors.append(f"{key}: {exc}")
        if errors:
            raise InvalidArguments(tool_name, errors)
        return out


def _binder_for(function: Callable[..., Any]) -> _Binder:
    """A lenient binder: parameters whose annotations are not supported pass as they are."""
    is_async = _is_async(function)
    try:
        signature = signature_of(function)
    except ConfigError:
        return _Binder(converters={}, required=frozenset(), open=True, is_async=is_async)
    converters: dict[str, Convert | None] = {}
    required: set[str] = set()
    open_ = False
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            open_ = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.POSITIONAL_ONLY):
            continue
        convert = None
        if param.annotation is not param.empty:
            try:
                convert = derive_type(param.annotation, param.name, frozenset())[1]
            except ConfigError:
                convert = None
        converters[param.name] = convert
        if param.default is param.empty:
            required.add(param.name)
    return _Binder(
        converters=converters, required=frozenset(required), open=open_, is_async=is_async
    )


def _is_async(function: Any) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    if inspect.isroutine(function) or isinstance(function, functools.partial):
        return inspect.iscoroutinefunction(unwrap(function))
    return inspect.iscoroutinefunction(getattr(function, "__call__", None))  # noqa: B004
