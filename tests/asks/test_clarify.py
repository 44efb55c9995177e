"""Clarify (``appwrite.clarify/v1``): the prompts of a ``clarify`` call, the error text the model
reads, the ``ClarifyAnswers`` of the person, the simple card and the summary.

Each rule is stated valid and invalid with the whole expected ``(path, code)`` list. The spec's
three example envelopes are fixtures; every card is checked against the published
``simpleCard`` JSON Schema from the shared conformance folder.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from handrail.asks.cards import resolve_button_answer
from handrail.asks.clarify import (
    CLARIFY_ERROR_PREFIX,
    CLARIFY_KINDS,
    CLARIFY_LIMITS,
    CLARIFY_PROTOCOL,
    CLARIFY_TOOL_NAME,
    ClarifyResult,
    clarify_answer_summary,
    clarify_error_text,
    clarify_simple_card,
    validate_clarify_answers,
    validate_clarify_prompts,
    validate_clarify_response,
)
from handrail.asks.errors import ASK_ERROR_CODES, AskValidationError, path_order

ROOT = Path(__file__).resolve().parents[2]
# The repository and shared/ are siblings (see tests/conftest.py).
SCHEMAS = ROOT.parent / "shared" / "conformance" / "terreno" / "schemas"
ASKS_REFERENCE = ROOT / "docs" / "reference" / "asks.md"

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JavaScript's trim() whitespace, spelled out so the tests do not lean on the code under test.
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
EMOJI = "\U0001f600"  # two UTF-16 code units


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def card_validator() -> Draft7Validator:
    path = SCHEMAS / "simpleCard.schema.json"
    if not path.is_file():
        pytest.fail(f"The simpleCard schema is missing: expected {path}.", pytrace=False)
    return Draft7Validator(json.loads(path.read_text("utf-8")))


CARD_SCHEMA = card_validator()


def check_card(card: dict[str, Any], envelope: Any) -> None:
    """A card is valid against the published schema, its button ids are unique, and every
    button sends an answer that validates."""
    problems = [e.message for e in CARD_SCHEMA.iter_errors(card)]
    assert problems == [], problems
    ids = [button["id"] for button in card["buttons"]]
    assert len(set(ids)) == len(ids), ids
    for button in card["buttons"]:
        assert validate_clarify_response(envelope, button["response"]) == [], button
        assert resolve_button_answer(card, button["id"]) == button["response"]


def pairs(errors: list[AskValidationError]) -> list[tuple[str, str]]:
    return [(error.path, error.code) for error in errors]


def prompt_errors(prompts: Any, title: Any = None) -> list[tuple[str, str]]:
    result = validate_clarify_prompts(prompts, title)
    return pairs(result.errors)


# --- the spec's examples ----------------------------------------------------------------------

BUCKET_CHOICE: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "title": "Which bucket?",
    "prompts": [
        {
            "id": "bucket",
            "kind": "choice",
            "question": "Which bucket should I delete?",
            "options": [
                {"id": "avatars", "label": "avatars", "description": "64 files"},
                {"id": "uploads", "label": "uploads", "description": "12 files"},
            ],
        }
    ],
}

DESTRUCTIVE_CONFIRM: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "prompts": [
        {
            "id": "confirm_delete",
            "kind": "confirm",
            "question": "Delete bucket avatars and all of its files?",
            "confirmLabel": "Delete",
            "cancelLabel": "Keep it",
            "danger": True,
            "hint": "This cannot be undone.",
        }
    ],
}

NAME_AND_REGION: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "title": "Create database",
    "prompts": [
        {"id": "name", "kind": "text", "question": "Database name", "placeholder": "main"},
        {
            "id": "id_mode",
            "kind": "choice",
            "question": "Database ID",
            "options": [
                {"id": "unique", "label": "Auto-generate (unique())"},
                {"id": "custom", "label": "I'll provide a custom ID"},
            ],
        },
    ],
}

# The same three with every default written out, in the canonical key order.
BUCKET_CHOICE_CANONICAL: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "title": "Which bucket?",
    "prompts": [
        {
            "id": "bucket",
            "kind": "choice",
            "question": "Which bucket should I delete?",
            "required": True,
            "options": [
                {"id": "avatars", "label": "avatars", "description": "64 files"},
                {"id": "uploads", "label": "uploads", "description": "12 files"},
            ],
            "allowMultiple": False,
        }
    ],
}
DESTRUCTIVE_CONFIRM_CANONICAL: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "prompts": [
        {
            "id": "confirm_delete",
            "kind": "confirm",
            "question": "Delete bucket avatars and all of its files?",
            "hint": "This cannot be undone.",
            "required": True,
            "confirmLabel": "Delete",
            "cancelLabel": "Keep it",
            "danger": True,
        }
    ],
}
NAME_AND_REGION_CANONICAL: dict[str, Any] = {
    "protocol": "appwrite.clarify/v1",
    "title": "Create database",
    "prompts": [
        {
            "id": "name",
            "kind": "text",
            "question": "Database name",
            "required": True,
            "placeholder": "main",
            "multiline": False,
        },
        {
            "id": "id_mode",
            "kind": "choice",
            "question": "Database ID",
            "required": True,
            "options": [
                {"id": "unique", "label": "Auto-generate (unique())"},
                {"id": "custom", "label": "I'll provide a custom ID"},
            ],
            "allowMultiple": False,
        },
    ],
}

EXAMPLES = [
    pytest.param(BUCKET_CHOICE, BUCKET_CHOICE_CANONICAL, id="choice"),
    pytest.param(DESTRUCTIVE_CONFIRM, DESTRUCTIVE_CONFIRM_CANONICAL, id="confirm"),
    pytest.param(NAME_AND_REGION, NAME_AND_REGION_CANONICAL, id="text-and-choice"),
]


def call(envelope: dict[str, Any]) -> ClarifyResult:
    """Validate an envelope's prompts and title as the model would send them."""
    return validate_clarify_prompts(copy.deepcopy(envelope["prompts"]), envelope.get("title"))


@pytest.mark.parametrize(("example", "canonical"), EXAMPLES)
def test_spec_examples_give_their_canonical_envelope(
    example: dict[str, Any], canonical: dict[str, Any]
) -> None:
    result = call(example)
    assert result.errors == []
    assert result.ok
    assert result.envelope == canonical
    # Key order is part of the canonical form: protocol, title, prompts; id, kind, question.
    assert json.dumps(result.envelope) == json.dumps(canonical)


@pytest.mark.parametrize(("example", "canonical"), EXAMPLES)
def test_the_canonical_envelope_is_its_own_canonical_form(
    example: dict[str, Any], canonical: dict[str, Any]
) -> None:
    assert call(canonical).envelope == canonical


def test_the_tool_result_of_a_valid_call_is_the_envelope_json() -> None:
    result = call(BUCKET_CHOICE)
    text = result.tool_result()
    assert json.loads(text) == BUCKET_CHOICE_CANONICAL
    assert text.startswith('{"protocol":"appwrite.clarify/v1",')


def test_constants() -> None:
    assert CLARIFY_PROTOCOL == "appwrite.clarify/v1"
    assert CLARIFY_TOOL_NAME == "clarify"
    assert CLARIFY_KINDS == ("choice", "confirm", "text")
    assert CLARIFY_ERROR_PREFIX == "Error: invalid clarify prompts \u2014 "
    assert flat(CLARIFY_LIMITS) == {
        "choice.optionDescriptionMaxLength": 300,
        "choice.optionLabelMaxLength": 120,
        "choice.optionsMax": 12,
        "choice.optionsMin": 2,
        "confirm.labelMaxLength": 120,
        "hintMaxLength": 500,
        "idPattern": "^[a-z][a-z0-9_.-]{0,63}$",
        "promptsMax": 5,
        "promptsMin": 1,
        "questionMaxLength": 500,
        "text.defaultValueMaxLength": 2000,
        "text.multilineValueMaxLength": 10000,
        "text.placeholderMaxLength": 200,
        "text.valueMaxLength": 2000,
        "titleMaxLength": 120,
    }
    with pytest.raises(TypeError):
        CLARIFY_LIMITS["promptsMax"] = 6  # type: ignore[index]


