"""``POST /tokens``: an admin mints a short-lived bearer token for one user.

A host app that embeds ``<handrail-chat>`` for its own users keeps an admin token on its
backend and mints one token per user session: ``{"userId": "alice", "expiresIn": 900}``. The
token (``hrt_`` and 43 random characters) is in the answer once; the store keeps only its
SHA-256, with the user and the expiry. It speaks as that user (their conversations, levels and
grants only), never as an admin, so it cannot mint tokens itself.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .._util import iso, utc_now
from ..errors import BadRequest, Forbidden
from .auth import MINTED_PREFIX, Caller
from .bodies import NO_BODY, read_json, store_of
from .openapi import body, json_ok, problems
from .problems import ok

__all__ = [
    "DEFAULT_TOKEN_SECONDS",
    "MAX_TOKEN_SECONDS",
    "MIN_TOKEN_SECONDS",
    "add_token_routes",
    "mint_token",
]

DEFAULT_TOKEN_SECONDS: Final = 900
MIN_TOKEN_SECONDS: Final = 60
MAX_TOKEN_SECONDS: Final = 86400
_FIELDS: Final = ("userId", "expiresIn")
_USER_ID: Final = re.compile(r"^[A-Za-z0-9._@:+-]{1,255}$")

TOKEN_BODY: Final = {
    "type": "object",
    "properties": {
        "userId": {
            "type": "string",
            "pattern": _USER_ID.pattern,
            "description": "The user the token speaks for (letters, digits and ._@:+-).",
        },
        "expiresIn": {
            "type": "integer",
            "minimum": MIN_TOKEN_SECONDS,
            "maximum": MAX_TOKEN_SECONDS,
            "description": f"Seconds until it stops working (default {DEFAULT_TOKEN_SECONDS}).",
        },
    },
    "required": ["userId"],
    "additionalProperties": False,
}
TOKEN_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "token": {"type": "string", "description": "The bearer token, shown only here."},
        "tokenId": {"type": "string"},
        "userId": {"type": "string"},
        "expiresAt": {"type": "string", "format": "date-time"},
        "scope": {"const": "user", "description": "It speaks as that user, never as an admin."},
    },
    "required": ["token", "tokenId", "userId", "expiresAt", "scope"],
}


def mint_token() -> str:
    """A new token: ``hrt_`` and 32 random bytes, URL-safe."""
    return MINTED_PREFIX + secrets.token_urlsafe(32)


def _invalid(fields: dict[str, str]) -> BadRequest:
    return BadRequest(
        "Validation failed",
        'The body must be {"userId": "<user>", "expiresIn": <seconds>}. See fields.',
        code="body-validation-failed",
        fields=fields,
    )


async def _token_body(request: Request) -> tuple[str, int]:
    data: Any = await read_json(request, invalid=lambda message: _invalid({"body": message}))
    if data is NO_BODY or not isinstance(data, dict):
        raise _invalid({"body": 'must be a JSON object such as {"userId": "alice"}'})
    fields = {
        key: "is not a field; the fields are " + ", ".join(_FIELDS)
        for key in data
        if key not in _FIELDS
    }
    user_id = data.get("userId")
    if not isinstance(user_id, str) or not _USER_ID.match(user_id):
        fields["userId"] = "is required: 1-255 letters, digits or ._@:+-"
    seconds = data.get("expiresIn", DEFAULT_TOKEN_SECONDS)
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not MIN_TOKEN_SECONDS <= seconds <= MAX_TOKEN_SECONDS
    ):
        fields["expiresIn"] = (
            f"must be a whole number of seconds from {MIN_TOKEN_SECONDS} to {MAX_TOKEN_SECONDS}"
        )
    if fields:
        raise _invalid(dict(sorted(fields.items())))
    return str(user_id), int(seconds)


async def create_token(request: Request, principal: Caller) -> JSONResponse:
    if not principal.is_admin:
        raise Forbidden("Only an admin may mint tokens. Mint them with an admin's token.")
    user_id, seconds = await _token_body(request)
    token = mint_token()
    expires = utc_now() + dt.timedelta(seconds=seconds)
    record = await store_of(request).tokens.add(
        token, user_id=user_id, created_by=principal.user_id, expires=expires
    )
    data = {
        "token": token,
        "tokenId": record.id,
        "userId": user_id,
        "expiresAt": iso(record.expires),
        "scope": "user",
    }
    response = ok(request, data, status_code=201)
    response.headers["Cache-Control"] = "no-store"
    return response


def add_token_routes(router: APIRouter, prefix: str) -> None:
    """Add ``POST <prefix>/tokens``."""
    router.add_api_route(
        prefix + "/tokens",
        create_token,
        methods=["POST"],
        name="createToken",
        operation_id="createToken",
        tags=["auth"],
        summary="Mint a short-lived token for one user (admin)",
        status_code=201,
        responses={
            **json_ok(TOKEN_SCHEMA, "The token (shown once) and its expiry.", 201),
            **problems(400, 403, 413, notes={403: "The caller is not an admin."}),
        },
        openapi_extra=body(TOKEN_BODY),
    )
