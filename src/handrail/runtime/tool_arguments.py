"""Checking a tool call's arguments against its input schema, before the tool runs.

`check_arguments` is the tolerant mode of `handrail._jsonschema.check_instance`: schemas of the
JSON Schema subset that `input_schema_from_function` emits are checked whole; it returns
sentences the model can act on, and never raises, whatever the schema.
"""

from __future__ import annotations

from typing import Any

from .._jsonschema import check_instance

__all__ = ["check_arguments"]


def check_arguments(schema: Any, arguments: Any, *, bounds: bool = False) -> list[str]:
    """What is wrong with `arguments` for the input `schema`, as sentences such as
    ``title: required`` or ``count: expected an integer, got "3"``; empty when they fit.

    Schemas made of the keywords `input_schema_from_function` emits (``type``, ``enum``,
    ``required``, ``additionalProperties``, ``items``, ``properties``, plus OpenAPI's
    ``nullable``) are checked whole, at every depth. Any other schema (hand-written, with
    ``anyOf``, ``$ref``...) gets only its ``required`` names and the types of its top-level
    properties checked. Nothing is coerced: ``"3"`` is not an integer, while ``3`` is a number
    and ``3.0`` an integer. Never raises, whatever the schema. ``bounds=True`` checks the
    numbers' and lengths' constraints too (`check_instance`), as for a person's edit."""
    return check_instance(schema, arguments, strict=False, root="(arguments)", bounds=bounds)
