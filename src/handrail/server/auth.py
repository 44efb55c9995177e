"""Bearer tokens: ``Authorization: Bearer <token>`` names one configured user.

The SHA-256 digest of the token is compared with every user's in constant time
(`hmac.compare_digest` on equal-length digests, and no early exit), so neither the timing, the
token's length nor the order of users tells an attacker anything. A missing, malformed or unknown
token is 401 ``Unauthorized``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Annotated, Final

from fastapi import Depends, Request

from ..errors import Unauthorized
from ..runtime.turn import Principal
from .config import UserConfig

__all__ = ["BEARER_SCHEME", "Authenticator", "Caller", "bearer_token", "current_principal"]

#: The security scheme of the OpenAPI document (``components.securitySchemes.bearerAuth``).
BEARER_SCHEME: Final[dict[str, str]] = {
    "type": "http",
    "scheme": "bearer",
    "description": "A user's token from the server's configuration.",
}


class Authenticator:
    """Maps bearer tokens to principals."""

    def __init__(self, users: Iterable[UserConfig]) -> None:
        self._users = [
            (_digest(user.token), Principal(user_id=user.id, is_admin=user.admin)) for user in users
        ]

    def authenticate(self, token: str | None) -> Principal:
        """The principal whose token this is, or 401."""
        candidate = _digest(token or "")
        found: Principal | None = None
        for secret, principal in self._users:
            if hmac.compare_digest(secret, candidate):
                found = principal
        if found is None or not token:
            detail = (
                "Send a bearer token: Authorization: Bearer <token>."
                if token is None
                else "The bearer token is not one this server knows."
            )
            raise Unauthorized("Unauthorized", detail)
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case), or
    None when there is no such header."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    return token


async def current_principal(request: Request) -> Principal:
    """The caller, from the request's bearer token (a FastAPI dependency).

    It reads the header itself rather than through a `fastapi.security` class: every request
    resolves it, and a nested dependency costs more than the parsing. The OpenAPI document
    declares the scheme (`BEARER_SCHEME`)."""
    authenticator: Authenticator = request.app.state.authenticator
    return authenticator.authenticate(bearer_token(request.headers.get("authorization")))


#: A route parameter for the authenticated caller.
Caller = Annotated[Principal, Depends(current_principal)]