def flat(node: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if hasattr(value, "items"):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# --- the three input forms ----------------------------------------------------------------


ONE_TEXT = {"id": "name", "kind": "text", "question": "Database name"}
ONE_TEXT_CANONICAL = {
    "protocol": CLARIFY_PROTOCOL,
    "prompts": [{**ONE_TEXT, "required": True, "multiline": False}],
}


@pytest.mark.parametrize(
    "prompts",
    [
        pytest.param(json.dumps([ONE_TEXT]), id="string-of-array"),
        pytest.param(json.dumps(ONE_TEXT), id="string-of-object"),
        pytest.param("  " + json.dumps(ONE_TEXT, indent=2) + "\n", id="string-with-spaces"),
        pytest.param([ONE_TEXT], id="array"),
        pytest.param(ONE_TEXT, id="object"),
    ],
)
def test_prompts_arrive_as_a_json_string_an_object_or_an_array(prompts: Any) -> None:
    assert validate_clarify_prompts(prompts).envelope == ONE_TEXT_CANONICAL


def test_an_object_counts_as_a_list_of_one_for_paths() -> None:
    bad = {**ONE_TEXT, "question": ""}
    expected = [("prompts[0].question", "TOO_SHORT")]
    assert prompt_errors(bad) == expected
    assert prompt_errors(json.dumps(bad)) == expected
    assert prompt_errors([bad]) == expected


@pytest.mark.parametrize(
    ("prompts", "expected"),
    [
        pytest.param("[{", [("prompts", "INVALID_FORMAT")], id="malformed-json"),
        pytest.param("not json", [("prompts", "INVALID_FORMAT")], id="prose"),
        pytest.param("", [("prompts", "INVALID_FORMAT")], id="empty-string"),
        pytest.param(" \n", [("prompts", "INVALID_FORMAT")], id="blank-string"),
        pytest.param("[" * 100_000, [("prompts", "INVALID_FORMAT")], id="too-deep"),
        pytest.param("1" * 5000, [("prompts", "INVALID_FORMAT")], id="huge-number"),
        pytest.param("42", [("prompts", "INVALID_TYPE")], id="json-number"),
        pytest.param('"[]"', [("prompts", "INVALID_TYPE")], id="json-string"),
        pytest.param("null", [("prompts", "INVALID_TYPE")], id="json-null"),
        pytest.param(None, [("prompts", "MISSING_REQUIRED")], id="none"),
        pytest.param(42, [("prompts", "INVALID_TYPE")], id="number"),
        pytest.param(True, [("prompts", "INVALID_TYPE")], id="boolean"),
        pytest.param([], [("prompts", "TOO_FEW")], id="empty-array"),
        pytest.param("[]", [("prompts", "TOO_FEW")], id="empty-array-string"),
        pytest.param(
            [{**ONE_TEXT, "id": f"q{i}"} for i in range(6)],
            [("prompts", "TOO_MANY")],
            id="six-prompts",
        ),
        pytest.param(["name"], [("prompts[0]", "INVALID_TYPE")], id="prompt-not-object"),
        pytest.param([ONE_TEXT, None], [("prompts[1]", "INVALID_TYPE")], id="prompt-null"),
    ],
)
def test_the_prompts_argument(prompts: Any, expected: list[tuple[str, str]]) -> None:
    result = validate_clarify_prompts(prompts)
    assert pairs(result.errors) == expected
    assert result.envelope is None
    assert not result.ok


def test_five_prompts_are_allowed() -> None:
    prompts = [{**ONE_TEXT, "id": f"q{i}"} for i in range(5)]
    envelope = validate_clarify_prompts(prompts).envelope
    assert envelope is not None
    assert [p["id"] for p in envelope["prompts"]] == ["q0", "q1", "q2", "q3", "q4"]


def test_malformed_json_says_where() -> None:
    (error,) = validate_clarify_prompts('[{"id": "name",}]').errors
    assert error.message == (
        "`prompts` is not valid JSON: Expecting property name enclosed in double quotes at "
        "line 1, column 16."
    )
    assert error.fix == "Send prompts as a JSON array of prompt objects, or as one prompt object."


# --- the title ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "expected_title", "expected"),
    [
        pytest.param(None, None, [], id="none"),
        pytest.param("", None, [], id="empty-means-none"),
        pytest.param("Create database", "Create database", [], id="text"),
        pytest.param("t" * 120, "t" * 120, [], id="at-limit"),
        pytest.param(EMOJI * 60, EMOJI * 60, [], id="emoji-at-limit"),
        pytest.param("t" * 121, None, [("title", "TOO_LONG")], id="too-long"),
        pytest.param(EMOJI * 61, None, [("title", "TOO_LONG")], id="emoji-too-long"),
        pytest.param(" \u3000", None, [("title", "TOO_SHORT")], id="blank"),
        pytest.param(7, None, [("title", "INVALID_TYPE")], id="number"),
        pytest.param(["t"], None, [("title", "INVALID_TYPE")], id="list"),
    ],
)
def test_the_title(title: Any, expected_title: str | None, expected: list[Any]) -> None:
    result = validate_clarify_prompts([ONE_TEXT], title)
    assert pairs(result.errors) == expected
    if not expected:
        assert result.envelope is not None
        assert result.envelope.get("title") == expected_title
        assert list(result.envelope) == (
            ["protocol", "prompts"] if expected_title is None else ["protocol", "title", "prompts"]
        )


# --- the rules of every prompt --------------------------------------------------------------

CHOICE: dict[str, Any] = {
    "id": "region",
    "kind": "choice",
    "question": "Which region?",
    "options": [{"id": "fra", "label": "Frankfurt"}, {"id": "nyc", "label": "New York"}],
}
CONFIRM: dict[str, Any] = {"id": "go", "kind": "confirm", "question": "Delete it?"}
TEXT: dict[str, Any] = {"id": "name", "kind": "text", "question": "Database name"}
PROMPTS = {"choice": CHOICE, "confirm": CONFIRM, "text": TEXT}


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`base` with keys set, or removed when the value is `...`."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def options(count: int) -> list[dict[str, str]]:
    return [{"id": f"o{i}", "label": f"Option {i}"} for i in range(count)]


COMMON_CASES = [
    # (changes, expected errors of the one prompt at index 0)
    ({}, []),
    ({"kind": ...}, [("prompts[0].kind", "MISSING_REQUIRED")]),
    ({"kind": 3}, [("prompts[0].kind", "INVALID_TYPE")]),
    ({"kind": "Choice"}, [("prompts[0].kind", "INVALID_ENUM")]),
    ({"id": ...}, [("prompts[0].id", "MISSING_REQUIRED")]),
    ({"id": 5}, [("prompts[0].id", "INVALID_TYPE")]),
    ({"id": ""}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "Bucket"}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "1st"}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "_x"}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "a b"}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "a" * 65}, [("prompts[0].id", "INVALID_FORMAT")]),
    ({"id": "a" * 64}, []),
    ({"id": "a"}, []),
    ({"id": "db.name_2-x"}, []),
    ({"question": ...}, [("prompts[0].question", "MISSING_REQUIRED")]),
    ({"question": None}, [("prompts[0].question", "INVALID_TYPE")]),
    ({"question": ""}, [("prompts[0].question", "TOO_SHORT")]),
    ({"question": JS_SPACE}, [("prompts[0].question", "TOO_SHORT")]),
    ({"question": "q" * 500}, []),
    ({"question": "q" * 501}, [("prompts[0].question", "TOO_LONG")]),
    ({"question": EMOJI * 250}, []),
    ({"question": EMOJI * 250 + "q"}, [("prompts[0].question", "TOO_LONG")]),
    ({"hint": "This cannot be undone."}, []),
    ({"hint": "h" * 500}, []),
    ({"hint": "h" * 501}, [("prompts[0].hint", "TOO_LONG")]),
    ({"hint": ""}, [("prompts[0].hint", "TOO_SHORT")]),
    ({"hint": None}, [("prompts[0].hint", "INVALID_TYPE")]),
    ({"required": False}, []),
    ({"required": "yes"}, [("prompts[0].required", "INVALID_TYPE")]),
    ({"required": None}, [("prompts[0].required", "INVALID_TYPE")]),
    ({"label": "Name"}, [("prompts[0].label", "UNKNOWN_KEY")]),
    (
        {"id": "X", "question": "", "hint": 1},
        [
            ("prompts[0].hint", "INVALID_TYPE"),
            ("prompts[0].id", "INVALID_FORMAT"),
            ("prompts[0].question", "TOO_SHORT"),
        ],
    ),
]


