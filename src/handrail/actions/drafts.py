"""The building blocks of compiling an action-set file: the list of problems found, readers of
typed values that record what is wrong, templates (literals with parsed references), and the
drafts of tools and dependencies that `handrail.actions.parse` fills and
`handrail.actions.checks` checks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from ..policy.rules import GateRules
from .model import (
    DEFAULT_DEPENDENCY_TTL_MS,
    Confirmation,
    Dependency,
    Effect,
    Method,
    Recovery,
    Select,
    Transport,
    When,
)
from .problems import ConfigCode, ConfigProblem, join_path
from .refs import Ref, RefError, is_reference, parse_ref

# --------------------------------------------------------------------------------- problems


class Problems:
    """The problems found so far, in the order found."""

    def __init__(self) -> None:
        self.items: list[ConfigProblem] = []

    def add(self, code: ConfigCode, path: str, message: str) -> None:
        self.items.append(ConfigProblem(code=code, path=path, message=message))

    def __len__(self) -> int:
        return len(self.items)


def show(value: Any) -> str:
    """A value as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def mapping(
    p: Problems, path: str, value: Any, what: str = "a mapping"
) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        for key in bad:
            p.add("CONFIG_SCHEMA_INVALID", join_path(path, str(key)), "keys must be text")
        return {k: v for k, v in value.items() if isinstance(k, str)}
    p.add("CONFIG_SCHEMA_INVALID", path, f"expected {what}, got {show(value)}")
    return None


def keys(
    p: Problems,
    path: str,
    obj: Mapping[str, Any],
    allowed: Collection[str],
    required: Collection[str] = (),
) -> None:
    for key in obj:
        if key not in allowed:
            p.add(
                "CONFIG_SCHEMA_INVALID",
                join_path(path, key),
                f"unknown key {key!r}; the keys here are {', '.join(allowed)}",
            )
    for key in required:
        if key not in obj:
            p.add("CONFIG_SCHEMA_INVALID", join_path(path, key), f"{key} is required")


def text(
    p: Problems,
    path: str,
    value: Any,
    *,
    pattern: re.Pattern[str] | None = None,
    rule: str = "",
    code: ConfigCode = "CONFIG_SCHEMA_INVALID",
    max_chars: int | None = None,
) -> str | None:
    if not isinstance(value, str) or not value.strip():
        p.add(code, path, f"expected non-empty text, got {show(value)}")
        return None
    if pattern is not None and not pattern.match(value):
        p.add(code, path, f"{value!r} is not valid: {rule}")
        return None
    if max_chars is not None and len(value) > max_chars:
        p.add(code, path, f"{len(value)} characters; the most is {max_chars}")
        return None
    return value


def integer(
    p: Problems,
    path: str,
    value: Any,
    low: int,
    high: int,
    code: ConfigCode = "CONFIG_SCHEMA_INVALID",
) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        p.add(code, path, f"expected a whole number from {low} to {high}, got {show(value)}")
        return None
    if not low <= value <= high:
        p.add(code, path, f"{value} is out of range: use {low} to {high}")
        return None
    return value


def boolean(p: Problems, path: str, value: Any) -> bool | None:
    if not isinstance(value, bool):
        p.add("CONFIG_SCHEMA_INVALID", path, f"expected true or false, got {show(value)}")
        return None
    return value


