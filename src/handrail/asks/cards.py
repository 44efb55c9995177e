"""Simple cards: every ask as short text and at most three buttons.

A client that does not know an ask's kind (a watch, a notification, a chat bot) renders the
card and sends the pressed button's ``response`` as the answer, or only the button's id to the
headless ``turn`` endpoint, which finds the answer with `resolve_button_answer`.

`to_simple_card` is meant for an ask that passed `validate_ask_input`. It never raises on other
JSON: a part it cannot read gives fewer buttons and ``handoff: true``, so the user answers in
the full app.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .errors import AskValidationError
from .helpers import (
    ask_allows_decline,
    choice_selection_bounds,
    confirm_button_labels,
    form_default_values,
    markdown_length_bounds,
)
from .limits import CARD_BUTTONS_MAX, CARD_LABEL_MAX, CARD_TEXT_MAX, CARD_TITLE_MAX, MARKDOWN_MAX
from .text import cut_text, describe, is_blank, js_trim, utf16_len

__all__ = [
    "UnknownButtonError",
    "confirmation_card",
    "resolve_button_answer",
    "to_simple_card",
    "unknown_button_error",
]

_USE_DEFAULT_PREFIX: Final = 'Use "'
_USE_DEFAULT_SUFFIX: Final = '"'
#: Room for the default's label inside ``Use "<label>"``: 20 - 6 = 14 UTF-16 code units.
_USE_DEFAULT_LABEL_MAX: Final = CARD_LABEL_MAX - utf16_len(
    _USE_DEFAULT_PREFIX + _USE_DEFAULT_SUFFIX
)

# The outcome of one kind's rule: its buttons and whether the user must continue in the full app.
_Buttons = list[dict[str, Any]]
_KindCard = tuple[_Buttons, bool]


class UnknownButtonError(Exception):
    """A pressed button id is not on the card. `error` is the ``UNKNOWN_BUTTON``
    `AskValidationError` to send back (400), whose `fix` lists the card's button ids."""

    def __init__(self, error: AskValidationError) -> None:
        super().__init__(error.message)
        self.error = error


def to_simple_card(kind: str, input: Any, tool_call_id: str) -> dict[str, Any]:
    """The simple card of an ask: ``{toolCallId, kind, title?, text, buttons, handoff}``.

    ``title`` (only when the ask has one) is cut to 40 UTF-16 code units and ``text`` (the
    prompt) to 140. Each of the 0-3 buttons is ``{id, label, style, response}``, with a label of
    at most 20 units and the exact answer envelope the button sends.
    """
    ask: Mapping[str, Any] = input if isinstance(input, dict) else {}
    card: dict[str, Any] = {"toolCallId": tool_call_id, "kind": kind}
    title = ask.get("title")
    if isinstance(title, str) and not is_blank(title):
        card["title"] = cut_text(title, CARD_TITLE_MAX)
    prompt = ask.get("prompt")
    card["text"] = cut_text(prompt, CARD_TEXT_MAX) if isinstance(prompt, str) else ""
    buttons, handoff = _kind_card(kind, ask)
    card["buttons"] = buttons
    card["handoff"] = handoff
    return card


def confirmation_card(input: Any, tool_call_id: str, *, expires_at: str) -> dict[str, Any]:
    """The simple card of a confirmation (a ``confirm`` ask that sends a prepared request): its
    text is the prompt (the preview, in the person's words) followed by ``Expires HH:MM:SS
    UTC.``. When the two do not fit whole in the card's text, the prompt is cut, the card offers
    only the deny button and sets ``handoff: true``: a small screen never confirms a side effect
    it cannot show."""
    card = to_simple_card("confirm", input, tool_call_id)
    ask: Mapping[str, Any] = input if isinstance(input, dict) else {}
    raw = ask.get("prompt")
    prompt = raw if isinstance(raw, str) else ""
    clock = _clock(expires_at)
    expiry = f"Expires {clock}." if clock else ""
    whole = f"{prompt} {expiry}".strip()
    if prompt and utf16_len(whole) <= CARD_TEXT_MAX:
        card["text"] = whole
        return card
    room = CARD_TEXT_MAX - utf16_len(expiry) - 1
    card["text"] = f"{cut_text(prompt, room)} {expiry}".strip() or "Confirm in the app."
    card["buttons"] = [b for b in card["buttons"] if b["id"] == "deny"]
    card["handoff"] = True
    return card


def _clock(when: str) -> str:
    """``2026-12-04T19:00:05Z`` as ``19:00:05 UTC`` ("" when it is not such a time)."""
    date, sep, rest = when.partition("T")
    clock = rest[:8]
    if not sep or not date or len(clock) != 8 or clock[2] != ":" or clock[5] != ":":
        return ""
    return f"{clock} UTC"


