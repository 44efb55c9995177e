"""`handrail._util.json_encoder`: the text ``json.dumps`` gives with the same options.

Responses, digests, the request log and the storable check encode with it; a digest that
changed its text would make every stored approval stale, so digests (sorted keys) stay the
standard library's. The compact encoder (``separators=(",", ":")``, ``ensure_ascii=False``,
unsorted: responses, events, stored JSON) and `compact_json_bytes` are orjson's, with the same
text but for some floats written in another form of the same number (``1.5e-7`` for
``1.5e-07``, ``0.00001`` for ``1e-05``) and NaN and the infinities (``null``); what orjson does
not take goes to the standard library's encoder.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail._util import compact_json_bytes, json_encoder

OPTIONS: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False},
    {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":")},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False},
    {"sort_keys": True, "separators": (", ", ": ")},
]

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


COMPACT: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":")}


def _float_written_otherwise(value: Any) -> bool:
    """Whether `value` holds a float that orjson writes in another form than ``repr`` (the
    same number: ``1.5e-7`` for ``1.5e-07``)."""
    if isinstance(value, float):
        return orjson.dumps(value).decode() != repr(value)
    if isinstance(value, dict):
        return any(_float_written_otherwise(v) for v in value.values())
    if isinstance(value, list):
        return any(_float_written_otherwise(v) for v in value)
    return False


def assert_same(ours: str, value: Any, options: dict[str, Any]) -> None:
    """`ours` is ``json.dumps``'s text, or differs from it only in how such a float is
    written."""
    expected = json.dumps(value, **options)
    if ours != expected:
        assert _float_written_otherwise(value)
        assert json.loads(ours) == json.loads(expected)


@pytest.mark.parametrize("options", OPTIONS)
@settings(max_examples=150, deadline=None)
@given(value=VALUES)
def test_the_same_text_as_json_dumps(options: dict[str, Any], value: Any) -> None:
    assert_same(json_encoder(**options)(value), value, options)


@settings(max_examples=150, deadline=None)
@given(value=VALUES)
def test_compact_bytes_are_the_compact_text_in_utf8(value: Any) -> None:
    ours = compact_json_bytes(value)
    assert isinstance(ours, bytes)
    assert_same(ours.decode("utf-8"), value, COMPACT)


@pytest.mark.parametrize(
    "value",
    ["plain", "é \u2028 \x00 \ud800", 1.5, 10**30, True, None, [], {}, {"b": 1, "a": [1.0]}],
)
@pytest.mark.parametrize("options", OPTIONS)
def test_top_level_values(options: dict[str, Any], value: Any) -> None:
    assert json_encoder(**options)(value) == json.dumps(value, **options)


def test_some_floats_are_written_in_another_form_in_compact_text() -> None:
    value = [1.5e-07, 1e-05, 1e16, 0.1]
    assert json_encoder(**COMPACT)(value) == "[1.5e-7,0.00001,1e+16,0.1]"
    assert json.dumps(value, **COMPACT) == "[1.5e-07,1e-05,1e+16,0.1]"
    assert json.loads(json_encoder(**COMPACT)(value)) == value


def test_nan_and_the_infinities_are_null_in_compact_text() -> None:
    """JSON has no such numbers: compact text writes null where ``json.dumps`` writes NaN
    (which no JSON parser but Python's reads) or raises."""
    value = {"a": math.nan, "b": [math.inf, -math.inf]}
    assert json_encoder(**COMPACT, allow_nan=False)(value) == '{"a":null,"b":[null,null]}'
    assert compact_json_bytes(value) == b'{"a":null,"b":[null,null]}'


@pytest.mark.parametrize(
    "value",
    [
        {1: "a", None: [True]},  # keys that are not strings: json.dumps makes them strings
        {"big": 2**70, "small": -(2**70)},  # past 64 bits
        ["\ud800 lone", {"k\udfff": 1}],  # lone surrogates: text, not UTF-8
    ],
)
def test_what_orjson_does_not_take_is_the_standard_librarys_text(value: Any) -> None:
    assert json_encoder(**COMPACT)(value) == json.dumps(value, **COMPACT)


def test_deep_values_are_the_standard_librarys_text() -> None:
    deep: Any = "leaf"
    for _ in range(400):  # orjson stops at 255 levels
        deep = [deep]
    assert json_encoder(**COMPACT)(deep) == json.dumps(deep, **COMPACT)
    assert compact_json_bytes(deep) == json.dumps(deep, **COMPACT).encode()


def test_compact_bytes_refuse_what_they_cannot_write() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (
        {"at": dt.datetime(2026, 12, 7, tzinfo=dt.UTC)},
        [Point(1)],
        {"raw": b"bytes"},
        {"a": object()},
    ):
        with pytest.raises(TypeError):
            compact_json_bytes(value)
        with pytest.raises(TypeError):
            json_encoder(**COMPACT)(value)
    with pytest.raises(ValueError, match="not JSON compliant"):
        compact_json_bytes({1: math.nan})  # the standard library's, which refuses NaN here
    with pytest.raises(UnicodeEncodeError):
        compact_json_bytes({"text": "\ud800"})


def test_what_json_dumps_refuses_is_refused() -> None:
    strict = json_encoder(allow_nan=False)
    for bad in (math.nan, [math.inf], {"a": -math.inf}):
        with pytest.raises(ValueError, match="not JSON compliant"):
            strict(bad)
    assert json_encoder()([math.nan, math.inf]) == json.dumps([math.nan, math.inf])
    with pytest.raises(TypeError):
        json_encoder()({"a": object()})
    with pytest.raises(TypeError):
        json_encoder()({(1, 2): 1})


def test_an_error_leaves_nothing_behind() -> None:
    """After a refused value, the same objects encode (the C encoder's circular check would
    keep the object it was in and refuse them)."""
    encode = json_encoder()
    inner = {"x": 1}
    with pytest.raises(TypeError):
        encode({"inner": inner, "bad": object()})
    assert encode({"inner": inner}) == '{"inner": {"x": 1}}'
