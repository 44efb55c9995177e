"""Regressions found by auditing the asks package against spec/agent-ui-asks.md.

choice: 'A "many" ask fails with RANGE_INVALID when maxSelected is more than the choices it
offers, or minSelected is more than maxSelected or the choices it offers.' Each half of that
rule holds on its own: a maxSelected that is itself out of range does not hide a minSelected
above the choices offered. And 'With "many", at most maxSelected ids (SELECTION_COUNT)' counts
a default against the maxSelected the ask sets, even one above what it offers.
"""

from __future__ import annotations

from typing import Any

import pytest

from handrail.asks import validate_ask_input


def _pairs(input: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.code) for e in validate_ask_input("choice", input)]


def _many(**extra: Any) -> dict[str, Any]:
    return {
        "prompt": "Which toppings?",
        "select": "many",
        "options": [
            {"id": "cheese", "label": "Cheese"},
            {"id": "olives", "label": "Olives"},
            {"id": "peppers", "label": "Peppers"},
        ],
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(
            {"minSelected": 5, "maxSelected": 4},
            [("maxSelected", "RANGE_INVALID"), ("minSelected", "RANGE_INVALID")],
            id="max-above-choices",
        ),
        pytest.param(
            {"minSelected": 5, "maxSelected": 60},
            [("maxSelected", "RANGE_INVALID"), ("minSelected", "RANGE_INVALID")],
            id="max-above-its-cap",
        ),
        pytest.param(
            {"minSelected": 5, "maxSelected": "4"},
            [("maxSelected", "INVALID_TYPE"), ("minSelected", "RANGE_INVALID")],
            id="max-not-a-number",
        ),
        pytest.param(
            {"minSelected": 5, "maxSelected": 5, "allowOther": True},
            [("maxSelected", "RANGE_INVALID"), ("minSelected", "RANGE_INVALID")],
            id="max-above-choices-with-other",
        ),
    ],
)
def test_min_selected_above_the_choices_offered_fails_whatever_max_selected_is(
    extra: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _pairs(_many(**extra)) == expected


def test_min_selected_within_the_choices_offered_passes_beside_a_bad_max_selected() -> None:
    # 3 choices: minSelected 3 is fine; only maxSelected 4 is wrong.
    assert _pairs(_many(minSelected=3, maxSelected=4)) == [("maxSelected", "RANGE_INVALID")]
    # Other counts as a choice: 4 choices, so minSelected 4 is fine.
    assert _pairs(_many(minSelected=4, maxSelected=5, allowOther=True)) == [
        ("maxSelected", "RANGE_INVALID")
    ]


def test_min_selected_message_names_the_bound_it_broke() -> None:
    errors = validate_ask_input("choice", _many(minSelected=5, maxSelected=4))
    (error,) = [e for e in errors if e.path == "minSelected"]
    assert "3" in error.message
    assert "3" in error.fix


def test_min_and_max_selected_within_bounds_still_pass() -> None:
    assert _pairs(_many(minSelected=3)) == []
    assert _pairs(_many(minSelected=2, maxSelected=3)) == []
    assert _pairs(_many(minSelected=4, allowOther=True)) == []


def test_a_default_longer_than_an_out_of_range_max_selected_is_a_selection_count() -> None:
    # maxSelected 4 is more than the 3 choices offered (RANGE_INVALID), and the default lists 5
    # ids, more than that maxSelected (SELECTION_COUNT); its extra ids are repeats.
    input = _many(maxSelected=4, default=["cheese", "olives", "peppers", "cheese", "olives"])

    assert _pairs(input) == [
        ("default", "SELECTION_COUNT"),
        ("default[3]", "DUPLICATE_ID"),
        ("default[4]", "DUPLICATE_ID"),
        ("maxSelected", "RANGE_INVALID"),
    ]


def test_a_default_within_an_out_of_range_max_selected_is_not_a_selection_count() -> None:
    input = _many(maxSelected=4, default=["cheese", "olives", "peppers"])

    assert _pairs(input) == [("maxSelected", "RANGE_INVALID")]
