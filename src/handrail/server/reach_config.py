"""The settings of reaching people off the page: webhooks and email.

    public_url: https://handrail.example.com   # HANDRAIL_PUBLIC_URL: the base of email links
    webhooks:
      - name: ops
        url: https://hooks.example.com/handrail
        secret_env: OPS_WEBHOOK_SECRET          # whsec_<base64> or any text
        users: [alice]                          # and/or agents: [helper]; neither: everyone
        events: [ask.created, ask.reminder, ask.answered, ask.cancelled]
        attempts: 6
        backoff: 5                              # seconds before the 2nd attempt, doubling
    email:                                      # on when a host is set (or HANDRAIL_SMTP_HOST)
      host: smtp.example.com                    # HANDRAIL_SMTP_HOST
      port: 587                                 # HANDRAIL_SMTP_PORT
      tls: starttls                             # HANDRAIL_SMTP_TLS: starttls, tls or none
      from: handrail@example.com                # HANDRAIL_SMTP_FROM
      link_ttl: 86400                           # seconds an answer link works at most
      ca_file: /etc/ssl/private-ca.pem          # HANDRAIL_SMTP_CA_FILE: CAs to trust instead

The SMTP user name and password come only from the environment (``HANDRAIL_SMTP_USERNAME``,
``HANDRAIL_SMTP_PASSWORD``), as does the key that signs answer links (``HANDRAIL_LINK_KEY``,
else one derived from ``HANDRAIL_SECRET_KEY``). A webhook's URL is the administrator's: it is
read from this file only, never from a request body, so the server never posts to an address a
client named.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from ..connections.secrets import SECRET_KEY_ENV
from ..errors import ConfigError

__all__ = [
    "EMAIL_EVENTS",
    "REACH_ENV_VARS",
    "WEBHOOK_EVENTS",
    "EmailConfig",
    "WebhookConfig",
    "email_config",
    "link_key",
    "public_url",
    "user_email",
    "webhook_configs",
]

#: The events a webhook may be sent, and those that send an email.
WEBHOOK_EVENTS: Final = ("ask.created", "ask.reminder", "ask.answered", "ask.cancelled")
EMAIL_EVENTS: Final = ("ask.created", "ask.reminder")

#: The environment variables of reach, by what they set.
REACH_ENV_VARS: Final[Mapping[str, str]] = {
    "public_url": "HANDRAIL_PUBLIC_URL",
    "host": "HANDRAIL_SMTP_HOST",
    "port": "HANDRAIL_SMTP_PORT",
    "tls": "HANDRAIL_SMTP_TLS",
    "from": "HANDRAIL_SMTP_FROM",
    "username": "HANDRAIL_SMTP_USERNAME",
    "password": "HANDRAIL_SMTP_PASSWORD",
    "link_key": "HANDRAIL_LINK_KEY",
    "ca_file": "HANDRAIL_SMTP_CA_FILE",
}

WEBHOOK_KEYS: Final = (
    "name",
    "url",
    "secret_env",
    "users",
    "agents",
    "events",
    "attempts",
    "backoff",
)
EMAIL_KEYS: Final = ("host", "port", "tls", "from", "link_ttl", "ca_file")
TLS_MODES: Final = ("starttls", "tls", "none")
DEFAULT_ATTEMPTS: Final = 6
DEFAULT_BACKOFF: Final = 5.0
DEFAULT_LINK_TTL: Final = 86400.0
_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_EMAIL: Final = re.compile(r"[^@\s<>\"',;]+@[^@\s<>\"',;]+\.[^@\s<>\"',;]+")

TlsMode = Literal["starttls", "tls", "none"]


@dataclass(frozen=True, kw_only=True)
class WebhookConfig:
    """One receiver of events, set by the administrator.

    An event is sent when its type is in `events`, its user is in `users` (when given) and its
    conversation's agent is in `agents` (when given). `secret` is the signing key's bytes."""

    name: str
    url: str
    secret: bytes = field(repr=False)
    users: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None
    events: tuple[str, ...] = WEBHOOK_EVENTS
    attempts: int = DEFAULT_ATTEMPTS
    backoff: float = DEFAULT_BACKOFF

    def wants(self, kind: str, user_id: str, agent: str | None) -> bool:
        if kind not in self.events:
            return False
        if self.users is not None and user_id not in self.users:
            return False
        return self.agents is None or (agent is not None and agent in self.agents)


@dataclass(frozen=True, kw_only=True)
class EmailConfig:
    """The SMTP server that sends the emails of new asks and reminders."""

    host: str
    port: int
    tls: TlsMode = "starttls"
    sender: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    link_ttl: float = DEFAULT_LINK_TTL
    #: A PEM file of the authorities to trust for the SMTP server's certificate instead of
    #: the system's (a private mail server's own CA).
    ca_file: str | None = None
    attempts: int = DEFAULT_ATTEMPTS
    backoff: float = DEFAULT_BACKOFF


def public_url(value: Any, env: Mapping[str, str]) -> str | None:
    """The base URL of links in emails (``https://host[/path]``), or None."""
    raw = env.get(REACH_ENV_VARS["public_url"], "").strip() or value
    if raw is None:
        return None
    where = "public_url"
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(f"{where}: must be a URL such as https://handrail.example.com")
    url = raw.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(
            f"{where}: {raw!r} is not an http(s) URL without a query, such as "
            "https://handrail.example.com"
        )
    return url


def webhook_configs(value: Any, env: Mapping[str, str]) -> tuple[WebhookConfig, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(
            "webhooks: must be a list, such as [{name: ops, url: https://..., secret_env: ...}]"
        )
    hooks: list[WebhookConfig] = []
    names: set[str] = set()
    for index, entry in enumerate(value):
        path = f"webhooks[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path}: must be a mapping such as {{name: ops, url: ...}}")
        for key in entry:
            if key not in WEBHOOK_KEYS:
                raise ConfigError(
                    f"{path}.{key}: unknown setting; the settings here are "
                    f"{', '.join(WEBHOOK_KEYS)}"
                )
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{path}.name: required; a short name of lowercase letters, digits, '-' and "
                "'_', such as ops"
            )
        if name in names:
            raise ConfigError(f"{path}.name: {name!r} is used twice; names are unique")
        names.add(name)
        url = entry.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{path}.url: required; an http(s) URL such as https://hooks.example.com/x"
            )
        if parts.username or parts.password:
            raise ConfigError(f"{path}.url: must not hold a user name or password")
        var = entry.get("secret_env")
        if not isinstance(var, str) or not var.strip():
            raise ConfigError(
                f"{path}.secret_env: required; the environment variable that holds the "
                "signing secret (whsec_<base64>, or any text of 16 characters or more)"
            )
        secret = _webhook_secret(env.get(var.strip(), ""), f"{path}.secret_env", var.strip())
        hooks.append(
            WebhookConfig(
                name=name,
                url=url.strip() if isinstance(url, str) else "",
                secret=secret,
                users=_names(entry.get("users"), f"{path}.users"),
                agents=_names(entry.get("agents"), f"{path}.agents"),
                events=_events(entry.get("events"), f"{path}.events"),
                attempts=_attempts(entry.get("attempts", DEFAULT_ATTEMPTS), f"{path}.attempts"),
                backoff=_seconds(entry.get("backoff", DEFAULT_BACKOFF), f"{path}.backoff"),
            )
        )
    return tuple(hooks)


