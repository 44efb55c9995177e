"""Small derived facts of an ask: bounds, defaults, labels and surfaces.

They take the wire JSON of an ask input. They are meant for inputs that passed
`validate_ask_input`, but never raise on others: a malformed part falls back to its default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .limits import (
    ASK_KINDS,
    COMPACT_ASK_KINDS,
    FILES_MAX,
    FILES_MIN,
    FORM_TEXT_MAX,
    FORM_TEXTAREA_MAX,
    MARKDOWN_MAX,
    AskKind,
    AskSurface,
)
from .text import js_trim

DEFAULT_CONFIRM_LABEL = "Confirm"
DEFAULT_DENY_LABEL = "Cancel"


class Bounds(NamedTuple):
    """The inclusive ``(min, max)`` an answer must meet."""

    min: int
    max: int


class ConfirmLabels(NamedTuple):
    """The approve and deny labels of a `confirm` ask, defaults filled in."""

    confirm: str
    deny: str


def _as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int_or(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and not value.is_integer():
        return default
    return int(value)


def choice_selection_bounds(input: Any) -> Bounds:
    """How many choices an answer to a `choice` ask holds: ``(1, 1)`` for ``select: "one"``;
    ``minSelected`` (default 1) to ``maxSelected`` (default every choice offered, Other counting
    as one) for ``"many"``."""
    ask = _as_dict(input)
    if ask.get("select") != "many":
        return Bounds(1, 1)
    options = ask.get("options")
    offered = (len(options) if isinstance(options, list) else 0) + (
        1 if ask.get("allowOther") is True else 0
    )
    return Bounds(_int_or(ask.get("minSelected"), 1), _int_or(ask.get("maxSelected"), offered))


def markdown_length_bounds(input: Any) -> Bounds:
    """The length an answer to a `markdown` ask must meet: ``minLength`` (default 0, counted
    without spaces at either end) to ``maxLength`` (default 20,000 UTF-16 code units)."""
    ask = _as_dict(input)
    return Bounds(_int_or(ask.get("minLength"), 0), _int_or(ask.get("maxLength"), MARKDOWN_MAX))


def files_count_bounds(input: Any) -> Bounds:
    """How many files an answer to a `files` ask holds: ``minFiles`` (default 1) to
    ``maxFiles`` (default 10)."""
    ask = _as_dict(input)
    return Bounds(_int_or(ask.get("minFiles"), FILES_MIN), _int_or(ask.get("maxFiles"), FILES_MAX))


def form_default_values(input: Any) -> dict[str, Any]:
    """The defaults of a `form` ask keyed by field id, leaving out fields without one."""
    fields = _as_dict(input).get("fields")
    values: dict[str, Any] = {}
    if not isinstance(fields, list):
        return values
    for field in fields:
        if isinstance(field, dict) and isinstance(field.get("id"), str) and "default" in field:
            values[field["id"]] = field["default"]
    return values


def form_text_max_length(field: Any) -> int | None:
    """The longest string value a form field accepts, in UTF-16 code units, or None for a field
    whose value is not free text (number, date, boolean, select, ...)."""
    spec = _as_dict(field)
    kind = spec.get("type")
    if kind == "text":
        return _int_or(spec.get("maxLength"), FORM_TEXT_MAX)
    if kind == "textarea":
        return _int_or(spec.get("maxLength"), FORM_TEXTAREA_MAX)
    if kind in ("email", "url", "phone"):
        return FORM_TEXT_MAX
    return None


def confirm_button_labels(input: Any) -> ConfirmLabels:
    """The ``(confirm, deny)`` labels of a `confirm` ask, with the defaults "Confirm" and
    "Cancel" and without spaces at either end."""
    ask = _as_dict(input)
    confirm = ask.get("confirmLabel")
    deny = ask.get("denyLabel")
    return ConfirmLabels(
        js_trim(confirm) if isinstance(confirm, str) else DEFAULT_CONFIRM_LABEL,
        js_trim(deny) if isinstance(deny, str) else DEFAULT_DENY_LABEL,
    )


def ask_allows_decline(kind: str, input: Any) -> bool:
    """Whether an ask accepts a ``decline`` answer (Skip): `confirm` only with
    ``allowDecline: true``, every other kind unless ``allowDecline: false``."""
    flag = _as_dict(input).get("allowDecline")
    if kind == "confirm":
        return flag is True
    return flag is not False


def is_compact_ask_kind(kind: str) -> bool:
    """Whether the compact surface offers `kind`."""
    return kind in COMPACT_ASK_KINDS


def ask_kinds_for_surface(kinds: Iterable[str], surface: AskSurface = "full") -> list[AskKind]:
    """The kinds of `kinds` that `surface` offers, in protocol order, each once."""
    wanted = set(kinds)
    offered = COMPACT_ASK_KINDS if surface == "compact" else ASK_KINDS
    return [kind for kind in offered if kind in wanted]
