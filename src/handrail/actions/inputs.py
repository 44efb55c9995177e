"""The input schema of an action tool: checked whole when the file is compiled, and the
model's input checked against it before anything is prepared or sent.

An action tool's ``input`` is a JSON Schema object made of the keywords in `KEYWORDS`; the
compiler refuses any other keyword, so every constraint a file declares is one that is checked.
`check_input` returns sentences the model can act on (``date: required``), never raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

_TYPE_NAMES: Final = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}
#: Annotations: allowed, never checked.
ANNOTATIONS: Final = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "format"}
)
#: Every keyword an input schema may use.
KEYWORDS: Final = ANNOTATIONS | {
    "type", "enum", "const", "nullable", "properties", "required", "additionalProperties",
    "items", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems",
}  # fmt: skip
_COUNTS: Final = ("minLength", "maxLength", "minItems", "maxItems")
_BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_BOUND_WORDS: Final = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}


def schema_problems(schema: Any, path: str = "") -> list[tuple[str, str]]:
    """What is wrong with an input schema, as ``(path below the schema, message)`` pairs."""
    out: list[tuple[str, str]] = []
    _schema(schema, path, out)
    return out


def _sub(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _schema(schema: Any, path: str, out: list[tuple[str, str]]) -> None:
    if not isinstance(schema, Mapping):
        out.append((path, f"expected a JSON Schema object, got {_show(schema)}"))
        return
    for key in schema:
        if key not in KEYWORDS:
            out.append(
                (
                    _sub(path, str(key)),
                    f"the input schema keyword {key!r} is not supported; use "
                    f"{', '.join(sorted(KEYWORDS - ANNOTATIONS))}",
                )
            )
    kinds = schema.get("type")
    if kinds is not None:
        listed = kinds if isinstance(kinds, list) else [kinds]
        if not listed or not all(isinstance(k, str) and k in _TYPE_NAMES for k in listed):
            out.append((_sub(path, "type"), f"expected one or more of {', '.join(_TYPE_NAMES)}"))
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        out.append((_sub(path, "enum"), "expected a non-empty list of values"))
    if "nullable" in schema and not isinstance(schema["nullable"], bool):
        out.append((_sub(path, "nullable"), "expected true or false"))
    for key in _COUNTS:
        if key in schema and not (_is_int(schema[key]) and schema[key] >= 0):
            out.append((_sub(path, key), "expected a whole number ≥ 0"))
    for key in _BOUNDS:
        if key in schema and not _is_number(schema[key]):
            out.append((_sub(path, key), "expected a number"))
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError):
            out.append((_sub(path, "pattern"), "expected a regular expression"))
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            out.append((_sub(path, "properties"), "expected a mapping of names to schemas"))
            properties = {}
        for name, sub in properties.items():
            _schema(sub, _sub(_sub(path, "properties"), str(name)), out)
    required = schema.get("required")
    if required is not None:
        names = properties if isinstance(properties, Mapping) else {}
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            out.append((_sub(path, "required"), "expected a list of property names"))
        else:
            for name in required:
                if name not in names:
                    out.append((_sub(path, "required"), f"{name!r} is required but not a property"))
    extra = schema.get("additionalProperties")
    if extra is not None and not isinstance(extra, bool):
        _schema(extra, _sub(path, "additionalProperties"), out)
    if "items" in schema:
        _schema(schema["items"], _sub(path, "items"), out)


def property_schema(schema: Mapping[str, Any], path: tuple[str | int, ...]) -> bool:
    """Whether an input path can exist under `schema`: each name must be a declared property
    (unless the object allows additional properties), each index must be into an array."""
    current: Any = schema
    for segment in path:
        if not isinstance(current, Mapping):
            return True
        if isinstance(segment, int):
            if "items" not in current and current.get("type") not in (None, "array"):
                return False
            current = current.get("items", {})
            continue
        properties = current.get("properties")
        if isinstance(properties, Mapping) and segment in properties:
            current = properties[segment]
            continue
        extra = current.get("additionalProperties")
        if extra is False or (extra is None and isinstance(properties, Mapping)):
            return False
        current = extra if isinstance(extra, Mapping) else {}
    return True


# --------------------------------------------------------------------------------- checking


def check_input(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with `value` for the input schema, as sentences such as ``date:
    required`` or ``count: expected an integer, got "3"``; empty when it fits. Top-level
    properties the schema does not declare are refused unless it sets
    ``additionalProperties``; deeper objects follow JSON Schema (open unless ``false``).
    Never raises."""
    if not isinstance(value, Mapping):
        return [f"(input): expected an object, got {_show(value)}"]
    errors: list[str] = []
    _check(schema, value, "", errors, top=True)
    return errors


