"""Reading the structure of an action-set file into drafts (`handrail.actions.drafts`): keys,
types, ranges, URLs, auth, secrets, and references parsed into `Ref`. Every problem is recorded
with its code and path; a part that does not parse is left None so later checks skip it.

The checks that relate parts to each other (references, previews, dependencies, cycles) are in
`handrail.actions.checks`; `handrail.actions.config` puts the two together.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from ..policy.rules import RULE_KEYS, GateRules, read_rules
from .drafts import (
    DependencyDraft,
    Problems,
    RefSite,
    ToolDraft,
    boolean,
    integer,
    is_json,
    keys,
    mapping,
    scalar_template,
    show,
    template,
    template_map,
    text,
)
from .inputs import schema_problems
from .model import (
    AUTH_TYPES,
    DEFAULT_BACKOFF_MS,
    DEFAULT_CONFIRMATION_TTL_MS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MULTIPLIER,
    DEFAULT_RECOVERY_STATUSES,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_TIMEOUT_MS,
    EFFECTS,
    MAX_RETRY_ATTEMPTS,
    METHODS,
    ActionAuth,
    AuthType,
    Confirmation,
    Effect,
    Method,
    Recovery,
    Select,
    Transport,
    When,
)
from .problems import ConfigCode, join_path
from .refs import (
    Path,
    Ref,
    RefError,
    covers_path,
    is_reference,
    parse_field_path,
    parse_path,
    parse_ref,
)

ID_PATTERN: Final = re.compile(r"^[a-z0-9_.-]{1,64}$")
TOOL_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
NAME_PATTERN: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
HEADER_PATTERN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
ENV_PATTERN: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PLACEHOLDER: Final = re.compile(r"\{([^{}]*)\}")
INSTRUCTIONS_MAX_CHARS: Final = 2000
NAME_MAX_CHARS: Final = 120
MAX_TTL_MS: Final = 86_400_000
MAX_TIMEOUT_MS: Final = 600_000
MAX_RESPONSE_BYTES_LIMIT: Final = 104_857_600
MAX_BACKOFF_MS: Final = 60_000
MAX_MULTIPLIER: Final = 10.0
#: A tool's ``title`` (its name in the person's words) is 1-80 characters.
TITLE_MAX_CHARS: Final = 80
#: Headers the transport owns; a file may not set them.
RESERVED_HEADERS: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)

_TOP_KEYS: Final = ("id", "name", "base_url", "trusted", "instructions", "auth", "tools")
_AUTH_KEYS: Final = ("type", "header", "cookie", "secret_env")
_TOOL_KEYS: Final = (
    "name", "title", "description", "input", "request", "dependencies", "transport", "behavior",
    "approvers", "quorum", "expires_after", "remind_after",
)  # fmt: skip
_RULE_KEYS: Final = RULE_KEYS
_REQUEST_KEYS: Final = ("method", "path", "path_params", "query", "headers", "body")
_TRANSPORT_KEYS: Final = ("timeout_ms", "max_response_bytes", "retry", "idempotency")
_RETRY_KEYS: Final = ("attempts", "backoff_ms", "multiplier")
_IDEMPOTENCY_KEYS: Final = ("header", "source")
_BEHAVIOR_KEYS: Final = ("effect", "confirmation", "recovery")
_CONFIRMATION_KEYS: Final = ("required", "ttl_ms", "preview")
_RECOVERY_KEYS: Final = ("refresh_dependency", "statuses")
_DEPENDENCY_KEYS: Final = ("tool", "when", "input", "ttl_ms", "select", "fills")
_SELECT_KEYS: Final = ("items", "match", "label", "facts", "sensitive")
#: Per auth type, which keys it needs (True), refuses (False) or may take (None).
_AUTH_WANTS: Final[Mapping[str, Mapping[str, bool | None]]] = {
    "none": {"header": False, "cookie": False, "secret_env": False},
    "api-key": {"header": True, "cookie": False, "secret_env": True},
    "session": {"header": False, "cookie": None, "secret_env": True},
}


# --------------------------------------------------------------------------------- the file


@dataclass(kw_only=True)
class RootDraft:
    """The top level of a file as far as it parsed; None marks a part that did not."""

    id: str | None = None
    name: str | None = None
    base_url: str | None = None
    trusted: bool = False
    instructions: str | None = None
    auth: ActionAuth | None = None
    tools: list[ToolDraft] = field(default_factory=list)


def parse_root(p: Problems, root: Mapping[str, Any], env: Mapping[str, str]) -> RootDraft:
    """Read the top level and every tool of a file, reporting what is wrong with each part."""
    keys(p, "", root, _TOP_KEYS, ("id", "name", "base_url", "tools"))
    draft = RootDraft()
    if "id" in root:
        draft.id = text(p, "id", root["id"], pattern=ID_PATTERN, rule="use 1-64 of a-z 0-9 _ . -")
    if "name" in root:
        draft.name = text(p, "name", root["name"], max_chars=NAME_MAX_CHARS)
    if "base_url" in root:
        draft.base_url = _base_url(p, root["base_url"])
    if "trusted" in root:
        draft.trusted = boolean(p, "trusted", root["trusted"]) is True
    draft.instructions = _instructions(p, root.get("instructions"))
    draft.auth = _auth(p, root.get("auth"), env)
    if "tools" in root:
        tools = root["tools"]
        if not isinstance(tools, list) or not tools:
            p.add("CONFIG_SCHEMA_INVALID", "tools", "expected a list of one or more tools")
        else:
            draft.tools = [_tool(p, join_path("tools", i), i, raw) for i, raw in enumerate(tools)]
    return draft


def _base_url(p: Problems, value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        p.add("CONFIG_URL_INVALID", "base_url", f"expected an http(s) URL, got {show(value)}")
        return None
    try:
        parts = urllib.parse.urlsplit(value.strip())
        port = parts.port
    except ValueError as exc:
        p.add("CONFIG_URL_INVALID", "base_url", f"{value!r} is not a URL: {exc}")
        return None
    del port
    if parts.scheme not in ("http", "https") or not parts.hostname:
        p.add(
            "CONFIG_URL_INVALID",
            "base_url",
            f"{value!r} is not an http(s) URL with a host, such as https://api.example.com/v1",
        )
        return None
    if parts.username is not None or parts.password is not None:
        p.add(
            "CONFIG_URL_INVALID",
            "base_url",
            "the URL holds credentials; put secrets in auth.secret_env, never in the file",
        )
        return None
    if parts.query or parts.fragment or "?" in value or "#" in value:
        p.add(
            "CONFIG_URL_INVALID",
            "base_url",
            "the base URL has a query or fragment; put query parameters in request.query",
        )
        return None
    return value.strip().rstrip("/")


def _instructions(p: Problems, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        p.add("CONFIG_SCHEMA_INVALID", "instructions", "expected text, 1-2000 characters")
        return None
    trimmed = value.strip()
    if len(trimmed) > INSTRUCTIONS_MAX_CHARS:
        p.add(
            "CONFIG_SCHEMA_INVALID",
            "instructions",
            f"{len(trimmed)} characters; the most is {INSTRUCTIONS_MAX_CHARS}",
        )
        return None
    return trimmed


def _auth(p: Problems, value: Any, env: Mapping[str, str]) -> ActionAuth | None:
    if value is None:
        return ActionAuth()
    obj = mapping(p, "auth", value)
    if obj is None:
        return None
    keys(p, "auth", obj, _AUTH_KEYS)
    before = len(p)
    kind = obj.get("type", "none")
    if kind not in AUTH_TYPES:
        p.add(
            "CONFIG_AUTH_INVALID",
            "auth.type",
            f"unknown auth type {show(kind)}; use {', '.join(AUTH_TYPES)}",
        )
        return None
    auth_type = cast(AuthType, kind)
    wants = _AUTH_WANTS[auth_type]
    for key, wanted in wants.items():
        where = f"auth.{key}"
        if wanted is True and key not in obj:
            p.add("CONFIG_AUTH_INVALID", where, f"auth type {auth_type} needs {key}")
        elif wanted is False and key in obj:
            p.add("CONFIG_AUTH_INVALID", where, f"auth type {auth_type} takes no {key}")
    header = cookie = secret_env = None
    if auth_type == "api-key" and "header" in obj:
        header = text(
            p, "auth.header", obj["header"], pattern=HEADER_PATTERN,
            rule="a header name such as X-Api-Key", code="CONFIG_AUTH_INVALID",
        )  # fmt: skip
        if header is not None and header.lower() in RESERVED_HEADERS:
            p.add("CONFIG_AUTH_INVALID", "auth.header", f"{header} is set by the transport")
    if auth_type == "session" and "cookie" in obj:
        cookie = text(
            p, "auth.cookie", obj["cookie"], pattern=HEADER_PATTERN,
            rule="a cookie name such as session", code="CONFIG_AUTH_INVALID",
        )  # fmt: skip
    if auth_type != "none" and "secret_env" in obj:
        secret_env = text(
            p, "auth.secret_env", obj["secret_env"], pattern=ENV_PATTERN,
            rule="an environment variable name such as BOOKING_API_KEY",
            code="CONFIG_AUTH_INVALID",
        )  # fmt: skip
        if secret_env is not None and not env.get(secret_env):
            p.add(
                "CONFIG_SECRET_MISSING",
                "auth.secret_env",
                f"the environment variable {secret_env} is not set; set it to the API's secret",
            )
    if len(p) > before:
        return None
    return ActionAuth(type=auth_type, header=header, cookie=cookie, secret_env=secret_env)


# --------------------------------------------------------------------------------- tools


def _tool(p: Problems, path: str, index: int, raw: Any) -> ToolDraft:
    draft = ToolDraft(index=index, path=path)
    obj = mapping(p, path, raw, "a tool: a mapping with name, description, request")
    if obj is None:
        return draft
    keys(p, path, obj, _TOOL_KEYS, ("name", "description", "request"))
    if "name" in obj:
        draft.name = text(
            p, join_path(path, "name"), obj["name"], pattern=TOOL_NAME_PATTERN,
            rule="use 1-64 letters, digits, _ or -",
        )  # fmt: skip
        if draft.name is not None and (draft.name.startswith("ask_") or draft.name == "clarify"):
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(path, "name"),
                f"{draft.name!r} is reserved: names starting with ask_ and the name clarify "
                "belong to the ask tools",
            )
    if "title" in obj:
        draft.title = text(p, join_path(path, "title"), obj["title"], max_chars=TITLE_MAX_CHARS)
    if "description" in obj:
        draft.description = text(p, join_path(path, "description"), obj["description"])
    draft.input_schema = _input_schema(p, join_path(path, "input"), obj.get("input"))
    if "request" in obj:
        _request(p, join_path(path, "request"), obj["request"], draft)
    if "transport" in obj:
        draft.transport = _transport(p, join_path(path, "transport"), obj["transport"])
    if "dependencies" in obj:
        _dependencies(p, join_path(path, "dependencies"), obj["dependencies"], draft)
    _behavior(p, join_path(path, "behavior"), obj.get("behavior"), draft)
    if any(k in obj for k in _RULE_KEYS):
        draft.rules = _rules(p, path, obj)
    return draft


def _rules(p: Problems, path: str, obj: Mapping[str, Any]) -> GateRules | None:
    """A tool's gate rules: `approvers` (user ids or ``admins``), `quorum`, and the seconds of
    `expires_after` and `remind_after` (read as every tool's are: `read_rules`)."""
    rules, problems = read_rules(obj)
    for key, problem in problems:
        p.add("CONFIG_SCHEMA_INVALID", join_path(path, key), problem)
    return rules


def _input_schema(p: Problems, path: str, value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return {"type": "object", "properties": {}}
    obj = mapping(p, path, value, "a JSON Schema object with type: object")
    if obj is None:
        return None
    before = len(p)
    if obj.get("type") != "object":
        p.add("CONFIG_SCHEMA_INVALID", join_path(path, "type"), "the input schema has type: object")
    for where, message in schema_problems(obj):
        p.add("CONFIG_SCHEMA_INVALID", f"{path}.{where}" if where else path, message)
    if not is_json(obj):
        p.add("CONFIG_SCHEMA_INVALID", path, "the input schema holds values that are not JSON")
    return obj if len(p) == before else None


def _request(p: Problems, path: str, value: Any, draft: ToolDraft) -> None:
    obj = mapping(p, path, value, "a mapping with method and path")
    if obj is None:
        draft.method = None
        return
    keys(p, path, obj, _REQUEST_KEYS, ("method", "path"))
    method = obj.get("method")
    if "method" in obj:
        if isinstance(method, str) and method.upper() in METHODS:
            draft.method = cast(Method, method.upper())
        else:
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(path, "method"),
                f"unknown method {show(method)}; use {', '.join(METHODS)}",
            )
    if "path" in obj:
        draft.url_path = _url_path(p, join_path(path, "path"), obj["path"])
    sites = draft.sites
    draft.path_params = template_map(
        p, join_path(path, "path_params"), obj.get("path_params"), "path_params", sites
    )
    draft.query = template_map(
        p, join_path(path, "query"), obj.get("query"), "query", sites,
        compile_value=lambda *a: scalar_template(*a, lists=True),
    )  # fmt: skip
    draft.headers = template_map(
        p, join_path(path, "headers"), obj.get("headers"), "headers", sites,
        key_pattern=HEADER_PATTERN, key_rule="a header name such as X-Request-Source",
    )  # fmt: skip
    for name in draft.headers:
        if name.lower() in RESERVED_HEADERS:
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(join_path(path, "headers"), name),
                f"{name} is set by the transport; leave it out",
            )
    if "body" in obj:
        if draft.method in ("GET", "HEAD"):
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(path, "body"),
                f"a {draft.method} request has no body; use query",
            )
        draft.body = template(p, join_path(path, "body"), obj["body"], "body", sites)
    if draft.url_path is not None:
        _placeholders(p, path, draft)