def unknown_button_error(card: Mapping[str, Any], button_id: Any) -> AskValidationError:
    """The ``UNKNOWN_BUTTON`` error for pressing `button_id`, which is not on `card`."""
    ids = list(dict.fromkeys(_button_ids(card)))
    if ids:
        listed = ", ".join(json.dumps(i, ensure_ascii=False) for i in ids)
        fix = f"Press one of the card's buttons: {listed}."
    else:
        fix = "The card has no buttons: answer the ask with a full askResponse instead."
    return AskValidationError(
        path="buttonId",
        code="UNKNOWN_BUTTON",
        message=f"Button {describe(button_id)} is not on the pending ask's simple card.",
        fix=fix,
    )


def resolve_button_answer(card: Mapping[str, Any], button_id: Any) -> dict[str, Any]:
    """The answer envelope that pressing `button_id` on `card` sends: a deep copy of that
    button's ``response``. Raises `UnknownButtonError` when the card has no such button."""
    buttons = card.get("buttons") if isinstance(card, Mapping) else None
    if isinstance(button_id, str) and isinstance(buttons, list):
        for button in buttons:
            if (
                isinstance(button, Mapping)
                and button.get("id") == button_id
                and isinstance(button.get("response"), Mapping)
            ):
                return copy.deepcopy(dict(button["response"]))
    raise UnknownButtonError(unknown_button_error(card, button_id))


# --- buttons -------------------------------------------------------------------------------


def _button(id: str, label: str, style: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"id": id, "label": label, "style": style, "response": response}


def _accept(content: dict[str, Any]) -> dict[str, Any]:
    """An accept envelope holding a copy of `content`, so a card never shares a list or an
    object with the ask it came from."""
    return {"action": "accept", "content": _copied(content)}


def _accept_new(content: dict[str, Any]) -> dict[str, Any]:
    """An accept envelope around `content`, made for this button only (of strings and new
    lists: nothing to copy)."""
    return {"action": "accept", "content": content}


def _copied(value: Any) -> Any:
    """A deep copy of a JSON value (`copy.deepcopy` for anything else), at a fraction of
    deepcopy's cost: a card holds a few of them."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if value is None or isinstance(value, str | int | float):
        return value
    return copy.deepcopy(value)


def _skip_button() -> dict[str, Any]:
    return _button("skip", "Skip", "cancel", {"action": "decline"})


def _cancel_button() -> dict[str, Any]:
    return _button("cancel", "Cancel", "cancel", {"action": "decline"})


def _button_label(label: str, max_length: int = CARD_LABEL_MAX) -> str:
    """A label as its button shows it: without spaces at either end, cut to fit."""
    return cut_text(js_trim(label), max_length)


def _button_ids(card: Mapping[str, Any]) -> list[str]:
    buttons = card.get("buttons") if isinstance(card, Mapping) else None
    if not isinstance(buttons, list):
        return []
    return [b["id"] for b in buttons if isinstance(b, Mapping) and isinstance(b.get("id"), str)]


# --- one rule per kind ---------------------------------------------------------------------


def _kind_card(kind: str, ask: Mapping[str, Any]) -> _KindCard:
    if kind == "choice":
        return _choice_card(ask)
    if kind == "confirm":
        return _confirm_card(ask)
    if kind == "markdown":
        return _markdown_card(ask)
    if kind == "form":
        return _form_card(ask)
    if kind == "files":
        return _files_card(ask)
    # An unknown kind: nothing to press, the full app has to answer it.
    return [], True


def _decline_buttons(
    kind: str, ask: Mapping[str, Any], make: Callable[[], dict[str, Any]] = _skip_button
) -> _Buttons:
    return [make()] if ask_allows_decline(kind, ask) else []


def _choice_options(ask: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """The ``(id, label)`` of each option, or None when the options cannot become buttons: not
    a list, an entry without a string id and label, or an id listed twice."""
    raw = ask.get("options")
    if not isinstance(raw, list) or not raw:
        return None
    options: list[tuple[str, str]] = []
    for option in raw:
        if not isinstance(option, dict):
            return None
        option_id, label = option.get("id"), option.get("label")
        if not isinstance(option_id, str) or not isinstance(label, str):
            return None
        options.append((option_id, label))
    if len({option_id for option_id, _ in options}) != len(options):
        return None
    return options


def _choice_card(ask: Mapping[str, Any]) -> _KindCard:
    skip = _decline_buttons("choice", ask)
    options = _choice_options(ask)
    if options is None:
        return skip, True
    if ask.get("select") == "many":
        return _use_suggested_buttons(ask, options) + skip, True

    # Option ids are unique, so an option is the default exactly when its id is default_id.
    default = ask.get("default")
    default_id = default[0] if isinstance(default, list) and default else None
    default_option = next((o for o in options if o[0] == default_id), None)

    if len(options) > CARD_BUTTONS_MAX:
        return _use_default_buttons(options, default_option) + skip, True

    ordered = options
    if default_option is not None:
        ordered = [default_option, *(o for o in options if o[0] != default_id)]
    buttons: _Buttons = []
    for option in ordered:
        option_id, label = option
        style = "primary" if option_id == default_id else "default"
        response = _accept_new({"selected": [option_id]})
        buttons.append(_button(f"option:{option_id}", _button_label(label), style, response))
    labels = [button["label"] for button in buttons]
    if "" in labels or len(set(labels)) != len(labels):
        # The buttons could not tell the options apart.
        return skip, True
    if len(buttons) < CARD_BUTTONS_MAX:
        buttons += skip
    return buttons, False


def _use_default_buttons(
    options: Sequence[tuple[str, str]], default_option: tuple[str, str] | None
) -> _Buttons:
    """``Use "<label>"`` for the default of a ``select: "one"`` ask with more options than
    buttons, left out when its cut label also fits another option."""
    if default_option is None:
        return []
    default_id, default_label = default_option
    label = _button_label(default_label, _USE_DEFAULT_LABEL_MAX)
    if not label or any(
        option_id != default_id and _button_label(other, _USE_DEFAULT_LABEL_MAX) == label
        for option_id, other in options
    ):
        return []
    return [
        _button(
            "use-default",
            f"{_USE_DEFAULT_PREFIX}{label}{_USE_DEFAULT_SUFFIX}",
            "primary",
            _accept_new({"selected": [default_id]}),
        )
    ]


def _use_suggested_buttons(ask: Mapping[str, Any], options: Sequence[tuple[str, str]]) -> _Buttons:
    """The ``Use suggested`` button of a ``select: "many"`` ask, when its default alone is a
    valid answer: offered ids, each once, as many as the ask's bounds allow."""
    default = ask.get("default")
    if not isinstance(default, list) or not default:
        return []
    offered = {option_id for option_id, _ in options}
    if not all(isinstance(i, str) and i in offered for i in default):
        return []
    if len(set(default)) != len(default):
        return []
    bounds = choice_selection_bounds(ask)
    if not bounds.min <= len(default) <= bounds.max:
        return []
    return [_button("use-default", "Use suggested", "primary", _accept({"selected": default}))]


