"""References: the values of a request, a preview or a dependency that are read from somewhere.

A reference is a string that starts with ``$`` or a mapping with a ``source`` key:

- ``$.input.<path>``: the model's input (with the fields dependencies filled);
- ``$.deps.<name>.<path>``: the chosen candidate of a dependency (its whole result without
  ``select``);
- ``$.item.<path>``: the candidate, inside ``select`` (``label``, ``facts``) and ``fills``;
- ``{source: selection, path: $.<fact>}``: a selection fact (display only);
- ``{source: secret, env: NAME}``: an environment variable (headers only);
- ``{source: generated}``: the id of the prepared request.

Paths are dotted names with ``[n]`` indexes. Parsing is a regular expression and resolving is a
walk over dicts and lists: nothing is ever evaluated. Anything else is a literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Source = Literal["input", "deps", "item", "result", "selection", "secret", "generated"]
Segment = str | int
Path = tuple[Segment, ...]

#: The sources of the ``{source: ...}`` form, and the keys each takes besides ``source``.
MAPPING_SOURCES: Final[Mapping[str, frozenset[str]]] = {
    "selection": frozenset({"path"}),
    "secret": frozenset({"env"}),
    "generated": frozenset(),
}
#: The roots of the ``$.<root>`` form.
ROOTS: Final = ("input", "deps", "item")

_PATH: Final = re.compile(r"^\$((?:\.[A-Za-z0-9_-]+|\[\d+\])*)$")
_SEGMENT: Final = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]")
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RefError(ValueError):
    """A reference that does not parse; `code` is the config code to report it with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Missing:
    """The value of a reference that reads nothing (a field left out, an index past the end)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


@dataclass(frozen=True, kw_only=True, slots=True)
class Ref:
    """A parsed reference. `name` is the dependency (``deps``), the fact (``selection``) or the
    environment variable (``secret``); `path` is what is read below it."""

    source: Source
    name: str | None = None
    path: Path = field(default=())

    def to_config(self) -> Any:
        """The reference as it is written in a file, in one canonical spelling."""
        if self.source == "selection":
            return {"source": "selection", "path": format_path((self.name or "",))}
        if self.source == "secret":
            return {"source": "secret", "env": self.name}
        if self.source == "generated":
            return {"source": "generated"}
        if self.source == "result":
            return format_path(self.path)
        head: Path = (self.source,) if self.name is None else (self.source, self.name)
        return format_path(head + self.path)

    def __str__(self) -> str:
        shown = self.to_config()
        if isinstance(shown, str):
            return shown
        return "{" + ", ".join(f"{k}: {v}" for k, v in shown.items()) + "}"


def format_path(path: Sequence[Segment]) -> str:
    """``$.a.b[0]`` from ``("a", "b", 0)``; ``$`` for the empty path."""
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def parse_path(text: Any) -> Path:
    """The segments of ``$.a.b[0]`` (``$`` alone is the empty path); `RefError` otherwise."""
    if not isinstance(text, str):
        raise RefError("CONFIG_SCHEMA_INVALID", f"expected a path such as $.name, got {text!r}")
    match = _PATH.match(text.strip())
    if match is None:
        raise RefError(
            "CONFIG_MAPPING_INVALID",
            f"{text!r} is not a path: write dotted names with [n] indexes, such as $.a.b[0]",
        )
    return tuple(name if name else int(index) for name, index in _SEGMENT.findall(match.group(1)))


def parse_field_path(text: Any) -> Path:
    """A path inside a candidate written without ``$.``: ``time``, ``slot.time``, ``a[0]``."""
    if not isinstance(text, str) or not text:
        raise RefError("CONFIG_SCHEMA_INVALID", f"expected a field name, got {text!r}")
    return parse_path(text if text.startswith("$") else f"$.{text}")


def is_reference(value: Any) -> bool:
    """Whether a config value is written as a reference rather than a literal."""
    if isinstance(value, str):
        return value.startswith("$")
    return isinstance(value, Mapping) and "source" in value


def parse_ref(value: Any) -> Ref:
    """The `Ref` a reference value spells; `RefError` (with its code) when it does not parse
    or names an unknown root or source. Which roots are allowed where is the caller's check."""
    if isinstance(value, str):
        path = parse_path(value)
        if not path or not isinstance(path[0], str) or path[0] not in ROOTS:
            raise RefError(
                "CONFIG_MAPPING_INVALID",
                f"{value!r} reads an unknown root: a reference starts with $.input., "
                "$.deps.<name>. or, inside select, $.item.",
            )
        root = path[0]
        if root == "deps":
            if len(path) < 2 or not isinstance(path[1], str):
                raise RefError(
                    "CONFIG_MAPPING_INVALID",
                    f"{value!r} names no dependency: write $.deps.<name>.<field>",
                )
            return Ref(source="deps", name=path[1], path=path[2:])
        return Ref(source=root, path=path[1:])  # type: ignore[arg-type]
    if not isinstance(value, Mapping):
        raise RefError("CONFIG_SCHEMA_INVALID", f"{value!r} is not a reference")
    source = value.get("source")
    if not isinstance(source, str) or source not in MAPPING_SOURCES:
        raise RefError(
            "CONFIG_MAPPING_INVALID",
            f"unknown source {source!r}: the sources are {', '.join(MAPPING_SOURCES)}",
        )
    extra = sorted(str(k) for k in set(value) - {"source"} - MAPPING_SOURCES[source])
    if extra:
        allowed = ", ".join(sorted(MAPPING_SOURCES[source])) or "no other key"
        raise RefError(
            "CONFIG_SCHEMA_INVALID",
            f"unknown key {', '.join(extra)} in a {source} reference (it takes {allowed})",
        )
    if source == "selection":
        if "path" not in value:
            raise RefError("CONFIG_SCHEMA_INVALID", "a selection reference needs path: $.<fact>")
        fact = parse_path(value["path"])
        if len(fact) != 1 or not isinstance(fact[0], str):
            raise RefError(
                "CONFIG_MAPPING_INVALID",
                f"{value['path']!r} names no fact: a selection path is $.<fact name>",
            )
        return Ref(source="selection", name=fact[0])
    if source == "secret":
        env = value.get("env")
        if not isinstance(env, str) or not _ENV_NAME.match(env):
            raise RefError(
                "CONFIG_SCHEMA_INVALID",
                f"a secret reference needs env: NAME, an environment variable name (got {env!r})",
            )
        return Ref(source="secret", name=env)
    return Ref(source="generated")


