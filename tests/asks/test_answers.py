"""`validate_ask_response`: one case per row of the spec's answer tables, valid and invalid.

Every case states the whole ``[(path, code)]`` list, in order, and every error is checked for a
one-sentence message and fix. The asks are the spec's own examples where it has them.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from examples import PIZZA, PLAN
from handrail.asks import ASK_ERROR_CODES, ASK_LIMITS, AskValidationError, validate_ask_response

Pairs = list[tuple[str, str]]

EMOJI = "\U0001f600"  # 😀, two UTF-16 code units


def check_error_text(error: AskValidationError) -> None:
    assert error.code in ASK_ERROR_CODES
    for text in (error.message, error.fix):
        assert text.strip(), error
        assert "\n" not in text, error
        assert text.rstrip().endswith((".", ")")), error


def pairs(kind: Any, input: Any, response: Any, **options: Any) -> Pairs:
    errors = validate_ask_response(kind, input, response, **options)
    for error in errors:
        check_error_text(error)
    return [(e.path, e.code) for e in errors]


def accept(content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


DECLINE = {"action": "decline"}

# --- The spec's example asks -------------------------------------------------------------------

CLEAN_UP: dict[str, Any] = {
    "title": "Clean up todos",
    "prompt": "Delete 14 completed todos? This cannot be undone.",
    "confirmLabel": "Delete 14 todos",
    "denyLabel": "Keep them",
    "destructive": True,
}
LAUNCH: dict[str, Any] = {
    "title": "Launch announcement",
    "prompt": "Here is a draft announcement. Edit anything, then send it back.",
    "initial": "# We're live\n\nToday we launched **Terreno Asks**.",
    "maxLength": 2000,
    "submitLabel": "Send it back",
}
US_EU = [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}]
INVOICE: dict[str, Any] = {
    "title": "Invoice details",
    "prompt": "A few details for the invoice.",
    "fields": [
        {
            "id": "company",
            "type": "text",
            "label": "Company name",
            "required": True,
            "maxLength": 120,
        },
        {"id": "seats", "type": "number", "label": "Seats", "min": 1, "max": 500, "integer": True},
        {"id": "start", "type": "date", "label": "Start date"},
        {"id": "region", "type": "select", "label": "Region", "options": US_EU},
        {"id": "notify", "type": "boolean", "label": "Email me the invoice", "default": True},
    ],
    "submitLabel": "Send details",
}
RECEIPT: dict[str, Any] = {
    "title": "Upload a receipt",
    "prompt": "Upload the receipt for your expense report.",
    "accept": ["image", "pdf", "text", "csv"],
    "maxFiles": 3,
    "submitLabel": "Send receipt",
}

PLAN_ANSWER = accept({"selected": ["team"]})
PIZZA_ANSWER = accept({"selected": ["cheese", "olives"], "other": "Basil"})
CLEAN_UP_ANSWER = accept({"confirmed": True})
LAUNCH_ANSWER = accept({"markdown": "# We're live\n\nWe launched today.", "changed": True})
INVOICE_ANSWER = accept(
    {
        "values": {
            "company": "Acme",
            "seats": 12,
            "start": "2026-10-01",
            "region": "us",
            "notify": True,
        }
    }
)
RECEIPT_FILE = {
    "fileId": "66f0c0ffee0000000000000a",
    "filename": "receipt.png",
    "mimeType": "image/png",
    "size": 48213,
}
RECEIPT_ANSWER = accept({"files": [RECEIPT_FILE]})

EXAMPLES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "choice": (PLAN, PLAN_ANSWER),
    "confirm": (CLEAN_UP, CLEAN_UP_ANSWER),
    "markdown": (LAUNCH, LAUNCH_ANSWER),
    "form": (INVOICE, INVOICE_ANSWER),
    "files": (RECEIPT, RECEIPT_ANSWER),
}


@pytest.mark.parametrize(
    ("kind", "input", "response"),
    [
        pytest.param("choice", PLAN, PLAN_ANSWER, id="plan"),
        pytest.param("choice", PIZZA, PIZZA_ANSWER, id="pizza"),
        pytest.param("confirm", CLEAN_UP, CLEAN_UP_ANSWER, id="clean-up-approve"),
        pytest.param("confirm", CLEAN_UP, accept({"confirmed": False}), id="clean-up-deny"),
        pytest.param("markdown", LAUNCH, LAUNCH_ANSWER, id="launch"),
        pytest.param("form", INVOICE, INVOICE_ANSWER, id="invoice"),
        pytest.param("files", RECEIPT, RECEIPT_ANSWER, id="receipt"),
    ],
)
def test_spec_example_answers_are_valid(kind: str, input: Any, response: Any) -> None:
    assert pairs(kind, input, response) == []


def test_limits_are_the_numbers_these_tests_use() -> None:
    # The cases below spell their boundaries out; they hold while ASK_LIMITS says the same.
    assert ASK_LIMITS["cancelReasonMaxLength"] == 200
    assert ASK_LIMITS["choice"]["optionsMax"] == 50
    assert ASK_LIMITS["choice"]["otherMaxLength"] == 500
    assert ASK_LIMITS["markdown"]["maxLength"] == 20_000
    assert ASK_LIMITS["form"]["textMaxLength"] == 2000
    assert ASK_LIMITS["form"]["textareaMaxLength"] == 10_000
    assert ASK_LIMITS["form"]["phoneDigitsMin"] == 7
    assert ASK_LIMITS["form"]["phoneDigitsMax"] == 15
    assert ASK_LIMITS["files"]["filenameMaxLength"] == 255
    assert ASK_LIMITS["files"]["maxFiles"] == 10
    assert ASK_LIMITS["files"]["defaultMaxFileSizeBytes"] == 10_485_760


# --- Answer envelope --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
@pytest.mark.parametrize(
    ("response", "expected"),
    [
        pytest.param({"action": "cancel"}, [], id="cancel"),
        pytest.param({"action": "cancel", "reason": "user_sent_message"}, [], id="cancel-reason"),
        pytest.param({"action": "cancel", "reason": "one_ask_at_a_time"}, [], id="cancel-one-ask"),
        pytest.param({"action": "cancel", "reason": "r" * 200}, [], id="cancel-reason-200"),
        pytest.param(
            {"action": "cancel", "reason": "r" * 201}, [("reason", "TOO_LONG")], id="reason-201"
        ),
        pytest.param({"action": "cancel", "reason": EMOJI * 100}, [], id="reason-100-emoji"),
        pytest.param(
            {"action": "cancel", "reason": EMOJI * 100 + "r"},
            [("reason", "TOO_LONG")],
            id="reason-emoji-201",
        ),
        # An empty reason says nothing: leave it out instead (see the report).
        pytest.param({"action": "cancel", "reason": ""}, [("reason", "TOO_SHORT")], id="reason-0"),
        pytest.param({"action": "cancel", "reason": "  "}, [], id="reason-blank"),
        pytest.param(
            {"action": "cancel", "reason": 5}, [("reason", "INVALID_TYPE")], id="reason-number"
        ),
        pytest.param(
            {"action": "cancel", "reason": None}, [("reason", "INVALID_TYPE")], id="reason-null"
        ),
        pytest.param(
            {"action": "cancel", "content": {}}, [("content", "UNKNOWN_KEY")], id="cancel-content"
        ),
        pytest.param({}, [("action", "MISSING_REQUIRED")], id="no-action"),
        pytest.param(
            {"content": {"selected": ["team"]}},
            [("action", "MISSING_REQUIRED")],
            id="content-without-action",
        ),
        pytest.param({"action": "skip"}, [("action", "INVALID_ENUM")], id="action-skip"),
        pytest.param({"action": "Accept"}, [("action", "INVALID_ENUM")], id="action-case"),
        pytest.param({"action": ""}, [("action", "INVALID_ENUM")], id="action-empty"),
        pytest.param({"action": None}, [("action", "INVALID_ENUM")], id="action-null"),
        pytest.param({"action": 1}, [("action", "INVALID_ENUM")], id="action-number"),
        pytest.param(
            {"action": "accept"}, [("content", "MISSING_REQUIRED")], id="accept-no-content"
        ),
        pytest.param(accept(None), [("content", "INVALID_TYPE")], id="accept-content-null"),
        pytest.param(accept([]), [("content", "INVALID_TYPE")], id="accept-content-list"),
        pytest.param(accept("yes"), [("content", "INVALID_TYPE")], id="accept-content-str"),
        pytest.param(
            {"action": "cancel", "reason": "gone", "note": 1},
            [("note", "UNKNOWN_KEY")],
            id="cancel-extra-key",
        ),
    ],
)
def test_envelope(kind: str, response: Any, expected: Pairs) -> None:
    input = EXAMPLES[kind][0]
    assert pairs(kind, input, response) == expected


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_accept_with_extra_keys(kind: str) -> None:
    input, answer = EXAMPLES[kind]
    response = {**answer, "reason": "x", "meta": {}}
    assert pairs(kind, input, response) == [("meta", "UNKNOWN_KEY"), ("reason", "UNKNOWN_KEY")]


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
@pytest.mark.parametrize("response", [None, "accept", ["accept"], 1, True], ids=repr)
def test_response_not_an_object(kind: str, response: Any) -> None:
    assert pairs(kind, EXAMPLES[kind][0], response) == [("", "INVALID_TYPE")]


@pytest.mark.parametrize("kind", ["poll", "", None, 1, "Choice"])
def test_unknown_kind(kind: Any) -> None:
    assert pairs(kind, PLAN, PLAN_ANSWER) == [("kind", "INVALID_ENUM")]


@pytest.mark.parametrize(
    ("kind", "input", "expected"),
    [
        pytest.param("choice", PLAN, [], id="choice-default"),
        pytest.param("choice", {**PLAN, "allowDecline": True}, [], id="choice-true"),
        pytest.param(
            "choice",
            {**PLAN, "allowDecline": False},
            [("action", "DECLINE_NOT_ALLOWED")],
            id="choice-false",
        ),
        pytest.param(
            "confirm", CLEAN_UP, [("action", "DECLINE_NOT_ALLOWED")], id="confirm-default"
        ),
        pytest.param("confirm", {**CLEAN_UP, "allowDecline": True}, [], id="confirm-true"),
        pytest.param(
            "confirm",
            {**CLEAN_UP, "allowDecline": False},
            [("action", "DECLINE_NOT_ALLOWED")],
            id="confirm-false",
        ),
        pytest.param("markdown", LAUNCH, [], id="markdown-default"),
        pytest.param(
            "markdown",
            {**LAUNCH, "allowDecline": False},
            [("action", "DECLINE_NOT_ALLOWED")],
            id="markdown-false",
        ),
        pytest.param("form", INVOICE, [], id="form-default"),
        pytest.param(
            "form",
            {**INVOICE, "allowDecline": False},
            [("action", "DECLINE_NOT_ALLOWED")],
            id="form-false",
        ),
        pytest.param("files", RECEIPT, [], id="files-default"),
        pytest.param(
            "files",
            {**RECEIPT, "allowDecline": False},
            [("action", "DECLINE_NOT_ALLOWED")],
            id="files-false",
        ),
    ],
)
def test_decline(kind: str, input: dict[str, Any], expected: Pairs) -> None:
    assert pairs(kind, input, DECLINE) == expected


def test_decline_not_allowed_and_extra_key() -> None:
    response = {"action": "decline", "content": {"confirmed": False}}
    assert pairs("confirm", CLEAN_UP, response) == [
        ("action", "DECLINE_NOT_ALLOWED"),
        ("content", "UNKNOWN_KEY"),
    ]


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_cancel_is_always_allowed(kind: str) -> None:
    input = {**EXAMPLES[kind][0], "allowDecline": False}
    assert pairs(kind, input, {"action": "cancel", "reason": "user_sent_message"}) == []


# --- choice -----------------------------------------------------------------------------------


def options(count: int) -> list[dict[str, Any]]:
    return [{"id": f"o{i}", "label": f"Option {i}"} for i in range(count)]


MANY: dict[str, Any] = {"prompt": "Pick some.", "select": "many", "options": options(3)}

CHOICE_CASES = [
    # "one": exactly one offered id
    pytest.param(PLAN, {"selected": ["starter"]}, [], id="plan-starter"),
    pytest.param(
        PLAN,
        {"selected": ["gold"]},
        [("content.selected[0]", "OPTION_NOT_OFFERED")],
        id="plan-not-offered",
    ),
    pytest.param(
        PLAN,
        {"selected": ["Team"]},
        [("content.selected[0]", "OPTION_NOT_OFFERED")],
        id="plan-id-case",
    ),
    pytest.param(PLAN, {"selected": []}, [("content.selected", "SELECTION_COUNT")], id="plan-0"),
    pytest.param(
        PLAN,
        {"selected": ["team", "starter"]},
        [("content.selected", "SELECTION_COUNT")],
        id="plan-2",
    ),
    pytest.param(
        PLAN,
        {"selected": ["team", "team"]},
        [("content.selected", "SELECTION_COUNT"), ("content.selected[1]", "DUPLICATE_ID")],
        id="plan-duplicate",
    ),
    pytest.param(
        PLAN,
        {"selected": ["team"], "other": "Gold"},
        [("content.other", "OTHER_NOT_ALLOWED")],
        id="plan-other",
    ),
    pytest.param(
        PLAN,
        {"selected": [], "other": "Gold"},
        [("content.other", "OTHER_NOT_ALLOWED"), ("content.selected", "SELECTION_COUNT")],
        id="plan-only-other",
    ),
    pytest.param(PLAN, {}, [("content.selected", "MISSING_REQUIRED")], id="selected-missing"),
    # selected is required even when Other alone is the answer (see the report).
    pytest.param(
        PIZZA, {"other": "Basil"}, [("content.selected", "MISSING_REQUIRED")], id="only-other-key"
    ),
    pytest.param(
        PLAN, {"selected": "team"}, [("content.selected", "INVALID_TYPE")], id="selected-str"
    ),
    pytest.param(
        PLAN, {"selected": None}, [("content.selected", "INVALID_TYPE")], id="selected-null"
    ),
    pytest.param(
        PLAN, {"selected": [1]}, [("content.selected[0]", "INVALID_TYPE")], id="selected-number"
    ),
    pytest.param(
        PLAN,
        {"selected": ["team"], "note": "x"},
        [("content.note", "UNKNOWN_KEY")],
        id="content-extra-key",
    ),
    # pizza: "many", maxSelected 3, Other allowed and counting as one
    pytest.param(PIZZA, {"selected": ["cheese", "mushrooms"]}, [], id="pizza-default"),
    pytest.param(PIZZA, {"selected": ["cheese", "olives", "peppers"]}, [], id="pizza-3"),
    pytest.param(
        PIZZA, {"selected": ["cheese", "olives"], "other": "Basil"}, [], id="pizza-2-and-other"
    ),
    pytest.param(PIZZA, {"selected": [], "other": "Basil"}, [], id="pizza-only-other"),
    pytest.param(
        PIZZA,
        {"selected": ["cheese", "olives", "peppers", "pineapple"]},
        [("content.selected", "SELECTION_COUNT")],
        id="pizza-4",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["cheese", "olives", "peppers"], "other": "Basil"},
        [("content.selected", "SELECTION_COUNT")],
        id="pizza-3-and-other",
    ),
    pytest.param(PIZZA, {"selected": []}, [("content.selected", "SELECTION_COUNT")], id="pizza-0"),
    pytest.param(
        PIZZA,
        {"selected": ["ham"]},
        [("content.selected[0]", "OPTION_NOT_OFFERED")],
        id="pizza-not-offered",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["olives", "olives"]},
        [("content.selected[1]", "DUPLICATE_ID")],
        id="pizza-duplicate",
    ),
    pytest.param(PIZZA, {"selected": ["cheese"], "other": "o" * 500}, [], id="other-500"),
    pytest.param(
        PIZZA,
        {"selected": ["cheese"], "other": "o" * 501},
        [("content.other", "TOO_LONG")],
        id="other-501",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["cheese"], "other": EMOJI * 250 + "o"},
        [("content.other", "TOO_LONG")],
        id="other-emoji-501",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["cheese"], "other": ""},
        [("content.other", "TOO_SHORT")],
        id="other-empty",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["cheese"], "other": " \t"},
        [("content.other", "TOO_SHORT")],
        id="other-blank",
    ),
    pytest.param(
        PIZZA,
        {"selected": ["cheese"], "other": 5},
        [("content.other", "INVALID_TYPE")],
        id="other-number",
    ),
    # A blank Other is not a choice: only its own error, no SELECTION_COUNT on top.
    pytest.param(
        PIZZA,
        {"selected": ["cheese", "olives", "peppers"], "other": " "},
        [("content.other", "TOO_SHORT")],
        id="blank-other-not-counted",
    ),
    # "many" without Other
    pytest.param(
        MANY,
        {"selected": ["o0"], "other": "x"},
        [("content.other", "OTHER_NOT_ALLOWED")],
        id="many-other-not-allowed",
    ),
    pytest.param(
        {**MANY, "allowOther": False},
        {"selected": ["o0"], "other": "x"},
        [("content.other", "OTHER_NOT_ALLOWED")],
        id="many-other-false",
    ),
    pytest.param(MANY, {"selected": ["o0", "o1", "o2"]}, [], id="many-every-option"),
    pytest.param(MANY, {"selected": []}, [("content.selected", "SELECTION_COUNT")], id="many-0"),
    pytest.param({**MANY, "minSelected": 0}, {"selected": []}, [], id="many-min-0"),
    pytest.param(
        {**MANY, "minSelected": 2},
        {"selected": ["o0"]},
        [("content.selected", "SELECTION_COUNT")],
        id="many-below-min",
    ),
    pytest.param(
        {**MANY, "minSelected": 2, "allowOther": True},
        {"selected": ["o0"], "other": "x"},
        [],
        id="many-min-met-with-other",
    ),
    pytest.param(
        {**MANY, "maxSelected": 1, "allowOther": True},
        {"selected": [], "other": "x"},
        [],
        id="one-option-or-other-other",
    ),
    pytest.param(
        {**MANY, "maxSelected": 1, "allowOther": True},
        {"selected": ["o1"], "other": "x"},
        [("content.selected", "SELECTION_COUNT")],
        id="one-option-or-other-both",
    ),
    pytest.param(
        {**MANY, "allowOther": True},
        {"selected": ["o0", "o1", "o2"], "other": "x"},
        [],
        id="many-every-choice-with-other",
    ),
    # At most 50 ids
    pytest.param(
        {**MANY, "options": options(50)},
        {"selected": [f"o{i}" for i in range(50)]},
        [],
        id="selected-50",
    ),
    pytest.param(
        {**MANY, "options": options(50)},
        {"selected": [*(f"o{i}" for i in range(50)), "o0"]},
        [
            ("content.selected", "SELECTION_COUNT"),
            ("content.selected", "TOO_MANY"),
            ("content.selected[50]", "DUPLICATE_ID"),
        ],
        id="selected-51",
    ),
]


@pytest.mark.parametrize(("input", "content", "expected"), CHOICE_CASES)
def test_choice(input: dict[str, Any], content: Any, expected: Pairs) -> None:
    assert pairs("choice", input, accept(content)) == expected


# --- confirm ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param({"confirmed": True}, [], id="approve"),
        pytest.param({"confirmed": False}, [], id="deny"),
        pytest.param({}, [("content.confirmed", "MISSING_REQUIRED")], id="missing"),
        pytest.param({"confirmed": "yes"}, [("content.confirmed", "INVALID_TYPE")], id="str"),
        pytest.param({"confirmed": 1}, [("content.confirmed", "INVALID_TYPE")], id="number"),
        pytest.param({"confirmed": None}, [("content.confirmed", "INVALID_TYPE")], id="null"),
        pytest.param(
            {"confirmed": True, "reason": "ok"}, [("content.reason", "UNKNOWN_KEY")], id="extra-key"
        ),
        pytest.param(
            {"approved": True},
            [("content.approved", "UNKNOWN_KEY"), ("content.confirmed", "MISSING_REQUIRED")],
            id="wrong-key",
        ),
    ],
)
def test_confirm(content: Any, expected: Pairs) -> None:
    assert pairs("confirm", CLEAN_UP, accept(content)) == expected
    assert pairs("confirm", {"prompt": "Go?"}, accept(content)) == expected


# --- markdown ---------------------------------------------------------------------------------

NO_INITIAL: dict[str, Any] = {"prompt": "Write a short bio.", "minLength": 5, "maxLength": 10}
DRAFT: str = LAUNCH["initial"]

MARKDOWN_CASES = [
    # changed: true exactly when markdown differs from initial
    pytest.param(LAUNCH, {"markdown": DRAFT, "changed": False}, [], id="approve-draft"),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT, "changed": True},
        [("content.changed", "CHANGED_MISMATCH")],
        id="same-but-changed-true",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": "# We're live", "changed": False},
        [("content.changed", "CHANGED_MISMATCH")],
        id="differs-but-changed-false",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT + " ", "changed": True},
        [],
        id="trailing-space-is-a-change",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT + " ", "changed": False},
        [("content.changed", "CHANGED_MISMATCH")],
        id="trailing-space-changed-false",
    ),
    # No initial means "".
    pytest.param(
        {"prompt": "Write."}, {"markdown": "", "changed": False}, [], id="no-initial-empty"
    ),
    pytest.param(
        {"prompt": "Write."},
        {"markdown": "", "changed": True},
        [("content.changed", "CHANGED_MISMATCH")],
        id="no-initial-empty-changed-true",
    ),
    pytest.param(
        {"prompt": "Write."}, {"markdown": "Hi", "changed": True}, [], id="no-initial-text"
    ),
    pytest.param(
        {"prompt": "Write."},
        {"markdown": "Hi", "changed": False},
        [("content.changed", "CHANGED_MISMATCH")],
        id="no-initial-text-changed-false",
    ),
    # maxLength, in UTF-16 code units
    pytest.param(LAUNCH, {"markdown": "m" * 2000, "changed": True}, [], id="max-2000"),
    pytest.param(
        LAUNCH,
        {"markdown": "m" * 2001, "changed": True},
        [("content.markdown", "TOO_LONG")],
        id="above-max",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": EMOJI * 1000 + "m", "changed": True},
        [("content.markdown", "TOO_LONG")],
        id="above-max-emoji",
    ),
    pytest.param(
        {"prompt": "Write."}, {"markdown": "m" * 20_000, "changed": True}, [], id="default-max"
    ),
    pytest.param(
        {"prompt": "Write."},
        {"markdown": "m" * 20_001, "changed": True},
        [("content.markdown", "TOO_LONG")],
        id="above-default-max",
    ),
    pytest.param(
        {"prompt": "Write.", "maxLength": 30_000},
        {"markdown": "m" * 20_001, "changed": True},
        [("content.markdown", "TOO_LONG")],
        id="never-above-20000",
    ),
    # minLength, without spaces at either end
    pytest.param(NO_INITIAL, {"markdown": "abcde", "changed": True}, [], id="min-5"),
    pytest.param(NO_INITIAL, {"markdown": "  abcde  ", "changed": True}, [], id="min-5-padded"),
    pytest.param(
        NO_INITIAL,
        {"markdown": "  abcd   ", "changed": True},
        [("content.markdown", "TOO_SHORT")],
        id="below-min-after-trim",
    ),
    pytest.param(
        NO_INITIAL,
        {"markdown": "", "changed": False},
        [("content.markdown", "TOO_SHORT")],
        id="empty-below-min",
    ),
    pytest.param(
        NO_INITIAL,
        {"markdown": "abcdefghijk", "changed": True},
        [("content.markdown", "TOO_LONG")],
        id="above-max-11",
    ),
    pytest.param(
        {"prompt": "Write.", "initial": "   ", "minLength": 1},
        {"markdown": "   ", "changed": False},
        [("content.markdown", "TOO_SHORT")],
        id="blank-draft-below-min",
    ),
    pytest.param({"prompt": "Write."}, {"markdown": "   ", "changed": True}, [], id="blank-min-0"),
    # minLength counts UTF-16 code units, like maxLength (see the report).
    pytest.param(
        {"prompt": "Write.", "minLength": 2},
        {"markdown": EMOJI, "changed": True},
        [],
        id="min-emoji",
    ),
    # Required and typed
    pytest.param(
        LAUNCH, {"changed": True}, [("content.markdown", "MISSING_REQUIRED")], id="markdown-missing"
    ),
    pytest.param(
        LAUNCH, {"markdown": DRAFT}, [("content.changed", "MISSING_REQUIRED")], id="changed-missing"
    ),
    pytest.param(
        LAUNCH,
        {},
        [("content.changed", "MISSING_REQUIRED"), ("content.markdown", "MISSING_REQUIRED")],
        id="both-missing",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": 5, "changed": True},
        [("content.markdown", "INVALID_TYPE")],
        id="markdown-number",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": None, "changed": True},
        [("content.markdown", "INVALID_TYPE")],
        id="markdown-null",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT, "changed": "no"},
        [("content.changed", "INVALID_TYPE")],
        id="changed-str",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT, "changed": 0},
        [("content.changed", "INVALID_TYPE")],
        id="changed-number",
    ),
    pytest.param(
        LAUNCH,
        {"markdown": DRAFT, "changed": False, "html": "<p>"},
        [("content.html", "UNKNOWN_KEY")],
        id="extra-key",
    ),
]


@pytest.mark.parametrize(("input", "content", "expected"), MARKDOWN_CASES)
def test_markdown(input: dict[str, Any], content: Any, expected: Pairs) -> None:
    assert pairs("markdown", input, accept(content)) == expected


# --- form -------------------------------------------------------------------------------------


def one_field(type: str, **extra: Any) -> dict[str, Any]:
    """A form with one field, id ``v``, so a value's path is ``content.values.v``."""
    return {"prompt": "Fill this in.", "fields": [{"id": "v", "type": type, "label": "V", **extra}]}


