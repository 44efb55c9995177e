"""Checking a tool's input (a JSON object) against its JSON Schema; stdlib only, every layer may
use it.

`check_instance` serves both kinds of tool. Strict, for action tools: the schema is made of
`KEYWORDS` (the action compiler refuses any other), and every one of them is checked. Tolerant,
for Python tools: schemas made of the keywords the type-hint deriver emits are checked whole, and
any other schema only as far as it is understood. Either way it returns sentences the model can
act on (``date: required``, ``count: expected an integer, got "3"``) and never raises on a
schema its mode expects.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

#: The JSON types, as the messages name them.
TYPE_NAMES: Final = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}
#: Annotations of the strict subset: allowed, never checked.
ANNOTATIONS: Final = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "format"}
)
#: Every keyword of the strict subset (an action tool's input schema).
KEYWORDS: Final = ANNOTATIONS | {
    "type", "enum", "const", "nullable", "properties", "required", "additionalProperties",
    "items", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems",
}  # fmt: skip
#: The keywords that take a count, and those that take a numeric bound.
COUNTS: Final = ("minLength", "maxLength", "minItems", "maxItems")
BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_BOUND_WORDS: Final = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}
#: Keywords the tolerant mode does not check and may ignore: annotations, and constraints
#: (ignoring one only lets more through).
_IGNORED: Final = frozenset(
    {
        "description", "title", "default", "examples", "$schema", "$id", "$comment",
        "deprecated", "readOnly", "writeOnly", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
        "contentMediaType", "contentEncoding",
    }
)  # fmt: skip


def check_instance(
    schema: Any, value: Any, *, strict: bool, root: str = "(input)", bounds: bool = False
) -> list[str]:
    """What is wrong with `value`, a tool's input, for `schema`, as sentences; empty when it
    fits. A value that is not an object is refused; `root` names it in messages.

    ``strict=True`` (an action tool's input schema, of `KEYWORDS`): every keyword is checked,
    and top-level properties the schema does not declare are refused unless it sets
    ``additionalProperties``; deeper objects follow JSON Schema (open unless ``false``). A
    ``nullable`` null skips every other check. Numbers are finite; arrays are lists.

    ``strict=False`` (a Python tool's derived schema): schemas of ``type``, ``enum``,
    ``required``, ``additionalProperties``, ``items``, ``properties``, ``nullable`` and ignored
    keywords (annotations, constraints) are checked whole at every depth, objects open unless
    ``additionalProperties`` is ``false``. Any other schema (``anyOf``, ``$ref``...) gets only
    its ``required`` names and the types of its top-level properties checked. Never raises.

    ``bounds=True`` checks the tolerant mode's constraints too: ``minimum``, ``maximum`` and
    their exclusive forms, ``minLength``, ``maxLength``, ``minItems``, ``maxItems`` (never
    ``pattern``: a server's pattern is ECMAScript's, not Python's), as for what a person
    edited, which goes to the tool as it is.

    Nothing is coerced: ``"3"`` is not an integer, while ``3`` is a number and ``3.0`` an
    integer."""
    if not isinstance(value, Mapping):
        return [f"{root}: expected an object, got {show(value)}"]
    if not isinstance(schema, Mapping):
        return []
    checker = _Checker(strict=strict, root=root, bounds=bounds)
    if strict or _in_subset(schema):
        checker.check(schema, value, "", top=True)
    else:
        checker.check_top(schema, value)
    return checker.errors


def _in_subset(schema: Any) -> bool:
    """Whether the tolerant mode can check `schema` whole."""
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key in _IGNORED:
            continue
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            ok = all(isinstance(k, str) and k in TYPE_NAMES for k in kinds)
        elif key == "enum":
            ok = isinstance(value, list)
        elif key == "required":
            ok = isinstance(value, list) and all(isinstance(k, str) for k in value)
        elif key == "nullable":
            ok = isinstance(value, bool)
        elif key == "additionalProperties":
            ok = isinstance(value, bool) or _in_subset(value)
        elif key == "items":
            ok = _in_subset(value)
        elif key == "properties":
            ok = isinstance(value, Mapping) and all(_in_subset(v) for v in value.values())
        else:
            ok = False
        if not ok:
            return False
    return True


class _Checker:
    def __init__(self, *, strict: bool, root: str, bounds: bool = False) -> None:
        self.strict = strict
        self.bounds = strict or bounds
        self.root = root
        self.errors: list[str] = []

    def check(self, schema: Any, value: Any, path: str, *, top: bool = False) -> None:
        if not isinstance(schema, Mapping):
            return
        where = path or self.root
        if value is None and schema.get("nullable") is True:
            if self.strict:
                return
        elif not self.type_fits(schema, value, where):
            return
        if "const" in schema and not _same(value, schema["const"]):
            self.errors.append(f"{where}: expected {show(schema['const'])}, got {show(value)}")
            return
        choices = schema.get("enum")
        if isinstance(choices, list) and not any(_same(value, c) for c in choices):
            shown = ", ".join(show(c) for c in choices)
            self.errors.append(f"{where}: expected one of {shown}, got {show(value)}")
            return
        if self.bounds and isinstance(value, str):
            self.check_string(schema, value, where)
        elif self.bounds and is_number(value):
            self.check_number(schema, value, where)
        elif isinstance(value, list):
            if self.bounds:
                self.check_count(schema, len(value), "item", "minItems", "maxItems", where)
            for index, item in enumerate(value):
                self.check(schema.get("items"), item, f"{path}[{index}]")
        elif isinstance(value, Mapping):
            self.check_object(schema, value, path, top=top)

    def type_fits(self, schema: Mapping[str, Any], value: Any, where: str) -> bool:
        """Whether `value` has one of the schema's types, recording the error when not. The
        tolerant mode lets anything through a ``type`` it does not fully know."""
        declared = schema.get("type")
        kinds = declared if isinstance(declared, list) else [declared] if declared else []
        if not self.strict and not all(isinstance(k, str) and k in TYPE_NAMES for k in kinds):
            return True
        if not kinds or any(self.is_a(value, k) for k in kinds):
            return True
        wanted = " or ".join(TYPE_NAMES.get(k, str(k)) for k in kinds)
        self.errors.append(f"{where}: expected {wanted}, got {show(value)}")
        return False

    def is_a(self, value: Any, kind: str) -> bool:
        if kind == "string":
            return isinstance(value, str)
        if kind == "boolean":
            return isinstance(value, bool)
        if kind == "null":
            return value is None
        if kind == "array":
            return isinstance(value, list) or (not self.strict and isinstance(value, tuple))
        if kind == "object":
            return isinstance(value, Mapping)
        if kind == "integer":
            return is_number(value) and (isinstance(value, int) or float(value).is_integer())
        if self.strict:
            return is_number(value)
        return isinstance(value, int | float) and not isinstance(value, bool)  # inf, nan too

    def check_string(self, schema: Mapping[str, Any], value: str, where: str) -> None:
        self.check_count(schema, len(value), "character", "minLength", "maxLength", where)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and self.strict:
            try:
                if re.search(pattern, value) is None:
                    self.errors.append(f"{where}: does not match the pattern {pattern}")
            except re.error:
                return

    def check_number(self, schema: Mapping[str, Any], value: float, where: str) -> None:
        for key, words in _BOUND_WORDS.items():
            bound = schema.get(key)
            if not is_number(bound):
                continue
            fits = {
                "minimum": value >= bound,
                "maximum": value <= bound,
                "exclusiveMinimum": value > bound,
                "exclusiveMaximum": value < bound,
            }[key]
            if not fits:
                self.errors.append(f"{where}: must be {words} {bound}, got {show(value)}")

    def check_count(
        self,
        schema: Mapping[str, Any],
        count: int,
        noun: str,
        low_key: str,
        high_key: str,
        where: str,
    ) -> None:
        low, high = schema.get(low_key), schema.get(high_key)
        if isinstance(low, int) and count < low:
            self.errors.append(f"{where}: needs at least {low} {noun}{'s' if low != 1 else ''}")
        if isinstance(high, int) and count > high:
            self.errors.append(f"{where}: takes at most {high} {noun}{'s' if high != 1 else ''}")

    def check_object(
        self, schema: Mapping[str, Any], value: Mapping[str, Any], path: str, *, top: bool
    ) -> None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if name not in value:
                self.errors.append(f"{_join(path, name)}: required")
        extra = schema.get("additionalProperties")
        closed = extra is False or (extra is None and top and self.strict)
        for key, item in value.items():
            where = _join(path, str(key))
            if key in properties:
                self.check(properties[key], item, where)
            elif isinstance(extra, Mapping):
                self.check(extra, item, where)
            elif closed:
                known = ", ".join(map(str, properties))
                there = f"the properties are: {known}" if known else "there are none"
                self.errors.append(f"{where}: unknown property; {there}")

    def check_top(self, schema: Mapping[str, Any], value: Mapping[str, Any]) -> None:
        """Only `required` and the types of the top-level properties."""
        required = schema.get("required")
        if isinstance(required, list):
            self.errors.extend(
                f"{n}: required" for n in required if isinstance(n, str) and n not in value
            )
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return
        for key, item in value.items():
            sub = properties.get(key)
            if isinstance(sub, Mapping) and not (item is None and sub.get("nullable") is True):
                self.type_fits(sub, item, str(key) or self.root)


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether `value` is a finite JSON number (booleans are not)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _join(path: str, key: str) -> str:
    if not path:
        return key
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def show(value: Any) -> str:
    """`value` as JSON for a message, cut to 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