@pytest.mark.parametrize("kind", CLARIFY_KINDS)
@pytest.mark.parametrize(("changes", "expected"), COMMON_CASES)
def test_common_fields(kind: str, changes: dict[str, Any], expected: list[Any]) -> None:
    assert prompt_errors([with_(PROMPTS[kind], **changes)]) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        pytest.param(
            with_(CHOICE, allowMultiple="no"),
            [("prompts[0].allowMultiple", "INVALID_TYPE")],
            id="choice-allowMultiple",
        ),
        pytest.param(
            with_(CHOICE, placeholder="x", danger=True),
            [("prompts[0].danger", "UNKNOWN_KEY"), ("prompts[0].placeholder", "UNKNOWN_KEY")],
            id="choice-foreign-keys",
        ),
        pytest.param(
            with_(CONFIRM, options=options(2)),
            [("prompts[0].options", "UNKNOWN_KEY")],
            id="confirm-foreign-key",
        ),
        pytest.param(
            with_(CONFIRM, denyLabel="No"),
            [("prompts[0].denyLabel", "UNKNOWN_KEY")],
            id="confirm-ask-protocol-key",
        ),
        pytest.param(
            with_(TEXT, allowMultiple=False),
            [("prompts[0].allowMultiple", "UNKNOWN_KEY")],
            id="text-foreign-key",
        ),
        pytest.param(
            with_(CONFIRM, kind="radio", whatever=1, options=3),
            [("prompts[0].kind", "INVALID_ENUM")],
            id="unknown-kind-checks-only-common-fields",
        ),
        pytest.param(
            with_(CONFIRM, kind="radio", question=""),
            [("prompts[0].kind", "INVALID_ENUM"), ("prompts[0].question", "TOO_SHORT")],
            id="unknown-kind-common-field",
        ),
    ],
)
def test_strict_keys_and_kinds(prompt: dict[str, Any], expected: list[Any]) -> None:
    assert prompt_errors([prompt]) == expected


def test_prompt_ids_are_unique() -> None:
    assert prompt_errors([TEXT, with_(CHOICE, id="name"), with_(CONFIRM, id="name")]) == [
        ("prompts[1].id", "DUPLICATE_ID"),
        ("prompts[2].id", "DUPLICATE_ID"),
    ]
    (error, _) = validate_clarify_prompts([TEXT, with_(CHOICE, id="name"), CONFIRM, TEXT]).errors
    assert error.message == '"name" is listed more than once.'


def test_an_option_id_may_repeat_a_prompt_id() -> None:
    prompt = with_(CHOICE, options=[{"id": "region", "label": "A"}, {"id": "b", "label": "B"}])
    assert prompt_errors([prompt]) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"options": ...}, [("prompts[0].options", "MISSING_REQUIRED")]),
        ({"options": {}}, [("prompts[0].options", "INVALID_TYPE")]),
        ({"options": "fra,nyc"}, [("prompts[0].options", "INVALID_TYPE")]),
        ({"options": []}, [("prompts[0].options", "TOO_FEW")]),
        ({"options": options(1)}, [("prompts[0].options", "TOO_FEW")]),
        ({"options": options(2)}, []),
        ({"options": options(12)}, []),
        ({"options": options(13)}, [("prompts[0].options", "TOO_MANY")]),
        ({"options": [*options(1), "o1"]}, [("prompts[0].options[1]", "INVALID_TYPE")]),
        (
            {"options": [*options(1), {"id": "o1", "label": "One", "value": 1}]},
            [("prompts[0].options[1].value", "UNKNOWN_KEY")],
        ),
        (
            {"options": [*options(1), {"label": "One"}]},
            [("prompts[0].options[1].id", "MISSING_REQUIRED")],
        ),
        (
            {"options": [*options(1), {"id": "One", "label": "One"}]},
            [("prompts[0].options[1].id", "INVALID_FORMAT")],
        ),
        (
            {"options": [*options(1), {"id": "9", "label": "Nine"}]},
            [("prompts[0].options[1].id", "INVALID_FORMAT")],
        ),
        (
            {"options": [*options(1), {"id": 1, "label": "One"}]},
            [("prompts[0].options[1].id", "INVALID_TYPE")],
        ),
        (
            {"options": [*options(2), {"id": "o0", "label": "Again"}]},
            [("prompts[0].options[2].id", "DUPLICATE_ID")],
        ),
        (
            {"options": [*options(1), {"id": "o1", "label": "Option 0"}]},
            [],  # labels need not differ
        ),
        (
            {"options": [*options(1), {"id": "o1"}]},
            [("prompts[0].options[1].label", "MISSING_REQUIRED")],
        ),
        (
            {"options": [*options(1), {"id": "o1", "label": " "}]},
            [("prompts[0].options[1].label", "TOO_SHORT")],
        ),
        ({"options": [*options(1), {"id": "o1", "label": "l" * 120}]}, []),
        (
            {"options": [*options(1), {"id": "o1", "label": "l" * 121}]},
            [("prompts[0].options[1].label", "TOO_LONG")],
        ),
        ({"options": [*options(1), {"id": "o1", "label": "L", "description": "d" * 300}]}, []),
        (
            {"options": [*options(1), {"id": "o1", "label": "L", "description": "d" * 301}]},
            [("prompts[0].options[1].description", "TOO_LONG")],
        ),
        (
            {"options": [*options(1), {"id": "o1", "label": "L", "description": ""}]},
            [("prompts[0].options[1].description", "TOO_SHORT")],
        ),
        (
            {"options": [*options(1), {"id": "o1", "label": "L", "description": None}]},
            [("prompts[0].options[1].description", "INVALID_TYPE")],
        ),
        (
            {"options": [{"id": "A", "label": ""}, {"id": "A", "label": 1, "x": 0}]},
            [
                ("prompts[0].options[0].id", "INVALID_FORMAT"),
                ("prompts[0].options[0].label", "TOO_SHORT"),
                ("prompts[0].options[1].id", "INVALID_FORMAT"),
                ("prompts[0].options[1].label", "INVALID_TYPE"),
                ("prompts[0].options[1].x", "UNKNOWN_KEY"),
            ],
        ),
        ({"allowMultiple": True}, []),
        ({"allowMultiple": 1}, [("prompts[0].allowMultiple", "INVALID_TYPE")]),
    ],
)
def test_choice_prompts(changes: dict[str, Any], expected: list[Any]) -> None:
    assert prompt_errors([with_(CHOICE, **changes)]) == expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"confirmLabel": "Delete", "cancelLabel": "Keep it", "danger": True}, []),
        ({"confirmLabel": "c" * 120, "cancelLabel": "c" * 120}, []),
        ({"confirmLabel": "c" * 121}, [("prompts[0].confirmLabel", "TOO_LONG")]),
        ({"cancelLabel": "c" * 121}, [("prompts[0].cancelLabel", "TOO_LONG")]),
        ({"confirmLabel": ""}, [("prompts[0].confirmLabel", "TOO_SHORT")]),
        ({"cancelLabel": "\u00a0"}, [("prompts[0].cancelLabel", "TOO_SHORT")]),
        ({"cancelLabel": False}, [("prompts[0].cancelLabel", "INVALID_TYPE")]),
        ({"danger": "true"}, [("prompts[0].danger", "INVALID_TYPE")]),
        ({"danger": None}, [("prompts[0].danger", "INVALID_TYPE")]),
        ({"confirmLabel": "Same", "cancelLabel": "Same"}, []),  # the card copes with it
    ],
)
def test_confirm_prompts(changes: dict[str, Any], expected: list[Any]) -> None:
    assert prompt_errors([with_(CONFIRM, **changes)]) == expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"placeholder": "main", "defaultValue": "unique()", "multiline": True}, []),
        ({"placeholder": "p" * 200}, []),
        ({"placeholder": "p" * 201}, [("prompts[0].placeholder", "TOO_LONG")]),
        ({"placeholder": ""}, [("prompts[0].placeholder", "TOO_SHORT")]),
        ({"defaultValue": "d" * 2000}, []),
        ({"defaultValue": EMOJI * 1000}, []),
        ({"defaultValue": "d" * 2001}, [("prompts[0].defaultValue", "TOO_LONG")]),
        ({"defaultValue": EMOJI * 1000 + "d"}, [("prompts[0].defaultValue", "TOO_LONG")]),
        ({"defaultValue": " "}, [("prompts[0].defaultValue", "TOO_SHORT")]),
        ({"defaultValue": 5}, [("prompts[0].defaultValue", "INVALID_TYPE")]),
        ({"multiline": "yes"}, [("prompts[0].multiline", "INVALID_TYPE")]),
    ],
)
def test_text_prompts(changes: dict[str, Any], expected: list[Any]) -> None:
    assert prompt_errors([with_(TEXT, **changes)]) == expected


