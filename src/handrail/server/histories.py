"""The history routes: create, list, read, update and delete conversations, list the caller's
pending asks, and the headless ``turn`` action.

Owners only. An admin may read another user's history (``GET /histories/{id}``) but never
change it, delete it or speak in it: a turn speaks as the conversation's owner.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response

from ..errors import BadRequest, DomainError, NotOwner, ProblemError
from ..runtime.turn import Principal, Turn
from ..store import UserEvent
from ..store.records import History
from .audit import answer_via
from .auth import Caller
from .bodies import NO_BODY, FilesAnswer, read_json, runtime_of, store_of
from .body_check import body_check
from .openapi import EDITED_ARGUMENTS, body, json_ok, problems, ref
from .paging import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    Search,
    decode_cursor,
    paged_ok,
    paged_response,
)
from .problems import HEADLESS_PROBLEMS, forbidden, not_found, ok, problem_for
from .views import history_json, pending_ask_summary

__all__ = ["add_history_routes"]

HistoryId = Annotated[str, Path(alias="id", description="The history's id.")]

TITLE_MAX: Final = 200
NOT_AUTHORIZED: Final = "Not authorized to access this history"
NOT_FOUND_CODE: Final = "document-not-found"
TURN_CODE: Final = "action-body-validation-failed"


# --- access ----------------------------------------------------------------------------------


def _not_found(history_id: str) -> ProblemError:
    return not_found(
        "Document not found", f"No history has the id {history_id!r}.", code=NOT_FOUND_CODE
    )


async def _history(request: Request, history_id: str) -> History:
    history = await store_of(request).histories.get(history_id)
    if history is None:
        raise _not_found(history_id)
    return history


async def readable_history(request: Request, principal: Principal, history_id: str) -> History:
    """The history when the caller owns it or is an admin."""
    history = await _history(request, history_id)
    if history.owner_id != principal.user_id and not principal.is_admin:
        raise forbidden(NOT_AUTHORIZED, "The history belongs to another user.")
    return history


async def owned_history(request: Request, principal: Principal, history_id: str) -> History:
    """The history when the caller owns it (admins included: a change speaks as the owner)."""
    history = await _history(request, history_id)
    if history.owner_id != principal.user_id:
        detail = "The history belongs to another user."
        if principal.is_admin:
            detail += " An admin may read it but not change it."
        raise forbidden(NOT_AUTHORIZED, detail)
    return history


# --- bodies ----------------------------------------------------------------------------------


def _invalid(fields: dict[str, str], code: str = "body-validation-failed") -> BadRequest:
    return BadRequest(
        "Validation failed",
        "The body does not have the shape this route takes. See fields.",
        code=code,
        fields=fields,
    )


async def _history_body(request: Request, *, create: bool) -> dict[str, Any]:
    """``{title?, agent?}`` (agent only on create), checked by the published ``HistoryCreate``
    or ``HistoryUpdate`` schema. Read-only fields are dropped; any other field is a 400. An
    agent that is not one of the agents is left to the runtime (``Unknown agent``)."""
    data = await read_json(request, invalid=lambda message: _invalid({"body": message}))
    if data is NO_BODY or (type(data) is dict and not data):
        return {}  # nothing to check: the schema requires no field
    agents = tuple(sorted(runtime_of(request).agents))
    check = body_check("HistoryCreate" if create else "HistoryUpdate", agents)
    fields = {
        v.path: v.message
        for v in check.violations(data)
        if not (v.path == "agent" and v.keyword == "enum")
    }
    if fields:
        raise _invalid(dict(sorted(fields.items())))
    out: dict[str, Any] = check.clean(data)
    if isinstance(out.get("title"), str):
        out["title"] = out["title"].strip()
    return out


# --- routes ----------------------------------------------------------------------------------


async def create_history(request: Request, principal: Caller) -> JSONResponse:
    values = await _history_body(request, create=True)
    runtime = runtime_of(request)
    agent = runtime.agent_named(values.get("agent"))
    store = store_of(request)
    history = await store.histories.create(
        principal.user_id, agent=agent.name, title=values.get("title"), announce=True
    )
    # Its first prompt starts from it, checked (`LastCommits`), instead of reading it.
    runtime.last_commits.created(history)
    return ok(request, history_json(history, []), status_code=201)


async def list_histories(
    request: Request,
    principal: Caller,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    q: Search = None,
) -> Response:
    after = decode_cursor(cursor, "histories", principal.user_id)
    page = await store_of(request).histories.list_page(
        principal.user_id, limit=limit, after=after, query=q
    )
    return await paged_response(
        request, page, history_json, list_name="histories", user_id=principal.user_id, limit=limit
    )


async def list_pending_asks(
    request: Request, principal: Caller, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> Response:
    after = decode_cursor(cursor, "pendingAsks", principal.user_id)
    page = await store_of(request).histories.pending_page(
        principal.user_id, limit=limit, after=after
    )
    return await paged_response(
        request,
        page,
        pending_ask_summary,
        list_name="pendingAsks",
        user_id=principal.user_id,
        limit=limit,
    )


async def read_history(request: Request, principal: Caller, history_id: HistoryId) -> JSONResponse:
    await readable_history(request, principal, history_id)
    loaded = await store_of(request).histories.load(history_id)
    if loaded is None:
        raise _not_found(history_id)
    history, rows = loaded
    running = await runtime_of(request).running.of(history_id)
    return ok(request, history_json(history, rows, running))


async def update_history(
    request: Request, principal: Caller, history_id: HistoryId
) -> JSONResponse:
    before = await owned_history(request, principal, history_id)
    values = await _history_body(request, create=False)
    store = store_of(request)
    if "title" in values:
        await store.histories.update_title(history_id, values["title"])
    loaded = await store.histories.load(history_id)
    if loaded is None:
        raise _not_found(history_id)
    history, rows = loaded
    running = await runtime_of(request).running.of(history_id)
    if history.title != before.title:
        await store.events.publish(
            UserEvent(
                kind="history.renamed",
                user_id=history.owner_id,
                history_id=history.id,
                data={"title": history.title},
            )
        )
    return ok(request, history_json(history, rows, running))


async def delete_history(
    request: Request, principal: Caller, history_id: HistoryId
) -> JSONResponse:
    history = await owned_history(request, principal, history_id)
    store = store_of(request)
    await store.histories.delete(history_id)
    await store.events.publish(
        UserEvent(kind="history.deleted", user_id=history.owner_id, history_id=history_id)
    )
    return ok(request, {"id": history_id, "deleted": True})


async def stop_history(request: Request, principal: Caller, history_id: HistoryId) -> JSONResponse:
    """Stop the conversation's running turn (in any server process) and cancel the ask it
    waits on; nothing held runs or is sent after it."""
    await owned_history(request, principal, history_id)
    result = await runtime_of(request).stop(principal, history_id)
    return ok(request, result.to_json())


# --- the headless turn -------------------------------------------------------------------------


def _turn_body(data: Any) -> dict[str, Any]:
    """Exactly one of ``{prompt}``, ``{askResponse}`` or ``{toolCallId, buttonId}``, plus an
    optional ``surface``, as the published ``TurnRequest`` schema says; anything else is 400
    ``Validation failed`` with ``fields``."""
    if data is NO_BODY:
        data = None
    fields = body_check("TurnRequest").field_errors(data)
    if fields:
        raise _invalid(fields, TURN_CODE)
    assert isinstance(data, dict)
    prompt = data.get("prompt")
    if isinstance(prompt, str) and not prompt.strip():
        # The schema takes any non-empty string; a prompt of only whitespace is no message
        # either, refused here with the headless table's title rather than the chat route's.
        raise _invalid({"prompt": "must hold visible text, not only whitespace"}, TURN_CODE)
    return data


def _headless_problem(exc: DomainError, principal: Principal) -> ProblemError:
    """A domain error with the titles and codes of the headless table."""
    if isinstance(exc, NotOwner) and principal.is_admin:
        return forbidden(
            NOT_AUTHORIZED,
            "A turn speaks as the conversation's owner; an admin cannot send one to "
            "another user's history.",
        )
    problem = problem_for(exc, HEADLESS_PROBLEMS)
    return ProblemError(
        problem["title"],
        problem["detail"],
        status=problem["status"],
        code=problem.get("code"),
        fields=problem.get("fields"),
    )


async def turn(request: Request, principal: Caller, history_id: HistoryId) -> JSONResponse:
    data = await read_json(
        request,
        invalid=lambda m: _invalid({"body": m}, TURN_CODE),
        files_answer=FilesAnswer(principal.user_id, history_id),
    )
    checked = _turn_body(data)
    runtime = runtime_of(request)
    surface = checked.get("surface", "full")
    started: Turn
    try:
        if "prompt" in checked:
            started = await runtime.start_prompt(
                principal, checked["prompt"], history_id=history_id, surface=surface
            )
        elif "askResponse" in checked:
            started = await runtime.start_answer(
                principal,
                history_id,
                checked["askResponse"],
                surface=surface,
                via=answer_via(request, "headless"),
            )
        else:
            started = await runtime.start_button(
                principal,
                history_id,
                checked["toolCallId"],
                checked["buttonId"],
                surface=surface,
                via=answer_via(request, "card"),
            )
    except DomainError as exc:
        raise _headless_problem(exc, principal) from None
    # The turn runs as its own task: a client that disconnects now does not stop it.
    result = await started.result()
    return ok(request, result.to_json())


def add_history_routes(router: APIRouter, prefix: str, *, asks_enabled: bool) -> None:
    """Add the routes under ``<prefix>/histories``. ``pendingAsks`` and ``turn`` (the headless
    endpoints) exist only when an agent has asks on."""
    router.add_api_route(
        prefix + "/histories",
        create_history,
        methods=["POST"],
        name="createHistory",
        operation_id="createHistory",
        tags=["histories"],
        summary="Start a conversation",
        status_code=201,
        responses={**json_ok(ref("History"), "The new history.", 201), **problems(400, 413)},
        openapi_extra=body(ref("HistoryCreate"), required=False),
    )
    router.add_api_route(
        prefix + "/histories",
        list_histories,
        methods=["GET"],
        name="listHistories",
        operation_id="listHistories",
        tags=["histories"],
        summary="The caller's conversations, newest first, a page at a time",
        description="Newest (by created) first. With q, only the conversations whose title or "
        "a message's text (the person's or the agent's) holds q, case-insensitively. At most "
        "limit items; when more follow, the Link header holds the next page's URL "
        '(rel="next", q kept). Follow it until a page has none.',
        responses={
            **paged_ok({"type": "array", "items": ref("HistorySummary")}, "A page of histories."),
            **problems(400, notes={400: "limit, cursor or q is not valid; fields names it."}),
        },
    )
    if asks_enabled:
        router.add_api_route(
            prefix + "/histories/pendingAsks",
            list_pending_asks,
            methods=["GET"],
            name="listPendingAsks",
            operation_id="listPendingAsks",
            tags=["histories"],
            summary="The caller's pending asks, newest first, a page at a time",
            description="Newest ask first. At most limit items; when more follow, the Link "
            'header holds the next page\'s URL (rel="next"). Follow it until a page has none. '
            "The body is exactly the published pendingAsksResponse schema.",
            responses={
                **paged_ok(
                    {"type": "array", "items": ref("PendingAsk")}, "A page of pending asks."
                ),
                **problems(400, notes={400: "limit or cursor is not valid; fields names it."}),
            },
        )
    router.add_api_route(
        prefix + "/histories/{id}",
        read_history,
        methods=["GET"],
        name="readHistory",
        operation_id="readHistory",
        tags=["histories"],
        summary="A conversation with its rows and pending ask",
        responses={
            **json_ok(ref("History"), "The history."),
            **problems(403, 404, notes={403: "Another user's history (admins may read it)."}),
        },
    )
    router.add_api_route(
        prefix + "/histories/{id}",
        update_history,
        methods=["PATCH"],
        name="updateHistory",
        operation_id="updateHistory",
        tags=["histories"],
        summary="Change a conversation's title",
        responses={**json_ok(ref("History"), "The history."), **problems(400, 403, 404, 413)},
        openapi_extra=body(ref("HistoryUpdate"), required=False),  # no body changes nothing
    )
    router.add_api_route(
        prefix + "/histories/{id}",
        delete_history,
        methods=["DELETE"],
        name="deleteHistory",
        operation_id="deleteHistory",
        tags=["histories"],
        summary="Delete a conversation (soft delete)",
        responses={
            **json_ok(
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "deleted": {"const": True}},
                    "required": ["id", "deleted"],
                },
                "The history is deleted.",
            ),
            **problems(403, 404),
        },
    )
    router.add_api_route(
        prefix + "/histories/{id}/stop",
        stop_history,
        methods=["POST"],
        name="stopHistory",
        operation_id="stopHistory",
        tags=["histories"],
        summary="Stop the conversation's running turn and cancel the ask it waits on",
        description="Returns once the turn ended (a request already being sent finishes and "
        "its outcome is recorded; a tool still running is cancelled and its outcome reported "
        "uncertain). The ask the conversation waits on is cancelled with reason stopped. "
        "stopped says whether a turn was running; cancelledAsk names the ask cancelled.",
        responses={
            **json_ok(
                {
                    "type": "object",
                    "properties": {
                        "historyId": {"type": "string"},
                        "stopped": {"type": "boolean"},
                        "cancelledAsk": {"type": ["string", "null"]},
                    },
                    "required": ["historyId", "stopped", "cancelledAsk"],
                },
                "What Stop did.",
            ),
            **problems(403, 404, notes={403: "Another user's history (admins too)."}),
        },
    )
    if asks_enabled:
        router.add_api_route(
            prefix + "/histories/{id}/turn",
            turn,
            methods=["POST"],
            name="turn",
            operation_id="turn",
            tags=["histories"],
            summary="Run a turn and get its result as JSON (headless)",
            description="Send exactly one of {prompt}, {askResponse} or {toolCallId, buttonId}, "
            "plus an optional surface. Returns once the turn finishes; a client that "
            "disconnects does not stop it." + EDITED_ARGUMENTS,
            responses={
                **json_ok(ref("TurnResult"), "What the turn did."),
                **problems(400, 403, 404, 409, 413),
            },
            openapi_extra=body(ref("TurnRequest")),
        )
