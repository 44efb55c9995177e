"""The pure policy: hints → safety class, and levels and grants → a decision."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.policy import (
    PERMISSION_LEVELS,
    SAFETY_CLASSES,
    ToolHints,
    allowed_without_asking,
    classify,
    decide,
    stricter,
)

TRI = (None, True, False)
HINT_FIELDS = (
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "consequential",
    "untrusted_content",
    "skill",
)

hints_strategy = st.builds(ToolHints, **{name: st.sampled_from(TRI) for name in HINT_FIELDS})


def test_the_notes_application_classes() -> None:
    list_notes = ToolHints(read_only=True, open_world=False)
    add_note = ToolHints(read_only=False, consequential=False, open_world=False)
    delete_note = ToolHints(consequential=True, destructive=True, open_world=False)
    house_style = ToolHints(read_only=True, skill=True, open_world=False)
    assert [classify(h) for h in (list_notes, add_note, delete_note, house_style)] == [
        "read-only",
        "mutating",
        "consequential",
        "read-only",
    ]


def test_declaring_nothing_is_consequential() -> None:
    assert not ToolHints().declared
    assert classify(ToolHints()) == "consequential"


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        (ToolHints(open_world=False), "consequential"),  # MCP: destructiveHint defaults true
        (ToolHints(idempotent=True), "consequential"),
        (ToolHints(destructive=False), "mutating"),
        (ToolHints(read_only=False, destructive=False), "mutating"),
        (ToolHints(read_only=True, destructive=True), "read-only"),  # destructive needs a write
        (ToolHints(read_only=True, consequential=True), "consequential"),
        (ToolHints(destructive=True, consequential=False), "consequential"),
        (ToolHints(skill=True), "read-only"),
        (ToolHints(skill=True, read_only=False), "consequential"),
        (ToolHints(untrusted_content=True), "consequential"),
        (ToolHints(untrusted_content=False, consequential=False), "mutating"),
    ],
)
def test_hint_combinations(hints: ToolHints, expected: str) -> None:
    assert classify(hints) == expected


def test_every_combination_of_declared_and_undeclared_hints() -> None:
    """All 3^7 combinations: the class is always one of the three, undeclared-only is
    consequential, and consequentialHint true always wins."""
    for values in itertools.product(TRI, repeat=len(HINT_FIELDS)):
        hints = ToolHints(**dict(zip(HINT_FIELDS, values, strict=True)))
        result = classify(hints)
        assert result in SAFETY_CLASSES
        if not hints.declared:
            assert result == "consequential"
        if hints.consequential is True:
            assert result == "consequential"
        if result == "read-only":
            assert hints.read_only is True or hints.skill is True


@given(hints_strategy)
def test_untrusted_hints_never_loosen(hints: ToolHints) -> None:
    assert stricter(classify(hints, trusted=False), classify(hints)) == classify(
        hints, trusted=False
    )
    assert classify(hints, trusted=False) == "consequential"


@given(hints_strategy)
def test_annotations_round_trip(hints: ToolHints) -> None:
    assert ToolHints.from_annotations(hints.to_annotations()) == hints


def test_annotations_ignore_non_booleans() -> None:
    assert ToolHints.from_annotations({"readOnlyHint": "yes", "destructiveHint": 0}) == ToolHints()
    assert ToolHints.from_annotations(None) == ToolHints()


@pytest.mark.parametrize(
    ("safety", "level", "expected"),
    [
        ("read-only", "ask", False),
        ("mutating", "ask", False),
        ("consequential", "ask", False),
        ("read-only", "read-only", True),
        ("mutating", "read-only", False),
        ("consequential", "read-only", False),
        ("read-only", "non-consequential", True),
        ("mutating", "non-consequential", True),
        ("consequential", "non-consequential", False),
    ],
)
def test_levels(safety: str, level: str, expected: bool) -> None:
    assert allowed_without_asking(safety, level) is expected  # type: ignore[arg-type]
    action = decide(safety, level=level).action  # type: ignore[arg-type]
    assert action == ("allow" if expected else "ask")


def test_no_saved_level_asks_for_one_first() -> None:
    for safety in SAFETY_CLASSES:
        assert decide(safety, level=None).action == "permission"


def test_a_grant_allows_that_tool_at_any_level() -> None:
    for safety, level in itertools.product(SAFETY_CLASSES, PERMISSION_LEVELS):
        assert decide(safety, level=level, granted=True).action == "allow"


def test_asks_off_denies_what_would_ask() -> None:
    decision = decide("consequential", level="non-consequential", asks_enabled=False)
    assert decision.action == "deny"
    assert "approval" in decision.reason
    assert decide("read-only", level="read-only", asks_enabled=False).action == "allow"
    assert decide("read-only", level=None, asks_enabled=False).action == "deny"


def test_a_clarify_step_runs_only_read_only_tools() -> None:
    for safety in ("mutating", "consequential"):
        decision = decide(safety, level="non-consequential", granted=True, clarify_in_step=True)
        assert decision.action == "deny"
        assert decision.reason.startswith("clarify was called in this step")
    assert decide("read-only", level="non-consequential", clarify_in_step=True).action == "allow"


@given(
    st.sampled_from(SAFETY_CLASSES),
    st.sampled_from((None, *PERMISSION_LEVELS)),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_decide_is_total_and_consequential_never_runs_unasked(
    safety: str, level: str | None, granted: bool, asks: bool, clarify: bool
) -> None:
    decision = decide(
        safety,  # type: ignore[arg-type]
        level=level,  # type: ignore[arg-type]
        granted=granted,
        asks_enabled=asks,
        clarify_in_step=clarify,
    )
    assert decision.action in ("allow", "ask", "permission", "deny")
    assert decision.reason
    if decision.action == "allow" and safety == "consequential":
        assert granted
        assert not clarify
