"""Request bodies checked by the JSON Schema the OpenAPI document publishes for them.

`BodyCheck` compiles a body's schema once into plain predicates, so the check and the document
cannot disagree: what the schema says is what the route refuses. It understands the keywords
the bodies use: ``type`` (a name or a list), ``minLength``, ``maxLength``, ``pattern`` (``\\S``:
not blank), ``enum``, ``const``, ``maxItems``, ``properties``, ``required``,
``additionalProperties: false``, ``dependentRequired``, ``dependentSchemas`` with ``not:
{required}``, a ``oneOf`` of ``required`` lists at the top (exactly one of those fields), and a
``oneOf`` of object schemas inside (checked for what every branch shares). Rules JSON Schema
cannot state are declared beside it as `shapes` (exactly one group of fields).

A check returns `Violation`s in a fixed order (the body's own type, unknown fields, each
property in the schema's order, then the top-level rules), each with the field's dotted path,
the keyword that failed and a message for the person who sent it. No group sent is ``oneOf``;
more than one is ``oneOf.several`` (on each group's first field). Routes turn them into the
problem of their spec table. Checking a valid body is a handful of dictionary look-ups.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["BodyCheck", "Violation", "body_check"]

JsonSchema = dict[str, Any]

_TYPES: Final[dict[str, Callable[[Any], bool]]] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_TYPE_WORDS: Final = {
    "string": "a string",
    "object": "an object",
    "array": "a list",
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "null": "null",
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a body breaks its schema: where (``path``), which keyword, and why."""

    path: str
    keyword: str
    message: str


Check = Callable[[Any, str, list[Violation]], None]


def _one_of(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def _compile(schema: Mapping[str, Any]) -> Check:
    """The predicates of one value's schema, in keyword order."""
    checks: list[Check] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        tests = [_TYPES[name] for name in names]
        nonempty = schema.get("minLength") == 1 and names == ["string"]
        words = "a non-empty string" if nonempty else _one_of([_TYPE_WORDS[n] for n in names])

        def type_check(value: Any, path: str, out: list[Violation]) -> None:
            if not any(test(value) for test in tests):
                out.append(Violation(path, "type", f"must be {words}"))

        checks.append(type_check)
    min_length = schema.get("minLength")
    max_length = schema.get("maxLength")
    visible = schema.get("pattern") == "\\S"
    pattern = re.compile(schema["pattern"]) if "pattern" in schema and not visible else None
    if min_length is not None or max_length is not None or "pattern" in schema:

        def string_check(value: Any, path: str, out: list[Violation]) -> None:
            if not isinstance(value, str):
                return
            if min_length is not None and len(value) < min_length:
                words = "a non-empty string" if min_length == 1 else f"at least {min_length}"
                out.append(Violation(path, "minLength", f"must be {words}"))
            elif max_length is not None and len(value) > max_length:
                out.append(Violation(path, "maxLength", f"must be at most {max_length} characters"))
            elif visible and not value.strip():
                out.append(Violation(path, "pattern", "must not be blank"))
            elif pattern is not None and not pattern.search(value):
                out.append(Violation(path, "pattern", "is not in the expected format"))

        checks.append(string_check)
    if "enum" in schema or "const" in schema:
        allowed = tuple(schema["enum"]) if "enum" in schema else (schema["const"],)
        listed = ", ".join(str(v) for v in allowed if v is not None)

        def enum_check(value: Any, path: str, out: list[Violation]) -> None:
            if (value is not None and value not in allowed) or (
                value is None and None not in allowed and types is None
            ):
                out.append(Violation(path, "enum", f"must be one of {listed}"))

        checks.append(enum_check)
    if "maxItems" in schema:
        most = int(schema["maxItems"])

        def items_check(value: Any, path: str, out: list[Violation]) -> None:
            if isinstance(value, list) and len(value) > most:
                words = "must be an empty list" if most == 0 else f"must have at most {most} items"
                out.append(Violation(path, "maxItems", words))

        checks.append(items_check)
    if "properties" in schema or "required" in schema:
        checks.append(_object_check(schema))
    if "oneOf" in schema and all(isinstance(b, dict) and "type" in b for b in schema["oneOf"]):
        checks.append(_compile(_shared(schema["oneOf"])))

    def check(value: Any, path: str, out: list[Violation]) -> None:
        before = len(out)
        for one in checks:
            one(value, path, out)
            if len(out) > before:  # the first failing keyword says enough
                return

    return check


def _shared(branches: Sequence[Mapping[str, Any]]) -> JsonSchema:
    """What every branch of a ``oneOf`` shares: the type, and each property that every branch
    requires with the same schema."""
    first = branches[0]
    shared: JsonSchema = {}
    if all(b.get("type") == first.get("type") for b in branches):
        shared["type"] = first.get("type")
    required = [
        name
        for name in first.get("required", ())
        if all(
            name in b.get("required", ())
            and b.get("properties", {}).get(name) == first.get("properties", {}).get(name)
            for b in branches
        )
    ]
    if required:
        shared["required"] = required
        shared["properties"] = {name: first["properties"][name] for name in required}
    return shared


def _object_check(schema: Mapping[str, Any]) -> Check:
    properties = {name: _compile(sub) for name, sub in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))

    def check(value: Any, path: str, out: list[Violation]) -> None:
        if not isinstance(value, dict):
            return
        for name in required:
            if value.get(name) is None:
                out.append(Violation(f"{path}.{name}", "required", "is required"))
                return
        for name, sub in properties.items():
            if name in value:
                sub(value[name], f"{path}.{name}", out)

    return check