def _url_path(p: Problems, path: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        p.add("CONFIG_URL_INVALID", path, f"expected a path such as /bookings, got {show(value)}")
        return None
    problem = None
    if not value.startswith("/") or value.startswith("//") or "://" in value:
        problem = "a path is relative to base_url and starts with one /, such as /bookings"
    elif "?" in value or "#" in value:
        problem = "the path has a query or fragment; put query parameters in request.query"
    elif any(segment in (".", "..") for segment in value.split("/")):
        problem = "the path has . or .. segments"
    elif any(c.isspace() for c in value) or value.count("{") != value.count("}"):
        problem = "the path has spaces or unbalanced braces"
    if problem is not None:
        p.add("CONFIG_URL_INVALID", path, f"{value!r}: {problem}")
        return None
    return value


def _placeholders(p: Problems, path: str, draft: ToolDraft) -> None:
    assert draft.url_path is not None
    names = PLACEHOLDER.findall(draft.url_path)
    for name in names:
        if not NAME_PATTERN.match(name):
            p.add(
                "CONFIG_URL_INVALID",
                join_path(path, "path"),
                f"{{{name}}} is not a placeholder name",
            )
        elif name not in draft.path_params:
            p.add(
                "CONFIG_MAPPING_INVALID",
                join_path(path, "path"),
                f"the placeholder {{{name}}} has no value: add path_params.{name}",
            )
    for name in draft.path_params:
        if name not in names:
            p.add(
                "CONFIG_MAPPING_INVALID",
                join_path(join_path(path, "path_params"), name),
                f"the path has no {{{name}}} placeholder",
            )


def _transport(p: Problems, path: str, value: Any) -> Transport:
    obj = mapping(p, path, value)
    if obj is None:
        return Transport()
    keys(p, path, obj, _TRANSPORT_KEYS)
    timeout = DEFAULT_TIMEOUT_MS
    if "timeout_ms" in obj:
        timeout = (
            integer(p, join_path(path, "timeout_ms"), obj["timeout_ms"], 1, MAX_TIMEOUT_MS)
            or timeout
        )
    cap = DEFAULT_MAX_RESPONSE_BYTES
    if "max_response_bytes" in obj:
        where = join_path(path, "max_response_bytes")
        cap = integer(p, where, obj["max_response_bytes"], 1, MAX_RESPONSE_BYTES_LIMIT) or cap
    attempts, backoff, multiplier = DEFAULT_RETRY_ATTEMPTS, DEFAULT_BACKOFF_MS, DEFAULT_MULTIPLIER
    if "retry" in obj:
        where = join_path(path, "retry")
        retry = mapping(p, where, obj["retry"]) or {}
        keys(p, where, retry, _RETRY_KEYS)
        if "attempts" in retry:
            attempts = (
                integer(p, join_path(where, "attempts"), retry["attempts"], 1, MAX_RETRY_ATTEMPTS)
                or attempts
            )
        if "backoff_ms" in retry:
            found = integer(
                p, join_path(where, "backoff_ms"), retry["backoff_ms"], 0, MAX_BACKOFF_MS
            )
            backoff = backoff if found is None else found
        if "multiplier" in retry:
            raw = retry["multiplier"]
            if (
                isinstance(raw, bool)
                or not isinstance(raw, int | float)
                or not 1 <= raw <= MAX_MULTIPLIER
            ):
                p.add(
                    "CONFIG_SCHEMA_INVALID",
                    join_path(where, "multiplier"),
                    f"expected a number from 1 to {MAX_MULTIPLIER:g}, got {show(raw)}",
                )
            else:
                multiplier = float(raw)
    header = None
    if "idempotency" in obj:
        where = join_path(path, "idempotency")
        idem = mapping(p, where, obj["idempotency"]) or {}
        keys(p, where, idem, _IDEMPOTENCY_KEYS, ("header",))
        if "header" in idem:
            header = text(
                p, join_path(where, "header"), idem["header"], pattern=HEADER_PATTERN,
                rule="a header name such as Idempotency-Key",
            )  # fmt: skip
        if idem.get("source", "generated") != "generated":
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(where, "source"),
                f"unknown idempotency source {show(idem.get('source'))}; use generated",
            )
    return Transport(
        timeout_ms=timeout,
        max_response_bytes=cap,
        retry_attempts=attempts,
        backoff_ms=backoff,
        multiplier=multiplier,
        idempotency_header=header,
    )


