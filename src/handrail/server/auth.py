"""Bearer tokens: ``Authorization: Bearer <token>`` names one user. Three kinds are taken:

- a configured user's token: its SHA-256 digest is compared with every user's in constant time
  (`hmac.compare_digest` on equal-length digests, and no early exit), so neither the timing,
  the token's length nor the order of users tells an attacker anything;
- a token an admin minted for one user (``POST /api/tokens``, ``hrt_...``): looked up by its
  digest in the store, until it expires; it speaks as that user, never as an admin;
- a JWT of the host app's identity provider, when ``jwt`` is configured (`JwtVerifier`):
  verified with PyJWT (signature with the configured keys, ``exp``, ``nbf``, ``iss``, ``aud``);
  the user id is the configured claim; never an admin.

A missing, malformed, unknown, expired or unverifiable token is 401 ``Unauthorized``, with a
detail that says which.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable
from typing import Annotated, Any, Final

import jwt
from fastapi import Depends, Request

from ..errors import ConfigError, Unauthorized
from ..runtime.turn import Principal
from .config import JwtConfig, UserConfig

__all__ = [
    "BEARER_SCHEME",
    "MINTED_PREFIX",
    "Authenticator",
    "Caller",
    "JwtVerifier",
    "bearer_token",
    "current_principal",
]

#: The start of every minted token (``POST /api/tokens``).
MINTED_PREFIX: Final = "hrt_"
#: Seconds of clock skew allowed on a JWT's ``exp`` and ``nbf``.
JWT_LEEWAY: Final = 30
_JWT_SHAPE: Final = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
_USER_ID: Final = re.compile(r"^[^\x00-\x1f]{1,255}$")

#: The security scheme of the OpenAPI document (``components.securitySchemes.bearerAuth``).
BEARER_SCHEME: Final[dict[str, str]] = {
    "type": "http",
    "scheme": "bearer",
    "description": "A user's token from the server's configuration.",
}


class JwtVerifier:
    """Verifies the JWTs of one identity provider (`JwtConfig`): the keys are read once, from
    a JWKS file (a token's ``kid`` picks its key) or a PEM public key; only asymmetric keys."""

    def __init__(self, config: JwtConfig) -> None:
        self.config = config
        self._keys: dict[str | None, Any] = _read_keys(config)

    def verify(self, token: str) -> Principal:
        """The principal of a valid token, or 401 with what is wrong."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise _unauthorized("The bearer token is not a JWT this server can read.") from None
        kid = header.get("kid")
        key = self._keys.get(kid) if kid in self._keys else None
        if key is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))
        if key is None:
            raise _unauthorized(f"The JWT names a key ({kid!r}) this server does not have.")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(self.config.algorithms),
                audience=self.config.audience,
                issuer=self.config.issuer,
                leeway=JWT_LEEWAY,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise _unauthorized("The JWT expired; get a new one from your app.") from None
        except jwt.InvalidIssuerError:
            raise _unauthorized("The JWT comes from another issuer.") from None
        except jwt.InvalidAudienceError:
            raise _unauthorized("The JWT is meant for another audience.") from None
        except jwt.InvalidTokenError as exc:
            raise _unauthorized(f"The JWT is not valid here: {exc}.") from None
        user = claims.get(self.config.user_claim)
        if not isinstance(user, str) or not _USER_ID.match(user):
            raise _unauthorized(f"The JWT has no user id in its {self.config.user_claim!r} claim.")
        return Principal(user_id=user)


def _read_keys(config: JwtConfig) -> dict[str | None, Any]:
    path = config.keys
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"jwt.keys: {path} cannot be read ({exc.strerror})") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
            keys = jwt.PyJWKSet.from_dict(data).keys
        except (ValueError, jwt.PyJWKError, jwt.PyJWKSetError) as exc:
            raise ConfigError(f"jwt.keys: {path} is not a usable JWKS file ({exc})") from None
        found: dict[str | None, Any] = {}
        for key in keys:
            if key.key_type == "oct":
                raise ConfigError(
                    f"jwt.keys: {path} holds a shared secret (kty oct); give public keys only"
                )
            found[key.key_id] = key.key
        return found
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        return {None: load_pem_public_key(text.encode("utf-8"))}
    except ValueError:
        raise ConfigError(
            f"jwt.keys: {path} is neither a JWKS JSON file nor a PEM public key"
        ) from None


def _unauthorized(detail: str) -> Unauthorized:
    return Unauthorized("Unauthorized", detail)


class Authenticator:
    """Maps bearer tokens to principals: the configured users' tokens, minted tokens (looked
    up in the store) and, with `jwt`, the identity provider's JWTs."""

    def __init__(self, users: Iterable[UserConfig], *, jwt: JwtConfig | None = None) -> None:
        self._users = [
            (_digest(user.token), Principal(user_id=user.id, is_admin=user.admin)) for user in users
        ]
        self.jwt = JwtVerifier(jwt) if jwt is not None else None

    def configured(self, token: str | None) -> Principal | None:
        """The configured user whose token this is, or None (constant time)."""
        candidate = _digest(token or "")
        found: Principal | None = None
        for secret, principal in self._users:
            if hmac.compare_digest(secret, candidate):
                found = principal
        return found if token else None

    def knows(self, user_id: str) -> bool:
        """Whether `user_id` is a user of the configuration (an email link's user must still
        be one: a user taken out of it answers nothing by an old link)."""
        return any(p.user_id == user_id for _, p in self._users)

    def user(self, user_id: str) -> Principal:
        """The principal of `user_id` (an admin when the configuration says so), for an
        answer made without a token (an email link)."""
        admin = any(p.user_id == user_id and p.is_admin for _, p in self._users)
        return Principal(user_id=user_id, is_admin=admin)

    def authenticate(self, token: str | None) -> Principal:
        """The configured user whose token this is, or 401 (minted tokens and JWTs need
        `principal`)."""
        found = self.configured(token)
        if found is None:
            raise _unauthorized(_unknown(token))
        return found

    async def principal(self, token: str | None, tokens: Any) -> Principal:
        """The principal of any kind of token (`tokens` is the store's minted tokens), or
        401."""
        found = self.configured(token)
        if found is not None:
            return found
        if token and token.startswith(MINTED_PREFIX) and tokens is not None:
            record = await tokens.find(token)
            if record is None:
                raise _unauthorized(
                    "The token expired or is not one this server minted; ask the app for a new one."
                )
            return Principal(user_id=record.user_id)
        if token and self.jwt is not None and _JWT_SHAPE.match(token):
            return self.jwt.verify(token)
        raise _unauthorized(_unknown(token))


def _unknown(token: str | None) -> str:
    if token is None:
        return "Send a bearer token: Authorization: Bearer <token>."
    return "The bearer token is not one this server knows."


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


def header(request: Request, name: bytes) -> str | None:
    """The request's first `name` header (in lowercase, as ASGI servers send header names),
    as ``request.headers.get`` gives it, without building Starlette's `Headers` and its two
    calls a look-up."""
    for key, value in request.scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def current_principal(request: Request) -> Principal:
    """The caller, from the request's bearer token (a FastAPI dependency).

    It reads the header itself rather than through a `fastapi.security` class: every request
    resolves it, and a nested dependency costs more than the parsing. The OpenAPI document
    declares the scheme (`BEARER_SCHEME`)."""
    state = request.app.state
    authenticator: Authenticator = state.authenticator
    token = bearer_token(header(request, b"authorization"))
    store = getattr(state, "store", None)
    return await authenticator.principal(token, store.tokens if store is not None else None)


#: A route parameter for the authenticated caller.
Caller = Annotated[Principal, Depends(current_principal)]
