"""An MCP server that books tables, for the approval tests (the official SDK's server API, over
stdio). It records every call it runs, as one JSON line ``{"tool", "arguments"}`` in the file
``CALLS_FILE`` of its environment, so a test knows exactly what ran and how often.

Tools: ``book_table`` (consequential: not read-only, not idempotent; its arguments have titles,
and the party size is 1-12) and ``cancel_booking`` (destructive). Neither declares a title of
its own that is the tool's description.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)

server: MCPServer = MCPServer("booking-server", log_level="WARNING")


def _record(tool: str, arguments: dict[str, Any]) -> None:
    path = os.environ.get("CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True) + "\n")


@server.tool(
    title="Book a table",
    description="Book a table at the restaurant.",
    annotations=WRITES,
    structured_output=False,
)
def book_table(
    date: Annotated[str, Field(title="Date", description="YYYY-MM-DD")],
    time: Annotated[str, Field(title="Time")],
    party: Annotated[int, Field(title="Party size", ge=1, le=12)],
    notes: Annotated[str, Field(title="Notes")] = "",
) -> str:
    arguments = {"date": date, "time": time, "party": party, "notes": notes}
    _record("book_table", arguments)
    return f"Booked a table for {party} on {date} at {time}."


@server.tool(
    title="Cancel a booking",
    description="Cancel a booking.",
    annotations=DESTRUCTIVE,
    structured_output=False,
)
def cancel_booking(date: Annotated[str, Field(title="Date")]) -> str:
    _record("cancel_booking", {"date": date})
    return f"Cancelled the booking on {date}."


if __name__ == "__main__":
    server.run("stdio")
