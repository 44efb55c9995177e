"""An MCP server that requires authorization (the MCP authorization spec: OAuth 2.1 with PKCE),
written with the official SDK: `MCPServer` with ``auth=AuthSettings(...)`` and an
authorization server provider kept in memory, all on one loopback port.

    python tests/connections/mcp_auth_server.py --port PORT [--token-seconds N]

The authorization endpoint approves at once (the person's sign-in is not what is tested): it
redirects the browser to the client's ``redirect_uri`` with a code and the client's ``state``
(or, after ``POST /test/deny-next``, with ``error=access_denied``). Test routes (no
authorization): ``POST /test/revoke`` revokes every token, ``GET /test/counts`` tells how many
clients registered and tokens were issued and refreshed. Its one tool, ``whoami``
(read-only), tells the client id of the token.
"""

from __future__ import annotations

import argparse
import secrets
import time
import warnings
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


class MemoryProvider:
    """An OAuth authorization server provider that keeps everything in memory."""

    def __init__(self, token_seconds: int) -> None:
        self.token_seconds = token_seconds
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts = {"registered": 0, "issued": 0, "refreshed": 0}
        self.deny_next = False

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.counts["registered"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if self.deny_next:
            self.deny_next = False
            return construct_redirect_uri(
                str(params.redirect_uri),
                error="access_denied",
                error_description="The person said no.",
                state=params.state,
            )
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + self.token_seconds
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_seconds,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was used already")
        self.counts["issued"] += 1
        return self._issue(authorization_code.client_id, authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.counts["refreshed"] += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def build(port: int, token_seconds: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    provider = MemoryProvider(token_seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            validate_token_resource=False,
        )
    server: MCPServer = MCPServer(
        "auth-test-server",
        instructions="A server that needs sign-in.",
        log_level="WARNING",
        auth=settings,
        auth_server_provider=provider,  # type: ignore[arg-type]
    )

    @server.tool(
        description="Who the token belongs to.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        structured_output=False,
    )
    def whoami() -> str:
        token = get_access_token()
        return f"client {token.client_id if token else 'nobody'}"

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/test/deny-next", methods=["POST"])
    async def deny_next(request: Request) -> Response:
        provider.deny_next = True
        return JSONResponse({"denyNext": True})

    @server.custom_route("/test/counts", methods=["GET"])
    async def counts(request: Request) -> Response:
        data: dict[str, Any] = dict(provider.counts)
        data["live"] = len(provider.access)
        return JSONResponse(data)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-seconds", type=int, default=3600)
    args = parser.parse_args()
    build(args.port, args.token_seconds).run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