def test_paths_name_the_prompt_and_the_option() -> None:
    prompts = [TEXT, with_(CHOICE, options=[{"id": "Fra", "label": "Frankfurt"}, *options(1)])]
    assert prompt_errors(prompts) == [("prompts[1].options[0].id", "INVALID_FORMAT")]


def test_errors_of_several_prompts_and_the_title_are_sorted_by_path_then_code() -> None:
    prompts = [
        with_(TEXT, question="", extra=1),
        with_(CHOICE, id="name", options=options(1)),
        with_(CONFIRM, kind="toggle"),
    ]
    assert prompt_errors(prompts, "t" * 121) == [
        ("prompts[0].extra", "UNKNOWN_KEY"),
        ("prompts[0].question", "TOO_SHORT"),
        ("prompts[1].id", "DUPLICATE_ID"),
        ("prompts[1].options", "TOO_FEW"),
        ("prompts[2].kind", "INVALID_ENUM"),
        ("title", "TOO_LONG"),
    ]


def test_too_many_prompts_are_still_checked_one_by_one() -> None:
    prompts = [with_(TEXT, id=f"q{i}") for i in range(6)]
    prompts[5]["question"] = ""
    assert prompt_errors(prompts) == [("prompts", "TOO_MANY"), ("prompts[5].question", "TOO_SHORT")]


def test_defaults_are_written_out_and_given_values_kept() -> None:
    given_values = [
        with_(CHOICE, required=False, allowMultiple=True),
        with_(CONFIRM, confirmLabel="Delete", danger=False, required=False),
        with_(TEXT, multiline=True, defaultValue=" keep spaces ", placeholder="main"),
    ]
    envelope = validate_clarify_prompts(given_values).envelope
    assert envelope == {
        "protocol": CLARIFY_PROTOCOL,
        "prompts": [
            {**CHOICE, "required": False, "allowMultiple": True},
            {
                **CONFIRM,
                "required": False,
                "confirmLabel": "Delete",
                "cancelLabel": "Cancel",
                "danger": False,
            },
            {
                **TEXT,
                "required": True,
                "placeholder": "main",
                "defaultValue": " keep spaces ",
                "multiline": True,
            },
        ],
    }
    defaults = validate_clarify_prompts([CHOICE, CONFIRM, TEXT]).envelope
    assert defaults is not None
    assert [
        {k: v for k, v in p.items() if k not in ("id", "kind", "question", "options")}
        for p in defaults["prompts"]
    ] == [
        {"required": True, "allowMultiple": False},
        {"required": True, "confirmLabel": "Confirm", "cancelLabel": "Cancel", "danger": False},
        {"required": True, "multiline": False},
    ]


def test_the_envelope_shares_nothing_with_the_arguments() -> None:
    prompts = [copy.deepcopy(CHOICE)]
    before = copy.deepcopy(prompts)
    envelope = validate_clarify_prompts(prompts).envelope
    assert envelope is not None
    assert prompts == before  # not changed
    prompts[0]["options"][0]["label"] = "changed"
    prompts[0]["options"].append({"id": "x", "label": "X"})
    assert envelope["prompts"][0]["options"] == CHOICE["options"]


# --- the error text -------------------------------------------------------------------------


def test_the_error_text_of_an_invalid_call() -> None:
    result = validate_clarify_prompts('[{"id": "name", "kind": "text"}]')
    text = result.tool_result()
    assert text == clarify_error_text(result.errors)
    assert text.startswith("Error: invalid clarify prompts \u2014 ")
    assert text == (
        "Error: invalid clarify prompts \u2014 prompts[0].question: `prompts[0].question` is "
        "required. Add `prompts[0].question`: the question in plain text, 1 to 500 characters."
    )


def test_the_error_text_joins_problems_with_semicolons() -> None:
    errors = [
        AskValidationError(path="prompts[0].id", code="INVALID_FORMAT", message="M1.", fix="F1."),
        AskValidationError(path="", code="INVALID_TYPE", message="M2.", fix="F2."),
    ]
    assert clarify_error_text(errors) == (
        "Error: invalid clarify prompts \u2014 prompts[0].id: M1. F1.; M2. F2."
    )


def test_the_error_text_spells_out_at_most_twenty_problems() -> None:
    errors = [
        AskValidationError(path=f"p{i}", code="TOO_LONG", message="M.", fix="F.") for i in range(23)
    ]
    text = clarify_error_text(errors)
    assert text.startswith(CLARIFY_ERROR_PREFIX + "p0: M. F.; p1: M. F.;")
    assert text.endswith("; p19: M. F.; and 3 more problems")
    assert clarify_error_text(errors[:21]).endswith("; p19: M. F.; and 1 more problem")
    assert clarify_error_text([]).startswith(CLARIFY_ERROR_PREFIX)


def test_a_result_holds_an_envelope_or_errors() -> None:
    error = AskValidationError(path="prompts", code="TOO_FEW", message="M.", fix="F.")
    with pytest.raises(ValueError, match="exactly one"):
        ClarifyResult(envelope={}, errors=[error])
    with pytest.raises(ValueError, match="exactly one"):
        ClarifyResult(envelope=None, errors=[])
    assert ClarifyResult(envelope=None, errors=[error]).tool_result() == (
        CLARIFY_ERROR_PREFIX + "prompts: M. F."
    )


# --- answers --------------------------------------------------------------------------------

ENVELOPE = validate_clarify_prompts(
    [
        {"id": "name", "kind": "text", "question": "Database name"},
        {
            "id": "region",
            "kind": "choice",
            "question": "Which region?",
            "options": [
                {"id": "fra", "label": "Frankfurt"},
                {"id": "nyc", "label": "New York"},
                {"id": "syd", "label": "syd"},
            ],
        },
        {
            "id": "extras",
            "kind": "choice",
            "question": "Extras?",
            "options": options(3),
            "allowMultiple": True,
            "required": False,
        },
        {"id": "go", "kind": "confirm", "question": "Create it now?"},
        {
            "id": "notes",
            "kind": "text",
            "question": "Notes",
            "multiline": True,
            "required": False,
        },
    ],
    "Create database",
).envelope
assert ENVELOPE is not None

NAME = {"id": "name", "kind": "text", "value": "main"}
REGION = {"id": "region", "kind": "choice", "values": ["fra"]}
EXTRAS = {"id": "extras", "kind": "choice", "values": ["o0", "o2"]}
GO = {"id": "go", "kind": "confirm", "confirmed": True}
NOTES = {"id": "notes", "kind": "text", "value": "line 1\nline 2"}


def answers(*items: Any, protocol: Any = CLARIFY_PROTOCOL) -> dict[str, Any]:
    return {"protocol": protocol, "answers": list(items)}


def answer_errors(content: Any, envelope: Any = ENVELOPE) -> list[tuple[str, str]]:
    return pairs(validate_clarify_answers(envelope, content))


