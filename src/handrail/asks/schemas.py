"""JSON Schema documents of the ask protocol.

Two families, both built from the limits in `handrail.asks.limits` (no number is written here):

- `ask_input_json_schema(kind, surface=...)`: the input schema of the ``ask_<kind>`` tool, as a
  model sees it. It keeps to the JSON Schema keywords every tool-calling API understands
  (``type``, ``properties``, ``required``, ``additionalProperties: false``, ``enum``, ``const``,
  ``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``pattern``, ``minimum``,
  ``maximum``, ``items``, ``anyOf``, ``description``), with no ``$ref``.
- `ask_json_schemas()`: the four draft-07 documents published for clients that do not run Python
  (``simpleCard``, ``turnRequest``, ``turnResponse``, ``pendingAsksResponse``). They accept
  exactly the bodies the Terreno conformance documents accept, so clients built for those work
  unchanged. `write_ask_json_schemas` writes them as ``<name>.schema.json`` files into
  ``handrail/asks/schemas/``, and ``handrail schemas`` regenerates them.

The schemas are a description, not the judge: `validate_ask_input` and `validate_ask_response`
are authoritative. JSON Schema cannot say everything the protocol says. Unique ids, bounds that
depend on each other, text that must hold a visible character, and the fields that one
``select`` mode allows are checked by the validators only. Lengths differ too: JSON Schema's
``minLength`` and ``maxLength`` count Unicode code points, while the protocol counts UTF-16 code
units (the ``length`` of a JavaScript string), so a string with emoji can pass ``maxLength``
here and still be too long for the validator, never the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from .limits import (
    ASK_CANCEL_REASONS,
    ASK_FILE_ACCEPT,
    ASK_KINDS,
    ASK_LIMITS,
    ASK_SURFACES,
    CANCEL_REASON_MAX,
    CARD_BUTTONS_MAX,
    CARD_LABEL_MAX,
    CARD_TEXT_MAX,
    CARD_TITLE_MAX,
    CHOICE_SELECT_MODES,
    COMPACT_ASK_KINDS,
    CONFIRM_LABEL_MAX,
    FILES_MAX,
    FILES_MIN,
    FORM_FIELD_TYPES,
    FORM_FIELDS_MAX,
    FORM_FIELDS_MIN,
    FORM_HELPER_MAX,
    FORM_LABEL_MAX,
    FORM_TEXT_MAX,
    FORM_TEXTAREA_MAX,
    MARKDOWN_MAX,
    MARKDOWN_PLACEHOLDER_MAX,
    OPTION_DESCRIPTION_MAX,
    OPTION_ID_PATTERN,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    OPTIONS_MIN,
    PHONE_DIGITS_MAX,
    PHONE_DIGITS_MIN,
    PROMPT_MAX,
    SIMPLE_CARD_BUTTON_STYLES,
    SUBMIT_LABEL_MAX,
    TITLE_MAX,
)

__all__ = [
    "ASK_JSON_SCHEMA_NAMES",
    "DRAFT_07",
    "SCHEMAS_FOLDER",
    "ask_input_json_schema",
    "ask_json_schemas",
    "schema_file_name",
    "schema_files_out_of_date",
    "write_ask_json_schemas",
]

#: The ``$schema`` of every published document.
DRAFT_07: Final = "http://json-schema.org/draft-07/schema#"

#: The published documents, in the order they are written.
ASK_JSON_SCHEMA_NAMES: Final[tuple[str, ...]] = (
    "simpleCard",
    "turnRequest",
    "turnResponse",
    "pendingAsksResponse",
)

#: Where the committed documents live, inside the package.
SCHEMAS_FOLDER: Final = Path(__file__).parent / "schemas"

_TURN_ROUTE: Final = "POST /api/histories/{id}/turn"
_PENDING_ASKS_ROUTE: Final = "GET /api/histories/pendingAsks"

# Set by the protocol's field formats, not limits: `date` is YYYY-MM-DD, `time` is HH:mm.
_DATE_PATTERN: Final = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIME_PATTERN: Final = "^[0-9]{2}:[0-9]{2}$"

# An ISO 8601 UTC timestamp with seconds, optional fractions and `Z`, with real calendar days
# (February 29 only in leap years). The same expression as the published documents, so that both
# accept the same `created` values.
_LEAP_DAY: Final = (
    r"(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29"
)
_CALENDAR_DAY: Final = (
    r"\d{4}-(?:"
    r"(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|(?:02)-(?:0[1-9]|1\d|2[0-8])"
    r")"
)
_UTC_TIME: Final = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z)"
_UTC_TIMESTAMP_PATTERN: Final = f"^(?:{_LEAP_DAY}|{_CALENDAR_DAY})T(?:{_UTC_TIME})$"

JsonSchema = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Small builders
# ---------------------------------------------------------------------------------------------


def _string(
    description: str | None = None,
    *,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
) -> JsonSchema:
    schema: JsonSchema = {"type": "string"}
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if pattern is not None:
        schema["pattern"] = pattern
    if description is not None:
        schema["description"] = description
    return schema


def _text(max_length: int, description: str | None = None) -> JsonSchema:
    """A text field of the protocol: at least one character, at most `max_length`."""
    return _string(description, min_length=1, max_length=max_length)


def _integer(description: str, *, minimum: int, maximum: int) -> JsonSchema:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _boolean(description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "boolean"}
    if description is not None:
        schema["description"] = description
    return schema


def _enum(values: Iterable[str], description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "string", "enum": list(values)}
    if description is not None:
        schema["description"] = description
    return schema


def _const(value: str, description: str | None = None) -> JsonSchema:
    schema: JsonSchema = {"type": "string", "const": value}
    if description is not None:
        schema["description"] = description
    return schema


def _object(
    properties: Mapping[str, JsonSchema],
    *,
    required: Iterable[str] = (),
    title: str | None = None,
    description: str | None = None,
) -> JsonSchema:
    """A strict object: no key beyond `properties`."""
    schema: JsonSchema = {"type": "object"}
    if title is not None:
        schema["title"] = title
    if description is not None:
        schema["description"] = description
    schema["properties"] = dict(properties)
    required_keys = list(required)
    if required_keys:
        schema["required"] = required_keys
    schema["additionalProperties"] = False
    return schema


def _array(
    items: JsonSchema,
    *,
    min_items: int | None = None,
    max_items: int | None = None,
    description: str | None = None,
) -> JsonSchema:
    schema: JsonSchema = {"type": "array", "items": items}
    if min_items is not None:
        schema["minItems"] = min_items
    if max_items is not None:
        schema["maxItems"] = max_items
    if description is not None:
        schema["description"] = description
    return schema


_OPTION_ID_MAX: Final[int] = ASK_LIMITS["choice"]["optionIdMaxLength"]
_ID_RULE: Final = (
    f"1-{_OPTION_ID_MAX} lowercase letters, digits, '_' or '-', starting with a letter or digit"
)


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


# ---------------------------------------------------------------------------------------------
# Ask inputs: the `ask_<kind>` tool schemas
# ---------------------------------------------------------------------------------------------


def _shared_fields(*, submit_label: bool, decline_default: bool) -> dict[str, JsonSchema]:
    fields: dict[str, JsonSchema] = {
        "prompt": _text(
            PROMPT_MAX,
            "The question for the user, in plain text: no markdown, no links. "
            f"1-{PROMPT_MAX} characters.",
        ),
        "title": _text(
            TITLE_MAX, f"A short heading above the question, at most {TITLE_MAX} characters."
        ),
    }
    if submit_label:
        fields["submitLabel"] = _text(
            SUBMIT_LABEL_MAX,
            f'Label of the submit button, at most {SUBMIT_LABEL_MAX} characters. Default "Submit".',
        )
    if decline_default:
        fields["allowDecline"] = _boolean(
            "Whether the user may skip the question. Default true: a Skip button is shown."
        )
    else:
        fields["allowDecline"] = _boolean(
            "Whether the user may skip the question besides denying. Default false: deny is "
            "the negative answer."
        )
    return fields


def _choice_option(label_max: int) -> JsonSchema:
    return _object(
        {
            "id": _option_id(
                f"Stable id returned in the answer: {_ID_RULE}. Unique within the ask."
            ),
            "label": _text(label_max, f"What the user sees, at most {label_max} characters."),
            "description": _text(
                OPTION_DESCRIPTION_MAX,
                f"One line under the label, at most {OPTION_DESCRIPTION_MAX} characters.",
            ),
        },
        required=("id", "label"),
    )


def _option_id(description: str) -> JsonSchema:
    return _string(description, pattern=OPTION_ID_PATTERN)


def _choice_input(*, compact: bool) -> JsonSchema:
    shared = _shared_fields(submit_label=True, decline_default=True)
    if compact:
        label_max, options_max = CARD_LABEL_MAX, CARD_BUTTONS_MAX
        properties: dict[str, JsonSchema] = {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "select": _const(
                "one",
                'Always "one": the user taps one option. The small screen offers no multiple '
                "choice.",
            ),
            "options": _array(
                _choice_option(label_max),
                min_items=OPTIONS_MIN,
                max_items=options_max,
                description=(
                    f"The options in display order, {OPTIONS_MIN}-{options_max} of them, each "
                    f"shown as a button: labels of at most {label_max} characters (emoji count "
                    "as 2 or more), all different."
                ),
            ),
            "default": _array(
                _option_id("An option id."),
                max_items=1,
                description="The id of the option to suggest, shown first. At most one id.",
            ),
        }
    else:
        label_max, options_max = OPTION_LABEL_MAX, OPTIONS_MAX
        # Other counts as one more choice than the options.
        choices_max = OPTIONS_MAX + 1
        properties = {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "select": _enum(
                CHOICE_SELECT_MODES,
                '"one": the user picks exactly one option. "many": the user picks several; '
                "only then may minSelected, maxSelected, allowOther and otherLabel be set.",
            ),
            "options": _array(
                _choice_option(label_max),
                min_items=OPTIONS_MIN,
                max_items=options_max,
                description=(
                    f"The options in display order, {OPTIONS_MIN}-{options_max} of them, "
                    "with unique ids."
                ),
            ),
            "default": _array(
                _option_id("An option id."),
                max_items=options_max,
                description=(
                    'Option ids to preselect, each once. With select "one", at most one id; '
                    'with "many", at most maxSelected ids.'
                ),
            ),
            "minSelected": _integer(
                'select "many" only: the fewest choices the answer holds. Default 1.',
                minimum=0,
                maximum=choices_max,
            ),
            "maxSelected": _integer(
                'select "many" only: the most choices the answer holds, at most the number of '
                "options (plus one with allowOther). Default: all of them.",
                minimum=1,
                maximum=choices_max,
            ),
            "allowOther": _boolean(
                'select "many" only: true adds a text field where the user types an answer of '
                'their own, counting as one choice. For "one option or Other", use select '
                '"many" with maxSelected 1.'
            ),
            "otherLabel": _text(
                OPTION_LABEL_MAX,
                f"Label of the Other field, at most {OPTION_LABEL_MAX} characters. Default "
                '"Other". Only with allowOther true.',
            ),
        }
    properties["submitLabel"] = shared["submitLabel"]
    properties["allowDecline"] = shared["allowDecline"]
    return _object(
        properties,
        required=("prompt", "select", "options"),
        description=(
            f"Ask the user to pick one of up to {CARD_BUTTONS_MAX} short options on a small screen."
            if compact
            else "Ask the user to pick one or several options from a list."
        ),
    )


def _confirm_input() -> JsonSchema:
    shared = _shared_fields(submit_label=False, decline_default=False)
    label_rule = f"at most {CONFIRM_LABEL_MAX} characters (emoji count as 2 or more)"
    return _object(
        {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "confirmLabel": _text(
                CONFIRM_LABEL_MAX, f'Label of the approve button, {label_rule}. Default "Confirm".'
            ),
            "denyLabel": _text(
                CONFIRM_LABEL_MAX,
                f'Label of the deny button, {label_rule}. Default "Cancel". It must differ from '
                "the approve label.",
            ),
            "destructive": _boolean(
                "true when the action deletes data or cannot be undone: the approve button "
                "shows as destructive. Default false."
            ),
            "allowDecline": shared["allowDecline"],
        },
        required=("prompt",),
        description=(
            "Ask the user to approve or deny one action the prompt describes, before a tool "
            "call that deletes data, sends something on their behalf, spends money or cannot "
            "be undone. Make the call only after the answer {confirmed: true}."
        ),
    )


def _markdown_input() -> JsonSchema:
    shared = _shared_fields(submit_label=True, decline_default=True)
    return _object(
        {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "initial": _string(
                f"The draft in markdown for the user to edit, at most {MARKDOWN_MAX} "
                'characters. Default "" (the user writes from scratch).',
                max_length=MARKDOWN_MAX,
            ),
            "placeholder": _text(
                MARKDOWN_PLACEHOLDER_MAX,
                "Hint shown while the editor is empty, at most "
                f"{MARKDOWN_PLACEHOLDER_MAX} characters.",
            ),
            "minLength": _integer(
                "The fewest characters the answer holds, not counting spaces at either end. "
                "Default 0.",
                minimum=0,
                maximum=MARKDOWN_MAX,
            ),
            "maxLength": _integer(
                f"The most characters the answer holds. Default {MARKDOWN_MAX}.",
                minimum=1,
                maximum=MARKDOWN_MAX,
            ),
            "submitLabel": shared["submitLabel"],
            "allowDecline": shared["allowDecline"],
        },
        required=("prompt",),
        description="Ask the user to edit a markdown draft, or write one, and send it back.",
    )


_FIELD_TYPE_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "text": "One line of text.",
    "textarea": "Several lines of text.",
    "email": "An email address.",
    "url": "An http or https URL.",
    "phone": (
        f"A phone number: {PHONE_DIGITS_MIN}-{PHONE_DIGITS_MAX} digits, optionally starting "
        'with "+", such as "+14155552671".'
    ),
    "number": "A number.",
    "date": 'A calendar date as YYYY-MM-DD, such as "2026-10-01".',
    "time": 'A 24-hour time as HH:mm, such as "09:30".',
    "datetime": (
        'A date and time with "Z" or an offset, such as "2026-10-01T09:30Z" or '
        '"2026-10-01T09:30:00+02:00". A time without an offset is refused.'
    ),
    "boolean": "A yes-or-no switch; its value is true or false.",
    "select": "One of the field's options; its value is the option's id.",
    "multiselect": "Any of the field's options; its value is a list of option ids.",
}


def _field_options() -> JsonSchema:
    return _array(
        _object(
            {
                "id": _option_id(
                    f"Id of the option, used as the value: {_ID_RULE}. Unique within the field."
                ),
                "label": _text(
                    OPTION_LABEL_MAX, f"What the user sees, at most {OPTION_LABEL_MAX} characters."
                ),
            },
            required=("id", "label"),
        ),
        min_items=OPTIONS_MIN,
        max_items=OPTIONS_MAX,
        description=f"The options in display order, {OPTIONS_MIN}-{OPTIONS_MAX} of them.",
    )


def _length_keys(cap: int) -> dict[str, JsonSchema]:
    return {
        "minLength": _integer(
            "The fewest characters the value holds, not counting spaces at either end. Default 0.",
            minimum=0,
            maximum=cap,
        ),
        "maxLength": _integer(
            f"The most characters the value holds. Default and cap {cap}.",
            minimum=1,
            maximum=cap,
        ),
    }


def _field_extras(field_type: str) -> tuple[dict[str, JsonSchema], JsonSchema]:
    """The extra keys of one field type, and the schema of its `default`."""
    default = "Value the field starts with, checked like an answer."
    if field_type in ("text", "textarea"):
        cap = FORM_TEXT_MAX if field_type == "text" else FORM_TEXTAREA_MAX
        return _length_keys(cap), _string(default, max_length=cap)
    if field_type in ("email", "url", "phone"):
        return {}, _string(default, max_length=FORM_TEXT_MAX)
    if field_type == "number":
        extras: dict[str, JsonSchema] = {
            "min": {"type": "number", "description": "The smallest value allowed."},
            "max": {"type": "number", "description": "The largest value allowed."},
            "integer": _boolean("true to allow whole numbers only. Default false."),
        }
        return extras, {"type": "number", "description": default}
    if field_type == "date":
        return {}, _string(default, pattern=_DATE_PATTERN)
    if field_type == "time":
        return {}, _string(default, pattern=_TIME_PATTERN)
    if field_type == "datetime":
        return {}, _string(default)
    if field_type == "boolean":
        return {}, _boolean(default)
    if field_type == "select":
        return {"options": _field_options()}, _option_id(f"{default} An option id.")
    if field_type == "multiselect":
        return {"options": _field_options()}, _array(
            _option_id("An option id."), max_items=OPTIONS_MAX, description=f"{default} Ids."
        )
    raise ValueError(f"No JSON Schema for form field type {field_type!r}.")


def _form_field(field_type: str) -> JsonSchema:
    extras, default = _field_extras(field_type)
    properties: dict[str, JsonSchema] = {
        "type": _const(field_type, _FIELD_TYPE_DESCRIPTIONS[field_type]),
        "id": _option_id(
            f"Key of the field's value in the answer: {_ID_RULE}. Unique within the form."
        ),
        "label": _text(FORM_LABEL_MAX, f"The field's label, at most {FORM_LABEL_MAX} characters."),
        "helperText": _text(
            FORM_HELPER_MAX, f"One line under the field, at most {FORM_HELPER_MAX} characters."
        ),
        "required": _boolean("true when the user must fill the field in. Default false."),
        **extras,
        "default": default,
    }
    required = ["type", "id", "label"]
    if "options" in extras:
        required.append("options")
    return _object(properties, required=required)


def _form_input() -> JsonSchema:
    shared = _shared_fields(submit_label=True, decline_default=True)
    return _object(
        {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "fields": _array(
                {"anyOf": [_form_field(field_type) for field_type in FORM_FIELD_TYPES]},
                min_items=FORM_FIELDS_MIN,
                max_items=FORM_FIELDS_MAX,
                description=(
                    f"The fields in display order, {FORM_FIELDS_MIN}-{FORM_FIELDS_MAX} of them, "
                    "flat. Each type takes only its own extra keys."
                ),
            ),
            "submitLabel": shared["submitLabel"],
            "allowDecline": shared["allowDecline"],
        },
        required=("prompt", "fields"),
        description="Ask the user to fill in a few typed fields and submit them at once.",
    )


def _files_input() -> JsonSchema:
    shared = _shared_fields(submit_label=True, decline_default=True)
    return _object(
        {
            "prompt": shared["prompt"],
            "title": shared["title"],
            "accept": _array(
                _enum(ASK_FILE_ACCEPT),
                min_items=1,
                max_items=len(ASK_FILE_ACCEPT),
                description=(
                    f"The kinds of file the user may pick, each listed once: "
                    f"{_quoted(ASK_FILE_ACCEPT)}."
                ),
            ),
            "minFiles": _integer(
                f"The fewest files the answer holds. Default {FILES_MIN}.",
                minimum=FILES_MIN,
                maximum=FILES_MAX,
            ),
            "maxFiles": _integer(
                f"The most files the answer holds. Default {FILES_MAX}.",
                minimum=FILES_MIN,
                maximum=FILES_MAX,
            ),
            "submitLabel": shared["submitLabel"],
            "allowDecline": shared["allowDecline"],
        },
        required=("prompt", "accept"),
        description="Ask the user to upload one or more files, which you then read.",
    )


def ask_input_json_schema(kind: str, *, surface: str = "full") -> dict[str, Any]:
    """The JSON Schema of the input of the ``ask_<kind>`` tool on `surface`.

    On ``surface="compact"`` a ``choice`` is narrowed to what a watch shows uncut
    (``select: "one"``, 2-3 options, short labels) and a ``confirm`` keeps its full schema; the
    other kinds are not offered there and raise `ValueError`, as do an unknown kind or surface.
    Each call returns a new dict.
    """
    if kind not in ASK_KINDS:
        raise ValueError(f"Unknown ask kind {kind!r}; the kinds are {_quoted(ASK_KINDS)}.")
    if surface not in ASK_SURFACES:
        raise ValueError(
            f"Unknown ask surface {surface!r}; the surfaces are {_quoted(ASK_SURFACES)}."
        )
    compact = surface == "compact"
    if compact and kind not in COMPACT_ASK_KINDS:
        raise ValueError(
            f"The compact surface does not offer ask kind {kind!r}; it offers "
            f"{_quoted(COMPACT_ASK_KINDS)}."
        )
    if kind == "choice":
        return _choice_input(compact=compact)
    if kind == "confirm":
        return _confirm_input()
    if kind == "markdown":
        return _markdown_input()
    if kind == "form":
        return _form_input()
    return _files_input()


# ---------------------------------------------------------------------------------------------
# The published documents: cards and the headless endpoints
# ---------------------------------------------------------------------------------------------


def _ask_kind() -> JsonSchema:
    return _enum(ASK_KINDS, "The ask kind.")


def _tool_call_id(description: str | None = None) -> JsonSchema:
    return _string(description, min_length=1)


def _answer_variants(extra: Mapping[str, JsonSchema] | None = None) -> list[JsonSchema]:
    """The three answer envelopes (accept, decline, cancel), each with the `extra` keys."""
    extra = extra or {}
    accept = _object(
        {
            "action": _const("accept", "The user answered."),
            "content": {
                "type": "object",
                "description": "The answer of the ask's kind, such as {selected: [...]}.",
            },
            **extra,
        },
        required=("action", "content", *extra),
    )
    decline = _object(
        {"action": _const("decline", "The user skipped the ask."), **extra},
        required=("action", *extra),
    )
    cancel = _object(
        {
            "action": _const("cancel", "The ask was dropped."),
            "reason": _text(
                CANCEL_REASON_MAX,
                f"Why, at most {CANCEL_REASON_MAX} characters. The server records "
                f"{_quoted(ASK_CANCEL_REASONS)}.",
            ),
            **extra,
        },
        required=("action", *extra),
    )
    return [accept, decline, cancel]


def _ask_response() -> JsonSchema:
    """``AskResponse``: the answer envelope a card button sends."""
    return {
        "title": "AskResponse",
        "description": "The answer this button sends: the answer envelope of the ask.",
        "oneOf": _answer_variants(),
    }


def _ask_answer() -> JsonSchema:
    """``AskAnswer``: the answer envelope plus the pending ask's ``toolCallId``."""
    return {
        "title": "AskAnswer",
        "description": "A full answer to the pending ask, as a client that renders the ask "
        "sends it.",
        "oneOf": _answer_variants({"toolCallId": _tool_call_id("The pending ask's toolCallId.")}),
    }