def _check(schema: Any, value: Any, path: str, errors: list[str], *, top: bool = False) -> None:
    if not isinstance(schema, Mapping):
        return
    where = path or "(input)"
    if value is None and schema.get("nullable") is True:
        return
    declared = schema.get("type")
    kinds = declared if isinstance(declared, list) else [declared] if declared else []
    if kinds and not any(_is(value, k) for k in kinds):
        wanted = " or ".join(_TYPE_NAMES.get(k, str(k)) for k in kinds)
        errors.append(f"{where}: expected {wanted}, got {_show(value)}")
        return
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{where}: expected {_show(schema['const'])}, got {_show(value)}")
        return
    choices = schema.get("enum")
    if isinstance(choices, list) and not any(_same(value, c) for c in choices):
        shown = ", ".join(_show(c) for c in choices)
        errors.append(f"{where}: expected one of {shown}, got {_show(value)}")
        return
    if isinstance(value, str):
        _check_string(schema, value, where, errors)
    elif _is_number(value):
        _check_number(schema, value, where, errors)
    elif isinstance(value, list):
        _check_count(schema, len(value), "item", "minItems", "maxItems", where, errors)
        for index, item in enumerate(value):
            _check(schema.get("items"), item, f"{path}[{index}]", errors)
    elif isinstance(value, Mapping):
        _check_object(schema, value, path, errors, top=top)


def _check_string(schema: Mapping[str, Any], value: str, where: str, errors: list[str]) -> None:
    _check_count(schema, len(value), "character", "minLength", "maxLength", where, errors)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                errors.append(f"{where}: does not match the pattern {pattern}")
        except re.error:
            return


def _check_number(schema: Mapping[str, Any], value: float, where: str, errors: list[str]) -> None:
    for key, words in _BOUND_WORDS.items():
        bound = schema.get(key)
        if not _is_number(bound):
            continue
        fits = {
            "minimum": value >= bound,
            "maximum": value <= bound,
            "exclusiveMinimum": value > bound,
            "exclusiveMaximum": value < bound,
        }[key]
        if not fits:
            errors.append(f"{where}: must be {words} {bound}, got {_show(value)}")


def _check_count(
    schema: Mapping[str, Any],
    count: int,
    noun: str,
    low_key: str,
    high_key: str,
    where: str,
    errors: list[str],
) -> None:
    low, high = schema.get(low_key), schema.get(high_key)
    if isinstance(low, int) and count < low:
        errors.append(f"{where}: needs at least {low} {noun}{'s' if low != 1 else ''}")
    if isinstance(high, int) and count > high:
        errors.append(f"{where}: takes at most {high} {noun}{'s' if high != 1 else ''}")


def _check_object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: str, errors: list[str], *, top: bool
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if name not in value:
            errors.append(f"{_join(path, name)}: required")
    extra = schema.get("additionalProperties")
    closed = extra is False or (extra is None and top)
    for key, item in value.items():
        where = _join(path, str(key))
        if key in properties:
            _check(properties[key], item, where, errors)
        elif isinstance(extra, Mapping):
            _check(extra, item, where, errors)
        elif closed:
            known = ", ".join(map(str, properties))
            there = f"the properties are: {known}" if known else "there are none"
            errors.append(f"{where}: unknown property; {there}")


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, Mapping)
    if kind == "integer":
        return _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    return _is_number(value)


def _is_number(value: Any) -> TypeGuard[int | float]:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _join(path: str, key: str) -> str:
    if not path:
        return key
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
