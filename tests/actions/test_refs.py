"""References: parsing every form, resolving them by walking data, never evaluating."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.actions.refs import (
    MISSING,
    Ref,
    RefError,
    Scope,
    drop_path,
    format_path,
    get_path,
    parse_path,
    parse_ref,
    render,
)


def test_paths_parse_names_and_indexes() -> None:
    assert parse_path("$") == ()
    assert parse_path("$.a.b[0].c-d[12]") == ("a", "b", 0, "c-d", 12)
    assert format_path(("a", "b", 0)) == "$.a.b[0]"


@pytest.mark.parametrize(
    "text", ["a.b", "$.a..b", "$.a[x]", "$.a[-1]", "$.__import__('os')", "$.a b", "$[0"]
)
def test_malformed_paths_are_refused(text: str) -> None:
    with pytest.raises(RefError) as info:
        parse_path(text)
    assert info.value.code == "CONFIG_MAPPING_INVALID"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$.input.date", Ref(source="input", path=("date",))),
        ("$.input.a.b[0]", Ref(source="input", path=("a", "b", 0))),
        ("$.input", Ref(source="input")),
        ("$.deps.availability.token", Ref(source="deps", name="availability", path=("token",))),
        ("$.deps.availability", Ref(source="deps", name="availability")),
        ("$.item.time", Ref(source="item", path=("time",))),
        ({"source": "selection", "path": "$.time"}, Ref(source="selection", name="time")),
        ({"source": "secret", "env": "API_KEY"}, Ref(source="secret", name="API_KEY")),
        ({"source": "generated"}, Ref(source="generated")),
    ],
)
def test_every_reference_form_parses(value: Any, expected: Ref) -> None:
    ref = parse_ref(value)
    assert ref == expected
    assert parse_ref(ref.to_config()) == ref


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("$.date", "CONFIG_MAPPING_INVALID"),
        ("$.deps", "CONFIG_MAPPING_INVALID"),
        ("$", "CONFIG_MAPPING_INVALID"),
        ({"source": "env", "name": "X"}, "CONFIG_MAPPING_INVALID"),
        ({"source": "secret"}, "CONFIG_SCHEMA_INVALID"),
        ({"source": "secret", "env": "A-B"}, "CONFIG_SCHEMA_INVALID"),
        ({"source": "generated", "path": "$.x"}, "CONFIG_SCHEMA_INVALID"),
        ({"source": "selection", "path": "$.a.b"}, "CONFIG_MAPPING_INVALID"),
    ],
)
def test_bad_references_carry_their_code(value: Any, code: str) -> None:
    with pytest.raises(RefError) as info:
        parse_ref(value)
    assert info.value.code == code


def test_get_path_walks_mappings_and_lists_only() -> None:
    data = {"a": {"b": [10, {"c": "x"}]}, "s": "text"}
    assert get_path(data, ("a", "b", 1, "c")) == "x"
    assert get_path(data, ("a", "b", 5)) is MISSING
    assert get_path(data, ("a", "nope")) is MISSING
    assert get_path(data, ("s", 0)) is MISSING
    assert get_path(data, ("s", "upper")) is MISSING


def test_render_resolves_references_and_leaves_missing_keys_out() -> None:
    template = {
        "date": Ref(source="input", path=("date",)),
        "notes": Ref(source="input", path=("notes",)),
        "token": Ref(source="deps", name="slot", path=("token",)),
        "fact": Ref(source="selection", name="time"),
        "id": Ref(source="generated"),
        "fixed": {"kind": "table", "list": [Ref(source="input", path=("nope",)), 1]},
    }
    scope = Scope(
        input={"date": "2026-05-01"},
        deps={"slot": {"token": "t1"}},
        facts={"time": "19:00"},
        generated="g-1",
    )
    assert render(template, scope) == {
        "date": "2026-05-01",
        "token": "t1",
        "fact": "19:00",
        "id": "g-1",
        "fixed": {"kind": "table", "list": [None, 1]},
    }


def test_secrets_are_never_rendered() -> None:
    with pytest.raises(ValueError, match="send time"):
        render(Ref(source="secret", name="X"), Scope())


def test_drop_path_copies() -> None:
    data = {"a": 1, "b": {"c": 2, "d": 3}}
    assert drop_path(data, ("b", "c")) == {"a": 1, "b": {"d": 3}}
    assert drop_path(data, ("a",)) == {"b": {"c": 2, "d": 3}}
    assert drop_path(data, ("x",)) == data
    assert data == {"a": 1, "b": {"c": 2, "d": 3}}
