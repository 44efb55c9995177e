"""The elicitation mapping on its own: every row of a requested schema to a form field and back,
ids that break the field id pattern mapped both ways, schemas no form holds, and URL mode."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.asks import validate_ask_input, validate_ask_response
from handrail.connections.elicitation import (
    ElicitationAsk,
    ElicitationForm,
    ElicitationRequest,
    Unshowable,
    answer_errors,
    elicit_result,
    to_ask,
    valid_id,
)


def form_of(properties: dict[str, Any], **schema: Any) -> ElicitationAsk:
    request = ElicitationRequest(
        mode="form",
        message="Details, please.",
        server="Shop",
        requested_schema={"type": "object", "properties": properties, **schema},
    )
    asked = to_ask(request)
    assert isinstance(asked, ElicitationAsk), asked
    assert validate_ask_input(asked.kind, asked.input) == []
    return asked


def only_field(spec: dict[str, Any], name: str = "x", required: bool = False) -> dict[str, Any]:
    asked = form_of({name: spec}, required=[name] if required else [])
    [field] = asked.input["fields"]
    return dict(field)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"type": "string", "minLength": 2, "maxLength": 9, "default": "abc"},
            {"type": "text", "minLength": 2, "maxLength": 9, "default": "abc"},
        ),
        ({"type": "string", "maxLength": 5000}, {"type": "textarea", "maxLength": 5000}),
        ({"type": "string", "format": "email"}, {"type": "email"}),
        ({"type": "string", "format": "uri"}, {"type": "url"}),
        ({"type": "string", "format": "date"}, {"type": "date"}),
        ({"type": "string", "format": "date-time"}, {"type": "datetime"}),
        (
            {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1.5},
            {"type": "number", "min": 0.5, "max": 9.5, "default": 1.5},
        ),
        (
            {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
            {"type": "number", "integer": True, "min": 1, "max": 5, "default": 2},
        ),
        ({"type": "boolean", "default": True}, {"type": "boolean", "default": True}),
        (
            {"type": "string", "enum": ["s", "m"], "default": "m"},
            {
                "type": "select",
                "options": [{"id": "s", "label": "s"}, {"id": "m", "label": "m"}],
                "default": "m",
            },
        ),
        (
            {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
            {
                "type": "select",
                "options": [{"id": "s", "label": "Small"}, {"id": "l", "label": "l"}],
            },
        ),
        (
            {"type": "string", "enum": ["s", "l"], "enumNames": ["Small", "Large"]},
            {
                "type": "select",
                "options": [{"id": "s", "label": "Small"}, {"id": "l", "label": "Large"}],
            },
        ),
        (
            {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "minItems": 1,
                "maxItems": 2,
                "default": ["a"],
            },
            {
                "type": "multiselect",
                "options": [{"id": v, "label": v} for v in "abc"],
                "helperText": "Pick 1 to 2",
                "default": ["a"],
            },
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b"}]}},
            {
                "type": "multiselect",
                "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "b"}],
            },
        ),
    ],
)
def test_every_type_maps_to_its_field(spec: dict[str, Any], field: dict[str, Any]) -> None:
    assert only_field(spec) == {"id": "x", "label": "X", **field}


def test_titles_descriptions_and_required() -> None:
    field = only_field(
        {"type": "string", "title": "Your city", "description": "Where to ship."},
        name="city",
        required=True,
    )
    assert field == {
        "id": "city",
        "label": "Your city",
        "helperText": "Where to ship.",
        "required": True,
        "type": "text",
    }
    assert only_field({"type": "string"}, name="shipping_address")["label"] == "Shipping address"


def test_a_default_the_field_refuses_is_left_out() -> None:
    assert "default" not in only_field({"type": "string", "format": "email", "default": "nope"})
    assert "default" not in only_field({"type": "string", "enum": ["a", "b"], "default": "z"})


def test_ids_that_break_the_pattern_are_mapped_and_back() -> None:
    asked = form_of(
        {
            "First Name": {"type": "string"},
            "first_name": {"type": "string"},
            "Size": {"type": "string", "enum": ["X Large", "small"]},
            "_x": {"type": "boolean"},
        }
    )
    ids = [f["id"] for f in asked.input["fields"]]
    assert ids == ["first_name", "first_name-2", "size", "x"]
    assert asked.input["fields"][2]["options"] == [
        {"id": "x_large", "label": "X Large"},
        {"id": "small", "label": "small"},
    ]
    answer = {
        "action": "accept",
        "content": {
            "values": {"first_name": "Ada", "first_name-2": "  ", "size": "x_large", "x": False}
        },
    }
    assert validate_ask_response("form", asked.input, answer) == []
    # Blank optional fields are left out, never null; options go back to the server's values.
    assert elicit_result(asked.form, answer) == {
        "action": "accept",
        "content": {"First Name": "Ada", "Size": "X Large", "_x": False},
    }
    # The way back survives being stored.
    again = ElicitationForm.from_json(asked.form.to_json())
    assert elicit_result(again, answer) == elicit_result(asked.form, answer)


def test_valid_id() -> None:
    taken: set[str] = set()
    assert valid_id("ok", taken) == "ok"
    assert valid_id("ok", taken) == "ok-2"
    assert valid_id("Ünïcode!", taken) == "n_code_"
    assert valid_id("***", taken) == "field"
    assert len(valid_id("A" * 90, taken)) == 64


def test_decline_cancel_and_integers() -> None:
    asked = form_of({"n": {"type": "integer"}})
    assert elicit_result(asked.form, {"action": "decline"}) == {"action": "decline"}
    assert elicit_result(asked.form, {"action": "cancel", "reason": "x"}) == {"action": "cancel"}
    assert elicit_result(asked.form, {"action": "accept", "content": {"values": {"n": 3.0}}}) == {
        "action": "accept",
        "content": {"n": 3},
    }


def test_multiselect_bounds_are_checked_on_the_answer() -> None:
    asked = form_of(
        {"t": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 2, "maxItems": 2}}
    )
    few = {"action": "accept", "content": {"values": {"t": ["a"]}}}
    many = {"action": "accept", "content": {"values": {"t": ["a", "b", "c"]}}}
    assert [e.code for e in answer_errors(asked.form, few)] == ["TOO_SHORT"]
    assert [e.code for e in answer_errors(asked.form, many)] == ["TOO_LONG"]
    assert answer_errors(asked.form, {"action": "accept", "content": {"values": {}}}) == []


def test_an_empty_schema_is_a_confirm() -> None:
    request = ElicitationRequest(mode="form", message="Go?", server="Shop", requested_schema={})
    asked = to_ask(request)
    assert isinstance(asked, ElicitationAsk)
    assert asked.kind == "confirm"
    assert validate_ask_input("confirm", asked.input) == []
    yes = {"action": "accept", "content": {"confirmed": True}}
    no = {"action": "accept", "content": {"confirmed": False}}
    assert elicit_result(asked.form, yes) == {"action": "accept", "content": {}}
    assert elicit_result(asked.form, no) == {"action": "decline"}


def test_url_mode_is_a_confirm_of_consent() -> None:
    request = ElicitationRequest(
        mode="url", message="Sign in.", server="Shop", url="https://shop.example/sign-in"
    )
    asked = to_ask(request)
    assert isinstance(asked, ElicitationAsk)
    assert asked.kind == "confirm"
    assert asked.public == {"mode": "url", "server": "Shop", "url": "https://shop.example/sign-in"}
    assert validate_ask_input("confirm", asked.input) == []
    yes = {"action": "accept", "content": {"confirmed": True}}
    assert elicit_result(asked.form, yes) == {"action": "accept"}


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({"a": {"type": "object", "properties": {}}}, "holds fields of its own"),
        ({"a": {"type": "null"}}, "has the type 'null'"),
        ({"a": {"type": "array", "items": {"type": "string"}}}, "a list of values"),
        ({"a": {"type": "string", "enum": ["only"]}}, "offers 1 choices"),
        ({"a": {"type": "string", "enum": [1, 2]}}, "are not all text"),
        ({f"f{i}": {"type": "string"} for i in range(33)}, "it asks for 33 fields"),
        ({"a": {"type": "string", "minLength": 30, "maxLength": 3}}, "minLength"),
    ],
)
def test_schemas_no_form_holds(properties: dict[str, Any], reason: str) -> None:
    request = ElicitationRequest(
        mode="form",
        message="?",
        server="Shop",
        requested_schema={"type": "object", "properties": properties},
    )
    asked = to_ask(request)
    assert isinstance(asked, Unshowable)
    assert reason in asked.reason


def test_many_fields_are_consecutive_forms() -> None:
    asked = form_of({f"f{i}": {"type": "string"} for i in range(10)}, required=["f9"])
    assert asked.input["title"] == "Shop asks (1 of 2)"
    assert asked.input["submitLabel"] == "Next"
    assert len(asked.input["fields"]) == 8
    first = {"action": "accept", "content": {"values": {"f0": "zero"}}}
    page, rest = asked.form.next_form(elicit_result(asked.form, first)["content"])
    assert page["title"] == "Shop asks (2 of 2)"
    assert [f["id"] for f in page["fields"]] == ["f8", "f9"]
    assert page["fields"][1]["required"] is True
    last = {"action": "accept", "content": {"values": {"f9": "nine"}}}
    assert rest.later == ()
    assert elicit_result(rest, last) == {
        "action": "accept",
        "content": {"f0": "zero", "f9": "nine"},
    }
