"""handrail's own model message format, versioned, converted to and from JSON in one place.

A paused turn stores its messages (``pendingAsk.responseMessages``) and replays them when the
person answers, maybe after an upgrade of any dependency: so the stored form is ours, never a
provider's or another framework's. Every stored message carries ``"v": MESSAGE_FORMAT_VERSION``;
`message_from_json` reads every version this code has written.

File bytes never reach the stored form: a `FilePart` is only ever sent to the model on the turn
that answered with the file, and `message_to_json` leaves its bytes out.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._frozen import slot_init

MESSAGE_FORMAT_VERSION: Final = 1


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool call the model made: its id, the tool's name and the JSON arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class FilePart:
    """A file shown to the model with a tool result: an image or a PDF as bytes, or text."""

    filename: str
    mime_type: str
    data: bytes = field(repr=False)


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage:
    kind: Literal["user"] = "user"
    text: str


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantMessage:
    """What the model said in one step: text, tool calls, or both."""

    kind: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultMessage:
    """The result of one tool call. `content` is JSON (shown to the model as compact JSON, or
    as is when it is a string); `parts` are files shown after it, on the answering turn only."""

    kind: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    tool_name: str
    content: Any
    is_error: bool = False
    parts: tuple[FilePart, ...] = ()


Message = UserMessage | AssistantMessage | ToolResultMessage


def message_to_json(message: Message, *, keep_file_bytes: bool = False) -> dict[str, Any]:
    """The stored form of a message. File parts are dropped unless `keep_file_bytes`."""
    if isinstance(message, UserMessage):
        return {"v": MESSAGE_FORMAT_VERSION, "kind": "user", "text": message.text}
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"v": MESSAGE_FORMAT_VERSION, "kind": "assistant"}
        if message.text:
            out["text"] = message.text
        if message.tool_calls:
            out["toolCalls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
            ]
        return out
    result: dict[str, Any] = {
        "v": MESSAGE_FORMAT_VERSION,
        "kind": "tool-result",
        "toolCallId": message.tool_call_id,
        "toolName": message.tool_name,
        "content": message.content,
    }
    if message.is_error:
        result["isError"] = True
    if keep_file_bytes and message.parts:
        result["parts"] = [
            {
                "filename": p.filename,
                "mimeType": p.mime_type,
                "data": base64.b64encode(p.data).decode("ascii"),
            }
            for p in message.parts
        ]
    return result


class MessageFormatError(ValueError):
    """A stored message this version cannot read."""


def message_from_json(data: Any) -> Message:
    """Read a stored message. Raises `MessageFormatError` for anything else."""
    if not isinstance(data, dict):
        raise MessageFormatError("a stored message must be an object")
    version = data.get("v")
    if version != MESSAGE_FORMAT_VERSION:
        raise MessageFormatError(
            f"stored message format {version!r} is not known; this handrail reads "
            f"{MESSAGE_FORMAT_VERSION}"
        )
    kind = data.get("kind")
    try:
        if kind == "user":
            return UserMessage(text=str(data["text"]))
        if kind == "assistant":
            calls = tuple(
                ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=dict(c["arguments"]))
                for c in data.get("toolCalls", ())
            )
            return AssistantMessage(text=str(data.get("text", "")), tool_calls=calls)
        if kind == "tool-result":
            parts = tuple(
                FilePart(
                    filename=str(p["filename"]),
                    mime_type=str(p["mimeType"]),
                    data=base64.b64decode(p["data"]),
                )
                for p in data.get("parts", ())
            )
            return ToolResultMessage(
                tool_call_id=str(data["toolCallId"]),
                tool_name=str(data["toolName"]),
                content=data.get("content"),
                is_error=bool(data.get("isError", False)),
                parts=parts,
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise MessageFormatError(f"stored {kind} message is malformed: {exc}") from exc
    raise MessageFormatError(f"stored message kind {kind!r} is not known")


def messages_to_json(messages: list[Message]) -> list[dict[str, Any]]:
    return [message_to_json(m) for m in messages]


def messages_from_json(data: list[Any]) -> list[Message]:
    return [message_from_json(m) for m in data]


def call_ids(messages: Iterable[Message]) -> set[str]:
    """Every tool call id in `messages`: the calls' and the results'."""
    ids: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            ids.update(call.id for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            ids.add(message.tool_call_id)
    return ids
