"""History rows: built here, and turned back into model messages when a turn replays them.

The rows are the spec's "Stored state": ``user`` and ``assistant`` text rows, and ``tool-call``
/ ``tool-result`` rows (an ask's call row carries ``ask: {kind, status}``). A ``tool-call`` row
also records its ``step`` so that the calls one model step made replay as one assistant message.
Rows of the asks the server makes (``ask.origin`` set: approvals, permission asks) are for
display only and never replayed; the held tool call's own rows are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..asks import AskKind
from ..asks.text import cut_text
from ..store.db import QUICK_ROWS
from .messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage

Row = dict[str, Any]

#: The longest title a conversation gets from its first message (`title_of`).
TITLE_MAX: Final = 60


def user_row(text: str) -> Row:
    return {"type": "user", "text": text}


def title_of(prompt: str) -> str | None:
    """A conversation's title from its first message: the first line, cut."""
    first = prompt.strip().splitlines()
    return cut_text(first[0], TITLE_MAX) if first else None


def assistant_row(text: str) -> Row:
    return {"type": "assistant", "text": text}


def call_row(
    call: ToolCall,
    *,
    step: str,
    ask_kind: AskKind | str | None = None,
    status: str = "pending",
    origin: str | None = None,
    tool_name: str | None = None,
    args: Any = None,
) -> Row:
    row: Row = {
        "type": "tool-call",
        "toolName": tool_name or call.name,
        "toolCallId": call.id,
        "args": call.arguments if args is None else args,
        "step": step,
    }
    if ask_kind is not None:
        ask: dict[str, Any] = {"kind": ask_kind, "status": status}
        if origin is not None:
            ask["origin"] = origin
        row["ask"] = ask
    return row


def result_row(tool_call_id: str, tool_name: str, result: Any, *, is_error: bool = False) -> Row:
    row: Row = {
        "type": "tool-result",
        "toolName": tool_name,
        "toolCallId": tool_call_id,
        "result": result,
    }
    if is_error:
        row["isError"] = True
    return row


def rows_to_messages(rows: Iterable[Mapping[str, Any]]) -> list[Message]:
    """The model messages a list of stored rows replays as.

    Calls of one step become one assistant message followed by their results; approval rows
    and calls that never got a result are left out, so every replayed call has its result.
    """
    rows = list(rows)
    gate_ids = {r.get("toolCallId") for r in rows if _is_gate(r)}
    rows = [r for r in rows if not _is_gate(r) and r.get("toolCallId") not in gate_ids]
    answered = {r.get("toolCallId") for r in rows if r.get("type") == "tool-result"}
    messages: list[Message] = []
    pending_calls: list[ToolCall] = []
    pending_results: list[ToolResultMessage] = []
    step: Any = None

    def flush() -> None:
        nonlocal step
        if pending_calls:
            messages.append(AssistantMessage(tool_calls=tuple(pending_calls)))
            messages.extend(pending_results)
        pending_calls.clear()
        pending_results.clear()
        step = None

    for row in rows:
        kind = row.get("type")
        if kind == "tool-call":
            if row.get("toolCallId") not in answered:
                continue
            if step is not None and row.get("step") != step:
                flush()
            step = row.get("step")
            args = row.get("args")
            pending_calls.append(
                ToolCall(
                    id=str(row.get("toolCallId")),
                    name=str(row.get("toolName")),
                    arguments=args if isinstance(args, dict) else {},
                )
            )
        elif kind == "tool-result":
            result = ToolResultMessage(
                tool_call_id=str(row.get("toolCallId")),
                tool_name=str(row.get("toolName")),
                content=row.get("result"),
                is_error=bool(row.get("isError", False)),
            )
            if any(c.id == result.tool_call_id for c in pending_calls):
                pending_results.append(result)
            # A result whose call is not in the open step belongs to a step already flushed
            # (a later answer to an ask): it follows its step's other results.
            else:
                _insert_late_result(messages, result)
        else:
            flush()
            if kind == "user":
                messages.append(UserMessage(text=str(row.get("text", ""))))
            elif kind == "assistant" and row.get("text"):
                messages.append(AssistantMessage(text=str(row.get("text"))))
    flush()
    return messages


def _insert_late_result(messages: list[Message], result: ToolResultMessage) -> None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage) and any(
            c.id == result.tool_call_id for c in message.tool_calls
        ):
            end = index + 1
            while end < len(messages) and isinstance(messages[end], ToolResultMessage):
                end += 1
            messages.insert(end, result)
            return


def _is_gate(row: Mapping[str, Any]) -> bool:
    """A row of an ask the server made (approval, permission, selection, confirmation): shown
    to people, never replayed to the model (the held call's own rows are)."""
    ask = row.get("ask")
    return isinstance(ask, dict) and bool(ask.get("origin"))


#: Past this many rows, `replayed` turns them into messages on a thread, so that the event
#: loop's part of a turn does not grow with its history (the store reads such a history on a
#: thread too: `QUICK_ROWS`).
THREAD_ROWS: Final = QUICK_ROWS


async def replayed(rows: Sequence[Mapping[str, Any]]) -> list[Message]:
    """`rows_to_messages` of rows' data: here for a short history, on a thread for one of
    more than `THREAD_ROWS` rows."""
    if len(rows) <= THREAD_ROWS:
        return rows_to_messages(rows)
    return await asyncio.to_thread(rows_to_messages, rows)