def _simple_card_button() -> JsonSchema:
    return _object(
        {
            "id": _string(
                "The button's id, unique within the card. Send it as buttonId to answer.",
                min_length=1,
            ),
            "label": _string(
                f"What the button shows, at most {CARD_LABEL_MAX} characters.",
                min_length=1,
                max_length=CARD_LABEL_MAX,
            ),
            "style": _enum(
                SIMPLE_CARD_BUTTON_STYLES,
                "How the button looks. The primary answer comes first and cancel last.",
            ),
            "response": _ask_response(),
        },
        required=("id", "label", "response", "style"),
        title="SimpleCardButton",
    )


def _simple_card_properties() -> dict[str, JsonSchema]:
    return {
        "toolCallId": _tool_call_id("The ask's toolCallId."),
        "kind": _ask_kind(),
        "title": _string(
            f"The ask's title, cut to {CARD_TITLE_MAX} characters.",
            min_length=1,
            max_length=CARD_TITLE_MAX,
        ),
        "text": _string(
            f"The ask's prompt, cut to {CARD_TEXT_MAX} characters.",
            min_length=1,
            max_length=CARD_TEXT_MAX,
        ),
        "buttons": _array(
            _simple_card_button(),
            max_items=CARD_BUTTONS_MAX,
            description=f"0-{CARD_BUTTONS_MAX} buttons, each sending its own answer.",
        ),
        "handoff": _boolean(
            "true when the buttons cannot show every option the ask offers, so the user needs "
            "the full app to answer."
        ),
    }


