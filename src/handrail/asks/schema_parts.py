"""Small builders of JSON Schema fragments, shared by the ask input schemas and the published
documents (`handrail.asks.schemas`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .limits import (
    ASK_LIMITS,
)

JsonSchema = dict[str, Any]

#: Plain ASCII patterns of a date and a time default.
_DATE_PATTERN: Final = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIME_PATTERN: Final = "^[0-9]{2}:[0-9]{2}$"

# ---------------------------------------------------------------------------------------------
# Small builders
# ---------------------------------------------------------------------------------------------


def _string(
    description: str | None = None,
    *,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
) -> JsonSchema:
    schema: JsonSchema = {"type": "string"}
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if pattern is not None:
        schema["pattern"] = pattern
    if description is not None:
        schema["description"] = description
    return schema


def _text(max_length: int, description: str | None = None) -> JsonSchema:
    """A text field of the protocol: at least one character, at most `max_length`."""
    return _string(description, min_length=1, max_length=max_length)


def _integer(description: str, *, minimum: int, maximum: int) -> JsonSchema:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _boolean(description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "boolean"}
    if description is not None:
        schema["description"] = description
    return schema


def _enum(values: Iterable[str], description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "string", "enum": list(values)}
    if description is not None:
        schema["description"] = description
    return schema


def _const(value: str, description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "string", "const": value}
    if description is not None:
        schema["description"] = description
    return schema


def _object(
    properties: Mapping[str, JsonSchema],
    *,
    required: Iterable[str] = (),
    title: str | None = None,
    description: str | None = None,
) -> JsonSchema:
    """A strict object: no key beyond `properties`."""
    schema: JsonSchema = {"type": "object"}
    if title is not None:
        schema["title"] = title
    if description is not None:
        schema["description"] = description
    schema["properties"] = dict(properties)
    required_keys = list(required)
    if required_keys:
        schema["required"] = required_keys
    schema["additionalProperties"] = False
    return schema


def _array(
    items: JsonSchema,
    *,
    min_items: int | None = None,
    max_items: int | None = None,
    description: str | None = None,
) -> JsonSchema:
    schema: JsonSchema = {"type": "array", "items": items}
    if min_items is not None:
        schema["minItems"] = min_items
    if max_items is not None:
        schema["maxItems"] = max_items
    if description is not None:
        schema["description"] = description
    return schema


_OPTION_ID_MAX: Final[int] = ASK_LIMITS["choice"]["optionIdMaxLength"]
_ID_RULE: Final = (
    f"1-{_OPTION_ID_MAX} lowercase letters, digits, '_' or '-', starting with a letter or digit"
)


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)
