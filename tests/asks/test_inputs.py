"""`validate_ask_input`: one case per row of the spec's input tables, valid and invalid.

Every case states the whole ``[(path, code)]`` list the validator returns, in order, and every
error is checked for a one-sentence message and fix.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from examples import PIZZA, PLAN
from handrail.asks import ASK_ERROR_CODES, ASK_LIMITS, AskValidationError, validate_ask_input
from handrail.asks.errors import sort_errors

Pairs = list[tuple[str, str]]

DROP: Any = object()  # `put(base, key=DROP)` removes `key`.


def put(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of `base` with `changes` applied; a value of `DROP` removes its key."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def check_error_text(error: AskValidationError) -> None:
    assert error.code in ASK_ERROR_CODES
    for text in (error.message, error.fix):
        assert text.strip(), error
        assert "\n" not in text, error
        assert text.rstrip().endswith((".", ")")), error


def pairs(kind: Any, input: Any, surface: Any = "full") -> Pairs:
    errors = validate_ask_input(kind, input, surface=surface)
    for error in errors:
        check_error_text(error)
    return [(e.path, e.code) for e in errors]


def opts(*ids: str) -> list[dict[str, Any]]:
    return [{"id": i, "label": i.capitalize()} for i in ids]


def many_options(count: int) -> list[dict[str, Any]]:
    return [{"id": f"o{i}", "label": f"Option {i}"} for i in range(count)]


def field(type: Any, id: Any = "f", **extra: Any) -> dict[str, Any]:
    return {"id": id, "type": type, "label": "Field", **extra}


US_EU = [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}]

CHOICE_ONE: dict[str, Any] = {
    "prompt": "Which plan?",
    "select": "one",
    "options": opts("team", "solo"),
}
CHOICE_MANY: dict[str, Any] = {
    "prompt": "Which toppings?",
    "select": "many",
    "options": opts("cheese", "olives", "peppers"),
}
CONFIRM: dict[str, Any] = {"prompt": "Send the report?"}
MARKDOWN: dict[str, Any] = {"prompt": "Edit the draft."}
FORM: dict[str, Any] = {"prompt": "Fill this in.", "fields": [field("text")]}
FILES: dict[str, Any] = {"prompt": "Upload the receipt.", "accept": ["image"]}

BASES: dict[str, dict[str, Any]] = {
    "choice": CHOICE_ONE,
    "confirm": CONFIRM,
    "markdown": MARKDOWN,
    "form": FORM,
    "files": FILES,
}

# The spec's own example asks.
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
    "accept": ["image", "pdf", "text", "csv", "json"],
    "maxFiles": 3,
    "submitLabel": "Send receipt",
}

EMOJI = "\U0001f600"  # 😀, two UTF-16 code units


@pytest.mark.parametrize(
    ("kind", "input"),
    [
        pytest.param("choice", PLAN, id="choice-plan"),
        pytest.param("choice", PIZZA, id="choice-pizza"),
        pytest.param("confirm", CLEAN_UP, id="confirm-clean-up"),
        pytest.param("markdown", LAUNCH, id="markdown-launch"),
        pytest.param("form", INVOICE, id="form-invoice"),
        pytest.param("files", RECEIPT, id="files-receipt"),
        *(pytest.param(kind, base, id=f"{kind}-base") for kind, base in BASES.items()),
    ],
)
def test_spec_examples_are_valid(kind: str, input: dict[str, Any]) -> None:
    assert pairs(kind, input) == []


def test_spec_examples_on_the_compact_surface() -> None:
    assert pairs("choice", PLAN, "compact") == []
    assert pairs("confirm", CLEAN_UP, "compact") == []
    assert pairs("choice", PIZZA, "compact") == [
        ("allowOther", "UNKNOWN_KEY"),
        ("maxSelected", "UNKNOWN_KEY"),
        ("options", "TOO_MANY"),
        ("otherLabel", "UNKNOWN_KEY"),
        ("select", "INVALID_ENUM"),
    ]


def test_limits_are_the_numbers_these_tests_use() -> None:
    # The cases below spell their boundaries out; they hold while ASK_LIMITS says the same.
    assert ASK_LIMITS["promptMaxLength"] == 500
    assert ASK_LIMITS["titleMaxLength"] == 80
    assert ASK_LIMITS["submitLabelMaxLength"] == 24
    assert dict(ASK_LIMITS["choice"]) == {
        "optionDescriptionMaxLength": 280,
        "optionIdMaxLength": 64,
        "optionIdPattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
        "optionLabelMaxLength": 120,
        "optionsMax": 50,
        "optionsMin": 2,
        "otherMaxLength": 500,
    }
    assert ASK_LIMITS["confirm"]["labelMaxLength"] == 20
    assert dict(ASK_LIMITS["markdown"]) == {"maxLength": 20_000, "placeholderMaxLength": 120}
    assert ASK_LIMITS["form"]["fieldsMin"] == 1
    assert ASK_LIMITS["form"]["fieldsMax"] == 8
    assert ASK_LIMITS["form"]["labelMaxLength"] == 120
    assert ASK_LIMITS["form"]["helperTextMaxLength"] == 280
    assert ASK_LIMITS["form"]["textMaxLength"] == 2000
    assert ASK_LIMITS["form"]["textareaMaxLength"] == 10_000
    assert ASK_LIMITS["files"]["minFiles"] == 1
    assert ASK_LIMITS["files"]["maxFiles"] == 10
    assert ASK_LIMITS["simpleCard"]["buttonsMax"] == 3
    assert ASK_LIMITS["simpleCard"]["buttonLabelMaxLength"] == 20


# --- Unknown kind, surface and not-an-object input -----------------------------------------


@pytest.mark.parametrize("kind", ["poll", "", "Choice", "ask_choice", None, 3, ["choice"]])
def test_unknown_kind(kind: Any) -> None:
    assert pairs(kind, CONFIRM) == [("kind", "INVALID_ENUM")]


@pytest.mark.parametrize("surface", ["watch", "", None, 1, "Compact"])
def test_unknown_surface(surface: Any) -> None:
    assert pairs("confirm", CONFIRM, surface) == [("surface", "INVALID_ENUM")]


@pytest.mark.parametrize("kind", sorted(BASES))
@pytest.mark.parametrize(
    "input", ["Pick one: red or blue", None, 3, 1.5, True, [], [CONFIRM]], ids=repr
)
def test_input_not_an_object(kind: str, input: Any) -> None:
    assert pairs(kind, input) == [("", "INVALID_TYPE")]


@pytest.mark.parametrize("kind", ["markdown", "form", "files"])
def test_compact_surface_offers_only_choice_and_confirm(kind: str) -> None:
    assert pairs(kind, BASES[kind]) == []
    assert pairs(kind, BASES[kind], "compact") == [("kind", "INVALID_ENUM")]


# --- Shared ask fields ------------------------------------------------------------------------

SHARED_CASES = [
    # prompt: required, 1-500 UTF-16 code units, visible text.
    pytest.param({"prompt": DROP}, [("prompt", "MISSING_REQUIRED")], id="prompt-missing"),
    pytest.param({"prompt": ""}, [("prompt", "TOO_SHORT")], id="prompt-empty"),
    pytest.param({"prompt": " \n\t "}, [("prompt", "TOO_SHORT")], id="prompt-whitespace"),
    pytest.param({"prompt": "\u00a0\u3000\ufeff"}, [("prompt", "TOO_SHORT")], id="prompt-js-space"),
    pytest.param({"prompt": "?"}, [], id="prompt-1"),
    pytest.param({"prompt": "p" * 500}, [], id="prompt-500"),
    pytest.param({"prompt": "p" * 501}, [("prompt", "TOO_LONG")], id="prompt-501"),
    pytest.param({"prompt": EMOJI * 250}, [], id="prompt-250-emoji"),
    pytest.param({"prompt": "p" * 499 + EMOJI}, [("prompt", "TOO_LONG")], id="prompt-emoji-501"),
    pytest.param({"prompt": 42}, [("prompt", "INVALID_TYPE")], id="prompt-number"),
    pytest.param({"prompt": None}, [("prompt", "INVALID_TYPE")], id="prompt-null"),
    pytest.param({"prompt": ["Pick"]}, [("prompt", "INVALID_TYPE")], id="prompt-list"),
    # title: optional, at most 80.
    pytest.param({"title": "t" * 80}, [], id="title-80"),
    pytest.param({"title": "t" * 81}, [("title", "TOO_LONG")], id="title-81"),
    pytest.param({"title": EMOJI * 40}, [], id="title-40-emoji"),
    pytest.param({"title": EMOJI * 40 + "t"}, [("title", "TOO_LONG")], id="title-emoji-81"),
    pytest.param({"title": "  "}, [("title", "TOO_SHORT")], id="title-blank"),
    pytest.param({"title": ""}, [("title", "TOO_SHORT")], id="title-empty"),
    pytest.param({"title": 7}, [("title", "INVALID_TYPE")], id="title-number"),
    # allowDecline: optional boolean.
    pytest.param({"allowDecline": True}, [], id="allowDecline-true"),
    pytest.param({"allowDecline": False}, [], id="allowDecline-false"),
    pytest.param({"allowDecline": "no"}, [("allowDecline", "INVALID_TYPE")], id="allowDecline-str"),
    pytest.param({"allowDecline": 0}, [("allowDecline", "INVALID_TYPE")], id="allowDecline-0"),
    pytest.param(
        {"allowDecline": None}, [("allowDecline", "INVALID_TYPE")], id="allowDecline-null"
    ),
    # Every object is strict.
    pytest.param({"icon": "x"}, [("icon", "UNKNOWN_KEY")], id="unknown-key"),
    pytest.param(
        {"icon": "x", "color": "red"},
        [("color", "UNKNOWN_KEY"), ("icon", "UNKNOWN_KEY")],
        id="unknown-keys-sorted",
    ),
    pytest.param({"Prompt": "x"}, [("Prompt", "UNKNOWN_KEY")], id="unknown-key-case"),
]


@pytest.mark.parametrize("kind", sorted(BASES))
@pytest.mark.parametrize(("changes", "expected"), SHARED_CASES)
def test_shared_fields(kind: str, changes: dict[str, Any], expected: Pairs) -> None:
    assert pairs(kind, put(BASES[kind], **changes)) == expected


SUBMIT_LABEL_CASES = [
    pytest.param("s" * 24, [], id="24"),
    pytest.param("Set up plan", [], id="plain"),
    pytest.param("s" * 25, [("submitLabel", "TOO_LONG")], id="25"),
    pytest.param(EMOJI * 12, [], id="12-emoji"),
    pytest.param(EMOJI * 12 + "s", [("submitLabel", "TOO_LONG")], id="emoji-25"),
    pytest.param("\t", [("submitLabel", "TOO_SHORT")], id="blank"),
    pytest.param(False, [("submitLabel", "INVALID_TYPE")], id="bool"),
]


@pytest.mark.parametrize("kind", ["choice", "markdown", "form", "files"])
@pytest.mark.parametrize(("label", "expected"), SUBMIT_LABEL_CASES)
def test_submit_label(kind: str, label: Any, expected: Pairs) -> None:
    assert pairs(kind, put(BASES[kind], submitLabel=label)) == expected


def test_confirm_has_no_submit_label() -> None:
    assert pairs("confirm", put(CONFIRM, submitLabel="Send")) == [("submitLabel", "UNKNOWN_KEY")]


def test_errors_of_several_fields_are_sorted_by_path_then_code() -> None:
    ask = {"title": "", "prompt": "", "select": "one", "options": [{"id": "A", "label": ""}]}
    assert pairs("choice", ask) == [
        ("options", "TOO_FEW"),
        ("options[0].id", "INVALID_FORMAT"),
        ("options[0].label", "TOO_SHORT"),
        ("prompt", "TOO_SHORT"),
        ("title", "TOO_SHORT"),
    ]


def test_array_indexes_sort_as_numbers_not_as_text() -> None:
    """options[2] before options[10], as the published implementation orders them; as text,
    "options[10]" would come first."""
    options = [{"id": f"o{i}", "label": f"Option {i}"} for i in range(12)]
    options[2]["id"] = "Bad"
    options[10]["id"] = "Also bad"
    ask = {"prompt": "Pick one", "select": "one", "options": options}
    assert pairs("choice", ask) == [
        ("options[2].id", "INVALID_FORMAT"),
        ("options[10].id", "INVALID_FORMAT"),
    ]


def test_a_path_comes_before_the_longer_paths_it_starts() -> None:
    """Segment by segment: the field ``a``'s second value (``a[1]``) before the field ``a-b``,
    which a comparison of the text would put first ("-" sorts before "[")."""
    errors = [
        AskValidationError(path="content.values.a-b", code="UNKNOWN_KEY", message="m", fix="f"),
        AskValidationError(path="content.values.a[1]", code="INVALID_ENUM", message="m", fix="f"),
        AskValidationError(path="content.values", code="MISSING_REQUIRED", message="m", fix="f"),
        AskValidationError(path="", code="INVALID_TYPE", message="m", fix="f"),
    ]
    assert [e.path for e in sort_errors(errors)] == [
        "",
        "content.values",
        "content.values.a[1]",
        "content.values.a-b",
    ]


# --- choice -----------------------------------------------------------------------------------

CHOICE_CASES = [
    # select
    pytest.param(
        put(CHOICE_ONE, select=DROP), [("select", "MISSING_REQUIRED")], id="select-missing"
    ),
    pytest.param(put(CHOICE_ONE, select="all"), [("select", "INVALID_ENUM")], id="select-all"),
    pytest.param(put(CHOICE_ONE, select="One"), [("select", "INVALID_ENUM")], id="select-case"),
    pytest.param(put(CHOICE_ONE, select=1), [("select", "INVALID_TYPE")], id="select-number"),
    pytest.param(put(CHOICE_ONE, select=None), [("select", "INVALID_TYPE")], id="select-null"),
    pytest.param(put(CHOICE_ONE, select="many"), [], id="select-many"),
    # options: required, 2-50
    pytest.param(
        put(CHOICE_ONE, options=DROP), [("options", "MISSING_REQUIRED")], id="options-missing"
    ),
    pytest.param(put(CHOICE_ONE, options="a,b"), [("options", "INVALID_TYPE")], id="options-str"),
    pytest.param(put(CHOICE_ONE, options=[]), [("options", "TOO_FEW")], id="options-0"),
    pytest.param(put(CHOICE_ONE, options=opts("a")), [("options", "TOO_FEW")], id="options-1"),
    pytest.param(put(CHOICE_ONE, options=opts("a", "b")), [], id="options-2"),
    pytest.param(put(CHOICE_ONE, options=many_options(50)), [], id="options-50"),
    pytest.param(
        put(CHOICE_ONE, options=many_options(51)), [("options", "TOO_MANY")], id="options-51"
    ),
    pytest.param(
        put(CHOICE_ONE, options=["red", None]),
        [("options[0]", "INVALID_TYPE"), ("options[1]", "INVALID_TYPE")],
        id="options-not-objects",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[*opts("a", "b"), {"id": "c", "label": "C", "value": 3}]),
        [("options[2].value", "UNKNOWN_KEY")],
        id="option-unknown-key",
    ),
    # options[].id: pattern, unique
    pytest.param(put(CHOICE_ONE, options=opts("a", "0")), [], id="id-one-char"),
    pytest.param(put(CHOICE_ONE, options=opts("a_b-c", "9x")), [], id="id-punctuation"),
    pytest.param(put(CHOICE_ONE, options=opts("a" * 64, "b")), [], id="id-64"),
    pytest.param(
        put(CHOICE_ONE, options=opts("a" * 65, "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-65",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("Team", "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-uppercase",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("a", "-dash")),
        [("options[1].id", "INVALID_FORMAT")],
        id="id-leading-dash",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("_a", "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-leading-underscore",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("a b", "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-space",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("a.b", "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-dot",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "", "label": "Empty"}, *opts("b")]),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-empty",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("a\n", "b")),
        [("options[0].id", "INVALID_FORMAT")],
        id="id-trailing-newline",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": 1, "label": "One"}, *opts("b")]),
        [("options[0].id", "INVALID_TYPE")],
        id="id-number",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"label": "One"}, *opts("b")]),
        [("options[0].id", "MISSING_REQUIRED")],
        id="id-missing",
    ),
    pytest.param(
        put(CHOICE_ONE, options=opts("a", "b", "a", "b", "a")),
        [
            ("options[2].id", "DUPLICATE_ID"),
            ("options[3].id", "DUPLICATE_ID"),
            ("options[4].id", "DUPLICATE_ID"),
        ],
        id="id-duplicates",
    ),
    # options[].label: 1-120
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "l" * 120}, *opts("b")]), [], id="label-120"
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "l" * 121}, *opts("b")]),
        [("options[0].label", "TOO_LONG")],
        id="label-121",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": EMOJI * 60}, *opts("b")]),
        [],
        id="label-60-emoji",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": EMOJI * 60 + "l"}, *opts("b")]),
        [("options[0].label", "TOO_LONG")],
        id="label-emoji-121",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "x"}, *opts("b")]), [], id="label-1"
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": ""}, *opts("b")]),
        [("options[0].label", "TOO_SHORT")],
        id="label-empty",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "   "}, *opts("b")]),
        [("options[0].label", "TOO_SHORT")],
        id="label-blank",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a"}, *opts("b")]),
        [("options[0].label", "MISSING_REQUIRED")],
        id="label-missing",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": 1}, *opts("b")]),
        [("options[0].label", "INVALID_TYPE")],
        id="label-number",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "Same"}, {"id": "b", "label": "Same"}]),
        [],
        id="label-duplicates-allowed-on-full",
    ),
    # options[].description: optional, at most 280
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "A", "description": "d" * 280}, *opts("b")]),
        [],
        id="description-280",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "A", "description": "d" * 281}, *opts("b")]),
        [("options[0].description", "TOO_LONG")],
        id="description-281",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "A", "description": " "}, *opts("b")]),
        [("options[0].description", "TOO_SHORT")],
        id="description-blank",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "A", "description": None}, *opts("b")]),
        [("options[0].description", "INVALID_TYPE")],
        id="description-null",
    ),
    # default: option ids, each once, at most one with "one", at most maxSelected with "many"
    pytest.param(put(CHOICE_ONE, default=["team"]), [], id="default-one"),
    pytest.param(put(CHOICE_ONE, default=[]), [], id="default-empty"),
    pytest.param(
        put(CHOICE_ONE, default=["gold"]),
        [("default[0]", "DEFAULT_NOT_IN_OPTIONS")],
        id="default-not-in-options",
    ),
    pytest.param(
        put(CHOICE_ONE, default=["team", "solo"]),
        [("default", "SELECTION_COUNT")],
        id="default-one-selects-two",
    ),
    pytest.param(
        put(CHOICE_ONE, default=["team", "team"]),
        [("default", "SELECTION_COUNT"), ("default[1]", "DUPLICATE_ID")],
        id="default-one-duplicate",
    ),
    pytest.param(
        put(CHOICE_ONE, default="team"), [("default", "INVALID_TYPE")], id="default-not-a-list"
    ),
    pytest.param(
        put(CHOICE_ONE, default=[1]), [("default[0]", "INVALID_TYPE")], id="default-item-number"
    ),
    pytest.param(put(CHOICE_MANY, default=["cheese", "olives", "peppers"]), [], id="default-many"),
    pytest.param(
        put(CHOICE_MANY, default=["cheese", "cheese"]),
        [("default[1]", "DUPLICATE_ID")],
        id="default-many-duplicate",
    ),
    pytest.param(
        put(CHOICE_MANY, default=["cheese", "olives"], maxSelected=1),
        [("default", "SELECTION_COUNT")],
        id="default-many-above-max",
    ),
    pytest.param(
        put(CHOICE_MANY, default=["cheese", "olives", "peppers", "ham"]),
        [("default", "SELECTION_COUNT"), ("default[3]", "DEFAULT_NOT_IN_OPTIONS")],
        id="default-many-above-offered",
    ),
    pytest.param(
        put(CHOICE_MANY, default=["cheese"], minSelected=2),
        [],
        id="default-below-min-valid",
    ),
    pytest.param(
        put(CHOICE_MANY, options=many_options(50), default=[f"o{i}" for i in range(51)]),
        [("default", "TOO_MANY")],
        id="default-51",
    ),
    # minSelected / maxSelected
    pytest.param(put(CHOICE_MANY, minSelected=0), [], id="many-min-0"),
    pytest.param(put(CHOICE_MANY, minSelected=3), [], id="many-min-offered"),
    pytest.param(put(CHOICE_MANY, minSelected=2.0), [], id="many-min-whole-float"),
    pytest.param(
        put(CHOICE_MANY, minSelected=-1), [("minSelected", "RANGE_INVALID")], id="many-min-neg"
    ),
    pytest.param(
        put(CHOICE_MANY, minSelected=4),
        [("minSelected", "RANGE_INVALID")],
        id="many-min-above-offered",
    ),
    pytest.param(
        put(CHOICE_MANY, minSelected=1.5), [("minSelected", "INVALID_TYPE")], id="many-min-frac"
    ),
    pytest.param(
        put(CHOICE_MANY, minSelected="1"), [("minSelected", "INVALID_TYPE")], id="many-min-str"
    ),
    pytest.param(
        put(CHOICE_MANY, minSelected=True), [("minSelected", "INVALID_TYPE")], id="many-min-bool"
    ),
    pytest.param(put(CHOICE_MANY, maxSelected=1), [], id="many-max-1"),
    pytest.param(put(CHOICE_MANY, maxSelected=3), [], id="many-max-offered"),
    pytest.param(
        put(CHOICE_MANY, maxSelected=0), [("maxSelected", "RANGE_INVALID")], id="many-max-0"
    ),
    pytest.param(
        put(CHOICE_MANY, maxSelected=4),
        [("maxSelected", "RANGE_INVALID")],
        id="many-max-above-offered",
    ),
    pytest.param(put(CHOICE_MANY, maxSelected=4, allowOther=True), [], id="many-max-counts-other"),
    pytest.param(
        put(CHOICE_MANY, maxSelected=5, allowOther=True),
        [("maxSelected", "RANGE_INVALID")],
        id="many-max-above-offered-with-other",
    ),
    pytest.param(put(CHOICE_MANY, minSelected=4, allowOther=True), [], id="many-min-counts-other"),
    pytest.param(put(CHOICE_MANY, minSelected=2, maxSelected=2), [], id="many-min-equals-max"),
    pytest.param(
        put(CHOICE_MANY, minSelected=3, maxSelected=2),
        [("minSelected", "RANGE_INVALID")],
        id="many-min-above-max",
    ),
    pytest.param(
        put(CHOICE_MANY, maxSelected="2"), [("maxSelected", "INVALID_TYPE")], id="many-max-str"
    ),
    pytest.param(put(CHOICE_ONE, minSelected=1), [], id="one-min-1"),
    pytest.param(put(CHOICE_ONE, maxSelected=1), [], id="one-max-1"),
    pytest.param(
        put(CHOICE_ONE, minSelected=0), [("minSelected", "RANGE_INVALID")], id="one-min-0"
    ),
    pytest.param(
        put(CHOICE_ONE, maxSelected=2), [("maxSelected", "RANGE_INVALID")], id="one-max-2"
    ),
    pytest.param(
        put(CHOICE_ONE, minSelected="1"), [("minSelected", "INVALID_TYPE")], id="one-min-str"
    ),
    # allowOther / otherLabel
    pytest.param(put(CHOICE_MANY, allowOther=True), [], id="many-other"),
    pytest.param(
        put(CHOICE_MANY, allowOther=True, otherLabel="Another topping"), [], id="many-other-label"
    ),
    pytest.param(put(CHOICE_MANY, allowOther=True, otherLabel="o" * 120), [], id="other-label-120"),
    pytest.param(
        put(CHOICE_MANY, allowOther=True, otherLabel="o" * 121),
        [("otherLabel", "TOO_LONG")],
        id="other-label-121",
    ),
    pytest.param(
        put(CHOICE_MANY, allowOther=True, otherLabel=" "),
        [("otherLabel", "TOO_SHORT")],
        id="other-label-blank",
    ),
    pytest.param(
        put(CHOICE_MANY, allowOther="yes"), [("allowOther", "INVALID_TYPE")], id="other-str"
    ),
    pytest.param(put(CHOICE_MANY, allowOther=False), [], id="many-other-false"),
    pytest.param(
        put(CHOICE_MANY, otherLabel="Other"),
        [("otherLabel", "OTHER_NOT_ALLOWED")],
        id="other-label-without-other",
    ),
    pytest.param(
        put(CHOICE_MANY, allowOther=False, otherLabel="Other"),
        [("otherLabel", "OTHER_NOT_ALLOWED")],
        id="other-label-other-false",
    ),
    pytest.param(
        put(CHOICE_ONE, allowOther=True),
        [("allowOther", "OTHER_NOT_ALLOWED")],
        id="one-other",
    ),
    pytest.param(
        put(CHOICE_ONE, allowOther=True, otherLabel="Other"),
        [("allowOther", "OTHER_NOT_ALLOWED")],
        id="one-other-with-label",
    ),
    pytest.param(
        put(CHOICE_ONE, otherLabel="Other"),
        [("otherLabel", "OTHER_NOT_ALLOWED")],
        id="one-other-label",
    ),
    # allowOther: false on "one" asks for nothing, so it is accepted (see the report).
    pytest.param(put(CHOICE_ONE, allowOther=False), [], id="one-other-false"),
    pytest.param(put(CHOICE_MANY, allowOther=True, maxSelected=1), [], id="one-option-or-other"),
]


@pytest.mark.parametrize(("input", "expected"), CHOICE_CASES)
def test_choice(input: dict[str, Any], expected: Pairs) -> None:
    assert pairs("choice", input) == expected


# --- compact choice -------------------------------------------------------------------------

COMPACT_CASES = [
    pytest.param(CHOICE_ONE, [], id="one-two-options"),
    pytest.param(put(CHOICE_ONE, options=opts("a", "b", "c")), [], id="three-options"),
    pytest.param(put(CHOICE_ONE, default=["solo"]), [], id="default"),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "A", "description": "d"}, *opts("b")]),
        [],
        id="description",
    ),
    pytest.param(put(CHOICE_ONE, select="many"), [("select", "INVALID_ENUM")], id="select-many"),
    pytest.param(put(CHOICE_ONE, select="all"), [("select", "INVALID_ENUM")], id="select-all"),
    pytest.param(
        put(CHOICE_ONE, options=opts("a", "b", "c", "d")),
        [("options", "TOO_MANY")],
        id="four-options",
    ),
    pytest.param(put(CHOICE_ONE, options=opts("a")), [("options", "TOO_FEW")], id="one-option"),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "l" * 20}, *opts("b")]), [], id="label-20"
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "l" * 21}, *opts("b")]),
        [("options[0].label", "TOO_LONG")],
        id="label-21",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": EMOJI * 10}, *opts("b")]),
        [],
        id="label-10-emoji",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "Go " + EMOJI * 9}, *opts("b")]),
        [("options[0].label", "TOO_LONG")],
        id="label-emoji-21",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "Go"}, {"id": "b", "label": "Go"}]),
        [("options[1].label", "DUPLICATE_LABEL")],
        id="labels-alike",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "Go "}, {"id": "b", "label": " Go"}]),
        [("options[1].label", "DUPLICATE_LABEL")],
        id="labels-alike-after-trim",
    ),
    pytest.param(
        put(
            CHOICE_ONE,
            options=[
                {"id": "a", "label": "Go"},
                {"id": "b", "label": "Stop"},
                {"id": "c", "label": "\u00a0Go\t"},
            ],
        ),
        [("options[2].label", "DUPLICATE_LABEL")],
        id="labels-alike-third",
    ),
    pytest.param(
        put(CHOICE_ONE, options=[{"id": "a", "label": "Go"}, {"id": "b", "label": "go"}]),
        [],
        id="labels-differ-in-case",
    ),
    pytest.param(
        put(CHOICE_ONE, minSelected=1), [("minSelected", "UNKNOWN_KEY")], id="minSelected"
    ),
    pytest.param(
        put(CHOICE_ONE, maxSelected=1), [("maxSelected", "UNKNOWN_KEY")], id="maxSelected"
    ),
    pytest.param(
        put(CHOICE_ONE, allowOther=False), [("allowOther", "UNKNOWN_KEY")], id="allowOther"
    ),
    pytest.param(
        put(CHOICE_ONE, otherLabel="Other"), [("otherLabel", "UNKNOWN_KEY")], id="otherLabel"
    ),
    pytest.param(
        put(
            CHOICE_ONE,
            select="many",
            options=opts("a", "b", "c", "d"),
            minSelected=1,
            maxSelected=2,
            allowOther=True,
            otherLabel="Other",
        ),
        [
            ("allowOther", "UNKNOWN_KEY"),
            ("maxSelected", "UNKNOWN_KEY"),
            ("minSelected", "UNKNOWN_KEY"),
            ("options", "TOO_MANY"),
            ("otherLabel", "UNKNOWN_KEY"),
            ("select", "INVALID_ENUM"),
        ],
        id="many-shaped",
    ),
]


@pytest.mark.parametrize(("input", "expected"), COMPACT_CASES)
def test_compact_choice(input: dict[str, Any], expected: Pairs) -> None:
    assert pairs("choice", input, "compact") == expected


@pytest.mark.parametrize(("input", "expected"), COMPACT_CASES)
def test_compact_choice_valid_means_full_valid(input: dict[str, Any], expected: Pairs) -> None:
    if not expected:
        assert pairs("choice", input, "full") == []


# --- confirm ----------------------------------------------------------------------------------

CONFIRM_CASES = [
    pytest.param(put(CONFIRM, confirmLabel="Delete"), [], id="confirm-label"),
    pytest.param(put(CONFIRM, confirmLabel="c" * 20), [], id="confirm-label-20"),
    pytest.param(
        put(CONFIRM, confirmLabel="c" * 21), [("confirmLabel", "TOO_LONG")], id="confirm-label-21"
    ),
    pytest.param(put(CONFIRM, confirmLabel="\U0001f680" * 10), [], id="confirm-label-10-emoji"),
    pytest.param(
        put(CONFIRM, confirmLabel="Launch " + "\U0001f680" * 7),
        [("confirmLabel", "TOO_LONG")],
        id="confirm-label-emoji-21",
    ),
    pytest.param(
        put(CONFIRM, confirmLabel="  "), [("confirmLabel", "TOO_SHORT")], id="confirm-label-blank"
    ),
    pytest.param(
        put(CONFIRM, confirmLabel=1), [("confirmLabel", "INVALID_TYPE")], id="confirm-label-number"
    ),
    pytest.param(put(CONFIRM, denyLabel="Keep them"), [], id="deny-label"),
    pytest.param(put(CONFIRM, denyLabel="d" * 20), [], id="deny-label-20"),
    pytest.param(put(CONFIRM, denyLabel="d" * 21), [("denyLabel", "TOO_LONG")], id="deny-label-21"),
    pytest.param(
        put(CONFIRM, denyLabel="Wait " + "\u23f3" * 15 + EMOJI),
        [("denyLabel", "TOO_LONG")],
        id="deny-label-emoji-22",
    ),
    pytest.param(put(CONFIRM, denyLabel=""), [("denyLabel", "TOO_SHORT")], id="deny-label-empty"),
    pytest.param(
        put(CONFIRM, denyLabel=None), [("denyLabel", "INVALID_TYPE")], id="deny-label-null"
    ),
    # DUPLICATE_LABEL: defaults included, ignoring spaces at either end.
    pytest.param(
        put(CONFIRM, confirmLabel="Cancel"),
        [("confirmLabel", "DUPLICATE_LABEL")],
        id="confirm-label-is-default-deny",
    ),
    pytest.param(
        put(CONFIRM, denyLabel="Confirm"),
        [("denyLabel", "DUPLICATE_LABEL")],
        id="deny-label-is-default-confirm",
    ),
    pytest.param(
        put(CONFIRM, confirmLabel=" Cancel "),
        [("confirmLabel", "DUPLICATE_LABEL")],
        id="confirm-label-is-default-deny-after-trim",
    ),
    pytest.param(
        put(CONFIRM, confirmLabel="Go", denyLabel="Go"),
        [("denyLabel", "DUPLICATE_LABEL")],
        id="labels-alike",
    ),
    pytest.param(
        put(CONFIRM, confirmLabel="Send ", denyLabel=" Send"),
        [("denyLabel", "DUPLICATE_LABEL")],
        id="labels-alike-after-trim",
    ),
    pytest.param(put(CONFIRM, confirmLabel="Go", denyLabel="go"), [], id="labels-differ-in-case"),
    pytest.param(put(CONFIRM, confirmLabel="Cancel", denyLabel="Keep"), [], id="swap-defaults"),
    pytest.param(put(CONFIRM, confirmLabel="OK", denyLabel="Confirm"), [], id="swap-defaults-2"),
    # destructive / allowDecline
    pytest.param(put(CONFIRM, destructive=True), [], id="destructive-true"),
    pytest.param(put(CONFIRM, destructive=False), [], id="destructive-false"),
    pytest.param(
        put(CONFIRM, destructive="yes"), [("destructive", "INVALID_TYPE")], id="destructive-str"
    ),
    pytest.param(
        put(CONFIRM, destructive=1), [("destructive", "INVALID_TYPE")], id="destructive-number"
    ),
    pytest.param(put(CONFIRM, allowDecline=True), [], id="allow-decline"),
    # No submitLabel and no keys of other kinds.
    pytest.param(
        put(CONFIRM, submitLabel="Send"), [("submitLabel", "UNKNOWN_KEY")], id="submit-label"
    ),
    pytest.param(
        put(CONFIRM, options=opts("yes", "no")), [("options", "UNKNOWN_KEY")], id="options"
    ),
    pytest.param(
        {"denyLabel": "   "},
        [("denyLabel", "TOO_SHORT"), ("prompt", "MISSING_REQUIRED")],
        id="missing-prompt-blank-label",
    ),
]


@pytest.mark.parametrize("surface", ["full", "compact"])
@pytest.mark.parametrize(("input", "expected"), CONFIRM_CASES)
def test_confirm(input: dict[str, Any], expected: Pairs, surface: str) -> None:
    # A compact confirm uses the full confirm schema.
    assert pairs("confirm", input, surface) == expected


# --- markdown ---------------------------------------------------------------------------------

MARKDOWN_CASES = [
    pytest.param(put(MARKDOWN, initial="# Draft"), [], id="initial"),
    pytest.param(put(MARKDOWN, initial=""), [], id="initial-empty"),
    pytest.param(put(MARKDOWN, initial="  \n "), [], id="initial-blank"),
    pytest.param(put(MARKDOWN, initial="m" * 20_000), [], id="initial-20000"),
    pytest.param(
        put(MARKDOWN, initial="m" * 20_001), [("initial", "TOO_LONG")], id="initial-20001"
    ),
    pytest.param(put(MARKDOWN, initial=EMOJI * 10_000), [], id="initial-10000-emoji"),
    pytest.param(
        put(MARKDOWN, initial=EMOJI * 10_000 + "m"),
        [("initial", "TOO_LONG")],
        id="initial-emoji-20001",
    ),
    pytest.param(put(MARKDOWN, initial=5), [("initial", "INVALID_TYPE")], id="initial-number"),
    pytest.param(put(MARKDOWN, initial=None), [("initial", "INVALID_TYPE")], id="initial-null"),
    # initial may break minLength or maxLength.
    pytest.param(put(MARKDOWN, initial="   ", minLength=1), [], id="initial-below-min"),
    pytest.param(put(MARKDOWN, initial="too long", maxLength=3), [], id="initial-above-max"),
    pytest.param(put(MARKDOWN, placeholder="A sentence or two"), [], id="placeholder"),
    pytest.param(put(MARKDOWN, placeholder="p" * 120), [], id="placeholder-120"),
    pytest.param(
        put(MARKDOWN, placeholder="p" * 121), [("placeholder", "TOO_LONG")], id="placeholder-121"
    ),
    pytest.param(
        put(MARKDOWN, placeholder=" "), [("placeholder", "TOO_SHORT")], id="placeholder-blank"
    ),
    pytest.param(
        put(MARKDOWN, placeholder=[]), [("placeholder", "INVALID_TYPE")], id="placeholder-list"
    ),
    pytest.param(put(MARKDOWN, minLength=0), [], id="min-0"),
    pytest.param(put(MARKDOWN, minLength=20_000), [], id="min-20000"),
    pytest.param(put(MARKDOWN, minLength=-1), [("minLength", "RANGE_INVALID")], id="min-neg"),
    pytest.param(put(MARKDOWN, minLength=20_001), [("minLength", "RANGE_INVALID")], id="min-20001"),
    pytest.param(put(MARKDOWN, minLength=1.5), [("minLength", "INVALID_TYPE")], id="min-frac"),
    pytest.param(put(MARKDOWN, minLength="5"), [("minLength", "INVALID_TYPE")], id="min-str"),
    pytest.param(put(MARKDOWN, maxLength=1), [], id="max-1"),
    pytest.param(put(MARKDOWN, maxLength=20_000), [], id="max-20000"),
    pytest.param(put(MARKDOWN, maxLength=0), [("maxLength", "RANGE_INVALID")], id="max-0"),
    pytest.param(put(MARKDOWN, maxLength=20_001), [("maxLength", "RANGE_INVALID")], id="max-20001"),
    pytest.param(put(MARKDOWN, maxLength=None), [("maxLength", "INVALID_TYPE")], id="max-null"),
    pytest.param(put(MARKDOWN, minLength=400, maxLength=400), [], id="min-equals-max"),
    pytest.param(
        put(MARKDOWN, minLength=401, maxLength=400),
        [("minLength", "RANGE_INVALID")],
        id="min-above-max",
    ),
    pytest.param(
        put(MARKDOWN, minLength=20_001, maxLength=20_001),
        [("maxLength", "RANGE_INVALID"), ("minLength", "RANGE_INVALID")],
        id="both-above-cap",
    ),
    pytest.param(put(MARKDOWN, fields=[]), [("fields", "UNKNOWN_KEY")], id="key-of-another-kind"),
]


@pytest.mark.parametrize(("input", "expected"), MARKDOWN_CASES)
def test_markdown(input: dict[str, Any], expected: Pairs) -> None:
    assert pairs("markdown", input) == expected


# --- form -------------------------------------------------------------------------------------


def form(*fields: Any) -> dict[str, Any]:
    return {"prompt": "Fill this in.", "fields": list(fields)}


FORM_CASES = [
    # fields: 1-8
    pytest.param(put(FORM, fields=DROP), [("fields", "MISSING_REQUIRED")], id="fields-missing"),
    pytest.param(put(FORM, fields={}), [("fields", "INVALID_TYPE")], id="fields-object"),
    pytest.param(form(), [("fields", "TOO_FEW")], id="fields-0"),
    pytest.param(form(*(field("text", f"f{i}") for i in range(8))), [], id="fields-8"),
    pytest.param(
        form(*(field("text", f"f{i}") for i in range(9))), [("fields", "TOO_MANY")], id="fields-9"
    ),
    pytest.param(
        form("name", None),
        [("fields[0]", "INVALID_TYPE"), ("fields[1]", "INVALID_TYPE")],
        id="fields-not-objects",
    ),
    # fields[].type
    pytest.param(
        form({"id": "f", "label": "F"}), [("fields[0].type", "MISSING_REQUIRED")], id="type-missing"
    ),
    pytest.param(form(field("password")), [("fields[0].type", "INVALID_ENUM")], id="type-password"),
    pytest.param(
        form(field("password", min=1, options=[])),
        [("fields[0].type", "INVALID_ENUM")],
        id="type-unknown-with-known-keys",
    ),
    pytest.param(
        form(field("password", secret=True)),
        [("fields[0].secret", "UNKNOWN_KEY"), ("fields[0].type", "INVALID_ENUM")],
        id="type-unknown-with-unknown-key",
    ),
    pytest.param(form(field(3)), [("fields[0].type", "INVALID_TYPE")], id="type-number"),
    # fields[].id
    pytest.param(form(field("text", "a_b-c9")), [], id="id-punctuation"),
    pytest.param(form(field("text", "a" * 64)), [], id="id-64"),
    pytest.param(form(field("text", "a" * 65)), [("fields[0].id", "INVALID_FORMAT")], id="id-65"),
    pytest.param(
        form(field("text", "Full Name")), [("fields[0].id", "INVALID_FORMAT")], id="id-format"
    ),
    pytest.param(
        form({"type": "text", "label": "F"}),
        [("fields[0].id", "MISSING_REQUIRED")],
        id="id-missing",
    ),
    pytest.param(
        form(field("text", 7)),
        [("fields[0].id", "INVALID_TYPE")],
        id="id-number",
    ),
    pytest.param(
        form(field("text", "name"), field("email", "name"), field("url", "name")),
        [("fields[1].id", "DUPLICATE_ID"), ("fields[2].id", "DUPLICATE_ID")],
        id="id-duplicates",
    ),
    # fields[].label / helperText / required
    pytest.param(form(field("text", label="l" * 120)), [], id="label-120"),
    pytest.param(
        form(field("text", label="l" * 121)), [("fields[0].label", "TOO_LONG")], id="label-121"
    ),
    pytest.param(
        form(field("text", label=" ")), [("fields[0].label", "TOO_SHORT")], id="label-blank"
    ),
    pytest.param(
        form({"id": "f", "type": "text"}),
        [("fields[0].label", "MISSING_REQUIRED")],
        id="label-missing",
    ),
    pytest.param(
        form(field("text", label=1)), [("fields[0].label", "INVALID_TYPE")], id="label-number"
    ),
    pytest.param(form(field("text", helperText="h" * 280)), [], id="helper-280"),
    pytest.param(
        form(field("text", helperText="h" * 281)),
        [("fields[0].helperText", "TOO_LONG")],
        id="helper-281",
    ),
    pytest.param(
        form(field("text", helperText="")),
        [("fields[0].helperText", "TOO_SHORT")],
        id="helper-empty",
    ),
    pytest.param(form(field("text", required=True)), [], id="required-true"),
    pytest.param(form(field("text", required=False)), [], id="required-false"),
    pytest.param(
        form(field("text", required="yes")),
        [("fields[0].required", "INVALID_TYPE")],
        id="required-str",
    ),
    pytest.param(
        form(field("text", nested={"a": 1})), [("fields[0].nested", "UNKNOWN_KEY")], id="nested"
    ),
    # text / textarea bounds
    pytest.param(form(field("text", minLength=0, maxLength=2000)), [], id="text-bounds-cap"),
    pytest.param(form(field("text", minLength=2000)), [], id="text-min-cap"),
    pytest.param(
        form(field("text", maxLength=2001)),
        [("fields[0].maxLength", "RANGE_INVALID")],
        id="text-max-above-cap",
    ),
    pytest.param(
        form(field("text", minLength=2001)),
        [("fields[0].minLength", "RANGE_INVALID")],
        id="text-min-above-cap",
    ),
    pytest.param(
        form(field("text", maxLength=0)),
        [("fields[0].maxLength", "RANGE_INVALID")],
        id="text-max-0",
    ),
    pytest.param(
        form(field("text", minLength=-1)),
        [("fields[0].minLength", "RANGE_INVALID")],
        id="text-min-neg",
    ),
    pytest.param(
        form(field("text", minLength=5, maxLength=4)),
        [("fields[0].minLength", "RANGE_INVALID")],
        id="text-min-above-max",
    ),
    pytest.param(
        form(field("text", maxLength="4")),
        [("fields[0].maxLength", "INVALID_TYPE")],
        id="text-max-str",
    ),
    pytest.param(form(field("textarea", minLength=10, maxLength=10_000)), [], id="textarea-cap"),
    pytest.param(
        form(field("textarea", maxLength=10_001)),
        [("fields[0].maxLength", "RANGE_INVALID")],
        id="textarea-max-above-cap",
    ),
    pytest.param(
        form(field("textarea", minLength=10_001)),
        [("fields[0].minLength", "RANGE_INVALID")],
        id="textarea-min-above-cap",
    ),
    pytest.param(
        form(field("textarea", minLength=3, maxLength=2)),
        [("fields[0].minLength", "RANGE_INVALID")],
        id="textarea-min-above-max",
    ),
    # number bounds
    pytest.param(form(field("number", min=-1.5, max=1.5, integer=False)), [], id="number-bounds"),
    pytest.param(form(field("number", min=3, max=3)), [], id="number-min-equals-max"),
    pytest.param(
        form(field("number", min=2, max=1)),
        [("fields[0].min", "RANGE_INVALID")],
        id="number-min-above-max",
    ),
    pytest.param(
        form(field("number", min="1")), [("fields[0].min", "INVALID_TYPE")], id="number-min-str"
    ),
    pytest.param(
        form(field("number", max=float("inf"))),
        [("fields[0].max", "INVALID_TYPE")],
        id="number-max-inf",
    ),
    pytest.param(
        form(field("number", integer="yes")),
        [("fields[0].integer", "INVALID_TYPE")],
        id="number-integer-str",
    ),
    # select / multiselect options: 2-50 {id, label}, unique ids
    pytest.param(
        form(field("select")), [("fields[0].options", "MISSING_REQUIRED")], id="select-no-options"
    ),
    pytest.param(
        form(field("multiselect")),
        [("fields[0].options", "MISSING_REQUIRED")],
        id="multiselect-no-options",
    ),
    pytest.param(
        form(field("select", options="us,eu")),
        [("fields[0].options", "INVALID_TYPE")],
        id="select-options-str",
    ),
    pytest.param(
        form(field("select", options=US_EU[:1])),
        [("fields[0].options", "TOO_FEW")],
        id="select-1-option",
    ),
    pytest.param(form(field("select", options=many_options(50))), [], id="select-50-options"),
    pytest.param(
        form(field("multiselect", options=many_options(51))),
        [("fields[0].options", "TOO_MANY")],
        id="multiselect-51-options",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "us", "label": "USA"}])),
        [("fields[0].options[2].id", "DUPLICATE_ID")],
        id="select-duplicate-option",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "Asia", "label": "Asia"}])),
        [("fields[0].options[2].id", "INVALID_FORMAT")],
        id="select-option-id-format",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "a" * 64, "label": "l" * 120}])),
        [],
        id="select-option-id-64-label-120",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "a" * 65, "label": "AP"}])),
        [("fields[0].options[2].id", "INVALID_FORMAT")],
        id="select-option-id-65",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "ap", "label": "l" * 121}])),
        [("fields[0].options[2].label", "TOO_LONG")],
        id="select-option-label-121",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "ap", "label": " "}])),
        [("fields[0].options[2].label", "TOO_SHORT")],
        id="select-option-label-blank",
    ),
    pytest.param(
        form(field("select", options=[*US_EU, {"id": "ap", "label": "AP", "description": "d"}])),
        [("fields[0].options[2].description", "UNKNOWN_KEY")],
        id="select-option-description",
    ),
    pytest.param(
        form(field("select", options=["us", "eu"])),
        [("fields[0].options[0]", "INVALID_TYPE"), ("fields[0].options[1]", "INVALID_TYPE")],
        id="select-options-not-objects",
    ),
]


@pytest.mark.parametrize(("input", "expected"), FORM_CASES)
def test_form(input: dict[str, Any], expected: Pairs) -> None:
    assert pairs("form", input) == expected


# Each type with every extra key it takes.
FIELDS_OF_EVERY_TYPE: dict[str, Any] = {
    "text": field("text", minLength=1, maxLength=120),
    "textarea": field("textarea", minLength=0, maxLength=10_000),
    "email": field("email"),
    "url": field("url"),
    "phone": field("phone"),
    "number": field("number", min=1, max=500, integer=True),
    "date": field("date"),
    "time": field("time"),
    "datetime": field("datetime"),
    "boolean": field("boolean"),
    "select": field("select", options=US_EU),
    "multiselect": field("multiselect", options=US_EU),
}
EXTRA_KEYS: dict[str, Any] = {
    "text": {"minLength": 1, "maxLength": 2},
    "textarea": {"minLength": 1, "maxLength": 2},
    "number": {"min": 1, "max": 2, "integer": True},
    "select": {"options": US_EU},
    "multiselect": {"options": US_EU},
}


@pytest.mark.parametrize("field_type", sorted(FIELDS_OF_EVERY_TYPE))
def test_form_field_of_every_type(field_type: str) -> None:
    spec = FIELDS_OF_EVERY_TYPE[field_type]
    assert pairs("form", form(spec)) == []
    common = put(spec, helperText="Help", required=True)
    assert pairs("form", form(common)) == []


@pytest.mark.parametrize("field_type", sorted(FIELDS_OF_EVERY_TYPE))
def test_form_keys_of_another_type(field_type: str) -> None:
    spec = FIELDS_OF_EVERY_TYPE[field_type]
    foreign = {
        key: value
        for other, keys in EXTRA_KEYS.items()
        for key, value in keys.items()
        if key not in spec and key not in EXTRA_KEYS.get(field_type, {})
    }
    assert foreign
    expected = sorted((f"fields[0].{key}", "UNKNOWN_KEY") for key in foreign)
    assert pairs("form", form({**spec, **foreign})) == expected


def test_form_all_twelve_types_in_one_ask() -> None:
    specs = [put(spec, id=name) for name, spec in FIELDS_OF_EVERY_TYPE.items()]
    assert pairs("form", form(*specs[:8])) == []
    assert pairs("form", form(*specs[8:])) == []


# fields[].default: checked with the answer's rules; INVALID_TYPE for a wrong JSON type and
# DEFAULT_NOT_IN_OPTIONS for an id that is not an option.
DEFAULT_CASES = [
    # text
    pytest.param(field("text"), "Acme", [], id="text"),
    pytest.param(field("text"), "t" * 2000, [], id="text-2000"),
    pytest.param(field("text"), "t" * 2001, ["TOO_LONG"], id="text-above-cap"),
    pytest.param(field("text", maxLength=4), "ABCD", [], id="text-max"),
    pytest.param(field("text", maxLength=4), "ABCDE", ["TOO_LONG"], id="text-above-max"),
    pytest.param(field("text", maxLength=4), EMOJI * 2 + "A", ["TOO_LONG"], id="text-emoji"),
    pytest.param(field("text", minLength=3), " abc ", [], id="text-min-trimmed"),
    pytest.param(field("text", minLength=3), " ab ", ["TOO_SHORT"], id="text-below-min"),
    # minLength counts UTF-16 code units, like maxLength (see the report).
    pytest.param(field("text", minLength=2), EMOJI, [], id="text-min-emoji"),
    pytest.param(field("text"), "   ", ["TOO_SHORT"], id="text-blank"),
    pytest.param(field("text"), "", ["TOO_SHORT"], id="text-empty"),
    pytest.param(field("text"), 5, ["INVALID_TYPE"], id="text-number"),
    pytest.param(field("text"), None, ["INVALID_TYPE"], id="text-null"),
    # textarea
    pytest.param(field("textarea"), "Line one\nLine two", [], id="textarea"),
    pytest.param(field("textarea"), "t" * 10_000, [], id="textarea-10000"),
    pytest.param(field("textarea"), "t" * 10_001, ["TOO_LONG"], id="textarea-above-cap"),
    pytest.param(field("textarea", minLength=10), "Short", ["TOO_SHORT"], id="textarea-below-min"),
    pytest.param(field("textarea"), ["a"], ["INVALID_TYPE"], id="textarea-list"),
    # email
    pytest.param(field("email"), "name@example.com", [], id="email"),
    pytest.param(field("email"), "first.last+tag@mail.example.co", [], id="email-plus"),
    pytest.param(field("email"), "not-an-email", ["FIELD_TYPE_MISMATCH"], id="email-bad"),
    pytest.param(field("email"), "a@b", ["FIELD_TYPE_MISMATCH"], id="email-no-tld"),
    pytest.param(field("email"), "a b@example.com", ["FIELD_TYPE_MISMATCH"], id="email-space"),
    pytest.param(field("email"), "  ", ["TOO_SHORT"], id="email-blank"),
    pytest.param(field("email"), 5, ["INVALID_TYPE"], id="email-number"),
    pytest.param(field("email"), "a" * 1990 + "@example.com", ["TOO_LONG"], id="email-above-cap"),
    # url
    pytest.param(field("url"), "https://example.com/a?b=c", [], id="url-https"),
    pytest.param(field("url"), "http://localhost:8000", [], id="url-http"),
    pytest.param(field("url"), "ftp://example.com", ["FIELD_TYPE_MISMATCH"], id="url-ftp"),
    pytest.param(field("url"), "example.com", ["FIELD_TYPE_MISMATCH"], id="url-no-scheme"),
    pytest.param(field("url"), "javascript:alert(1)", ["FIELD_TYPE_MISMATCH"], id="url-js"),
    pytest.param(field("url"), "https://", ["FIELD_TYPE_MISMATCH"], id="url-no-host"),
    pytest.param(field("url"), True, ["INVALID_TYPE"], id="url-bool"),
    # phone
    pytest.param(field("phone"), "+14155552671", [], id="phone-e164"),
    pytest.param(field("phone"), "+1 (415) 555-2671", [], id="phone-separators"),
    pytest.param(field("phone"), "12345", ["FIELD_TYPE_MISMATCH"], id="phone-5-digits"),
    pytest.param(field("phone"), "call me", ["FIELD_TYPE_MISMATCH"], id="phone-words"),
    pytest.param(field("phone"), 14155552671, ["INVALID_TYPE"], id="phone-number"),
    # number
    pytest.param(field("number"), 12, [], id="number"),
    pytest.param(field("number"), -0.5, [], id="number-fraction"),
    pytest.param(field("number"), "12", ["INVALID_TYPE"], id="number-str"),
    pytest.param(field("number"), True, ["INVALID_TYPE"], id="number-bool"),
    pytest.param(field("number"), float("nan"), ["INVALID_TYPE"], id="number-nan"),
    pytest.param(field("number"), float("inf"), ["INVALID_TYPE"], id="number-inf"),
    pytest.param(field("number", integer=True), 12, [], id="number-integer"),
    pytest.param(field("number", integer=True), 12.0, [], id="number-integer-float"),
    pytest.param(
        field("number", integer=True), 1.5, ["FIELD_TYPE_MISMATCH"], id="number-not-whole"
    ),
    pytest.param(field("number", min=1, max=500), 1, [], id="number-min"),
    pytest.param(field("number", min=1, max=500), 500, [], id="number-max"),
    pytest.param(field("number", min=1, max=500), 0, ["OUT_OF_RANGE"], id="number-below-min"),
    pytest.param(field("number", min=1, max=500), 501, ["OUT_OF_RANGE"], id="number-above-max"),
    # date / time / datetime
    pytest.param(field("date"), "2026-10-01", [], id="date"),
    pytest.param(field("date"), "2024-02-29", [], id="date-leap-day"),
    pytest.param(field("date"), "2026-02-30", ["INVALID_DATE"], id="date-not-real"),
    pytest.param(field("date"), "2025-02-29", ["INVALID_DATE"], id="date-not-leap"),
    pytest.param(field("date"), "2026-10-1", ["INVALID_DATE"], id="date-short"),
    pytest.param(field("date"), "2026-10-01T00:00Z", ["INVALID_DATE"], id="date-with-time"),
    pytest.param(field("date"), "10/01/2026", ["INVALID_DATE"], id="date-us"),
    pytest.param(field("date"), 20261001, ["INVALID_TYPE"], id="date-number"),
    pytest.param(field("time"), "09:30", [], id="time"),
    pytest.param(field("time"), "00:00", [], id="time-midnight"),
    pytest.param(field("time"), "23:59", [], id="time-last"),
    pytest.param(field("time"), "24:00", ["INVALID_DATE"], id="time-24"),
    pytest.param(field("time"), "9:30am", ["INVALID_DATE"], id="time-am"),
    pytest.param(field("time"), "09:60", ["INVALID_DATE"], id="time-60"),
    pytest.param(field("time"), "09:30:00", ["INVALID_DATE"], id="time-seconds"),
    pytest.param(field("datetime"), "2026-10-01T09:30Z", [], id="datetime-z"),
    pytest.param(field("datetime"), "2026-10-01T09:30:00+02:00", [], id="datetime-offset"),
    pytest.param(
        field("datetime"), "2026-10-01T09:30:00", ["INVALID_DATE"], id="datetime-no-offset"
    ),
    pytest.param(field("datetime"), "2026-02-30T09:30Z", ["INVALID_DATE"], id="datetime-not-real"),
    # A trailing newline is not part of any format (JavaScript's `$` does not match before it).
    pytest.param(field("date"), "2026-10-01\n", ["INVALID_DATE"], id="date-newline"),
    pytest.param(field("time"), "09:30\n", ["INVALID_DATE"], id="time-newline"),
    pytest.param(field("datetime"), "2026-10-01T09:30Z\n", ["INVALID_DATE"], id="datetime-newline"),
    pytest.param(field("email"), "a@example.com\n", ["FIELD_TYPE_MISMATCH"], id="email-newline"),
    pytest.param(field("phone"), "+14155552671\n", ["FIELD_TYPE_MISMATCH"], id="phone-newline"),
    # boolean
    pytest.param(field("boolean"), True, [], id="boolean-true"),
    pytest.param(field("boolean"), False, [], id="boolean-false"),
    pytest.param(field("boolean"), "yes", ["INVALID_TYPE"], id="boolean-str"),
    pytest.param(field("boolean"), 1, ["INVALID_TYPE"], id="boolean-number"),
    # select / multiselect
    pytest.param(field("select", options=US_EU), "us", [], id="select"),
    pytest.param(
        field("select", options=US_EU), "apac", ["DEFAULT_NOT_IN_OPTIONS"], id="select-not-option"
    ),
    pytest.param(field("select", options=US_EU), ["us"], ["INVALID_TYPE"], id="select-list"),
    pytest.param(field("multiselect", options=US_EU), ["us", "eu"], [], id="multiselect"),
    pytest.param(field("multiselect", options=US_EU), [], [], id="multiselect-empty"),
    pytest.param(field("multiselect", options=US_EU), "us", ["INVALID_TYPE"], id="multiselect-str"),
]


@pytest.mark.parametrize(("spec", "default", "codes"), DEFAULT_CASES)
def test_form_default(spec: dict[str, Any], default: Any, codes: list[str]) -> None:
    expected = [("fields[0].default", code) for code in codes]
    assert pairs("form", form({**spec, "default": default})) == expected


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        pytest.param(
            ["us", "apac", "us"],
            [
                ("fields[0].default[1]", "DEFAULT_NOT_IN_OPTIONS"),
                ("fields[0].default[2]", "DUPLICATE_ID"),
            ],
            id="not-option-and-duplicate",
        ),
        pytest.param(["eu", 1], [("fields[0].default[1]", "INVALID_TYPE")], id="item-number"),
        pytest.param(["us"] * 51, [("fields[0].default", "TOO_MANY")], id="more-than-50"),
    ],
)
def test_form_multiselect_default_items(default: Any, expected: Pairs) -> None:
    spec = field("multiselect", options=US_EU, default=default)
    assert pairs("form", form(spec)) == expected


def test_form_default_of_a_broken_field_is_not_checked() -> None:
    # A field whose bounds are broken gets its bound error only, not a second one on default.
    spec = field("text", maxLength=0, default="way too long")
    assert pairs("form", form(spec)) == [("fields[0].maxLength", "RANGE_INVALID")]


# --- files ------------------------------------------------------------------------------------

FILES_CASES = [
    pytest.param(put(FILES, accept=DROP), [("accept", "MISSING_REQUIRED")], id="accept-missing"),
    pytest.param(put(FILES, accept="image"), [("accept", "INVALID_TYPE")], id="accept-str"),
    pytest.param(put(FILES, accept=[]), [("accept", "TOO_FEW")], id="accept-empty"),
    pytest.param(put(FILES, accept=["pdf"]), [], id="accept-1"),
    pytest.param(
        put(FILES, accept=["image", "pdf", "text", "csv", "json"]), [], id="accept-every-type"
    ),
    pytest.param(
        put(FILES, accept=["image", "pdf", "text", "csv", "json", "image"]),
        [("accept", "TOO_MANY"), ("accept[5]", "DUPLICATE_ID")],
        id="accept-6",
    ),
    pytest.param(
        put(FILES, accept=["image", "pdf", "image"]),
        [("accept[2]", "DUPLICATE_ID")],
        id="accept-duplicate",
    ),
    pytest.param(
        put(FILES, accept=["image", "video"]), [("accept[1]", "INVALID_ENUM")], id="accept-video"
    ),
    pytest.param(
        put(FILES, accept=["image/png"]), [("accept[0]", "INVALID_ENUM")], id="accept-mime-type"
    ),
    pytest.param(put(FILES, accept=[1]), [("accept[0]", "INVALID_TYPE")], id="accept-number"),
    pytest.param(put(FILES, minFiles=1), [], id="min-1"),
    pytest.param(put(FILES, minFiles=10), [], id="min-10"),
    pytest.param(put(FILES, minFiles=0), [("minFiles", "RANGE_INVALID")], id="min-0"),
    pytest.param(put(FILES, minFiles=11), [("minFiles", "RANGE_INVALID")], id="min-11"),
    pytest.param(put(FILES, minFiles=1.5), [("minFiles", "INVALID_TYPE")], id="min-frac"),
    pytest.param(put(FILES, maxFiles=1), [], id="max-1"),
    pytest.param(put(FILES, maxFiles=10), [], id="max-10"),
    pytest.param(put(FILES, maxFiles=0), [("maxFiles", "RANGE_INVALID")], id="max-0"),
    pytest.param(put(FILES, maxFiles=11), [("maxFiles", "RANGE_INVALID")], id="max-11"),
    pytest.param(put(FILES, maxFiles="3"), [("maxFiles", "INVALID_TYPE")], id="max-str"),
    pytest.param(put(FILES, minFiles=3, maxFiles=3), [], id="min-equals-max"),
    pytest.param(
        put(FILES, minFiles=3, maxFiles=2), [("minFiles", "RANGE_INVALID")], id="min-above-max"
    ),
    pytest.param(
        put(FILES, minFiles=0, maxFiles=11),
        [("maxFiles", "RANGE_INVALID"), ("minFiles", "RANGE_INVALID")],
        id="counts-out-of-range",
    ),
    pytest.param(
        put(FILES, maxFileSizeBytes=10), [("maxFileSizeBytes", "UNKNOWN_KEY")], id="host-setting"
    ),
]


@pytest.mark.parametrize(("input", "expected"), FILES_CASES)
def test_files(input: dict[str, Any], expected: Pairs) -> None:
    assert pairs("files", input) == expected


def test_a_list_of_the_wrong_size_is_counted_in_words() -> None:
    # One of a thing is said without its plural's s: "1 option", never "1 options".
    (one,) = validate_ask_input("choice", put(CHOICE_ONE, options=opts("a")))
    assert one.message == "`options` has 1 option, fewer than the 2 required."
    assert one.fix == "Give `options` at least 2 options."
    (none,) = validate_ask_input("files", put(FILES, accept=[]))
    assert none.message == "`accept` has 0 types, fewer than the 1 required."
    assert none.fix == "Give `accept` at least 1 type."