# --------------------------------------------------------------------------------- resolving


def get_path(value: Any, path: Sequence[Segment]) -> Any:
    """What `path` reads in `value`, or `MISSING`. Names read mappings, indexes read lists."""
    current = value
    for segment in path:
        if isinstance(segment, int):
            if isinstance(current, list | tuple) and 0 <= segment < len(current):
                current = current[segment]
                continue
            return MISSING
        if isinstance(current, Mapping) and segment in current:
            current = current[segment]
            continue
        return MISSING
    return current


def drop_path(value: Any, path: Sequence[Segment]) -> Any:
    """A copy of `value` without what `path` reads (dicts and lists copied along the way)."""
    if not path:
        return MISSING
    head, rest = path[0], path[1:]
    if isinstance(head, str) and isinstance(value, Mapping) and head in value:
        out = dict(value)
        if rest:
            out[head] = drop_path(value[head], rest)
            if out[head] is MISSING:
                del out[head]
        else:
            del out[head]
        return out
    if isinstance(head, int) and isinstance(value, list) and 0 <= head < len(value):
        items = list(value)
        items[head] = drop_path(items[head], rest) if rest else None
        return items
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class Scope:
    """What references read while rendering: the input, the dependencies' values, the
    selection facts, the candidate (inside ``select``), the dependency result (``items``) and
    the prepared request's generated id."""

    input: Mapping[str, Any] = field(default_factory=dict)
    deps: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)
    item: Any = MISSING
    result: Any = MISSING
    generated: str | None = None


def resolve(ref: Ref, scope: Scope) -> Any:
    """The value of `ref` in `scope`, or `MISSING`. Secrets are never resolved here: a request
    records their header names and the transport reads them at send time."""
    if ref.source == "input":
        return get_path(scope.input, ref.path)
    if ref.source == "deps":
        if ref.name is None or ref.name not in scope.deps:
            return MISSING
        return get_path(scope.deps[ref.name], ref.path)
    if ref.source == "item":
        return get_path(scope.item, ref.path)
    if ref.source == "result":
        return get_path(scope.result, ref.path)
    if ref.source == "selection":
        return scope.facts.get(ref.name or "", MISSING)
    if ref.source == "generated":
        return MISSING if scope.generated is None else scope.generated
    raise ValueError(f"{ref} is resolved at send time, never into a prepared value")


def render(template: Any, scope: Scope) -> Any:
    """A compiled template (literals with `Ref` leaves) with every reference resolved. A key
    whose value is missing is left out of its object; a missing list item becomes null; a
    missing template is `MISSING`."""
    if isinstance(template, Ref):
        return resolve(template, scope)
    if isinstance(template, Mapping):
        out: dict[str, Any] = {}
        for key, value in template.items():
            rendered = render(value, scope)
            if rendered is not MISSING:
                out[key] = rendered
        return out
    if isinstance(template, list | tuple):
        return [None if (v := render(item, scope)) is MISSING else v for item in template]
    return template


def covers_path(outer: Sequence[Segment], path: Sequence[Segment]) -> bool:
    """Whether reading `path` reads (part of) what `outer` reads, or the other way round: one is
    a prefix of the other."""
    n = min(len(outer), len(path))
    return tuple(outer[:n]) == tuple(path[:n])


def refs_in(template: Any) -> list[Ref]:
    """Every reference of a compiled template, in order."""
    if isinstance(template, Ref):
        return [template]
    if isinstance(template, Mapping):
        return [ref for value in template.values() for ref in refs_in(value)]
    if isinstance(template, list | tuple):
        return [ref for item in template for ref in refs_in(item)]
    return []


def template_to_config(template: Any) -> Any:
    """A compiled template as it would be written in a file (references in one spelling)."""
    if isinstance(template, Ref):
        return template.to_config()
    if isinstance(template, Mapping):
        return {k: template_to_config(v) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [template_to_config(v) for v in template]
    return template
