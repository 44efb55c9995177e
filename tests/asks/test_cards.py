"""Simple cards: `to_simple_card` against the spec's card tables and the Terreno fixtures, and
`resolve_button_answer` for the headless ``{toolCallId, buttonId}`` answer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.asks.answers import validate_ask_response
from handrail.asks.cards import (
    UnknownButtonError,
    resolve_button_answer,
    to_simple_card,
    unknown_button_error,
)
from handrail.asks.errors import AskValidationError
from handrail.asks.inputs import validate_ask_input
from handrail.asks.limits import (
    ASK_KINDS,
    CARD_BUTTONS_MAX,
    CARD_LABEL_MAX,
    CARD_TEXT_MAX,
    CARD_TITLE_MAX,
    SIMPLE_CARD_BUTTON_STYLES,
)
from handrail.asks.text import utf16_len

# The repository and shared/ are siblings: /work/main and /work/shared here, and the same
# layout wherever CI clones the repository.
CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "terreno"


def _valid_fixture_paths() -> list[Path]:
    folder = CONFORMANCE / "valid"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"The Terreno conformance fixtures are missing: expected them in {folder}. "
            "Put the shared/ folder beside the repository checkout."
        )
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"No valid ask fixtures (*.json) in {folder}.")
    return paths


#: The valid fixtures by name: ``{kind, input, simple}``.
FIXTURES = {path.stem: json.loads(path.read_text("utf-8")) for path in _valid_fixture_paths()}


def decline_button(button_id: str, label: str) -> dict[str, Any]:
    return {"id": button_id, "label": label, "style": "cancel", "response": {"action": "decline"}}


SKIP = decline_button("skip", "Skip")
CANCEL = decline_button("cancel", "Cancel")
APPROVE = {"action": "accept", "content": {"confirmed": True}}
DENY = {"action": "accept", "content": {"confirmed": False}}


def check_card_shape(card: dict[str, Any]) -> None:
    """The invariants of a card of any JSON: at most 3 buttons with unique ids, styles of the
    spec, and labels, text and title within their UTF-16 limits without a split surrogate pair
    (``encode`` raises on one)."""
    buttons = card["buttons"]
    assert len(buttons) <= CARD_BUTTONS_MAX
    assert len({button["id"] for button in buttons}) == len(buttons), buttons
    for button in buttons:
        assert set(button) == {"id", "label", "style", "response"}
        assert button["style"] in SIMPLE_CARD_BUTTON_STYLES
        assert utf16_len(button["label"]) <= CARD_LABEL_MAX, button["label"]
        button["label"].encode("utf-16-le")
    assert utf16_len(card["text"]) <= CARD_TEXT_MAX
    assert utf16_len(card.get("title", "")) <= CARD_TITLE_MAX
    (card["text"] + card.get("title", "")).encode("utf-16-le")
    assert isinstance(card["handoff"], bool)


def check_card(card: dict[str, Any]) -> None:
    """The invariants of the card of a valid ask: the shape above, no empty label or title."""
    check_card_shape(card)
    assert all(button["label"] for button in card["buttons"])
    assert card["text"]
    assert card.get("title", "t")


def card_of(kind: str, ask: dict[str, Any]) -> dict[str, Any]:
    """The card of a valid ask, checked against the card invariants, and with every button's
    response a valid answer to the ask."""
    assert validate_ask_input(kind, ask) == [], "the test ask itself must be valid"
    card = to_simple_card(kind, ask, "call_1")
    check_card(card)
    for button in card["buttons"]:
        assert validate_ask_response(kind, ask, button["response"]) == [], button
    return card


def option(option_id: str, label: str) -> dict[str, str]:
    return {"id": option_id, "label": label}


def option_button(option_id: str, label: str, style: str = "default") -> dict[str, Any]:
    return {
        "id": f"option:{option_id}",
        "label": label,
        "style": style,
        "response": {"action": "accept", "content": {"selected": [option_id]}},
    }


def use_default(label: str, selected: list[str]) -> dict[str, Any]:
    return {
        "id": "use-default",
        "label": label,
        "style": "primary",
        "response": {"action": "accept", "content": {"selected": selected}},
    }


def choice_card(
    buttons: list[dict[str, Any]], *, handoff: bool, text: str = "Pick one."
) -> dict[str, Any]:
    return {
        "toolCallId": "call_1",
        "kind": "choice",
        "text": text,
        "buttons": buttons,
        "handoff": handoff,
    }


# --- the published fixtures ---------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_card_equals_published_simple_card(name: str) -> None:
    fixture = FIXTURES[name]
    card = to_simple_card(fixture["kind"], fixture["input"], "call_fixture")
    assert card == fixture["simple"]
    check_card(card)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_buttons_send_valid_answers(name: str) -> None:
    fixture = FIXTURES[name]
    card = to_simple_card(fixture["kind"], fixture["input"], "call_fixture")
    for button in card["buttons"]:
        assert validate_ask_response(fixture["kind"], fixture["input"], button["response"]) == []


# --- choice, select "one", at most 3 options -----------------------------------------------


def one(*options: str | tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A ``select: "one"`` ask. An option is ``(id, label)``, or a label whose id is its lower
    case words joined with dashes."""
    return {"prompt": "Pick one.", "select": "one", "options": _options(options), **extra}


