"""The scripted model: a deterministic stand-in for a chat model. It is not AI.

Tests and the offline demo use it so that a whole turn (asks, approvals, confirmations, errors)
runs without a network, a key or a provider, and always the same way. It reads the last message
and follows fixed rules; it never looks at the system prompt or the tools on offer.

**On a user message** (the last message is a `UserMessage`), every non-blank line that is a
command runs, in order, in one step:

=============================  ==========================================================
``ask_<kind> <json>``          calls the tool ``ask_<kind>`` with the JSON object as input
``clarify <json>``             calls the ``clarify`` tool with the JSON object as input
``call <tool> <json>``         calls any tool with the JSON object as input
``fail``                       raises `ModelError`
``fail-after-text <text>``     streams ``<text>``, then raises `ModelError`
=============================  ==========================================================

The JSON may be left out: the input is then ``{}``. Commands are lowercase and the line must
start with one (``fail`` must stand alone on its line). A message in which every non-blank line
is a command runs them; any other message, including one that mixes commands and plain text,
gets the reply ``You said: <message>`` with the whole message as sent. When a command's JSON
does not parse, or is not an object, nothing runs: the reply says which line and why.

Lines run in order, so ``call a {}`` then ``fail`` yields the call and then raises, as a
provider can fail partway through a step.

**After tool results** (the last messages are `ToolResultMessage` rows), it replies with one
line per result, in order: ``<toolName> returned: <compact JSON of the content>``, or
``<toolName> failed: <error>`` when the result is an error (the content as is when it is a
string, else as compact JSON). Files shown with a result are not described.

Text streams in several deltas, one per word with the spaces after it, so that streaming is
exercised. Tool call ids are ``call_<n>_<i>``: ``n`` the number of messages so far, ``i`` the
call's place in the step, so they are the same on every run and never repeat an id already in
the history.

A *playbook* maps plain-language prompts to command text, for the demo agent: a user message that
matches a key (after stripping and lowercasing both) runs that key's commands instead.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..messages import (
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    call_ids,
)
from ._convert import compact_json
from .base import (
    ModelError,
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    storable_stream,
)

__all__ = ["ScriptedModel"]

_USAGE: Final = (
    "Each command line is `ask_<kind> <json>`, `clarify <json>`, `call <tool> <json>`, `fail` "
    "or `fail-after-text <text>`, where <json> is one JSON object (or nothing, for {})."
)
_WORDS: Final = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Command:
    line: int
    verb: str  # "call", "fail" or "fail-after-text"
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


def _json_object(line: int, head: str, text: str) -> dict[str, Any] | str:
    """The JSON object on a command line, or the problem with it."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {line} ({head}): the JSON is not valid: {exc.msg} (column {exc.colno})."
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"a {type(value).__name__} value"
        if value is None:
            kind = "null"
        return f"line {line} ({head}): the input must be a JSON object, not {kind}."
    return value


def _split_head(text: str) -> tuple[str, str]:
    """The first word of `text` and the rest, both stripped."""
    parts = text.split(None, 1)
    if not parts:
        return "", ""
    return parts[0], parts[1].strip() if len(parts) > 1 else ""


def _parse_line(line: int, text: str) -> _Command | str | None:
    """A command, the problem with a command line, or None for a line that is not a command."""
    head, rest = _split_head(text)
    if head == "fail":
        return _Command(line=line, verb="fail") if not rest else None
    if head == "fail-after-text":
        return _Command(line=line, verb="fail-after-text", text=rest)
    if head == "call":
        tool, arguments_text = _split_head(rest)
        if not tool:
            return f"line {line} (call): name the tool to call, as in `call lookup {{}}`."
        parsed = _json_object(line, f"call {tool}", arguments_text)
    elif head == "clarify" or (head.startswith("ask_") and len(head) > len("ask_")):
        tool = head
        parsed = _json_object(line, head, rest)
    else:
        return None
    if isinstance(parsed, str):
        return parsed
    return _Command(line=line, verb="call", tool=tool, arguments=parsed)


