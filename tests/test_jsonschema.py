"""The shared tool-input checker: its two modes, where they agree and where they differ."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail._jsonschema import KEYWORDS, check_instance

ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 2, "pattern": "^[A-Z]"},
        "count": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "size": {"enum": ["S", "M"]},
        "note": {"type": "string", "nullable": True, "maxLength": 1},
        "where": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
            "additionalProperties": False,
        },
    },
    "required": ["title", "count"],
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ({"title": "Tea", "count": 1}, []),
        ({"count": 1}, ["title: required"]),
        (
            {"title": 1, "count": "3"},
            ["title: expected a string, got 1", 'count: expected an integer, got "3"'],
        ),
        ({"title": "Tea", "count": 2.0, "note": None}, []),
        ({"title": "Tea", "count": True}, ["count: expected an integer, got true"]),
        ({"title": "Tea", "count": 1, "size": "L"}, ['size: expected one of "S", "M", got "L"']),
        ({"title": "Tea", "count": 1, "tags": ["a", 2]}, ["tags[1]: expected a string, got 2"]),
        (
            {"title": "Tea", "count": 1, "where": {"y": 1}},
            ["where.x: required", "where.y: unknown property; the properties are: x"],
        ),
    ],
)
def test_both_modes_agree_on_the_common_keywords(
    strict: bool, value: dict[str, Any], errors: list[str]
) -> None:
    assert check_instance(ORDER, value, strict=strict) == errors


@pytest.mark.parametrize(
    ("value", "strict_errors"),
    [
        (
            {"title": "t", "count": 1},
            ["title: needs at least 2 characters", "title: does not match the pattern ^[A-Z]"],
        ),
        ({"title": "Tea", "count": 0}, ["count: must be at least 1, got 0"]),
        ({"title": "Tea", "count": 1, "tags": ["a", "b", "c"]}, ["tags: takes at most 2 items"]),
        (
            {"title": "Tea", "count": 1, "other": 1},
            ["other: unknown property; the properties are: title, count, tags, size, note, where"],
        ),
    ],
)
def test_only_the_strict_mode_checks_constraints_and_closes_the_top(
    value: dict[str, Any], strict_errors: list[str]
) -> None:
    assert check_instance(ORDER, value, strict=True) == strict_errors
    assert check_instance(ORDER, value, strict=False) == []


def test_a_value_that_is_not_an_object_is_refused_under_its_root_name() -> None:
    assert check_instance(ORDER, [1], strict=True) == ["(input): expected an object, got [1]"]
    assert check_instance({}, "x" * 100, strict=False, root="(arguments)") == [
        '(arguments): expected an object, got "' + "x" * 58 + "…"
    ]
    assert check_instance("not a schema", {}, strict=True) == []


def test_strict_const_and_nullable() -> None:
    schema = {"properties": {"k": {"const": 1}, "n": {"enum": ["a"], "nullable": True}}}
    assert check_instance(schema, {"k": 2, "n": None}, strict=True) == ["k: expected 1, got 2"]
    assert check_instance(schema, {"k": True}, strict=True) == ["k: expected 1, got true"]


def test_the_tolerant_mode_checks_an_unknown_schema_only_at_the_top() -> None:
    odd = {
        "properties": {
            "a": {"anyOf": [{"type": "string"}]},
            "b": {"type": "integer"},
            "c": {"type": "object", "properties": {"d": {"type": "string"}}},
            "n": {"type": "integer", "nullable": True},
        },
        "required": ["a", 7],
        "additionalProperties": False,
        "patternProperties": {},
    }
    value = {"b": "1", "c": {"d": 1}, "n": None, "zz": 1}
    assert check_instance(odd, value, strict=False) == [
        "a: required",
        'b: expected an integer, got "1"',
    ]


def test_numbers_and_arrays_differ_between_modes() -> None:
    schema = {"properties": {"x": {"type": "number"}, "xs": {"type": "array"}}}
    value = {"x": math.inf, "xs": (1, 2)}
    assert check_instance(schema, value, strict=False) == []
    assert check_instance(schema, value, strict=True) == [
        "x: expected a number, got Infinity",
        "xs: expected an array, got [1, 2]",
    ]


def test_keywords_are_the_action_subset() -> None:
    assert {"type", "properties", "pattern", "const", "nullable"} <= KEYWORDS
    assert "anyOf" not in KEYWORDS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)
schemas = st.recursive(
    json_values,
    lambda inner: st.dictionaries(
        st.sampled_from([*sorted(KEYWORDS), "anyOf"]),
        inner | st.sampled_from(["object", "integer"]),
    ),
    max_leaves=12,
)


@given(schema=schemas, value=json_values)
def test_the_tolerant_mode_never_raises(schema: Any, value: Any) -> None:
    errors = check_instance(schema, value, strict=False)
    assert all(isinstance(e, str) for e in errors)