MISMATCH = ["FIELD_TYPE_MISMATCH"]

FORM_VALUE_CASES = [
    # text
    pytest.param(one_field("text"), "Acme", [], id="text"),
    pytest.param(one_field("text"), "t" * 2000, [], id="text-2000"),
    pytest.param(one_field("text"), "t" * 2001, ["TOO_LONG"], id="text-2001"),
    pytest.param(one_field("text"), EMOJI * 1000 + "t", ["TOO_LONG"], id="text-emoji-2001"),
    pytest.param(one_field("text", maxLength=4), "ABCD", [], id="text-max"),
    pytest.param(one_field("text", maxLength=4), "ABCDE", ["TOO_LONG"], id="text-above-max"),
    pytest.param(one_field("text", minLength=3), " abc ", [], id="text-min-trimmed"),
    pytest.param(one_field("text", minLength=3), " ab ", ["TOO_SHORT"], id="text-below-min"),
    # "One line" describes the input: a line break is not refused (see the report).
    pytest.param(one_field("text"), "a\nb", [], id="text-line-break"),
    pytest.param(one_field("text"), 5, MISMATCH, id="text-number"),
    pytest.param(one_field("text"), ["Acme"], MISMATCH, id="text-list"),
    # textarea
    pytest.param(one_field("textarea"), "Line one\nLine two", [], id="textarea"),
    pytest.param(one_field("textarea"), "t" * 10_000, [], id="textarea-10000"),
    pytest.param(one_field("textarea"), "t" * 10_001, ["TOO_LONG"], id="textarea-10001"),
    pytest.param(one_field("textarea", maxLength=5), "123456", ["TOO_LONG"], id="textarea-max"),
    pytest.param(
        one_field("textarea", minLength=10), "Short", ["TOO_SHORT"], id="textarea-below-min"
    ),
    pytest.param(one_field("textarea"), False, MISMATCH, id="textarea-bool"),
    # email
    pytest.param(one_field("email"), "name@example.com", [], id="email"),
    pytest.param(one_field("email"), "first.last+tag@sub.example.org", [], id="email-plus"),
    pytest.param(one_field("email"), "name@", MISMATCH, id="email-no-domain"),
    pytest.param(one_field("email"), "@example.com", MISMATCH, id="email-no-local"),
    pytest.param(one_field("email"), "name@example", MISMATCH, id="email-no-tld"),
    pytest.param(one_field("email"), "name example.com", MISMATCH, id="email-no-at"),
    pytest.param(one_field("email"), "a..b@example.com", MISMATCH, id="email-double-dot"),
    pytest.param(one_field("email"), "a" * 1990 + "@example.com", ["TOO_LONG"], id="email-2002"),
    pytest.param(one_field("email"), 5, MISMATCH, id="email-number"),
    # url
    pytest.param(one_field("url"), "https://example.com", [], id="url-https"),
    pytest.param(one_field("url"), "http://example.com/a?b=c#d", [], id="url-http"),
    pytest.param(one_field("url"), "ftp://example.com/file", MISMATCH, id="url-ftp"),
    pytest.param(one_field("url"), "mailto:name@example.com", MISMATCH, id="url-mailto"),
    pytest.param(one_field("url"), "javascript:alert(1)", MISMATCH, id="url-javascript"),
    pytest.param(one_field("url"), "example.com", MISMATCH, id="url-no-scheme"),
    pytest.param(one_field("url"), "https://", MISMATCH, id="url-no-host"),
    pytest.param(one_field("url"), "https://exa mple.com", MISMATCH, id="url-space"),
    pytest.param(one_field("url"), "https://" + "a" * 1990 + ".com", ["TOO_LONG"], id="url-2002"),
    pytest.param(one_field("url"), {"href": "https://x.com"}, MISMATCH, id="url-object"),
    # phone: 7-15 digits, optional leading +, spaces, dots, dashes and parentheses between
    pytest.param(one_field("phone"), "+14155552671", [], id="phone-e164"),
    pytest.param(one_field("phone"), "+1 (415) 555-2671", [], id="phone-formatted"),
    pytest.param(one_field("phone"), "415.555.2671", [], id="phone-dots"),
    pytest.param(one_field("phone"), "1234567", [], id="phone-7-digits"),
    pytest.param(one_field("phone"), "+123456789012345", [], id="phone-15-digits"),
    pytest.param(one_field("phone"), "123456", MISMATCH, id="phone-6-digits"),
    pytest.param(one_field("phone"), "+1234567890123456", MISMATCH, id="phone-16-digits"),
    pytest.param(one_field("phone"), "1+4155552671", MISMATCH, id="phone-inner-plus"),
    pytest.param(one_field("phone"), "++14155552671", MISMATCH, id="phone-two-plus"),
    pytest.param(one_field("phone"), "415/555/2671", MISMATCH, id="phone-slash"),
    pytest.param(one_field("phone"), "415_555_2671", MISMATCH, id="phone-underscore"),
    pytest.param(one_field("phone"), "call 4155552671", MISMATCH, id="phone-letters"),
    pytest.param(
        one_field("phone"),
        "\u0664\u0661\u0665\u0665\u0665\u0665\u0662",
        MISMATCH,
        id="phone-arabic-digits",
    ),
    pytest.param(one_field("phone"), "+14155552671\n", MISMATCH, id="phone-newline"),
    pytest.param(one_field("phone"), 4155552671, MISMATCH, id="phone-number"),
    pytest.param(one_field("phone"), "1" * 7 + " " * 1994, ["TOO_LONG"], id="phone-2001"),
    # number
    pytest.param(one_field("number"), 12, [], id="number"),
    pytest.param(one_field("number"), -2.5, [], id="number-fraction"),
    pytest.param(one_field("number"), 0, [], id="number-zero"),
    pytest.param(one_field("number"), "12", MISMATCH, id="number-str"),
    pytest.param(one_field("number"), True, MISMATCH, id="number-bool"),
    pytest.param(one_field("number"), float("nan"), MISMATCH, id="number-nan"),
    pytest.param(one_field("number"), float("-inf"), MISMATCH, id="number-inf"),
    pytest.param(one_field("number", integer=True), 12, [], id="integer"),
    pytest.param(one_field("number", integer=True), 12.0, [], id="integer-float"),
    pytest.param(one_field("number", integer=True), 12.5, MISMATCH, id="integer-fraction"),
    pytest.param(one_field("number", integer=False), 12.5, [], id="integer-false"),
    pytest.param(one_field("number", min=1, max=500), 1, [], id="number-min"),
    pytest.param(one_field("number", min=1, max=500), 500, [], id="number-max"),
    pytest.param(one_field("number", min=1, max=500), 0.5, ["OUT_OF_RANGE"], id="number-below"),
    pytest.param(one_field("number", min=1, max=500), 501, ["OUT_OF_RANGE"], id="number-above"),
    pytest.param(
        one_field("number", min=1, integer=True),
        0.5,
        ["FIELD_TYPE_MISMATCH", "OUT_OF_RANGE"],
        id="number-fraction-and-below",
    ),
    # date / time / datetime
    pytest.param(one_field("date"), "2026-10-01", [], id="date"),
    pytest.param(one_field("date"), "2024-02-29", [], id="date-leap"),
    pytest.param(one_field("date"), "2025-02-29", ["INVALID_DATE"], id="date-not-leap"),
    pytest.param(one_field("date"), "2026-04-31", ["INVALID_DATE"], id="date-april-31"),
    pytest.param(one_field("date"), "2026-13-01", ["INVALID_DATE"], id="date-month-13"),
    pytest.param(one_field("date"), "2026-10-1", ["INVALID_DATE"], id="date-short"),
    pytest.param(one_field("date"), "01/10/2026", ["INVALID_DATE"], id="date-slashes"),
    pytest.param(one_field("date"), "2026-10-01T09:30Z", ["INVALID_DATE"], id="date-datetime"),
    pytest.param(one_field("date"), 20261001, MISMATCH, id="date-number"),
    pytest.param(one_field("time"), "09:30", [], id="time"),
    pytest.param(one_field("time"), "00:00", [], id="time-midnight"),
    pytest.param(one_field("time"), "23:59", [], id="time-last-minute"),
    pytest.param(one_field("time"), "24:00", ["INVALID_DATE"], id="time-24"),
    pytest.param(one_field("time"), "9:30", ["INVALID_DATE"], id="time-one-digit"),
    pytest.param(one_field("time"), "09:30:00", ["INVALID_DATE"], id="time-seconds"),
    pytest.param(one_field("time"), "9:30am", ["INVALID_DATE"], id="time-am"),
    pytest.param(one_field("time"), 930, MISMATCH, id="time-number"),
    pytest.param(one_field("datetime"), "2026-10-01T09:30Z", [], id="datetime-z"),
    pytest.param(one_field("datetime"), "2026-10-01T09:30:00Z", [], id="datetime-seconds"),
    pytest.param(one_field("datetime"), "2026-10-01T09:30:00.123Z", [], id="datetime-fraction"),
    pytest.param(one_field("datetime"), "2026-10-01T09:30:00+02:00", [], id="datetime-offset"),
    pytest.param(one_field("datetime"), "2026-10-01T09:30-05:30", [], id="datetime-neg-offset"),
    pytest.param(
        one_field("datetime"), "2026-10-01T09:30:00.5+00:00", [], id="datetime-fraction-offset"
    ),
    pytest.param(
        one_field("datetime"), "2026-10-01T09:30:00", ["INVALID_DATE"], id="datetime-no-offset"
    ),
    pytest.param(
        one_field("datetime"), "2026-10-01T09:30", ["INVALID_DATE"], id="datetime-no-offset-hm"
    ),
    pytest.param(one_field("datetime"), "2026-10-01", ["INVALID_DATE"], id="datetime-date"),
    pytest.param(one_field("datetime"), "2026-10-01 09:30Z", ["INVALID_DATE"], id="datetime-space"),
    pytest.param(
        one_field("datetime"), "2026-02-30T09:30Z", ["INVALID_DATE"], id="datetime-not-real"
    ),
    pytest.param(
        one_field("datetime"), "2026-10-01T24:00Z", ["INVALID_DATE"], id="datetime-hour-24"
    ),
    pytest.param(one_field("datetime"), 1_790_000_000, MISMATCH, id="datetime-number"),
    # boolean: false is an answer
    pytest.param(one_field("boolean"), True, [], id="boolean-true"),
    pytest.param(one_field("boolean"), False, [], id="boolean-false"),
    pytest.param(one_field("boolean", required=True), False, [], id="boolean-required-false"),
    pytest.param(one_field("boolean"), "true", MISMATCH, id="boolean-str"),
    pytest.param(one_field("boolean"), 0, MISMATCH, id="boolean-number"),
    # select / multiselect
    pytest.param(one_field("select", options=US_EU), "us", [], id="select"),
    pytest.param(
        one_field("select", options=US_EU), "apac", ["OPTION_NOT_OFFERED"], id="select-not-offered"
    ),
    pytest.param(one_field("select", options=US_EU), ["us"], MISMATCH, id="select-list"),
    pytest.param(one_field("multiselect", options=US_EU), ["us", "eu"], [], id="multiselect"),
    pytest.param(one_field("multiselect", options=US_EU), ["eu"], [], id="multiselect-one"),
    pytest.param(one_field("multiselect", options=US_EU), "us", MISMATCH, id="multiselect-str"),
    # null is a wrong JSON type
    *(
        pytest.param(one_field(t, **extra), None, MISMATCH, id=f"{t}-null")
        for t, extra in (
            ("text", {}),
            ("textarea", {}),
            ("email", {}),
            ("url", {}),
            ("phone", {}),
            ("number", {}),
            ("date", {}),
            ("time", {}),
            ("datetime", {}),
            ("boolean", {}),
            ("select", {"options": US_EU}),
            ("multiselect", {"options": US_EU}),
        )
    ),
]