_SIMPLE_CARD_REQUIRED: Final = ("buttons", "handoff", "kind", "text", "toolCallId")
_SIMPLE_CARD_DESCRIPTION: Final = (
    f"The small-screen form of an ask: short text and at most {CARD_BUTTONS_MAX} buttons, each "
    "carrying the exact answer it sends. Button ids are unique within a card, which JSON Schema "
    "cannot express; the server enforces it."
)


def _simple_card(description: str | None = None) -> JsonSchema:
    return _object(
        _simple_card_properties(),
        required=_SIMPLE_CARD_REQUIRED,
        title="SimpleCard",
        description=description,
    )


def _pending_ask_summary() -> JsonSchema:
    return _object(
        {
            "toolCallId": _tool_call_id("The ask's toolCallId."),
            "kind": _ask_kind(),
            "simple": _simple_card("The ask's simple card."),
        },
        required=("kind", "simple", "toolCallId"),
        title="PendingAskSummary",
        description="The ask the turn paused on. Answer it with its toolCallId and the id of one "
        "of simple.buttons.",
    )


def _history_title() -> JsonSchema:
    return _string("The conversation's title, once it has one.")


def _turn_result() -> JsonSchema:
    return _object(
        {
            "historyId": _string("The conversation's id.", min_length=1),
            "text": _string("The agent's reply, or an empty string when it only asked."),
            "title": _history_title(),
            "pendingAsk": _pending_ask_summary(),
            "error": _string(
                "Set when the turn failed after it started. text holds what the agent said "
                "before the error."
            ),
        },
        required=("historyId", "text"),
        title="TurnResult",
        description="What the turn did, once it finished.",
    )


