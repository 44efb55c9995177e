"""Elicitation formats and tool hints as DESIGN.md's "Details the documents leave open" fix
them, against a real MCP server written with the official SDK (``mcp_formats_server.py`` in
this folder):

- a ``date-time`` answer reaches the server in RFC 3339's full form (seconds, ``+hh:mm``), so a
  server that validates its schema (the SDK's ``Elicit`` with a pydantic model) takes every
  value the form's ``datetime`` field accepts;
- a formatted string's ``minLength`` / ``maxLength`` (email, URL, date) are checked on the
  answer, as the form field does not hold them;
- WebMCP's annotation defaults: a page tool whose annotations leave ``readOnlyHint``,
  ``consequentialHint`` or ``untrustedContentHint`` out has them false; one with no
  annotations has none at all;
- an untrusted server's hints never make a call safe to send again after a crash.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from doubles import GatedModel
from handrail.asks import validate_ask_response
from handrail.connections import McpLaunch, McpLink
from handrail.connections.catalog import ProtocolMode
from handrail.connections.elicitation import (
    ElicitationAsk,
    ElicitationRequest,
    answer_errors,
    elicit_result,
    to_ask,
)
from handrail.connections.mcp_outcome import CallOutcome, ElicitationNeeded
from handrail.policy import ToolHints
from handrail.runtime.agent import Agent
from handrail.runtime.connected import ConnectionTool
from handrail.runtime.elicitation import call_mcp_tool
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.page_tools import read_page_tools
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import ToolSet
from handrail.runtime.turn import Principal
from handrail.store import Store

SERVER = Path(__file__).resolve().parent / "mcp_formats_server.py"
MODES = ["2026-07-28", "legacy"]
ALICE = Principal(user_id="alice")
LEASE = 0.4


async def started(protocol: str = "auto", **env: str) -> McpLink:
    launch = McpLaunch(
        transport="stdio",
        command=sys.executable,
        args=(str(SERVER),),
        env=env,
        protocol=cast(ProtocolMode, protocol),
    )
    link = McpLink(name="Audit", launch=launch, call_timeout=10)
    await link.start()
    assert link.state == "connected", link.message
    return link


@pytest.fixture(params=MODES)
async def link(request: pytest.FixtureRequest) -> AsyncIterator[McpLink]:
    one = await started(str(request.param))
    try:
        yield one
    finally:
        await one.aclose()


async def asked_of(link: McpLink, tool: str) -> tuple[ElicitationAsk, dict[str, Any]]:
    with pytest.raises(ElicitationNeeded) as needed:
        await link.call(tool, {})
    asked = to_ask(needed.value.request)
    assert isinstance(asked, ElicitationAsk), asked
    return asked, needed.value.resume


def accept(values: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"values": values}}


# --- date-time answers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "sent", "booked"),
    [
        ("2026-10-01T09:30+05", "2026-10-01T09:30:00+05:00", "2026-10-01T09:30:00+05:00"),
        ("2026-10-01T09:30+0530", "2026-10-01T09:30:00+05:30", "2026-10-01T09:30:00+05:30"),
        ("2026-10-01T09:30Z", "2026-10-01T09:30:00Z", "2026-10-01T09:30:00+00:00"),
        (
            "2026-10-01T09:30:15.5-02:00",
            "2026-10-01T09:30:15.5-02:00",
            "2026-10-01T09:30:15.500000-02:00",
        ),
    ],
)
async def test_a_datetime_answer_reaches_the_server_in_rfc3339(
    link: McpLink, typed: str, sent: str, booked: str
) -> None:
    asked, resume = await asked_of(link, "book")
    [field] = asked.input["fields"]
    assert field["type"] == "datetime"
    answer = accept({field["id"]: typed})
    assert validate_ask_response("form", asked.input, answer) == []  # the form takes it
    assert answer_errors(asked.form, answer) == []
    reply = elicit_result(asked.form, answer)
    assert reply == {"action": "accept", "content": {"when": sent}}
    outcome = await link.resume("book", {}, json.loads(json.dumps(resume)), reply)
    assert outcome == CallOutcome(content=f"booked {booked}")


def test_a_datetime_default_is_kept_and_sent_as_it_was() -> None:
    request = ElicitationRequest(
        mode="form",
        message="When?",
        server="Shop",
        requested_schema={
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "date-time", "default": "2026-10-01T09:30:00Z"}
            },
        },
    )
    asked = to_ask(request)
    assert isinstance(asked, ElicitationAsk)
    assert asked.input["fields"][0]["default"] == "2026-10-01T09:30:00Z"
    reply = elicit_result(asked.form, accept({"at": "2026-10-01T09:30:00Z"}))
    assert reply == {"action": "accept", "content": {"at": "2026-10-01T09:30:00Z"}}


# --- length bounds of formatted strings ---------------------------------------------------------


async def test_a_formatted_strings_length_bounds_are_checked_on_the_answer(link: McpLink) -> None:
    asked, resume = await asked_of(link, "contact")
    [field] = asked.input["fields"]
    assert field["type"] == "email"
    long = accept({field["id"]: "averyverylongname@example.com"})
    assert validate_ask_response("form", asked.input, long) == []  # the field alone takes it
    [error] = answer_errors(asked.form, long)
    assert (error.path, error.code) == (f"content.values.{field['id']}", "TOO_LONG")
    assert "at most 15" in error.fix
    # The way back survives being stored with the pending ask.
    stored = type(asked.form).from_json(json.loads(json.dumps(asked.form.to_json())))
    assert [e.code for e in answer_errors(stored, long)] == ["TOO_LONG"]
    fits = accept({field["id"]: "ada@ex.com"})
    assert answer_errors(stored, fits) == []
    outcome = await link.resume("contact", {}, resume, elicit_result(stored, fits))
    assert outcome == CallOutcome(content="saved ada@ex.com")


def test_a_formatted_strings_bounds_and_default() -> None:
    def form(spec: dict[str, Any]) -> Any:
        request = ElicitationRequest(
            mode="form",
            message="?",
            server="Shop",
            requested_schema={"type": "object", "properties": {"d": spec}},
        )
        return to_ask(request)

    short = form({"type": "string", "format": "uri", "minLength": 30, "default": "https://a.io"})
    assert isinstance(short, ElicitationAsk)
    assert "default" not in short.input["fields"][0]  # shorter than the server takes
    [error] = answer_errors(short.form, accept({"d": "https://a.io/x"}))
    assert error.code == "TOO_SHORT"
    assert answer_errors(short.form, accept({"d": ""})) == []  # unanswered: left out
    broken = form({"type": "string", "format": "email", "minLength": 9, "maxLength": 3})
    assert not isinstance(broken, ElicitationAsk)
    assert "at least 9 and at most 3 characters" in broken.reason


# --- WebMCP annotation defaults -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "safety"),
    [
        (None, "consequential"),  # no annotations: none at all
        ({}, "mutating"),  # annotations: WebMCP's defaults (all false)
        ({"readOnlyHint": False, "consequentialHint": False}, "mutating"),
        ({"readOnlyHint": False}, "mutating"),
        ({"untrustedContentHint": True}, "mutating"),
        ({"openWorldHint": False}, "mutating"),
        ({"readOnlyHint": True}, "read-only"),
        ({"consequentialHint": True}, "consequential"),
        ({"destructiveHint": True}, "consequential"),
        ({"consequentialHint": "yes"}, "consequential"),  # not a boolean: never loosens
        ({"skill": True}, "read-only"),
    ],
)
def test_webmcp_annotations_default_to_false(
    annotations: dict[str, Any] | None, safety: str
) -> None:
    tool: dict[str, Any] = {
        "name": "t",
        "description": "A tool.",
        "inputSchema": {"type": "object"},
    }
    if annotations is not None:
        tool["annotations"] = annotations
    page = read_page_tools({"origin": "https://notes.example", "tools": [tool]})
    assert page.refused == ()
    tool_set = page.tool_set()
    assert tool_set.tools["t"].safety(tool_set.trusted) == safety
    # The turn resumes with the same classes from the stored tools.
    again = read_page_tools(page.to_json()).tool_set()
    assert again.tools["t"].safety(again.trusted) == safety


# --- an untrusted server's hints and a crash ----------------------------------------------------


def dead(runtime: Runtime) -> Runtime:
    """`runtime` as a process that stopped would be: its leases are never renewed."""

    async def no_heartbeat(history_id: str, **_: Any) -> None:
        await asyncio.Event().wait()

    runtime.recovery.heartbeat = no_heartbeat  # type: ignore[method-assign]
    return runtime


def shop_agent(link: McpLink, *, trusted: bool) -> Agent:
    """An agent whose connection ``mcp:shop`` holds the server's ``reserve`` (read-only by its
    own hints), called and resumed through the MCP link."""

    async def reserve() -> Any:
        return await call_mcp_tool(link, "reserve", {}, connection_id="mcp:shop")

    async def resume(
        arguments: Mapping[str, Any], state: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> Any:
        return await call_mcp_tool(
            link, "reserve", arguments, connection_id="mcp:shop", resume=state, answer=answer
        )

    [listed] = [t for t in link.tools if t.name == "reserve"]
    tool = ConnectionTool(
        name="shop_reserve",
        description="Reserve a table.",
        input_schema={"type": "object", "properties": {}},
        function=reserve,
        hints=ToolHints.from_annotations(listed.annotations),
        resume=resume,
    )
    return Agent("ops", tool_sets=[ToolSet("mcp:shop", "Shop", tools=[tool], trusted=trusted)])


@pytest.mark.parametrize("trusted", [True, False])
async def test_an_untrusted_servers_hints_never_make_a_call_safe_to_send_again(
    store: Store, tmp_path: Path, trusted: bool
) -> None:
    log = tmp_path / "server.log"
    link = await started("2026-07-28", TEST_LOG=str(log))
    try:
        await store.grants.add("alice", "mcp:shop", "shop_reserve", "always")
        model_a = GatedModel()
        a = dead(
            Runtime(
                store=store, agents=shop_agent(link, trusted=trusted), model=model_a, lease_s=LEASE
            )
        )
        b = Runtime(
            store=store,
            agents=shop_agent(link, trusted=trusted),
            model=ScriptedModel(),
            lease_s=LEASE,
        )
        turn = await a.start_prompt(ALICE, "call shop_reserve {}")
        events = [e async for e in turn.stream()]
        ask = next(e["ask"] for e in events if "ask" in e)
        assert ask["origin"] == "elicitation"
        model_a.armed = True
        answer = {"toolCallId": ask["toolCallId"], **accept({"name": "Ada"})}
        answered = await a.start_answer(ALICE, turn.history_id, answer)
        await model_a.waiting.wait()  # A sent the retry, then stops
        heard = 'reserve {"name": "Ada"}'
        assert log.read_text(encoding="utf-8").splitlines() == [heard]
        await asyncio.sleep(LEASE * 1.5)
        [taken] = await b.recovery.sweep()
        done = (await taken.result()).to_json()
        if trusted:
            # A trusted server's read-only tool is sent again.
            assert log.read_text(encoding="utf-8").splitlines() == [heard, heard]
            assert done["text"].startswith("shop_reserve returned:")
        else:
            # An untrusted server's word is not enough: never sent again by itself.
            assert log.read_text(encoding="utf-8").splitlines() == [heard]
            assert "TOOL_EXECUTION_UNCERTAIN" in done["text"]
        model_a.release.set()
        assert "taken over" in (await answered.result()).to_json()["error"]
        await a.aclose()
        await b.aclose()
    finally:
        await link.aclose()
