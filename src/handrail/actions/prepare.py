"""Preparing a request: the model's input checked, every reference resolved, the URL, headers
and JSON body built, the preview made, and the expiry set. A `PreparedRequest` holds no secret:
secret headers are recorded by name and read from the environment at send time.

`digest` binds a prepared request to its context (history, user, tool, arguments, dependency
values, config) so a confirmation for a changed context is refused.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._util import iso, utc_now
from ..errors import HandrailError
from .inputs import check_input as check_schema
from .model import ActionSet, ActionTool, sha256_hex
from .refs import MISSING, Ref, Scope, covers_path, render, resolve
from .results import Resolved, parse_time

__all__ = [
    "REDACTED",
    "InvalidInput",
    "PrepareError",
    "PreparedRequest",
    "check_input",
    "digest",
    "prepare",
]

#: What a sensitive value becomes in `PreparedRequest.public`.
REDACTED: Final = "[sensitive]"
_FORMAT_VERSION: Final = 1


class InvalidInput(HandrailError):
    """The model's input does not fit the tool's input schema; nothing was prepared. `problems`
    holds the sentences; the message is the tool error for the model."""

    def __init__(self, tool: str, problems: list[str]) -> None:
        self.tool = tool
        self.problems = problems
        super().__init__(
            f"Invalid arguments for {tool}: {'; '.join(problems)}. It did not run; call it "
            "again with arguments that match its input schema."
        )


class PrepareError(HandrailError):
    """The request cannot be built from this input (a path parameter is missing, a header value
    has a line break...). The message is meant for the model."""


@dataclass(frozen=True, kw_only=True)
class PreparedRequest:
    """A request built and ready to send once confirmed. `headers` hold no secret: the headers
    named in `secret_headers` are added at send time from the environment. `body` is the JSON
    body (`has_body` says whether there is one); it may hold dependency values marked
    sensitive, which is why `public` exists: the same request with those values replaced by
    ``[sensitive]``, for anything a client may see. `preview` is what the person approves."""

    kind: Literal["preparedRequest"] = "preparedRequest"
    action_set: str
    tool: str
    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    secret_headers: tuple[str, ...] = ()
    has_body: bool = False
    body: Any = None
    idempotency_key: str | None = None
    preview: Mapping[str, Any] = field(default_factory=dict)
    created_at: dt.datetime
    expires_at: dt.datetime
    public: Mapping[str, Any] = field(default_factory=dict)

    def expired(self, now: dt.datetime | None = None) -> bool:
        return (now or utc_now()) >= self.expires_at

    def to_json(self) -> dict[str, Any]:
        """The request as JSON for storage (camelCase; no secret is ever in it)."""
        return {
            "kind": self.kind,
            "version": _FORMAT_VERSION,
            "actionSet": self.action_set,
            "tool": self.tool,
            "method": self.method,
            "url": self.url,
            "headers": dict(self.headers),
            "secretHeaders": list(self.secret_headers),
            "hasBody": self.has_body,
            "body": self.body,
            "idempotencyKey": self.idempotency_key,
            "preview": dict(self.preview),
            "createdAt": iso(self.created_at),
            "expiresAt": iso(self.expires_at),
            "public": dict(self.public),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PreparedRequest:
        """A request from `to_json`; `ValueError` for anything else."""
        if data.get("kind") != "preparedRequest" or data.get("version") != _FORMAT_VERSION:
            raise ValueError("not a prepared request of this version")
        try:
            return cls(
                action_set=str(data["actionSet"]),
                tool=str(data["tool"]),
                method=str(data["method"]),
                url=str(data["url"]),
                headers={str(k): str(v) for k, v in data["headers"].items()},
                secret_headers=tuple(str(h) for h in data["secretHeaders"]),
                has_body=bool(data["hasBody"]),
                body=data["body"],
                idempotency_key=data["idempotencyKey"],
                preview=dict(data["preview"]),
                created_at=parse_time(data["createdAt"]),
                expires_at=parse_time(data["expiresAt"]),
                public=dict(data.get("public") or {}),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a prepared request: {exc}") from None


def check_input(tool: ActionTool, input: Any) -> list[str]:
    """What is wrong with the model's `input` for `tool`, as sentences; empty when it fits."""
    return check_schema(tool.input_schema, input)


def _tool(action_set: ActionSet, tool: ActionTool | str) -> ActionTool:
    return tool if isinstance(tool, ActionTool) else action_set.tool(tool)