def _words(text: str) -> list[str]:
    return _WORDS.findall(text)


class ScriptedModel:
    """A deterministic model for tests and the offline demo. **It is not AI**: it follows the
    commands in the user's message and echoes tool results, by the fixed rules of
    `handrail.runtime.models.scripted`.

    ``playbook`` maps plain-language prompts to command text (matched after stripping and
    lowercasing), consulted before the commands.
    """

    def __init__(self, *, playbook: Mapping[str, str] | None = None) -> None:
        self._playbook = {key.strip().lower(): value for key, value in (playbook or {}).items()}

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def supports_tools(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"ScriptedModel(playbook={len(self._playbook)} prompts)"

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step by the rules above. Raises `ModelError` for ``fail``,
        ``fail-after-text``, and a history that does not end with a user message or tool
        results."""
        messages = request.messages
        last = messages[-1] if messages else None
        if isinstance(last, UserMessage):
            async for event in self._follow(last.text, messages):
                yield event
        elif isinstance(last, ToolResultMessage):
            async for event in self._text(self._results_reply(messages)):
                yield event
            yield StepEnd(finish_reason="stop")
        else:
            raise ModelError(
                "The scripted model replies to a user message or to tool results; the "
                "conversation ends with neither."
            )

    async def _follow(self, message: str, messages: Sequence[Message]) -> AsyncIterator[ModelEvent]:
        script = self._playbook.get(message.strip().lower(), message)
        lines = [(n, line) for n, line in enumerate(script.splitlines(), start=1) if line.strip()]
        parsed = [_parse_line(n, line) for n, line in lines]
        if not parsed or any(item is None for item in parsed):
            async for event in self._text(f"You said: {message}"):
                yield event
            yield StepEnd(finish_reason="stop")
            return
        problems = [item for item in parsed if isinstance(item, str)]
        if problems:
            reply = "\n".join(
                [
                    "The scripted model (not AI) could not run these commands:",
                    *(f"- {problem}" for problem in problems),
                    _USAGE,
                ]
            )
            async for event in self._text(reply):
                yield event
            yield StepEnd(finish_reason="stop")
            return

        taken = call_ids(messages)
        # Only calls come before the last command: `fail` and `fail-after-text` end the step.
        for index, command in enumerate(parsed):
            assert isinstance(command, _Command)
            if command.verb == "fail":
                raise ModelError(
                    f"The scripted model failed on purpose (`fail` on line {command.line})."
                )
            if command.verb == "fail-after-text":
                async for event in self._text(command.text):
                    yield event
                raise ModelError(
                    "The scripted model failed on purpose after its text "
                    f"(`fail-after-text` on line {command.line})."
                )
            call_id = self._call_id(len(messages), index, taken)
            taken.add(call_id)
            await asyncio.sleep(0)
            yield ToolCallPart(
                call=ToolCall(id=call_id, name=command.tool, arguments=command.arguments)
            )
        yield StepEnd(finish_reason="tool_calls")

    @staticmethod
    def _call_id(position: int, index: int, taken: set[str]) -> str:
        call_id = f"call_{position}_{index}"
        extra = 1
        while call_id in taken:
            call_id = f"call_{position}_{index}_{extra}"
            extra += 1
        return call_id

    @staticmethod
    def _results_reply(messages: Sequence[Message]) -> str:
        start = len(messages)
        while start > 0 and isinstance(messages[start - 1], ToolResultMessage):
            start -= 1
        lines: list[str] = []
        for result in messages[start:]:
            assert isinstance(result, ToolResultMessage)
            if result.is_error:
                content = result.content
                error = content if isinstance(content, str) else compact_json(content)
                lines.append(f"{result.tool_name} failed: {error}")
            else:
                lines.append(f"{result.tool_name} returned: {compact_json(result.content)}")
        return "\n".join(lines)

    @staticmethod
    async def _text(text: str) -> AsyncIterator[ModelEvent]:
        for word in _words(text):
            await asyncio.sleep(0)
            yield TextDelta(text=word)
