"""``GET /inbox``: the caller's pending asks across conversations, searchable.

The same list as ``GET /histories/pendingAsks`` (newest ask first, paged the same way), on a
route of handrail's own, so each item can carry more than the published schema allows: the
conversation's agent and the ask as the history view shows it. ``q`` keeps only the asks whose
title or prompt (a clarify ask's questions), or whose conversation's title, holds it,
case-insensitively; the database does the matching (see `handrail.store.search`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .auth import Caller
from .bodies import store_of
from .openapi import problems, ref
from .paging import DEFAULT_LIMIT, Cursor, Limit, Search, decode_cursor, paged_ok, paged_response
from .views import inbox_item

__all__ = ["add_inbox_routes"]


async def list_inbox(
    request: Request,
    principal: Caller,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    q: Search = None,
) -> Response:
    after = decode_cursor(cursor, "inbox", principal.user_id)
    page = await store_of(request).histories.pending_page(
        principal.user_id, limit=limit, after=after, query=q
    )
    return await paged_response(
        request, page, inbox_item, list_name="inbox", user_id=principal.user_id, limit=limit
    )


def add_inbox_routes(router: APIRouter, prefix: str) -> None:
    router.add_api_route(
        prefix + "/inbox",
        list_inbox,
        methods=["GET"],
        name="listInbox",
        operation_id="listInbox",
        tags=["histories"],
        summary="The caller's pending asks, newest first, a page at a time, searchable",
        description="The asks waiting on the caller across their conversations, newest ask "
        "first, each with its conversation's agent and the ask as the history view shows it. "
        "With q, only the asks whose title or prompt (a clarify ask's questions), or whose "
        "conversation's title, holds q, case-insensitively. At most limit items; when more "
        'follow, the Link header holds the next page\'s URL (rel="next", q kept).',
        responses={
            **paged_ok({"type": "array", "items": ref("InboxItem")}, "A page of the inbox."),
            **problems(400, notes={400: "limit, cursor or q is not valid; fields names it."}),
        },
    )