def prepare(
    action_set: ActionSet,
    tool: ActionTool | str,
    input: Mapping[str, Any],
    *,
    resolved: Resolved | None = None,
    now: dt.datetime | None = None,
) -> PreparedRequest:
    """Build the request of `tool` for the model's `input` and the `resolved` dependencies.

    Raises `InvalidInput` when the input does not fit the input schema, `PrepareError` when
    the request cannot be built, `HandrailError` when a dependency that always runs is not in
    `resolved`. A new id is generated per prepared request: it is the
    idempotency key when one is configured, and the value of ``{source: generated}``. The
    preview is the explicit one, else the input fields the model gave. It expires after
    ``confirmation.ttl_ms``, or earlier when a dependency's value does."""
    action = _tool(action_set, tool)
    problems = check_input(action, input)
    if problems:
        raise InvalidInput(action.name, problems)
    resolved = resolved or Resolved()
    unresolved = [
        dep.name
        for dep in action.dependencies.values()
        if dep.when == "always" and dep.name not in resolved.values
    ]
    if unresolved:
        raise HandrailError(
            f"{action.name}: resolve its dependencies ({', '.join(unresolved)}) with "
            "resolve_dependencies before preparing it"
        )
    created = now or utc_now()
    generated = str(uuid.uuid4())
    scope = Scope(
        input={**resolved.filled, **input},
        deps=resolved.values,
        facts=resolved.facts,
        generated=generated,
    )
    hidden = _hidden(action)
    real = _Request.build(action_set, action, scope, redact=None)
    public = _Request.build(action_set, action, scope, redact=hidden)
    headers = dict(real.headers)
    public_headers = dict(public.headers)
    idempotency_key = None
    if action.transport.idempotency_header is not None:
        idempotency_key = generated
        headers[action.transport.idempotency_header] = generated
        public_headers[action.transport.idempotency_header] = generated
    public_headers.update(dict.fromkeys(real.secret_headers, REDACTED))
    expires = created + dt.timedelta(milliseconds=action.confirmation.ttl_ms)
    if resolved.expires_at is not None and resolved.expires_at < expires:
        expires = resolved.expires_at
    return PreparedRequest(
        action_set=action_set.id,
        tool=action.name,
        method=action.method,
        url=real.url,
        headers=headers,
        secret_headers=real.secret_headers,
        has_body=real.has_body,
        body=real.body,
        idempotency_key=idempotency_key,
        preview=_preview(action, input, scope, hidden),
        created_at=created,
        expires_at=expires,
        public={
            "method": action.method,
            "url": public.url,
            "headers": public_headers,
            "body": public.body if public.has_body else None,
        },
    )


def _hidden(action: ActionTool) -> list[Ref]:
    """The references that read sensitive values: dependency fields marked sensitive, and
    input fields filled from one."""
    out: list[Ref] = []
    for dep in action.dependencies.values():
        if dep.select is None:
            continue
        for path in dep.select.sensitive:
            out.append(Ref(source="deps", name=dep.name, path=path))
            for key, ref in dep.fills.items():
                if covers_path(path, ref.path):
                    out.append(Ref(source="input", path=(key,)))
    return out


def _is_hidden(ref: Ref, hidden: list[Ref]) -> bool:
    return any(
        h.source == ref.source and h.name == ref.name and covers_path(h.path, ref.path)
        for h in hidden
    )


@dataclass(kw_only=True)
class _Request:
    url: str
    headers: dict[str, str]
    secret_headers: tuple[str, ...]
    has_body: bool
    body: Any

    @classmethod
    def build(
        cls, action_set: ActionSet, action: ActionTool, scope: Scope, *, redact: list[Ref] | None
    ) -> _Request:
        def value(template: Any) -> Any:
            return _render(template, scope, redact)

        path = action.path
        for name, template in action.path_params.items():
            found = value(template)
            if (
                found is MISSING
                or found is None
                or found == ""
                or isinstance(found, Mapping | list)
            ):
                raise PrepareError(
                    f"{action.name}: the path parameter {name} has no value ({template}); "
                    "call it again with the fields it needs"
                )
            path = path.replace("{" + name + "}", _quoted(action, f"path parameter {name}", found))
        # The file's path has no ``.`` or ``..`` segment (`CONFIG_URL_INVALID`); a value must
        # not make one either: ``/items/{id}`` with ``..`` would reach another resource.
        if any(segment in (".", "..") for segment in path.split("/")):
            raise PrepareError(
                f"{action.name}: a path parameter is . or .., which would send the request to "
                "another resource; call it again with the real identifier"
            )
        pairs: list[tuple[str, str]] = []
        for name, template in action.query.items():
            found = value(template)
            items = found if isinstance(found, list) else [found]
            pairs.extend(
                (name, _text(item)) for item in items if item is not MISSING and item is not None
            )
        url = action_set.base_url + path
        if pairs:
            try:
                url += "?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
            except UnicodeEncodeError:
                raise PrepareError(
                    f"{action.name}: a query parameter holds text that is not valid Unicode "
                    "(a lone surrogate); call it again with plain text"
                ) from None
        headers: dict[str, str] = {}
        secrets: list[str] = []
        auth_header = action_set.auth.secret_header
        if auth_header is not None:
            secrets.append(auth_header)
        for name, template in action.headers.items():
            if isinstance(template, Ref) and template.source == "secret":
                secrets.append(name)
                continue
            found = value(template)
            if found is MISSING or found is None:
                continue
            headers[name] = _header_value(action, name, _text(found))
        body = value(action.body) if action.body is not None else MISSING
        if body is not MISSING:
            try:
                json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (ValueError, UnicodeEncodeError) as exc:
                raise PrepareError(
                    f"{action.name}: the body cannot be sent as JSON ({exc}); call it again "
                    "with plain values"
                ) from None
        return cls(
            url=url,
            headers=headers,
            secret_headers=tuple(secrets),
            has_body=body is not MISSING,
            body=None if body is MISSING else body,
        )


