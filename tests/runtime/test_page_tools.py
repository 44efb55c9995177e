"""A page's WebMCP tools as the connection ``page:<origin>``: checked, classed from their
hints (the document's notes page), and kept with a paused turn."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.runtime.agent import Agent
from handrail.runtime.page_tools import (
    PAGE_TOOLS_MAX,
    InvalidPageTools,
    is_page_connection,
    read_page_tools,
    stored_page_tools,
)

ORIGIN = "https://notes.example.com"


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool.", **extra}


def test_the_notes_pages_tools_get_the_documents_classes() -> None:
    page = read_page_tools(
        {
            "origin": "HTTPS://Notes.Example.com",
            "tools": [
                tool("list_notes", annotations={"readOnlyHint": True, "openWorldHint": False}),
                tool("add_note", annotations={"readOnlyHint": False, "consequentialHint": False}),
                tool(
                    "delete_note", annotations={"consequentialHint": True, "destructiveHint": True}
                ),
                tool("notes_house_style", annotations={"readOnlyHint": True, "skill": True}),
                tool("declares_nothing"),
            ],
        }
    )
    assert page.origin == ORIGIN
    assert page.connection_id == f"page:{ORIGIN}"
    tools = page.tool_set()
    assert tools.trusted is True
    classes = {name: t.safety(trusted=tools.trusted) for name, t in tools.tools.items()}
    assert classes == {
        "list_notes": "read-only",
        "add_note": "mutating",
        "delete_note": "consequential",
        "notes_house_style": "read-only",
        "declares_nothing": "consequential",
    }
    assert tools.tools["declares_nothing"].input_schema == {"type": "object", "properties": {}}
    assert stored_page_tools(page.to_json()) == type(page)(
        origin=ORIGIN, tools=page.tools, timeout=page.timeout
    )


def test_names_the_model_cannot_take_are_refused_with_a_reason() -> None:
    agent = Agent("a")

    @agent.tool(read_only=True)
    def list_notes() -> str:
        """The agent's own."""
        return ""

    page = read_page_tools(
        {
            "origin": ORIGIN,
            "tools": [
                tool("list_notes"),
                tool("ask_confirm"),
                tool("clarify"),
                tool("x" * 65),
                tool("dup"),
                tool("dup"),
                {"name": "blank", "description": ""},
                tool("schema", inputSchema={"type": "array"}),
                tool("extra", handler="x"),
                tool("bad_skill", annotations={"skill": True, "readOnlyHint": False}),
            ],
        },
        agent=agent,
    )
    assert [t["name"] for t in page.tools] == ["dup"]
    assert [r.name for r in page.refused] == [
        "list_notes",
        "ask_confirm",
        "clarify",
        "x" * 65,
        "dup",
        "blank",
        "schema",
        "extra",
        "bad_skill",
    ]
    assert all(r.reason.endswith(".") or r.reason for r in page.refused)
    event = page.event()["pageTools"]
    assert event["offered"] == ["dup"]
    assert event["refused"][0]["reason"].startswith("The agent already has a tool named")


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ([], {"pageTools"}),
        ({"origin": "notes.example.com", "tools": []}, {"pageTools.origin"}),
        ({"origin": ORIGIN + "/path", "tools": []}, {"pageTools.origin"}),
        ({"origin": ORIGIN}, {"pageTools.tools"}),
        ({"origin": ORIGIN, "tools": [tool("t")] * (PAGE_TOOLS_MAX + 1)}, {"pageTools.tools"}),
        ({"origin": ORIGIN, "tools": ["t"]}, {"pageTools.tools[0]"}),
        ({"origin": ORIGIN, "tools": [{"description": "x"}]}, {"pageTools.tools[0].name"}),
        ({"origin": ORIGIN, "tools": [], "more": 1}, {"pageTools.more"}),
    ],
)
def test_a_payload_that_is_not_origin_and_tools_is_invalid(payload: Any, fields: set[str]) -> None:
    with pytest.raises(InvalidPageTools) as caught:
        read_page_tools(payload)
    assert isinstance(caught.value.fields, dict)
    assert set(caught.value.fields) == fields


def test_page_connection_ids() -> None:
    assert is_page_connection("page:http://127.0.0.1:8123")
    assert not is_page_connection("page:notes")
    assert not is_page_connection("local:notes")
