"""System prompt text for asks: the asks prompt, the compact line and the per-kind section."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

import pytest

from handrail.asks import prompts
from handrail.asks.limits import (
    ASK_FILE_ACCEPT_MIME_TYPES,
    ASK_KINDS,
    ASK_LIMITS,
    COMPACT_ASK_KINDS,
    flat_ask_limits,
)
from handrail.asks.prompts import (
    ASKS_SYSTEM_PROMPT,
    COMPACT_SURFACE_SYSTEM_PROMPT,
    ask_prompt_section,
)

NON_COMPACT_KINDS = [kind for kind in ASK_KINDS if kind not in COMPACT_ASK_KINDS]
ALL_KIND_SETS = [
    list(combo)
    for size in range(1, len(ASK_KINDS) + 1)
    for combo in itertools.combinations(ASK_KINDS, size)
]


def _numbers(text: str) -> list[int]:
    return [int(match) for match in re.findall(r"\d+", text)]


def _limit_numbers(limits: Mapping[str, Any]) -> set[int]:
    values: set[int] = set()
    for value in limits.values():
        if isinstance(value, Mapping):
            values |= _limit_numbers(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            values.add(value)
    return values


# --- ASKS_SYSTEM_PROMPT and COMPACT_SURFACE_SYSTEM_PROMPT


@pytest.mark.parametrize(
    "phrase",
    [
        "only when the answer changes what you do",
        "one question at a time",
        "at most one ask tool in a step",
        "in the ask's prompt",
        "is dropped",
        "plain text, without markdown or links",
        "deletes data",
        "sends something on the user's behalf",
        "spends money",
        "cannot be undone",
        'only after the answer {"confirmed": true}',
        '"action": "decline"',
        '"action": "cancel"',
        "do not proceed",
        "do not ask the same question again",
    ],
)
def test_asks_system_prompt_says(phrase: str) -> None:
    assert phrase in ASKS_SYSTEM_PROMPT


def test_asks_system_prompt_is_plain_lines_without_numbers() -> None:
    assert _numbers(ASKS_SYSTEM_PROMPT) == []
    assert "\n\n" not in ASKS_SYSTEM_PROMPT
    assert ASKS_SYSTEM_PROMPT.strip() == ASKS_SYSTEM_PROMPT
    assert all(line == line.rstrip() for line in ASKS_SYSTEM_PROMPT.splitlines())


def test_compact_surface_system_prompt_is_exact() -> None:
    assert COMPACT_SURFACE_SYSTEM_PROMPT == (
        "The user is on a small screen, such as a watch. Keep each reply to at most two short "
        "sentences, and ask only yes-or-no questions or questions with up to three short options."
    )


# --- The section: which kinds


@pytest.mark.parametrize("surface", ["full", "compact"])
def test_no_kinds_give_no_section(surface: str) -> None:
    assert ask_prompt_section([], surface=surface) == ""


def test_compact_without_a_compact_kind_gives_no_section() -> None:
    assert ask_prompt_section(NON_COMPACT_KINDS, surface="compact") == ""


def test_surface_defaults_to_full() -> None:
    assert ask_prompt_section(ASK_KINDS) == ask_prompt_section(ASK_KINDS, surface="full")


@pytest.mark.parametrize("kind", ASK_KINDS)
def test_full_section_for_one_kind_names_only_its_tool(kind: str) -> None:
    section = ask_prompt_section([kind])
    assert section.startswith(f"Ask tools you can call: ask_{kind}.\n\nRules for every ask:\n")
    assert f"\n\nask_{kind}: " in section
    assert "Use it " in section.split(f"\n\nask_{kind}: ", 1)[1]
    for other in ASK_KINDS:
        if other != kind:
            assert f"ask_{other}" not in section


@pytest.mark.parametrize("kind", COMPACT_ASK_KINDS)
def test_compact_section_for_one_kind_names_only_its_tool(kind: str) -> None:
    section = ask_prompt_section([kind], surface="compact")
    assert section.startswith(f"Ask tools you can call: ask_{kind}.\n\n")
    for other in ASK_KINDS:
        if other != kind:
            assert f"ask_{other}" not in section


def test_kinds_come_in_protocol_order_each_once() -> None:
    section = ask_prompt_section(["files", "choice", "form", "choice", "confirm", "markdown"])
    assert section.startswith(
        "Ask tools you can call: ask_choice, ask_confirm, ask_markdown, ask_form, ask_files.\n\n"
    )
    headings = re.findall(r"^(ask_\w+): ", section, flags=re.MULTILINE)
    assert headings == [f"ask_{kind}" for kind in ASK_KINDS]
    assert section == ask_prompt_section(reversed(ASK_KINDS))


def test_kinds_may_be_any_iterable() -> None:
    assert ask_prompt_section(kind for kind in ["confirm"]) == ask_prompt_section(("confirm",))


@pytest.mark.parametrize("kinds", ALL_KIND_SETS, ids=lambda kinds: "+".join(kinds))
def test_compact_section_offers_only_choice_and_confirm(kinds: list[str]) -> None:
    section = ask_prompt_section(kinds, surface="compact")
    offered = [kind for kind in COMPACT_ASK_KINDS if kind in kinds]
    if not offered:
        assert section == ""
        return
    tools = ", ".join(f"ask_{kind}" for kind in offered)
    assert section.startswith(f"Ask tools you can call: {tools}.\n\n")
    for word in ("markdown", "form", "forms", "file", "files", "upload"):
        assert re.search(rf"\b{word}\b", section, flags=re.IGNORECASE) is None, word
    for kind in NON_COMPACT_KINDS:
        assert f"ask_{kind}" not in section


def test_compact_section_is_the_compact_subset_of_any_request() -> None:
    assert ask_prompt_section(ASK_KINDS, surface="compact") == ask_prompt_section(
        COMPACT_ASK_KINDS, surface="compact"
    )


# --- The section: what it says


def test_every_section_blocks_are_separated_by_one_blank_line() -> None:
    for surface in ("full", "compact"):
        section = ask_prompt_section(ASK_KINDS, surface=surface)
        assert "\n\n\n" not in section
        assert section == section.strip()
        assert all(line == line.rstrip() for line in section.splitlines())


def test_full_section_states_the_limits_of_each_kind() -> None:
    limits = ASK_LIMITS
    choice, card, files, form, markdown = (
        limits["choice"],
        limits["simpleCard"],
        limits["files"],
        limits["form"],
        limits["markdown"],
    )
    section = ask_prompt_section(ASK_KINDS)
    for expected in [
        f"at most {limits['promptMaxLength']} characters",
        f"at most {limits['titleMaxLength']} characters",
        f"at most {limits['submitLabelMaxLength']} characters",
        f"options: {choice['optionsMin']} to {choice['optionsMax']} items",
        f"id: at most {choice['optionIdMaxLength']} lowercase letters",
        f"label: at most {choice['optionLabelMaxLength']} characters",
        f"at most {choice['optionDescriptionMaxLength']} characters",
        f"at most {choice['otherMaxLength']} characters",
        f"at most {card['buttonsMax']} options whose labels have at most "
        f"{card['buttonLabelMaxLength']} characters",
        f"at most {limits['confirm']['labelMaxLength']} characters each",
        f"at most {markdown['maxLength']} characters",
        f"at most {markdown['placeholderMaxLength']} characters",
        f"fields: {form['fieldsMin']} to {form['fieldsMax']} items",
        f"label: at most {form['labelMaxLength']} characters",
        f"helperText: optional, at most {form['helperTextMaxLength']} characters",
        f"at most {form['textMaxLength']} for text and {form['textareaMaxLength']} for textarea",
        f"from {form['phoneDigitsMin']} to {form['phoneDigitsMax']} digits",
        f"from {files['minFiles']} to {files['maxFiles']}",
        f"first {files['textMaxBytes']} bytes",
    ]:
        assert expected in section, expected


def test_files_section_lists_every_accept_value_with_its_types() -> None:
    section = ask_prompt_section(["files"])
    for value, mime_types in ASK_FILE_ACCEPT_MIME_TYPES.items():
        assert f'"{value}" ({", ".join(mime_types)})' in section


def test_full_section_tells_the_model_about_risky_calls_and_answers() -> None:
    section = ask_prompt_section(["confirm"])
    assert "deletes data, sends something on the user's behalf, spends money" in section
    assert 'only after {"confirmed": true}' in section
    choice = ask_prompt_section(["choice"])
    assert '{"action": "accept", "content": {"selected": ["<id>"]}}' in choice


def test_compact_section_states_the_narrowed_limits() -> None:
    limits = ASK_LIMITS
    card, choice = limits["simpleCard"], limits["choice"]
    section = ask_prompt_section(["choice", "confirm"], surface="compact")
    assert f"options: {choice['optionsMin']} to {card['buttonsMax']} items" in section
    assert f"label: at most {card['buttonLabelMaxLength']} characters" in section
    assert 'always "one"' in section
    assert "minSelected, maxSelected, allowOther and otherLabel are not allowed" in section
    assert "no two options may share a label" in section
    assert f"first {card['textMaxLength']} characters" in section
    assert f"first {card['titleMaxLength']} characters" in section
    assert f"{choice['optionsMin']} to {choice['optionsMax']}" not in section
    assert '"many"' not in section


def test_confirm_rules_are_the_same_on_both_surfaces() -> None:
    full = ask_prompt_section(["confirm"]).split("\n\nask_confirm: ", 1)[1]
    compact = ask_prompt_section(["confirm"], surface="compact").split("\n\nask_confirm: ", 1)[1]
    assert full == compact


# --- Every number comes from ASK_LIMITS


@pytest.mark.parametrize("surface", ["full", "compact"])
@pytest.mark.parametrize("kinds", ALL_KIND_SETS, ids=lambda kinds: "+".join(kinds))
def test_every_number_in_the_section_is_an_ask_limit(kinds: list[str], surface: str) -> None:
    allowed = {value for value in flat_ask_limits().values() if isinstance(value, int)}
    assert set(_numbers(ask_prompt_section(kinds, surface=surface))) <= allowed


def _renumbered(limits: Mapping[str, Any], counter: itertools.count[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in limits.items():
        if isinstance(value, Mapping):
            out[key] = _renumbered(value, counter)
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = next(counter)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize("surface", ["full", "compact"])
def test_section_numbers_follow_a_patched_ask_limits(
    monkeypatch: pytest.MonkeyPatch, surface: str
) -> None:
    """With every limit replaced by a number of its own, the section holds only those numbers:
    no number in its text is a literal."""
    patched = _renumbered(ASK_LIMITS, itertools.count(910_001))
    monkeypatch.setattr(prompts, "ASK_LIMITS", patched)
    section = ask_prompt_section(ASK_KINDS, surface=surface)
    numbers = _numbers(section)
    assert numbers
    assert set(numbers) <= _limit_numbers(patched)
    if surface == "compact":
        card = patched["simpleCard"]
        assert f"{patched['choice']['optionsMin']} to {card['buttonsMax']} items" in section
        assert f"label: at most {card['buttonLabelMaxLength']} characters" in section
    else:
        assert f"first {patched['files']['textMaxBytes']} bytes" in section


# --- Misuse


@pytest.mark.parametrize("surface", ["full", "compact"])
@pytest.mark.parametrize("kinds", [["poll"], ["choice", "Choice"], ["ask_choice"], [""]])
def test_unknown_kind_raises_naming_the_known_kinds(kinds: list[str], surface: str) -> None:
    with pytest.raises(ValueError, match="unknown ask kind") as caught:
        ask_prompt_section(kinds, surface=surface)
    for kind in ASK_KINDS:
        assert kind in str(caught.value)


def test_unknown_surface_raises() -> None:
    with pytest.raises(ValueError, match="full, compact"):
        ask_prompt_section(["choice"], surface="watch")


def test_a_single_string_of_kinds_raises() -> None:
    with pytest.raises(TypeError, match=r"\['choice'\]"):
        ask_prompt_section("choice")
