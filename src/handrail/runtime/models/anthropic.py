"""The Anthropic adapter: the Messages API through the official ``anthropic`` SDK, streamed.

How handrail's messages become Messages API messages:

- the system prompt is the ``system`` parameter (left out when empty);
- a `UserMessage` is a ``user`` message with one ``text`` block;
- an `AssistantMessage` is an ``assistant`` message: a ``text`` block when it has text, then a
  ``tool_use`` block (``id``, ``name``, ``input``) per tool call; one with neither is left out;
- a `ToolResultMessage` is a ``tool_result`` block (``tool_use_id``, ``content``, and
  ``is_error: true`` for an error) in a ``user`` message. The content is the result as text (a
  string as is, anything else as compact JSON). With files, the content is a list of blocks: that
  text, then for each file its summary line (``File 1 of 2: receipt.png (image/png, 48213
  bytes)``) as a ``text`` block followed by the file: an image as an ``image`` block and a PDF as
  a ``document`` block (base64 sources), a text, CSV or JSON file as a ``text`` block (cut to
  100 KB with a note).

The API wants user and assistant turns to alternate, so consecutive messages of one role are
merged into one message: the tool results of a step become one ``user`` message, and a user
message right after tool results joins them (after the ``tool_result`` blocks, as the API
requires).

Streaming: ``text_delta`` events are yielded as text; a ``tool_use`` block's ``input_json_delta``
fragments are joined and the call is yielded when its block stops (input that is not a JSON
object becomes ``{"__invalid_json__": <raw text>}``, `INVALID_ARGUMENTS_KEY`); ``message_delta``
gives the stop reason and the output tokens; `StepEnd` follows ``message_stop`` with
``{input_tokens, output_tokens}`` usage. A stream that ends before ``message_stop`` raises
`ModelError`. Thinking blocks are not kept, so extended thinking is not supported with tools.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import anthropic
from anthropic import types as sdk

from ...errors import ConfigError
from ..messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from ._convert import (
    base64_data,
    compact_json,
    file_kind,
    file_media_type,
    file_not_shown,
    file_summary,
    file_text,
    guarded_stream,
    parse_tool_arguments,
    sdk_error,
    tool_result_text,
)
from .base import (
    ModelError,
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    ToolSpec,
    storable_stream,
)

if TYPE_CHECKING:
    from anthropic.types import MessageParam, RawMessageStreamEvent, ToolParam

__all__ = ["AnthropicModel", "anthropic_messages", "anthropic_tools"]

_RESERVED: Final = frozenset({"model", "messages", "stream", "system", "tools", "max_tokens"})


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Messages API tools."""
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        for tool in tools
    ]


def _tool_result_block(result: ToolResultMessage) -> dict[str, Any]:
    text = tool_result_text(result)
    content: str | list[dict[str, Any]] = text
    if result.parts:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        total = len(result.parts)
        for position, part in enumerate(result.parts, start=1):
            blocks.append({"type": "text", "text": file_summary(part, position, total)})
            kind = file_kind(part)
            source = {
                "type": "base64",
                "media_type": file_media_type(part),
                "data": base64_data(part),
            }
            if kind == "image":
                blocks.append({"type": "image", "source": source})
            elif kind == "pdf":
                blocks.append({"type": "document", "source": source, "title": part.filename})
            elif kind == "text":
                blocks.append({"type": "text", "text": file_text(part)})
            else:
                blocks.append({"type": "text", "text": file_not_shown(part)})
        content = blocks
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
    }
    if result.is_error:
        block["is_error"] = True
    return block


def anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """handrail's messages as Messages API messages (see the module's docstring)."""
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, UserMessage):
            add("user", [{"type": "text", "text": message.text}])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            )
            add("assistant", blocks)
        else:
            add("user", [_tool_result_block(message)])
    return out


