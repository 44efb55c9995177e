"""The input schema of each ``ask_<kind>`` tool, as a model sees it (see
`handrail.asks.schemas` for what the schemas can and cannot say)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .limits import (
    ASK_FILE_ACCEPT,
    ASK_KINDS,
    ASK_SURFACES,
    CARD_BUTTONS_MAX,
    CARD_LABEL_MAX,
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
    SUBMIT_LABEL_MAX,
    TITLE_MAX,
)
from .schema_parts import (
    _DATE_PATTERN,
    _ID_RULE,
    _TIME_PATTERN,
    JsonSchema,
    _array,
    _boolean,
    _const,
    _enum,
    _integer,
    _object,
    _quoted,
    _string,
    _text,
)

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
