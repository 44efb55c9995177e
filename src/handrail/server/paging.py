"""Paged lists on the wire: the ``limit`` and ``cursor`` query parameters, the opaque cursor,
and the ``Link: <...>; rel="next"`` header.

A list route answers one page: its body is the list's usual ``{data: [...], requestId}`` and
nothing else (the bodies of ``pendingAsks`` must validate against the published schemas, which
forbid extra fields), and when more items follow, the ``Link`` header holds the URL of the next
page. A client follows it until a response has none.

The cursor is the position of the page's last item (`handrail.store.paging.Position`) with the
name of its list and a tag of the caller, as unpadded base64url JSON. It is opaque: clients only
pass it back. A cursor that does not decode, or was made for another list or another caller,
is a 400 naming ``cursor``; the query behind a page always filters by the caller, so no cursor
can reach another user's items.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from typing import Annotated, Any, Final, TypeVar

from fastapi import Query, Request
from fastapi.responses import Response
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from ..errors import BadRequest
from ..store.paging import MAX_LIMIT, Page, Position
from ..store.search import QUERY_MAX
from .openapi import json_ok
from .problems import ok

__all__ = [
    "CURSOR_MAX_LENGTH",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "YIELD_EVERY",
    "Cursor",
    "Limit",
    "Search",
    "decode_cursor",
    "encode_cursor",
    "next_link",
    "paged_ok",
    "paged_response",
]

T = TypeVar("T")

#: Items per page when the request has no ``limit``.
DEFAULT_LIMIT: Final = 50

#: The longest ``cursor`` accepted (the server's own are under 120 characters).
CURSOR_MAX_LENGTH: Final = 512

#: How many items of a page are turned into JSON values before the event loop gets a turn.
YIELD_EVERY: Final = 50

CURSOR_VERSION: Final = 1
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ID: Final = re.compile(r"[0-9a-f]{24}")
_LIMIT_MESSAGE: Final = (
    f"must be a whole number from 1 to {MAX_LIMIT}; leave it out for pages of {DEFAULT_LIMIT}"
)
_CURSOR_FIX: Final = (
    "Leave cursor out to start at the newest item, then follow the URL in the Link header "
    '(rel="next") of each page.'
)


def _limit(value: object) -> int:
    """A ``limit`` query value as an int, or the error that names the fix."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 4:
        number = int(value)
    else:
        raise PydanticCustomError("limit", _LIMIT_MESSAGE)
    if not 1 <= number <= MAX_LIMIT:
        raise PydanticCustomError("limit", _LIMIT_MESSAGE)
    return number


#: The ``limit`` query parameter: how many items a page holds.
Limit = Annotated[
    int,
    BeforeValidator(_limit),
    Query(
        description=f"How many items the page holds: 1 to {MAX_LIMIT}, default "
        f"{DEFAULT_LIMIT}. Anything else is a 400 naming limit.",
        json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT},
    ),
]

#: The ``cursor`` query parameter: where the page starts.
Cursor = Annotated[
    str | None,
    Query(
        max_length=CURSOR_MAX_LENGTH,
        description="Where the page starts: copied from the Link header's next URL of the page "
        "before (opaque; leave it out for the first page). A cursor that is not one this list "
        "gave the caller is a 400 naming cursor.",
    ),
]


_SEARCH_MESSAGE: Final = (
    f"must be 1 to {QUERY_MAX} characters of text (no control characters); leave it out to "
    "list everything"
)


