"""The shared checks the validators are built from: one place for each rule's error and fix.

Each check appends `AskValidationError`s to a list and returns the value when it is usable, so
the validators read as a list of rules and later rules can build on earlier ones.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, TypeGuard

from .errors import AskErrorCode, AskValidationError, join_path
from .text import JS_WHITESPACE, describe, is_blank, json_type_name, utf16_len

Errors = list[AskValidationError]
_ABSENT: Any = object()


def add(errors: Errors, path: str, code: AskErrorCode, message: str, fix: str) -> None:
    errors.append(AskValidationError(path=path, code=code, message=message, fix=fix))


def _name(path: str) -> str:
    return f"`{path}`" if path else "The value"


def wrong_type(errors: Errors, path: str, value: Any, expected: str) -> None:
    add(
        errors,
        path,
        "INVALID_TYPE",
        f"{_name(path)} must be {expected}, not {json_type_name(value)}.",
        f"Send {expected} for {_name(path)}.",
    )


def missing(errors: Errors, path: str, what: str) -> None:
    add(
        errors,
        path,
        "MISSING_REQUIRED",
        f"{_name(path)} is required.",
        f"Add {_name(path)}: {what}.",
    )


def unknown_keys(errors: Errors, obj: dict[str, Any], allowed: Collection[str], path: str) -> None:
    """`UNKNOWN_KEY` for each key of `obj` that is not in `allowed`."""
    if isinstance(allowed, frozenset | set) and allowed.issuperset(obj):
        return
    for key in obj:
        if key not in allowed:
            key_path = join_path(path, key)
            known = ", ".join(sorted(allowed))
            add(
                errors,
                key_path,
                "UNKNOWN_KEY",
                f"{_name(key_path)} is not a field of this object.",
                f"Remove {_name(key_path)}; the fields are: {known}.",
            )


def too_long(errors: Errors, path: str, length: int, limit: int) -> None:
    add(
        errors,
        path,
        "TOO_LONG",
        f"{_name(path)} is {length} characters long, more than the {limit} allowed.",
        f"Shorten {_name(path)} to at most {limit} characters.",
    )


def too_short(errors: Errors, path: str, minimum: int) -> None:
    if minimum <= 1:
        message = f"{_name(path)} is empty or only whitespace."
        fix = f"Write visible text in {_name(path)}."
    else:
        message = f"{_name(path)} is shorter than {minimum} characters without spaces at the ends."
        fix = f"Write at least {minimum} characters in {_name(path)}."
    add(errors, path, "TOO_SHORT", message, fix)


def is_ok_text(value: Any, max_length: int) -> bool:
    """Whether `value` is a string of visible text of at most `max_length` UTF-16 units."""
    return (
        value.__class__ is str
        and (len(value) if value.isascii() else utf16_len(value)) <= max_length
        and value.strip(JS_WHITESPACE) != ""
    )


#: A text field of a schema: ``(key, max_length, required, what it holds)``.
TextSpec = tuple[str, int, bool, str]


def check_texts(
    errors: Errors, obj: dict[str, Any], specs: tuple[TextSpec, ...], path: str
) -> None:
    """Check several text fields of one object; the valid ones cost one cheap test each."""
    get = obj.get
    for key, max_length, required, what in specs:
        value = get(key, _ABSENT)
        if value is _ABSENT and not required:
            continue
        # is_ok_text, inlined: this loop runs for every ask a model writes.
        if (
            value.__class__ is str
            and (len(value) if value.isascii() else utf16_len(value)) <= max_length
            and value.strip(JS_WHITESPACE)
        ):
            continue
        check_text(errors, obj, key, path, max_length=max_length, required=required, what=what)


def check_bools(errors: Errors, obj: dict[str, Any], keys: tuple[str, ...], path: str) -> None:
    """Check several optional boolean fields of one object."""
    for key in keys:
        value = obj.get(key, False)
        if value.__class__ is not bool:
            check_bool(errors, obj, key, path)


def check_text(
    errors: Errors,
    obj: dict[str, Any],
    key: str,
    path: str,
    *,
    max_length: int,
    required: bool = False,
    what: str = "a non-blank string",
    allow_blank: bool = False,
) -> str | None:
    """A string field: the right type, visible text (unless `allow_blank`) and at most
    `max_length` UTF-16 code units. Returns the string when it passed."""
    value = obj.get(key, _ABSENT)
    # The common case, a short visible ASCII string, costs a few C calls and no path building.
    if value.__class__ is str:
        length = len(value) if value.isascii() else utf16_len(value)
        if length <= max_length and (allow_blank or value.strip(JS_WHITESPACE)):
            return value
        ok = True
        if length > max_length:
            too_long(errors, join_path(path, key), length, max_length)
            ok = False
        if not allow_blank and is_blank(value):
            too_short(errors, join_path(path, key), 1)
            ok = False
        return value if ok else None
    if value is _ABSENT:
        if required:
            missing(errors, join_path(path, key), what)
        return None
    wrong_type(errors, join_path(path, key), value, "a string")
    return None


def check_bool(errors: Errors, obj: dict[str, Any], key: str, path: str) -> bool | None:
    """An optional boolean field. Returns it when present and a boolean."""
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, bool):
        wrong_type(errors, join_path(path, key), value, "true or false")
        return None
    return value


def as_int(value: Any) -> int | None:
    """`value` as an int when it is a whole JSON number (``2`` or ``2.0``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether `value` is a finite JSON number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def check_count(
    errors: Errors,
    obj: dict[str, Any],
    key: str,
    path: str,
    *,
    minimum: int,
    maximum: int,
) -> int | None:
    """An optional whole-number bound in ``[minimum, maximum]`` (`RANGE_INVALID` outside)."""
    if key not in obj:
        return None
    value = obj[key]
    key_path = join_path(path, key)
    number = as_int(value)
    if number is None:
        wrong_type(errors, key_path, value, "a whole number")
        return None
    if number < minimum or number > maximum:
        range_invalid(
            errors,
            key_path,
            f"{_name(key_path)} is {number}, outside {minimum} to {maximum}.",
            f"Set {_name(key_path)} between {minimum} and {maximum}.",
        )
        return None
    return number


def range_invalid(errors: Errors, path: str, message: str, fix: str) -> None:
    add(errors, path, "RANGE_INVALID", message, fix)


def list_size(
    errors: Errors, path: str, items: list[Any], minimum: int, maximum: int, noun: str
) -> bool:
    """`TOO_FEW` / `TOO_MANY` for a list. True when the size is within bounds. `noun` is the
    plural ("options"); one of them is said without its final s."""

    def count(n: int) -> str:
        return f"{n} {noun[:-1] if n == 1 else noun}"

    if len(items) < minimum:
        add(
            errors,
            path,
            "TOO_FEW",
            f"{_name(path)} has {count(len(items))}, fewer than the {minimum} required.",
            f"Give {_name(path)} at least {count(minimum)}.",
        )
        return False
    if len(items) > maximum:
        add(
            errors,
            path,
            "TOO_MANY",
            f"{_name(path)} has {count(len(items))}, more than the {maximum} allowed.",
            f"Give {_name(path)} at most {count(maximum)}.",
        )
        return False
    return True


def duplicate_id(errors: Errors, path: str, value: str) -> None:
    add(
        errors,
        path,
        "DUPLICATE_ID",
        f"{describe(value)} is listed more than once.",
        f"List {describe(value)} only once.",
    )


def invalid_enum(errors: Errors, path: str, value: Any, allowed: Collection[str]) -> None:
    choices = ", ".join(f'"{a}"' for a in allowed)
    add(
        errors,
        path,
        "INVALID_ENUM",
        f"{describe(value)} is not one of the allowed values of {_name(path)}.",
        f"Use one of: {choices}.",
    )


def check_enum(
    errors: Errors,
    obj: dict[str, Any],
    key: str,
    path: str,
    allowed: Collection[str],
    *,
    required: bool,
) -> str | None:
    """A string that must be one of `allowed`."""
    value = obj.get(key, _ABSENT)
    if value.__class__ is str and value in allowed:
        return value
    key_path = join_path(path, key)
    if value is _ABSENT:
        if required:
            missing(errors, key_path, "one of " + ", ".join(f'"{a}"' for a in allowed))
    elif not isinstance(value, str):
        wrong_type(errors, key_path, value, "a string")
    else:
        invalid_enum(errors, key_path, value, allowed)
    return None


def check_list(
    errors: Errors, obj: dict[str, Any], key: str, path: str, *, required: bool, what: str
) -> list[Any] | None:
    """A list field: present when required, and a list."""
    value = obj.get(key, _ABSENT)
    if value.__class__ is list:
        return value
    if value is _ABSENT:
        if required:
            missing(errors, join_path(path, key), what)
        return None
    if not isinstance(value, list):
        wrong_type(errors, join_path(path, key), value, "a list")
        return None
    return value


def check_object(
    errors: Errors, obj: dict[str, Any], key: str, path: str, *, required: bool, what: str
) -> dict[str, Any] | None:
    """An object field: present when required, and an object."""
    key_path = join_path(path, key)
    if key not in obj:
        if required:
            missing(errors, key_path, what)
        return None
    value = obj[key]
    if not isinstance(value, dict):
        wrong_type(errors, key_path, value, "an object")
        return None
    return value
