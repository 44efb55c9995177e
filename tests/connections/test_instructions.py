"""Connection instructions as pure functions: the setting's checks, a saved connection's source
(public configuration only, required fields withholding the block), and the snapshot (sorted
by connection id, its digest the SHA-256 of the text, stable for the same input)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.connections.catalog import (
    AgentInstructions,
    AppDefinition,
    ConfigField,
    ManagedArgument,
)
from handrail.connections.instructions import (
    INSTRUCTIONS_HEADING,
    INSTRUCTIONS_SEPARATOR,
    InstructionSource,
    Snapshot,
    check_setting,
    compose_snapshot,
    saved_source,
    template_setting,
)
from handrail.runtime.agent import Agent
from handrail.runtime.tools import ToolSet

WIKI = AppDefinition(
    slug="wiki",
    name="Wiki",
    description="The team wiki.",
    kind="mcp-http",
    docs_url="https://example.com/wiki",
    config=(
        ConfigField(key="space", label="Space", required=True, public=True),
        ConfigField(key="region", label="Region", public=False),
        ConfigField(key="apiKey", label="API key", type="secret", required=True),
        ConfigField(key="workspace", label="Workspace", public=True),
    ),
    managed_arguments=(ManagedArgument(argument="workspace_id", config="workspace"),),
    agent_instructions=AgentInstructions(id="wiki.usage", version=2, text="Cite the page."),
)


def source(**settings: str) -> InstructionSource:
    return saved_source(
        WIKI,
        connection_id="c1",
        name="Wiki",
        app="wiki",
        kind="mcp-http",
        settings=settings,
        secret_keys=["apiKey"],
        setting=template_setting(WIKI.agent_instructions),  # type: ignore[arg-type]
    )


def test_a_setting_is_trimmed_and_its_template_kept() -> None:
    setting, fields = check_setting(
        {"enabled": False, "text": "  Use it.  ", "template": {"id": " a.b ", "version": 3}}
    )
    assert fields == {}
    assert setting == {"enabled": False, "text": "Use it.", "template": {"id": "a.b", "version": 3}}
    assert check_setting(None) == (None, {})
    assert check_setting({"enabled": True, "text": "x" * 2000})[1] == {}


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("text", "agentInstructions"),
        ({"enabled": True}, "agentInstructions.text"),
        ({"enabled": True, "text": "x" * 2001}, "agentInstructions.text"),
        ({"enabled": True, "text": "a\x00b"}, "agentInstructions.text"),
        ({"enabled": 1, "text": "Fine."}, "agentInstructions.enabled"),
        ({"enabled": True, "text": "Fine.", "template": "t"}, "agentInstructions.template"),
        (
            {"enabled": True, "text": "Fine.", "template": {"id": "x" * 161, "version": 1}},
            "agentInstructions.template.id",
        ),
        (
            {"enabled": True, "text": "Fine.", "template": {"id": "a", "version": True}},
            "agentInstructions.template.version",
        ),
    ],
)
def test_a_bad_setting_names_its_field(value: Any, field: str) -> None:
    setting, fields = check_setting(value)
    assert setting is None
    assert field in fields


def test_public_configuration_only_and_required_fields_withhold() -> None:
    complete = source(space="eng", region="eu-secret", workspace="w1")
    assert complete.deliverable
    assert complete.config == {"space": "eng", "workspace": "w1"}  # never region or apiKey
    block = complete.block(level="read-only", granted_tools=["b", "a", "a"])
    assert block.granted_tools == ("a", "b")
    assert block.source()["config"] == {"space": "eng", "workspace": "w1"}
    # A required field blank, or a managed argument's field unset: no block.
    assert source(space="  ", workspace="w1").missing == ("space",)
    assert not source(space="  ", workspace="w1").deliverable
    assert source(space="eng").missing == ("workspace",)
    no_secret = saved_source(
        WIKI,
        connection_id="c1",
        name="Wiki",
        app="wiki",
        kind="mcp-http",
        settings={"space": "eng", "workspace": "w1"},
        secret_keys=[],
        setting={"enabled": True, "text": "Mine."},
    )
    assert no_secret.missing == ("apiKey",)
    off = InstructionSource(
        connection_id="c1",
        name="W",
        connector="custom",
        method="mcp-stdio",
        setting={"enabled": False, "text": "Kept."},
    )
    assert not off.enabled


def test_the_snapshot_is_sorted_with_a_digest_of_its_text() -> None:
    def block(ident: str) -> Any:
        return InstructionSource(
            connection_id=ident,
            name=f"n-{ident}",
            connector="custom",
            method="python",
            setting={"enabled": True, "text": f"Text of {ident}."},
        ).block(level=None)

    snapshot = compose_snapshot([block("b2"), block("a1"), block("c3")])
    assert snapshot is not None
    assert [b.connection_id for b in snapshot.blocks] == ["a1", "b2", "c3"]
    parts = snapshot.text.removeprefix(INSTRUCTIONS_HEADING + "\n\n").split(INSTRUCTIONS_SEPARATOR)
    first_line = parts[0].split("\n", 1)[0]
    assert json.loads(first_line.removeprefix("Source: "))["connection"] == {
        "id": "a1",
        "name": "n-a1",
    }
    assert parts[0].endswith("\n\nText of a1.")
    assert snapshot.digest == hashlib.sha256(snapshot.text.encode("utf-8")).hexdigest()
    again = compose_snapshot([block("c3"), block("a1"), block("b2")])
    assert again is not None
    assert again.to_json() == snapshot.to_json()
    assert compose_snapshot([]) is None
    assert Snapshot.from_json(snapshot.to_json()) == Snapshot(
        text=snapshot.text, digest=snapshot.digest
    )
    assert Snapshot.from_json(None) is None
    assert Snapshot.from_json({"text": 1}) is None


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True))
def test_any_order_gives_the_same_digest(ids: list[str]) -> None:
    blocks = [
        InstructionSource(
            connection_id=i,
            name=i,
            connector="config",
            method="python",
            setting={"enabled": True, "text": "é " + i},
        ).block(level="ask")
        for i in ids
    ]
    one = compose_snapshot(blocks)
    other = compose_snapshot(list(reversed(blocks)))
    assert one is not None
    assert other is not None
    assert one.digest == other.digest


def test_a_configured_tool_sets_instructions_are_a_source() -> None:
    tools = ToolSet("wiki", "Wiki", instructions="  Cite the page.  ")
    agent = Agent("helper", tool_sets=[tools])
    [(ident, found)] = agent.instruction_sources().items()
    assert ident == "wiki"
    assert found.connector == "config"
    assert found.method == "python"
    assert found.setting == {"enabled": True, "text": "Cite the page."}
    assert Agent("plain").instruction_sources() == {}