def is_json(value: Any) -> bool:
    """Whether a literal is plain JSON (YAML can also spell binary data and sets)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(is_json(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and is_json(v) for k, v in value.items())
    return False


# --------------------------------------------------------------------------------- templates

#: Where a template is: decides which references it may hold.
Place = Literal["path_params", "query", "headers", "body", "dep_input", "match", "preview"]
#: The places of the request itself.
REQUEST_PLACES: Final[frozenset[Place]] = frozenset({"path_params", "query", "headers", "body"})


@dataclass(kw_only=True)
class RefSite:
    """A reference found while compiling, kept for the checks that need every tool parsed."""

    ref: Ref
    path: str
    place: Place


def template(
    p: Problems, path: str, value: Any, place: Place, sites: list[RefSite], *, depth: int = 0
) -> Any:
    """A compiled template: references parsed into `Ref`, literals kept. The references are
    appended to `sites` for the checks of `handrail.actions.checks`."""
    if is_reference(value):
        try:
            ref = parse_ref(value)
        except RefError as exc:
            p.add(cast(ConfigCode, exc.code), path, exc.message)
            return None
        sites.append(RefSite(ref=ref, path=path, place=place))
        return ref
    if isinstance(value, Mapping):
        obj = mapping(p, path, value) or {}
        return {
            k: template(p, join_path(path, k), v, place, sites, depth=depth + 1)
            for k, v in obj.items()
        }
    if isinstance(value, list):
        return [
            template(p, join_path(path, i), v, place, sites, depth=depth + 1)
            for i, v in enumerate(value)
        ]
    if not is_json(value):
        p.add(
            "CONFIG_SCHEMA_INVALID",
            path,
            f"{show(value)} is not a JSON value; quote it to send it as text",
        )
        return None
    return value


def scalar_template(
    p: Problems, path: str, value: Any, place: Place, sites: list[RefSite], *, lists: bool = False
) -> Any:
    """A template that must be one reference or one scalar (or, with `lists`, a list of them)."""
    if lists and isinstance(value, list):
        return [
            scalar_template(p, join_path(path, i), v, place, sites) for i, v in enumerate(value)
        ]
    if not is_reference(value) and isinstance(value, Mapping | list):
        p.add(
            "CONFIG_SCHEMA_INVALID",
            path,
            "expected a reference or a single value (text, number, true/false), got " + show(value),
        )
        return None
    return template(p, path, value, place, sites)


def template_map(
    p: Problems,
    path: str,
    value: Any,
    place: Place,
    sites: list[RefSite],
    *,
    compile_value: Callable[..., Any] = scalar_template,
    key_pattern: re.Pattern[str] | None = None,
    key_rule: str = "",
) -> dict[str, Any]:
    if value is None:
        return {}
    obj = mapping(p, path, value)
    if obj is None:
        return {}
    out: dict[str, Any] = {}
    for key, item in obj.items():
        where = join_path(path, key)
        if key_pattern is not None and not key_pattern.match(key):
            p.add("CONFIG_SCHEMA_INVALID", where, f"{key!r} is not valid: {key_rule}")
            continue
        out[key] = compile_value(p, where, item, place, sites)
    return out


# --------------------------------------------------------------------------------- drafts


@dataclass(kw_only=True)
class DependencyDraft:
    name: str
    path: str
    tool: str | None = None
    when: When = "always"
    input: dict[str, Any] = field(default_factory=dict)
    ttl_ms: int = DEFAULT_DEPENDENCY_TTL_MS
    select: Select | None = None
    fills: dict[str, Ref] = field(default_factory=dict)
    #: The references of its input and match (where references to other dependencies are
    #: the edges of the dependency graph).
    sites: list[RefSite] = field(default_factory=list)


@dataclass(kw_only=True)
class ToolDraft:
    """A tool as far as it parsed; None marks a part that did not, so checks skip it."""

    index: int
    path: str
    name: str | None = None
    title: str | None = None
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    method: Method | None = None
    url_path: str | None = None
    path_params: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    transport: Transport = field(default_factory=Transport)
    effect: Effect | None = "read-only"
    confirmation: Confirmation | None = None
    confirmation_given: bool = False
    preview_path: str = ""
    recovery: Recovery | None = None
    recovery_path: str = ""
    dependencies: dict[str, DependencyDraft] = field(default_factory=dict)
    sites: list[RefSite] = field(default_factory=list)
    rules: GateRules | None = None


def build_dependency(dep: DependencyDraft) -> Dependency:
    """The compiled dependency of a draft that has no problem."""
    assert dep.tool is not None
    return Dependency(
        name=dep.name,
        tool=dep.tool,
        when=dep.when,
        input=dep.input,
        ttl_ms=dep.ttl_ms,
        select=dep.select,
        fills=dep.fills,
    )