REQUIRED = (NAME, REGION, GO)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(answers(NAME, REGION, EXTRAS, GO, NOTES), [], id="all"),
        pytest.param(answers(GO, NAME, REGION), [], id="required-only-any-order"),
        pytest.param(
            answers(*REQUIRED, with_(EXTRAS, values=[]), with_(NOTES, value="")),
            [],
            id="optional-left-blank",
        ),
        pytest.param(answers(NAME, REGION, with_(GO, confirmed=False)), [], id="confirm-false"),
        pytest.param(None, [("content", "INVALID_TYPE")], id="not-an-object"),
        pytest.param([GO], [("content", "INVALID_TYPE")], id="list"),
        pytest.param(
            {**answers(*REQUIRED), "title": "x"}, [("content.title", "UNKNOWN_KEY")], id="key"
        ),
        pytest.param(
            {"answers": list(REQUIRED)}, [("content.protocol", "MISSING_REQUIRED")], id="no-proto"
        ),
        pytest.param(
            answers(*REQUIRED, protocol="appwrite.clarify/v2"),
            [("content.protocol", "INVALID_ENUM")],
            id="other-protocol",
        ),
        pytest.param(
            answers(*REQUIRED, protocol=1), [("content.protocol", "INVALID_TYPE")], id="proto-type"
        ),
        pytest.param(
            {"protocol": CLARIFY_PROTOCOL},
            [("content.answers", "MISSING_REQUIRED")],
            id="no-answers",
        ),
        pytest.param(
            {"protocol": CLARIFY_PROTOCOL, "answers": {"name": "main"}},
            [("content.answers", "INVALID_TYPE")],
            id="answers-object",
        ),
        pytest.param(
            answers(),
            [
                ("content.answers", "REQUIRED_FIELD"),
                ("content.answers", "REQUIRED_FIELD"),
                ("content.answers", "REQUIRED_FIELD"),
            ],
            id="none-answered",
        ),
        pytest.param(
            answers(NAME, GO), [("content.answers", "REQUIRED_FIELD")], id="one-required-missing"
        ),
        pytest.param(
            answers(*REQUIRED, "main"), [("content.answers[3]", "INVALID_TYPE")], id="not-object"
        ),
        pytest.param(
            answers(*REQUIRED, {"kind": "text", "value": "x"}),
            [("content.answers[3].id", "MISSING_REQUIRED")],
            id="id-missing",
        ),
        pytest.param(
            answers(*REQUIRED, {"id": 3, "kind": "text", "value": "x"}),
            [("content.answers[3].id", "INVALID_TYPE")],
            id="id-type",
        ),
        pytest.param(
            answers(*REQUIRED, {"id": "colour", "kind": "text", "value": "x"}),
            [("content.answers[3].id", "INVALID_ENUM")],
            id="unknown-id",
        ),
        pytest.param(
            answers(*REQUIRED, {"id": "colour", "kind": "slider", "level": 3}),
            [
                ("content.answers[3].id", "INVALID_ENUM"),
                ("content.answers[3].kind", "INVALID_ENUM"),
                ("content.answers[3].level", "UNKNOWN_KEY"),
            ],
            id="unknown-id-and-kind",
        ),
        pytest.param(
            answers(*REQUIRED, {"id": "colour", "kind": "text", "values": ["x"]}),
            [
                ("content.answers[3].id", "INVALID_ENUM"),
                ("content.answers[3].values", "UNKNOWN_KEY"),
            ],
            id="unknown-id-keys-of-its-kind",
        ),
        pytest.param(
            answers(NAME, REGION, with_(GO, kind=...)),
            [("content.answers[2].kind", "MISSING_REQUIRED")],
            id="kind-missing",
        ),
        pytest.param(
            answers(NAME, REGION, with_(GO, kind=None)),
            [("content.answers[2].kind", "INVALID_TYPE")],
            id="kind-type",
        ),
        pytest.param(
            answers(NAME, REGION, with_(GO, kind="choice")),
            [("content.answers[2].kind", "INVALID_ENUM")],
            id="kind-not-the-prompts",
        ),
        pytest.param(
            answers(*REQUIRED, with_(NAME, value="again")),
            [("content.answers[3].id", "DUPLICATE_ID")],
            id="answered-twice",
        ),
        pytest.param(
            answers(*REQUIRED, with_(NAME, value="again"), with_(NAME, value=1)),
            [
                ("content.answers[3].id", "DUPLICATE_ID"),
                ("content.answers[4].id", "DUPLICATE_ID"),
                ("content.answers[4].value", "INVALID_TYPE"),
            ],
            id="answered-three-times",
        ),
    ],
)
def test_clarify_answers(content: Any, expected: list[Any]) -> None:
    assert answer_errors(content) == expected


def test_a_missing_required_answer_names_its_prompt() -> None:
    (error,) = validate_clarify_answers(ENVELOPE, answers(NAME, GO))
    assert error.path == "content.answers"
    assert error.message == 'The prompt "region" is required but has no answer.'
    assert error.fix == 'Add an answer with id "region".'


def test_an_unknown_id_lists_the_prompt_ids() -> None:
    (error,) = validate_clarify_answers(ENVELOPE, answers(*REQUIRED, with_(NAME, id="nme")))
    assert (
        error.fix == 'Answer the prompts by their ids: "name", "region", "extras", "go", "notes".'
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (with_(REGION, values=["nyc"]), []),
        (with_(REGION, values=...), [("content.answers[3].values", "MISSING_REQUIRED")]),
        (with_(REGION, values="fra"), [("content.answers[3].values", "INVALID_TYPE")]),
        (with_(REGION, values=[1]), [("content.answers[3].values[0]", "INVALID_TYPE")]),
        (
            with_(REGION, values=["Frankfurt"]),
            [("content.answers[3].values[0]", "OPTION_NOT_OFFERED")],
        ),
        (
            with_(REGION, values=["fra", "nyc"]),
            [("content.answers[3].values", "SELECTION_COUNT")],
        ),
        (
            with_(REGION, values=["fra", "fra"]),
            [
                ("content.answers[3].values", "SELECTION_COUNT"),
                ("content.answers[3].values[1]", "DUPLICATE_ID"),
            ],
        ),
        (with_(REGION, values=[]), [("content.answers[3].values", "SELECTION_COUNT")]),
        (
            with_(REGION, values=["fra"], value="fra"),
            [("content.answers[3].value", "UNKNOWN_KEY")],
        ),
        (
            with_(REGION, values=["o"] * 13),
            [("content.answers[3].values", "TOO_MANY")],
        ),
    ],
)
def test_choice_answers(entry: dict[str, Any], expected: list[Any]) -> None:
    # The entry answers "region" a second time at index 3 unless it is the first answer.
    content = answers(NAME, GO, EXTRAS, entry)
    assert answer_errors(content) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["o0"], []),
        (["o0", "o1", "o2"], []),
        ([], []),  # optional
        (["o2", "o0"], []),
        (["o0", "o0"], [("content.answers[3].values[1]", "DUPLICATE_ID")]),
        (
            ["o0", "o1", "o2", "o0"],
            [
                ("content.answers[3].values", "SELECTION_COUNT"),
                ("content.answers[3].values[3]", "DUPLICATE_ID"),
            ],
        ),
        (["o0", "fra"], [("content.answers[3].values[1]", "OPTION_NOT_OFFERED")]),
    ],
)
def test_multiple_choice_answers(values: list[Any], expected: list[Any]) -> None:
    content = answers(*REQUIRED, with_(EXTRAS, values=values))
    assert answer_errors(content) == expected


@pytest.mark.parametrize(
    ("required", "allow_multiple", "count", "ok"),
    [
        (True, False, 0, False),
        (True, False, 1, True),
        (True, False, 2, False),
        (False, False, 0, True),
        (False, False, 1, True),
        (False, False, 2, False),
        (True, True, 0, False),
        (True, True, 1, True),
        (True, True, 3, True),
        (False, True, 0, True),
        (False, True, 3, True),
    ],
)
def test_selection_counts(required: bool, allow_multiple: bool, count: int, ok: bool) -> None:
    envelope = validate_clarify_prompts(
        with_(CHOICE, required=required, allowMultiple=allow_multiple, options=options(3))
    ).envelope
    content = answers({"id": "region", "kind": "choice", "values": [f"o{i}" for i in range(count)]})
    expected = [] if ok else [("content.answers[0].values", "SELECTION_COUNT")]
    assert answer_errors(content, envelope) == expected