@pytest.mark.parametrize(("input", "value", "codes"), FORM_VALUE_CASES)
def test_form_value(input: dict[str, Any], value: Any, codes: list[str]) -> None:
    expected = [("content.values.v", code) for code in codes]
    assert pairs("form", input, accept({"values": {"v": value}})) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(["us", "us"], [("content.values.v[1]", "DUPLICATE_ID")], id="duplicate"),
        pytest.param(
            ["us", "apac"], [("content.values.v[1]", "OPTION_NOT_OFFERED")], id="not-offered"
        ),
        pytest.param(["us", 1], [("content.values.v[1]", "FIELD_TYPE_MISMATCH")], id="item-number"),
        pytest.param(["us"] * 51, [("content.values.v", "TOO_MANY")], id="more-than-50"),
    ],
)
def test_form_multiselect_items(value: Any, expected: Pairs) -> None:
    input = one_field("multiselect", options=US_EU)
    assert pairs("form", input, accept({"values": {"v": value}})) == expected


BLANKS: dict[str, Any] = {
    "text": "",
    "textarea": " \n ",
    "email": "  ",
    "url": "",
    "phone": " ",
    "date": "",
    "time": "\t",
    "datetime": "",
    "select": "",
    "multiselect": [],
}
EXTRA: dict[str, Any] = {"select": {"options": US_EU}, "multiselect": {"options": US_EU}}
ALL_TYPES = [
    "text",
    "textarea",
    "email",
    "url",
    "phone",
    "number",
    "date",
    "time",
    "datetime",
    "boolean",
    "select",
    "multiselect",
]