def _behavior(p: Problems, path: str, value: Any, draft: ToolDraft) -> None:
    obj: Mapping[str, Any] = {}
    if value is not None:
        obj = mapping(p, path, value) or {}
        keys(p, path, obj, _BEHAVIOR_KEYS)
    effect = obj.get("effect", "read-only")
    if effect not in EFFECTS:
        p.add(
            "CONFIG_EFFECT_INVALID",
            join_path(path, "effect"),
            f"unknown effect {show(effect)}; use {', '.join(EFFECTS)}",
        )
        draft.effect = None
    else:
        draft.effect = cast(Effect, effect)
    where = join_path(path, "confirmation")
    draft.preview_path = join_path(where, "preview")
    if "confirmation" in obj:
        draft.confirmation_given = True
        draft.confirmation = _confirmation(p, where, obj["confirmation"], draft)
    if "recovery" in obj:
        draft.recovery_path = join_path(path, "recovery")
        draft.recovery = _recovery(p, draft.recovery_path, obj["recovery"])


def _confirmation(p: Problems, path: str, value: Any, draft: ToolDraft) -> Confirmation | None:
    obj = mapping(p, path, value)
    if obj is None:
        return None
    keys(p, path, obj, _CONFIRMATION_KEYS)
    required = obj.get("required", False)
    if not isinstance(required, bool):
        p.add("CONFIG_CONFIRMATION_INVALID", join_path(path, "required"), "expected true or false")
        required = False
    ttl = DEFAULT_CONFIRMATION_TTL_MS
    if "ttl_ms" in obj:
        found = integer(
            p,
            join_path(path, "ttl_ms"),
            obj["ttl_ms"],
            1,
            MAX_TTL_MS,
            "CONFIG_CONFIRMATION_INVALID",
        )
        ttl = ttl if found is None else found
    preview: dict[str, Any] | None = None
    if "preview" in obj:
        where = join_path(path, "preview")
        raw = obj["preview"]
        if isinstance(raw, Mapping) and not raw:
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                where,
                "an empty preview shows the person nothing; list fields, or leave preview out "
                "to show the input",
            )
        preview = template_map(p, where, raw, "preview", draft.sites)
    return Confirmation(required=required, ttl_ms=ttl, preview=preview)


