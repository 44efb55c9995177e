"""``POST /prompt``: a chat turn, streamed as server-sent events.

Every error of the spec's "Error responses" table is raised before the stream starts, as problem
JSON. Then each event of the turn goes out as ``data: <json>`` and a blank line. The turn runs
as its own task: a client that disconnects stops only its own reading, and the turn still
finishes and is saved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from .._util import json_encoder
from ..asks import ASK_SURFACES
from ..errors import BadRequest
from ..runtime.events import Event
from ..runtime.turn import Principal, Turn
from .audit import answer_via
from .auth import Caller
from .bodies import NO_BODY, FilesAnswer, read_json, runtime_of, store_of
from .body_check import body_check
from .openapi import EDITED_ARGUMENTS, body, problems, ref

__all__ = ["EventStreamResponse", "add_chat_routes", "sse_line"]


class EventStreamResponse(StreamingResponse):
    """A ``text/event-stream`` response that proxies do not buffer."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[str]) -> None:
        super().__init__(
            content,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            media_type=self.media_type,
        )


#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, built once.
_COMPACT: Final = json_encoder(ensure_ascii=False, separators=(",", ":"))


def sse_line(event: Event) -> str:
    """One event on the wire: ``data: <compact JSON>`` and a blank line."""
    return "data: " + _COMPACT(event) + "\n\n"


async def _events(turn: Turn) -> AsyncIterator[str]:
    async for event in turn.stream():
        yield sse_line(event)


def _given(data: dict[str, Any], key: str) -> bool:
    """A field counts as sent when it is there and not null."""
    return data.get(key) is not None


async def _asks_on_for(request: Request, data: dict[str, Any]) -> bool:
    """Whether the agent this body speaks to has asks on (with asks off, ``askResponse`` is
    ignored and ``prompt`` is required, as the spec says)."""
    runtime = runtime_of(request)
    history_id = data.get("historyId")
    if isinstance(history_id, str) and history_id:
        history = await store_of(request).histories.get(history_id)
        if history is not None:
            return runtime.agent_for(history).asks is not None
    name = data.get("agent")
    agent = runtime.agents.get(name) if isinstance(name, str) else runtime.default_agent
    return agent is None or agent.asks is not None


#: The spec's titles ("Error responses") for the ways a prompt body breaks the published
#: ``PromptRequest`` schema, in the order they are reported: the first that applies wins.
#: Each entry: (path, keywords or None for any), title, detail.
PROMPT_PROBLEMS: Final[tuple[tuple[str, frozenset[str] | None, str, str], ...]] = (
    (
        "prompt",
        frozenset({"oneOf"}),
        "prompt is required",
        "Send prompt, or askResponse with historyId.",
    ),
    (
        "askResponse",
        frozenset({"oneOf.several"}),
        "Send either prompt or askResponse, not both",
        "A new message cancels the pending ask; an answer answers it. Send one of them.",
    ),
    ("prompt", None, "prompt is required", "Send a non-empty prompt."),
    (
        "askResponse",
        None,
        "askResponse must be an object",
        'Send askResponse as {"toolCallId", "action", "content"?, "reason"?}.',
    ),
    (
        "askResponse.toolCallId",
        None,
        "askResponse.toolCallId is required",
        "Name the pending ask's toolCallId in askResponse.",
    ),
    (
        "attachments",
        frozenset({"dependentSchemas"}),
        "attachments cannot be sent with askResponse",
        "Send files in the answer of a files ask, not as attachments.",
    ),
    (
        "historyId",
        frozenset({"dependentRequired"}),
        "historyId is required with askResponse",
        "Name the history whose pending ask this answers.",
    ),
    (
        "attachments",
        None,
        "attachments are not supported",
        "This server does not take attachments with a prompt. Ask for files with a files "
        "ask instead.",
    ),
    (
        "surface",
        None,
        "surface is not a known surface",
        f"surface must be one of {', '.join(ASK_SURFACES)}.",
    ),
)


def _validation_failed(fields: dict[str, str], detail: str) -> BadRequest:
    return BadRequest("Validation failed", detail, code="body-validation-failed", fields=fields)


