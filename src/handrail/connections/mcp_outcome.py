"""A tool call's result for the model (`CallOutcome`), or why there is none yet
(`McpCallFailed`: the server failed, timed out, or is not there; `ElicitationNeeded`: it waits
on a person).

A result: text as text, otherwise ``{content, structuredContent}`` as the SDK gives them, and
``isError``. An image or audio block keeps its place, type and MIME type, with its data
replaced by its size and a note: no file bytes are stored in a conversation. Images (PNG, JPEG,
GIF, WebP, up to `IMAGE_MAX_BYTES`) come with the outcome as `McpFile`s, for the model to see
with the result on that turn.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..errors import HandrailError
from .elicitation import ElicitationRequest

__all__ = [
    "IMAGE_MAX_BYTES",
    "CallOutcome",
    "ElicitationNeeded",
    "FailureCode",
    "McpCallFailed",
    "McpFile",
    "outcome_of",
]

#: The largest image of a tool result shown to the model (a provider's own limit).
IMAGE_MAX_BYTES: Final = 5 * 1024 * 1024
_IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
FailureCode = Literal["TOOL_SERVER_ERROR", "TOOL_TIMEOUT", "TOOL_CONNECTION_ERROR"]


class McpCallFailed(HandrailError):
    """A call that did not give a result: the message is for the model, `code` says why."""

    def __init__(self, message: str, *, code: FailureCode) -> None:
        super().__init__(message)
        self.code = code


class ElicitationNeeded(HandrailError):
    """A call that waits on a person: the server asked for input (elicitation). `request` is
    what it asked; `resume` (JSON) is how to go on once answered (`McpLink.resume`): for a
    2026-07-28 server the call's ``requestState`` and its rounds, byte-exact; for a legacy
    server the id of the call parked in this process; for a URL-required round (see
    `mcp_rounds`) the URLs and the consents so far."""

    def __init__(self, request: ElicitationRequest, resume: dict[str, Any]) -> None:
        super().__init__(f"{request.server} asks for input")
        self.request = request
        self.resume = resume


@dataclass(frozen=True, kw_only=True, slots=True)
class McpFile:
    """An image of a tool result, for the model to see with it."""

    filename: str
    mime_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class CallOutcome:
    """A tool's result for the model, and whether the server marked it an error; `files` are
    the result's images, shown to the model with it."""

    content: Any
    is_error: bool = False
    files: tuple[McpFile, ...] = ()

    @property
    def error_text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content.get("content", []) if isinstance(self.content, dict) else []
        texts = [
            p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(t for t in texts if t) or "The tool reported an error."


def outcome_of(result: Any) -> CallOutcome:
    """What the model gets from a `CallToolResult`: the text alone when the result is only text,
    else its content and structured content as JSON (binary data replaced by its size, images
    given as `McpFile`s)."""
    parts: list[dict[str, Any]] = []
    files: list[McpFile] = []
    for item in result.content:
        data = item.model_dump(mode="json", by_alias=True, exclude_none=True)
        if data.get("type") in ("image", "audio") and isinstance(data.get("data"), str):
            raw = _decoded(data.pop("data"))
            mime_type = str(data.get("mimeType") or "application/octet-stream").lower()
            data["size"] = len(raw) if raw is not None else 0
            shown = (
                data["type"] == "image"
                and raw is not None
                and mime_type in _IMAGE_TYPES
                and len(raw) <= IMAGE_MAX_BYTES
            )
            if shown and raw is not None:
                number = len(files) + 1
                extension = mime_type.split("/", 1)[1].replace("jpeg", "jpg")
                files.append(
                    McpFile(filename=f"image-{number}.{extension}", mime_type=mime_type, data=raw)
                )
                data["note"] = (
                    f"image {number} of this result, shown to you with it; its bytes are not stored"
                )
            else:
                data["note"] = (
                    f"{data['type']} of {data['size']} bytes ({mime_type}), not shown to the "
                    "model; its bytes are not stored"
                )
        data.pop("_meta", None)
        parts.append(data)
    structured = result.structured_content
    if structured is None and parts and all(p.get("type") == "text" for p in parts):
        return CallOutcome(
            content="\n".join(str(p.get("text", "")) for p in parts), is_error=result.is_error
        )
    content: dict[str, Any] = {"content": parts}
    if structured is not None:
        content["structuredContent"] = structured
    return CallOutcome(content=content, is_error=bool(result.is_error), files=tuple(files))


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        return None
