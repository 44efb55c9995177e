"""The OpenAI adapter: Chat Completions through the official ``openai`` SDK, streamed.

Chat Completions is the API that OpenAI-compatible servers implement, so the same adapter talks
to OpenAI, Azure OpenAI, Ollama, vLLM or a llama.cpp server: pass ``base_url`` (or set
``OPENAI_BASE_URL``) and a key (``OPENAI_API_KEY``; any value for a server that needs none).

How handrail's messages become Chat Completions messages:

- the system prompt is the first message, ``role: system`` (left out when empty);
- a `UserMessage` is a ``user`` message with its text;
- an `AssistantMessage` is an ``assistant`` message with its text (``null`` when it only called
  tools) and ``tool_calls`` (``type: function``, the arguments as a compact JSON string);
- a `ToolResultMessage` is a ``tool`` message with ``tool_call_id`` and the content as text: a
  string as is, anything else as compact JSON, after ``Error: `` when the result is an error.

Files: a ``tool`` message can only hold text, so the files shown with the tool results of a
step go in one ``user`` message right after that step's ``tool`` messages. For each result with
files it holds the line ``Files from <toolName> (tool call <id>):``, then for each file its
summary line (``File 1 of 2: receipt.png (image/png, 48213 bytes)``) followed by the file: an
image as an ``image_url`` part with a base64 data URL, a PDF as a ``file`` part (``file_data``
data URL and ``filename``), a text, CSV or JSON file as a ``text`` part (cut to 100 KB with a
note). The model needs vision (and file input, for PDFs) to read them.

Streaming: text deltas are yielded as they come. Tool calls are gathered by their index (id,
name, argument fragments) and yielded, in index order, when the stream ends, then `StepEnd`
with the finish reason and ``{input_tokens, output_tokens}`` usage. Arguments that are not a
JSON object are passed on as ``{"__invalid_json__": <raw text>}`` (`INVALID_ARGUMENTS_KEY`) so
the runtime answers the call with a tool error the model can correct, rather than failing the
turn. A stream that ends without a finish reason raises `ModelError`.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import openai

from ...errors import ConfigError
from ..messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from ._convert import (
    compact_json,
    data_url,
    file_kind,
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
    from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

__all__ = ["OpenAIModel", "openai_messages", "openai_tools"]

_RESERVED: Final = frozenset({"model", "messages", "stream", "stream_options", "tools"})


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Chat Completions function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def _file_content(result: ToolResultMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {
            "type": "text",
            "text": f"Files from {result.tool_name} (tool call {result.tool_call_id}):",
        }
    ]
    total = len(result.parts)
    for position, part in enumerate(result.parts, start=1):
        parts.append({"type": "text", "text": file_summary(part, position, total)})
        kind = file_kind(part)
        if kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": data_url(part)}})
        elif kind == "pdf":
            parts.append(
                {"type": "file", "file": {"filename": part.filename, "file_data": data_url(part)}}
            )
        elif kind == "text":
            parts.append({"type": "text", "text": file_text(part)})
        else:
            parts.append({"type": "text", "text": file_not_shown(part)})
    return parts


def openai_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """handrail's messages as Chat Completions messages (see the module's docstring)."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    files: list[dict[str, Any]] = []
    for message in messages:
        if files and not isinstance(message, ToolResultMessage):
            out.append({"role": "user", "content": files})
            files = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": message.text if message.text or not message.tool_calls else None,
            }
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": compact_json(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
        else:
            text = tool_result_text(message)
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": f"Error: {text}" if message.is_error else text,
                }
            )
            if message.parts:
                files.extend(_file_content(message))
    if files:
        out.append({"role": "user", "content": files})
    return out


