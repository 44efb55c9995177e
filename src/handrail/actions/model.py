"""The compiled form of an action set: what `load_action_set` returns and the runtime reads.

Every record is a frozen, keyword-only dataclass. Request parts (`path_params`, `query`,
`headers`, `body`, a dependency's `input`, a `preview`) are *templates*: JSON-like values whose
leaves are literals or `Ref` objects (`handrail.actions.refs`), rendered per call.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..policy import SafetyClass
from ..policy.rules import GateRules
from .refs import Path, Ref, format_path, template_to_config

Effect = Literal["read-only", "side-effect", "destructive"]
Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
AuthType = Literal["none", "session", "api-key"]
When = Literal["always", "missing"]

EFFECTS: Final[tuple[Effect, ...]] = ("read-only", "side-effect", "destructive")
METHODS: Final[tuple[Method, ...]] = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
AUTH_TYPES: Final[tuple[AuthType, ...]] = ("none", "session", "api-key")
#: The safety class of each effect ("Policy" in DESIGN.md).
EFFECT_CLASSES: Final[Mapping[Effect, SafetyClass]] = {
    "read-only": "read-only",
    "side-effect": "mutating",
    "destructive": "consequential",
}

DEFAULT_TIMEOUT_MS: Final = 8000
DEFAULT_MAX_RESPONSE_BYTES: Final = 1_048_576
DEFAULT_RETRY_ATTEMPTS: Final = 1
MAX_RETRY_ATTEMPTS: Final = 5
DEFAULT_BACKOFF_MS: Final = 500
DEFAULT_MULTIPLIER: Final = 2.0
DEFAULT_CONFIRMATION_TTL_MS: Final = 300_000
DEFAULT_DEPENDENCY_TTL_MS: Final = 60_000
DEFAULT_RECOVERY_STATUSES: Final = (409, 410)


def canonical_json(value: Any) -> str:
    """The one JSON spelling digests are taken over: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(value: Any) -> str:
    """The SHA-256 hex of the canonical JSON of `value`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class ActionAuth:
    """How requests authenticate. ``api-key`` sends the secret in `header`; ``session`` sends
    it as the cookie `cookie`, or as ``Authorization: Bearer <secret>`` without one. The secret
    is read from the environment variable `secret_env` at send time, never stored."""

    type: AuthType = "none"
    header: str | None = None
    cookie: str | None = None
    secret_env: str | None = None

    @property
    def secret_header(self) -> str | None:
        """The header that carries the secret, or None for ``none``."""
        if self.type == "api-key":
            return self.header
        if self.type == "session":
            return "Cookie" if self.cookie else "Authorization"
        return None

    def header_value(self, secret: str) -> str:
        """The value of `secret_header` for `secret`."""
        if self.type == "session":
            return f"{self.cookie}={secret}" if self.cookie else f"Bearer {secret}"
        return secret

    def to_config(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "header": self.header,
            "cookie": self.cookie,
            "secret_env": self.secret_env,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Transport:
    """Timeout per attempt, response size cap, retry policy and idempotency key. `retry_attempts`
    counts every attempt; the wait before attempt n+1 is ``backoff_ms * multiplier**(n-1)`` plus
    jitter."""

    timeout_ms: int = DEFAULT_TIMEOUT_MS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    backoff_ms: int = DEFAULT_BACKOFF_MS
    multiplier: float = DEFAULT_MULTIPLIER
    idempotency_header: str | None = None
    idempotency_source: Literal["generated"] = "generated"

    def to_config(self) -> dict[str, Any]:
        return {
            "timeout_ms": self.timeout_ms,
            "max_response_bytes": self.max_response_bytes,
            "retry": {
                "attempts": self.retry_attempts,
                "backoff_ms": self.backoff_ms,
                "multiplier": self.multiplier,
            },
            "idempotency": None
            if self.idempotency_header is None
            else {"header": self.idempotency_header, "source": self.idempotency_source},
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Confirmation:
    """Whether the person must confirm a prepared request, for how long it stays valid, and the
    preview they approve (None: the input fields the model gave)."""

    required: bool
    ttl_ms: int = DEFAULT_CONFIRMATION_TTL_MS
    preview: Mapping[str, Any] | None = None

    def to_config(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "ttl_ms": self.ttl_ms,
            "preview": None if self.preview is None else template_to_config(self.preview),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Recovery:
    """When the API answers one of `statuses`, forget `dependency`'s values, re-run it and ask
    again (a new selection or a new confirmation); nothing is approved automatically."""

    dependency: str
    statuses: tuple[int, ...] = DEFAULT_RECOVERY_STATUSES


@dataclass(frozen=True, kw_only=True, slots=True)
class Select:
    """How one candidate is picked from a dependency's result: `items` (a path in the result)
    lists the candidates, `match` keeps those whose field equals a value (a criterion whose
    value is missing is skipped), `label` and `facts` are what the person and the preview see,
    and `sensitive` fields are never shown to the model, a preview or a client."""

    items: Path
    match: Mapping[Path, Any] = field(default_factory=dict)
    label: Ref | None = None
    facts: Mapping[str, Ref] = field(default_factory=dict)
    sensitive: tuple[Path, ...] = ()

    def to_config(self) -> dict[str, Any]:
        return {
            "items": format_path(self.items),
            "match": {format_path(k)[2:]: template_to_config(v) for k, v in self.match.items()},
            "label": None if self.label is None else self.label.to_config(),
            "facts": {k: v.to_config() for k, v in self.facts.items()},
            "sensitive": [format_path(p)[2:] for p in self.sensitive],
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Dependency:
    """A read-only tool of the same set run before a call: with `input` (a template), always or
    only when one of the input fields it `fills` is missing, its result kept for `ttl_ms`, and
    optionally one candidate picked with `select`. `fills` maps input fields to references
    into the chosen candidate (``$.item...``)."""

    name: str
    tool: str
    when: When = "always"
    input: Mapping[str, Any] = field(default_factory=dict)
    ttl_ms: int = DEFAULT_DEPENDENCY_TTL_MS
    select: Select | None = None
    fills: Mapping[str, Ref] = field(default_factory=dict)

    def to_config(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "when": self.when,
            "input": template_to_config(self.input),
            "ttl_ms": self.ttl_ms,
            "select": None if self.select is None else self.select.to_config(),
            "fills": {k: v.to_config() for k, v in self.fills.items()},
        }


@dataclass(frozen=True, kw_only=True)
class ActionTool:
    """One compiled tool: what the model sees (`name`, `description`, `input_schema`), the
    request it makes, how it is sent, and what it does (`effect`, `confirmation`, `recovery`,
    `dependencies`). `title` is its name in the person's words ("Book a table"), used by the
    asks the server makes about it in place of `name`; the model never sees it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    method: Method
    path: str
    title: str | None = None
    path_params: Mapping[str, Any] = field(default_factory=dict)
    query: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    transport: Transport = field(default_factory=Transport)
    effect: Effect = "read-only"
    confirmation: Confirmation = field(default_factory=lambda: Confirmation(required=False))
    recovery: Recovery | None = None
    dependencies: Mapping[str, Dependency] = field(default_factory=dict)
    #: Who must approve (confirm) its calls and how many, and its gates' clocks.
    rules: GateRules | None = None

    @property
    def label(self) -> str:
        """What the person reads for it: its `title`, else its name."""
        return self.title or self.name

    @property
    def safety_class(self) -> SafetyClass:
        """``read-only`` → read-only, ``side-effect`` → mutating, ``destructive`` →
        consequential."""
        return EFFECT_CLASSES[self.effect]

    @property
    def needs_confirmation(self) -> bool:
        """Every action that is not read-only is held for confirmation, whatever the
        permission level."""
        return self.effect != "read-only" or self.confirmation.required

    @property
    def has_body(self) -> bool:
        return self.body is not None

    def to_config(self) -> dict[str, Any]:
        """The compiled tool in one canonical, JSON-ready form (what `fingerprint` hashes); a
        ``title`` only when it has one, so a file without titles keeps its fingerprint."""
        config: dict[str, Any] = {
            "name": self.name,
            **({"title": self.title} if self.title is not None else {}),
            "description": self.description,
            "input": self.input_schema,
            "request": {
                "method": self.method,
                "path": self.path,
                "path_params": template_to_config(self.path_params),
                "query": template_to_config(self.query),
                "headers": template_to_config(self.headers),
                "body": template_to_config(self.body),
            },
            "transport": self.transport.to_config(),
            "behavior": {
                "effect": self.effect,
                "confirmation": self.confirmation.to_config(),
                "recovery": None
                if self.recovery is None
                else {
                    "refresh_dependency": self.recovery.dependency,
                    "statuses": list(self.recovery.statuses),
                },
            },
            "dependencies": {k: v.to_config() for k, v in self.dependencies.items()},
        }
        return config

    @functools.cached_property
    def fingerprint(self) -> str:
        """The SHA-256 hex of the tool's canonical compiled config."""
        return sha256_hex(self.to_config())


