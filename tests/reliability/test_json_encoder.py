"""`handrail._util.json_encoder`: the text ``json.dumps`` gives with the same options.

Responses, digests, the request log and the storable check encode with it; a digest that
changed its text would make every stored approval stale, and a response that changed its bytes
would break clients that compare them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail._util import json_encoder

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


@pytest.mark.parametrize("options", OPTIONS)
@settings(max_examples=150, deadline=None)
@given(value=VALUES)
def test_the_same_text_as_json_dumps(options: dict[str, Any], value: Any) -> None:
    assert json_encoder(**options)(value) == json.dumps(value, **options)


@pytest.mark.parametrize(
    "value",
    ["plain", "é \u2028 \x00 \ud800", 1.5, 10**30, True, None, [], {}, {"b": 1, "a": [1.0]}],
)
@pytest.mark.parametrize("options", OPTIONS)
def test_top_level_values(options: dict[str, Any], value: Any) -> None:
    assert json_encoder(**options)(value) == json.dumps(value, **options)


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