def test_a_choice_answer_error_names_the_offered_options() -> None:
    (error,) = validate_clarify_answers(ENVELOPE, answers(NAME, GO, with_(REGION, values=["mars"])))
    assert (error.path, error.code) == ("content.answers[2].values[0]", "OPTION_NOT_OFFERED")
    assert error.fix == 'Use the id of one of the prompt\'s options: "fra", "nyc", "syd".'
    (count,) = validate_clarify_answers(ENVELOPE, answers(NAME, GO, with_(REGION, values=[])))
    assert count.message == "The answer selects 0 options; the prompt takes exactly 1."


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (with_(GO, confirmed=False), []),
        (with_(GO, confirmed=...), [("content.answers[2].confirmed", "MISSING_REQUIRED")]),
        (with_(GO, confirmed="yes"), [("content.answers[2].confirmed", "INVALID_TYPE")]),
        (with_(GO, confirmed=1), [("content.answers[2].confirmed", "INVALID_TYPE")]),
        (with_(GO, confirmed=None), [("content.answers[2].confirmed", "INVALID_TYPE")]),
        (with_(GO, value=True), [("content.answers[2].value", "UNKNOWN_KEY")]),
    ],
)
def test_confirm_answers(entry: dict[str, Any], expected: list[Any]) -> None:
    assert answer_errors(answers(NAME, REGION, entry)) == expected


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (with_(NAME, value="n" * 2000), []),
        (with_(NAME, value=EMOJI * 1000), []),
        (with_(NAME, value="n" * 2001), [("content.answers[2].value", "TOO_LONG")]),
        (with_(NAME, value=EMOJI * 1000 + "n"), [("content.answers[2].value", "TOO_LONG")]),
        (with_(NAME, value=""), [("content.answers[2].value", "REQUIRED_FIELD")]),
        (with_(NAME, value=JS_SPACE), [("content.answers[2].value", "REQUIRED_FIELD")]),
        (with_(NAME, value=...), [("content.answers[2].value", "MISSING_REQUIRED")]),
        (with_(NAME, value=None), [("content.answers[2].value", "INVALID_TYPE")]),
        (with_(NAME, value=["main"]), [("content.answers[2].value", "INVALID_TYPE")]),
        (
            with_(NAME, value=..., values=["main"]),
            [
                ("content.answers[2].value", "MISSING_REQUIRED"),
                ("content.answers[2].values", "UNKNOWN_KEY"),
            ],
        ),
    ],
)
def test_text_answers(entry: dict[str, Any], expected: list[Any]) -> None:
    assert answer_errors(answers(REGION, GO, entry)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("n" * 10_000, []),
        ("", []),  # optional
        (" ", []),
        ("n" * 10_001, [("content.answers[3].value", "TOO_LONG")]),
    ],
)
def test_multiline_text_answers(value: str, expected: list[Any]) -> None:
    assert answer_errors(answers(*REQUIRED, with_(NOTES, value=value))) == expected


def test_the_blank_required_text_error() -> None:
    (error,) = validate_clarify_answers(ENVELOPE, answers(REGION, GO, with_(NAME, value=" ")))
    assert error.message == '"Database name" is required but the answer is blank.'
    assert error.fix == 'Write an answer to "Database name".'


def test_answer_errors_are_sorted_by_path_then_code() -> None:
    content = {
        "protocol": "v0",
        "answers": [
            with_(REGION, values=["fra", "mars"], kind="text"),
            with_(GO, confirmed="no", extra=1),
        ],
        "more": True,
    }
    errors = pairs(validate_clarify_answers(ENVELOPE, content))
    assert errors == [
        ("content.answers", "REQUIRED_FIELD"),
        ("content.answers[0].kind", "INVALID_ENUM"),
        ("content.answers[0].values", "SELECTION_COUNT"),
        ("content.answers[0].values[1]", "OPTION_NOT_OFFERED"),
        ("content.answers[1].confirmed", "INVALID_TYPE"),
        ("content.answers[1].extra", "UNKNOWN_KEY"),
        ("content.more", "UNKNOWN_KEY"),
        ("content.protocol", "INVALID_ENUM"),
    ]
    assert errors == sorted(errors)


def test_answers_to_a_malformed_envelope_do_not_raise() -> None:
    for envelope in (None, [], {"prompts": "x"}, {"prompts": [1, {"id": 1}, {"kind": "text"}]}):
        assert answer_errors(answers(GO), envelope) == [("content.answers[0].id", "INVALID_ENUM")]
        assert answer_errors(answers(), envelope) == []


# --- the answer envelope --------------------------------------------------------------------

ACCEPT = {"action": "accept", "content": answers(*REQUIRED)}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        pytest.param(ACCEPT, [], id="accept"),
        pytest.param({"action": "decline"}, [], id="decline"),
        pytest.param({"action": "cancel"}, [], id="cancel"),
        pytest.param({"action": "cancel", "reason": "user_sent_message"}, [], id="cancel-reason"),
        pytest.param({"action": "cancel", "reason": "r" * 200}, [], id="reason-at-limit"),
        pytest.param(
            {"action": "cancel", "reason": "r" * 201}, [("reason", "TOO_LONG")], id="reason-long"
        ),
        pytest.param({"action": "cancel", "reason": ""}, [("reason", "TOO_SHORT")], id="reason-0"),
        pytest.param({"action": "cancel", "reason": 5}, [("reason", "INVALID_TYPE")], id="reason"),
        pytest.param(None, [("", "INVALID_TYPE")], id="not-an-object"),
        pytest.param({}, [("action", "MISSING_REQUIRED")], id="no-action"),
        pytest.param({"action": "skip"}, [("action", "INVALID_ENUM")], id="unknown-action"),
        pytest.param({"action": ["accept"]}, [("action", "INVALID_ENUM")], id="action-list"),
        pytest.param(
            {"action": "decline", "content": ACCEPT["content"]},
            [("content", "UNKNOWN_KEY")],
            id="decline-with-content",
        ),
        pytest.param(
            {"action": "cancel", "content": {}}, [("content", "UNKNOWN_KEY")], id="cancel-content"
        ),
        pytest.param(
            {**ACCEPT, "reason": "x"}, [("reason", "UNKNOWN_KEY")], id="accept-with-reason"
        ),
        pytest.param({"action": "accept"}, [("content", "MISSING_REQUIRED")], id="no-content"),
        pytest.param(
            {"action": "accept", "content": [GO]}, [("content", "INVALID_TYPE")], id="content-list"
        ),
        pytest.param(
            {
                "action": "accept",
                "content": answers(NAME, with_(REGION, values=["fra", "nyc"]), GO),
                "id": 1,
            },
            [("content.answers[1].values", "SELECTION_COUNT"), ("id", "UNKNOWN_KEY")],
            id="accept-errors-sorted",
        ),
        pytest.param(
            {"action": "accept", "content": {"selected": ["fra"]}},
            [
                ("content.answers", "MISSING_REQUIRED"),
                ("content.protocol", "MISSING_REQUIRED"),
                ("content.selected", "UNKNOWN_KEY"),
            ],
            id="a-choice-ask-answer",
        ),
    ],
)
def test_clarify_responses(response: Any, expected: list[Any]) -> None:
    assert pairs(validate_clarify_response(ENVELOPE, response)) == expected


def test_the_example_path_of_the_brief() -> None:
    envelope = call(NAME_AND_REGION).envelope
    content = answers(
        {"id": "name", "kind": "text", "value": "main"},
        {"id": "id_mode", "kind": "choice", "values": ["unique", "custom"]},
    )
    assert pairs(validate_clarify_response(envelope, {"action": "accept", "content": content})) == [
        ("content.answers[1].values", "SELECTION_COUNT")
    ]
    content["answers"][1]["values"] = ["unique", "uniq"]
    assert pairs(validate_clarify_answers(envelope, content)) == [
        ("content.answers[1].values", "SELECTION_COUNT"),
        ("content.answers[1].values[1]", "OPTION_NOT_OFFERED"),
    ]


# --- simple cards ---------------------------------------------------------------------------


def accept_one(prompt_id: str, **answer: Any) -> dict[str, Any]:
    return {
        "action": "accept",
        "content": {"protocol": CLARIFY_PROTOCOL, "answers": [{"id": prompt_id, **answer}]},
    }


SKIP = {"id": "skip", "label": "Skip", "style": "cancel", "response": {"action": "decline"}}


