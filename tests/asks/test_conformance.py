"""The shared conformance fixtures: every valid ask validates and derives its simple card, and
every invalid ask returns exactly its errors, in order.

Each file is its own case (``valid_fixture`` / ``invalid_fixture`` come from tests/conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from handrail.asks import to_simple_card, validate_ask_input

# Fixtures whose errors the spec makes true only on the compact surface. The spec wins over a
# fixture ("implement the spec, not the fixtures"):
#
# - choice-select-many.json is a plain `select: "many"` ask with two options. The choice table
#   allows "one" or "many"; only the Compact surface section narrows `select` to "one"
#   (INVALID_ENUM). So its INVALID_ENUM holds on the compact surface, and on the full surface
#   the ask is valid.
COMPACT_ONLY_ERRORS = frozenset({"choice-select-many.json"})


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _pairs(errors: list[Any]) -> list[tuple[str, str]]:
    return [(e.path, e.code) for e in errors]


def test_valid_fixture_validates_and_gives_its_card(valid_fixture: Path) -> None:
    case = _load(valid_fixture)

    assert validate_ask_input(case["kind"], case["input"]) == []
    assert to_simple_card(case["kind"], case["input"], "call_fixture") == case["simple"]


def test_invalid_fixture_returns_exactly_its_errors(invalid_fixture: Path) -> None:
    case = _load(invalid_fixture)
    surface = "compact" if invalid_fixture.name in COMPACT_ONLY_ERRORS else "full"
    expected = [(e["path"], e["code"]) for e in case["errors"]]

    errors = validate_ask_input(case["kind"], case["input"], surface=surface)

    assert _pairs(errors) == expected


def test_select_many_fixture_is_compact_only(conformance_dir: Path) -> None:
    # See COMPACT_ONLY_ERRORS: select "many" is an INVALID_ENUM only where the Compact surface
    # section narrows select to "one"; the full choice schema allows it.
    case = _load(conformance_dir / "invalid" / "choice-select-many.json")

    compact = validate_ask_input(case["kind"], case["input"], surface="compact")
    full = validate_ask_input(case["kind"], case["input"], surface="full")

    assert _pairs(compact) == [(e["path"], e["code"]) for e in case["errors"]]
    assert full == []


def test_every_fixture_error_has_a_message_and_a_fix(invalid_fixture: Path) -> None:
    case = _load(invalid_fixture)
    for surface in ("full", "compact"):
        for error in validate_ask_input(case["kind"], case["input"], surface=surface):
            assert error.message.strip()
            assert error.fix.strip()
