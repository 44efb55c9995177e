"""Input schemas from type hints and docstrings, argument checks and conversion, and the
tables of docs/reference/tools.md."""

from __future__ import annotations

import enum
import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.errors import ConfigError
from handrail.policy import ToolHints, classify
from handrail.runtime.tools import (
    Tool,
    check_arguments,
    input_schema_from_function,
)

# --- schemas from type hints ----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


@dataclass
class Point:
    x: float
    y: Annotated[float, "Up is positive"] = 0.0


class Address(TypedDict):
    street: str
    city: NotRequired[str]


class Filters(TypedDict, total=False):
    tag: str
    limit: Required[Annotated[int, "At most this many"]]


@dataclass
class Shape:
    name: str
    points: list[Point]
    color: Color = Color.RED
    tags: list[str] = field(default_factory=list)


@dataclass
class Tree:
    children: list[Tree]


class FieldLike:
    """Like pydantic's ``Field(description=...)``."""

    def __init__(self, description: str) -> None:
        self.description = description


class Doc:
    """Like PEP 727's ``Doc``."""

    def __init__(self, documentation: str) -> None:
        self.documentation = documentation


POINT = {
    "type": "object",
    "properties": {
        "x": {"type": "number"},
        "y": {"type": "number", "description": "Up is positive", "default": 0.0},
    },
    "required": ["x"],
    "additionalProperties": False,
}


def probe(annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
    def value(x):  # type: ignore[no-untyped-def]
        """Probe an annotation."""
        return x

    value.__annotations__ = {"x": annotation}
    if default is not inspect.Parameter.empty:
        value.__defaults__ = (default,)
    return value


def schema_of(annotation: Any) -> Any:
    return input_schema_from_function(probe(annotation))["properties"]["x"]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Any, {}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list, {"type": "array"}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (dict, {"type": "object"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (str | None, {"type": ["string", "null"]}),
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045
        (Literal["a", "b"] | None, {"type": ["string", "null"], "enum": ["a", "b", None]}),
        (Any | None, {}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Size, {"type": "integer", "enum": [1, 2]}),
        (Annotated[str, "A title"], {"type": "string", "description": "A title"}),
        (Annotated[int, FieldLike("How many")], {"type": "integer", "description": "How many"}),
        (Annotated[int, Doc("How many")], {"type": "integer", "description": "How many"}),
        (Annotated[str, "A title"] | None, {"type": ["string", "null"], "description": "A title"}),
        (
            list[Annotated[str, "A tag"]],
            {"type": "array", "items": {"type": "string", "description": "A tag"}},
        ),
        (Point, POINT),
        (Point | None, {**POINT, "type": ["object", "null"]}),
        (
            Address,
            {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                "required": ["street"],
                "additionalProperties": False,
            },
        ),
        (
            Filters,
            {
                "type": "object",
                "properties": {
                    "tag": {"type": "string"},
                    "limit": {"type": "integer", "description": "At most this many"},
                },
                "required": ["limit"],
                "additionalProperties": False,
            },
        ),
        (
            Shape,
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "points": {"type": "array", "items": POINT},
                    "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                },
                "required": ["name", "points"],
                "additionalProperties": False,
            },
        ),
    ],
    ids=lambda value: "schema" if isinstance(value, dict) else repr(value),
)
def test_each_supported_annotation_gives_its_schema(annotation: Any, expected: Any) -> None:
    assert schema_of(annotation) == expected


def test_a_whole_schema_with_defaults_and_a_google_docstring() -> None:
    def find(
        query: str,
        limit: int = 10,
        color: Color = Color.GREEN,
        tags: list[str] | None = None,
        exact: Annotated[bool, "Match the whole title"] = False,
        where: Point | None = None,
    ) -> list[str]:
        """Find notes.

        Searches titles and bodies.

        Args:
            query: The words to look for,
                all of them.
            limit (int): At most this many.
            exact: Overridden by the annotation.

        Returns:
            The titles.
        """
        return []

    found = Tool.from_function(find)
    assert found.name == "find"
    assert found.description == "Find notes."
    assert found.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The words to look for, all of them."},
            "limit": {"type": "integer", "description": "At most this many.", "default": 10},
            "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "default": None},
            "exact": {
                "type": "boolean",
                "description": "Match the whole title",
                "default": False,
            },
            "where": {**POINT, "type": ["object", "null"], "default": None},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_numpy_and_sphinx_docstrings_describe_parameters() -> None:
    def numpy_style(title: str, body: str = "") -> str:
        """Add a note.

        Parameters
        ----------
        title : str
            A short title.
        body : str, optional
            The note
            itself.

        Returns
        -------
        str
        """
        return title

    def sphinx_style(title: str) -> str:
        """Add a note.

        :param title: A short title.
        :returns: a message.
        """
        return title

    numpy = input_schema_from_function(numpy_style)["properties"]
    assert numpy == {
        "title": {"type": "string", "description": "A short title."},
        "body": {"type": "string", "description": "The note itself.", "default": ""},
    }
    sphinx = input_schema_from_function(sphinx_style)["properties"]
    assert sphinx == {"title": {"type": "string", "description": "A short title."}}


