"""Secrets at rest: a connection's secrets are one Fernet token (AES-128-CBC with an HMAC, from
the maintained ``cryptography`` package) under the key in ``HANDRAIL_SECRET_KEY``.

The store only ever sees the token; values are decrypted when a connection starts, and never
logged, shown or put in a prompt. With no key set, saving a secret is refused with
`SecretKeyMissing`, whose message says how to make one. A key that cannot decrypt a stored
token (it was changed) is `SecretsUnreadable`: the connection reports it as its status.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Final

from cryptography.fernet import Fernet, InvalidToken

from ..errors import ConfigError, InvalidRequest

__all__ = [
    "SECRET_KEY_ENV",
    "SecretBox",
    "SecretKeyMissing",
    "SecretsUnreadable",
    "mask",
    "new_secret_key",
]

SECRET_KEY_ENV: Final = "HANDRAIL_SECRET_KEY"
#: Secret values shorter than this are not masked in log lines (they would mask every word).
MASK_MIN: Final = 4
MASK: Final = "********"


class SecretKeyMissing(InvalidRequest):
    """A secret was to be saved, but the server has no key to encrypt it with."""


class SecretsUnreadable(ConfigError):
    """Stored secrets that the current key cannot decrypt."""


def new_secret_key() -> str:
    """A new key for ``HANDRAIL_SECRET_KEY`` (32 random bytes, URL-safe base64)."""
    return Fernet.generate_key().decode("ascii")


def _how_to_set() -> str:
    return (
        f"Set {SECRET_KEY_ENV} to a key made with `handrail secret-key` (a Fernet key: "
        "32 random bytes as URL-safe base64) and restart the server; keep the key safe, as "
        "the secrets cannot be read without it."
    )


class SecretBox:
    """Encrypts and decrypts a connection's secrets (a mapping of names to text)."""

    def __init__(self, key: str | None) -> None:
        self._fernet: Fernet | None = None
        if key is not None and key.strip():
            try:
                self._fernet = Fernet(key.strip().encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise ConfigError(
                    f"{SECRET_KEY_ENV} is not a Fernet key (32 bytes as URL-safe base64). "
                    + _how_to_set()
                ) from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SecretBox:
        environ = os.environ if env is None else env
        return cls(environ.get(SECRET_KEY_ENV))

    @property
    def has_key(self) -> bool:
        return self._fernet is not None

    def seal(self, secrets: Mapping[str, str]) -> str | None:
        """The token of `secrets` (None for none); `SecretKeyMissing` without a key."""
        if not secrets:
            return None
        if self._fernet is None:
            raise SecretKeyMissing(
                "The server has no key to encrypt secrets with, so it saves none. " + _how_to_set(),
                code="SECRET_KEY_MISSING",
            )
        data = json.dumps(dict(secrets), sort_keys=True).encode("utf-8")
        return self._fernet.encrypt(data).decode("ascii")

    def open(self, token: str | None) -> dict[str, str]:
        """The secrets of a token (empty for None); `SecretsUnreadable` when the key cannot
        read it."""
        if not token:
            return {}
        if self._fernet is None:
            raise SecretsUnreadable(
                f"The connection has saved secrets but {SECRET_KEY_ENV} is not set. "
                + _how_to_set()
            )
        try:
            data = self._fernet.decrypt(token.encode("ascii"))
        except InvalidToken:
            raise SecretsUnreadable(
                f"The saved secrets cannot be read with the current {SECRET_KEY_ENV} (was the key "
                "changed?). Set the key they were saved with, or save the secrets again."
            ) from None
        loaded = json.loads(data)
        return {str(k): str(v) for k, v in loaded.items()}


def mask(text: str, secrets: Mapping[str, str] | list[str]) -> str:
    """`text` with every secret value (of at least `MASK_MIN` characters) replaced."""
    values = secrets.values() if isinstance(secrets, Mapping) else secrets
    for value in sorted((v for v in values if len(v) >= MASK_MIN), key=len, reverse=True):
        text = text.replace(value, MASK)
    return text