@dataclass(frozen=True, kw_only=True)
class ActionSet:
    """A compiled action set: a connection whose tools call one HTTP API."""

    id: str
    name: str
    base_url: str
    trusted: bool = False
    instructions: str | None = None
    auth: ActionAuth = field(default_factory=ActionAuth)
    tools: Mapping[str, ActionTool] = field(default_factory=dict)
    source: str = "<text>"
    #: Where its secrets (``auth.secret_env`` and ``{source: secret}`` headers) are read at
    #: send time: a saved connection's own secrets, by name; None reads the environment.
    secrets: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def tool(self, name: str) -> ActionTool:
        """The tool called `name`; `KeyError` naming the tools that exist otherwise."""
        try:
            return self.tools[name]
        except KeyError:
            raise KeyError(
                f"action set {self.id!r} has no tool {name!r}; it has {', '.join(self.tools)}"
            ) from None

    def fingerprint(self, tool: str | ActionTool) -> str:
        """The SHA-256 hex binding a tool's whole config: the set's id, base URL and auth, the
        tool, and the tools its dependencies run. Bind confirmations to this."""
        action = tool if isinstance(tool, ActionTool) else self.tool(tool)
        deps = sorted({d.tool for d in action.dependencies.values()})
        return sha256_hex(
            {
                "set": {"id": self.id, "base_url": self.base_url, "auth": self.auth.to_config()},
                "tool": action.fingerprint,
                "dependencies": {name: self.tools[name].fingerprint for name in deps},
            }
        )
