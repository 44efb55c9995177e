"""Helpers the model adapters share: compact JSON, tool-result text, files, arguments, errors.

Nothing here imports a provider SDK, so the scripted model and ``import handrail.runtime.models``
stay cheap.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, Final, TypeVar

from ..._util import json_encoder
from ...asks.files import cut_text_file, file_summary_line, is_text_file_mime_type
from ..messages import FilePart, ToolResultMessage
from .base import ModelError

T = TypeVar("T")

INVALID_ARGUMENTS_KEY: Final = "__invalid_json__"
"""The only key of a tool call's arguments when the model sent arguments that are not a JSON
object: its value is the raw text the model sent. No tool schema should accept it, so the runtime
answers the call with a tool error the model can act on (and never runs the tool with it)."""

IMAGE_MIME_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
PDF_MIME_TYPE: Final = "application/pdf"


def compact_json(value: Any) -> str:
    """``json.dumps`` with no spaces, keeping non-ASCII characters and the key order."""
    return _COMPACT(value)


#: `json.dumps` with these options, built once (it makes an encoder at each call otherwise).
_COMPACT: Final = json_encoder(separators=(",", ":"), ensure_ascii=False)


def tool_result_text(message: ToolResultMessage) -> str:
    """A tool result's content as the model reads it: a string as is, anything else as compact
    JSON."""
    content = message.content
    return content if isinstance(content, str) else compact_json(content)


def strict_json(text: str) -> Any:
    """``json.loads`` of JSON as RFC 8259 has it: ``NaN``, ``Infinity`` and ``-Infinity`` are
    refused (`ValueError`), as is nesting too deep to parse (`RecursionError` becomes
    `ValueError`), so what it returns can be stored and streamed as JSON."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_tool_arguments(raw: str) -> dict[str, Any]:
    """The arguments of a streamed tool call: ``{}`` for no text, the object the text holds, or
    ``{INVALID_ARGUMENTS_KEY: raw}`` when the text is not a JSON object (``NaN`` and nesting
    too deep to read are not JSON either: `strict_json`)."""
    if not raw.strip():
        return {}
    try:
        value = strict_json(raw)
    except ValueError:
        return {INVALID_ARGUMENTS_KEY: raw}
    if not isinstance(value, dict):
        return {INVALID_ARGUMENTS_KEY: raw}
    return value


def file_kind(part: FilePart) -> str:
    """``image``, ``pdf``, ``text``, or ``other`` for a type no adapter can show."""
    mime_type = part.mime_type.split(";", 1)[0].strip().lower()
    if mime_type in IMAGE_MIME_TYPES:
        return "image"
    if mime_type == PDF_MIME_TYPE:
        return "pdf"
    if is_text_file_mime_type(mime_type):
        return "text"
    return "other"


def file_media_type(part: FilePart) -> str:
    """The part's MIME type in lowercase, without parameters."""
    return part.mime_type.split(";", 1)[0].strip().lower()


def file_summary(part: FilePart, position: int, total: int) -> str:
    """The line the model reads before a file: ``File 1 of 2: receipt.png (image/png, 48213
    bytes)``. `position` counts from 1."""
    return file_summary_line(position, total, part.filename, part.mime_type, len(part.data))


def file_text(part: FilePart) -> str:
    """A text, CSV or JSON file as the model reads it, cut to 100 KB with a note."""
    return cut_text_file(part.data)


def file_not_shown(part: FilePart) -> str:
    return f"[This file is not shown: the model is not sent files of type {part.mime_type}.]"


def base64_data(part: FilePart) -> str:
    return base64.b64encode(part.data).decode("ascii")


def data_url(part: FilePart) -> str:
    return f"data:{file_media_type(part)};base64,{base64_data(part)}"


# Error messages -------------------------------------------------------------------------------

_SECRET_PATTERNS: Final = (
    re.compile(r"\b(?:sk|pk|rk|key|sess)-[A-Za-z0-9_\-*.]{4,}", re.IGNORECASE),
    re.compile(r"\bBearer\s+\S+", re.IGNORECASE),
)
_DETAIL_MAX: Final = 300