def email_config(value: Any, env: Mapping[str, str]) -> EmailConfig | None:
    """The SMTP settings, or None when no host is set (in the file or the environment)."""
    data: Mapping[str, Any] = {}
    if value is not None:
        if not isinstance(value, Mapping):
            raise ConfigError("email: must be a mapping such as {host: smtp.example.com, ...}")
        for key in value:
            if key not in EMAIL_KEYS:
                raise ConfigError(
                    f"email.{key}: unknown setting; the settings here are "
                    f"{', '.join(EMAIL_KEYS)} (the user name and password come from "
                    "HANDRAIL_SMTP_USERNAME and HANDRAIL_SMTP_PASSWORD)"
                )
        data = value

    def setting(key: str) -> tuple[Any, str]:
        var = REACH_ENV_VARS[key]
        raw = env.get(var, "").strip()
        return (raw, var) if raw else (data.get(key), f"email.{key}")

    host, where = setting("host")
    if host is None:
        return None
    if not isinstance(host, str) or not host.strip():
        raise ConfigError(f"{where}: must be the SMTP server's host name, such as smtp.example.com")
    tls, tls_where = setting("tls")
    tls = "starttls" if tls is None else tls
    if tls not in TLS_MODES:
        raise ConfigError(f"{tls_where}: must be one of {', '.join(TLS_MODES)}, not {tls!r}")
    port, port_where = setting("port")
    if port is None:
        port = {"starttls": 587, "tls": 465, "none": 25}[tls]
    if isinstance(port, str) and port.isdigit():
        port = int(port)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"{port_where}: must be a whole number from 1 to 65535")
    sender, sender_where = setting("from")
    if not isinstance(sender, str) or not _EMAIL.fullmatch(sender.strip()):
        raise ConfigError(
            f"{sender_where}: required with an SMTP host; the sender's address, such as "
            "handrail@example.com"
        )
    username = env.get(REACH_ENV_VARS["username"], "").strip() or None
    password = env.get(REACH_ENV_VARS["password"], "") or None
    if (username is None) != (password is None):
        raise ConfigError("HANDRAIL_SMTP_USERNAME and HANDRAIL_SMTP_PASSWORD: set both, or neither")
    ttl = _seconds(data.get("link_ttl", DEFAULT_LINK_TTL), "email.link_ttl")
    ca_file, ca_where = setting("ca_file")
    if ca_file is not None:
        if not isinstance(ca_file, str) or not os.path.isfile(ca_file.strip()):
            raise ConfigError(f"{ca_where}: no file at {ca_file!r}; name a PEM file of CAs")
        ca_file = ca_file.strip()
    mode: TlsMode = "tls" if tls == "tls" else "none" if tls == "none" else "starttls"
    return EmailConfig(
        host=host.strip(),
        port=port,
        tls=mode,
        sender=sender.strip(),
        username=username,
        password=password,
        link_ttl=ttl,
        ca_file=ca_file,
    )


