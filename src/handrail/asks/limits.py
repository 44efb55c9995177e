"""The constants of the ask protocol: kinds, surfaces, enums and every limit.

`ASK_LIMITS` is the one source of every number: the validators, the JSON Schemas, the prompt
section, the docs table and the tests all read it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final, Literal

AskKind = Literal["choice", "confirm", "markdown", "form", "files"]
AskSurface = Literal["full", "compact"]
ChoiceSelectMode = Literal["one", "many"]
FormFieldType = Literal[
    "text",
    "textarea",
    "email",
    "url",
    "phone",
    "number",
    "date",
    "time",
    "datetime",
    "boolean",
    "select",
    "multiselect",
]
AskFileAccept = Literal["image", "pdf", "text", "csv", "json"]
AskCancelReason = Literal["user_sent_message", "one_ask_at_a_time"]
SimpleCardButtonStyle = Literal["default", "primary", "destructive", "cancel"]

ASK_KINDS: Final[tuple[AskKind, ...]] = ("choice", "confirm", "markdown", "form", "files")
COMPACT_ASK_KINDS: Final[tuple[AskKind, ...]] = ("choice", "confirm")
ASK_SURFACES: Final[tuple[AskSurface, ...]] = ("full", "compact")
CHOICE_SELECT_MODES: Final[tuple[ChoiceSelectMode, ...]] = ("one", "many")
FORM_FIELD_TYPES: Final[tuple[FormFieldType, ...]] = (
    "text",
    "textarea",
    "email",
    "url",
    "phone",
    "number",
    "date",
    "time",
    "datetime",
    "boolean",
    "select",
    "multiselect",
)
ASK_FILE_ACCEPT: Final[tuple[AskFileAccept, ...]] = ("image", "pdf", "text", "csv", "json")
ASK_FILE_ACCEPT_MIME_TYPES: Final[MappingProxyType[str, tuple[str, ...]]] = MappingProxyType(
    {
        "image": ("image/jpeg", "image/png", "image/gif", "image/webp"),
        "pdf": ("application/pdf",),
        "text": ("text/plain",),
        "csv": ("text/csv",),
        "json": ("application/json",),
    }
)
ASK_CANCEL_REASONS: Final[tuple[AskCancelReason, ...]] = ("user_sent_message", "one_ask_at_a_time")
SIMPLE_CARD_BUTTON_STYLES: Final[tuple[SimpleCardButtonStyle, ...]] = (
    "default",
    "primary",
    "destructive",
    "cancel",
)

OPTION_ID_PATTERN: Final = "^[a-z0-9][a-z0-9_-]{0,63}$"


def _freeze(value: dict[str, Any]) -> MappingProxyType[str, Any]:
    return MappingProxyType({k: _freeze(v) if isinstance(v, dict) else v for k, v in value.items()})


#: Every limit of the protocol, nested so that the dotted keys of the spec resolve:
#: ``ASK_LIMITS["choice"]["optionsMax"]`` is the spec's ``choice.optionsMax``.
ASK_LIMITS: Final[MappingProxyType[str, Any]] = _freeze(
    {
        "cancelReasonMaxLength": 200,
        "choice": {
            "optionDescriptionMaxLength": 280,
            "optionIdMaxLength": 64,
            "optionIdPattern": OPTION_ID_PATTERN,
            "optionLabelMaxLength": 120,
            "optionsMax": 50,
            "optionsMin": 2,
            "otherMaxLength": 500,
        },
        "confirm": {"labelMaxLength": 20},
        "files": {
            "defaultMaxFileSizeBytes": 10_485_760,
            "filenameMaxLength": 255,
            "maxFiles": 10,
            "minFiles": 1,
            "textMaxBytes": 100_000,
        },
        "form": {
            "fieldsMax": 8,
            "fieldsMin": 1,
            "helperTextMaxLength": 280,
            "labelMaxLength": 120,
            "phoneDigitsMax": 15,
            "phoneDigitsMin": 7,
            "textMaxLength": 2000,
            "textareaMaxLength": 10_000,
        },
        "markdown": {"maxLength": 20_000, "placeholderMaxLength": 120},
        "pendingAsksPerHistory": 1,
        "promptMaxLength": 500,
        "simpleCard": {
            "buttonLabelMaxLength": 20,
            "buttonsMax": 3,
            "textMaxLength": 140,
            "titleMaxLength": 40,
        },
        "submitLabelMaxLength": 24,
        "titleMaxLength": 80,
    }
)


def ask_limit(dotted_key: str) -> Any:
    """Resolve a dotted key of the Limits table, such as ``"choice.optionsMax"``."""
    value: Any = ASK_LIMITS
    for part in dotted_key.split("."):
        value = value[part]
    return value


def flat_ask_limits() -> dict[str, Any]:
    """Every limit keyed by its dotted path, as the spec's Limits table lists them."""
    out: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if isinstance(value, MappingProxyType):
                walk(f"{path}.", value)
            else:
                out[path] = value

    walk("", ASK_LIMITS)
    return out


