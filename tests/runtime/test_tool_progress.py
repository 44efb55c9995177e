"""The ``turn.progress`` event of a tool that runs names it for the person: ``toolTitle`` is
the tool's declared title, else one made from its name ("create_invoice" → "Create invoice"),
beside the ``toolName`` the model called; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from handrail._util import title_from_name
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")


def _tools() -> ToolSet:
    tools = ToolSet("local:books", "Books")

    @tools.tool(read_only=True, open_world=False)
    async def create_invoice(amount: int) -> str:
        """Create an invoice.

        Args:
            amount: The amount in cents
        """
        return "Created."

    @tools.tool(title="Look up a customer", read_only=True, open_world=False)
    async def lookup(name: str) -> str:
        """Look a customer up.

        Args:
            name: The customer's name
        """
        return "Found."

    return tools


async def _progress_of(store: Store, runtime: Runtime, prompt: str) -> list[dict[str, Any]]:
    """The data of the ``turn.progress`` events of a tool while `prompt`'s turn runs."""
    async with store.events.subscribe("alice") as events:
        turn = await runtime.start_prompt(ALICE, prompt)
        async for _ in turn.stream():
            pass
        seen: list[dict[str, Any]] = []
        while True:
            event = await asyncio.wait_for(events.get(timeout=10), 10)
            assert event is not None
            if event.kind == "turn.progress" and event.data.get("phase") == "tool":
                seen.append(dict(event.data))
            if event.kind == "turn.finished":
                return seen


async def test_a_running_tool_is_named_by_its_title(store: Store) -> None:
    agent = Agent("clerk", tool_sets=[_tools()])
    runtime = Runtime(store=store, agents=agent, model=ScriptedModel())
    await store.permissions.set("alice", "local:books", "non-consequential")
    try:
        untitled = await _progress_of(
            store, runtime, "call create_invoice " + json.dumps({"amount": 100})
        )
        titled = await _progress_of(store, runtime, "call lookup " + json.dumps({"name": "Ada"}))
    finally:
        await runtime.aclose()
    assert [(d["toolName"], d["toolTitle"]) for d in untitled] == [
        ("create_invoice", "Create invoice")
    ]
    assert [(d["toolName"], d["toolTitle"]) for d in titled] == [("lookup", "Look up a customer")]
    assert set(titled[0]) == {"phase", "toolName", "toolTitle", "toolCallId", "turnId"}


def test_a_title_made_from_a_name() -> None:
    assert [
        title_from_name(name)
        for name in ("create_invoice", "createInvoice", "send-email", "get_api_key", "fetchURL")
    ] == ["Create invoice", "Create invoice", "Send email", "Get API key", "Fetch URL"]
    assert title_from_name("x") == "X"
    assert title_from_name("__") == "__"  # nothing to make words of: left as it is
