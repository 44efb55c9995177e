"""The events of a turn, as they go on the wire (one JSON object per SSE ``data:`` line).

`text`, `toolCall`, `toolResult`, `ask`, `askResolved`, `error` and `done`, with the shapes of
the spec's "SSE events". Each is built by one function here so the shapes live in one place.
"""

from __future__ import annotations

from typing import Any

from ..asks import PendingAsk

Event = dict[str, Any]


def text_event(text: str) -> Event:
    return {"text": text}


def tool_call_event(tool_call_id: str, tool_name: str, args: Any) -> Event:
    return {"toolCall": {"toolCallId": tool_call_id, "toolName": tool_name, "args": args}}


def tool_result_event(tool_call_id: str, tool_name: str, result: Any) -> Event:
    return {"toolResult": {"toolCallId": tool_call_id, "toolName": tool_name, "result": result}}


def ask_event(pending_ask: PendingAsk, history_id: str) -> Event:
    """The ``{ask}`` event of a stored pending ask: only the keys `PENDING_ASK_FIELDS`
    declares public on the ``event`` surface (never ``promptIndex`` or
    ``responseMessages``)."""
    return {"ask": pending_ask.public("event"), "historyId": history_id}


def ask_resolved_event(tool_call_id: str, action: str) -> Event:
    return {"askResolved": {"toolCallId": tool_call_id, "action": action}}


def error_event(message: str) -> Event:
    return {"error": message}


def done_event(
    history_id: str, *, title: str | None = None, pending_tool_call_id: str | None = None
) -> Event:
    event: Event = {"done": True, "historyId": history_id}
    if title:
        event["title"] = title
    if pending_tool_call_id is not None:
        event["pendingAsk"] = {"toolCallId": pending_tool_call_id}
    return event