# Short names for the validators, read once from ASK_LIMITS.
PROMPT_MAX: Final[int] = ASK_LIMITS["promptMaxLength"]
TITLE_MAX: Final[int] = ASK_LIMITS["titleMaxLength"]
SUBMIT_LABEL_MAX: Final[int] = ASK_LIMITS["submitLabelMaxLength"]
CANCEL_REASON_MAX: Final[int] = ASK_LIMITS["cancelReasonMaxLength"]
OPTIONS_MIN: Final[int] = ASK_LIMITS["choice"]["optionsMin"]
OPTIONS_MAX: Final[int] = ASK_LIMITS["choice"]["optionsMax"]
OPTION_LABEL_MAX: Final[int] = ASK_LIMITS["choice"]["optionLabelMaxLength"]
OPTION_DESCRIPTION_MAX: Final[int] = ASK_LIMITS["choice"]["optionDescriptionMaxLength"]
OTHER_MAX: Final[int] = ASK_LIMITS["choice"]["otherMaxLength"]
CONFIRM_LABEL_MAX: Final[int] = ASK_LIMITS["confirm"]["labelMaxLength"]
MARKDOWN_MAX: Final[int] = ASK_LIMITS["markdown"]["maxLength"]
MARKDOWN_PLACEHOLDER_MAX: Final[int] = ASK_LIMITS["markdown"]["placeholderMaxLength"]
FORM_FIELDS_MIN: Final[int] = ASK_LIMITS["form"]["fieldsMin"]
FORM_FIELDS_MAX: Final[int] = ASK_LIMITS["form"]["fieldsMax"]
FORM_LABEL_MAX: Final[int] = ASK_LIMITS["form"]["labelMaxLength"]
FORM_HELPER_MAX: Final[int] = ASK_LIMITS["form"]["helperTextMaxLength"]
FORM_TEXT_MAX: Final[int] = ASK_LIMITS["form"]["textMaxLength"]
FORM_TEXTAREA_MAX: Final[int] = ASK_LIMITS["form"]["textareaMaxLength"]
PHONE_DIGITS_MIN: Final[int] = ASK_LIMITS["form"]["phoneDigitsMin"]
PHONE_DIGITS_MAX: Final[int] = ASK_LIMITS["form"]["phoneDigitsMax"]
FILES_MIN: Final[int] = ASK_LIMITS["files"]["minFiles"]
FILES_MAX: Final[int] = ASK_LIMITS["files"]["maxFiles"]
FILENAME_MAX: Final[int] = ASK_LIMITS["files"]["filenameMaxLength"]
DEFAULT_MAX_FILE_SIZE: Final[int] = ASK_LIMITS["files"]["defaultMaxFileSizeBytes"]
TEXT_MAX_BYTES: Final[int] = ASK_LIMITS["files"]["textMaxBytes"]
CARD_BUTTONS_MAX: Final[int] = ASK_LIMITS["simpleCard"]["buttonsMax"]
CARD_LABEL_MAX: Final[int] = ASK_LIMITS["simpleCard"]["buttonLabelMaxLength"]
CARD_TEXT_MAX: Final[int] = ASK_LIMITS["simpleCard"]["textMaxLength"]
CARD_TITLE_MAX: Final[int] = ASK_LIMITS["simpleCard"]["titleMaxLength"]