@pytest.mark.parametrize("field_type", sorted(BLANKS))
def test_form_blank_value_counts_as_unanswered(field_type: str) -> None:
    blank = {"values": {"v": BLANKS[field_type]}}
    optional = one_field(field_type, **EXTRA.get(field_type, {}))
    required = one_field(field_type, required=True, **EXTRA.get(field_type, {}))

    assert pairs("form", optional, accept(blank)) == []
    assert pairs("form", required, accept(blank)) == [("content.values.v", "REQUIRED_FIELD")]


@pytest.mark.parametrize("field_type", ALL_TYPES)
def test_form_missing_value(field_type: str) -> None:
    optional = one_field(field_type, **EXTRA.get(field_type, {}))
    required = one_field(field_type, required=True, **EXTRA.get(field_type, {}))

    assert pairs("form", optional, accept({"values": {}})) == []
    assert pairs("form", required, accept({"values": {}})) == [
        ("content.values.v", "REQUIRED_FIELD")
    ]
    # null is an answer of the wrong type, not a blank one.
    assert pairs("form", required, accept({"values": {"v": None}})) == [
        ("content.values.v", "FIELD_TYPE_MISMATCH")
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param({}, [("content.values", "MISSING_REQUIRED")], id="values-missing"),
        pytest.param({"values": []}, [("content.values", "INVALID_TYPE")], id="values-list"),
        pytest.param({"values": None}, [("content.values", "INVALID_TYPE")], id="values-null"),
        pytest.param(
            {"values": {"company": "Acme"}, "extra": 1},
            [("content.extra", "UNKNOWN_KEY")],
            id="content-extra-key",
        ),
        pytest.param(
            {"values": {"company": "Acme", "coupon": "X"}},
            [("content.values.coupon", "UNKNOWN_KEY")],
            id="unknown-value-key",
        ),
        pytest.param(
            {"values": {"company": "Acme", "Company": "X"}},
            [("content.values.Company", "UNKNOWN_KEY")],
            id="value-key-case",
        ),
        pytest.param({"values": {"company": "Acme"}}, [], id="only-required"),
        pytest.param(
            {"values": {"seats": 12}},
            [("content.values.company", "REQUIRED_FIELD")],
            id="required-missing",
        ),
        pytest.param(
            {"values": {"company": "   ", "region": ""}},
            [("content.values.company", "REQUIRED_FIELD")],
            id="required-blank-optional-blank",
        ),
        pytest.param(
            {
                "values": {
                    "company": "c" * 121,
                    "seats": 0.5,
                    "start": "2026-02-30",
                    "region": "apac",
                    "notify": "yes",
                }
            },
            [
                ("content.values.company", "TOO_LONG"),
                ("content.values.notify", "FIELD_TYPE_MISMATCH"),
                ("content.values.region", "OPTION_NOT_OFFERED"),
                ("content.values.seats", "FIELD_TYPE_MISMATCH"),
                ("content.values.seats", "OUT_OF_RANGE"),
                ("content.values.start", "INVALID_DATE"),
            ],
            id="every-value-wrong",
        ),
    ],
)
def test_form_values(content: Any, expected: Pairs) -> None:
    assert pairs("form", INVOICE, accept(content)) == expected


