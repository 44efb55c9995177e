"""Checking a tool call's arguments against its input schema, before the tool runs.

`check_arguments` is a small validator for the JSON Schema subset that `input_schema_from_function`
emits; it returns sentences the model can act on, and never raises, whatever the schema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

_TYPE_NAMES: Final = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}
#: Keywords the checker does not check and may ignore: annotations, and constraints (ignoring
#: one only lets more through).
_IGNORED: Final = frozenset(
    {
        "description", "title", "default", "examples", "$schema", "$id", "$comment",
        "deprecated", "readOnly", "writeOnly", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
        "contentMediaType", "contentEncoding",
    }
)  # fmt: skip


def check_arguments(schema: Any, arguments: Any) -> list[str]:
    """What is wrong with `arguments` for the input `schema`, as sentences such as
    ``title: required`` or ``count: expected an integer, got "3"``; empty when they fit.

    Schemas made of the keywords `input_schema_from_function` emits (``type``, ``enum``,
    ``required``, ``additionalProperties``, ``items``, ``properties``, plus OpenAPI's
    ``nullable``) are checked whole, at every depth. Any other schema (hand-written, with
    ``anyOf``, ``$ref``...) gets only its ``required`` names and the types of its top-level
    properties checked. Nothing is coerced: ``"3"`` is not an integer, while ``3`` is a number
    and ``3.0`` an integer. Never raises, whatever the schema."""
    if not isinstance(arguments, Mapping):
        return [f"(arguments): expected an object, got {_show(arguments)}"]
    if not isinstance(schema, Mapping):
        return []
    errors: list[str] = []
    if _in_subset(schema):
        _check(schema, arguments, "", errors)
    else:
        _check_top(schema, arguments, errors)
    return errors


def _in_subset(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key in _IGNORED:
            continue
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            ok = all(isinstance(k, str) and k in _TYPE_NAMES for k in kinds)
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


def _check(schema: Mapping[str, Any], value: Any, path: str, errors: list[str]) -> None:
    if not _type_fits(schema, value, path, errors):
        return
    choices = schema.get("enum")
    if isinstance(choices, list) and not any(_same(value, c) for c in choices):
        shown = ", ".join(_show(c) for c in choices)
        errors.append(f"{path or '(arguments)'}: expected one of {shown}, got {_show(value)}")
        return
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _check(schema["items"], item, f"{path}[{index}]", errors)
    if isinstance(value, Mapping):
        _check_object(schema, value, path, errors)


def _check_object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: str, errors: list[str]
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if name not in value:
            errors.append(f"{_join(path, name)}: required")
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        where = _join(path, str(key))
        if key in properties:
            _check(properties[key], item, where, errors)
        elif extra is False:
            errors.append(f"{where}: unknown property; {_properties_text(properties)}")
        elif isinstance(extra, Mapping):
            _check(extra, item, where, errors)


def _properties_text(properties: Mapping[str, Any]) -> str:
    if not properties:
        return "there are none"
    return f"the properties are: {', '.join(map(str, properties))}"


def _check_top(schema: Mapping[str, Any], arguments: Mapping[str, Any], errors: list[str]) -> None:
    required = schema.get("required")
    if isinstance(required, list):
        errors.extend(
            f"{n}: required" for n in required if isinstance(n, str) and n not in arguments
        )
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for key, item in arguments.items():
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            _type_fits(sub, item, str(key), errors)


def _type_fits(schema: Mapping[str, Any], value: Any, path: str, errors: list[str]) -> bool:
    """Whether `value` has one of the schema's types (any, when it names none it knows);
    records the error when not."""
    if value is None and schema.get("nullable") is True:
        return True
    declared = schema.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    known = [k for k in kinds if isinstance(k, str) and k in _TYPE_NAMES]
    if not known or len(known) != len(kinds) or any(_is(value, k) for k in known):
        return True
    wanted = " or ".join(_TYPE_NAMES[k] for k in known)
    errors.append(f"{path or '(arguments)'}: expected {wanted}, got {_show(value)}")
    return False


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    return isinstance(value, int | float)  # number


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
