"""A turn's setup is built once per agent and surface, and again whenever what it is made of
changes (a tool added, the instructions, the asks, a connection added, listed again or
removed while the server runs)."""

from __future__ import annotations

from handrail.connections.instructions import Snapshot
from handrail.runtime.agent import Agent, AsksOptions, SourcedSets
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.prompting import build_turn_setup
from handrail.runtime.tools import ToolSet


def names(agent: Agent, surface: str = "full") -> list[str]:
    setup = build_turn_setup(agent, ScriptedModel(), surface)  # type: ignore[arg-type]
    return [spec.name for spec in setup.specs]


def test_the_same_setup_while_nothing_changes() -> None:
    agent = Agent("assistant", instructions="Be brief.")
    model = ScriptedModel()
    first = build_turn_setup(agent, model, "full")
    assert build_turn_setup(agent, model, "full") is first
    compact = build_turn_setup(agent, model, "compact")
    assert compact is not first
    assert compact.surface == "compact"
    assert build_turn_setup(agent, model, "full") is first


def test_a_new_tool_instructions_or_asks_make_a_new_setup() -> None:
    agent = Agent("assistant", instructions="Be brief.")
    before = names(agent)
    assert "lookup" not in before

    @agent.tool
    def lookup(query: str) -> str:
        """Look it up."""
        return query

    assert names(agent) == [*before, "lookup"]
    tool_set = ToolSet("config:extra", "Extra")
    agent.add_tool_set(tool_set)

    @tool_set.tool
    def later(value: int) -> int:
        """Added to the set after it joined the agent."""
        return value

    assert names(agent) == [*before, "lookup", "later"]
    model = ScriptedModel()
    agent.instructions = "Be very brief."
    assert build_turn_setup(agent, model, "full").system.startswith("Be very brief.")
    agent.asks = AsksOptions(kinds=("confirm",))
    assert [s.name for s in build_turn_setup(agent, model, "full").specs] == [
        "ask_confirm",
        "lookup",
        "later",
    ]


def test_connection_instructions_are_never_shared() -> None:
    agent = Agent("assistant")
    model = ScriptedModel()
    snapshot = Snapshot(text="Use the notes.", digest="d")
    with_them = build_turn_setup(agent, model, "full", snapshot)
    assert with_them.instructions is snapshot
    assert build_turn_setup(agent, model, "full").instructions is None


def test_a_connection_that_changes_while_the_server_runs_makes_a_new_setup() -> None:
    # As `ConnectionHub.sourced` answers: the same sets while nothing changed, new ones once
    # a connection is added, its tools listed again, or it is removed.
    agent = Agent("assistant")
    sourced = [SourcedSets()]
    agent.add_tool_source(lambda _agent: sourced[0])
    model = ScriptedModel()
    first = build_turn_setup(agent, model, "full")
    notes = ToolSet("conn:notes", "Notes")

    @notes.tool
    def find(query: str) -> str:
        """Find notes."""
        return query

    sourced[0] = SourcedSets(tool_sets=(notes,))  # a connection added
    added = build_turn_setup(agent, model, "full")
    assert [s.name for s in added.specs] == [*(s.name for s in first.specs), "find"]
    assert build_turn_setup(agent, model, "full") is added
    relisted = ToolSet("conn:notes", "Notes")

    @relisted.tool(name="find")  # listed again, changed
    def find_again(query: str, limit: int) -> str:
        """Find at most `limit` notes."""
        return query

    sourced[0] = SourcedSets(tool_sets=(relisted,))
    [spec] = [s for s in build_turn_setup(agent, model, "full").specs if s.name == "find"]
    assert "limit" in spec.input_schema["properties"]
    assert build_turn_setup(agent, model, "full").host_tools["find"] is relisted.tools["find"]
    sourced[0] = SourcedSets()  # removed
    assert "find" not in build_turn_setup(agent, model, "full").host_tools
