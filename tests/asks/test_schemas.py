"""The JSON Schema documents and the ask tool input schemas.

The published documents must accept exactly what the Terreno conformance documents accept: this
is checked on their structure, on every fixture card, and on Hypothesis bodies, valid and
mutated, that both validators must judge alike.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from examples import PIZZA, PLAN
from handrail.asks.limits import (
    ASK_CANCEL_REASONS,
    ASK_FILE_ACCEPT,
    ASK_KINDS,
    ASK_SURFACES,
    CANCEL_REASON_MAX,
    CARD_BUTTONS_MAX,
    CARD_LABEL_MAX,
    CARD_TEXT_MAX,
    CARD_TITLE_MAX,
    COMPACT_ASK_KINDS,
    FORM_FIELD_TYPES,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    PROMPT_MAX,
    SIMPLE_CARD_BUTTON_STYLES,
    flat_ask_limits,
)
from handrail.asks.schemas import (
    ASK_JSON_SCHEMA_NAMES,
    DRAFT_07,
    SCHEMAS_FOLDER,
    ask_input_json_schema,
    ask_json_schemas,
    schema_file_name,
    schema_files_out_of_date,
    write_ask_json_schemas,
)
from handrail.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO_ROOT.parent / "shared" / "conformance" / "terreno"

SPEC_TITLES = {
    "SimpleCard",
    "SimpleCardButton",
    "AskResponse",
    "AskAnswer",
    "PendingAsk",
    "PendingAskSummary",
    "TurnResult",
}
TOP_LEVEL_TITLES = {
    "simpleCard": "SimpleCard",
    "turnRequest": "TurnRequest",
    "turnResponse": "TurnResponse",
    "pendingAsksResponse": "PendingAsksResponse",
}
HYPOTHESIS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------
# Conformance data
# ---------------------------------------------------------------------------------------------


def _conformance_folder(part: str) -> Path:
    folder = CONFORMANCE / part
    if not folder.is_dir():
        pytest.fail(
            f"Conformance data not found at {folder}. Clone the shared/ folder beside the "
            "repository (shared/conformance/terreno/)."
        )
    return folder


@cache
def _conformance_documents() -> dict[str, dict[str, Any]]:
    folder = _conformance_folder("schemas")
    return {
        name: json.loads((folder / schema_file_name(name)).read_text(encoding="utf-8"))
        for name in ASK_JSON_SCHEMA_NAMES
    }


@cache
def _validators(name: str) -> tuple[Draft7Validator, Draft7Validator]:
    """Our validator and the conformance validator of the document `name`."""
    return Draft7Validator(ask_json_schemas()[name]), Draft7Validator(
        _conformance_documents()[name]
    )


@cache
def _valid_fixtures() -> tuple[dict[str, Any], ...]:
    folder = _conformance_folder("valid")
    return tuple(
        json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))
    )


def _fixture_cards() -> list[dict[str, Any]]:
    return [fixture["simple"] for fixture in _valid_fixtures()]


def _agree(name: str, body: Any) -> bool:
    ours, theirs = _validators(name)
    verdict = bool(ours.is_valid(body))
    assert verdict == theirs.is_valid(body), (
        f"{name}: ours says {'valid' if verdict else 'invalid'}, the conformance document "
        f"disagrees on {json.dumps(body, ensure_ascii=False)[:2000]}"
    )
    return verdict


# ---------------------------------------------------------------------------------------------
# The committed files and the documents
# ---------------------------------------------------------------------------------------------


def test_committed_files_are_up_to_date() -> None:
    stale = schema_files_out_of_date()
    assert not stale, (
        f"Out of date in {SCHEMAS_FOLDER}: {', '.join(stale)}. Run `handrail schemas` "
        "(or `make schemas`) and commit the result."
    )


@pytest.mark.parametrize("name", ASK_JSON_SCHEMA_NAMES)
def test_document_is_a_valid_draft_07_schema(name: str) -> None:
    document = ask_json_schemas()[name]
    Draft7Validator.check_schema(document)
    assert document["$schema"] == DRAFT_07
    assert document["title"] == TOP_LEVEL_TITLES[name]
    assert document["description"]


def test_documents_are_keyed_by_file_name() -> None:
    assert list(ask_json_schemas()) == list(ASK_JSON_SCHEMA_NAMES)
    assert schema_file_name("turnRequest") == "turnRequest.schema.json"


def _titles(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("title"), str):
            yield node["title"]
        for value in node.values():
            yield from _titles(value)
    elif isinstance(node, list):
        for value in node:
            yield from _titles(value)


def test_nested_types_have_the_spec_titles() -> None:
    titles = {title for document in ask_json_schemas().values() for title in _titles(document)}
    assert titles >= SPEC_TITLES
    assert titles == SPEC_TITLES | set(TOP_LEVEL_TITLES.values())


def _shape(node: Any) -> Any:
    """`node` without its prose (string `title` and `description`) and without the no-op
    ``propertyNames: {type: string}`` and ``additionalProperties: {}`` of an open object."""
    if isinstance(node, dict):
        if (
            node.get("propertyNames") == {"type": "string"}
            and node.get("additionalProperties") == {}
        ):
            node = {
                k: v for k, v in node.items() if k not in ("propertyNames", "additionalProperties")
            }
        return {
            key: _shape(value)
            for key, value in node.items()
            if not (key in ("title", "description") and isinstance(value, str))
        }
    if isinstance(node, list):
        return [_shape(value) for value in node]
    return node


@pytest.mark.parametrize("name", ASK_JSON_SCHEMA_NAMES)
def test_document_has_the_structure_of_the_conformance_document(name: str) -> None:
    ours, theirs = ask_json_schemas()[name], _conformance_documents()[name]
    assert _shape(ours) == _shape(theirs)
    assert sorted(_titles(ours)) == sorted(_titles(theirs))


def test_descriptions_speak_of_our_routes() -> None:
    text = json.dumps(ask_json_schemas())
    assert "/gpt" not in text
    assert "TerrenoApp" not in text
    assert "POST /api/histories/{id}/turn" in text
    assert "GET /api/histories/pendingAsks" in text


def test_documents_read_their_numbers_from_the_limits() -> None:
    card = ask_json_schemas()["simpleCard"]
    assert card["properties"]["buttons"]["maxItems"] == CARD_BUTTONS_MAX
    assert card["properties"]["text"]["maxLength"] == CARD_TEXT_MAX
    assert card["properties"]["title"]["maxLength"] == CARD_TITLE_MAX
    button = card["properties"]["buttons"]["items"]
    assert button["properties"]["label"]["maxLength"] == CARD_LABEL_MAX
    assert button["properties"]["style"]["enum"] == list(SIMPLE_CARD_BUTTON_STYLES)
    cancel = button["properties"]["response"]["oneOf"][2]
    assert cancel["properties"]["reason"]["maxLength"] == CANCEL_REASON_MAX


def test_each_call_returns_new_dicts() -> None:
    first = ask_json_schemas()
    first["simpleCard"]["properties"].clear()
    assert ask_json_schemas()["simpleCard"]["properties"]
    schema = ask_input_json_schema("choice")
    schema["properties"].clear()
    assert ask_input_json_schema("choice")["properties"]


def test_write_uses_two_space_indent_and_a_trailing_newline(tmp_path: Path) -> None:
    paths = write_ask_json_schemas(tmp_path)
    assert [path.name for path in paths] == [schema_file_name(n) for n in ASK_JSON_SCHEMA_NAMES]
    for path, (name, document) in zip(paths, ask_json_schemas().items(), strict=True):
        text = path.read_text(encoding="utf-8")
        assert text.endswith("}\n")
        assert text.startswith('{\n  "$schema": ')
        assert json.loads(text) == document, name
    assert schema_files_out_of_date(tmp_path) == []


def test_out_of_date_lists_missing_and_changed_files(tmp_path: Path) -> None:
    assert schema_files_out_of_date(tmp_path / "missing") == [
        schema_file_name(name) for name in ASK_JSON_SCHEMA_NAMES
    ]
    write_ask_json_schemas(tmp_path)
    changed = tmp_path / "turnRequest.schema.json"
    changed.write_text(changed.read_text(encoding="utf-8").replace("  ", "    "), "utf-8")
    assert schema_files_out_of_date(tmp_path) == ["turnRequest.schema.json"]


# ---------------------------------------------------------------------------------------------
# Equivalence with the conformance documents
# ---------------------------------------------------------------------------------------------


def test_every_fixture_card_is_valid_for_both() -> None:
    cards = _fixture_cards()
    assert cards
    for card in cards:
        assert _agree("simpleCard", card)
        summary = {"toolCallId": card["toolCallId"], "kind": card["kind"], "simple": card}
        turn = {
            "data": {"historyId": "6710c2a1f1e2d3c4b5a69701", "text": "", "pendingAsk": summary}
        }
        assert _agree("turnResponse", turn)
        pending = {
            "data": [
                {
                    **summary,
                    "historyId": "6710c2a1f1e2d3c4b5a69701",
                    "created": "2026-10-01T09:30:00.000Z",
                }
            ],
            "requestId": "3f0c9a52",
        }
        assert _agree("pendingAsksResponse", pending)
        for button in card["buttons"]:
            answer = {**button["response"], "toolCallId": card["toolCallId"]}
            assert _agree("turnRequest", {"askResponse": answer, "surface": "compact"})
            assert _agree(
                "turnRequest", {"toolCallId": card["toolCallId"], "buttonId": button["id"]}
            )


_CHARS = st.characters(codec="utf-8")
_SHORT_KEY = st.text(_CHARS, max_size=6)


def _text(min_size: int = 0, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(_CHARS, min_size=min_size, max_size=max_size)


def _bounded(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    """Valid text of `min_size`-`max_size` characters, often exactly at either bound."""
    at_bounds = st.sampled_from([min_size, max_size]).flatmap(
        lambda n: st.sampled_from(["x" * n, "🙂" * n, "é" * n])
    )
    return _text(min_size, max_size) | at_bounds


_JSON_LEAF = (
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | _text(max_size=5)
)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SHORT_KEY, inner, max_size=3),
    max_leaves=8,
)

_CONTENT = st.dictionaries(_SHORT_KEY, _JSON, max_size=3)
_ID = _text(1, 12)


def _envelope(extra: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.fixed_dictionaries({"action": st.just("accept"), "content": _CONTENT, **extra}),
        st.fixed_dictionaries({"action": st.just("decline"), **extra}),
        st.fixed_dictionaries(
            {"action": st.just("cancel"), **extra},
            optional={
                "reason": st.sampled_from(ASK_CANCEL_REASONS) | _bounded(1, CANCEL_REASON_MAX)
            },
        ),
    )


_RESPONSE = _envelope({})
_BUTTON = st.fixed_dictionaries(
    {
        "id": _ID,
        "label": _bounded(1, CARD_LABEL_MAX),
        "style": st.sampled_from(SIMPLE_CARD_BUTTON_STYLES),
        "response": _RESPONSE,
    }
)
_CARD = st.fixed_dictionaries(
    {
        "toolCallId": _ID,
        "kind": st.sampled_from(ASK_KINDS),
        "text": _bounded(1, CARD_TEXT_MAX),
        "buttons": st.lists(_BUTTON, max_size=CARD_BUTTONS_MAX)
        | st.lists(_BUTTON, min_size=CARD_BUTTONS_MAX, max_size=CARD_BUTTONS_MAX),
        "handoff": st.booleans(),
    },
    optional={"title": _bounded(1, CARD_TITLE_MAX)},
)
_TURN_REQUEST = st.fixed_dictionaries(
    {},
    optional={
        "prompt": _text(1, 40),
        "askResponse": _envelope({"toolCallId": _ID}),
        "toolCallId": _ID,
        "buttonId": _ID,
        "surface": st.sampled_from(ASK_SURFACES),
    },
)


@st.composite
def _summary(draw: st.DrawFn) -> dict[str, Any]:
    card = draw(_CARD)
    return {"toolCallId": card["toolCallId"], "kind": card["kind"], "simple": card}


_TURN_RESPONSE = st.fixed_dictionaries(
    {
        "data": st.fixed_dictionaries(
            {"historyId": _ID, "text": _text(max_size=40)},
            optional={"title": _text(max_size=20), "pendingAsk": _summary(), "error": _text()},
        )
    },
    optional={"requestId": _text(max_size=12)},
)


@st.composite
def _created(draw: st.DrawFn) -> str:
    moment = draw(st.datetimes())
    fraction = draw(st.sampled_from(["", ".0", ".123", ".123456"]))
    return moment.isoformat(timespec="seconds") + fraction + "Z"


@st.composite
def _pending_ask(draw: st.DrawFn) -> dict[str, Any]:
    item = {**draw(_summary()), "historyId": draw(_ID), "created": draw(_created())}
    if draw(st.booleans()):
        item["title"] = draw(_text(max_size=20))
    return item


_PENDING_ASKS_RESPONSE = st.fixed_dictionaries(
    {"data": st.lists(_pending_ask(), max_size=3)}, optional={"requestId": _text(max_size=12)}
)

_VALID_BODIES: dict[str, st.SearchStrategy[Any]] = {
    "simpleCard": _CARD,
    "turnRequest": _TURN_REQUEST,
    "turnResponse": _TURN_RESPONSE,
    "pendingAsksResponse": _PENDING_ASKS_RESPONSE,
}

_KEYS = [
    "action", "askResponse", "buttonId", "buttons", "content", "created", "data", "error",
    "extra", "handoff", "historyId", "id", "kind", "label", "pendingAsk", "prompt", "reason",
    "requestId", "response", "simple", "style", "surface", "text", "title", "toolCallId",
]  # fmt: skip

# Values that sit on or just past a limit, enums that are wrong or belong elsewhere, wrong types.
_ODD_LEAVES: list[Any] = [
    None, True, 0, -1, 1.5, "", " ", [], {}, "maybe", "accept", "decline", "cancel", "full",
    "compact", "watch", "choice", "clarify", "primary", "danger", "default",
    "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2026-10-01T09:30Z",
    "2026-10-01T09:30:00+02:00", "2026-10-01T24:00:00Z", "2026-10-01 09:30:00Z",
]  # fmt: skip
_EDGES = [0, 1, CARD_LABEL_MAX, CARD_TITLE_MAX, CARD_TEXT_MAX, CANCEL_REASON_MAX]
_AT_EDGE = st.sampled_from(_EDGES).flatmap(
    lambda n: st.sampled_from(["x" * n, "x" * (n + 1), "🙂" * n, "🙂" * (n + 1)])
)
_ODD_VALUE = st.one_of(st.sampled_from(_ODD_LEAVES), _AT_EDGE, _RESPONSE, _BUTTON, _JSON)


def _lengths(limit: int) -> st.SearchStrategy[str]:
    return st.sampled_from([0, 1, limit, limit + 1]).flatmap(
        lambda n: st.sampled_from(["x" * n, "🙂" * n, " " * n])
    )


_DATES = [
    "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2000-02-29T23:59:59.5Z",
    "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-12-31T23:59:59Z",
    "2026-10-01T09:30Z", "2026-10-01T09:30:00+02:00", "2026-10-01T24:00:00Z",
    "2026-10-01 09:30:00Z", "2026-10-01T09:30:00.Z", "2026-13-01T00:00:00Z", "",
]  # fmt: skip
_IDS = st.sampled_from(["", "x", " ", "option:team"])

#: For a key of the documents, values on both sides of its rules.
_EDGE_BY_KEY: dict[str, st.SearchStrategy[Any]] = {
    "label": _lengths(CARD_LABEL_MAX),
    "text": _lengths(CARD_TEXT_MAX),
    "title": _lengths(CARD_TITLE_MAX),
    "reason": _lengths(CANCEL_REASON_MAX),
    "created": st.sampled_from(_DATES),
    "kind": st.sampled_from([*ASK_KINDS, "clarify", "Choice", ""]),
    "style": st.sampled_from([*SIMPLE_CARD_BUTTON_STYLES, "danger", ""]),
    "action": st.sampled_from(["accept", "decline", "cancel", "reject"]),
    "surface": st.sampled_from([*ASK_SURFACES, "watch", ""]),
    "handoff": st.sampled_from([True, False, "true", 0, None]),
    "content": st.sampled_from([{}, [], "x", None]),
    "id": _IDS,
    "toolCallId": _IDS,
    "historyId": _IDS,
    "buttonId": _IDS,
    "prompt": _IDS,
    "requestId": _IDS,
    "error": _IDS,
}


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        node = node[step]
    return node


# "edge" is listed thrice: most single rule breaks are found by it.
_OPERATIONS = ["replace", "add-key", "drop-key", "grow", "lengthen", "resize", *["edge"] * 3]


def _keyed(body: Any) -> list[tuple[Any, ...]]:
    return [path for path in _paths(body) if path and path[-1] in _EDGE_BY_KEY]


def _mutate(draw: Callable[[st.SearchStrategy[Any]], Any], body: Any) -> Any:
    """`body` with one change: a value replaced, a key added or dropped, a list grown by one or
    more items, or a string lengthened by one character or resized to a limit's edge."""
    body = copy.deepcopy(body)
    operation = draw(st.sampled_from(_OPERATIONS))
    wanted = {"add-key": dict, "drop-key": dict, "grow": list, "lengthen": str, "resize": str}
    if operation == "edge":
        paths = _keyed(body)
    else:
        paths = [
            path
            for path in _paths(body)
            if operation not in wanted or isinstance(_at(body, path), wanted[operation])
        ]
    if not paths:
        operation, paths = "replace", list(_paths(body))
    path = draw(st.sampled_from(paths))
    node = _at(body, path)
    if operation == "add-key":
        node[draw(st.sampled_from(_KEYS))] = draw(_ODD_VALUE)
        return body
    if operation == "drop-key" and node:
        del node[draw(st.sampled_from(sorted(node)))]
        return body
    if operation == "grow":
        item = draw(st.sampled_from(node)) if node else draw(_ODD_VALUE)
        count = draw(st.sampled_from([1, 1, 1, CARD_BUTTONS_MAX + 1]))
        node.extend(copy.deepcopy(item) for _ in range(count))
        return body
    if operation == "lengthen":
        value: Any = node + draw(st.sampled_from(["x", "🙂"]))
    elif operation == "resize":
        value = draw(_AT_EDGE)
    elif operation == "edge":
        value = draw(_EDGE_BY_KEY[path[-1]])
    else:
        value = draw(_ODD_VALUE)
    if not path:
        return value
    _at(body, path[:-1])[path[-1]] = value
    return body


