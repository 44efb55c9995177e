"""Validation errors of the ask protocol: `AskValidationError` and the `ASK_ERROR_CODES` table."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

AskErrorCode = Literal[
    "CHANGED_MISMATCH",
    "DECLINE_NOT_ALLOWED",
    "DEFAULT_NOT_IN_OPTIONS",
    "DUPLICATE_ID",
    "DUPLICATE_LABEL",
    "FIELD_TYPE_MISMATCH",
    "FILE_COUNT",
    "FILE_NOT_OWNED",
    "FILE_TOO_LARGE",
    "FILE_TYPE_NOT_ACCEPTED",
    "INVALID_DATE",
    "INVALID_ENUM",
    "INVALID_FORMAT",
    "INVALID_TYPE",
    "MIME_MISMATCH",
    "MISSING_REQUIRED",
    "OPTION_NOT_OFFERED",
    "OTHER_NOT_ALLOWED",
    "OUT_OF_RANGE",
    "RANGE_INVALID",
    "REQUIRED_FIELD",
    "SELECTION_COUNT",
    "TOO_FEW",
    "TOO_LONG",
    "TOO_MANY",
    "TOO_SHORT",
    "UNKNOWN_BUTTON",
    "UNKNOWN_KEY",
]

#: Every error code with its meaning, as the spec's Error codes table states it.
ASK_ERROR_CODES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "CHANGED_MISMATCH": (
            "A markdown answer's changed flag does not match whether its text differs from "
            "the draft."
        ),
        "DECLINE_NOT_ALLOWED": "The answer skips an ask that does not allow skipping.",
        "DEFAULT_NOT_IN_OPTIONS": "A default names an option id that the ask does not offer.",
        "DUPLICATE_ID": (
            "An id appears twice where ids must be unique: options, default, accept, or an answer."
        ),
        "DUPLICATE_LABEL": (
            "Two buttons would share a label: options of a compact ask, or a confirm's approve "
            "and deny."
        ),
        "FIELD_TYPE_MISMATCH": (
            "A form value or default does not fit its field's type: the wrong JSON type, not a "
            "whole number, or not a valid email, URL, or phone number."
        ),
        "FILE_COUNT": "A files answer has fewer files than minFiles or more than maxFiles.",
        "FILE_NOT_OWNED": (
            "A files answer names a fileId that is not an upload of the caller, or the host has "
            "no file storage."
        ),
        "FILE_TOO_LARGE": "A file is larger than the host's per-file upload cap.",
        "FILE_TYPE_NOT_ACCEPTED": (
            "A file's declared type is not one the ask's accept list allows."
        ),
        "INVALID_DATE": (
            "A form date, time, or datetime value or default is not a real ISO 8601 value in "
            "the field's format."
        ),
        "INVALID_ENUM": "A value is not one of the allowed values.",
        "INVALID_FORMAT": "A string does not match its required format.",
        "INVALID_TYPE": "A value has the wrong type.",
        "MIME_MISMATCH": (
            "A file's bytes, or its data URL's media type, do not match the type the answer "
            "declares."
        ),
        "MISSING_REQUIRED": "A required field is missing.",
        "OPTION_NOT_OFFERED": "The answer selects an option id that the ask did not offer.",
        "OTHER_NOT_ALLOWED": "An ask or an answer uses Other where the ask does not allow it.",
        "OUT_OF_RANGE": "A form number value or default is below the field's min or above its max.",
        "RANGE_INVALID": (
            "A count or length bound is out of range: below its minimum, above what the ask "
            "offers, or a minimum above its maximum."
        ),
        "REQUIRED_FIELD": "A form answer leaves a required field missing or blank.",
        "SELECTION_COUNT": "A default or an answer selects the wrong number of options.",
        "TOO_FEW": "A list has fewer items than allowed.",
        "TOO_LONG": "A string is longer than allowed.",
        "TOO_MANY": "A list has more items than allowed.",
        "TOO_SHORT": "A string is empty, only whitespace, or shorter than its minimum.",
        "UNKNOWN_BUTTON": "The pressed button is not on the pending ask's simple card.",
        "UNKNOWN_KEY": "An object has a field that its schema does not define.",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AskValidationError:
    """One problem with an ask or an answer.

    `path` locates it (``options[2].id``, ``content.selected[0]``; ``""`` is the root), `code`
    is a key of `ASK_ERROR_CODES`, `message` says what is wrong in one sentence and `fix` is one
    instruction that fixes it.
    """

    path: str
    code: AskErrorCode
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        """The wire form: ``{path, code, message, fix}``."""
        return {"path": self.path, "code": self.code, "message": self.message, "fix": self.fix}


def sort_errors(errors: list[AskValidationError]) -> list[AskValidationError]:
    """Errors in the protocol's order: by path, then by code. Paths compare segment by segment,
    array indexes as numbers (``options[2]`` before ``options[10]``) and before keys, a path
    before the longer ones it starts (as the published implementation orders them)."""
    return sorted(errors, key=lambda e: (path_order(e.path), e.code))


_PATH_SEGMENT: Final = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


def path_order(path: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key for an error path: its segments, an index as ``(0, n)``, a key as
    ``(1, key)``."""
    return tuple(
        (0, int(index)) if index else (1, key) for index, key in _PATH_SEGMENT.findall(path)
    )


def join_path(base: str, key: str | int) -> str:
    """``join_path("options", 2)`` is ``options[2]``; ``join_path("options[2]", "id")`` is
    ``options[2].id``; keys join the root without a dot."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key