def user_email(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _EMAIL.fullmatch(value.strip()):
        raise ConfigError(f"{path}: must be an email address such as alice@example.com")
    return value.strip()


def link_key(env: Mapping[str, str]) -> bytes | None:
    """The key that signs answer links: ``HANDRAIL_LINK_KEY``, else one derived from
    ``HANDRAIL_SECRET_KEY``, else None (then email is refused at start-up)."""
    raw = env.get(REACH_ENV_VARS["link_key"], "").strip()
    if raw:
        if len(raw) < 16:
            raise ConfigError("HANDRAIL_LINK_KEY: must be at least 16 characters long")
        return raw.encode("utf-8")
    secret = env.get(SECRET_KEY_ENV, "").strip()
    if secret:
        return hmac.new(secret.encode("utf-8"), b"handrail answer links", hashlib.sha256).digest()
    return None


# --- checks -----------------------------------------------------------------------------------


def _webhook_secret(raw: str, path: str, var: str) -> bytes:
    raw = raw.strip()
    if not raw:
        raise ConfigError(f"{path}: the environment variable {var} is not set or is empty")
    if raw.startswith("whsec_"):
        try:
            encoded = raw.removeprefix("whsec_")
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(
                f"{path}: {var} starts with whsec_ but is not base64 after it"
            ) from None
        if len(key) < 16:
            raise ConfigError(f"{path}: {var} holds fewer than 16 bytes of key")
        return key
    if len(raw) < 16:
        raise ConfigError(f"{path}: {var} must be at least 16 characters long")
    return raw.encode("utf-8")


def _names(value: Any, path: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: must be a list of names, such as [alice]")
    return tuple(value)


def _events(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return WEBHOOK_EVENTS
    if not isinstance(value, list) or not value:
        raise ConfigError(
            f"{path}: must be a non-empty list, such as [{', '.join(WEBHOOK_EVENTS)}]"
        )
    for item in value:
        if item not in WEBHOOK_EVENTS:
            raise ConfigError(f"{path}: {item!r} is not one of {', '.join(WEBHOOK_EVENTS)}")
    return tuple(dict.fromkeys(value))


def _attempts(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise ConfigError(f"{path}: must be a whole number from 1 to 20")
    return value


def _seconds(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e7:
        raise ConfigError(f"{path}: must be a positive number of seconds")
    return float(value)
