"""Compiling action sets: the reference example compiles, and every CONFIG_* case is reported
with its code and its path in the file."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from action_helpers import ENV, SECRET, dump, reference_config, reference_yaml

from handrail.actions import (
    ActionConfigError,
    ActionSet,
    load_action_set,
)
from handrail.errors import ConfigError

Config = dict[str, Any]


def compiled(config: Config | str, env: dict[str, str] | None = None) -> ActionSet:
    text = config if isinstance(config, str) else dump(config)
    return load_action_set(text, env=ENV if env is None else env)


def problems(config: Config | str, env: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """The (code, path) of every problem of `config`; fails when it compiles."""
    text = config if isinstance(config, str) else dump(config)
    with pytest.raises(ActionConfigError) as info:
        load_action_set(text, env=ENV if env is None else env)
    return [(p.code, p.path) for p in info.value.problems]


def changed(change: Callable[[Config], Any]) -> Config:
    """The reference example with `change` applied (tools[0] is find_slots, tools[1]
    book_slot)."""
    config = copy.deepcopy(reference_config())
    change(config)
    return config


def book(config: Config) -> Config:
    tool = config["tools"][1]
    assert tool["name"] == "book_slot"
    return tool  # type: ignore[no-any-return]


def find(config: Config) -> Config:
    tool = config["tools"][0]
    assert tool["name"] == "find_slots"
    return tool  # type: ignore[no-any-return]


def only(found: list[tuple[str, str]], code: str, path: str) -> None:
    assert found == [(code, path)], found


# --------------------------------------------------------------------------------- valid


def test_the_reference_example_compiles() -> None:
    action_set = compiled(reference_yaml())
    assert action_set.id == "booking"
    assert action_set.base_url == "http://127.0.0.1:8000/demo/booking"
    assert action_set.trusted is True
    assert action_set.auth.type == "api-key"
    assert action_set.auth.header == "X-Api-Key"
    assert list(action_set.tools) == ["find_slots", "book_slot"]
    find_slots, book_slot = action_set.tools.values()
    assert find_slots.safety_class == "read-only"
    assert not find_slots.needs_confirmation
    assert book_slot.safety_class == "mutating"
    assert book_slot.needs_confirmation
    assert book_slot.confirmation.ttl_ms == 30000
    assert book_slot.transport.retry_attempts == 3
    assert book_slot.transport.idempotency_header == "Idempotency-Key"
    assert book_slot.recovery is not None
    assert book_slot.recovery.dependency == "availability"
    assert book_slot.recovery.statuses == (409, 410)
    dep = book_slot.dependencies["availability"]
    assert dep.tool == "find_slots"
    assert dep.ttl_ms == 60000
    assert dep.select is not None
    assert dep.select.sensitive == (("token",),)
    assert SECRET not in repr(action_set)


def test_defaults() -> None:
    config = changed(lambda c: [book(c).pop("transport"), book(c)["behavior"].pop("recovery")])
    config["tools"][1]["behavior"]["confirmation"] = {"required": True}
    book_slot = compiled(config).tools["book_slot"]
    transport = book_slot.transport
    assert (transport.timeout_ms, transport.max_response_bytes) == (8000, 1_048_576)
    assert (transport.retry_attempts, transport.backoff_ms, transport.multiplier) == (1, 500, 2.0)
    assert transport.idempotency_header is None
    assert book_slot.confirmation.ttl_ms == 300000
    assert book_slot.confirmation.preview is None
    assert book_slot.recovery is None
    assert compiled(config).trusted is True
    del config["trusted"]
    assert compiled(config).trusted is False


def test_effects_map_to_safety_classes() -> None:
    config = changed(lambda c: book(c)["behavior"].update(effect="destructive"))
    tool = compiled(config).tools["book_slot"]
    assert tool.safety_class == "consequential"
    assert tool.needs_confirmation


def test_a_file_path_compiles_and_names_its_source(tmp_path: Path) -> None:
    file = tmp_path / "booking.yaml"
    file.write_text(reference_yaml(), encoding="utf-8")
    assert compiled(str(file)).source == str(file)
    assert load_action_set(file, env=ENV).source == str(file)


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read") as info:
        load_action_set(tmp_path / "missing.yaml", env=ENV)
    assert not isinstance(info.value, ActionConfigError)


def test_plain_scalars_follow_yaml_1_2() -> None:
    config = changed(lambda c: book(c)["request"]["body"].update(extra="placeholder"))
    text = dump(config).replace("extra: placeholder", "extra: {a: 12:30, b: 2024-05-01, c: no}")
    body = compiled(text).tools["book_slot"].body
    assert body["extra"] == {"a": "12:30", "b": "2024-05-01", "c": "no"}


def test_the_fingerprint_changes_with_the_config() -> None:
    one = compiled(reference_yaml())
    again = compiled(reference_yaml())
    assert one.tools["book_slot"].fingerprint == again.tools["book_slot"].fingerprint
    assert one.fingerprint("book_slot") == again.fingerprint("book_slot")
    other = compiled(changed(lambda c: book(c)["request"].update(path="/bookings/v2")))
    assert other.tools["book_slot"].fingerprint != one.tools["book_slot"].fingerprint
    moved = compiled(changed(lambda c: c.update(base_url="https://api.example.com")))
    assert moved.tools["book_slot"].fingerprint == one.tools["book_slot"].fingerprint
    assert moved.fingerprint("book_slot") != one.fingerprint("book_slot")
    dep_changed = compiled(changed(lambda c: find(c)["request"].update(path="/free")))
    assert dep_changed.fingerprint("book_slot") != one.fingerprint("book_slot")


# --------------------------------------------------------------------------------- reporting


def test_every_problem_is_reported_with_its_line_and_one_per_line() -> None:
    def change(c: Config) -> None:
        c["colour"] = "blue"
        book(c)["behavior"]["effect"] = "read-only"
        book(c)["behavior"]["confirmation"]["preview"]["token"] = "$.deps.availability.token"

    with pytest.raises(ActionConfigError) as info:
        compiled(changed(change))
    error = info.value
    assert [(p.code, p.path) for p in error.problems] == [
        ("CONFIG_SCHEMA_INVALID", "colour"),
        ("CONFIG_EFFECT_INVALID", "tools[1].behavior.effect"),
        ("CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation"),
        ("CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.token"),
    ]
    lines = str(error).splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("colour: CONFIG_SCHEMA_INVALID: unknown key 'colour'")
    assert all(p.line is not None for p in error.problems)
    assert lines[0].endswith(f"(line {error.problems[0].line})")
    assert error.codes == [p.code for p in error.problems]


def test_lines_point_into_the_file() -> None:
    text = reference_yaml().replace("effect: side-effect", "effect: sideeffect")
    with pytest.raises(ActionConfigError) as info:
        compiled(text)
    (problem,) = [p for p in info.value.problems if p.code == "CONFIG_EFFECT_INVALID"]
    assert "effect: sideeffect" in text.splitlines()[problem.line - 1]  # type: ignore[operator]


# ------------------------------------------------------------------------ CONFIG_SCHEMA_INVALID


def test_schema_yaml_that_does_not_parse() -> None:
    with pytest.raises(ActionConfigError) as info:
        compiled("id: booking\ntools: [\n")
    (problem,) = info.value.problems
    assert (problem.code, problem.path) == ("CONFIG_SCHEMA_INVALID", "")
    assert "does not parse" in problem.message
    assert problem.line is not None


def test_schema_an_empty_file() -> None:
    only(problems("\n"), "CONFIG_SCHEMA_INVALID", "")


def test_schema_the_root_is_not_a_mapping() -> None:
    only(problems("- a\n- b\n"), "CONFIG_SCHEMA_INVALID", "")


def test_schema_unknown_top_level_key() -> None:
    only(problems(changed(lambda c: c.update(colour="blue"))), "CONFIG_SCHEMA_INVALID", "colour")


def test_schema_unknown_tool_key() -> None:
    found = problems(changed(lambda c: book(c).update(behaviour={})))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].behaviour")


def test_schema_unknown_nested_key() -> None:
    found = problems(changed(lambda c: book(c)["transport"]["retry"].update(tries=2)))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].transport.retry.tries")


def test_schema_unknown_select_key() -> None:
    def change(c: Config) -> None:
        book(c)["dependencies"]["availability"]["select"]["order"] = "time"

    only(
        problems(changed(change)),
        "CONFIG_SCHEMA_INVALID",
        "tools[1].dependencies.availability.select.order",
    )


def test_schema_repeated_key() -> None:
    text = reference_yaml().replace("name: Example booking", "name: Example booking\nname: Again")
    only(problems(text), "CONFIG_SCHEMA_INVALID", "name")


def test_schema_wrong_type() -> None:
    only(problems(changed(lambda c: c.update(trusted="yes"))), "CONFIG_SCHEMA_INVALID", "trusted")


def test_schema_missing_required_top_level_key() -> None:
    only(problems(changed(lambda c: c.pop("id"))), "CONFIG_SCHEMA_INVALID", "id")


def test_schema_missing_required_tool_key() -> None:
    found = problems(changed(lambda c: find(c).pop("request")))
    assert ("CONFIG_SCHEMA_INVALID", "tools[0].request") in found


def test_schema_missing_method() -> None:
    found = problems(changed(lambda c: book(c)["request"].pop("method")))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].request.method")


def test_schema_unknown_method() -> None:
    found = problems(changed(lambda c: find(c)["request"].update(method="FETCH")))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[0].request.method")


def test_schema_bad_set_id() -> None:
    only(problems(changed(lambda c: c.update(id="Booking API"))), "CONFIG_SCHEMA_INVALID", "id")


def test_schema_bad_tool_name() -> None:
    found = problems(changed(lambda c: find(c).update(name="find slots")))
    assert ("CONFIG_SCHEMA_INVALID", "tools[0].name") in found


def test_schema_reserved_tool_name() -> None:
    def change(c: Config) -> None:
        c["tools"].append({**copy.deepcopy(find(c)), "name": "ask_choice"})

    only(problems(changed(change)), "CONFIG_SCHEMA_INVALID", "tools[2].name")


def test_schema_no_tools() -> None:
    only(problems(changed(lambda c: c.update(tools=[]))), "CONFIG_SCHEMA_INVALID", "tools")


@pytest.mark.parametrize("attempts", [0, 6, "3", 2.5])
def test_schema_retry_attempts_out_of_range(attempts: Any) -> None:
    found = problems(changed(lambda c: book(c)["transport"]["retry"].update(attempts=attempts)))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].transport.retry.attempts")


def test_schema_retry_attempts_at_the_bounds_compile() -> None:
    for attempts in (1, 5):
        config = changed(lambda c, n=attempts: book(c)["transport"]["retry"].update(attempts=n))
        assert compiled(config).tools["book_slot"].transport.retry_attempts == attempts


def test_schema_bad_timeout() -> None:
    found = problems(changed(lambda c: book(c)["transport"].update(timeout_ms=0)))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].transport.timeout_ms")


def test_schema_unknown_idempotency_source() -> None:
    found = problems(changed(lambda c: book(c)["transport"]["idempotency"].update(source="input")))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].transport.idempotency.source")


def test_schema_input_is_not_an_object_schema() -> None:
    found = problems(changed(lambda c: find(c)["input"].update(type="array")))
    assert ("CONFIG_SCHEMA_INVALID", "tools[0].input.type") in found


def test_schema_unsupported_input_schema_keyword() -> None:
    found = problems(changed(lambda c: find(c)["input"].update(anyOf=[{"type": "object"}])))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[0].input.anyOf")


def test_schema_required_input_field_that_is_not_a_property() -> None:
    found = problems(changed(lambda c: find(c)["input"]["required"].append("room")))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[0].input.required")


def test_schema_a_body_on_a_get() -> None:
    found = problems(changed(lambda c: find(c)["request"].update(body={"date": "$.input.date"})))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[0].request.body")


def test_schema_a_literal_that_is_not_json() -> None:
    text = dump(changed(lambda c: book(c)["request"]["body"].update(blob="X"))).replace(
        "blob: X", "blob: !!binary aGVsbG8="
    )
    only(problems(text), "CONFIG_SCHEMA_INVALID", "tools[1].request.body.blob")


def test_schema_recovery_status_out_of_range() -> None:
    found = problems(changed(lambda c: book(c)["behavior"]["recovery"].update(statuses=[200])))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].behavior.recovery.statuses")


def test_schema_reserved_header() -> None:
    found = problems(changed(lambda c: book(c)["request"].update(headers={"Host": "x"})))
    only(found, "CONFIG_SCHEMA_INVALID", "tools[1].request.headers.Host")


# --------------------------------------------------------------------------------- the others


def test_tool_duplicate() -> None:
    def change(c: Config) -> None:
        c["tools"].append(copy.deepcopy(find(c)))

    only(problems(changed(change)), "CONFIG_TOOL_DUPLICATE", "tools[2].name")


def test_auth_unknown_type() -> None:
    found = problems(changed(lambda c: c["auth"].update(type="oauth")))
    only(found, "CONFIG_AUTH_INVALID", "auth.type")


def test_auth_api_key_without_header() -> None:
    only(problems(changed(lambda c: c["auth"].pop("header"))), "CONFIG_AUTH_INVALID", "auth.header")


def test_auth_api_key_without_secret() -> None:
    found = problems(changed(lambda c: c["auth"].pop("secret_env")))
    only(found, "CONFIG_AUTH_INVALID", "auth.secret_env")


def test_auth_none_with_a_header() -> None:
    found = problems(changed(lambda c: c["auth"].update(type="none", secret_env=None)))
    assert ("CONFIG_AUTH_INVALID", "auth.header") in found


def test_auth_session_takes_a_cookie_not_a_header() -> None:
    found = problems(changed(lambda c: c["auth"].update(type="session")))
    only(found, "CONFIG_AUTH_INVALID", "auth.header")
    config = changed(lambda c: c.update(auth={"type": "session", "secret_env": "BOOKING_API_KEY"}))
    assert compiled(config).auth.secret_header == "Authorization"
    config["auth"]["cookie"] = "sid"
    assert compiled(config).auth.secret_header == "Cookie"


def test_auth_none_compiles() -> None:
    config = changed(lambda c: c.update(auth={"type": "none"}))
    assert compiled(config, env={}).auth.secret_header is None
    assert compiled(changed(lambda c: c.pop("auth")), env={}).auth.type == "none"


def test_secret_missing_for_auth() -> None:
    only(problems(reference_yaml(), env={}), "CONFIG_SECRET_MISSING", "auth.secret_env")


def test_secret_missing_for_a_header() -> None:
    def change(c: Config) -> None:
        book(c)["request"]["headers"] = {"X-Trace": {"source": "secret", "env": "TRACE_TOKEN"}}

    found = problems(changed(change))
    only(found, "CONFIG_SECRET_MISSING", "tools[1].request.headers.X-Trace")
    assert compiled(changed(change), env={**ENV, "TRACE_TOKEN": "t"})


def test_url_base_url_not_http() -> None:
    found = problems(changed(lambda c: c.update(base_url="ftp://example.com/")))
    only(found, "CONFIG_URL_INVALID", "base_url")


def test_url_base_url_with_credentials() -> None:
    found = problems(changed(lambda c: c.update(base_url="https://me:pw@example.com/")))
    only(found, "CONFIG_URL_INVALID", "base_url")


@pytest.mark.parametrize("path", ["bookings", "http://evil.example/x", "//evil.example/x"])
def test_url_path_not_relative(path: str) -> None:
    found = problems(changed(lambda c: book(c)["request"].update(path=path)))
    only(found, "CONFIG_URL_INVALID", "tools[1].request.path")


def test_url_path_with_dot_segments() -> None:
    found = problems(changed(lambda c: book(c)["request"].update(path="/a/../admin")))
    only(found, "CONFIG_URL_INVALID", "tools[1].request.path")


def test_mapping_unknown_input_field() -> None:
    found = problems(changed(lambda c: book(c)["request"]["body"].update(notes="$.input.note")))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.body.notes")


def test_mapping_unknown_dependency() -> None:
    found = problems(changed(lambda c: book(c)["request"]["body"].update(slot_token="$.deps.x.t")))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.body.slot_token")


def test_mapping_unknown_root() -> None:
    found = problems(changed(lambda c: book(c)["request"]["body"].update(date="$.date")))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.body.date")


def test_mapping_unknown_source() -> None:
    found = problems(changed(lambda c: book(c)["request"]["body"].update(date={"source": "magic"})))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.body.date")


def test_mapping_secret_outside_headers() -> None:
    def change(c: Config) -> None:
        book(c)["request"]["body"]["key"] = {"source": "secret", "env": "BOOKING_API_KEY"}

    only(problems(changed(change)), "CONFIG_MAPPING_INVALID", "tools[1].request.body.key")


def test_mapping_selection_fact_in_a_request() -> None:
    def change(c: Config) -> None:
        book(c)["request"]["body"]["time"] = {"source": "selection", "path": "$.time"}

    only(problems(changed(change)), "CONFIG_MAPPING_INVALID", "tools[1].request.body.time")


def test_mapping_item_outside_select() -> None:
    found = problems(changed(lambda c: book(c)["request"]["body"].update(time="$.item.time")))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.body.time")


def test_mapping_placeholder_without_a_value() -> None:
    found = problems(changed(lambda c: book(c)["request"].update(path="/rooms/{room}/bookings")))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.path")


def test_mapping_path_param_without_a_placeholder() -> None:
    found = problems(changed(lambda c: book(c)["request"].update(path_params={"room": "a"})))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].request.path_params.room")


def test_mapping_dependency_input_the_tool_does_not_take() -> None:
    def change(c: Config) -> None:
        book(c)["dependencies"]["availability"]["input"]["room"] = "garden"

    found = problems(changed(change))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].dependencies.availability.input.room")


def test_mapping_label_reading_a_sensitive_field() -> None:
    def change(c: Config) -> None:
        book(c)["dependencies"]["availability"]["select"]["label"] = "$.item.token"

    found = problems(changed(change))
    only(found, "CONFIG_MAPPING_INVALID", "tools[1].dependencies.availability.select.label")


def test_effect_write_declared_read_only() -> None:
    found = problems(changed(lambda c: book(c)["behavior"].update(effect="read-only")))
    assert ("CONFIG_EFFECT_INVALID", "tools[1].behavior.effect") in found


def test_effect_default_is_read_only_so_a_post_without_behavior_is_refused() -> None:
    found = problems(changed(lambda c: book(c).pop("behavior")))
    only(found, "CONFIG_EFFECT_INVALID", "tools[1].behavior.effect")


def test_effect_unknown() -> None:
    found = problems(changed(lambda c: book(c)["behavior"].update(effect="write")))
    only(found, "CONFIG_EFFECT_INVALID", "tools[1].behavior.effect")


def test_confirmation_missing_for_a_side_effect() -> None:
    found = problems(changed(lambda c: book(c)["behavior"].pop("confirmation")))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation")


def test_confirmation_not_required_for_a_side_effect() -> None:
    found = problems(changed(lambda c: book(c)["behavior"]["confirmation"].update(required=False)))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.required")


def test_confirmation_on_a_read_only_tool() -> None:
    found = problems(changed(lambda c: find(c)["behavior"].update(confirmation={"required": True})))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[0].behavior.confirmation")


@pytest.mark.parametrize("ttl", [0, -5, "30s", 86_400_001])
def test_confirmation_bad_ttl(ttl: Any) -> None:
    found = problems(changed(lambda c: book(c)["behavior"]["confirmation"].update(ttl_ms=ttl)))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.ttl_ms")


def test_confirmation_preview_reads_a_secret() -> None:
    def change(c: Config) -> None:
        preview = book(c)["behavior"]["confirmation"]["preview"]
        preview["key"] = {"source": "secret", "env": "BOOKING_API_KEY"}

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.key")


def test_confirmation_preview_reads_a_sensitive_field() -> None:
    def change(c: Config) -> None:
        book(c)["behavior"]["confirmation"]["preview"]["token"] = "$.deps.availability.token"

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.token")


def test_confirmation_preview_reads_the_whole_candidate_with_a_sensitive_field() -> None:
    def change(c: Config) -> None:
        book(c)["behavior"]["confirmation"]["preview"]["slot"] = "$.deps.availability"

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.slot")


def test_confirmation_preview_reads_a_generated_value() -> None:
    def change(c: Config) -> None:
        book(c)["behavior"]["confirmation"]["preview"]["ref"] = {"source": "generated"}

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.ref")


def test_confirmation_preview_reads_an_undeclared_selection_fact() -> None:
    def change(c: Config) -> None:
        preview = book(c)["behavior"]["confirmation"]["preview"]
        preview["room"] = {"source": "selection", "path": "$.room"}

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.room")


def test_confirmation_preview_reads_a_field_filled_from_a_sensitive_one() -> None:
    def change(c: Config) -> None:
        tool = book(c)
        tool["input"]["properties"]["slot_token"] = {"type": "string"}
        tool["dependencies"]["availability"]["fills"] = {"slot_token": "$.item.token"}
        tool["behavior"]["confirmation"]["preview"]["slot"] = "$.input.slot_token"

    found = problems(changed(change))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview.slot")


def test_confirmation_empty_preview() -> None:
    found = problems(changed(lambda c: book(c)["behavior"]["confirmation"].update(preview={})))
    only(found, "CONFIG_CONFIRMATION_INVALID", "tools[1].behavior.confirmation.preview")


def test_dependency_unknown_tool() -> None:
    found = problems(changed(lambda c: book(c)["dependencies"]["availability"].update(tool="x")))
    only(found, "CONFIG_DEPENDENCY_INVALID", "tools[1].dependencies.availability.tool")


def test_dependency_on_a_tool_that_is_not_read_only() -> None:
    def change(c: Config) -> None:
        cancel = copy.deepcopy(book(c))
        cancel["name"] = "rebook"
        cancel["dependencies"] = {
            "booking": {
                "tool": "book_slot",
                "input": {"date": "$.input.date", "time": "$.input.time"},
            }
        }
        cancel["behavior"].pop("recovery")
        cancel["request"]["body"]["slot_token"] = "$.deps.booking.id"
        c["tools"].append(cancel)

    found = problems(changed(change))
    assert ("CONFIG_DEPENDENCY_INVALID", "tools[2].dependencies.booking.tool") in found


def test_dependency_on_a_tool_with_dependencies_of_its_own() -> None:
    def change(c: Config) -> None:
        find(c)["dependencies"] = {"first": {"tool": "list_days"}}
        c["tools"].append(
            {
                "name": "list_days",
                "description": "Days.",
                "request": {"method": "GET", "path": "/days"},
            }
        )

    found = problems(changed(change))
    only(found, "CONFIG_DEPENDENCY_INVALID", "tools[1].dependencies.availability.tool")


def test_dependency_recovery_names_an_undeclared_dependency() -> None:
    def change(c: Config) -> None:
        book(c)["behavior"]["recovery"]["refresh_dependency"] = "slots"

    found = problems(changed(change))
    only(found, "CONFIG_DEPENDENCY_INVALID", "tools[1].behavior.recovery.refresh_dependency")


def test_dependency_when_missing_without_fills() -> None:
    found = problems(
        changed(lambda c: book(c)["dependencies"]["availability"].update(when="missing"))
    )
    assert ("CONFIG_DEPENDENCY_INVALID", "tools[1].dependencies.availability.when") in found


def test_dependency_fills_a_required_field() -> None:
    def change(c: Config) -> None:
        book(c)["dependencies"]["availability"]["fills"] = {"time": "$.item.time"}

    found = problems(changed(change))
    only(found, "CONFIG_DEPENDENCY_INVALID", "tools[1].dependencies.availability.fills.time")


def test_dependency_bad_ttl() -> None:
    found = problems(changed(lambda c: book(c)["dependencies"]["availability"].update(ttl_ms=0)))
    only(found, "CONFIG_DEPENDENCY_INVALID", "tools[1].dependencies.availability.ttl_ms")


def test_dependency_cycle_between_dependencies() -> None:
    def change(c: Config) -> None:
        deps = book(c)["dependencies"]
        deps["availability"]["input"]["date"] = "$.deps.other.date"
        deps["other"] = {"tool": "find_slots", "input": {"date": "$.deps.availability.date"}}

    found = problems(changed(change))
    assert [code for code, _ in found] == ["CONFIG_DEPENDENCY_CYCLE"]
    assert found[0][1].startswith("tools[1].dependencies.")


def test_dependency_cycle_a_tool_on_itself() -> None:
    def change(c: Config) -> None:
        find(c)["dependencies"] = {"me": {"tool": "find_slots", "input": {"date": "$.input.date"}}}

    found = problems(changed(change))
    assert ("CONFIG_DEPENDENCY_CYCLE", "tools[0].dependencies.me.tool") in found


def test_dependencies_compile_in_the_order_they_read_each_other() -> None:
    def change(c: Config) -> None:
        deps = book(c)["dependencies"]
        deps["later"] = deps.pop("availability")
        deps["later"]["input"]["date"] = "$.deps.first.date"
        deps = {
            "later": deps["later"],
            "first": {"tool": "find_slots", "input": {"date": "$.input.date"}},
        }
        book(c)["dependencies"] = deps
        book(c)["request"]["body"]["slot_token"] = "$.deps.later.token"
        book(c)["behavior"]["recovery"]["refresh_dependency"] = "later"
        book(c)["behavior"]["confirmation"]["preview"]["time"] = "$.input.time"

    tool = compiled(changed(change)).tools["book_slot"]
    assert list(tool.dependencies) == ["first", "later"]