# --- files ------------------------------------------------------------------------------------

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
JPEG_DATA_URL = "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8\xff\xe0").decode()


def ref(**changes: Any) -> dict[str, Any]:
    return {**RECEIPT_FILE, **changes}


def url_ref(url: Any = PNG_DATA_URL, **changes: Any) -> dict[str, Any]:
    out = {"url": url, "filename": "receipt.png", "mimeType": "image/png", "size": 16}
    out.update(changes)
    return out


def without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}


FILES_CASES = [
    # files: from minFiles to maxFiles
    pytest.param(RECEIPT, {"files": [ref(), ref(), ref()]}, [], id="three"),
    pytest.param(RECEIPT, {"files": []}, [("content.files", "FILE_COUNT")], id="none"),
    pytest.param(
        RECEIPT,
        {"files": [ref(), ref(), ref(), ref()]},
        [("content.files", "FILE_COUNT")],
        id="above-max",
    ),
    pytest.param(
        {**RECEIPT, "minFiles": 2},
        {"files": [ref()]},
        [("content.files", "FILE_COUNT")],
        id="below-min",
    ),
    pytest.param(
        {"prompt": "Upload.", "accept": ["image"]},
        {"files": [ref()] * 10},
        [],
        id="default-max-10",
    ),
    pytest.param(
        {"prompt": "Upload.", "accept": ["image"]},
        {"files": [ref()] * 11},
        [("content.files", "FILE_COUNT")],
        id="above-default-max",
    ),
    pytest.param(RECEIPT, {}, [("content.files", "MISSING_REQUIRED")], id="files-missing"),
    pytest.param(RECEIPT, {"files": ref()}, [("content.files", "INVALID_TYPE")], id="files-object"),
    pytest.param(
        RECEIPT, {"files": ["receipt.png"]}, [("content.files[0]", "INVALID_TYPE")], id="ref-str"
    ),
    pytest.param(
        RECEIPT,
        {"files": [RECEIPT_FILE], "note": "x"},
        [("content.note", "UNKNOWN_KEY")],
        id="content-extra-key",
    ),
    pytest.param(
        RECEIPT,
        {"files": [{**RECEIPT_FILE, "path": "/tmp/x"}]},
        [("content.files[0].path", "UNKNOWN_KEY")],
        id="ref-extra-key",
    ),
    # exactly one of fileId and url
    pytest.param(
        RECEIPT,
        {"files": [without(RECEIPT_FILE, "fileId")]},
        [("content.files[0].fileId", "MISSING_REQUIRED")],
        id="neither-id-nor-url",
    ),
    pytest.param(
        RECEIPT,
        {"files": [{**RECEIPT_FILE, "url": PNG_DATA_URL}]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="both-id-and-url",
    ),
    # fileId: 24 lowercase hex characters
    pytest.param(RECEIPT, {"files": [ref(fileId="0" * 24)]}, [], id="file-id-zeros"),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId="66F0C0FFEE0000000000000A")]},
        [("content.files[0].fileId", "INVALID_FORMAT")],
        id="file-id-uppercase",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId="66f0c0ffee000000000000a")]},
        [("content.files[0].fileId", "INVALID_FORMAT")],
        id="file-id-23",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId="66f0c0ffee0000000000000aa")]},
        [("content.files[0].fileId", "INVALID_FORMAT")],
        id="file-id-25",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId="66f0c0ffee000000000000zz")]},
        [("content.files[0].fileId", "INVALID_FORMAT")],
        id="file-id-not-hex",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId="66f0c0ffee0000000000000a\n")]},
        [("content.files[0].fileId", "INVALID_FORMAT")],
        id="file-id-newline",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(fileId=12)]},
        [("content.files[0].fileId", "INVALID_TYPE")],
        id="file-id-number",
    ),
    # url: a base64 data URL of the declared type; never a remote URL
    pytest.param(RECEIPT, {"files": [url_ref()]}, [], id="data-url"),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("data:image/png;charset=binary;base64," + PNG_DATA_URL[22:])]},
        [],
        id="data-url-parameter",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("https://example.com/receipt.png")]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="https-url",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("http://example.com/receipt.png")]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="http-url",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("data:image/png,rawbytes")]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="data-url-not-base64",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("data:image/png;base64,@@@")]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="data-url-bad-payload",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref(5)]},
        [("content.files[0].url", "INVALID_FORMAT")],
        id="url-number",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref(JPEG_DATA_URL)]},
        [("content.files[0].mimeType", "MIME_MISMATCH")],
        id="data-url-type-mismatch",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref(JPEG_DATA_URL, mimeType="image/jpeg", filename="a.jpg")]},
        [],
        id="data-url-jpeg",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref("data:IMAGE/PNG;base64," + PNG_DATA_URL[22:])]},
        [],
        id="data-url-type-case",
    ),
    # mimeType: one of the types accept allows
    pytest.param(
        RECEIPT,
        {"files": [ref(mimeType="application/json", filename="a.json")]},
        [("content.files[0].mimeType", "FILE_TYPE_NOT_ACCEPTED")],
        id="json-not-accepted",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(mimeType="image/svg+xml")]},
        [("content.files[0].mimeType", "FILE_TYPE_NOT_ACCEPTED")],
        id="svg",
    ),
    pytest.param(
        RECEIPT,
        {"files": [url_ref(JPEG_DATA_URL, mimeType="image/heic")]},
        [("content.files[0].mimeType", "FILE_TYPE_NOT_ACCEPTED")],
        id="not-accepted-data-url",
    ),
    pytest.param(RECEIPT, {"files": [ref(mimeType="application/pdf")]}, [], id="pdf"),
    pytest.param(RECEIPT, {"files": [ref(mimeType="text/plain")]}, [], id="text"),
    pytest.param(RECEIPT, {"files": [ref(mimeType="text/csv; charset=utf-8")]}, [], id="csv-param"),
    pytest.param(RECEIPT, {"files": [ref(mimeType="IMAGE/JPEG")]}, [], id="mime-case"),
    pytest.param(
        {**RECEIPT, "accept": ["json"]},
        {"files": [ref(mimeType="application/json")]},
        [],
        id="json",
    ),
    pytest.param(
        RECEIPT,
        {"files": [without(RECEIPT_FILE, "mimeType")]},
        [("content.files[0].mimeType", "MISSING_REQUIRED")],
        id="mime-missing",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(mimeType=7)]},
        [("content.files[0].mimeType", "INVALID_TYPE")],
        id="mime-number",
    ),
    # filename: 1-255
    pytest.param(RECEIPT, {"files": [ref(filename="r")]}, [], id="filename-1"),
    pytest.param(RECEIPT, {"files": [ref(filename="r" * 255)]}, [], id="filename-255"),
    pytest.param(
        RECEIPT,
        {"files": [ref(filename="r" * 256)]},
        [("content.files[0].filename", "TOO_LONG")],
        id="filename-256",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(filename="")]},
        [("content.files[0].filename", "TOO_SHORT")],
        id="filename-empty",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(filename="  ")]},
        [("content.files[0].filename", "TOO_SHORT")],
        id="filename-blank",
    ),
    pytest.param(
        RECEIPT,
        {"files": [without(RECEIPT_FILE, "filename")]},
        [("content.files[0].filename", "MISSING_REQUIRED")],
        id="filename-missing",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(filename=["a"])]},
        [("content.files[0].filename", "INVALID_TYPE")],
        id="filename-list",
    ),
    # size: whole bytes, at most the cap
    pytest.param(RECEIPT, {"files": [ref(size=0)]}, [], id="size-0"),
    pytest.param(RECEIPT, {"files": [ref(size=10_485_760)]}, [], id="size-10mb"),
    pytest.param(
        RECEIPT,
        {"files": [ref(size=10_485_761)]},
        [("content.files[0].size", "FILE_TOO_LARGE")],
        id="size-above-10mb",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(size=-1)]},
        [("content.files[0].size", "INVALID_TYPE")],
        id="size-negative",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(size=1.5)]},
        [("content.files[0].size", "INVALID_TYPE")],
        id="size-fraction",
    ),
    pytest.param(
        RECEIPT,
        {"files": [ref(size="48213")]},
        [("content.files[0].size", "INVALID_TYPE")],
        id="size-str",
    ),
    pytest.param(
        RECEIPT,
        {"files": [without(RECEIPT_FILE, "size")]},
        [("content.files[0].size", "MISSING_REQUIRED")],
        id="size-missing",
    ),
    # errors name the file's index
    pytest.param(
        RECEIPT,
        {"files": [ref(), ref(filename=""), ref(mimeType="video/mp4")]},
        [
            ("content.files[1].filename", "TOO_SHORT"),
            ("content.files[2].mimeType", "FILE_TYPE_NOT_ACCEPTED"),
        ],
        id="index-paths",
    ),
]