def envelope_of(*prompts: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    result = validate_clarify_prompts(list(prompts), title)
    assert result.envelope is not None, pairs(result.errors)
    return result.envelope


def test_card_of_the_choice_example() -> None:
    envelope = call(BUCKET_CHOICE).envelope
    card = clarify_simple_card(envelope, "call_1")
    assert card == {
        "toolCallId": "call_1",
        "kind": "choice",
        "title": "Which bucket?",
        "text": "Which bucket should I delete?",
        "buttons": [
            {
                "id": "option:avatars",
                "label": "avatars",
                "style": "default",
                "response": accept_one("bucket", kind="choice", values=["avatars"]),
            },
            {
                "id": "option:uploads",
                "label": "uploads",
                "style": "default",
                "response": accept_one("bucket", kind="choice", values=["uploads"]),
            },
            SKIP,
        ],
        "handoff": False,
    }
    check_card(card, envelope)


def test_card_of_the_confirm_example() -> None:
    envelope = call(DESTRUCTIVE_CONFIRM).envelope
    card = clarify_simple_card(envelope, "call_2")
    assert card == {
        "toolCallId": "call_2",
        "kind": "confirm",
        "text": "Delete bucket avatars and all of its files?",
        "buttons": [
            {
                "id": "approve",
                "label": "Delete",
                "style": "destructive",
                "response": accept_one("confirm_delete", kind="confirm", confirmed=True),
            },
            {
                "id": "deny",
                "label": "Keep it",
                "style": "cancel",
                "response": accept_one("confirm_delete", kind="confirm", confirmed=False),
            },
        ],
        "handoff": False,
    }
    check_card(card, envelope)


def test_card_of_the_text_and_choice_example() -> None:
    envelope = call(NAME_AND_REGION).envelope
    card = clarify_simple_card(envelope, "call_3")
    assert card == {
        "toolCallId": "call_3",
        "kind": "form",
        "title": "Create database",
        "text": "Database name (+1 more)",
        "buttons": [SKIP],
        "handoff": True,
    }
    check_card(card, envelope)


def test_card_of_a_plain_confirm() -> None:
    envelope = envelope_of(CONFIRM)
    card = clarify_simple_card(envelope, "c")
    assert [(b["id"], b["label"], b["style"]) for b in card["buttons"]] == [
        ("approve", "Confirm", "primary"),
        ("deny", "Cancel", "cancel"),
    ]
    assert card["handoff"] is False
    check_card(card, envelope)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (
            {"confirmLabel": "Delete the whole production bucket"},
            ["Delete the whole…", "Cancel"],
        ),
        ({"confirmLabel": "  Go  ", "cancelLabel": " Stop"}, ["Go", "Stop"]),
        ({"confirmLabel": "Same", "cancelLabel": "Same"}, ["Confirm", "Cancel"]),
        (
            {
                "confirmLabel": "Delete bucket avatars now",
                "cancelLabel": "Delete bucket avatars later",
            },
            ["Confirm", "Cancel"],
        ),
        ({"confirmLabel": "Cancel"}, ["Confirm", "Cancel"]),
    ],
)
def test_confirm_card_labels(labels: dict[str, str], expected: list[str]) -> None:
    envelope = envelope_of(with_(CONFIRM, **labels))
    card = clarify_simple_card(envelope, "c")
    assert [b["label"] for b in card["buttons"]] == expected
    check_card(card, envelope)


def test_card_of_three_options_has_no_room_for_skip() -> None:
    envelope = envelope_of(with_(CHOICE, options=options(3)))
    card = clarify_simple_card(envelope, "c")
    assert [b["id"] for b in card["buttons"]] == ["option:o0", "option:o1", "option:o2"]
    assert card["handoff"] is False
    check_card(card, envelope)


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        pytest.param(with_(CHOICE, options=options(4)), "choice", id="four-options"),
        pytest.param(with_(CHOICE, allowMultiple=True), "choice", id="allow-multiple"),
        pytest.param(
            with_(
                CHOICE,
                options=[
                    {"id": "a", "label": "The production bucket A"},
                    {"id": "b", "label": "The production bucket B"},
                ],
            ),
            "choice",
            id="labels-differ-only-after-the-cut",
        ),
        pytest.param(
            with_(CHOICE, options=[{"id": "a", "label": "Same"}, {"id": "b", "label": " Same "}]),
            "choice",
            id="labels-differ-only-in-spaces",
        ),
        pytest.param(TEXT, "form", id="text"),
        pytest.param(with_(TEXT, defaultValue="main"), "form", id="text-with-default"),
    ],
)
def test_cards_that_hand_off(prompt: dict[str, Any], kind: str) -> None:
    envelope = envelope_of(prompt)
    card = clarify_simple_card(envelope, "c")
    assert card["kind"] == kind
    assert card["buttons"] == [SKIP]
    assert card["handoff"] is True
    check_card(card, envelope)


def test_several_prompts_hand_off_as_a_form() -> None:
    envelope = envelope_of(CONFIRM, with_(CHOICE, id="c2"), with_(TEXT, id="t3"))
    card = clarify_simple_card(envelope, "c")
    assert card == {
        "toolCallId": "c",
        "kind": "form",
        "text": "Delete it? (+2 more)",
        "buttons": [SKIP],
        "handoff": True,
    }
    check_card(card, envelope)


def test_card_text_and_title_are_cut() -> None:
    question = "word " * 40 + EMOJI * 10
    envelope = envelope_of(with_(CHOICE, question=question), title="A title " * 10)
    card = clarify_simple_card(envelope, "c")
    assert card["title"] == "A title A title A title A title A title…"
    assert utf16(card["title"]) <= 40
    assert card["text"].endswith("word…")
    assert utf16(card["text"]) <= 140
    check_card(card, envelope)

    several = envelope_of(with_(TEXT, question="q" * 500), CONFIRM)
    text = clarify_simple_card(several, "c")["text"]
    assert text.endswith("q… (+1 more)")
    assert utf16(text) == 140


def test_option_labels_are_trimmed_and_cut_on_buttons() -> None:
    envelope = envelope_of(
        with_(
            CHOICE,
            options=[
                {"id": "a", "label": "  Frankfurt am Main, Germany "},
                {"id": "b", "label": EMOJI},
            ],
        )
    )
    card = clarify_simple_card(envelope, "c")
    assert [b["label"] for b in card["buttons"]] == ["Frankfurt am Main,…", EMOJI, "Skip"]
    check_card(card, envelope)


@pytest.mark.parametrize(
    "envelope",
    [
        None,
        [],
        {},
        {"prompts": "x"},
        {"prompts": [1]},
        {"prompts": [{"kind": "choice"}]},
        {"prompts": [{"id": "a", "kind": "choice", "options": [1, 2]}]},
        {"prompts": [{"id": "a", "kind": "choice", "options": [{"id": "x", "label": " "}]}]},
        {"prompts": [{"id": 1, "kind": "confirm", "question": "Q?"}]},
        {"prompts": [{"id": "a", "kind": "confirm", "confirmLabel": 3}], "title": 5},
    ],
)
def test_cards_of_malformed_envelopes_do_not_raise(envelope: Any) -> None:
    card = clarify_simple_card(envelope, "c")
    assert CARD_SCHEMA.is_valid(card), card


# --- the summary ----------------------------------------------------------------------------


def test_answer_summary() -> None:
    content = answers(
        NAME, with_(REGION, values=["syd"]), with_(GO, confirmed=False), EXTRAS, with_(NOTES)
    )
    assert clarify_answer_summary(ENVELOPE, content) == (
        'name \u2192 "main"\n'
        "region \u2192 syd\n"
        'extras \u2192 o0 ("Option 0"), o2 ("Option 2")\n'
        "go \u2192 no\n"
        'notes \u2192 "line 1\\nline 2"'
    )
    assert clarify_answer_summary(ENVELOPE, answers(with_(EXTRAS, values=[]), GO)) == (
        "name \u2192 (no answer)\n"
        "region \u2192 (no answer)\n"
        "extras \u2192 (none)\n"
        "go \u2192 yes\n"
        "notes \u2192 (no answer)"
    )
    assert clarify_answer_summary(None, None) == ""


# --- docs -----------------------------------------------------------------------------------