@pytest.mark.parametrize("name", ASK_JSON_SCHEMA_NAMES)
@HYPOTHESIS
@given(data=st.data())
def test_valid_bodies_are_valid_for_both(name: str, data: st.DataObject) -> None:
    body = data.draw(_VALID_BODIES[name], label="body")
    assert _agree(name, body)


@pytest.mark.parametrize("name", ASK_JSON_SCHEMA_NAMES)
@HYPOTHESIS
@given(data=st.data())
def test_mutated_bodies_get_the_same_verdict(name: str, data: st.DataObject) -> None:
    body = data.draw(_VALID_BODIES[name], label="body")
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]), label="changes")):
        body = _mutate(data.draw, body)
    _agree(name, body)


@HYPOTHESIS
@given(data=st.data())
def test_mutated_fixture_cards_get_the_same_verdict(data: st.DataObject) -> None:
    card = data.draw(st.sampled_from(_fixture_cards()), label="card")
    _agree("simpleCard", _mutate(data.draw, card))


@HYPOTHESIS
@given(body=_JSON)
def test_arbitrary_json_gets_the_same_verdict(body: Any) -> None:
    for name in ASK_JSON_SCHEMA_NAMES:
        _agree(name, body)


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("simpleCard", {"toolCallId": "c", "kind": "choice", "text": "t", "handoff": False}),
        (
            "simpleCard",
            {
                "toolCallId": "c",
                "kind": "choice",
                "text": "t",
                "handoff": False,
                "buttons": [
                    {
                        "id": f"b{i}",
                        "label": "Go",
                        "style": "default",
                        "response": {"action": "decline"},
                    }
                    for i in range(CARD_BUTTONS_MAX + 1)
                ],
            },
        ),
        (
            "simpleCard",
            {"toolCallId": "c", "kind": "ask", "text": "t", "handoff": False, "buttons": []},
        ),
        ("turnRequest", {"prompt": "Hi", "extra": 1}),
        ("turnRequest", {"surface": "watch"}),
        ("turnRequest", {"askResponse": {"action": "accept", "content": {}}}),
        ("turnRequest", {"askResponse": {"action": "cancel", "toolCallId": "c", "reason": ""}}),
        ("turnResponse", {"data": {"historyId": "h"}}),
        ("turnResponse", {"data": {"historyId": "h", "text": ""}, "meta": {}}),
        ("pendingAsksResponse", {"data": [{"historyId": "h"}]}),
    ],
)
def test_invalid_bodies_are_invalid_for_both(name: str, body: Any) -> None:
    assert not _agree(name, body)