def _confirm_card(ask: Mapping[str, Any]) -> _KindCard:
    """Approve first, deny last, and never Skip: deny is the negative answer."""
    labels = confirm_button_labels(ask)
    defaults = confirm_button_labels({})
    approve = _button_label(labels.confirm) or defaults.confirm
    deny = _button_label(labels.deny) or defaults.deny
    style = "destructive" if ask.get("destructive") is True else "primary"
    return [
        _button("approve", approve, style, _accept_new({"confirmed": True})),
        _button("deny", deny, "cancel", _accept_new({"confirmed": False})),
    ], False


def _markdown_card(ask: Mapping[str, Any]) -> _KindCard:
    """The ``Approve draft`` button sends the draft unchanged, when it meets the ask's length
    bounds: ``minLength`` without spaces at either end, ``maxLength`` in UTF-16 code units."""
    buttons: _Buttons = []
    initial = ask.get("initial", "")
    if isinstance(initial, str):
        bounds = markdown_length_bounds(ask)
        longest = min(bounds.max, MARKDOWN_MAX)
        if bounds.min <= utf16_len(js_trim(initial)) and utf16_len(initial) <= longest:
            response = _accept({"markdown": initial, "changed": False})
            buttons.append(_button("approve", "Approve draft", "primary", response))
    return buttons + _decline_buttons("markdown", ask, _cancel_button), True


def _is_answered(value: Any) -> bool:
    """Whether a form value answers its field: a blank string or an empty list does not."""
    if value is None:
        return False
    if isinstance(value, str):
        return not is_blank(value)
    if isinstance(value, list):
        return bool(value)
    return True


def _form_card(ask: Mapping[str, Any]) -> _KindCard:
    """The ``Submit defaults`` button sends the fields' defaults, when at least one field has a
    default and every required field has one that answers it."""
    buttons: _Buttons = []
    fields = ask.get("fields")
    values = form_default_values(ask)
    if isinstance(fields, list) and values:
        required = [
            field.get("id")
            for field in fields
            if isinstance(field, dict) and field.get("required") is True
        ]
        if all(
            isinstance(field_id, str) and field_id in values and _is_answered(values[field_id])
            for field_id in required
        ):
            response = _accept({"values": values})
            buttons.append(_button("submit-defaults", "Submit defaults", "primary", response))
    return buttons + _decline_buttons("form", ask, _cancel_button), True


def _files_card(ask: Mapping[str, Any]) -> _KindCard:
    return _decline_buttons("files", ask), True
