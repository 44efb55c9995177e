"""The demo's notes as an MCP server, written with the official SDK's server API: the same four
tools and hints as the notes application of ``tool-safety-classes.md``.

    python -m handrail.demo.notes_mcp                 # stdio
    python -m handrail.demo.notes_mcp --http 8765     # streamable HTTP on 127.0.0.1:8765/mcp

- ``list_notes`` is read-only;
- ``add_note`` changes something that is easy to undo (mutating: not read-only, not
  destructive, ``consequentialHint: false``);
- ``delete_note`` cannot be undone (destructive, ``consequentialHint: true``), and a title that
  is not there is an error result that lists the titles that are;
- ``notes_house_style`` is a skill: read-only guidance text.

MCP annotations have no ``consequentialHint`` or ``skill``; the server states them in each
tool's ``_meta`` under `HINTS_META_KEY`, which handrail reads beside the annotations. The notes
live in the process's memory: a new server starts with the three notes again.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

__all__ = ["HINTS_META_KEY", "SEED_NOTES", "main", "notes_server"]

#: The ``_meta`` key of a tool's WebMCP hints (``consequentialHint``, ``skill``...).
HINTS_META_KEY: Final = "handrail/hints"

SEED_NOTES: Final = (
    {"title": "Shopping list", "body": "Coffee, oats, lemons."},
    {"title": "Old draft", "body": "An outline nobody needs any more."},
    {"title": "Meeting agenda", "body": "Budget, hiring, the launch."},
)

HOUSE_STYLE: Final = (
    "Title a note with two to four words in sentence case. Write the body as one line. "
    "Never delete a note without saying which one first."
)


def notes_server() -> MCPServer:
    """A fresh notes server with the three seed notes."""
    notes: list[dict[str, str]] = [dict(n) for n in SEED_NOTES]
    server: MCPServer = MCPServer(
        "notes",
        instructions="A notes app. Read notes_house_style before adding a note.",
        log_level="WARNING",
    )

    @server.tool(
        structured_output=False,
        description="List every note, with its title and body.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    def list_notes() -> str:
        return json.dumps(notes)

    @server.tool(
        structured_output=False,
        description="Add a note with a title and a body.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, open_world_hint=False
        ),
        meta={HINTS_META_KEY: {"consequentialHint": False}},
    )
    def add_note(title: str, body: str) -> str:
        notes.append({"title": title, "body": body})
        return f"Added the note “{title}”."

    @server.tool(
        structured_output=False,
        description="Delete the note with this exact title. It cannot be undone.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, open_world_hint=False
        ),
        meta={HINTS_META_KEY: {"consequentialHint": True}},
    )
    def delete_note(title: str) -> str:
        for index, note in enumerate(notes):
            if note["title"] == title:
                del notes[index]
                return f"Deleted the note “{title}”."
        titles = ", ".join(n["title"] for n in notes)
        raise ToolError(f"No note is titled “{title}”. The notes are: {titles}.")

    @server.tool(
        structured_output=False,
        description=(
            "How notes in this app should be titled and written. Read this before adding a note."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        meta={HINTS_META_KEY: {"skill": True}},
    )
    def notes_house_style() -> str:
        return HOUSE_STYLE

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m handrail.demo.notes_mcp")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args: Any = parser.parse_args(argv)
    server = notes_server()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