def docs_section(heading: str) -> str:
    """The lines under a heading of docs/reference/asks.md up to the next heading outside a
    code block."""
    lines = ASKS_REFERENCE.read_text("utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if re.fullmatch(rf"#+ {re.escape(heading)}", line)]
    assert len(starts) == 1, f"docs/reference/asks.md has no single '{heading}' heading."
    body: list[str] = []
    fenced = False
    for line in lines[starts[0] + 1 :]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            break
        body.append(line)
    return "\n".join(body) + "\n"


def test_the_docs_list_every_clarify_limit() -> None:
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in docs_section("Clarify limits").splitlines()
        if line.startswith("| `")
    ]
    documented = {key.strip("`"): value.strip("`") for key, value, _ in rows}
    actual = {key: str(value) for key, value in flat(CLARIFY_LIMITS).items()}
    assert documented == actual


def test_the_docs_example() -> None:
    text = docs_section("Clarify")
    code = re.search(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(code.group(1), namespace)
    result = namespace["result"]
    assert result.envelope["prompts"][0] == {
        "id": "confirm_delete",
        "kind": "confirm",
        "question": "Delete bucket avatars?",
        "required": True,
        "confirmLabel": "Delete",
        "cancelLabel": "Cancel",
        "danger": True,
    }
    buttons = namespace["card"]["buttons"]
    assert [(b["label"], b["style"]) for b in buttons] == [
        ("Delete", "destructive"),
        ("Cancel", "cancel"),
    ]
    assert pairs(validate_clarify_response(result.envelope, namespace["answer"])) == [
        ("content.answers[0].confirmed", "INVALID_TYPE")
    ]
    expected = (
        "Error: invalid clarify prompts \u2014 prompts: `prompts` has 0 prompts, fewer than "
        "the 1 required."
    )
    assert validate_clarify_prompts("[]").tool_result().startswith(expected)


# --- properties -----------------------------------------------------------------------------

KEYS = st.sampled_from(
    [
        "id",
        "kind",
        "question",
        "hint",
        "required",
        "options",
        "allowMultiple",
        "label",
        "description",
        "confirmLabel",
        "cancelLabel",
        "danger",
        "placeholder",
        "defaultValue",
        "multiline",
        "protocol",
        "answers",
        "values",
        "confirmed",
        "value",
        "prompts",
        "title",
        "action",
        "content",
        "reason",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(["choice", "confirm", "text", CLARIFY_PROTOCOL, "accept", "a", "o0"])
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(KEYS | st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


def check_errors(errors: list[AskValidationError]) -> None:
    keys = [(path_order(e.path), e.code) for e in errors]
    assert keys == sorted(keys)  # by path segment by segment (indexes as numbers), then code
    for error in errors:
        assert error.code in ASK_ERROR_CODES
        assert error.message
        assert error.fix


@FAST
@given(prompts=JSON, title=JSON)
def test_prompts_never_raise(prompts: Any, title: Any) -> None:
    result = validate_clarify_prompts(prompts, title)
    check_errors(result.errors)
    text = result.tool_result()
    if result.envelope is None:
        assert text.startswith(CLARIFY_ERROR_PREFIX)
    else:
        assert json.loads(text) == result.envelope
    card = clarify_simple_card(result.envelope if result.ok else prompts, "c")
    assert isinstance(card["buttons"], list)


@FAST
@given(prompts=JSON)
def test_prompts_as_json_strings_never_raise(prompts: Any) -> None:
    result = validate_clarify_prompts(json.dumps(prompts))
    check_errors(result.errors)


@FAST
@given(prompts=st.text(max_size=40))
def test_prompts_as_any_string_never_raise(prompts: str) -> None:
    check_errors(validate_clarify_prompts(prompts).errors)


@FAST
@given(envelope=JSON, value=JSON)
def test_answers_responses_cards_and_summaries_never_raise(envelope: Any, value: Any) -> None:
    check_errors(validate_clarify_answers(envelope, value))
    check_errors(validate_clarify_response(envelope, value))
    check_errors(validate_clarify_answers(ENVELOPE, value))
    check_errors(validate_clarify_response(ENVELOPE, value))
    check_errors(validate_clarify_response(ENVELOPE, {"action": "accept", "content": value}))
    clarify_simple_card(envelope, "c")
    clarify_simple_card({"prompts": [value]}, "c")
    assert isinstance(clarify_answer_summary(envelope, value), str)
    assert isinstance(clarify_answer_summary(ENVELOPE, value), str)


# Generated valid calls.

IDS = st.from_regex(r"\A[a-z][a-z0-9_.-]{0,63}\Z")


def visible(max_length: int) -> st.SearchStrategy[str]:
    return (
        st.text(min_size=1, max_size=min(max_length, 40))
        .filter(lambda s: s.strip(JS_SPACE) != "")
        .filter(lambda s: utf16(s) <= max_length)
    )


OPTIONAL_COMMON = {"hint": visible(500), "required": st.booleans()}


@st.composite
def valid_prompt(draw: st.DrawFn, prompt_id: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(CLARIFY_KINDS))
    prompt: dict[str, Any] = {"id": prompt_id, "kind": kind, "question": draw(visible(500))}
    optional: dict[str, st.SearchStrategy[Any]] = dict(OPTIONAL_COMMON)
    if kind == "choice":
        option_ids = draw(st.lists(IDS, min_size=2, max_size=12, unique=True))
        prompt["options"] = [
            draw(
                st.fixed_dictionaries(
                    {"id": st.just(option_id), "label": visible(120)},
                    optional={"description": visible(300)},
                )
            )
            for option_id in option_ids
        ]
        optional["allowMultiple"] = st.booleans()
    elif kind == "confirm":
        optional.update(
            confirmLabel=visible(120) | st.sampled_from(["Delete", "Keep", "Confirm"]),
            cancelLabel=visible(120) | st.sampled_from(["Keep", "Cancel"]),
            danger=st.booleans(),
        )
    else:
        optional.update(
            placeholder=visible(200), defaultValue=visible(2000), multiline=st.booleans()
        )
    extra = draw(st.fixed_dictionaries({}, optional=optional))
    return {**prompt, **extra}


@st.composite
def valid_call(draw: st.DrawFn) -> tuple[Any, Any]:
    ids = draw(st.lists(IDS, min_size=1, max_size=5, unique=True))
    prompts = [draw(valid_prompt(prompt_id)) for prompt_id in ids]
    title = draw(st.none() | visible(120))
    form = draw(st.sampled_from(["list", "string", "object"]))
    if form == "string":
        return json.dumps(prompts), title
    if form == "object" and len(prompts) == 1:
        return prompts[0], title
    return prompts, title


@st.composite
def valid_answer(draw: st.DrawFn, prompt: dict[str, Any]) -> dict[str, Any]:
    kind = prompt["kind"]
    if kind == "choice":
        option_ids = [o["id"] for o in prompt["options"]]
        low = 1 if prompt["required"] else 0
        high = len(option_ids) if prompt["allowMultiple"] else 1
        values = draw(
            st.lists(st.sampled_from(option_ids), min_size=low, max_size=high, unique=True)
        )
        return {"id": prompt["id"], "kind": kind, "values": values}
    if kind == "confirm":
        return {"id": prompt["id"], "kind": kind, "confirmed": draw(st.booleans())}
    value = draw(visible(2000) if prompt["required"] else st.text(max_size=20))
    return {"id": prompt["id"], "kind": kind, "value": value}


@FAST
@given(data=st.data(), call_args=valid_call())
def test_generated_valid_calls(data: st.DataObject, call_args: tuple[Any, Any]) -> None:
    prompts, title = call_args
    result = validate_clarify_prompts(prompts, title)
    assert result.errors == []
    envelope = result.envelope
    assert envelope is not None
    # The canonical envelope is valid as it stands, and its own canonical form.
    again = validate_clarify_prompts(envelope["prompts"], envelope.get("title"))
    assert again.envelope == envelope

    card = clarify_simple_card(envelope, "call_x")
    check_card(card, envelope)
    assert card["handoff"] == (card["buttons"] == [SKIP])

    entries = [
        data.draw(valid_answer(p))
        for p in envelope["prompts"]
        if p["required"] or data.draw(st.booleans())
    ]
    entries = data.draw(st.permutations(entries))
    content = {"protocol": CLARIFY_PROTOCOL, "answers": entries}
    assert validate_clarify_answers(envelope, content) == []
    assert validate_clarify_response(envelope, {"action": "accept", "content": content}) == []
    summary = clarify_answer_summary(envelope, content)
    assert len(summary.split("\n")) == len(envelope["prompts"])
