"""Python tools: the spec's notes application as tools, sync and async bodies, decorators,
skills and tool sets. Schemas and argument checks are in test_tool_schemas.py."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import pytest

from handrail.errors import ConfigError
from handrail.policy import ToolHints
from handrail.runtime import agent as agent_module
from handrail.runtime.agent import Agent
from handrail.runtime.tools import (
    InvalidArguments,
    Tool,
    ToolError,
    ToolSet,
    ToolSignal,
    tool,
)

# --- the spec's notes application -----------------------------------------------------------

HOUSE_STYLE = (
    "Title a note with two to four words in sentence case. Write the body as one line. "
    "Never delete a note without saying which one first."
)


def notes_agent(notes: list[dict[str, str]]) -> Agent:
    """The notes application of `tool-safety-classes.md`, as Python tools."""
    agent = Agent("notes")

    @agent.tool(read_only=True, open_world=False)
    def list_notes() -> list[dict[str, str]]:
        """List every note, with its title and body."""
        return list(notes)

    @agent.tool(read_only=False, consequential=False, open_world=False)
    def add_note(
        title: Annotated[str, "A short title"], body: Annotated[str, "The note itself"]
    ) -> str:
        """Add a note with a title and a body."""
        notes.append({"title": title, "body": body})
        return f"Added the note “{title}”."

    @agent.tool(consequential=True, destructive=True, open_world=False)
    def delete_note(title: str) -> str:
        """Delete the note with this exact title.
        It cannot be undone.

        Args:
            title: The note's title
        """
        for index, note in enumerate(notes):
            if note["title"] == title:
                del notes[index]
                return f"Deleted the note “{title}”."
        titles = ", ".join(note["title"] for note in notes)
        raise ToolError(f"No note is titled “{title}”. The notes are: {titles}.")

    @agent.tool(read_only=True, skill=True, open_world=False)
    def notes_house_style() -> str:
        """How notes in this app should be titled and written. Read this before adding a
        note."""
        return HOUSE_STYLE

    return agent


def three_notes() -> list[dict[str, str]]:
    return [
        {"title": "Shopping list", "body": "Coffee, oats, lemons."},
        {"title": "Old draft", "body": "An outline nobody needs any more."},
        {"title": "Meeting agenda", "body": "Budget, hiring, the launch."},
    ]


def test_notes_tools_as_the_spec_declares_them() -> None:
    agent = notes_agent(three_notes())
    tools = agent.tools
    assert list(tools) == ["list_notes", "add_note", "delete_note", "notes_house_style"]
    described = {
        name: (t.description, dict(t.input_schema), t.hints.to_annotations(), t.safety_class)
        for name, t in tools.items()
    }
    assert described == {
        "list_notes": (
            "List every note, with its title and body.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            {"readOnlyHint": True, "openWorldHint": False},
            "read-only",
        ),
        "add_note": (
            "Add a note with a title and a body.",
            {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "A short title"},
                    "body": {"type": "string", "description": "The note itself"},
                },
                "required": ["title", "body"],
                "additionalProperties": False,
            },
            {"readOnlyHint": False, "openWorldHint": False, "consequentialHint": False},
            "mutating",
        ),
        "delete_note": (
            "Delete the note with this exact title. It cannot be undone.",
            {
                "type": "object",
                "properties": {"title": {"type": "string", "description": "The note's title"}},
                "required": ["title"],
                "additionalProperties": False,
            },
            {"destructiveHint": True, "openWorldHint": False, "consequentialHint": True},
            "consequential",
        ),
        "notes_house_style": (
            "How notes in this app should be titled and written. Read this before adding a note.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            {"readOnlyHint": True, "openWorldHint": False, "skill": True},
            "read-only",
        ),
    }
    assert {t.connection_id for t in tools.values()} == {"local:notes"}
    assert [t.name for t in tools.values() if t.is_skill] == ["notes_house_style"]


async def test_notes_tools_run() -> None:
    notes = three_notes()
    tools = notes_agent(notes).tools
    assert await tools["list_notes"].run({}) == three_notes()
    added = await tools["add_note"].run({"title": "Call mum", "body": "Sunday."})
    assert added == "Added the note “Call mum”."
    assert notes[-1] == {"title": "Call mum", "body": "Sunday."}
    assert await tools["delete_note"].run({"title": "Old draft"}) == "Deleted the note “Old draft”."
    with pytest.raises(ToolError) as caught:
        await tools["delete_note"].run({"title": "Taxes"})
    assert str(caught.value) == (
        "No note is titled “Taxes”. The notes are: Shopping list, Meeting agenda, Call mum."
    )
    assert await tools["notes_house_style"].run({}) == HOUSE_STYLE


async def test_invalid_arguments_are_a_tool_error_and_nothing_runs() -> None:
    notes = three_notes()
    add_note = notes_agent(notes).tools["add_note"]
    assert add_note.check({"title": "Call mum"}) == ["body: required"]
    with pytest.raises(InvalidArguments) as caught:
        await add_note.run({"title": 7, "body": "x", "tags": ["a"]})
    assert isinstance(caught.value, ToolError)
    assert caught.value.errors == [
        "title: expected a string, got 7",
        "tags: unknown property; the properties are: title, body",
    ]
    assert str(caught.value) == (
        "Invalid arguments for add_note: title: expected a string, got 7; tags: unknown "
        "property; the properties are: title, body. It did not run; call it again with "
        "arguments that match its input schema."
    )
    assert notes == three_notes()


def test_untrusted_and_undeclared_hints_are_consequential() -> None:
    list_notes = notes_agent(three_notes()).tools["list_notes"]
    assert list_notes.safety() == "read-only"
    assert list_notes.safety(trusted=False) == "consequential"

    def look(query: str) -> str:
        """Look something up."""
        return query

    plain = Tool.from_function(look)
    assert plain.hints == ToolHints()
    assert plain.safety_class == "consequential"


# --- running -----------------------------------------------------------------------------


async def test_a_sync_tool_runs_off_the_event_loop() -> None:
    events: list[str] = []
    started = threading.Event()
    release = threading.Event()
    threads: list[int] = []

    def slow(label: str) -> str:
        """Wait until released."""
        threads.append(threading.get_ident())
        started.set()
        release.wait(5)
        events.append(f"tool {label} done")
        return label

    async def other() -> None:
        await asyncio.to_thread(started.wait, 5)
        events.append("another task ran")
        release.set()

    result, _ = await asyncio.gather(Tool.from_function(slow).run({"label": "a"}), other())
    assert result == "a"
    assert events == ["another task ran", "tool a done"]
    assert threads != [threading.get_ident()]


async def test_an_async_tool_is_awaited_on_the_loop() -> None:
    threads: list[int] = []

    async def fetch(title: str) -> dict[str, str]:
        """Fetch a note."""
        await asyncio.sleep(0)
        threads.append(threading.get_ident())
        return {"title": title}

    assert await Tool.from_function(fetch).run({"title": "Tea"}) == {"title": "Tea"}
    assert threads == [threading.get_ident()]


async def test_a_hand_written_tool_still_gets_its_parameters_checked() -> None:
    def rename(title: str, new_title: str = "") -> str:
        return new_title

    renamed = Tool(
        name="rename",
        description="Rename a note.",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
        function=rename,
    )
    assert await renamed.run({"title": "a", "new_title": "b"}) == "b"
    with pytest.raises(InvalidArguments) as caught:
        await renamed.run({"tittle": "a"})
    assert caught.value.errors == [
        "title: required",
        "tittle: unknown property; the properties are: title, new_title",
    ]


async def test_tool_errors_pass_through_and_other_errors_are_not_wrapped() -> None:
    def broken() -> None:
        """Always fails."""
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        await Tool.from_function(broken).run({})
    assert issubclass(ToolError, ToolSignal)


# --- decorators and definitions --------------------------------------------------------------


def test_decorator_forms_return_the_function_and_register_the_tool() -> None:
    agent = Agent("assistant")

    @agent.tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        return a + b

    @agent.tool()
    def negate(a: int) -> int:
        """Negate a number."""
        return -a

    @agent.tool(name="times", description="Multiply two numbers.", read_only=True)
    def multiply(a: int, b: int) -> int:
        return a * b

    assert add(1, 2) == 3
    assert negate(1) == -1
    assert multiply(2, 3) == 6
    assert list(agent.tools) == ["add", "negate", "times"]
    times = agent.tools["times"]
    assert times.function is multiply
    assert times.description == "Multiply two numbers."
    assert times.hints == ToolHints(read_only=True)
    assert agent.tools["add"].input_schema["properties"]["a"] == {
        "type": "integer",
        "description": "The first.",
    }


def test_module_level_tool_marks_a_function_for_any_agent() -> None:
    @tool(read_only=True)
    def list_things() -> list[str]:
        """List the things."""
        return ["a"]

    def plain(query: str) -> str:
        """Answer a query."""
        return query

    assert list_things() == ["a"]
    first = Agent("first", tools=[list_things, plain])
    second = Agent("second", tools=[list_things])
    assert first.tools["list_things"].safety_class == "read-only"
    assert first.tools["list_things"].connection_id == "local:first"
    assert second.tools["list_things"].connection_id == "local:second"
    assert first.tools["plain"].safety_class == "consequential"
    assert Tool.from_function(plain, name="ask_me_not", read_only=True).name == "ask_me_not"


def test_descriptions_and_names_are_required() -> None:
    def undocumented() -> None:
        pass

    def only_args(x: int) -> None:
        """Args:
        x: A number.
        """

    with pytest.raises(ConfigError, match="tool 'undocumented' needs a description"):
        Agent("a").tool(undocumented)
    with pytest.raises(ConfigError, match="tool 'only_args' needs a description"):
        Tool.from_function(only_args)
    assert Tool.from_function(undocumented, description="Does nothing.").description
    with pytest.raises(ConfigError, match="tool name 'two words' is not usable"):
        Tool.from_function(undocumented, name="two words", description="x")
    with pytest.raises(ConfigError, match="input_schema must be a JSON Schema object"):
        Tool(name="t", description="x", input_schema={"type": "string"}, function=undocumented)
    with pytest.raises(ConfigError, match="unknown tool options"):
        Tool.from_function(undocumented, readonly=True)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("options", "wrong"),
    [
        ({"read_only": False}, "read_only=False"),
        ({"destructive": True}, "destructive=True"),
        ({"consequential": True, "destructive": True}, "destructive=True, consequential=True"),
    ],
)
def test_a_skill_cannot_claim_to_change_things(options: dict[str, Any], wrong: str) -> None:
    def guide() -> str:
        """How to write."""
        return "Write short notes."

    with pytest.raises(ConfigError, match=f"tool 'guide' is a skill.*cannot declare {wrong};"):
        Tool.from_function(guide, skill=True, **options)
    with pytest.raises(ConfigError, match="is a skill"):
        Tool(
            name="guide",
            description="How to write.",
            input_schema={"type": "object"},
            function=guide,
            hints=ToolHints(skill=True, **options),
        )


async def test_a_skill_is_read_only_and_returns_text() -> None:
    def guide() -> str:
        """How to write."""
        return "Write short notes."

    def wrong() -> dict[str, str]:
        """How to write, as data."""
        return {"style": "short"}

    skill = Tool.from_function(guide, skill=True)
    assert skill.safety_class == "read-only"
    assert skill.is_skill
    assert await skill.run({}) == "Write short notes."
    with pytest.raises(ConfigError, match="skill 'wrong' returned dict"):
        await Tool.from_function(wrong, skill=True).run({})


def test_ask_and_clarify_names_are_refused() -> None:
    agent = Agent("assistant")

    def ask_user() -> None:
        """Ask."""

    def clarify() -> None:
        """Clarify."""

    with pytest.raises(ConfigError, match="starts with 'ask_', which names the ask tools"):
        agent.tool(ask_user)
    with pytest.raises(ConfigError, match="'clarify' belongs to the clarify tool"):
        agent.add_tool(clarify)
    with pytest.raises(ConfigError, match="starts with 'ask_'"):
        ToolSet("mcp:x", "X", tools=[ask_user])
    assert agent.tools == {}


def test_the_old_imports_keep_working() -> None:
    assert agent_module.Tool is Tool
    assert agent_module.ToolError is ToolError
    assert agent_module.ToolSignal is ToolSignal
    assert agent_module.ToolSet is ToolSet


# --- tool sets ---------------------------------------------------------------------------


def lookup(query: str) -> str:
    """Look something up."""
    return query


def test_tool_sets_group_tools_under_a_connection() -> None:
    notes = ToolSet(
        "mcp:notes",
        "Notes",
        trusted=False,
        instructions="  Read the house style before adding a note.  ",
    )

    @notes.tool(read_only=True)
    def list_notes() -> list[str]:
        """List the notes."""
        return []

    agent = Agent("assistant", tools=[lookup], tool_sets=[notes])
    search = agent.add_tool_set(
        ToolSet("http:search", "Search", tools=[Tool.from_function(lookup, name="search")])
    )
    assert list_notes() == []
    assert list(agent.tools) == ["lookup", "list_notes", "search"]
    assert list(agent.connections) == ["local:assistant", "mcp:notes", "http:search"]
    assert agent.connections["mcp:notes"] is notes
    assert agent.connection_of("list_notes") is notes
    assert agent.connection_of("search") is search
    local = agent.connection_of("lookup")
    assert (local.connection_id, local.name, local.trusted) == (
        "local:assistant",
        "assistant",
        True,
    )
    assert agent.tools["list_notes"].connection_id == "mcp:notes"
    assert notes.instructions == "Read the house style before adding a note."
    listed = agent.tools["list_notes"]
    assert listed.safety(trusted=agent.connection_of("list_notes").trusted) == "consequential"
    with pytest.raises(KeyError):
        agent.connection_of("nothing")

    # A tool added to the set later shows up in the agent too.
    notes.add_tool(Tool.from_function(lookup, name="find_note"))
    assert agent.connection_of("find_note") is notes


def test_tool_name_clashes_across_connections_are_refused() -> None:
    first = ToolSet("mcp:first", "First", tools=[lookup])
    with pytest.raises(ConfigError, match="already has a tool named 'lookup'"):
        Agent("a", tools=[lookup], tool_sets=[first])

    agent = Agent("b", tool_sets=[first])
    with pytest.raises(ConfigError, match=r"'lookup' \(from connection 'mcp:first'\)"):
        agent.add_tool(lookup)
    with pytest.raises(ConfigError, match="already has a tool named 'lookup'"):
        agent.add_tool_set(ToolSet("mcp:second", "Second", tools=[lookup]))
    assert list(agent.connections) == ["local:b", "mcp:first"]

    agent.add_tool(Tool.from_function(lookup, name="later"))
    with pytest.raises(ConfigError, match="already has a tool named 'later'"):
        first.add_tool(Tool.from_function(lookup, name="later"))
    assert "later" not in first.tools

    with pytest.raises(ConfigError, match="connection 'mcp:first' already has a tool"):
        first.add_tool(lookup)
    with pytest.raises(ConfigError, match="already has a connection 'mcp:first'"):
        agent.add_tool_set(ToolSet("mcp:first", "Again"))
    with pytest.raises(ConfigError, match="already has a connection 'local:b'"):
        agent.add_tool_set(ToolSet("local:b", "Local"))


def test_a_tool_belongs_to_one_connection() -> None:
    registered = ToolSet("mcp:first", "First", tools=[lookup]).tools["lookup"]
    with pytest.raises(ConfigError, match="belongs to connection 'mcp:first'"):
        ToolSet("mcp:second", "Second", tools=[registered])
    with pytest.raises(ConfigError, match="belongs to connection 'mcp:first'"):
        Agent("a").add_tool(registered)


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        (("", "X"), {}, "needs a connection id"),
        ((" mcp:x", "X"), {}, "has spaces around it"),
        (("mcp:x", " "), {}, "needs a name"),
        (("mcp:x", "X"), {"instructions": "  "}, "instructions must be text"),
        (("mcp:x", "X"), {"instructions": "x" * 2001}, "have 2001 characters; the most is 2000"),
        (("mcp:x", "X"), {"trusted": "yes"}, "trusted must be True or False"),
    ],
)
def test_tool_set_settings_are_checked(
    args: tuple[str, str], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ToolSet(*args, **options)