def many(*options: str | tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A ``select: "many"`` ask, with options as in `one`."""
    return {"prompt": "Pick some.", "select": "many", "options": _options(options), **extra}


def _options(options: tuple[str | tuple[str, str], ...]) -> list[dict[str, str]]:
    return [
        option(*item) if isinstance(item, tuple) else option("-".join(item.lower().split()), item)
        for item in options
    ]


def test_choice_one_default_first_as_primary_then_option_order() -> None:
    ask = one("Alpha", "Bravo", "Charlie", default=["charlie"])
    assert card_of("choice", ask) == choice_card(
        [
            option_button("charlie", "Charlie", "primary"),
            option_button("alpha", "Alpha"),
            option_button("bravo", "Bravo"),
        ],
        handoff=False,
    )


def test_choice_one_without_default_keeps_option_order_and_adds_skip() -> None:
    assert card_of("choice", one("Bravo", "Alpha")) == choice_card(
        [option_button("bravo", "Bravo"), option_button("alpha", "Alpha"), SKIP], handoff=False
    )


def test_choice_one_two_options_with_default_and_decline_allowed_adds_skip() -> None:
    ask = one("Bravo", "Alpha", default=["alpha"], allowDecline=True)
    assert card_of("choice", ask) == choice_card(
        [option_button("alpha", "Alpha", "primary"), option_button("bravo", "Bravo"), SKIP],
        handoff=False,
    )


def test_choice_one_three_options_leave_no_room_for_skip_and_do_not_hand_off() -> None:
    assert card_of("choice", one("A", "B", "C")) == choice_card(
        [option_button("a", "A"), option_button("b", "B"), option_button("c", "C")],
        handoff=False,
    )


def test_choice_one_no_skip_when_decline_is_not_allowed() -> None:
    assert card_of("choice", one("A", "B", allowDecline=False)) == choice_card(
        [option_button("a", "A"), option_button("b", "B")], handoff=False
    )


def test_choice_one_labels_lose_spaces_at_either_end() -> None:
    assert card_of("choice", one(("go", " Go "), ("stop", "\u00a0Stop\t"))) == choice_card(
        [option_button("go", "Go"), option_button("stop", "Stop"), SKIP], handoff=False
    )


# --- choice, select "one", more than 3 options ---------------------------------------------

FOUR = ("Alpha", "Bravo", "Charlie", "Delta")


def test_choice_one_many_options_with_default_offers_use_default_and_skip() -> None:
    assert card_of("choice", one(*FOUR, default=["charlie"])) == choice_card(
        [use_default('Use "Charlie"', ["charlie"]), SKIP], handoff=True
    )


def test_choice_one_many_options_without_default_offers_only_skip() -> None:
    assert card_of("choice", one(*FOUR)) == choice_card([SKIP], handoff=True)


def test_choice_one_many_options_without_default_or_decline_has_no_buttons() -> None:
    assert card_of("choice", one(*FOUR, allowDecline=False)) == choice_card([], handoff=True)


def test_choice_one_many_options_with_default_and_no_decline() -> None:
    assert card_of("choice", one(*FOUR, default=["alpha"], allowDecline=False)) == choice_card(
        [use_default('Use "Alpha"', ["alpha"])], handoff=True
    )


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        pytest.param("Fourteen chars", 'Use "Fourteen chars"', id="14-not-cut"),
        pytest.param("Asia Pacific South", 'Use "Asia Pacific…"', id="word-boundary"),
        pytest.param("Extraordinarily", 'Use "Extraordinari…"', id="no-boundary"),
        # 8 emoji are 16 units; 13 units leave room for 6 whole emoji, then "…".
        pytest.param("🎉🎉🎉🎉🎉🎉🎉🎉", 'Use "🎉🎉🎉🎉🎉🎉…"', id="surrogate-pairs-intact"),
        pytest.param("Family 👨‍👩‍👧‍👦", 'Use "Family…"', id="zwj-sequence-whole"),
    ],
)
def test_choice_one_use_default_label_cut_to_14(label: str, shown: str) -> None:
    ask = one(*FOUR, ("x", label), default=["x"])
    assert card_of("choice", ask) == choice_card([use_default(shown, ["x"]), SKIP], handoff=True)


# --- choice, select "one", buttons that cannot tell options apart --------------------------


def test_choice_one_labels_equal_after_cut_give_only_skip() -> None:
    ask = one(
        ("managers", "Weekly summary email for managers"),
        ("engineers", "Weekly summary email for engineers"),
        default=["managers"],
    )
    # Cut to 20, both show as "Weekly summary…".
    assert card_of("choice", ask) == choice_card([SKIP], handoff=True)


def test_choice_one_labels_equal_after_trim_give_only_skip() -> None:
    ask = one(("a", "Go "), ("b", "Go"))
    assert card_of("choice", ask) == choice_card([SKIP], handoff=True)


def test_choice_one_labels_collide_without_decline_give_no_buttons() -> None:
    ask = one(("one", "Same label after the cut: one"), ("two", "Same label after the cut: two"))
    assert card_of("choice", {**ask, "allowDecline": False}) == choice_card([], handoff=True)


def test_choice_one_use_default_left_out_when_its_label_names_another_option() -> None:
    ask = one(
        ("managers", "Weekly summary email for managers"),
        ("engineers", "Weekly summary email for engineers"),
        "Sales",
        "Retail",
        default=["managers"],
    )
    # Cut to 14, both weekly summaries show as "Weekly summar…".
    assert card_of("choice", ask) == choice_card([SKIP], handoff=True)


def test_choice_one_use_default_kept_when_labels_differ_within_14() -> None:
    ask = one(
        ("weekly", "Weekly summary for managers"),
        ("monthly", "Monthly summary for managers"),
        "Sales",
        "Retail",
        default=["monthly"],
    )
    # Cut to 14, the labels are "Weekly summar…" and "Monthly…": a tap is unambiguous.
    assert card_of("choice", ask) == choice_card(
        [use_default('Use "Monthly…"', ["monthly"]), SKIP], handoff=True
    )


# --- choice, select "many" -----------------------------------------------------------------


def test_choice_many_default_meeting_min_selected_offers_use_suggested() -> None:
    ask = many("A", "B", "C", default=["c", "a"], minSelected=2)
    assert card_of("choice", ask) == choice_card(
        [use_default("Use suggested", ["c", "a"]), SKIP], handoff=True, text="Pick some."
    )


def test_choice_many_default_below_min_selected_offers_only_skip() -> None:
    ask = many("A", "B", "C", default=["a"], minSelected=2)
    assert card_of("choice", ask) == choice_card([SKIP], handoff=True, text="Pick some.")


def test_choice_many_without_default_offers_only_skip_even_with_two_options() -> None:
    assert card_of("choice", many("A", "B")) == choice_card([SKIP], handoff=True, text="Pick some.")


def test_choice_many_empty_default_with_min_zero_offers_only_skip() -> None:
    ask = many("A", "B", default=[], minSelected=0)
    assert card_of("choice", ask) == choice_card([SKIP], handoff=True, text="Pick some.")


def test_choice_many_default_without_decline() -> None:
    ask = many(*FOUR, default=["bravo"], allowDecline=False)
    assert card_of("choice", ask) == choice_card(
        [use_default("Use suggested", ["bravo"])], handoff=True, text="Pick some."
    )


def test_card_does_not_share_lists_with_the_ask() -> None:
    ask = many("A", "B", default=["a"])
    card = card_of("choice", ask)
    card["buttons"][0]["response"]["content"]["selected"].append("b")
    assert ask["default"] == ["a"]


# --- confirm -------------------------------------------------------------------------------


def confirm_card(approve: str, deny: str, style: str, **extra: Any) -> dict[str, Any]:
    return {
        "toolCallId": "call_1",
        "kind": "confirm",
        **extra,
        "text": "Go ahead?",
        "buttons": [
            {"id": "approve", "label": approve, "style": style, "response": APPROVE},
            {"id": "deny", "label": deny, "style": "cancel", "response": DENY},
        ],
        "handoff": False,
    }


def test_confirm_default_labels_primary_approve() -> None:
    assert card_of("confirm", {"prompt": "Go ahead?"}) == confirm_card(
        "Confirm", "Cancel", "primary"
    )


def test_confirm_destructive_approve() -> None:
    ask = {
        "prompt": "Go ahead?",
        "title": "Delete",
        "confirmLabel": "Delete all",
        "denyLabel": "Keep",
        "destructive": True,
    }
    assert card_of("confirm", ask) == confirm_card(
        "Delete all", "Keep", "destructive", title="Delete"
    )


def test_confirm_destructive_false_is_primary() -> None:
    ask = {"prompt": "Go ahead?", "destructive": False, "confirmLabel": "Yes", "denyLabel": "No"}
    assert card_of("confirm", ask) == confirm_card("Yes", "No", "primary")


def test_confirm_has_no_skip_even_when_decline_is_allowed() -> None:
    ask = {"prompt": "Go ahead?", "allowDecline": True}
    assert card_of("confirm", ask) == confirm_card("Confirm", "Cancel", "primary")


def test_confirm_labels_lose_spaces_and_keep_emoji_whole() -> None:
    ask = {"prompt": "Go ahead?", "confirmLabel": " Ship it 🚀 ", "denyLabel": "Wait ⏳"}
    assert card_of("confirm", ask) == confirm_card("Ship it 🚀", "Wait ⏳", "primary")


def test_confirm_label_of_20_units_with_emoji_is_not_cut() -> None:
    ask = {"prompt": "Go ahead?", "confirmLabel": "Rocket🚀🚀🚀🚀🚀🚀🚀"}
    assert card_of("confirm", ask) == confirm_card("Rocket🚀🚀🚀🚀🚀🚀🚀", "Cancel", "primary")


# --- markdown ------------------------------------------------------------------------------


def markdown_card(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {
        "toolCallId": "call_1",
        "kind": "markdown",
        "text": "Edit the draft.",
        "buttons": list(buttons),
        "handoff": True,
    }


def approve_draft(markdown: str) -> dict[str, Any]:
    return {
        "id": "approve",
        "label": "Approve draft",
        "style": "primary",
        "response": {"action": "accept", "content": {"markdown": markdown, "changed": False}},
    }


def test_markdown_initial_within_bounds_offers_approve_then_cancel() -> None:
    ask = {"prompt": "Edit the draft.", "initial": "# Hi\n", "minLength": 2, "maxLength": 5}
    assert card_of("markdown", ask) == markdown_card(approve_draft("# Hi\n"), CANCEL)


def test_markdown_without_initial_approves_the_empty_draft() -> None:
    assert card_of("markdown", {"prompt": "Edit the draft."}) == markdown_card(
        approve_draft(""), CANCEL
    )


def test_markdown_without_initial_below_min_length_offers_only_cancel() -> None:
    ask = {"prompt": "Edit the draft.", "minLength": 1}
    assert card_of("markdown", ask) == markdown_card(CANCEL)


def test_markdown_min_length_counts_without_spaces_at_either_end() -> None:
    fits = {"prompt": "Edit the draft.", "initial": "  abc \n", "minLength": 3}
    short = {"prompt": "Edit the draft.", "initial": "  abc \n", "minLength": 4}
    blank = {"prompt": "Edit the draft.", "initial": "   ", "minLength": 1}
    assert card_of("markdown", fits) == markdown_card(approve_draft("  abc \n"), CANCEL)
    assert card_of("markdown", short) == markdown_card(CANCEL)
    assert card_of("markdown", blank) == markdown_card(CANCEL)


def test_markdown_max_length_counts_utf16_units_of_the_whole_draft() -> None:
    # "🎉🎉" is 4 UTF-16 code units (2 code points); with the newline it is 5.
    fits = {"prompt": "Edit the draft.", "initial": "🎉🎉", "maxLength": 4}
    over = {"prompt": "Edit the draft.", "initial": "🎉🎉\n", "maxLength": 4}
    assert card_of("markdown", fits) == markdown_card(approve_draft("🎉🎉"), CANCEL)
    assert card_of("markdown", over) == markdown_card(CANCEL)


def test_markdown_without_decline_has_no_cancel() -> None:
    ok = {"prompt": "Edit the draft.", "initial": "Draft", "allowDecline": False}
    over = {"prompt": "Edit the draft.", "initial": "Draft", "maxLength": 3, "allowDecline": False}
    assert card_of("markdown", ok) == markdown_card(approve_draft("Draft"))
    assert card_of("markdown", over) == markdown_card()


# --- form ----------------------------------------------------------------------------------


def form_card(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {
        "toolCallId": "call_1",
        "kind": "form",
        "text": "A few details.",
        "buttons": list(buttons),
        "handoff": True,
    }


def submit_defaults(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "submit-defaults",
        "label": "Submit defaults",
        "style": "primary",
        "response": {"action": "accept", "content": {"values": values}},
    }


def test_form_every_required_field_with_a_default_offers_submit_defaults() -> None:
    ask = {
        "prompt": "A few details.",
        "fields": [
            {"id": "name", "type": "text", "label": "Name", "required": True, "default": "Ada"},
            {"id": "seats", "type": "number", "label": "Seats", "default": 3},
            {"id": "note", "type": "textarea", "label": "Note"},
            {"id": "ok", "type": "boolean", "label": "OK", "required": True, "default": False},
        ],
    }
    assert card_of("form", ask) == form_card(
        submit_defaults({"name": "Ada", "seats": 3, "ok": False}), CANCEL
    )


def test_form_required_field_without_default_offers_only_cancel() -> None:
    ask = {
        "prompt": "A few details.",
        "fields": [
            {"id": "name", "type": "text", "label": "Name", "required": True},
            {"id": "seats", "type": "number", "label": "Seats", "default": 3},
        ],
    }
    assert card_of("form", ask) == form_card(CANCEL)


def test_form_required_field_with_an_empty_default_offers_only_cancel() -> None:
    # An empty list does not answer a required field, so the defaults are not a valid answer.
    ask = {
        "prompt": "A few details.",
        "fields": [
            {
                "id": "tags",
                "type": "multiselect",
                "label": "Tags",
                "required": True,
                "options": [option("a", "A"), option("b", "B")],
                "default": [],
            },
            {"id": "seats", "type": "number", "label": "Seats", "default": 3},
        ],
    }
    assert card_of("form", ask) == form_card(CANCEL)


def test_form_without_any_default_offers_only_cancel() -> None:
    ask = {
        "prompt": "A few details.",
        "fields": [{"id": "note", "type": "text", "label": "Note"}],
    }
    assert card_of("form", ask) == form_card(CANCEL)


def test_form_optional_defaults_only_offer_submit_defaults() -> None:
    ask = {
        "prompt": "A few details.",
        "fields": [
            {"id": "note", "type": "text", "label": "Note"},
            {
                "id": "tags",
                "type": "multiselect",
                "label": "Tags",
                "options": [option("a", "A"), option("b", "B")],
                "default": ["b"],
            },
        ],
    }
    assert card_of("form", ask) == form_card(submit_defaults({"tags": ["b"]}), CANCEL)


def test_form_without_decline_has_no_cancel() -> None:
    with_default = {
        "prompt": "A few details.",
        "allowDecline": False,
        "fields": [
            {"id": "at", "type": "time", "label": "At", "required": True, "default": "09:30"}
        ],
    }
    without = {
        "prompt": "A few details.",
        "allowDecline": False,
        "fields": [{"id": "at", "type": "time", "label": "At", "required": True}],
    }
    assert card_of("form", with_default) == form_card(submit_defaults({"at": "09:30"}))
    assert card_of("form", without) == form_card()


# --- files ---------------------------------------------------------------------------------


def files_card(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {
        "toolCallId": "call_1",
        "kind": "files",
        "text": "Upload the receipt.",
        "buttons": list(buttons),
        "handoff": True,
    }


def test_files_offers_skip_by_default() -> None:
    ask = {"prompt": "Upload the receipt.", "accept": ["image", "pdf"]}
    assert card_of("files", ask) == files_card(SKIP)


def test_files_with_decline_allowed_offers_skip() -> None:
    ask = {"prompt": "Upload the receipt.", "accept": ["pdf"], "allowDecline": True}
    assert card_of("files", ask) == files_card(SKIP)


def test_files_without_decline_has_no_buttons() -> None:
    ask = {"prompt": "Upload the receipt.", "accept": ["csv"], "allowDecline": False}
    assert card_of("files", ask) == files_card()


# --- cuts ----------------------------------------------------------------------------------


def test_title_cut_to_40_and_text_cut_to_140_on_word_boundaries() -> None:
    ask = {
        "title": "Quarterly board update for the October meeting",
        "prompt": (
            "I drafted the quarterly update for the board. It covers revenue, hiring, the "
            "product roadmap for next quarter, and the two risks we discussed on Monday."
        ),
        "accept": ["pdf"],
    }
    assert card_of("files", ask) == {
        "toolCallId": "call_1",
        "kind": "files",
        "title": "Quarterly board update for the October…",
        "text": (
            "I drafted the quarterly update for the board. It covers revenue, hiring, the "
            "product roadmap for next quarter, and the two risks we…"
        ),
        "buttons": [SKIP],
        "handoff": True,
    }


@pytest.mark.parametrize(
    ("title", "prompt", "shown_title", "shown_text"),
    [
        pytest.param("t" * 40, "p" * 140, "t" * 40, "p" * 140, id="at-the-limits"),
        pytest.param("t" * 41, "p" * 141, "t" * 39 + "…", "p" * 139 + "…", id="no-boundary"),
        pytest.param(
            "Team 🇫🇷" + "🇩🇪" * 9,
            "Hi 👨‍👩‍👧‍👦" * 12,
            "Team 🇫🇷" + "🇩🇪" * 7 + "…",
            "Hi 👨‍👩‍👧‍👦" * 9 + "Hi…",
            id="emoji",
        ),
    ],
)
def test_title_cut_to_40_and_text_cut_to_140(
    title: str, prompt: str, shown_title: str, shown_text: str
) -> None:
    ask = {"title": title, "prompt": prompt, "accept": ["pdf"]}
    assert card_of("files", ask) == {
        "toolCallId": "call_1",
        "kind": "files",
        "title": shown_title,
        "text": shown_text,
        "buttons": [SKIP],
        "handoff": True,
    }


def test_title_is_left_out_when_the_ask_has_none() -> None:
    assert card_of("files", {"prompt": "Upload.", "accept": ["pdf"]}) == {
        "toolCallId": "call_1",
        "kind": "files",
        "text": "Upload.",
        "buttons": [SKIP],
        "handoff": True,
    }


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        pytest.param("Exactly twenty chars", "Exactly twenty chars", id="20-not-cut"),
        pytest.param("Support basics for small teams", "Support basics for…", id="word-boundary"),
        pytest.param("Abcdefghijklmnopqrstuvwxyz", "Abcdefghijklmnopqrs…", id="no-boundary"),
        pytest.param("Rocket🚀🚀🚀🚀🚀🚀🚀", "Rocket🚀🚀🚀🚀🚀🚀🚀", id="emoji-20-units"),
        pytest.param("Rocket🚀🚀🚀🚀🚀🚀🚀🚀", "Rocket🚀🚀🚀🚀🚀🚀…", id="surrogate-pair-intact"),
        pytest.param("Family👨‍👩‍👧‍👦👨‍👩‍👧‍👦", "Family👨‍👩‍👧‍👦…", id="zwj-sequence-whole"),
        pytest.param("Flags🇫🇷🇩🇪🇮🇹🇪🇸", "Flags🇫🇷🇩🇪🇮🇹…", id="flags-whole"),
        pytest.param("Skin👍🏽👍🏽👍🏽👍🏽👍🏽", "Skin👍🏽👍🏽👍🏽…", id="skin-tone-whole"),
        pytest.param("Go team 🎉🎉🎉🎉🎉🎉🎉 now", "Go team 🎉🎉🎉🎉🎉…", id="emoji-after-space"),
    ],
)
def test_option_label_cut_to_20_utf16_units(label: str, shown: str) -> None:
    assert card_of("choice", one(("a", label), "B")) == choice_card(
        [option_button("a", shown), option_button("b", "B"), SKIP], handoff=False
    )


# --- resolve_button_answer -----------------------------------------------------------------

CONFIRM_CARD = to_simple_card("confirm", {"prompt": "Go ahead?"}, "call_1")


def test_resolve_button_answer_returns_the_button_response() -> None:
    assert resolve_button_answer(CONFIRM_CARD, "approve") == APPROVE
    assert resolve_button_answer(CONFIRM_CARD, "deny") == DENY


def test_resolve_button_answer_returns_a_copy() -> None:
    card = copy.deepcopy(CONFIRM_CARD)
    answer = resolve_button_answer(card, "approve")
    answer["content"]["confirmed"] = False
    assert card == CONFIRM_CARD


def test_resolve_button_answer_for_every_button_of_every_fixture() -> None:
    for fixture in FIXTURES.values():
        card = fixture["simple"]
        for button in card["buttons"]:
            assert resolve_button_answer(card, button["id"]) == button["response"]


def test_unknown_button_raises_with_a_fix_listing_the_button_ids() -> None:
    with pytest.raises(UnknownButtonError) as raised:
        resolve_button_answer(CONFIRM_CARD, "skip")
    assert raised.value.error == AskValidationError(
        path="buttonId",
        code="UNKNOWN_BUTTON",
        message='Button "skip" is not on the pending ask\'s simple card.',
        fix='Press one of the card\'s buttons: "approve", "deny".',
    )
    assert str(raised.value) == 'Button "skip" is not on the pending ask\'s simple card.'


def test_unknown_button_on_a_card_without_buttons() -> None:
    card = to_simple_card(
        "files", {"prompt": "Upload.", "accept": ["pdf"], "allowDecline": False}, "c"
    )
    with pytest.raises(UnknownButtonError) as raised:
        resolve_button_answer(card, "skip")
    assert raised.value.error == AskValidationError(
        path="buttonId",
        code="UNKNOWN_BUTTON",
        message='Button "skip" is not on the pending ask\'s simple card.',
        fix="The card has no buttons: answer the ask with a full askResponse instead.",
    )


@pytest.mark.parametrize(
    ("button_id", "shown"),
    [
        (None, "null"),
        (1, "1"),
        (["approve"], "a list"),
        ({"id": "approve"}, "an object"),
        ("", '""'),
        ("APPROVE", '"APPROVE"'),
        ("x" * 100, '"' + "x" * 39 + '…"'),
    ],
)
def test_button_ids_that_are_not_on_the_card(button_id: Any, shown: str) -> None:
    error = AskValidationError(
        path="buttonId",
        code="UNKNOWN_BUTTON",
        message=f"Button {shown} is not on the pending ask's simple card.",
        fix='Press one of the card\'s buttons: "approve", "deny".',
    )
    with pytest.raises(UnknownButtonError) as raised:
        resolve_button_answer(CONFIRM_CARD, button_id)
    assert raised.value.error == error
    assert unknown_button_error(CONFIRM_CARD, button_id) == error


def test_unknown_button_error_lists_option_buttons_in_card_order() -> None:
    fixture = FIXTURES["choice-plan-with-default"]
    card = to_simple_card(fixture["kind"], fixture["input"], "call_fixture")
    assert unknown_button_error(card, "option:pro") == AskValidationError(
        path="buttonId",
        code="UNKNOWN_BUTTON",
        message='Button "option:pro" is not on the pending ask\'s simple card.',
        fix=(
            'Press one of the card\'s buttons: "option:team", "option:starter", '
            '"option:enterprise".'
        ),
    )


# --- any JSON ------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
# Every key the fixture asks use, so that generated asks mix real keys with wrong values.
ASK_KEYS = st.sampled_from(sorted({key for f in FIXTURES.values() for key in f["input"]}))
# Pieces that make cutting hard: spaces, surrogate pairs, ZWJ sequences, flags, lone joiners
# and combining marks.
LABEL = st.lists(
    st.sampled_from([" ", "a", "bc", "é", "🎉", "👨‍👩‍👧", "🇫🇷", "\u200d", "\u0301", "\u00a0"]),
    max_size=14,
).map("".join)
OPTION = st.fixed_dictionaries({"id": st.sampled_from(["a", "b", "c", "d", "e"]), "label": LABEL})


@given(
    kind=st.sampled_from([*ASK_KINDS, "unknown"]),
    ask=JSON | st.dictionaries(ASK_KEYS, JSON, max_size=8),
)
def test_any_json_gives_a_card_without_raising(kind: str, ask: Any) -> None:
    card = to_simple_card(kind, ask, "call_1")
    assert card["toolCallId"] == "call_1"
    assert card["kind"] == kind
    check_card_shape(card)


@given(
    select=st.sampled_from(["one", "many"]),
    options=st.lists(OPTION, min_size=0, max_size=6),
    default=st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=3),
    allow_decline=st.sampled_from([True, False, None]),
    prompt=LABEL,
)
def test_choice_cards_keep_their_invariants(
    select: str, options: list[dict[str, str]], default: list[str], allow_decline: Any, prompt: str
) -> None:
    ask: dict[str, Any] = {"prompt": prompt, "select": select, "options": options}
    if default:
        ask["default"] = default
    if allow_decline is not None:
        ask["allowDecline"] = allow_decline
    card = to_simple_card("choice", ask, "call_1")
    check_card_shape(card)
    offered = {o["id"] for o in options}
    for button in card["buttons"]:
        if button["response"]["action"] == "accept":
            assert set(button["response"]["content"]["selected"]) <= offered
    if not card["handoff"]:
        # A button for every option.
        assert select == "one"
        assert {b["id"] for b in card["buttons"]} >= {f"option:{i}" for i in offered}
    if validate_ask_input("choice", ask) == []:
        check_card(card)
        for button in card["buttons"]:
            assert validate_ask_response("choice", ask, button["response"]) == []