def _recovery(p: Problems, path: str, value: Any) -> Recovery | None:
    obj = mapping(p, path, value)
    if obj is None:
        return None
    keys(p, path, obj, _RECOVERY_KEYS, ("refresh_dependency",))
    name = obj.get("refresh_dependency")
    if "refresh_dependency" in obj and not isinstance(name, str):
        p.add(
            "CONFIG_SCHEMA_INVALID",
            join_path(path, "refresh_dependency"),
            "expected the name of a dependency",
        )
        return None
    statuses = DEFAULT_RECOVERY_STATUSES
    if "statuses" in obj:
        raw = obj["statuses"]
        where = join_path(path, "statuses")
        if (
            not isinstance(raw, list)
            or not raw
            or not all(
                isinstance(s, int) and not isinstance(s, bool) and 400 <= s <= 599 for s in raw
            )
        ):
            p.add(
                "CONFIG_SCHEMA_INVALID", where, "expected a list of HTTP statuses from 400 to 599"
            )
        else:
            statuses = tuple(dict.fromkeys(raw))
    if not isinstance(name, str):
        return None
    return Recovery(dependency=name, statuses=statuses)


# --------------------------------------------------------------------------------- dependencies


def _dependencies(p: Problems, path: str, value: Any, draft: ToolDraft) -> None:
    obj = mapping(p, path, value, "a mapping of dependency names to dependencies")
    if obj is None:
        return
    for name, raw in obj.items():
        where = join_path(path, name)
        if not NAME_PATTERN.match(name):
            p.add(
                "CONFIG_SCHEMA_INVALID",
                where,
                f"{name!r} is not a dependency name: a letter or _, then letters, digits, _ or -",
            )
            continue
        dep = DependencyDraft(name=name, path=where)
        draft.dependencies[name] = dep
        _dependency(p, where, raw, dep)