@pytest.mark.parametrize(
    "annotation",
    [set[int], tuple[int, str], int | str, dict[int, str], bytes, complex, Tree, Literal[b"x"]],
    ids=repr,
)
def test_unsupported_annotations_are_refused_naming_the_parameter(annotation: Any) -> None:
    with pytest.raises(ConfigError, match=r"^parameter 'x[.'].* \(in probe\.<locals>\.value\)$"):
        input_schema_from_function(probe(annotation))


def test_refused_parameters() -> None:
    def no_hint(x) -> None:  # type: ignore[no-untyped-def]
        """No hint."""

    def star_args(*items: str) -> None:
        """Star args."""

    def star_kwargs(**options: str) -> None:
        """Star kwargs."""

    def positional(x: int, /) -> None:
        """Positional only."""

    cases = [
        (no_hint, "parameter 'x' of .*no_hint has no type annotation"),
        (star_args, r"parameter 'items' of .*star_args: a tool takes named parameters only"),
        (star_kwargs, r"parameter 'options' of .*star_kwargs: .* not \*\*options"),
        (positional, "parameter 'x' of .*positional is positional-only"),
    ]
    for function, message in cases:
        with pytest.raises(ConfigError, match=message):
            Tool.from_function(function)


def test_unsupported_nested_field_is_named_with_its_path() -> None:
    @dataclass
    class Bad:
        when: bytes

    with pytest.raises(ConfigError, match=r"parameter 'x\.when' has the type bytes"):
        input_schema_from_function(probe(Bad))


# --- argument checks -----------------------------------------------------------------------


def order(
    title: str,
    count: int,
    ratio: float = 1.0,
    color: Color = Color.RED,
    tags: list[str] | None = None,
    where: Point | None = None,
    scores: dict[str, int] | None = None,
    note: Optional[str] = None,  # noqa: UP045
) -> None:
    """Order something."""


ORDER = input_schema_from_function(order)


@pytest.mark.parametrize(
    ("arguments", "errors"),
    [
        ({"title": "Tea", "count": 3}, []),
        ({"title": "Tea", "count": 3.0, "ratio": 2}, []),
        ({"title": "Tea", "count": 3, "tags": None, "where": None, "note": None}, []),
        ({}, ["title: required", "count: required"]),
        ({"title": "Tea", "count": "3"}, ['count: expected an integer, got "3"']),
        ({"title": "Tea", "count": 3.5}, ["count: expected an integer, got 3.5"]),
        ({"title": "Tea", "count": True}, ["count: expected an integer, got true"]),
        ({"title": "Tea", "count": 1, "ratio": "1"}, ['ratio: expected a number, got "1"']),
        ({"title": None, "count": 1}, ["title: expected a string, got null"]),
        (
            {"title": "Tea", "count": 1, "color": "blue"},
            ['color: expected one of "red", "green", got "blue"'],
        ),
        (
            {"title": "Tea", "count": 1, "tags": ["a", 2]},
            ["tags[1]: expected a string, got 2"],
        ),
        (
            {"title": "Tea", "count": 1, "tags": "a"},
            ['tags: expected an array or null, got "a"'],
        ),
        (
            {"title": "Tea", "count": 1, "where": {"y": 1, "z": 0}},
            [
                "where.x: required",
                "where.z: unknown property; the properties are: x, y",
            ],
        ),
        (
            {"title": "Tea", "count": 1, "scores": {"a": 1, "b c": "2"}},
            ['scores["b c"]: expected an integer, got "2"'],
        ),
        (
            {"title": "Tea", "count": 1, "colour": "red"},
            [
                "colour: unknown property; the properties are: title, count, ratio, color, "
                "tags, where, scores, note"
            ],
        ),
    ],
)
def test_check_arguments(arguments: dict[str, Any], errors: list[str]) -> None:
    assert check_arguments(ORDER, arguments) == errors


