"""The input schema of an action tool: checked whole when the file is compiled, and the
model's input checked against it before anything is prepared or sent.

An action tool's ``input`` is a JSON Schema object made of the keywords in `KEYWORDS`; the
compiler refuses any other keyword, so every constraint a file declares is one that is checked.
`check_input` returns sentences the model can act on (``date: required``), never raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._jsonschema import ANNOTATIONS, BOUNDS, COUNTS, KEYWORDS, TYPE_NAMES
from .._jsonschema import check_instance as _check_instance
from .._jsonschema import is_number as _is_number
from .._jsonschema import show as _show

__all__ = ["ANNOTATIONS", "KEYWORDS", "check_input", "property_schema", "schema_problems"]


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
        if not listed or not all(isinstance(k, str) and k in TYPE_NAMES for k in listed):
            out.append((_sub(path, "type"), f"expected one or more of {', '.join(TYPE_NAMES)}"))
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        out.append((_sub(path, "enum"), "expected a non-empty list of values"))
    if "nullable" in schema and not isinstance(schema["nullable"], bool):
        out.append((_sub(path, "nullable"), "expected true or false"))
    for key in COUNTS:
        if key in schema and not (_is_int(schema[key]) and schema[key] >= 0):
            out.append((_sub(path, key), "expected a whole number ≥ 0"))
    for key in BOUNDS:
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


def check_input(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with `value` for the input schema, as sentences such as ``date:
    required`` or ``count: expected an integer, got "3"``; empty when it fits. Top-level
    properties the schema does not declare are refused unless it sets
    ``additionalProperties``; deeper objects follow JSON Schema (open unless ``false``).
    Never raises."""
    return _check_instance(schema, value, strict=True, root="(input)")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