def _pending_ask() -> JsonSchema:
    return _object(
        {
            "historyId": _string("The conversation the ask belongs to.", min_length=1),
            "title": _history_title(),
            "toolCallId": _tool_call_id("The ask's toolCallId."),
            "kind": _ask_kind(),
            "simple": _simple_card("The ask's simple card."),
            "created": {
                "type": "string",
                "format": "date-time",
                "pattern": _UTC_TIMESTAMP_PATTERN,
                "description": "When the agent asked, as an ISO 8601 UTC timestamp.",
            },
        },
        required=("created", "historyId", "kind", "simple", "toolCallId"),
        title="PendingAsk",
    )


def _request_id() -> JsonSchema:
    return _string(
        "The request's id. handrail adds it to every JSON response; quote it when reporting a "
        "problem."
    )


def _document(title: str, description: str, body: JsonSchema) -> JsonSchema:
    """A top-level document: ``$schema``, ``title`` and ``description`` first, then `body`."""
    return {"$schema": DRAFT_07, "title": title, "description": description, **body}


def _response_document(title: str, description: str, data: JsonSchema) -> JsonSchema:
    return _document(
        title,
        description,
        _object({"data": data, "requestId": _request_id()}, required=("data",)),
    )


def _simple_card_document() -> JsonSchema:
    card = _simple_card()
    del card["title"]
    return _document("SimpleCard", _SIMPLE_CARD_DESCRIPTION, card)


