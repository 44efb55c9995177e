"""The server's configuration: a YAML file, then environment overrides.

    database_url: sqlite:///handrail.db      # HANDRAIL_DATABASE_URL
    blob_dir: handrail-files                 # HANDRAIL_BLOB_DIR
    sqlite_synchronous: FULL                 # HANDRAIL_SQLITE_SYNCHRONOUS (FULL, NORMAL, EXTRA)
    database_wait: 30                        # HANDRAIL_DATABASE_WAIT (seconds; 0: no wait)
    api_prefix: /api                         # HANDRAIL_API_PREFIX
    model: openai:gpt-4.1-mini               # HANDRAIL_MODEL
    host: 127.0.0.1                          # HANDRAIL_HOST
    port: 8000                               # HANDRAIL_PORT
    max_upload_bytes: 10485760
    max_json_bytes: 1048576                  # HANDRAIL_MAX_JSON_BYTES
    max_header_bytes: 65536                  # HANDRAIL_MAX_HEADER_BYTES
    header_timeout: 10                       # HANDRAIL_HEADER_TIMEOUT (seconds)
    body_timeout: 30                         # HANDRAIL_BODY_TIMEOUT (seconds)
    max_connections: 1000                    # HANDRAIL_MAX_CONNECTIONS
    tool_timeout: 60                         # HANDRAIL_TOOL_TIMEOUT (seconds)
    catalog_dirs: [apps]                     # more app definitions (<slug>.yaml)
    turn_lease: 10                           # HANDRAIL_TURN_LEASE (seconds)
    page_tool_timeout: 120                   # HANDRAIL_PAGE_TOOL_TIMEOUT (seconds)
    allowed_origins: [https://app.example.com]   # HANDRAIL_ALLOWED_ORIGINS (comma-separated)
    jwt:                                     # bearer JWTs of the host app's identity provider
      issuer: https://id.example.com/        # HANDRAIL_JWT_ISSUER
      audience: handrail                     # HANDRAIL_JWT_AUDIENCE
      keys: jwks.json                        # HANDRAIL_JWT_KEYS: a JWKS or PEM public key file
      user_claim: sub                        # HANDRAIL_JWT_USER_CLAIM
    users:
      - {id: alice, token_env: ALICE_TOKEN, admin: true}
    agents:
      - name: helper
        instructions: You help people set up their billing.
        asks: {kinds: [choice, confirm], maxFileSizeBytes: 5000000}
        clarify: true                        # offer the clarify tool (batched questions)
      - name: outside                        # run by a program of your own, not a model
        adapter: {type: process, command: python, args: [agent.py], timeout_s: 60}
      - import: "my_app.agents:support"

Every mistake raises `ConfigError` whose message starts with the field's path (such as
``users[1].token: required``) and says what to write instead. Unknown keys are mistakes too.
"""

from __future__ import annotations

import copy
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml  # type: ignore[import-untyped]  # no stubs in the allowed dependencies

from ..asks.limits import DEFAULT_MAX_FILE_SIZE, FILES_MAX
from ..errors import ConfigError
from ..runtime.agent import Agent
from ..runtime.models import DEFAULT_MODEL, model_from_name
from ..runtime.models.adapters import ProcessAdapter
from ..runtime.page_tools import DEFAULT_PAGE_TOOL_TIMEOUT
from ..runtime.recovery import DEFAULT_LEASE_S
from ..store.db import driver_url
from .agent_config import agents_from_config
from .config_values import (
    boolean,
    no_unknown_keys,
    port,
    positive_int,
    required_list,
    seconds,
    string,
)
from .reach_config import (
    EmailConfig,
    WebhookConfig,
    email_config,
    link_key,
    public_url,
    user_email,
    webhook_configs,
)

__all__ = [
    "DEFAULT_API_PREFIX",
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_HOST",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_JSON_BYTES",
    "DEFAULT_PORT",
    "DEFAULT_SQLITE_SYNCHRONOUS",
    "DEFAULT_TOOL_TIMEOUT",
    "ENV_VARS",
    "JwtConfig",
    "ServerConfig",
    "UserConfig",
    "default_config",
    "load_config",
]

