"""An MCP server for ``test_elicitation_formats_and_hints.py``, written with the
official SDK's server API; stdio only.

``book`` asks a time and ``contact`` an email (pydantic models, so the SDK validates the answer
against its own schema); ``reserve`` (2026-07-28, read-only by its own word) asks a name and
appends each retry it gets to ``TEST_LOG``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Annotated

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, Resolve
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("formats", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class When(BaseModel):
    when: dt.datetime = Field(title="When")


class Contact(BaseModel):
    email: str = Field(title="Email", json_schema_extra={"format": "email"}, max_length=15)


def ask_when() -> Elicit[When]:
    return Elicit("When shall it be?", When)


def ask_contact() -> Elicit[Contact]:
    return Elicit("Where can we reach you?", Contact)


@server.tool(description="Book a time.", annotations=READ_ONLY, structured_output=False)
def book(when: Annotated[ElicitationResult[When], Resolve(ask_when)]) -> str:
    if isinstance(when, AcceptedElicitation):
        return f"booked {when.data.when.isoformat()}"
    return when.action


@server.tool(description="Save a contact.", annotations=READ_ONLY, structured_output=False)
def contact(got: Annotated[ElicitationResult[Contact], Resolve(ask_contact)]) -> str:
    if isinstance(got, AcceptedElicitation):
        return f"saved {got.data.email}"
    return got.action


NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool(description="Reserve a table.", annotations=READ_ONLY, structured_output=False)
async def reserve(ctx: Context) -> str | types.InputRequiredResult:
    if ctx.request_state is None:
        return types.InputRequiredResult(
            input_requests={
                "q": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message="Whose name?", requested_schema=NAME
                    )
                )
            },
            request_state="asked:reserve",
        )
    answer = (ctx.input_responses or {})["q"]
    said = json.dumps(getattr(answer, "content", None), sort_keys=True)
    with open(os.environ["TEST_LOG"], "a", encoding="utf-8") as out:
        out.write(f"reserve {said}\n")
    return f"reserved for {said}"


if __name__ == "__main__":
    server.run("stdio")