def _render(template: Any, scope: Scope, redact: list[Ref] | None) -> Any:
    if redact is None:
        return render(template, scope)
    if isinstance(template, Ref):
        found = resolve(template, scope)
        return REDACTED if found is not MISSING and _is_hidden(template, redact) else found
    if isinstance(template, Mapping):
        out = {k: _render(v, scope, redact) for k, v in template.items()}
        return {k: v for k, v in out.items() if v is not MISSING}
    if isinstance(template, list | tuple):
        return [None if (v := _render(i, scope, redact)) is MISSING else v for i in template]
    return template


def _quoted(action: ActionTool, what: str, value: Any) -> str:
    """`value` as one percent-encoded path segment; `PrepareError` for text that is not valid
    Unicode (a lone surrogate), which no URL can carry."""
    try:
        return urllib.parse.quote(_text(value), safe="")
    except UnicodeEncodeError:
        raise PrepareError(
            f"{action.name}: the {what} holds text that is not valid Unicode (a lone "
            "surrogate); call it again with plain text"
        ) from None


def _header_value(action: ActionTool, name: str, text: str) -> str:
    """`text` as a header value, or `PrepareError` for one no HTTP request can carry. A header
    carries ASCII without control characters (tab aside); spaces and tabs around the value are
    not part of it (RFC 9110, 5.5) and are dropped. Refused here, when the request is prepared,
    not once the person confirmed it, when nothing could be sent."""
    if "\r" in text or "\n" in text:
        raise PrepareError(f"{action.name}: the header {name} would hold a line break")
    text = text.strip(" \t")
    bad = unsendable_in_header(text)
    if bad is not None:
        raise PrepareError(
            f"{action.name}: the header {name} would hold the character U+{ord(bad):04X}; a "
            "header carries printable ASCII only (no accents, emoji or control characters). "
            "Call it again with such a value"
        )
    return text


def unsendable_in_header(text: str) -> str | None:
    """The first character of `text` that no HTTP header value can carry (only printable
    ASCII and tabs can be), or None."""
    return next((c for c in text if not (c == "\t" or " " <= c <= "~")), None)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _preview(
    action: ActionTool, input: Mapping[str, Any], scope: Scope, hidden: list[Ref]
) -> dict[str, Any]:
    explicit = action.confirmation.preview
    if explicit is not None:
        out: dict[str, Any] = {}
        for name, template in explicit.items():
            found = _render(template, scope, hidden)
            out[name] = None if found is MISSING else found
        return out
    properties = list((action.input_schema.get("properties") or {}).keys())
    order = [k for k in properties if k in input] + [k for k in input if k not in properties]
    return {key: input[key] for key in order}


def digest(
    prepared: PreparedRequest,
    *,
    history_id: str,
    user_id: str,
    tool: str,
    arguments: Mapping[str, Any],
    dependency_values: Mapping[str, Any],
    fingerprint: str,
) -> str:
    """The SHA-256 hex over the canonical JSON of the prepared request (method, URL, headers,
    body, idempotency key, preview, times) and its context. Changing any part changes it."""
    return sha256_hex(
        {
            "v": 1,
            "historyId": history_id,
            "userId": user_id,
            "tool": tool,
            "arguments": arguments,
            "dependencyValues": dependency_values,
            "fingerprint": fingerprint,
            "request": prepared.to_json(),
        }
    )