DEFAULT_DATABASE_URL: Final = "sqlite:///handrail.db"
#: SQLite's durability: a commit is on the disk before the server says it happened.
DEFAULT_SQLITE_SYNCHRONOUS: Final = "FULL"
#: The levels `sqlite_synchronous` takes (``OFF`` is not one: a crash could corrupt the file).
SQLITE_SYNCHRONOUS_LEVELS: Final = ("FULL", "NORMAL", "EXTRA")
#: Seconds ``handrail serve`` waits at start for a PostgreSQL server that does not accept
#: connections yet (a container started beside its database).
DEFAULT_DATABASE_WAIT: Final = 30.0
DEFAULT_API_PREFIX: Final = "/api"
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
#: The cap of a JSON request body other than the answer to a `files` ask (1 MiB).
DEFAULT_MAX_JSON_BYTES: Final = 1024 * 1024
#: The cap of a request's line and headers together (64 KiB).
DEFAULT_MAX_HEADER_BYTES: Final = 64 * 1024
#: Seconds a request's line and headers may take to arrive.
DEFAULT_HEADER_TIMEOUT: Final = 10.0
#: Seconds a request's body may take to arrive (plus a second for each 16 KiB received).
DEFAULT_BODY_TIMEOUT: Final = 30.0
#: Open connections at most; a connection over it gets 503.
DEFAULT_MAX_CONNECTIONS: Final = 1000
#: Seconds a tool call of a saved connection may take.
DEFAULT_TOOL_TIMEOUT: Final = 60.0

#: The environment variables that override a setting of the file, by setting name.
ENV_VARS: Final[Mapping[str, str]] = {
    "database_url": "HANDRAIL_DATABASE_URL",
    "blob_dir": "HANDRAIL_BLOB_DIR",
    "sqlite_synchronous": "HANDRAIL_SQLITE_SYNCHRONOUS",
    "database_wait": "HANDRAIL_DATABASE_WAIT",
    "api_prefix": "HANDRAIL_API_PREFIX",
    "model": "HANDRAIL_MODEL",
    "host": "HANDRAIL_HOST",
    "port": "HANDRAIL_PORT",
    "max_json_bytes": "HANDRAIL_MAX_JSON_BYTES",
    "max_header_bytes": "HANDRAIL_MAX_HEADER_BYTES",
    "header_timeout": "HANDRAIL_HEADER_TIMEOUT",
    "body_timeout": "HANDRAIL_BODY_TIMEOUT",
    "max_connections": "HANDRAIL_MAX_CONNECTIONS",
    "tool_timeout": "HANDRAIL_TOOL_TIMEOUT",
    "turn_lease": "HANDRAIL_TURN_LEASE",
    "page_tool_timeout": "HANDRAIL_PAGE_TOOL_TIMEOUT",
    "allowed_origins": "HANDRAIL_ALLOWED_ORIGINS",
    "jwt.issuer": "HANDRAIL_JWT_ISSUER",
    "jwt.audience": "HANDRAIL_JWT_AUDIENCE",
    "jwt.keys": "HANDRAIL_JWT_KEYS",
    "jwt.user_claim": "HANDRAIL_JWT_USER_CLAIM",
}
#: The settings that are a positive whole number, and those that are seconds.
_INT_SETTINGS: Final = ("max_json_bytes", "max_header_bytes", "max_connections")
_SECONDS_SETTINGS: Final = (
    "header_timeout",
    "body_timeout",
    "tool_timeout",
    "turn_lease",
    "page_tool_timeout",
)

_TOP_KEYS: Final = (
    "database_url",
    "blob_dir",
    "sqlite_synchronous",
    "database_wait",
    "api_prefix",
    "model",
    "host",
    "port",
    "max_upload_bytes",
    "max_json_bytes",
    "max_header_bytes",
    "header_timeout",
    "body_timeout",
    "max_connections",
    "turn_lease",
    "tool_timeout",
    "page_tool_timeout",
    "allowed_origins",
    "jwt",
    "catalog_dirs",
    "users",
    "agents",
    "public_url",
    "webhooks",
    "email",
)
_USER_KEYS: Final = ("id", "token", "token_env", "admin", "email")
_PREFIX: Final = re.compile(r"(/[A-Za-z0-9._~-]+)*")