def _dependency(p: Problems, path: str, raw: Any, dep: DependencyDraft) -> None:
    obj = mapping(p, path, raw, "a dependency: a mapping with tool")
    if obj is None:
        return
    keys(p, path, obj, _DEPENDENCY_KEYS, ("tool",))
    if "tool" in obj:
        dep.tool = text(p, join_path(path, "tool"), obj["tool"])
    when = obj.get("when", "always")
    if when not in ("always", "missing"):
        p.add("CONFIG_SCHEMA_INVALID", join_path(path, "when"), "use always or missing")
    else:
        dep.when = cast(When, when)
    if "ttl_ms" in obj:
        found = integer(
            p, join_path(path, "ttl_ms"), obj["ttl_ms"], 1, MAX_TTL_MS, "CONFIG_DEPENDENCY_INVALID"
        )
        dep.ttl_ms = dep.ttl_ms if found is None else found
    dep.input = template_map(p, join_path(path, "input"), obj.get("input"), "dep_input", dep.sites)
    if "select" in obj:
        dep.select = _select(p, join_path(path, "select"), obj["select"], dep.sites)
    if "fills" in obj:
        where = join_path(path, "fills")
        fills = mapping(p, where, obj["fills"], "a mapping of input fields to $.item references")
        for key, value in (fills or {}).items():
            ref = _item_ref(p, join_path(where, key), value)
            if ref is not None:
                dep.fills[key] = ref
    if dep.when == "missing" and not dep.fills:
        p.add(
            "CONFIG_DEPENDENCY_INVALID",
            join_path(path, "when"),
            "when: missing runs the dependency only when an input field it fills is missing; "
            "add fills: {<input field>: $.item.<field>}",
        )


