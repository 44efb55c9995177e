"""Form fields: the keys each field type takes and the rules a value must meet.

One function checks a value for both places that need it: an answer's ``content.values.<id>``
and a field's ``default`` (checked "with the same rules as an answer"). They differ only in
two codes: a wrong JSON type is `FIELD_TYPE_MISMATCH` in an answer and `INVALID_TYPE` in a
default, and an id that is not an option is `OPTION_NOT_OFFERED` in an answer and
`DEFAULT_NOT_IN_OPTIONS` in a default.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Final
from urllib.parse import urlsplit

from .checks import Errors, add, duplicate_id, is_number, too_long, too_short
from .errors import join_path
from .limits import (
    FORM_TEXT_MAX,
    FORM_TEXTAREA_MAX,
    OPTIONS_MAX,
    PHONE_DIGITS_MAX,
    PHONE_DIGITS_MIN,
)
from .text import describe, js_trim, utf16_len

#: The keys every field takes, and the extra keys of each type.
FIELD_COMMON_KEYS: Final = frozenset({"id", "type", "label", "helperText", "required", "default"})
FIELD_EXTRA_KEYS: Final[dict[str, frozenset[str]]] = {
    "text": frozenset({"minLength", "maxLength"}),
    "textarea": frozenset({"minLength", "maxLength"}),
    "email": frozenset(),
    "url": frozenset(),
    "phone": frozenset(),
    "number": frozenset({"min", "max", "integer"}),
    "date": frozenset(),
    "time": frozenset(),
    "datetime": frozenset(),
    "boolean": frozenset(),
    "select": frozenset({"options"}),
    "multiselect": frozenset({"options"}),
}
FIELD_KEYS: Final[dict[str, frozenset[str]]] = {
    kind: FIELD_COMMON_KEYS | extra for kind, extra in FIELD_EXTRA_KEYS.items()
}
TEXT_CAPS: Final[dict[str, int]] = {"text": FORM_TEXT_MAX, "textarea": FORM_TEXTAREA_MAX}

# Zod's email pattern, so an address valid in one client is valid in all.
_EMAIL = re.compile(
    r"^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$"
)
_PHONE = re.compile(r"^\+?[0-9 .()\-]+$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d+)?)?"
    r"(Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)$"
)

_TYPE_NOUNS: Final[dict[str, str]] = {
    "text": "a string",
    "textarea": "a string",
    "email": "an email address",
    "url": "an http or https URL",
    "phone": "a phone number",
    "number": "a number",
    "date": "a date as YYYY-MM-DD",
    "time": "a time as HH:mm",
    "datetime": "a date and time with Z or an offset",
    "boolean": "true or false",
    "select": "an option id",
    "multiselect": "a list of option ids",
}


def _real_date(year: str, month: str, day: str) -> bool:
    try:
        dt.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def is_date(value: str) -> bool:
    match = _DATE.fullmatch(value)
    return bool(match) and _real_date(*match.groups())  # type: ignore[union-attr]


def is_time(value: str) -> bool:
    return _TIME.fullmatch(value) is not None


def is_datetime(value: str) -> bool:
    match = _DATETIME.fullmatch(value)
    return match is not None and _real_date(match[1], match[2], match[3])


def is_email(value: str) -> bool:
    return value.isascii() and _EMAIL.fullmatch(value) is not None


def is_http_url(value: str) -> bool:
    if any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def is_phone(value: str) -> bool:
    if not value.isascii() or _PHONE.fullmatch(value) is None or "+" in value[1:]:
        return False
    digits = sum(c.isdigit() for c in value)
    return PHONE_DIGITS_MIN <= digits <= PHONE_DIGITS_MAX


_STRING_FORMATS = {
    "email": (is_email, "FIELD_TYPE_MISMATCH", "an email address such as name@example.com"),
    "url": (is_http_url, "FIELD_TYPE_MISMATCH", "an http or https URL"),
    "phone": (
        is_phone,
        "FIELD_TYPE_MISMATCH",
        f"a phone number of {PHONE_DIGITS_MIN} to {PHONE_DIGITS_MAX} digits, such as +14155552671",
    ),
    "date": (is_date, "INVALID_DATE", "a real date as YYYY-MM-DD, such as 2026-10-01"),
    "time": (is_time, "INVALID_DATE", "a 24-hour time as HH:mm, such as 09:30"),
    "datetime": (
        is_datetime,
        "INVALID_DATE",
        "a date and time with Z or an offset, such as 2026-10-01T09:30Z",
    ),
}


def option_ids(field: dict[str, Any]) -> set[str] | None:
    """The option ids of a select or multiselect field, or None when its options are unusable."""
    options = field.get("options")
    if not isinstance(options, list):
        return None
    return {o["id"] for o in options if isinstance(o, dict) and isinstance(o.get("id"), str)}


def is_blank_value(value: Any) -> bool:
    """A blank string or an empty list counts as unanswered."""
    if isinstance(value, str):
        return not js_trim(value)
    return isinstance(value, list) and not value


def _mismatch(errors: Errors, path: str, field_type: str, value: Any, *, default: bool) -> None:
    noun = _TYPE_NOUNS.get(field_type, "a value of the field's type")
    if default:
        add(
            errors,
            path,
            "INVALID_TYPE",
            f"The default of this {field_type} field must be {noun}, not {describe(value)}.",
            f"Set the default to {noun}, or leave it out.",
        )
    else:
        add(
            errors,
            path,
            "FIELD_TYPE_MISMATCH",
            f"This {field_type} field takes {noun}, not {describe(value)}.",
            f"Send {noun}.",
        )


def _not_an_option(errors: Errors, path: str, value: str, ids: set[str], *, default: bool) -> None:
    choices = ", ".join(f'"{i}"' for i in sorted(ids))
    if default:
        add(
            errors,
            path,
            "DEFAULT_NOT_IN_OPTIONS",
            f"{describe(value)} is not one of the field's option ids.",
            f"Use one of the field's option ids: {choices}.",
        )
    else:
        add(
            errors,
            path,
            "OPTION_NOT_OFFERED",
            f"{describe(value)} is not one of the offered options.",
            f"Use the id of one of the field's options: {choices}.",
        )


def check_field_value(
    errors: Errors, field: dict[str, Any], value: Any, path: str, *, default: bool
) -> None:
    """Check one value of a form field against its type's rules (see the module docstring)."""
    field_type = field.get("type")
    if not isinstance(field_type, str):
        return  # not a field type at all (the ask's own check reports it), so no rule applies
    if field_type in TEXT_CAPS:
        if not isinstance(value, str):
            _mismatch(errors, path, field_type, value, default=default)
            return
        cap = TEXT_CAPS[field_type]
        max_length = field.get("maxLength")
        limit = max_length if isinstance(max_length, int) and 0 < max_length <= cap else cap
        length = utf16_len(value)
        if length > limit:
            too_long(errors, path, length, limit)
        min_length = field.get("minLength")
        trimmed = utf16_len(js_trim(value))
        if trimmed == 0 and default:
            too_short(errors, path, 1)
        elif (
            isinstance(min_length, int)
            and not isinstance(min_length, bool)
            and trimmed < min_length
        ):
            too_short(errors, path, min_length)
        return
    if field_type in _STRING_FORMATS:
        if not isinstance(value, str):
            _mismatch(errors, path, field_type, value, default=default)
            return
        if default and not js_trim(value):
            too_short(errors, path, 1)
            return
        length = utf16_len(value)
        if length > FORM_TEXT_MAX:
            too_long(errors, path, length, FORM_TEXT_MAX)
            return
        test, code, noun = _STRING_FORMATS[field_type]
        if not test(value):
            add(
                errors,
                path,
                code,  # type: ignore[arg-type]
                f"{describe(value)} is not {noun}.",
                f"Send {noun}.",
            )
        return
    if field_type == "number":
        if not is_number(value):
            _mismatch(errors, path, "number", value, default=default)
            return
        if field.get("integer") is True and not float(value).is_integer():
            add(
                errors,
                path,
                "FIELD_TYPE_MISMATCH",
                f"{describe(value)} is not a whole number.",
                "Send a whole number.",
            )
        low, high = field.get("min"), field.get("max")
        if is_number(low) and value < low:
            add(
                errors,
                path,
                "OUT_OF_RANGE",
                f"{describe(value)} is below the minimum of {describe(low)}.",
                f"Send a number of at least {describe(low)}.",
            )
        if is_number(high) and value > high:
            add(
                errors,
                path,
                "OUT_OF_RANGE",
                f"{describe(value)} is above the maximum of {describe(high)}.",
                f"Send a number of at most {describe(high)}.",
            )
        return
    if field_type == "boolean":
        if not isinstance(value, bool):
            _mismatch(errors, path, "boolean", value, default=default)
        return
    if field_type == "select":
        if not isinstance(value, str):
            _mismatch(errors, path, "select", value, default=default)
            return
        ids = option_ids(field)
        if ids is not None and value not in ids:
            _not_an_option(errors, path, value, ids, default=default)
        return
    if field_type == "multiselect":
        if not isinstance(value, list):
            _mismatch(errors, path, "multiselect", value, default=default)
            return
        if len(value) > OPTIONS_MAX:
            add(
                errors,
                path,
                "TOO_MANY",
                f"{len(value)} options are selected, more than the {OPTIONS_MAX} allowed.",
                f"Select at most {OPTIONS_MAX} options.",
            )
            return
        ids = option_ids(field)
        seen: set[str] = set()
        for index, item in enumerate(value):
            item_path = join_path(path, index)
            if not isinstance(item, str):
                _mismatch(errors, item_path, "select", item, default=default)
                continue
            if ids is not None and item not in ids:
                _not_an_option(errors, item_path, item, ids, default=default)
            elif item in seen:
                duplicate_id(errors, item_path, item)
            seen.add(item)
