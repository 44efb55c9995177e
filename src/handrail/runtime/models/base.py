"""The model interface of the runtime: small on purpose.

Given a system prompt, the messages so far and the tools on offer, a model streams one step:
text deltas as they come, then the tool calls it made (each complete, with parsed arguments).
The runtime runs the tools and calls the model again for the next step.

Every adapter's ``stream`` is wrapped with `storable_stream`, so what a model sends is storable
before the runtime sees it: NUL and lone surrogates in text deltas, tool call ids, names and
arguments become U+FFFD (`handrail._util.storable`). A model of your own should do the same.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeVar, runtime_checkable

from ..._frozen import slot_init
from ..._util import REPLACEMENT, storable, storable_text
from ...connections.instructions import Snapshot
from ...errors import HandrailError
from ..messages import Message, ToolCall

S = TypeVar("S")


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """One step's request. `system` is the whole system prompt (the agent's instructions, the
    asks section and the connection instructions); adapters that run an agent outside handrail
    also get its parts: the conversation's id, the agent's name and own instructions, and the
    connection instructions snapshot (None: none apply)."""

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    conversation_id: str | None = None
    agent_name: str = ""
    agent_instructions: str = ""
    connection_instructions: Snapshot | None = None


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    kind: Literal["text"] = "text"
    text: str


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    kind: Literal["tool-call"] = "tool-call"
    call: ToolCall


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class StepEnd:
    """The end of the step, with the provider's reason and token usage when it reports them."""

    kind: Literal["end"] = "end"
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


ModelEvent = TextDelta | ToolCallPart | StepEnd


class ModelError(HandrailError):
    """The model call failed (the provider's error, a timeout, a malformed stream). Its message
    is safe to show: it never holds a key or a prompt."""


@runtime_checkable
class Model(Protocol):
    """A chat model that can stream one step."""

    @property
    def name(self) -> str:
        """``openai:gpt-4.1-mini``, ``anthropic:claude-sonnet-4-5``, ``scripted``."""
        ...

    @property
    def supports_tools(self) -> bool:
        """False for models that cannot call tools: they get no ask tools."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step. Raises `ModelError` when the call fails."""
        ...


# --- storable output --------------------------------------------------------------------------


def _is_high_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


async def storable_events(events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
    """`events` with every NUL and lone surrogate replaced by U+FFFD: in text deltas, and in
    tool calls' ids, names and arguments (keys and values). Clean events pass as they are. A
    delta that ends in half of a surrogate pair waits for the next one, which may hold the
    other half. Closing this closes `events`."""
    held = ""  # a high surrogate that ended the last delta
    try:
        async for event in events:
            if isinstance(event, TextDelta):
                text = held + event.text
                held = ""
                if text and _is_high_surrogate(text[-1]):
                    held, text = text[-1], text[:-1]
                cleaned, _ = storable_text(text)
                if cleaned == event.text:
                    yield event
                elif cleaned:
                    yield TextDelta(text=cleaned)
                continue
            if held:
                yield TextDelta(text=REPLACEMENT)
                held = ""
            if isinstance(event, ToolCallPart):
                yield _storable_call(event)
            elif isinstance(event, StepEnd) and event.finish_reason is not None:
                reason, _ = storable_text(event.finish_reason)
                yield (
                    event
                    if reason is event.finish_reason
                    else StepEnd(finish_reason=reason, usage=event.usage)
                )
            else:
                yield event
        if held:
            yield TextDelta(text=REPLACEMENT)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def _storable_call(event: ToolCallPart) -> ToolCallPart:
    call = event.call
    call_id, _ = storable_text(call.id)
    name, _ = storable_text(call.name)
    arguments, _ = storable(call.arguments)
    if call_id is call.id and name is call.name and arguments is call.arguments:
        return event
    return ToolCallPart(call=ToolCall(id=call_id, name=name, arguments=arguments))


def storable_stream(
    stream: Callable[[S, ModelRequest], AsyncIterator[ModelEvent]],
) -> Callable[[S, ModelRequest], AsyncIterator[ModelEvent]]:
    """Decorates a model's ``stream`` method so that what it streams is storable
    (`storable_events`). Every adapter of handrail's uses it::

        class MyModel:
            @storable_stream
            async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...
    """

    @functools.wraps(stream)
    def wrapper(self: S, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return storable_events(stream(self, request))

    _STORABLE_STREAMS.add(wrapper)
    return wrapper


#: The methods `storable_stream` made (by identity: a copy of one's attributes is not one).
_STORABLE_STREAMS: Final[weakref.WeakSet[Callable[..., Any]]] = weakref.WeakSet()


def storable_output(model: Model, request: ModelRequest) -> AsyncIterator[ModelEvent]:
    """`model`'s stream of one step, storable (`storable_events`): as it comes when its
    ``stream`` is a `storable_stream` method (it is made storable there already), else
    through `storable_events` here."""
    stream = model.stream
    if getattr(stream, "__func__", None) in _STORABLE_STREAMS:
        return stream(request)
    return storable_events(stream(request))
