"""The audit log and the approvers' inbox.

- ``GET /audit``: every gate asked and how it ended (and the admins' connection changes),
  newest first, paged; an admin reads all of it, a user the records of their own
  conversations and the ones they wrote (the gates they answered). Filters ``tool``, ``user``,
  ``since`` and ``until``; ``format=jsonl`` or ``format=csv`` exports every matching record
  (at most `EXPORT_MAX`) instead of a page.
- ``GET /approvals``: the calls waiting for the caller's approval (they name the caller, or
  ``admins`` for an admin): the gate, the call and its arguments or preview, the agent's last
  message, and who approved so far; never the rest of the conversation.
- ``POST /approvals/{historyId}``: an approver's answer (the ``askResponse`` envelope); the
  result says whether it still waits for others, never the turn's events.

`answer_via` is how the routes name the surface an answer came from: the ``X-Handrail-Via``
header (``web``, ``watch``, ``headless``, ``card``) or the route's own default.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from ..errors import BadRequest
from ..runtime.approvals import is_approver
from ..runtime.messages import AssistantMessage, messages_from_json
from ..store.audit import AuditFilter
from ..store.connections import ActivityRecord
from ..store.paging import Position
from .auth import Caller, header
from .bodies import read_json, runtime_of, store_of
from .connection_schemas import ACTIVITY_SCHEMA
from .openapi import JsonSchema, body, json_ok, problems
from .paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, paged_ok, paged_response
from .problems import ok

__all__ = ["CLIENT_VIAS", "VIA_HEADER", "add_audit_routes", "answer_via"]

VIA_HEADER: Final = "x-handrail-via"
_VIA: Final = VIA_HEADER.encode("latin-1")
#: The surfaces a client may name for its answers (``link`` and ``expiry`` are the server's).
CLIENT_VIAS: Final = ("web", "watch", "headless", "card")
AUDIT_LIST: Final = "audit"
EXPORT_MAX: Final = 10_000
CSV_COLUMNS: Final = (
    "id",
    "created",
    "actor",
    "action",
    "subject",
    "historyId",
    "ownerId",
    "tool",
    "changes",
)


def answer_via(request: Request, default: str) -> str:
    """The surface an answer came from: the client's ``X-Handrail-Via`` when it names one of
    `CLIENT_VIAS`, else `default` (the route's)."""
    named = (header(request, _VIA) or "").strip().lower()
    return named if named in CLIENT_VIAS else default


def _time(name: str, value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            "Validation failed",
            f"{name} is a time such as 2026-12-01T12:00:00Z.",
            fields={name: "an ISO 8601 time"},
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


Text = Annotated[str | None, Query(max_length=255)]


async def list_audit(
    request: Request,
    principal: Caller,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    tool: Text = None,
    user: Text = None,
    since: Annotated[str | None, Query(max_length=40)] = None,
    until: Annotated[str | None, Query(max_length=40)] = None,
    format: Annotated[str, Query(pattern="^(json|jsonl|csv)$")] = "json",
) -> Response:
    where = AuditFilter(
        viewer=principal.user_id,
        admin=principal.is_admin,
        tool=tool,
        user=user,
        since=_time("since", since),
        until=_time("until", until),
    )
    store = store_of(request)
    if format != "json":
        records: list[ActivityRecord] = []
        after: Position | None = None
        while len(records) < EXPORT_MAX:
            page = await store.audit.page(where, limit=200, after=after)
            records.extend(page.items)
            if page.next is None:
                break
            after = page.next
        return _export(records[:EXPORT_MAX], format)
    position = decode_cursor(cursor, AUDIT_LIST, principal.user_id)
    found = await store.audit.page(where, limit=limit, after=position)
    return await paged_response(
        request,
        found,
        lambda r: r.to_json(),
        list_name=AUDIT_LIST,
        user_id=principal.user_id,
        limit=limit,
    )


def _export(records: list[ActivityRecord], format: str) -> Response:
    if format == "jsonl":
        text = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in records)
        return Response(
            text,
            media_type="application/jsonl",
            headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'},
        )
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for record in records:
        data = record.to_json()
        writer.writerow(
            [
                json.dumps(data["changes"], ensure_ascii=False, sort_keys=True)
                if c == "changes"
                else _cell(data.get(c))
                for c in CSV_COLUMNS
            ]
        )
    return Response(
        out.getvalue(),
        media_type="text/csv",
        headers={"Content-Disposition": 'attachment; filename="audit.csv"'},
    )


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # A cell a spreadsheet would run as a formula is quoted as text.
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


async def list_approvals(request: Request, principal: Caller) -> Response:
    store = store_of(request)
    items: list[dict[str, Any]] = []
    for gate in await store.audit.for_approver(principal.user_id, is_admin=principal.is_admin):
        loaded = await store.histories.load(gate.history_id)
        if loaded is None:
            continue
        history, rows = loaded
        pending = history.pending_ask
        if pending is None or pending.tool_call_id != gate.ask_id:
            continue
        if not is_approver(pending, principal):
            continue
        arguments: dict[str, Any] | None = None
        for message in messages_from_json(pending.response_messages or []):
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    if call.id == pending.held_tool_call_id:
                        arguments = dict(call.arguments)
        said = next(
            (
                str(r.data.get("text", ""))
                for r in reversed(rows)
                if r.data.get("type") == "assistant" and r.data.get("text")
            ),
            None,
        )
        item: dict[str, Any] = {
            "historyId": history.id,
            "ownerId": history.owner_id,
            "ask": pending.public("view"),
            "agentMessage": said,
        }
        if arguments is not None:
            item["arguments"] = pending.edited_arguments or arguments
        items.append(item)
    return ok(request, items)


async def answer_approval(
    request: Request,
    principal: Caller,
    history_id: Annotated[str, Path(alias="historyId", max_length=64)],
) -> Response:
    data = await read_json(request)
    runtime = runtime_of(request)
    turn = await runtime.start_approval(principal, history_id, data, via=answer_via(request, "web"))
    waiting = turn.pending_summary is not None and turn.task is None
    store = store_of(request)
    history = await store.histories.get(history_id)
    pending = history.pending_ask if history is not None else None
    out: dict[str, Any] = {
        "historyId": history_id,
        "toolCallId": data.get("toolCallId") if isinstance(data, dict) else None,
        "status": "waiting" if waiting else "answered",
    }
    if waiting and pending is not None:
        out["approvedBy"] = pending.approved_by or []
        out["quorum"] = pending.quorum or 1
    return ok(request, out)


#: An audit record is an activity record with the gate's conversation, owner and tool.
AUDIT_SCHEMA: Final[JsonSchema] = {
    **ACTIVITY_SCHEMA,
    "title": "AuditRecord",
    "properties": {
        **ACTIVITY_SCHEMA["properties"],
        "historyId": {"type": "string"},
        "ownerId": {"type": "string"},
        "tool": {"type": "string"},
    },
}
APPROVAL_ITEM: Final[JsonSchema] = {
    "title": "ApprovalWaiting",
    "type": "object",
    "properties": {
        "historyId": {"type": "string"},
        "ownerId": {"type": "string"},
        "ask": {"type": "object"},
        "arguments": {"type": "object"},
        "agentMessage": {"type": ["string", "null"]},
    },
    "required": ["historyId", "ownerId", "ask"],
}
APPROVAL_ANSWER: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "toolCallId": {"type": "string"},
        "action": {"enum": ["accept", "decline", "cancel"]},
        "content": {
            "type": "object",
            "properties": {"confirmed": {"type": "boolean"}, "arguments": {"type": "object"}},
        },
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["toolCallId", "action"],
}
APPROVAL_RESULT: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "historyId": {"type": "string"},
        "toolCallId": {"type": "string"},
        "status": {"enum": ["waiting", "answered"]},
        "approvedBy": {"type": "array", "items": {"type": "object"}},
        "quorum": {"type": "integer"},
    },
    "required": ["historyId", "status"],
}