async def _checked_body(request: Request, principal: Principal) -> dict[str, Any]:
    """The body, checked once by the published ``PromptRequest`` schema (`body_check`), each
    violation shown with its title of the spec's table."""
    data = await read_json(request, files_answer=FilesAnswer(principal.user_id))
    if data is NO_BODY:
        data = {}
    if isinstance(data, dict) and data.get("historyId") == "" and _given(data, "askResponse"):
        # An empty historyId names no history: the answer came without one ("historyId is
        # required with askResponse"), as an empty toolCallId is a missing one.
        data = {key: value for key, value in data.items() if key != "historyId"}
    check = body_check("PromptRequest", tuple(sorted(runtime_of(request).agents)))
    violations = check.violations(data)
    if not isinstance(data, dict):
        raise BadRequest("Invalid JSON", "The body must be a JSON object.")
    unknown = {v.path: v.message for v in violations if v.keyword == "additionalProperties"}
    if unknown:
        raise _validation_failed(
            unknown, "The body has fields this route does not take. See fields."
        )
    for v in violations:
        if v.path in ("historyId", "agent") and v.keyword == "type":
            raise _validation_failed({v.path: "must be a string"}, f"{v.path} must be a string.")
    if _given(data, "askResponse") and not await _asks_on_for(request, data):
        # With asks off, an answer is ignored and a prompt is required, as the spec says.
        data = {key: value for key, value in data.items() if key != "askResponse"}
        violations = check.violations(data)
    for path, keywords, title, detail in PROMPT_PROBLEMS:
        for v in violations:
            if v.path == path and (keywords is None or v.keyword in keywords):
                raise BadRequest(title, detail)
    return data


def _check_page_origin(request: Request, page_tools: Any) -> None:
    """A browser names the page it runs in (``Origin``): page tools must be that page's."""
    origin = request.headers.get("origin")
    claimed = page_tools.get("origin") if isinstance(page_tools, dict) else None
    if origin and isinstance(claimed, str) and claimed.lower() != origin.lower():
        raise BadRequest(
            "Validation failed",
            f"pageTools.origin is {claimed!r} but the page runs at {origin!r}. Send the tools "
            "of the page that sends them, with its own origin (location.origin).",
            code="body-validation-failed",
            fields={"pageTools.origin": "must be the origin of the page that sends the request"},
        )


async def prompt(request: Request, principal: Caller) -> EventStreamResponse:
    data = await _checked_body(request, principal)
    runtime = runtime_of(request)
    surface = data.get("surface", "full")
    turn: Turn
    if _given(data, "askResponse"):
        turn = await runtime.start_answer(
            principal,
            data["historyId"],
            data["askResponse"],
            surface=surface,
            via=answer_via(request, "web"),
        )
    else:
        page_tools = data.get("pageTools")
        if page_tools is not None:
            _check_page_origin(request, page_tools)
        turn = await runtime.start_prompt(
            principal,
            data["prompt"],
            history_id=data.get("historyId"),
            surface=surface,
            agent=data.get("agent"),
            via=answer_via(request, "web"),
            page_tools=page_tools,
        )
    return EventStreamResponse(_events(turn))


def add_chat_routes(router: APIRouter, prefix: str) -> None:
    """Add ``POST <prefix>/prompt``."""
    router.add_api_route(
        prefix + "/prompt",
        prompt,
        methods=["POST"],
        name="prompt",
        operation_id="prompt",
        tags=["chat"],
        summary="Send a message or answer the pending ask; the turn streams as SSE",
        description="Errors come before the stream starts, as problem JSON. Each event is one "
        "`data: <JSON>` line and a blank line (see TurnEvent)." + EDITED_ARGUMENTS,
        response_class=EventStreamResponse,
        status_code=200,
        responses={
            200: {
                "description": "The turn's events, as server-sent events.",
                "content": {"text/event-stream": {"schema": ref("TurnEvent")}},
            },
            **problems(400, 403, 404, 409, 413),
        },
        openapi_extra=body(ref("PromptRequest")),
    )