# ---------------------------------------------------------------------------------------------
# Ask tool input schemas
# ---------------------------------------------------------------------------------------------

KIND_SURFACES = [
    (kind, surface)
    for surface in ASK_SURFACES
    for kind in ASK_KINDS
    if surface == "full" or kind in COMPACT_ASK_KINDS
]
TOOL_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "minLength",
    "maxLength", "minItems", "maxItems", "pattern", "minimum", "maximum", "items", "anyOf",
    "description",
}  # fmt: skip

CLEAN_UP = {
    "title": "Clean up todos",
    "prompt": "Delete 14 completed todos? This cannot be undone.",
    "confirmLabel": "Delete 14 todos",
    "denyLabel": "Keep them",
    "destructive": True,
}
LAUNCH = {
    "title": "Launch announcement",
    "prompt": "Here is a draft announcement. Edit anything, then send it back.",
    "initial": "# We're live\n\nToday we launched **Terreno Asks**.",
    "maxLength": 2000,
    "submitLabel": "Send it back",
}
INVOICE = {
    "title": "Invoice details",
    "prompt": "A few details for the invoice.",
    "fields": [
        {
            "id": "company",
            "type": "text",
            "label": "Company name",
            "required": True,
            "maxLength": 120,
        },
        {"id": "seats", "type": "number", "label": "Seats", "min": 1, "max": 500, "integer": True},
        {"id": "start", "type": "date", "label": "Start date"},
        {
            "id": "region",
            "type": "select",
            "label": "Region",
            "options": [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}],
        },
        {"id": "notify", "type": "boolean", "label": "Email me the invoice", "default": True},
    ],
    "submitLabel": "Send details",
}
RECEIPT = {
    "title": "Upload a receipt",
    "prompt": "Upload the receipt for your expense report.",
    "accept": ["image", "pdf", "text", "csv"],
    "maxFiles": 3,
    "submitLabel": "Send receipt",
}
SPEC_EXAMPLES = [
    ("choice", PLAN),
    ("choice", PIZZA),
    ("confirm", CLEAN_UP),
    ("markdown", LAUNCH),
    ("form", INVOICE),
    ("files", RECEIPT),
]


