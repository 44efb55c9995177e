"""The model interface of the runtime: small on purpose.

Given a system prompt, the messages so far and the tools on offer, a model streams one step:
text deltas as they come, then the tool calls it made (each complete, with parsed arguments).
The runtime runs the tools and calls the model again for the next step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ...errors import HandrailError
from ..messages import Message, ToolCall


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    kind: Literal["text"] = "text"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    kind: Literal["tool-call"] = "tool-call"
    call: ToolCall


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