def _audit_ok() -> dict[int | str, Any]:
    """The ``200`` of ``GET /audit``: a page as JSON, or with ``format`` the export's file."""
    responses = paged_ok(
        {"type": "array", "items": AUDIT_SCHEMA},
        "A page of the audit log; with `format=jsonl` or `format=csv` every matching record "
        f"(up to {EXPORT_MAX:,}) as a file to download.",
    )
    responses[200]["content"] |= {
        "application/jsonl": {
            "schema": {"type": "string", "description": "One audit record's JSON a line."}
        },
        "text/csv": {
            "schema": {
                "type": "string",
                "description": "A header line, then one record a line; `changes` as JSON text.",
            }
        },
    }
    return responses


def add_audit_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/audit`` and ``<prefix>/approvals...``."""
    router.add_api_route(
        prefix + "/audit",
        list_audit,
        methods=["GET"],
        name="listAudit",
        operation_id="listAudit",
        tags=["audit"],
        summary="Every gate asked and how it ended, newest first (admins: all; a user: theirs)",
        responses={**_audit_ok(), **problems(400)},
    )
    router.add_api_route(
        prefix + "/approvals",
        list_approvals,
        methods=["GET"],
        name="listApprovals",
        operation_id="listApprovals",
        tags=["audit"],
        summary="The calls waiting for the caller's approval",
        responses={
            **json_ok({"type": "array", "items": APPROVAL_ITEM}, "The calls."),
            **problems(),
        },
    )
    router.add_api_route(
        prefix + "/approvals/{historyId}",
        answer_approval,
        methods=["POST"],
        name="answerApproval",
        operation_id="answerApproval",
        tags=["audit"],
        summary="An approver's answer: approve (maybe with edited arguments) or deny",
        openapi_extra=body(APPROVAL_ANSWER),
        responses={**json_ok(APPROVAL_RESULT, "The answer."), **problems(400, 403, 404, 409)},
    )
