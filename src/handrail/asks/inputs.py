"""`validate_ask_input`: an ask, as the model wrote it, against the rules of its kind."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from .checks import (
    Errors,
    TextSpec,
    add,
    as_int,
    check_bool,
    check_bools,
    check_count,
    check_enum,
    check_list,
    check_text,
    check_texts,
    duplicate_id,
    invalid_enum,
    is_number,
    list_size,
    missing,
    range_invalid,
    too_long,
    unknown_keys,
    wrong_type,
)
from .errors import AskValidationError, join_path, sort_errors
from .fields import FIELD_COMMON_KEYS, FIELD_KEYS, TEXT_CAPS, check_field_value, option_ids
from .helpers import DEFAULT_CONFIRM_LABEL, DEFAULT_DENY_LABEL
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
    MARKDOWN_MAX,
    MARKDOWN_PLACEHOLDER_MAX,
    OPTION_DESCRIPTION_MAX,
    OPTION_ID_PATTERN,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    OPTIONS_MIN,
    PROMPT_MAX,
    SUBMIT_LABEL_MAX,
    TITLE_MAX,
)
from .text import JS_WHITESPACE, describe, js_trim, utf16_len

_OPTION_ID = re.compile(OPTION_ID_PATTERN)
_SHARED_KEYS: Final = frozenset({"prompt", "title", "submitLabel", "allowDecline"})
CHOICE_KEYS: Final = _SHARED_KEYS | {
    "select",
    "options",
    "default",
    "minSelected",
    "maxSelected",
    "allowOther",
    "otherLabel",
}
COMPACT_CHOICE_KEYS: Final = _SHARED_KEYS | {"select", "options", "default"}
CONFIRM_KEYS: Final = frozenset(
    {"prompt", "title", "allowDecline", "confirmLabel", "denyLabel", "destructive"}
)
MARKDOWN_KEYS: Final = _SHARED_KEYS | {"initial", "placeholder", "minLength", "maxLength"}
FORM_KEYS: Final = _SHARED_KEYS | {"fields"}
FILES_KEYS: Final = _SHARED_KEYS | {"accept", "minFiles", "maxFiles"}
OPTION_KEYS: Final = frozenset({"id", "label", "description"})
FIELD_OPTION_KEYS: Final = frozenset({"id", "label"})

_PROMPT_WHAT = f"the question in plain text, 1 to {PROMPT_MAX} characters"


_SHARED_TEXTS: Final[tuple[TextSpec, ...]] = (
    ("prompt", PROMPT_MAX, True, _PROMPT_WHAT),
    ("title", TITLE_MAX, False, ""),
    ("submitLabel", SUBMIT_LABEL_MAX, False, ""),
)
_CHOICE_TEXTS: Final = (*_SHARED_TEXTS, ("otherLabel", OPTION_LABEL_MAX, False, ""))
_CONFIRM_TEXTS: Final = _SHARED_TEXTS[:2]
_MARKDOWN_TEXTS: Final = (
    *_SHARED_TEXTS,
    ("placeholder", MARKDOWN_PLACEHOLDER_MAX, False, ""),
)


def _shared(errors: Errors, ask: dict[str, Any]) -> None:
    check_texts(errors, ask, _SHARED_TEXTS, "")
    check_bools(errors, ask, ("allowDecline",), "")


def _check_id(errors: Errors, obj: dict[str, Any], path: str, noun: str) -> str | None:
    value = obj.get("id")
    if value.__class__ is str and _OPTION_ID.fullmatch(value) is not None:
        return value
    id_path = join_path(path, "id")
    if "id" not in obj:
        missing(errors, id_path, f"the {noun}'s id, matching {OPTION_ID_PATTERN}")
    elif not isinstance(value, str):
        wrong_type(errors, id_path, value, "a string")
    else:
        add(
            errors,
            id_path,
            "INVALID_FORMAT",
            f"{describe(value)} is not a valid {noun} id.",
            f"Use lowercase letters, digits, '_' and '-', starting with a letter or digit, "
            f"at most 64 characters ({OPTION_ID_PATTERN}).",
        )
    return None


def _check_options(
    errors: Errors,
    options: list[Any],
    path: str,
    *,
    keys: frozenset[str],
    label_max: int = OPTION_LABEL_MAX,
    unique_labels: bool = False,
) -> set[str]:
    """Each option of a choice ask or a select field. Returns the set of usable ids."""
    seen: set[str] = set()
    labels: set[str] = set()
    with_description = "description" in keys
    for index, option in enumerate(options):
        # The common case, a valid option, in one expression (is_ok_text, inlined).
        is_dict = option.__class__ is dict
        label = option.get("label") if is_dict else None
        description = option.get("description", "-") if is_dict and with_description else "-"
        if (
            label.__class__ is str
            and not unique_labels
            and keys.issuperset(option)
            and (len(label) if label.isascii() else utf16_len(label)) <= label_max
            and label.strip(JS_WHITESPACE)
            and description.__class__ is str
            and (len(description) if description.isascii() else utf16_len(description))
            <= OPTION_DESCRIPTION_MAX
            and description.strip(JS_WHITESPACE)
        ):
            option_id = option.get("id")
            if (
                option_id.__class__ is str
                and option_id not in seen
                and _OPTION_ID.fullmatch(option_id) is not None
            ):
                seen.add(option_id)
                continue
        option_path = f"{path}[{index}]"
        if not isinstance(option, dict):
            wrong_type(errors, option_path, option, "an object with id and label")
            continue
        unknown_keys(errors, option, keys, option_path)
        option_id = _check_id(errors, option, option_path, "option")
        if option_id is not None:
            if option_id in seen:
                duplicate_id(errors, join_path(option_path, "id"), option_id)
            else:
                seen.add(option_id)
        label = check_text(
            errors,
            option,
            "label",
            option_path,
            max_length=OPTION_LABEL_MAX,
            required=True,
            what="the text the option shows",
        )
        if label is not None and label_max < OPTION_LABEL_MAX:
            length = utf16_len(label)
            if length > label_max:
                too_long(errors, join_path(option_path, "label"), length, label_max)
                label = None
        if label is not None and unique_labels:
            trimmed = js_trim(label)
            if trimmed in labels:
                add(
                    errors,
                    join_path(option_path, "label"),
                    "DUPLICATE_LABEL",
                    f"Another option already has the label {describe(trimmed)}.",
                    "Give every option a different label.",
                )
            labels.add(trimmed)
        if with_description:
            check_text(
                errors, option, "description", option_path, max_length=OPTION_DESCRIPTION_MAX
            )
    return seen


def _choice(errors: Errors, ask: dict[str, Any], compact: bool) -> None:
    # Each check below is guarded by its cheap valid case: a model's ask is usually valid,
    # and this runs for every one (see bench/asks_validation.py).
    keys = COMPACT_CHOICE_KEYS if compact else CHOICE_KEYS
    if not keys.issuperset(ask):
        unknown_keys(errors, ask, keys, "")
    if compact:
        # The "many" keys are not defined on the compact surface: UNKNOWN_KEY says it all.
        ask = {key: value for key, value in ask.items() if key in COMPACT_CHOICE_KEYS}
    check_texts(errors, ask, _CHOICE_TEXTS, "")
    check_bools(errors, ask, ("allowDecline", "allowOther"), "")
    select = ask.get("select")
    if select not in CHOICE_SELECT_MODES:
        select = check_enum(errors, ask, "select", "", CHOICE_SELECT_MODES, required=True)
    if compact and select == "many":
        add(
            errors,
            "select",
            "INVALID_ENUM",
            'The compact surface offers only select "one".',
            'Use select "one" with at most three short options.',
        )
        select = None
    options = ask.get("options")
    if options.__class__ is not list:
        options = check_list(
            errors,
            ask,
            "options",
            "",
            required=True,
            what=f"{OPTIONS_MIN} to {OPTIONS_MAX} options",
        )
    ids: set[str] | None = None
    if options is not None:
        most = CARD_BUTTONS_MAX if compact else OPTIONS_MAX
        if not OPTIONS_MIN <= len(options) <= most:
            list_size(errors, "options", options, OPTIONS_MIN, most, "options")
        ids = _check_options(
            errors,
            options,
            "options",
            keys=OPTION_KEYS,
            label_max=CARD_LABEL_MAX if compact else OPTION_LABEL_MAX,
            unique_labels=compact,
        )
    allow_other = ask.get("allowOther") is True
    if "otherLabel" in ask and not allow_other:
        add(
            errors,
            "otherLabel",
            "OTHER_NOT_ALLOWED",
            "otherLabel is set but the ask does not allow an Other answer.",
            'Set allowOther: true on a select "many" ask, or remove otherLabel.',
        )
    offered = (len(options) if options is not None else 0) + (1 if allow_other else 0)
    low: int | None = 1
    high: int | None = offered if options is not None else None
    if select == "one":
        if allow_other:
            add(
                errors,
                "allowOther",
                "OTHER_NOT_ALLOWED",
                'A select "one" ask cannot offer an Other answer.',
                'For "one option or Other", use select "many" with maxSelected: 1.',
            )
        high = 1
        for key in ("minSelected", "maxSelected"):
            if key in ask and as_int(ask[key]) != 1:
                if as_int(ask[key]) is None:
                    wrong_type(errors, key, ask[key], "a whole number")
                else:
                    range_invalid(
                        errors,
                        key,
                        f'{key} is {ask[key]}, but a select "one" ask takes exactly one choice.',
                        f'Remove {key}, or use select "many".',
                    )
    elif select == "many":
        low = check_count(errors, ask, "minSelected", "", minimum=0, maximum=OPTIONS_MAX + 1)
        low = 1 if "minSelected" not in ask else low
        max_selected = check_count(
            errors, ask, "maxSelected", "", minimum=1, maximum=OPTIONS_MAX + 1
        )
        if max_selected is not None and options is not None and max_selected > offered:
            range_invalid(
                errors,
                "maxSelected",
                f"maxSelected is {max_selected}, more than the {offered} choices the ask offers.",
                f"Set maxSelected to at most {offered}, or offer more options.",
            )
        if "maxSelected" in ask:
            # Still the most ids a default may list, even when it is above what the ask offers.
            high = max_selected
        # minSelected can be no more than maxSelected nor the choices the ask offers, whichever
        # of the two is known and smaller: a maxSelected that is itself invalid still leaves the
        # choices offered to compare with.
        limit = high
        if options is not None and (limit is None or offered < limit):
            limit = offered
        if low is not None and limit is not None and low > limit:
            range_invalid(
                errors,
                "minSelected",
                f"minSelected is {low}, more than the {limit} choices an answer may hold.",
                f"Set minSelected to at most {limit}.",
            )
    else:
        low = high = None
    default = ask.get("default")
    if default.__class__ is not list:
        default = check_list(errors, ask, "default", "", required=False, what="")
    if default is not None:
        _check_choice_default(errors, default, ids, select, high)


def _check_choice_default(
    errors: Errors, default: list[Any], known: set[str] | None, select: str | None, high: int | None
) -> None:
    if len(default) > OPTIONS_MAX:
        list_size(errors, "default", default, 0, OPTIONS_MAX, "ids")
        return
    if len(default) == 1 and known is not None and default[0].__class__ is str:
        clean = default[0] in known
    else:
        try:
            clean = (
                known is not None
                and known.issuperset(default)
                and len(set(default)) == len(default)
            )
        except TypeError:  # an unhashable item, which the loop below names
            clean = False
    if not clean:
        _check_default_ids(errors, default, known)
    if select == "one" and len(default) > 1:
        add(
            errors,
            "default",
            "SELECTION_COUNT",
            f'default lists {len(default)} ids, but a select "one" ask takes one.',
            "List at most one id in default.",
        )
    elif select == "many" and high is not None and len(default) > high:
        add(
            errors,
            "default",
            "SELECTION_COUNT",
            f"default lists {len(default)} ids, more than the {high} an answer may hold.",
            f"List at most {high} ids in default.",
        )


def _check_default_ids(errors: Errors, default: list[Any], known: set[str] | None) -> None:
    seen: set[str] = set()
    for index, item in enumerate(default):
        item_path = join_path("default", index)
        if not isinstance(item, str):
            wrong_type(errors, item_path, item, "an option id")
            continue
        if known is not None and item not in known:
            add(
                errors,
                item_path,
                "DEFAULT_NOT_IN_OPTIONS",
                f"{describe(item)} is not one of the ask's option ids.",
                "Use ids from options in default.",
            )
        elif item in seen:
            duplicate_id(errors, item_path, item)
        seen.add(item)


def _confirm(errors: Errors, ask: dict[str, Any], compact: bool) -> None:
    check_texts(errors, ask, _CONFIRM_TEXTS, "")
    check_bools(errors, ask, ("allowDecline", "destructive"), "")
    unknown_keys(errors, ask, CONFIRM_KEYS, "")
    labels: dict[str, str | None] = {}
    for key, fallback in (
        ("confirmLabel", DEFAULT_CONFIRM_LABEL),
        ("denyLabel", DEFAULT_DENY_LABEL),
    ):
        if key in ask:
            labels[key] = check_text(errors, ask, key, "", max_length=CONFIRM_LABEL_MAX)
        else:
            labels[key] = fallback
    confirm, deny = labels["confirmLabel"], labels["denyLabel"]
    if confirm is not None and deny is not None and js_trim(confirm) == js_trim(deny):
        path = "denyLabel" if "denyLabel" in ask else "confirmLabel"
        add(
            errors,
            path,
            "DUPLICATE_LABEL",
            f"The approve and deny buttons would both read {describe(js_trim(confirm))}.",
            "Give confirmLabel and denyLabel different labels.",
        )


def _markdown(errors: Errors, ask: dict[str, Any], compact: bool) -> None:
    check_texts(errors, ask, _MARKDOWN_TEXTS, "")
    check_bools(errors, ask, ("allowDecline",), "")
    unknown_keys(errors, ask, MARKDOWN_KEYS, "")
    check_text(errors, ask, "initial", "", max_length=MARKDOWN_MAX, allow_blank=True)
    low = check_count(errors, ask, "minLength", "", minimum=0, maximum=MARKDOWN_MAX)
    high = check_count(errors, ask, "maxLength", "", minimum=1, maximum=MARKDOWN_MAX)
    if low is not None and high is not None and low > high:
        range_invalid(
            errors,
            "minLength",
            f"minLength is {low}, more than maxLength ({high}).",
            "Set minLength to at most maxLength.",
        )


def _form(errors: Errors, ask: dict[str, Any], compact: bool) -> None:
    _shared(errors, ask)
    unknown_keys(errors, ask, FORM_KEYS, "")
    fields = check_list(
        errors,
        ask,
        "fields",
        "",
        required=True,
        what=f"{FORM_FIELDS_MIN} to {FORM_FIELDS_MAX} fields",
    )
    if fields is None:
        return
    list_size(errors, "fields", fields, FORM_FIELDS_MIN, FORM_FIELDS_MAX, "fields")
    seen: set[str] = set()
    for index, field in enumerate(fields):
        path = join_path("fields", index)
        if not isinstance(field, dict):
            wrong_type(errors, path, field, "an object with id, type and label")
            continue
        field_id = _check_id(errors, field, path, "field")
        if field_id is not None:
            if field_id in seen:
                duplicate_id(errors, join_path(path, "id"), field_id)
            seen.add(field_id)
        _check_field(errors, field, path)


def _check_field(errors: Errors, field: dict[str, Any], path: str) -> None:
    field_type = check_enum(errors, field, "type", path, FORM_FIELD_TYPES, required=True)
    if field_type is None:
        unknown_keys(errors, field, FIELD_COMMON_KEYS.union(*FIELD_KEYS.values()), path)
    else:
        unknown_keys(errors, field, FIELD_KEYS[field_type], path)
    check_text(
        errors, field, "label", path, max_length=FORM_LABEL_MAX, required=True, what="the label"
    )
    check_text(errors, field, "helperText", path, max_length=FORM_HELPER_MAX)
    check_bool(errors, field, "required", path)
    usable = True
    if field_type in TEXT_CAPS:
        cap = TEXT_CAPS[field_type]
        low = check_count(errors, field, "minLength", path, minimum=0, maximum=cap)
        high = check_count(errors, field, "maxLength", path, minimum=1, maximum=cap)
        usable = ("minLength" not in field or low is not None) and (
            "maxLength" not in field or high is not None
        )
        if low is not None and high is not None and low > high:
            range_invalid(
                errors,
                join_path(path, "minLength"),
                f"minLength is {low}, more than maxLength ({high}).",
                "Set minLength to at most maxLength.",
            )
            usable = False
    elif field_type == "number":
        for key in ("min", "max"):
            if key in field and not is_number(field[key]):
                wrong_type(errors, join_path(path, key), field[key], "a number")
                usable = False
        check_bool(errors, field, "integer", path)
        low_n, high_n = field.get("min"), field.get("max")
        if is_number(low_n) and is_number(high_n) and low_n > high_n:
            range_invalid(
                errors,
                join_path(path, "min"),
                f"min is {describe(low_n)}, more than max ({describe(high_n)}).",
                "Set min to at most max.",
            )
            usable = False
    elif field_type in ("select", "multiselect"):
        options = check_list(
            errors,
            field,
            "options",
            path,
            required=True,
            what=f"{OPTIONS_MIN} to {OPTIONS_MAX} options",
        )
        if options is None:
            usable = False
        else:
            options_path = join_path(path, "options")
            list_size(errors, options_path, options, OPTIONS_MIN, OPTIONS_MAX, "options")
            _check_options(errors, options, options_path, keys=FIELD_OPTION_KEYS)
            usable = option_ids(field) is not None
    if "default" in field and field_type is not None and usable:
        check_field_value(errors, field, field["default"], join_path(path, "default"), default=True)


def _files(errors: Errors, ask: dict[str, Any], compact: bool) -> None:
    _shared(errors, ask)
    unknown_keys(errors, ask, FILES_KEYS, "")
    accept = check_list(
        errors, ask, "accept", "", required=True, what='the file types, such as ["image"]'
    )
    if accept is not None:
        list_size(errors, "accept", accept, 1, len(ASK_FILE_ACCEPT), "types")
        seen: set[str] = set()
        for index, item in enumerate(accept):
            item_path = join_path("accept", index)
            if not isinstance(item, str):
                wrong_type(errors, item_path, item, "a string")
            elif item not in ASK_FILE_ACCEPT:
                invalid_enum(errors, item_path, item, ASK_FILE_ACCEPT)
            elif item in seen:
                duplicate_id(errors, item_path, item)
            else:
                seen.add(item)
    low = check_count(errors, ask, "minFiles", "", minimum=FILES_MIN, maximum=FILES_MAX)
    high = check_count(errors, ask, "maxFiles", "", minimum=FILES_MIN, maximum=FILES_MAX)
    if low is not None and low > (high if high is not None else FILES_MAX):
        range_invalid(
            errors,
            "minFiles",
            f"minFiles is {low}, more than maxFiles ({high}).",
            "Set minFiles to at most maxFiles.",
        )


_VALIDATORS: Final[dict[str, Callable[[Errors, dict[str, Any], bool], None]]] = {
    "choice": _choice,
    "confirm": _confirm,
    "markdown": _markdown,
    "form": _form,
    "files": _files,
}


def validate_ask_input(kind: Any, input: Any, *, surface: Any = "full") -> list[AskValidationError]:
    """Check an ask input against the rules of its kind.

    `input` is the wire JSON a model sends (camelCase keys). Returns every error, sorted by path
    then code; an empty list means the ask is valid. Never raises on any JSON value: an unknown
    kind or surface is an error too. With ``surface="compact"``, the compact rules apply as well.
    """
    errors: Errors = []
    validator = _VALIDATORS.get(kind) if isinstance(kind, str) else None
    if validator is None:
        invalid_enum(errors, "kind", kind, ASK_KINDS)
        return errors
    if surface not in ASK_SURFACES:
        invalid_enum(errors, "surface", surface, ASK_SURFACES)
        return errors
    compact = surface == "compact"
    if compact and kind not in COMPACT_ASK_KINDS:
        kinds = " or ".join(f"ask_{k}" for k in COMPACT_ASK_KINDS)
        add(
            errors,
            "kind",
            "INVALID_ENUM",
            f"The compact surface does not offer {kind} asks.",
            f"On a small screen, use {kinds}.",
        )
        return errors
    if not isinstance(input, dict):
        wrong_type(errors, "", input, "an object")
        return errors
    validator(errors, input, compact)
    if len(errors) > 1:
        return sort_errors(errors)
    return errors