def _item_ref(p: Problems, path: str, value: Any) -> Ref | None:
    try:
        ref = parse_ref(value) if is_reference(value) else None
    except RefError as exc:
        p.add(cast(ConfigCode, exc.code), path, exc.message)
        return None
    if ref is None or ref.source != "item":
        p.add(
            "CONFIG_MAPPING_INVALID",
            path,
            f"expected a $.item.<field> reference, got {show(value)}",
        )
        return None
    return ref


def _select(p: Problems, path: str, value: Any, sites: list[RefSite]) -> Select | None:
    obj = mapping(p, path, value)
    if obj is None:
        return None
    keys(p, path, obj, _SELECT_KEYS, ("items",))
    items: Path = ()
    if "items" in obj:
        try:
            items = parse_path(obj["items"])
        except RefError as exc:
            p.add(cast(ConfigCode, exc.code), join_path(path, "items"), exc.message)
    sensitive: list[Path] = []
    if "sensitive" in obj:
        where = join_path(path, "sensitive")
        raw = obj["sensitive"]
        if not isinstance(raw, list):
            p.add("CONFIG_SCHEMA_INVALID", where, "expected a list of candidate field names")
            raw = []
        for i, field_name in enumerate(raw):
            try:
                sensitive.append(parse_field_path(field_name))
            except RefError as exc:
                p.add(cast(ConfigCode, exc.code), join_path(where, i), exc.message)
    match: dict[Path, Any] = {}
    if "match" in obj:
        where = join_path(path, "match")
        for key, item in (mapping(p, where, obj["match"]) or {}).items():
            try:
                field_path = parse_field_path(key)
            except RefError as exc:
                p.add(cast(ConfigCode, exc.code), join_path(where, key), exc.message)
                continue
            match[field_path] = scalar_template(p, join_path(where, key), item, "match", sites)
    label = None
    if "label" in obj:
        label = _item_ref(p, join_path(path, "label"), obj["label"])
    facts: dict[str, Ref] = {}
    if "facts" in obj:
        where = join_path(path, "facts")
        for key, item in (mapping(p, where, obj["facts"]) or {}).items():
            if not NAME_PATTERN.match(key):
                p.add("CONFIG_SCHEMA_INVALID", join_path(where, key), f"{key!r} is not a fact name")
                continue
            ref = _item_ref(p, join_path(where, key), item)
            if ref is not None:
                facts[key] = ref
    # A part that is wrong is reported but its name kept, so the checks of the parts that read
    # it (a preview reading a fact) do not report it again; nothing is built from a file with a
    # problem.
    if label is not None and _reads_sensitive(p, join_path(path, "label"), label, sensitive):
        label = None
    for key, ref in list(facts.items()):
        if _reads_sensitive(p, join_path(join_path(path, "facts"), key), ref, sensitive):
            facts[key] = Ref(source="item", path=("",))
    return Select(items=items, match=match, label=label, facts=facts, sensitive=tuple(sensitive))


def _reads_sensitive(p: Problems, path: str, ref: Ref, sensitive: list[Path]) -> bool:
    if any(covers_path(s, ref.path) for s in sensitive):
        p.add(
            "CONFIG_MAPPING_INVALID",
            path,
            f"{ref} reads a sensitive field; labels and facts are shown to the model and the "
            "person",
        )
        return True
    return False