def _accepts(kind: str, ask: Any, surface: str = "full") -> bool:
    schema = ask_input_json_schema(kind, surface=surface)
    return bool(Draft7Validator(schema).is_valid(ask))


def _schema_nodes(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from _schema_nodes(sub)
    if "items" in schema:
        yield from _schema_nodes(schema["items"])
    for sub in schema.get("anyOf", []):
        yield from _schema_nodes(sub)


@pytest.mark.parametrize(("kind", "surface"), KIND_SURFACES)
def test_input_schema_is_a_plain_tool_schema(kind: str, surface: str) -> None:
    schema = ask_input_json_schema(kind, surface=surface)
    Draft7Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["description"]
    for node in _schema_nodes(schema):
        assert set(node) <= TOOL_KEYWORDS, set(node) - TOOL_KEYWORDS
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
        for key, sub in node.get("properties", {}).items():
            assert sub.get("description"), f"{key} has no description"
    assert "$ref" not in json.dumps(schema)


@pytest.mark.parametrize(("kind", "surface"), KIND_SURFACES)
def test_input_schema_numbers_come_from_the_limits(kind: str, surface: str) -> None:
    limits = {value for value in flat_ask_limits().values() if isinstance(value, int)}
    structural = {0, 1, len(ASK_FILE_ACCEPT), OPTIONS_MAX + 1}
    for node in _schema_nodes(ask_input_json_schema(kind, surface=surface)):
        for keyword in ("minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum"):
            if keyword in node:
                assert node[keyword] in limits | structural, (keyword, node)


@pytest.mark.parametrize(("kind", "ask"), SPEC_EXAMPLES)
def test_input_schema_accepts_the_spec_examples(kind: str, ask: dict[str, Any]) -> None:
    assert _accepts(kind, ask)


def test_compact_schemas_accept_the_compact_examples() -> None:
    assert _accepts("choice", PLAN, "compact")
    assert _accepts("confirm", CLEAN_UP, "compact")
    assert ask_input_json_schema("confirm", surface="compact") == ask_input_json_schema("confirm")


def test_input_schema_accepts_every_valid_fixture_input() -> None:
    for fixture in _valid_fixtures():
        assert _accepts(fixture["kind"], fixture["input"]), fixture["input"]


@pytest.mark.parametrize(("kind", "ask"), SPEC_EXAMPLES)
def test_input_schema_rejects_an_unknown_key(kind: str, ask: dict[str, Any]) -> None:
    assert not _accepts(kind, {**ask, "color": "blue"})
    without_prompt = {key: value for key, value in ask.items() if key != "prompt"}
    assert not _accepts(kind, without_prompt)
    assert not _accepts(kind, {**ask, "prompt": "x" * (PROMPT_MAX + 1)})


def _options(count: int, label: str = "Option") -> list[dict[str, str]]:
    return [{"id": f"o{index}", "label": f"{label} {index}"} for index in range(count)]


def test_compact_choice_is_narrowed() -> None:
    ask = {"prompt": "Which one?", "select": "one", "options": _options(3)}
    assert _accepts("choice", ask, "compact")
    assert not _accepts("choice", {**ask, "options": _options(CARD_BUTTONS_MAX + 1)}, "compact")
    assert _accepts("choice", {**ask, "options": _options(CARD_BUTTONS_MAX + 1)})
    assert not _accepts("choice", {**ask, "select": "many"}, "compact")
    assert _accepts("choice", {**ask, "select": "many"})
    long_label = [{"id": "a", "label": "x" * (CARD_LABEL_MAX + 1)}, {"id": "b", "label": "B"}]
    assert not _accepts("choice", {**ask, "options": long_label}, "compact")
    assert _accepts("choice", {**ask, "options": long_label})
    for key, value in [
        ("minSelected", 1),
        ("maxSelected", 1),
        ("allowOther", True),
        ("otherLabel", "Other"),
    ]:
        assert not _accepts("choice", {**ask, key: value}, "compact"), key
    assert not _accepts("choice", {**ask, "default": ["o0", "o1"]}, "compact")
    schema = ask_input_json_schema("choice", surface="compact")
    assert schema["properties"]["select"]["const"] == "one"
    assert schema["properties"]["options"]["maxItems"] == CARD_BUTTONS_MAX


def test_full_choice_limits() -> None:
    ask = {"prompt": "Which one?", "select": "one", "options": _options(OPTIONS_MAX)}
    assert _accepts("choice", ask)
    assert not _accepts("choice", {**ask, "options": _options(OPTIONS_MAX + 1)})
    assert not _accepts("choice", {**ask, "options": _options(1)})
    assert not _accepts("choice", {**ask, "select": "some"})
    assert not _accepts(
        "choice", {**ask, "options": [{"id": "Bad Id", "label": "A"}, *_options(1)]}
    )
    long_label = [{"id": "a", "label": "x" * (OPTION_LABEL_MAX + 1)}, *_options(1)]
    assert not _accepts("choice", {**ask, "options": long_label})


def test_confirm_has_no_submit_label() -> None:
    assert not _accepts("confirm", {**CLEAN_UP, "submitLabel": "Go"})
    assert not _accepts("confirm", {**CLEAN_UP, "confirmLabel": "x" * 21})


def test_form_fields_take_only_their_own_keys() -> None:
    def form(*fields: dict[str, Any]) -> dict[str, Any]:
        return {"prompt": "Fill this in.", "fields": list(fields)}

    assert not _accepts("form", form({"id": "name", "type": "text", "label": "Name", "min": 1}))
    assert not _accepts("form", form({"id": "n", "type": "number", "label": "N", "maxLength": 3}))
    assert not _accepts("form", form({"id": "pick", "type": "select", "label": "Pick"}))
    assert not _accepts("form", form({"id": "pw", "type": "password", "label": "Password"}))
    assert not _accepts("form", form({"id": "on", "type": "boolean", "label": "On", "default": 1}))
    assert not _accepts("form", form())
    assert not _accepts(
        "form", form(*[{"id": f"f{i}", "type": "text", "label": "F"} for i in range(9)])
    )
    for field_type in FORM_FIELD_TYPES:
        field: dict[str, Any] = {"id": "f", "type": field_type, "label": "F", "required": True}
        if field_type in ("select", "multiselect"):
            field["options"] = _options(2)
        assert _accepts("form", form(field)), field_type
        assert not _accepts("form", form({**field, "color": "blue"})), field_type


def test_files_accept_is_an_enum() -> None:
    assert _accepts("files", {**RECEIPT, "accept": list(ASK_FILE_ACCEPT)})
    assert not _accepts("files", {**RECEIPT, "accept": ["video"]})
    assert not _accepts("files", {**RECEIPT, "accept": []})
    assert not _accepts("files", {**RECEIPT, "maxFiles": 11})
    assert not _accepts("files", {**RECEIPT, "minFiles": 0})


def test_unknown_kind_raises_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match="clarify") as raised:
        ask_input_json_schema("clarify")
    for kind in ASK_KINDS:
        assert kind in str(raised.value)


