"""The ask protocol as pure functions on wire JSON.

Everything here takes and returns the JSON values of the spec (camelCase keys, as a client or a
model sends them), does no I/O, imports only the standard library, and never raises on a
malformed value: validators return `AskValidationError`s instead.
"""

from .answers import validate_ask_response
from .cards import UnknownButtonError, resolve_button_answer, to_simple_card, unknown_button_error
from .errors import ASK_ERROR_CODES, AskErrorCode, AskValidationError
from .files import (
    ParsedDataUrl,
    accepted_file_mime_types,
    check_ask_file_bytes,
    cut_text_file,
    file_not_owned_error,
    file_summary_line,
    is_text_file_mime_type,
    normalize_mime_type,
    parse_ask_data_url,
    sniff_file_bytes,
)
from .helpers import (
    Bounds,
    ConfirmLabels,
    ask_allows_decline,
    ask_kinds_for_surface,
    choice_selection_bounds,
    confirm_button_labels,
    files_count_bounds,
    form_default_values,
    form_text_max_length,
    is_compact_ask_kind,
    markdown_length_bounds,
)
from .inputs import validate_ask_input
from .limits import (
    ASK_CANCEL_REASONS,
    ASK_FILE_ACCEPT,
    ASK_FILE_ACCEPT_MIME_TYPES,
    ASK_KINDS,
    ASK_LIMITS,
    ASK_SURFACES,
    CHOICE_SELECT_MODES,
    COMPACT_ASK_KINDS,
    FORM_FIELD_TYPES,
    SIMPLE_CARD_BUTTON_STYLES,
    AskCancelReason,
    AskFileAccept,
    AskKind,
    AskSurface,
    ChoiceSelectMode,
    FormFieldType,
    SimpleCardButtonStyle,
)
from .prompts import ASKS_SYSTEM_PROMPT, COMPACT_SURFACE_SYSTEM_PROMPT, ask_prompt_section
from .schemas import ask_input_json_schema, ask_json_schemas

__all__ = [
    "ASKS_SYSTEM_PROMPT",
    "ASK_CANCEL_REASONS",
    "ASK_ERROR_CODES",
    "ASK_FILE_ACCEPT",
    "ASK_FILE_ACCEPT_MIME_TYPES",
    "ASK_KINDS",
    "ASK_LIMITS",
    "ASK_SURFACES",
    "CHOICE_SELECT_MODES",
    "COMPACT_ASK_KINDS",
    "COMPACT_SURFACE_SYSTEM_PROMPT",
    "FORM_FIELD_TYPES",
    "SIMPLE_CARD_BUTTON_STYLES",
    "AskCancelReason",
    "AskErrorCode",
    "AskFileAccept",
    "AskKind",
    "AskSurface",
    "AskValidationError",
    "Bounds",
    "ChoiceSelectMode",
    "ConfirmLabels",
    "FormFieldType",
    "ParsedDataUrl",
    "SimpleCardButtonStyle",
    "UnknownButtonError",
    "accepted_file_mime_types",
    "ask_allows_decline",
    "ask_input_json_schema",
    "ask_json_schemas",
    "ask_kinds_for_surface",
    "ask_prompt_section",
    "check_ask_file_bytes",
    "choice_selection_bounds",
    "confirm_button_labels",
    "cut_text_file",
    "file_not_owned_error",
    "file_summary_line",
    "files_count_bounds",
    "form_default_values",
    "form_text_max_length",
    "is_compact_ask_kind",
    "is_text_file_mime_type",
    "markdown_length_bounds",
    "normalize_mime_type",
    "parse_ask_data_url",
    "resolve_button_answer",
    "sniff_file_bytes",
    "to_simple_card",
    "unknown_button_error",
    "validate_ask_input",
    "validate_ask_response",
]