def test_arguments_that_are_not_an_object() -> None:
    assert check_arguments(ORDER, [1]) == ["(arguments): expected an object, got [1]"]
    assert check_arguments(ORDER, "x" * 100) == [
        '(arguments): expected an object, got "' + "x" * 58 + "…"
    ]


def test_hand_written_schemas_are_checked_as_far_as_understood() -> None:
    simple = {
        "type": "object",
        "properties": {"title": {"type": "string", "maxLength": 3}, "n": {"nullable": True}},
        "required": ["title"],
    }
    # Only the subset's keywords: checked whole, without additionalProperties: false.
    assert check_arguments(simple, {"title": "long title", "other": 1, "n": None}) == []
    assert check_arguments(simple, {"title": 1}) == ["title: expected a string, got 1"]
    odd = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "b": {"type": "integer"},
            "c": {"type": "object", "properties": {"d": {"type": "string"}}},
        },
        "required": ["a", 7],
        "patternProperties": {"^z": {"type": "string"}},
        "additionalProperties": False,
    }
    # Anything else: only `required` and the top-level property types.
    assert check_arguments(odd, {"b": "1", "c": {"d": 1}, "zz": 1}) == [
        "a: required",
        'b: expected an integer, got "1"',
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)
schema_keys = st.sampled_from(
    ["type", "enum", "required", "properties", "items", "additionalProperties", "nullable", "x"]
)
schemas = st.recursive(
    json_values,
    lambda inner: st.dictionaries(schema_keys, inner | st.sampled_from(["object", "integer"])),
    max_leaves=12,
)


@given(schema=schemas, arguments=json_values)
def test_check_arguments_never_raises(schema: Any, arguments: Any) -> None:
    errors = check_arguments(schema, arguments)
    assert isinstance(errors, list)
    assert all(isinstance(e, str) for e in errors)


async def test_arguments_become_the_annotated_types_and_results_become_json() -> None:
    seen: list[Any] = []

    def draw(shape: Shape, size: Size, count: int, ratio: float = 1.0) -> Shape:
        """Draw a shape."""
        seen.extend([shape, size, count, ratio])
        return shape

    result = await Tool.from_function(draw).run(
        {
            "shape": {"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3}], "color": "green"},
            "size": 2,
            "count": 4.0,
            "ratio": 2,
        }
    )
    shape = Shape(name="tri", points=[Point(x=1), Point(x=2, y=3)], color=Color.GREEN)
    assert seen == [shape, Size.LARGE, 4, 2.0]
    assert [type(v) for v in seen] == [Shape, Size, int, float]
    assert result == {
        "name": "tri",
        "points": [{"x": 1, "y": 0.0}, {"x": 2, "y": 3}],
        "color": "green",
        "tags": [],
    }


# --- the reference keeps true ------------------------------------------------------------------

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "tools.md"


@dataclass
class DocPoint:
    x: float
    y: float = 0.0


DOC_NAMES: dict[str, Any] = {
    "Any": Any,
    "Annotated": Annotated,
    "Literal": Literal,
    "Color": Color,
    "Point": DocPoint,
    "Address": Address,
}


def reference_table(header: str) -> list[list[str]]:
    """The rows of the table of docs/reference/tools.md whose header line is `header`, as the
    first code span of each cell (``\\|`` unescaped)."""
    lines = REFERENCE.read_text(encoding="utf-8").splitlines()
    start = lines.index(header) + 2
    rows: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        spans = [re.search(r"`([^`]*)`", cell) for cell in cells]
        rows.append(
            [
                m[1].replace("\\|", "|") if m else cell.strip()
                for m, cell in zip(spans, cells, strict=True)
            ]
        )
    return rows


def test_the_reference_annotation_table_is_true() -> None:
    rows = reference_table("| annotation | schema |")
    assert len(rows) == 16
    for annotation, schema in rows:
        assert schema_of(eval(annotation, DOC_NAMES)) == json.loads(schema), annotation


def test_the_reference_hints_table_is_true() -> None:
    rows = reference_table("| hints | class | rule |")
    assert len(rows) == 9
    for hints, safety, _ in rows:
        declared = {} if hints == "(none)" else eval(f"dict({hints})")
        assert classify(ToolHints(**declared)) == safety, hints