@dataclass(kw_only=True, slots=True)
class _PartialCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class AnthropicModel:
    """A Claude model behind the Messages API.

    ``client`` is used as given (and not closed by `aclose`); otherwise one is made with
    ``api_key``, read by the SDK from ``ANTHROPIC_API_KEY`` when not given. ``max_tokens`` caps
    each step's output (the API requires it). ``options`` go to every request as they are
    (``stop_sequences=[...]``, ``tool_choice={...}``, ``extra_body={...}``...).
    """

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        **options: Any,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("AnthropicModel needs a model id, such as 'claude-sonnet-4-5'.")
        if max_tokens < 1:
            raise ConfigError(f"AnthropicModel max_tokens must be 1 or more, not {max_tokens}.")
        reserved = sorted(_RESERVED & options.keys())
        if reserved:
            raise ConfigError(
                f"AnthropicModel sets {', '.join(reserved)} itself; leave them out of the "
                "options (max_tokens is its own argument)."
            )
        self._model = model
        self._max_tokens = max_tokens
        self._options = options
        self._owns_client = client is None
        if client is None:
            try:
                client = anthropic.AsyncAnthropic(api_key=api_key)
            except anthropic.AnthropicError:
                raise ConfigError(
                    f"Model anthropic:{model} could not be set up: set ANTHROPIC_API_KEY."
                ) from None
        self._client = client
        self._check_options()

    def _check_options(self) -> None:
        """Refuse options the SDK's ``create`` does not take, now rather than on every step."""
        try:
            known = inspect.signature(self._client.messages.create).parameters
        except (TypeError, ValueError):  # pragma: no cover - a client without a signature
            return
        unknown = sorted(set(self._options) - set(known))
        if unknown:
            raise ConfigError(
                f"AnthropicModel does not know the option(s) {', '.join(unknown)}; pass "
                "provider-specific fields in extra_body={...}."
            )

    @property
    def name(self) -> str:
        return f"anthropic:{self._model}"

    @property
    def supports_tools(self) -> bool:
        return True

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        return self._client

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"

    async def aclose(self) -> None:
        """Close the client if this model made it."""
        if self._owns_client:
            await self._client.close()

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step. Raises `ModelError` when the call or the stream fails."""
        extra: dict[str, Any] = dict(self._options)
        if request.system:
            extra["system"] = request.system
        if request.tools:
            extra["tools"] = cast("list[ToolParam]", anthropic_tools(request.tools))
        messages = cast("list[MessageParam]", anthropic_messages(request.messages))
        try:
            sdk_stream = await self._client.messages.create(
                model=self._model,
                max_tokens=self._max_tokens,
                messages=messages,
                stream=True,
                **extra,
            )
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        except TypeError as exc:
            # The SDK's way to say it found no credentials (no ANTHROPIC_API_KEY).
            raise ModelError(
                f"Model {self.name}: the request could not be made ({exc}); check "
                "ANTHROPIC_API_KEY."
            ) from exc

        calls: dict[int, _PartialCall] = {}
        stop_reason: str | None = None
        usage: dict[str, int] = {}
        stopped = False
        async with aclosing(self._events(sdk_stream)) as events:
            async for event in events:
                if isinstance(event, sdk.RawMessageStartEvent):
                    usage["input_tokens"] = event.message.usage.input_tokens
                    usage["output_tokens"] = event.message.usage.output_tokens
                elif isinstance(event, sdk.RawContentBlockStartEvent):
                    block = event.content_block
                    if isinstance(block, sdk.TextBlock) and block.text:
                        yield TextDelta(text=block.text)
                    elif isinstance(block, sdk.ToolUseBlock):
                        calls[event.index] = _PartialCall(id=block.id, name=block.name)
                        if block.input:
                            # Whole input given at the start (not how the API streams today).
                            calls[event.index].arguments.append(
                                compact_json(cast("dict[str, Any]", block.input))
                            )
                elif isinstance(event, sdk.RawContentBlockDeltaEvent):
                    delta = event.delta
                    if isinstance(delta, sdk.TextDelta):
                        if delta.text:
                            yield TextDelta(text=delta.text)
                    elif isinstance(delta, sdk.InputJSONDelta) and event.index in calls:
                        calls[event.index].arguments.append(delta.partial_json)
                elif isinstance(event, sdk.RawContentBlockStopEvent):
                    partial = calls.pop(event.index, None)
                    if partial is not None:
                        yield ToolCallPart(
                            call=ToolCall(
                                id=partial.id,
                                name=partial.name,
                                arguments=parse_tool_arguments("".join(partial.arguments)),
                            )
                        )
                elif isinstance(event, sdk.RawMessageDeltaEvent):
                    if event.delta.stop_reason is not None:
                        stop_reason = event.delta.stop_reason
                    if event.usage.input_tokens is not None:
                        usage["input_tokens"] = event.usage.input_tokens
                    usage["output_tokens"] = event.usage.output_tokens
                elif isinstance(event, sdk.RawMessageStopEvent):
                    stopped = True
        if not stopped:
            raise ModelError(
                f"Model {self.name}: the stream ended before the model finished its step."
            )
        yield StepEnd(finish_reason=stop_reason, usage=usage)

    def _events(
        self, sdk_stream: anthropic.AsyncStream[RawMessageStreamEvent]
    ) -> AsyncGenerator[RawMessageStreamEvent, None]:
        """The SDK's stream, with its errors (and the transport's) turned into `ModelError`."""
        return guarded_stream(
            sdk_stream,
            anthropic.AnthropicError,
            self._error,
            model_name=self.name,
            close=sdk_stream.close,
            lost=(anthropic.APIConnectionError, anthropic.APITimeoutError),
        )

    def _secrets(self) -> tuple[str | None, ...]:
        key = getattr(self._client, "api_key", None)
        return (key,) if isinstance(key, str) else ()

    def _error(self, exc: anthropic.AnthropicError) -> ModelError:
        return sdk_error(
            exc,
            anthropic,
            model_name=self.name,
            host=self._client.base_url.host,
            key_env="ANTHROPIC_API_KEY",
            secrets=self._secrets(),
            fallback=(
                f"Model {self.name}: the Anthropic client failed ({type(exc).__name__}); check "
                "ANTHROPIC_API_KEY."
            ),
            stream_message=False,
        )
