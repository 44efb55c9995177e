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
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .input_schemas import ask_input_json_schema
from .limits import (
    ASK_CANCEL_REASONS,
    ASK_KINDS,
    ASK_SURFACES,
    CANCEL_REASON_MAX,
    CARD_BUTTONS_MAX,
    CARD_LABEL_MAX,
    CARD_TEXT_MAX,
    CARD_TITLE_MAX,
    SIMPLE_CARD_BUTTON_STYLES,
)
from .schema_parts import (
    JsonSchema,
    _array,
    _boolean,
    _const,
    _enum,
    _object,
    _quoted,
    _string,
    _text,
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