@pytest.mark.parametrize(("input", "content", "expected"), FILES_CASES)
def test_files(input: dict[str, Any], content: Any, expected: Pairs) -> None:
    assert pairs("files", input, accept(content)) == expected


@pytest.mark.parametrize(
    ("size", "cap", "expected"),
    [
        pytest.param(1000, 1000, [], id="at-cap"),
        pytest.param(1001, 1000, [("content.files[0].size", "FILE_TOO_LARGE")], id="above-cap"),
        pytest.param(20_000_000, 20_000_000, [], id="cap-above-default"),
        pytest.param(
            20_000_001,
            20_000_000,
            [("content.files[0].size", "FILE_TOO_LARGE")],
            id="above-big-cap",
        ),
    ],
)
def test_files_custom_cap(size: int, cap: int, expected: Pairs) -> None:
    content = {"files": [ref(size=size)]}
    assert pairs("files", RECEIPT, accept(content), max_file_size_bytes=cap) == expected


def test_files_data_url_payload_over_the_cap() -> None:
    # The declared size fits, but the data URL's bytes do not.
    content = {"files": [url_ref(size=4)]}
    assert pairs("files", RECEIPT, accept(content)) == []
    assert pairs("files", RECEIPT, accept(content), max_file_size_bytes=len(PNG_BYTES)) == []
    assert pairs("files", RECEIPT, accept(content), max_file_size_bytes=len(PNG_BYTES) - 1) == [
        ("content.files[0].size", "FILE_TOO_LARGE")
    ]


def test_a_form_answers_errors_name_each_field_by_its_label() -> None:
    """What the person reads names the field as they see it, never by a JSON path."""
    ask = {
        "title": "Sign up",
        "fields": [
            {"id": "contact_email", "label": "Email address", "type": "email"},
            {"id": "age", "label": "Your age", "type": "number", "min": 1, "max": 5},
        ],
    }
    answer = {"action": "accept", "content": {"values": {"contact_email": "x", "age": 9}}}
    errors = validate_ask_response("form", ask, answer)
    by_path = {e.path: e.message for e in errors}
    assert by_path["content.values.age"] == '"Your age": 9 is above the maximum of 5.'
    assert by_path["content.values.contact_email"].startswith('"Email address": ')
    assert all("content." not in e.message and "contact_email" not in e.message for e in errors)
