"""Properties: the reference parser, the input checker and the compiler never fail any other
way than documented, whatever they are given."""

from __future__ import annotations

import copy
from typing import Any

from action_helpers import ENV, dump, reference_config
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.actions import ActionConfigError, load_action_set
from handrail.actions.inputs import check_input
from handrail.actions.refs import Ref, RefError, format_path, parse_path, parse_ref

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
segments = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True), st.integers(min_value=0, max_value=99)
)


@given(st.lists(segments, max_size=5))
def test_paths_round_trip(path: list[str | int]) -> None:
    assert parse_path(format_path(path)) == tuple(path)


@given(st.text(max_size=30) | json_values)
def test_parse_ref_gives_a_ref_or_a_ref_error(value: Any) -> None:
    code = None
    try:
        assert isinstance(parse_ref(value), Ref)
    except RefError as exc:
        code = exc.code
    assert code in (None, "CONFIG_MAPPING_INVALID", "CONFIG_SCHEMA_INVALID")


@given(json_values)
def test_check_input_never_raises(value: Any) -> None:
    schema = reference_config()["tools"][1]["input"]
    problems = check_input(schema, value)
    assert all(isinstance(p, str) for p in problems)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


PATHS = _paths(reference_config())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PATHS), json_values | st.just("$.input.x") | st.just("$.deps.y.z"))
def test_any_changed_value_compiles_or_is_reported(path: tuple[Any, ...], value: Any) -> None:
    config = copy.deepcopy(reference_config())
    target: Any = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    codes = ["CONFIG_"]
    try:
        load_action_set(dump(config), env=ENV)
    except ActionConfigError as exc:
        codes = [p.code for p in exc.problems]
    assert codes
    assert all(code.startswith("CONFIG_") for code in codes)