@dataclass(kw_only=True, slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIModel:
    """A chat model behind the Chat Completions API (OpenAI or any compatible server).

    ``client`` is used as given (and not closed by `aclose`); otherwise one is made from
    ``base_url`` and ``api_key``, each read by the SDK from ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` when not given. ``options`` go to every request as they are
    (``temperature=0.2``, ``max_completion_tokens=1024``, ``parallel_tool_calls=False``...).
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("OpenAIModel needs a model id, such as 'gpt-4.1-mini'.")
        reserved = sorted(_RESERVED & options.keys())
        if reserved:
            raise ConfigError(
                f"OpenAIModel sets {', '.join(reserved)} itself; leave them out of the options."
            )
        self._model = model
        self._options = options
        self._owns_client = client is None
        if client is None:
            try:
                client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url)
            except openai.OpenAIError:
                raise ConfigError(
                    f"Model openai:{model} needs an API key: set OPENAI_API_KEY (any value "
                    "for an OpenAI-compatible server that needs none)."
                ) from None
        self._client = client
        self._check_options()

    def _check_options(self) -> None:
        """Refuse options the SDK's ``create`` does not take, now rather than on every step."""
        try:
            known = inspect.signature(self._client.chat.completions.create).parameters
        except (TypeError, ValueError):  # pragma: no cover - a client without a signature
            return
        unknown = sorted(set(self._options) - set(known))
        if unknown:
            raise ConfigError(
                f"OpenAIModel does not know the option(s) {', '.join(unknown)}; pass "
                "provider-specific fields in extra_body={...}."
            )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def supports_tools(self) -> bool:
        """False for image models (ids containing ``image``), which cannot call tools."""
        return "image" not in self._model.lower()

    @property
    def client(self) -> openai.AsyncOpenAI:
        return self._client

    def __repr__(self) -> str:
        return f"OpenAIModel({self._model!r})"

    async def aclose(self) -> None:
        """Close the client if this model made it."""
        if self._owns_client:
            await self._client.close()

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step. Raises `ModelError` when the call or the stream fails."""
        extra: dict[str, Any] = dict(self._options)
        if request.tools and self.supports_tools:
            extra["tools"] = openai_tools(request.tools)
        messages = cast(
            "list[ChatCompletionMessageParam]", openai_messages(request.system, request.messages)
        )
        try:
            sdk_stream = await self._client.chat.completions.create(
                model=self._model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **extra,
            )
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc

        calls: dict[int, _PartialCall] = {}
        finish_reason: str | None = None
        usage: dict[str, int] = {}
        async with aclosing(self._chunks(sdk_stream)) as chunks:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = {
                        "input_tokens": chunk.usage.prompt_tokens,
                        "output_tokens": chunk.usage.completion_tokens,
                    }
                for choice in chunk.choices:
                    if choice.index != 0:
                        continue
                    delta = choice.delta
                    if delta.content:
                        yield TextDelta(text=delta.content)
                    if delta.refusal:
                        yield TextDelta(text=delta.refusal)
                    for fragment in delta.tool_calls or ():
                        partial = calls.setdefault(fragment.index, _PartialCall())
                        if fragment.id and not partial.id:
                            partial.id = fragment.id
                        if fragment.function is not None:
                            partial.name += fragment.function.name or ""
                            partial.arguments.append(fragment.function.arguments or "")
                    if choice.finish_reason:
                        finish_reason = choice.finish_reason
        if finish_reason is None:
            raise ModelError(
                f"Model {self.name}: the stream ended before the model finished its step."
            )
        for index in sorted(calls):
            partial = calls[index]
            yield ToolCallPart(
                call=ToolCall(
                    id=partial.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=partial.name,
                    arguments=parse_tool_arguments("".join(partial.arguments)),
                )
            )
        yield StepEnd(finish_reason=finish_reason, usage=usage)

    def _chunks(
        self, sdk_stream: openai.AsyncStream[ChatCompletionChunk]
    ) -> AsyncGenerator[ChatCompletionChunk, None]:
        """The SDK's stream, with its errors (and the transport's) turned into `ModelError`."""
        return guarded_stream(
            sdk_stream,
            openai.OpenAIError,
            self._error,
            model_name=self.name,
            close=sdk_stream.close,
            lost=(openai.APIConnectionError, openai.APITimeoutError),
        )

    def _secrets(self) -> tuple[str | None, ...]:
        key = getattr(self._client, "api_key", None)
        return (key,) if isinstance(key, str) else ()

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        return sdk_error(
            exc,
            openai,
            model_name=self.name,
            host=self._client.base_url.host,
            key_env="OPENAI_API_KEY",
            secrets=self._secrets(),
            fallback=f"Model {self.name}: the OpenAI client failed ({type(exc).__name__}).",
            stream_message=True,
        )