#: Room in a files answer's body beside its base64 files.
FILES_ANSWER_OVERHEAD_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class UserConfig:
    """A user who may call the API: an id, a bearer token, and whether they are an admin."""

    id: str
    token: str = field(repr=False)
    admin: bool = False
    #: Where the emails of the user's new asks and reminders go (when email is on).
    email: str | None = None


_JWT_KEYS: Final = ("issuer", "audience", "keys", "user_claim", "algorithms")
_ORIGIN: Final = re.compile(r"^https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$")


@dataclass(frozen=True, kw_only=True)
class JwtConfig:
    """Bearer JWTs from a host app's identity provider: who issues them (``iss``), for whom
    (``aud``), the file of the keys that sign them (a JWKS JSON file or a PEM public key), the
    claim that holds the user id, and the algorithms taken (asymmetric only)."""

    issuer: str
    audience: str
    keys: Path
    user_claim: str = "sub"
    algorithms: tuple[str, ...] = ("RS256", "ES256", "EdDSA")


@dataclass(kw_only=True)
class ServerConfig:
    """Everything `create_app` and ``handrail serve`` need.

    Build it in Python, or read a YAML file with `load_config`. `model` is the model of every
    agent that names none (``scripted``, ``openai:<model>`` or ``anthropic:<model>``).
    `max_upload_bytes` caps each upload; None means the largest ``maxFileSizeBytes`` of the
    agents' asks (10 MB by default). `max_json_bytes` caps every JSON body but the answer to a
    `files` ask, which may carry up to ten such files as base64 data URLs
    (`max_files_answer_bytes`).

    The last four guard the connections of the server ``handrail serve`` and ``handrail demo``
    run (`handrail.server.serving`): `max_header_bytes` caps a request's line and headers (431
    beyond), `header_timeout` and `body_timeout` are the seconds they and the body may take to
    arrive (408 and the connection closed beyond; the body gets a second more for each 16 KiB
    received), and `max_connections` caps the open connections (503 beyond).
    """

    users: Sequence[UserConfig]
    agents: Sequence[Agent]
    database_url: str = DEFAULT_DATABASE_URL
    blob_dir: Path | None = None
    #: SQLite's ``PRAGMA synchronous``: ``FULL`` (every commit reaches the disk before it is
    #: acknowledged), ``NORMAL`` (faster; a power loss or an OS crash may undo the last
    #: commits, a crash of the server alone never does) or ``EXTRA``.
    sqlite_synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS
    #: Seconds the server's start waits for a PostgreSQL server that does not accept
    #: connections yet (refused, or still starting up), trying again every half second; 0 to
    #: fail at once. Not used with SQLite.
    database_wait: float = DEFAULT_DATABASE_WAIT
    api_prefix: str = DEFAULT_API_PREFIX
    model: str = DEFAULT_MODEL
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_upload_bytes: int | None = None
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    #: Seconds a tool call of a saved connection may take unless the connection says
    #: otherwise.
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    #: Folders of more app definitions for the catalog (beside the shipped ones).
    catalog_dirs: Sequence[Path] = ()
    #: Seconds a turn's lease lasts without a heartbeat before another process takes the
    #: turn over (see `handrail.runtime.recovery`).
    turn_lease: float = DEFAULT_LEASE_S
    #: The base URL of the links in emails (``HANDRAIL_PUBLIC_URL``).
    public_url: str | None = None
    #: Where events are posted (`handrail.server.reach_config`).
    webhooks: Sequence[WebhookConfig] = ()
    #: The SMTP server of emails, None when email is off.
    email: EmailConfig | None = None
    #: The key that signs email links (``HANDRAIL_LINK_KEY``).
    link_key: bytes | None = field(default=None, repr=False)
    #: Seconds a page has to run a page tool call before it is cancelled.
    page_tool_timeout: float = DEFAULT_PAGE_TOOL_TIMEOUT
    #: Origins of the pages that may call the API from a browser (CORS, no credentials).
    allowed_origins: Sequence[str] = ()
    #: Bearer JWTs of a host app's identity provider, when set.
    jwt: JwtConfig | None = None

    def __post_init__(self) -> None:
        self.users = tuple(self.users)
        self.allowed_origins = _origins(self.allowed_origins, "allowed_origins")
        self.catalog_dirs = tuple(Path(d) for d in self.catalog_dirs)
        self.agents = tuple(self.agents)
        self.api_prefix = _checked_prefix(self.api_prefix, "api_prefix")
        try:
            driver_url(self.database_url)
        except ConfigError as exc:
            raise ConfigError(f"database_url: {exc}") from None
        level = str(self.sqlite_synchronous).strip().upper()
        if level not in SQLITE_SYNCHRONOUS_LEVELS:
            raise ConfigError(
                f"sqlite_synchronous must be one of {', '.join(SQLITE_SYNCHRONOUS_LEVELS)}, "
                f"not {self.sqlite_synchronous!r}: FULL (the default) keeps every answered "
                "commit through a power loss, NORMAL is faster and may lose the last ones"
            )
        self.sqlite_synchronous = level
        if not self.users:
            raise ConfigError(
                "users: at least one user is required, such as "
                "users: [{id: alice, token_env: ALICE_TOKEN}]"
            )
        seen_ids: set[str] = set()
        seen_tokens: set[str] = set()
        for index, user in enumerate(self.users):
            if user.id in seen_ids:
                raise ConfigError(f"users[{index}].id: {user.id!r} is used twice; ids are unique")
            if user.token in seen_tokens:
                raise ConfigError(
                    f"users[{index}].token: the same token as another user; give each user "
                    "their own token"
                )
            seen_ids.add(user.id)
            seen_tokens.add(user.token)
        if not self.agents:
            raise ConfigError(
                "agents: at least one agent is required, such as "
                "agents: [{name: helper, instructions: ..., asks: true}]"
            )
        names: set[str] = set()
        for index, agent in enumerate(self.agents):
            if not isinstance(agent, Agent):
                raise ConfigError(f"agents[{index}]: {agent!r} is not a handrail Agent")
            if agent.name in names:
                raise ConfigError(
                    f"agents[{index}].name: {agent.name!r} is used twice; names are unique"
                )
            names.add(agent.name)
        if not isinstance(self.port, int) or isinstance(self.port, bool):
            raise ConfigError("port: must be a whole number from 1 to 65535")
        if not 1 <= self.port <= 65535:
            raise ConfigError(f"port: {self.port} is not from 1 to 65535")
        if self.max_upload_bytes is not None and (
            isinstance(self.max_upload_bytes, bool)
            or not isinstance(self.max_upload_bytes, int)
            or self.max_upload_bytes < 1
        ):
            raise ConfigError("max_upload_bytes: must be a positive whole number of bytes")
        for name in _INT_SETTINGS:
            positive_int(getattr(self, name), name)
        for name in _SECONDS_SETTINGS:
            setattr(self, name, seconds(getattr(self, name), name))
        self.database_wait = seconds(self.database_wait, "database_wait", zero=True)
        self.webhooks = tuple(self.webhooks)
        agent_names = {agent.name for agent in self.agents}
        for index, hook in enumerate(self.webhooks):
            for user_id in hook.users or ():
                if user_id not in seen_ids:
                    raise ConfigError(
                        f"webhooks[{index}].users: {user_id!r} is not a user; the users are "
                        f"{', '.join(sorted(seen_ids))}"
                    )
            for name in hook.agents or ():
                if name not in agent_names:
                    raise ConfigError(
                        f"webhooks[{index}].agents: {name!r} is not an agent; the agents are "
                        f"{', '.join(sorted(agent_names))}"
                    )
        if self.email is not None:
            if self.public_url is None:
                raise ConfigError(
                    "public_url: required when email is on, so that links in emails reach "
                    "this server; set it (or HANDRAIL_PUBLIC_URL) to a URL such as "
                    "https://handrail.example.com"
                )
            if self.link_key is None:
                raise ConfigError(
                    "HANDRAIL_LINK_KEY: required when email is on, to sign the links in "
                    "emails; set it to a random text of at least 16 characters (32 or more "
                    "is better), or set HANDRAIL_SECRET_KEY"
                )

    @property
    def upload_cap(self) -> int:
        """The per-file cap of ``POST /files/upload``, in bytes."""
        if self.max_upload_bytes is not None:
            return self.max_upload_bytes
        caps = [a.asks.max_file_size_bytes for a in self.agents if a.asks is not None]
        return max(caps, default=DEFAULT_MAX_FILE_SIZE)

    @property
    def max_files_answer_bytes(self) -> int:
        """The cap of a JSON body that answers a `files` ask: `MAX_FILES_PER_ANSWER` files of
        `upload_cap` as base64 (4 bytes per 3), plus 1 MiB, and never below `max_json_bytes`."""
        files = self.upload_cap * FILES_MAX * 4 // 3 + FILES_ANSWER_OVERHEAD_BYTES
        return max(files, self.max_json_bytes)

    @property
    def asks_enabled(self) -> bool:
        """Whether any agent has asks on (the headless endpoints exist only then)."""
        return any(agent.asks is not None for agent in self.agents)

    def resolved_agents(self) -> list[Agent]:
        """The agents, each with a model: one that names none gets `model` (a copy, so the
        caller's object is left as it is)."""
        out: list[Agent] = []
        for agent in self.agents:
            if agent.model is None:
                agent = copy.copy(agent)
                agent.model = self.model
            out.append(agent)
        return out

    def check_models(self) -> None:
        """Build each agent's model once, so that a bad model name or a missing API key stops
        the start-up with a `ConfigError` naming the setting; and so does a process adapter
        whose command is no program this server can run."""
        for index, agent in enumerate(self.agents):
            if agent.adapter is not None:  # run by its adapter, not a model
                problem = (
                    agent.adapter.unstartable()
                    if isinstance(agent.adapter, ProcessAdapter)
                    else None
                )
                if problem is not None:
                    raise ConfigError(f"agents[{index}].adapter.command: {problem}")
                continue
            name = agent.model or self.model
            try:
                model_from_name(name)
            except ConfigError as exc:
                where = f"agents[{index}].model" if agent.model else "model"
                raise ConfigError(f"{where}: {exc}") from None

    @classmethod
    def from_mapping(
        cls, data: Any, *, env: Mapping[str, str] | None = None, base_dir: Path | None = None
    ) -> ServerConfig:
        """A config from parsed YAML (a mapping), then the environment overrides of `env`
        (default: ``os.environ``). Relative paths in it (action set files) are read from
        `base_dir` (the config file's folder)."""
        environ = os.environ if env is None else env
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(
                "the configuration must be a mapping of settings, such as "
                "'users: [...]' and 'agents: [...]' on their own lines"
            )
        no_unknown_keys(data, _TOP_KEYS, "")
        values: dict[str, Any] = {}
        for key in ("database_url", "sqlite_synchronous", "model", "host"):
            if key in data:
                values[key] = string(data[key], key)
        if "api_prefix" in data:
            values["api_prefix"] = _checked_prefix(data["api_prefix"], "api_prefix")
        if "catalog_dirs" in data:
            values["catalog_dirs"] = _catalog_dirs(data["catalog_dirs"], base_dir)
        if "blob_dir" in data:
            values["blob_dir"] = Path(string(data["blob_dir"], "blob_dir"))
        if "port" in data:
            values["port"] = port(data["port"], "port")
        if "max_upload_bytes" in data:
            values["max_upload_bytes"] = positive_int(data["max_upload_bytes"], "max_upload_bytes")
        for key in _INT_SETTINGS:
            if key in data:
                values[key] = positive_int(data[key], key)
        for key in _SECONDS_SETTINGS:
            if key in data:
                values[key] = seconds(data[key], key)
        if "database_wait" in data:
            values["database_wait"] = seconds(data["database_wait"], "database_wait", zero=True)
        for key, var in ENV_VARS.items():
            if key == "allowed_origins" or key.startswith("jwt."):
                continue  # read below
            raw = environ.get(var)
            if raw is None or not raw.strip():
                continue
            raw = raw.strip()
            if key == "port":
                values[key] = port(raw, var)
            elif key == "blob_dir":
                values[key] = Path(raw)
            elif key == "api_prefix":
                values[key] = _checked_prefix(raw, var)
            elif key in _INT_SETTINGS:
                values[key] = positive_int(int(raw) if raw.isdigit() else raw, var)
            elif key in _SECONDS_SETTINGS:
                values[key] = seconds(raw, var)
            elif key == "database_wait":
                values[key] = seconds(raw, var, zero=True)
            else:
                values[key] = raw
        if "allowed_origins" in data:
            values["allowed_origins"] = _origins(data["allowed_origins"], "allowed_origins")
        raw_origins = environ.get(ENV_VARS["allowed_origins"], "").strip()
        if raw_origins:
            values["allowed_origins"] = _origins(
                [o for o in raw_origins.split(",") if o.strip()], ENV_VARS["allowed_origins"]
            )
        values["jwt"] = _jwt(data.get("jwt"), environ, base_dir)
        values["users"] = _users(data.get("users"), environ)
        values["agents"] = agents_from_config(data.get("agents"), base_dir=base_dir, env=environ)
        values["public_url"] = public_url(data.get("public_url"), environ)
        values["webhooks"] = webhook_configs(data.get("webhooks"), environ)
        values["email"] = email_config(data.get("email"), environ)
        values["link_key"] = link_key(environ)
        return cls(**values)