def _turn_request_document() -> JsonSchema:
    body = _object(
        {
            "prompt": _string(
                "A new message from the user. It cancels the pending ask, if there is one.",
                min_length=1,
            ),
            "askResponse": _ask_answer(),
            "toolCallId": _tool_call_id("The pending ask's toolCallId. Send it with buttonId."),
            "buttonId": _string(
                "The id of the simple card button the user pressed. Send it with toolCallId.",
                min_length=1,
            ),
            "surface": _enum(
                ASK_SURFACES,
                '"compact" is a watch or another small screen: the agent asks only questions '
                "whose buttons show every option, and keeps replies to two short sentences. "
                'Defaults to "full".',
            ),
        }
    )
    return _document(
        "TurnRequest",
        f"The request body of {_TURN_ROUTE}. Send exactly one of prompt, askResponse, or "
        "toolCallId with buttonId, plus an optional surface. JSON Schema cannot express that "
        "rule; the server enforces it.",
        body,
    )


def _turn_response_document() -> JsonSchema:
    return _response_document(
        "TurnResponse",
        f"The response body of {_TURN_ROUTE}, sent once the turn finishes.",
        _turn_result(),
    )


def _pending_asks_response_document() -> JsonSchema:
    return _response_document(
        "PendingAsksResponse",
        f"The response body of {_PENDING_ASKS_ROUTE}: the caller's pending asks, newest first. "
        "Deleted conversations are left out.",
        _array(_pending_ask(), description="The pending asks, newest first."),
    )


