"""Tokens a host app can hand to a page: short-lived ones an admin mints for a user
(``POST /api/tokens``, stored hashed) and JWTs of the app's own identity provider (verified with
PyJWT against the configured issuer, audience and keys)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from server_helpers import Api, sqlite_url, start_api
from sqlalchemy import select

from handrail.errors import ConfigError
from handrail.server import ServerConfig
from handrail.server.config import JwtConfig
from handrail.store.tables import api_tokens

ISSUER = "https://id.example.com/"
AUDIENCE = "handrail"


async def info_as(api: Api, token: str) -> Any:
    return await api.request(
        "GET", "/info", user=None, headers={"Authorization": f"Bearer {token}"}
    )


async def test_an_admin_mints_a_short_lived_token_for_a_user(api: Api) -> None:
    minted = await api.request("POST", "/tokens", user="root", json={"userId": "carol"})
    assert minted.status_code == 201, minted.text
    assert minted.headers["cache-control"] == "no-store"
    data = minted.json()["data"]
    token = data["token"]
    assert token.startswith("hrt_")
    assert data["userId"] == "carol"
    assert data["scope"] == "user"
    expires = dt.datetime.fromisoformat(data["expiresAt"].replace("Z", "+00:00"))
    left = (expires - dt.datetime.now(dt.UTC)).total_seconds()
    assert 880 < left <= 900

    # It speaks as carol, never as an admin.
    info = await info_as(api, token)
    assert info.status_code == 200
    assert info.json()["data"]["user"] == {"id": "carol", "isAdmin": False}
    headers = {"Authorization": f"Bearer {token}"}
    mine = await api.request("POST", "/histories", user=None, headers=headers, json={})
    assert mine.status_code == 201
    assert mine.json()["data"]["userId"] == "carol"
    alices = (await api.post("/histories", {})).json()["data"]
    other = await api.request("GET", f"/histories/{alices['id']}", user=None, headers=headers)
    assert other.status_code == 403
    again = await api.request(
        "POST", "/tokens", user=None, headers=headers, json={"userId": "carol"}
    )
    assert again.status_code == 403

    # Only the digest is stored.
    rows = await api.store.db.read(
        lambda connection: connection.execute(select(api_tokens)).mappings().all()
    )
    assert [row["token_hash"] for row in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert token not in json.dumps([dict(row) for row in rows], default=str)


async def test_minting_is_for_admins_and_checks_its_body(api: Api) -> None:
    denied = await api.post("/tokens", {"userId": "carol"})
    assert denied.status_code == 403
    assert denied.json()["detail"].startswith("Only an admin may mint tokens")
    bad = await api.request(
        "POST", "/tokens", user="root", json={"userId": "", "expiresIn": 5, "scope": "all"}
    )
    assert bad.status_code == 400
    assert set(bad.json()["fields"]) == {"userId", "expiresIn", "scope"}


async def test_an_expired_or_unknown_minted_token_is_401(api: Api) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    await api.store.tokens.add("hrt_old", user_id="carol", created_by="root", expires=past)
    old = await info_as(api, "hrt_old")
    assert old.status_code == 401
    assert "expired" in old.json()["detail"]
    unknown = await info_as(api, "hrt_never-minted")
    assert unknown.status_code == 401


@pytest.fixture
def keys(tmp_path: Path) -> tuple[rsa.RSAPrivateKey, Path]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update({"kid": "key-1", "use": "sig", "alg": "RS256"})
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    return private, path


def token_for(private: Any, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "dana", "iat": now, "exp": now + 300}
    body.update(claims)
    return jwt.encode(body, private, algorithm="RS256", headers={"kid": "key-1"})


async def test_a_jwt_of_the_identity_provider_speaks_as_its_user(
    tmp_path: Path, keys: tuple[rsa.RSAPrivateKey, Path]
) -> None:
    private, path = keys
    settings = {"jwt": JwtConfig(issuer=ISSUER, audience=AUDIENCE, keys=path)}
    async with start_api(sqlite_url(tmp_path), tmp_path, **settings) as api:
        good = await info_as(api, token_for(private))
        assert good.status_code == 200
        assert good.json()["data"]["user"] == {"id": "dana", "isAdmin": False}
        cases = {
            "another audience": token_for(private, aud="other"),
            "another issuer": token_for(private, iss="https://evil.example/"),
            "expired": token_for(private, exp=int(time.time()) - 120),
            "no user id": token_for(private, sub=""),
        }
        for words, token in cases.items():
            answer = await info_as(api, token)
            assert answer.status_code == 401, words
            assert words in answer.json()["detail"], (words, answer.json())
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = await info_as(api, token_for(stranger))
        assert forged.status_code == 401
        hs = jwt.encode(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "dana", "exp": int(time.time()) + 60},
            "a shared secret of enough length for HS256 signing",
            algorithm="HS256",
            headers={"kid": "key-1"},
        )
        assert (await info_as(api, hs)).status_code == 401


def test_jwt_settings_from_the_file_and_the_environment(
    tmp_path: Path, keys: tuple[rsa.RSAPrivateKey, Path]
) -> None:
    _private, path = keys
    base = {
        "users": [{"id": "a", "token": "a" * 20}],
        "agents": [{"name": "helper"}],
    }
    env = {
        "HANDRAIL_JWT_ISSUER": ISSUER,
        "HANDRAIL_JWT_AUDIENCE": AUDIENCE,
        "HANDRAIL_JWT_KEYS": str(path),
        "HANDRAIL_JWT_USER_CLAIM": "email",
        "HANDRAIL_ALLOWED_ORIGINS": "https://App.example.com/, http://127.0.0.1:8080",
    }
    config = ServerConfig.from_mapping(base, env=env)
    assert config.jwt == JwtConfig(issuer=ISSUER, audience=AUDIENCE, keys=path, user_claim="email")
    assert config.allowed_origins == ("https://app.example.com", "http://127.0.0.1:8080")
    with pytest.raises(ConfigError, match=r"jwt\.keys: required"):
        ServerConfig.from_mapping({**base, "jwt": {"issuer": ISSUER, "audience": AUDIENCE}}, env={})
    with pytest.raises(ConfigError, match="HS256 is not taken"):
        ServerConfig.from_mapping(
            {
                **base,
                "jwt": {
                    "issuer": ISSUER,
                    "audience": AUDIENCE,
                    "keys": str(path),
                    "algorithms": ["HS256"],
                },
            },
            env={},
        )
    with pytest.raises(ConfigError, match="is not a file"):
        ServerConfig.from_mapping(
            {**base, "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "keys": "missing.json"}},
            env={},
            base_dir=tmp_path,
        )
    with pytest.raises(ConfigError, match=r"allowed_origins\[0\]"):
        ServerConfig.from_mapping({**base, "allowed_origins": ["app.example.com"]}, env={})