def scrub(text: str, *, secrets: tuple[str | None, ...] = ()) -> str:
    """`text` on one line, at most 300 characters, with anything that looks like a key (and each
    of `secrets`) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("[redacted]", text)
    text = " ".join(text.split())
    if len(text) > _DETAIL_MAX:
        text = text[: _DETAIL_MAX - 1] + "…"
    return text


def error_body_details(body: object) -> tuple[str | None, str | None]:
    """The ``(code, message)`` of a provider's error body: OpenAI's ``{error: {code, type,
    message}}`` or its inner object, Anthropic's ``{type: "error", error: {type, message}}``."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if not isinstance(body, Mapping):
        return None, None
    code = body.get("code") or body.get("type")
    message = body.get("message")
    return (
        code if isinstance(code, str) and code else None,
        message if isinstance(message, str) and message else None,
    )


def status_error_message(
    model_name: str,
    status: int,
    *,
    code: str | None,
    detail: str | None,
    key_env: str,
    secrets: tuple[str | None, ...] = (),
) -> str:
    """A safe message for an HTTP error from a provider. The provider's own text is shown only
    for request errors (400, 404, 409, 413, 422), scrubbed; never for 401 and 403, whose texts
    can quote part of the key."""
    suffix = f", {scrub(code)}" if code else ""
    head = f"Model {model_name}: "
    if status == 401:
        return f"{head}the API key was rejected (HTTP 401{suffix}); check {key_env}."
    if status == 403:
        return f"{head}access was refused (HTTP 403{suffix}); check the key's permissions."
    if status == 429:
        return f"{head}rate limit or quota reached (HTTP 429{suffix}); try again later."
    if status >= 500:
        return f"{head}the provider had a server error (HTTP {status}{suffix}); try again later."
    if status < 400:
        # An error event inside a stream that had started well.
        text = f": {scrub(detail, secrets=secrets)}" if detail else ""
        kind = scrub(code) if code else "error"
        return f"{head}the provider reported an error during the stream ({kind}){text}"
    text = f": {scrub(detail, secrets=secrets)}" if detail else ""
    return f"{head}the provider rejected the request (HTTP {status}{suffix}){text}"


def sdk_error(
    exc: Exception,
    sdk: ModuleType,
    *,
    model_name: str,
    host: str | None,
    key_env: str,
    secrets: tuple[str | None, ...],
    fallback: str,
    stream_message: bool = False,
) -> ModelError:
    """A provider SDK's error as a safe `ModelError`. `sdk` is the ``openai`` or ``anthropic``
    module: both SDKs raise the same classes (timeout, connection, status and stream errors).
    With `stream_message`, an error event in a stream shows the SDK's message when its body has
    none. `fallback` is the message for any other error of the SDK."""
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(f"Model {model_name}: the request timed out.")
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(f"Model {model_name}: could not connect to {host or 'the API'}.")
    if isinstance(exc, sdk.APIStatusError | sdk.APIError):
        code, detail = error_body_details(exc.body)
        status = exc.status_code if isinstance(exc, sdk.APIStatusError) else 200
        if stream_message and status == 200:
            detail = detail or exc.message
        return ModelError(
            status_error_message(
                model_name, status, code=code, detail=detail, key_env=key_env, secrets=secrets
            )
        )
    return ModelError(fallback)


async def guarded_stream(
    items: AsyncIterator[T],
    errors: type[Exception],
    to_error: Callable[[Any], ModelError],
    *,
    model_name: str,
    close: Callable[[], Awaitable[None]],
    lost: tuple[type[Exception], type[Exception]] | None = None,
) -> AsyncGenerator[T, None]:
    """`items` with the SDK's `errors` turned into `to_error(exc)` and anything else the stream
    raises into a `ModelError` that it was malformed or cut off; `close` runs at the end.

    `lost` is the SDK's connection error and its timeout (a kind of it): a connection error
    that is not a timeout, raised once the stream had started, is the stream cut off too (the
    ``anthropic`` SDK, 2.17 here, wraps the transport's read error in it; "could not connect"
    would tell the person something else)."""
    try:
        async for item in items:
            yield item
    except errors as exc:
        if lost is not None and isinstance(exc, lost[0]) and not isinstance(exc, lost[1]):
            raise _cut_off(model_name, exc) from exc
        raise to_error(exc) from exc
    except Exception as exc:
        raise _cut_off(model_name, exc) from exc
    finally:
        await close()


def _cut_off(model_name: str, exc: Exception) -> ModelError:
    return ModelError(
        f"Model {model_name}: the stream was malformed or cut off ({type(exc).__name__})."
    )
