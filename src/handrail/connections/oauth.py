"""Signing in to an MCP server that requires authorization (the MCP authorization spec: OAuth
2.1 with PKCE, discovered from the server), through the official SDK's client auth
(`mcp.client.auth.OAuthClientProvider`).

An HTTP connection's link carries an `OAuthLink`. Its `auth` for a connection attempt is:

- the SDK's provider, when an admin is signing in now (`OAuthLink.signer` is set: the admin who
  added, changed, refreshed or re-authorized the connection) or a registration was saved
  before. The provider discovers the server's authorization server, registers a client
  dynamically (RFC 7591), and sends the admin's browser to the authorization URL; the
  server's callback route finishes it by the ``state`` of that URL (`SignIns.finish`). Tokens
  are refreshed by the provider when they expire;
- otherwise a small auth that sends requests as they are and, when the server answers 401,
  stops with `AuthorizationNeeded` (no client is registered in nobody's name).

A 401 that would need a new sign-in while no admin is signing in (a revoked token, a restart
with no saved tokens) is `AuthorizationNeeded`, whose message names the way forward. What the
flow saves (`OAuthSaved`: the tokens, the registered client, when the access token expires) is
handed to the owner's `save`, which keeps it among the connection's sealed secrets under
`OAUTH_SECRET`; it never goes into a row in the clear, a log line, a response or a prompt.

The sign-ins under way live in the memory of the process that started them (`SignIns`): the
browser's callback must reach that process.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ..errors import HandrailError, InvalidRequest

__all__ = [
    "OAUTH_SECRET",
    "SIGN_IN_WAIT",
    "AuthorizationNeeded",
    "OAuthLink",
    "OAuthSaved",
    "SignIn",
    "SignInFailed",
    "SignInUnknown",
    "SignIns",
]

#: The key of the connection's sealed secrets that holds what the flow saved.
OAUTH_SECRET: Final = "oauth"
#: Seconds a sign-in may take before it counts as abandoned.
SIGN_IN_WAIT: Final = 600.0
#: How many finished states are remembered, to tell "already used" from "unknown".
REMEMBERED: Final = 200
CLIENT_NAME: Final = "handrail"


class AuthorizationNeeded(HandrailError):
    """The server requires a sign-in and no admin is signing in: the message says how."""


class SignInFailed(HandrailError):
    """A sign-in that was refused, abandoned or broken: the message says what to do."""


class SignInUnknown(InvalidRequest):
    """A callback whose ``state`` names no sign-in under way (wrong, used, or expired)."""


@dataclass(kw_only=True)
class OAuthSaved:
    """What a connection keeps of its authorization: tokens, client, expiry (epoch seconds)."""

    tokens: dict[str, Any] | None = None
    client: dict[str, Any] | None = None
    expires_at: float | None = None

    def to_secret(self) -> str:
        return json.dumps(
            {"tokens": self.tokens, "client": self.client, "expiresAt": self.expires_at},
            sort_keys=True,
        )

    @classmethod
    def from_secret(cls, text: str | None) -> OAuthSaved:
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        expires = data.get("expiresAt")
        return cls(
            tokens=data.get("tokens") if isinstance(data.get("tokens"), dict) else None,
            client=data.get("client") if isinstance(data.get("client"), dict) else None,
            expires_at=float(expires) if isinstance(expires, int | float) else None,
        )

    def values(self) -> list[str]:
        """The secret values in it (to mask in log lines)."""
        out: list[str] = []
        for key in ("access_token", "refresh_token"):
            value = (self.tokens or {}).get(key)
            if isinstance(value, str):
                out.append(value)
        secret = (self.client or {}).get("client_secret")
        if isinstance(secret, str):
            out.append(secret)
        return out


@dataclass(kw_only=True)
class SignIn:
    """One sign-in under way: started by `user_id` for `connection_id`."""

    state: str
    connection_id: str
    connection_name: str
    user_id: str
    authorize_url: str
    deadline: float
    result: asyncio.Future[AuthorizationCodeResult] = field(repr=False)


class SignIns:
    """The sign-ins under way in this process, by the ``state`` of their authorization URL."""

    def __init__(self) -> None:
        self._open: dict[str, SignIn] = {}
        self._closed: dict[str, str] = {}

    def open(self, *, connection_id: str, name: str, user_id: str, url: str) -> SignIn:
        state = (parse_qs(urlparse(url).query).get("state") or [""])[0]
        if not state:
            raise SignInFailed(
                f"The authorization URL of {name} carries no state, so its answer could not be "
                "checked; the sign-in was not started."
            )
        for other in [s for s in self._open.values() if s.connection_id == connection_id]:
            self.cancel(other.state, "a newer sign-in replaced it")
        sign_in = SignIn(
            state=state,
            connection_id=connection_id,
            connection_name=name,
            user_id=user_id,
            authorize_url=url,
            deadline=time.monotonic() + SIGN_IN_WAIT,
            result=asyncio.get_running_loop().create_future(),
        )
        self._open[state] = sign_in
        return sign_in

    def get(self, state: str | None) -> SignIn | None:
        """The sign-in under way with this state, if any."""
        return self._open.get(state or "")

    def pending(self, connection_id: str) -> SignIn | None:
        """The sign-in under way for the connection, if any."""
        for sign_in in self._open.values():
            if sign_in.connection_id == connection_id and not sign_in.result.done():
                return sign_in
        return None

    def _close(self, state: str, why: str) -> SignIn | None:
        sign_in = self._open.pop(state, None)
        if sign_in is not None:
            self._closed[state] = why
            while len(self._closed) > REMEMBERED:
                del self._closed[next(iter(self._closed))]
        return sign_in

    def cancel(self, state: str, why: str) -> None:
        sign_in = self._close(state, why)
        if sign_in is not None and not sign_in.result.done():
            sign_in.result.set_exception(
                SignInFailed(f"The sign-in to {sign_in.connection_name} stopped: {why}.")
            )

    def cancel_for(self, connection_id: str, why: str) -> None:
        for sign_in in [s for s in self._open.values() if s.connection_id == connection_id]:
            self.cancel(sign_in.state, why)

    def finish(
        self,
        state: str | None,
        *,
        code: str | None,
        error: str | None = None,
        error_description: str | None = None,
        iss: str | None = None,
    ) -> SignIn:
        """Hand the authorization server's answer to the sign-in whose state it carries.
        `SignInUnknown` for a state that is missing, wrong, used or expired."""
        if not state:
            raise SignInUnknown(
                "This sign-in callback carries no state, so it belongs to no sign-in. Start "
                "the sign-in again from the connection (Sign in on the Connections page).",
                code="OAUTH_STATE_INVALID",
                fields={"state": "is required"},
            )
        sign_in = self._open.get(state)
        if sign_in is not None and time.monotonic() > sign_in.deadline:
            self.cancel(state, "it took too long")
            sign_in = None
        if sign_in is None:
            why = self._closed.get(state)
            detail = (
                f"This sign-in was finished already or stopped ({why}); a callback is used once."
                if why is not None
                else "No sign-in under way has this state (it is wrong, or the server "
                "restarted meanwhile)."
            )
            raise SignInUnknown(
                detail + " Start the sign-in again from the connection (Sign in on the "
                "Connections page).",
                code="OAUTH_STATE_INVALID",
                fields={"state": "names no sign-in under way"},
            )
        self._close(state, "it was used")
        if error or not code:
            reason = (error_description or error or "no authorization code came back").strip()
            sign_in.result.set_exception(
                SignInFailed(
                    f"Signing in to {sign_in.connection_name} did not finish: the authorization "
                    f"server answered {reason[:200]!r}. Sign in again, or check the account's "
                    "access."
                )
            )
        else:
            sign_in.result.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))
        return sign_in


class _NeedsSignIn(httpx2.Auth):
    """Sends requests as they are; a 401 is `AuthorizationNeeded`."""

    def __init__(self, link: OAuthLink) -> None:
        self._link = link

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            self._link.needed = True
            raise AuthorizationNeeded(self._link.needed_text())


class _Provider(OAuthClientProvider):
    """The SDK's provider, knowing when the saved access token expires (the SDK's storage
    holds tokens, not their expiry)."""

    def __init__(self, link: OAuthLink, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._link = link

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._link.saved.expires_at


class OAuthLink:
    """The authorization of one HTTP connection (see the module's docs); also the SDK's
    `TokenStorage`."""

    def __init__(
        self,
        *,
        connection_id: str,
        name: str,
        server_url: str,
        saved: OAuthSaved,
        save: Callable[[OAuthSaved], Awaitable[None]],
        sign_ins: SignIns,
        can_save: bool = True,
        signer: str | None = None,
        redirect_uri: str | None = None,
    ) -> None:
        self.connection_id = connection_id
        self.name = name
        self.server_url = server_url
        self.saved = saved
        self._save = save
        self.sign_ins = sign_ins
        self.can_save = can_save
        #: The admin who may sign in at the next authorization redirect (used once).
        self.signer = signer
        self.redirect_uri = redirect_uri
        #: Called with the sign-in when the flow waits on the admin's browser, and with None
        #: when the answer came.
        self.on_wait: Callable[[SignIn | None], None] | None = None
        #: Whether the last attempt stopped because the server needs a sign-in.
        self.needed = False
        self._sign_in: SignIn | None = None

    @property
    def signed_in(self) -> bool:
        return bool(self.saved.tokens)

    def needed_text(self) -> str:
        return (
            f"The server {self.name} requires signing in (OAuth), and its saved sign-in is "
            "missing, expired or was revoked. An admin can sign in again with Sign in on the "
            "Connections page (POST /api/connections/{id}/authorize)."
        ).replace("{id}", self.connection_id)

    def auth(self) -> httpx2.Auth:
        """The auth of one connection attempt."""
        if self.signer is None and not self.saved.client:
            return _NeedsSignIn(self)
        redirect = self.redirect_uri or _first_redirect(self.saved.client)
        if redirect is None:
            return _NeedsSignIn(self)
        client = self.saved.client
        if client is not None and redirect not in [
            str(u) for u in client.get("redirect_uris") or []
        ]:
            self.saved.client = None  # registered for another callback URL: register again
            self.saved.tokens = None
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[redirect],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            application_type="web",
        )
        return _Provider(
            self,
            server_url=self.server_url,
            client_metadata=metadata,
            storage=self,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
        )

    # --- the SDK's handlers -------------------------------------------------------------------

    async def _redirect(self, url: str) -> None:
        signer, self.signer = self.signer, None
        if signer is None:
            self.needed = True
            raise AuthorizationNeeded(self.needed_text())
        if not self.can_save:
            self.needed = True
            raise AuthorizationNeeded(
                f"The server {self.name} requires signing in (OAuth), but this server has no "
                "key to keep the tokens with: set HANDRAIL_SECRET_KEY (made with `handrail "
                "secret-key`), restart, then sign in."
            )
        self._sign_in = self.sign_ins.open(
            connection_id=self.connection_id, name=self.name, user_id=signer, url=url
        )
        if self.on_wait is not None:
            self.on_wait(self._sign_in)

    async def _callback(self) -> AuthorizationCodeResult:
        sign_in = self._sign_in
        assert sign_in is not None, "the SDK calls the redirect handler first"
        try:
            async with asyncio.timeout(max(0.0, sign_in.deadline - time.monotonic())):
                return await asyncio.shield(sign_in.result)
        except TimeoutError:
            self.sign_ins.cancel(sign_in.state, "it took too long")
            raise SignInFailed(
                f"Signing in to {self.name} was not finished within {SIGN_IN_WAIT / 60:g} "
                "minutes. Sign in again when you are ready."
            ) from None
        finally:
            if self.on_wait is not None:
                self.on_wait(None)

    # --- TokenStorage -------------------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        if not self.saved.tokens:
            return None
        return OAuthToken.model_validate(self.saved.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.saved.tokens = tokens.model_dump(mode="json", exclude_none=True)
        self.saved.expires_at = (
            time.time() + tokens.expires_in if tokens.expires_in is not None else None
        )
        self.needed = False
        await self._save(self.saved)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if not self.saved.client:
            return None
        return OAuthClientInformationFull.model_validate(self.saved.client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        # Saved with the tokens: a registration whose sign-in never finished is not kept.
        self.saved.client = client_info.model_dump(mode="json", exclude_none=True)


def _first_redirect(client: dict[str, Any] | None) -> str | None:
    uris = (client or {}).get("redirect_uris") or []
    return str(uris[0]) if uris else None