def ask_json_schemas() -> dict[str, dict[str, Any]]:
    """The published draft-07 documents, keyed by name (the file is ``<name>.schema.json``).

    ``simpleCard`` (a card with its buttons and their answers), ``turnRequest`` and
    ``turnResponse`` (the body and the response of ``POST /api/histories/{id}/turn``), and
    ``pendingAsksResponse`` (the response of ``GET /api/histories/pendingAsks``). Nested types
    carry titles (``SimpleCard``, ``SimpleCardButton``, ``AskResponse``, ``AskAnswer``,
    ``PendingAsk``, ``PendingAskSummary``, ``TurnResult``) so generated code gets readable names.
    Each call returns new dicts.
    """
    return {
        "simpleCard": _simple_card_document(),
        "turnRequest": _turn_request_document(),
        "turnResponse": _turn_response_document(),
        "pendingAsksResponse": _pending_asks_response_document(),
    }


# ---------------------------------------------------------------------------------------------
# The committed files
# ---------------------------------------------------------------------------------------------


def schema_file_name(name: str) -> str:
    """The file name of the document `name`: ``<name>.schema.json``."""
    return f"{name}.schema.json"


def _render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_ask_json_schemas(folder: Path | None = None) -> list[Path]:
    """Write every document of `ask_json_schemas` as ``<name>.schema.json`` into `folder`.

    `folder` defaults to the package's ``handrail/asks/schemas/``, where the committed files live;
    it is created when missing. Returns the paths written, in `ASK_JSON_SCHEMA_NAMES` order.
    """
    target = SCHEMAS_FOLDER if folder is None else folder
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, document in ask_json_schemas().items():
        path = target / schema_file_name(name)
        path.write_text(_render(document), encoding="utf-8", newline="\n")
        written.append(path)
    return written


def schema_files_out_of_date(folder: Path | None = None) -> list[str]:
    """The file names in `folder` (default: the committed files) that are missing or differ from
    what `write_ask_json_schemas` would write. Empty when every file is current."""
    target = SCHEMAS_FOLDER if folder is None else folder
    stale: list[str] = []
    for name, document in ask_json_schemas().items():
        file_name = schema_file_name(name)
        path = target / file_name
        try:
            current = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            stale.append(file_name)
            continue
        if current != _render(document):
            stale.append(file_name)
    return stale