@pytest.mark.parametrize("kind", [kind for kind in ASK_KINDS if kind not in COMPACT_ASK_KINDS])
def test_compact_surface_refuses_kinds_it_does_not_offer(kind: str) -> None:
    with pytest.raises(ValueError, match="compact"):
        ask_input_json_schema(kind, surface="compact")


def test_unknown_surface_raises() -> None:
    with pytest.raises(ValueError, match="watch"):
        ask_input_json_schema("choice", surface="watch")


# ---------------------------------------------------------------------------------------------
# The `handrail schemas` command
# ---------------------------------------------------------------------------------------------


def test_cli_check_passes_on_the_committed_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_cli_writes_and_checks_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas", "--check", "--folder", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    for name in ASK_JSON_SCHEMA_NAMES:
        assert schema_file_name(name) in err
    assert "handrail schemas" in err

    assert main(["schemas", "--folder", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tmp_path / schema_file_name(name)) for name in ASK_JSON_SCHEMA_NAMES]

    assert main(["schemas", "--check", "--folder", str(tmp_path)]) == 0
    (tmp_path / "simpleCard.schema.json").write_text("{}\n", encoding="utf-8")
    assert main(["schemas", "--check", "--folder", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "simpleCard.schema.json" in err
    assert "turnRequest.schema.json" not in err


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "schemas" in capsys.readouterr().err
    assert main(["nonsense"]) == 2
    assert main(["--version"]) == 0
    assert "handrail" in capsys.readouterr().out