DEFAULT_AGENT_INSTRUCTIONS: Final = (
    "You are a helpful assistant. When you need the user to choose, confirm, edit, fill in or "
    "upload something, ask with an ask tool instead of asking in plain text."
)


def default_config(*, env: Mapping[str, str] | None = None) -> tuple[ServerConfig, bool]:
    """The configuration of ``handrail serve`` without ``--config``: a SQLite file
    ``handrail.db`` in the working folder, the scripted model, one agent ``assistant`` with
    every ask kind, and one user ``demo`` whose token is ``HANDRAIL_TOKEN`` or, when that is
    unset, a new random one. The environment overrides apply as for a file.

    Returns the config and whether the token was generated (the caller should show it).
    """
    environ = os.environ if env is None else env
    token = environ.get("HANDRAIL_TOKEN", "").strip()
    generated = not token
    if generated:
        token = secrets.token_urlsafe(24)
    data = {
        "users": [{"id": "demo", "token": token}],
        "agents": [{"name": "assistant", "instructions": DEFAULT_AGENT_INSTRUCTIONS}],
    }
    return ServerConfig.from_mapping(data, env=environ), generated


def load_config(path: Path | str, *, env: Mapping[str, str] | None = None) -> ServerConfig:
    """Read the YAML file at `path`, apply the environment overrides, and check it all."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass the path of a YAML config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    try:
        return ServerConfig.from_mapping(data, env=env, base_dir=path.parent)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# --- checks ------------------------------------------------------------------------------------


def _origins(value: Any, path: str) -> tuple[str, ...]:
    """Origins (``https://app.example.com``, scheme, host and optional port), lowercased."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError(f"{path}: must be a list of origins, such as [https://app.example.com]")
    out: list[str] = []
    for index, item in enumerate(value):
        origin = item.strip().rstrip("/").lower() if isinstance(item, str) else item
        if not isinstance(origin, str) or not _ORIGIN.match(origin):
            raise ConfigError(
                f"{path}[{index}]: {item!r} is not an origin; write the scheme, host and port "
                "only, such as https://app.example.com or http://127.0.0.1:8080"
            )
        if origin not in out:
            out.append(origin)
    return tuple(out)


def _jwt(data: Any, environ: Mapping[str, str], base_dir: Path | None) -> JwtConfig | None:
    """The ``jwt`` settings (file first, then ``HANDRAIL_JWT_*``), or None when unset."""
    values: dict[str, Any] = {}
    if data is not None:
        if not isinstance(data, Mapping):
            raise ConfigError("jwt: must be a mapping of issuer, audience, keys and user_claim")
        no_unknown_keys(data, _JWT_KEYS, "jwt")
        for key in ("issuer", "audience", "keys", "user_claim"):
            if key in data:
                values[key] = string(data[key], f"jwt.{key}")
        if "algorithms" in data:
            algorithms = data["algorithms"]
            if isinstance(algorithms, str) or not isinstance(algorithms, Iterable):
                raise ConfigError("jwt.algorithms: must be a list, such as [RS256]")
            values["algorithms"] = tuple(string(a, "jwt.algorithms") for a in algorithms)
    for key in ("issuer", "audience", "keys", "user_claim"):
        raw = environ.get(ENV_VARS[f"jwt.{key}"], "").strip()
        if raw:
            values[key] = raw
    if not values:
        return None
    for key in ("issuer", "audience", "keys"):
        if key not in values:
            raise ConfigError(
                f"jwt.{key}: required with the other jwt settings ({ENV_VARS['jwt.' + key]})"
            )
    for algorithm in values.get("algorithms", ()):
        if algorithm.upper().startswith("HS") or algorithm.lower() == "none":
            raise ConfigError(
                f"jwt.algorithms: {algorithm} is not taken; use an asymmetric algorithm such "
                "as RS256 or ES256, whose public key the server can hold"
            )
    keys = Path(values["keys"])
    if not keys.is_absolute() and base_dir is not None:
        keys = base_dir / keys
    values["keys"] = keys
    if not keys.is_file():
        raise ConfigError(
            f"jwt.keys: {keys} is not a file; give the path of a JWKS JSON file or a PEM public key"
        )
    return JwtConfig(**values)


def _checked_prefix(value: Any, path: str) -> str:
    """``/api`` style: empty (routes at the root) or slash-separated path segments, with no
    trailing slash. A trailing slash is dropped; ``/`` means the root."""
    if not isinstance(value, str):
        raise ConfigError(f"{path}: must be a string such as /api")
    prefix = value.strip().rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise ConfigError(f"{path}: {value!r} must start with '/', such as /api")
    if not _PREFIX.fullmatch(prefix):
        raise ConfigError(
            f"{path}: {value!r} is not a plain URL path; use letters, digits, '.', '_', '~' "
            "and '-' between slashes, such as /api or /handrail/api"
        )
    return prefix


def _users(value: Any, env: Mapping[str, str]) -> list[UserConfig]:
    entries = required_list(value, "users", "[{id: alice, token_env: ALICE_TOKEN}]")
    users: list[UserConfig] = []
    for index, entry in enumerate(entries):
        path = f"users[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path}: must be a mapping such as {{id: alice, token: ...}}")
        no_unknown_keys(entry, _USER_KEYS, path)
        if "id" not in entry:
            raise ConfigError(f"{path}.id: required; the user's id, such as alice")
        user_id = string(entry["id"], f"{path}.id")
        if "token" in entry and "token_env" in entry:
            raise ConfigError(f"{path}: give token or token_env, not both")
        if "token_env" in entry:
            var = string(entry["token_env"], f"{path}.token_env")
            token = env.get(var, "").strip()
            if not token:
                raise ConfigError(
                    f"{path}.token_env: the environment variable {var} is not set or is "
                    "empty; set it to the user's token"
                )
        elif "token" in entry:
            token = string(entry["token"], f"{path}.token")
        else:
            raise ConfigError(
                f"{path}.token: required; give the bearer token as token, or name an "
                "environment variable that holds it as token_env"
            )
        admin = boolean(entry.get("admin", False), f"{path}.admin")
        email = user_email(entry.get("email"), f"{path}.email")
        users.append(UserConfig(id=user_id, token=token, admin=admin, email=email))
    return users


def _catalog_dirs(value: Any, base_dir: Path | None) -> list[Path]:
    """Folders of app definitions, relative to the config file's folder."""
    entries = required_list(value, "catalog_dirs", "[apps]")
    folders: list[Path] = []
    for index, item in enumerate(entries):
        folder = Path(string(item, f"catalog_dirs[{index}]"))
        if not folder.is_absolute() and base_dir is not None:
            folder = base_dir / folder
        if not folder.is_dir():
            raise ConfigError(f"catalog_dirs[{index}]: no folder at {folder}")
        folders.append(folder)
    return folders