class BodyCheck:
    """The check of one request body, compiled from its published schema.

    `ignored` names fields the server drops without a word (a history's read-only fields);
    `shapes` are groups of fields of which a body sends exactly one (a rule the schema cannot
    state); with `null_is_absent`, a field sent as ``null`` counts as not sent.
    """

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        ignored: Collection[str] = (),
        shapes: Sequence[Sequence[str]] = (),
        null_is_absent: bool = False,
    ) -> None:
        self.schema = schema
        self.ignored = frozenset(ignored)
        self.fields = tuple(schema.get("properties", {}))
        #: The fields a closed body may send: its own and the ignored ones.
        self._known = frozenset(self.fields) | self.ignored
        self.closed = schema.get("additionalProperties") is False
        self._properties = [
            (name, _compile(sub)) for name, sub in schema.get("properties", {}).items()
        ]
        groups = [tuple(b["required"]) for b in schema.get("oneOf", ()) if "required" in b]
        self.shapes = tuple(groups) + tuple(tuple(s) for s in shapes)
        #: The shapes in words, for the messages of the oneOf rule.
        self._options = (
            _one_of([" with ".join(shape) for shape in self.shapes]) if self.shapes else ""
        )
        self.dependent_required = {
            k: tuple(v) for k, v in schema.get("dependentRequired", {}).items()
        }
        self.dependent_absent = {
            k: tuple(v["not"]["required"])
            for k, v in schema.get("dependentSchemas", {}).items()
            if isinstance(v.get("not"), dict) and "required" in v["not"]
        }
        self.null_is_absent = null_is_absent

    def given(self, data: Mapping[str, Any], name: str) -> bool:
        if name not in data:
            return False
        return not (self.null_is_absent and data[name] is None)

    def clean(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The body without its ignored fields."""
        return {k: v for k, v in data.items() if k not in self.ignored}

    def violations(self, data: Any) -> list[Violation]:
        """Every way `data` breaks the schema, in the order described above."""
        if not isinstance(data, dict):
            return [Violation("body", "type", "must be a JSON object")]
        out: list[Violation] = []
        # The fields sent (`given`), looked up without a call for each rule.
        sent_names = (
            {k for k, v in data.items() if v is not None} if self.null_is_absent else data.keys()
        )
        if self.closed:
            for key in data:
                if key not in self._known:
                    out.append(
                        Violation(
                            key,
                            "additionalProperties",
                            f"is not a field; the fields are {', '.join(self.fields)}",
                        )
                    )
        for name, check in self._properties:
            if name in sent_names:
                check(data[name], name, out)
        sent = [shape for shape in self.shapes if not sent_names.isdisjoint(shape)]
        options = self._options
        if self.shapes and not sent:
            out.append(Violation(self.shapes[0][0], "oneOf", f"is required: send {options}"))
        elif len(sent) > 1:
            for shape in sent:
                out.append(Violation(shape[0], "oneOf.several", f"send only one of {options}"))
        for shape in sent:
            for name in shape:
                if name not in sent_names:
                    others = ", ".join(f for f in shape if f != name)
                    out.append(Violation(name, "required", f"is required with {others}"))
        for name, needed in self.dependent_required.items():
            if name in sent_names:
                for other in needed:
                    if other not in sent_names:
                        out.append(
                            Violation(other, "dependentRequired", f"is required with {name}")
                        )
        for name, absent in self.dependent_absent.items():
            if name in sent_names:
                for other in absent:
                    if other in sent_names:
                        out.append(
                            Violation(other, "dependentSchemas", f"cannot be sent with {name}")
                        )
        return out

    def field_errors(self, data: Any) -> dict[str, str]:
        """The violations as ``{field: message}`` (the first per field), sorted by field."""
        fields: dict[str, str] = {}
        for violation in self.violations(data):
            fields.setdefault(violation.path, violation.message)
        return dict(sorted(fields.items()))


#: What each checked body adds to its schema: the history's read-only fields, which the server
#: ignores, and the turn body's three shapes (the rule its published schema cannot state).
_READ_ONLY: Final = ("id", "userId", "created", "updated", "pendingAsk", "rows", "running")
_OPTIONS: Final[dict[str, dict[str, Any]]] = {
    "HistoryCreate": {"ignored": _READ_ONLY},
    "HistoryUpdate": {"ignored": _READ_ONLY},
    "PromptRequest": {"null_is_absent": True},
    "TurnRequest": {"shapes": (("prompt",), ("askResponse",), ("toolCallId", "buttonId"))},
}


@functools.lru_cache(maxsize=64)
def body_check(name: str, agents: tuple[str, ...] = ()) -> BodyCheck:
    """The check of the body `name` (``HistoryCreate``, ``HistoryUpdate``, ``PromptRequest`` or
    ``TurnRequest``), compiled once from the schema `/openapi.json` publishes for it."""
    from .openapi import body_schemas

    return BodyCheck(body_schemas(agents)[name], **_OPTIONS[name])