def _search(value: object) -> str | None:
    """A ``q`` query value trimmed (None when blank), or the error that names the fix."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise PydanticCustomError("search", _SEARCH_MESSAGE)
    query = value.strip()
    if len(query) > QUERY_MAX or any(ord(c) < 32 or 0xD800 <= ord(c) < 0xE000 for c in query):
        raise PydanticCustomError("search", _SEARCH_MESSAGE)
    return query or None


#: The ``q`` query parameter of a searchable list: only the items that hold it.
Search = Annotated[
    str | None,
    BeforeValidator(_search),
    Query(
        description=f"Only the items whose text holds this, case-insensitively (a substring, "
        f"1 to {QUERY_MAX} characters, trimmed; blank lists everything). The Link header's "
        "next URL keeps it. Anything else is a 400 naming q.",
        json_schema_extra={"maxLength": QUERY_MAX},
    ),
]


def _user_tag(user_id: str) -> str:
    return hashlib.sha256(b"handrail-cursor\0" + user_id.encode()).hexdigest()[:16]


def encode_cursor(list_name: str, user_id: str, position: Position) -> str:
    """The opaque cursor of the page after `position` in `user_id`'s list `list_name`."""
    micros = (position.at - _EPOCH) // dt.timedelta(microseconds=1)
    payload = [CURSOR_VERSION, list_name, _user_tag(user_id), micros, position.id]
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _bad_cursor(why: str) -> BadRequest:
    return BadRequest(
        "Validation failed",
        f"cursor {why}. {_CURSOR_FIX}",
        code="body-validation-failed",
        fields={"cursor": f"{why}; leave it out to start again"},
    )


def decode_cursor(cursor: str | None, list_name: str, user_id: str) -> Position | None:
    """The position `cursor` names in `user_id`'s list `list_name` (None without a cursor), or
    a 400 `BadRequest` naming ``cursor``."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
    except (binascii.Error, ValueError):  # UnicodeDecodeError and JSONDecodeError among them
        raise _bad_cursor("is not a cursor this server gave out") from None
    if (
        not isinstance(payload, list)
        or len(payload) != 5
        or payload[0] != CURSOR_VERSION
        or not all(isinstance(part, str) for part in (payload[1], payload[2], payload[4]))
        or not isinstance(payload[3], int)
        or isinstance(payload[3], bool)
        or not _ID.fullmatch(payload[4])
    ):
        raise _bad_cursor("is not a cursor this server gave out")
    _, name, tag, micros, item_id = payload
    if name != list_name:
        raise _bad_cursor(f"belongs to another list ({name}), not {list_name}")
    if tag != _user_tag(user_id):
        raise _bad_cursor("was given to another user")
    try:
        at = _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise _bad_cursor("is not a cursor this server gave out") from None
    return Position(at=at, id=item_id)


def next_link(request: Request, cursor: str, limit: int) -> str:
    """The ``Link`` header value of the page after this one: this request's URL with
    ``limit`` and ``cursor`` set."""
    url = request.url.include_query_params(limit=limit, cursor=cursor)
    return f'<{url}>; rel="next"'


async def paged_response(
    request: Request,
    page: Page[T],
    item_json: Callable[[T], Any],
    *,
    list_name: str,
    user_id: str,
    limit: int,
) -> Response:
    """``{data: [item_json(item) for each item], requestId}``, with the next page's ``Link``
    when more items follow.

    The items are turned into JSON values `YIELD_EVERY` at a time, with the event loop free to
    serve other requests in between, so even a page of `MAX_LIMIT` holds the loop for no more
    than one batch (about a millisecond) at once. A worker thread would not help: the work is
    Python code, which holds the interpreter lock either way."""
    data: list[Any] = []
    for start in range(0, len(page.items), YIELD_EVERY):
        if start:
            await asyncio.sleep(0)
        data.extend(item_json(item) for item in page.items[start : start + YIELD_EVERY])
    response = ok(request, data)
    if page.next is not None:
        cursor = encode_cursor(list_name, user_id, page.next)
        response.headers["Link"] = next_link(request, cursor, limit)
    return response


def paged_ok(schema: dict[str, Any], description: str) -> dict[int | str, Any]:
    """The ``200`` entry of a paged list's ``responses``: the body, and the ``Link`` header."""
    responses = json_ok(schema, description)
    responses[200]["headers"] = {
        "Link": {
            "description": 'The next page, as `<URL>; rel="next"`, when more items follow; '
            "absent on the last page. Follow the URL as it is (it holds limit and cursor).",
            "schema": {"type": "string"},
        }
    }
    return responses
