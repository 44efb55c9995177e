"""Approvers of a saved connection's tools, against a real MCP server (the official SDK's server
API, ``tests/connections/mcp_booking_server.py``, which records every call it runs).

An admin names approvers, a quorum and clocks for the whole connection and per tool, through
``POST``/``PATCH /connections``; a wrong setting is a 400 naming the field (an unknown user, a
quorum larger than the approvers, a reminder after the expiry, a tool the server does not
have) and changes nothing. The approval gate applies them exactly as a Python tool's: a quorum
of two people who are not the owner, any deny ends it, a third user is refused. Edit, then
approve: the edit is checked against the MCP tool's inputSchema (400 naming the field by its
label, the approval still pending), the server receives exactly the edited arguments once, the
model reads that the person changed them, and the stored call keeps both."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import TOKENS, USERS, Api, sqlite_url, start_api

from handrail.connections import new_secret_key
from handrail.demo.booking_api import BOOKING_YAML, create_booking_app, serve_booking_api
from handrail.runtime.agent import Agent
from handrail.server import UserConfig

ROOT = Path(__file__).resolve().parents[2]
BOOKING_SERVER = ROOT / "tests" / "connections" / "mcp_booking_server.py"
APPROVE = {"action": "accept", "content": {"confirmed": True}}
BOOKING = {"date": "2026-12-04", "time": "19:00", "party": 2, "notes": "A table for two"}


@pytest.fixture
async def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    monkeypatch.setitem(TOKENS, "carol", "carol-token-0123456789")
    users = [*USERS, UserConfig(id="carol", token=TOKENS["carol"])]
    agents = [Agent("helper", instructions="You help people.")]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents, users=users) as running:
        yield running


def calls_file(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


def server_calls(tmp_path: Path) -> list[dict[str, Any]]:
    path = calls_file(tmp_path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def add_bookings(api: Api, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    body = {
        "app": "custom",
        "name": "Bookings",
        "kind": "mcp-stdio",
        "trusted": True,
        "mcp": {
            "command": sys.executable,
            "args": [str(BOOKING_SERVER)],
            "env": {"CALLS_FILE": str(calls_file(tmp_path))},
        },
        **extra,
    }
    response = await api.post("/connections", body, user="root")
    assert response.status_code == 201, response.text
    created = dict(response.json()["data"])
    assert created["status"]["state"] == "connected", created["status"]
    return created


async def set_level(api: Api, connection_id: str, level: str) -> None:
    response = await api.request(
        "PUT", f"/permissions/{connection_id}", user="alice", json={"level": level}
    )
    assert response.status_code == 200, response.text


def call(tool: str, arguments: dict[str, Any]) -> str:
    return f"call {tool} {json.dumps(arguments)}"


async def approve_as(api: Api, user: str, history_id: str, ask: dict[str, Any], **envelope: Any):  # type: ignore[no-untyped-def]
    body = {"toolCallId": ask["toolCallId"], **(envelope or APPROVE)}
    return await api.post(f"/approvals/{history_id}", body, user=user)


async def settled(api: Api, history_id: str) -> dict[str, Any]:
    """The history once its turn has finished (an approval resumes it in the background)."""
    for _ in range(200):
        view = await api.history(history_id)
        rows = view["rows"]
        results = [i for i, r in enumerate(rows) if r["type"] == "tool-result"]
        if (
            view["pendingAsk"] is None
            and results
            and any(r["type"] == "assistant" for r in rows[results[-1] :])
        ):
            return view
        await asyncio.sleep(0.05)
    raise AssertionError(f"the turn of {history_id} did not finish")


# --- the setting ------------------------------------------------------------------------------


async def test_a_wrong_setting_is_a_400_naming_the_field_and_nothing_is_saved(
    api: Api, tmp_path: Path
) -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"approvers": ["bob", "nobody"]}, "approvals.approvers", "names no user: nobody"),
        ({"approvers": ["bob", "carol"], "quorum": 3}, "approvals.quorum", "more than the 2"),
        ({"quorum": 2}, "approvals.quorum", "a quorum needs approvers"),
        ({"expiresAfter": 600, "remindAfter": 900}, "approvals.remindAfter", "before expiresAfter"),
        ({"expiresAfter": -1}, "approvals.expiresAfter", "a number of seconds"),
        ({"approvers": "bob"}, "approvals.approvers", "a list of user ids"),
        ({"who": ["bob"]}, "approvals.who", "not an approvals setting"),
        (
            {"approvers": ["bob"], "tools": {"book_table": {"approvers": ["dan"]}}},
            "approvals.tools.book_table.approvers",
            "names no user: dan",
        ),
        (
            {"approvers": ["bob", "carol"], "tools": {"book_table": {"quorum": 3}}},
            "approvals.tools.book_table.quorum",
            "quorum 3 is more than the 2",
        ),
    ]
    for approvals, field, says in cases:
        response = await api.post(
            "/connections",
            {
                "app": "custom",
                "name": "Bookings",
                "kind": "mcp-stdio",
                "mcp": {"command": sys.executable, "args": [str(BOOKING_SERVER)]},
                "approvals": approvals,
            },
            user="root",
        )
        assert response.status_code == 400, (approvals, response.text)
        problem = response.json()
        assert response.headers["content-type"] == "application/problem+json"
        assert field in problem["fields"], (approvals, problem)
        assert says in problem["fields"][field], (approvals, problem)
    listed = (await api.get("/connections", user="root")).json()["data"]
    assert [c for c in listed if c["source"] == "saved"] == []
    # Once the server listed its tools, a tool it does not have is named as such; the saved
    # setting stays as it was.
    created = await add_bookings(api, tmp_path, approvals={"approvers": ["bob"]})
    bad = await api.request(
        "PATCH",
        f"/connections/{created['id']}",
        user="root",
        json={"approvals": {"tools": {"book_a_table": {"approvers": ["carol"]}}}},
    )
    assert bad.status_code == 400, bad.text
    assert "book_table" in bad.json()["fields"]["approvals.tools.book_a_table"]
    again = (await api.get(f"/connections/{created['id']}", user="root")).json()["data"]
    assert again["approvals"] == {"approvers": ["bob"]}
    # Only admins set it.
    mine = await api.request(
        "PATCH", f"/connections/{created['id']}", user="alice", json={"approvals": None}
    )
    assert mine.status_code == 403


async def test_the_setting_is_stored_shown_and_applied_per_tool(api: Api, tmp_path: Path) -> None:
    approvals = {
        "approvers": ["admins"],
        "expiresAfter": 3600,
        "remindAfter": 600,
        "tools": {"book_table": {"approvers": ["bob", "carol"], "quorum": 2}},
    }
    created = await add_bookings(api, tmp_path, approvals=approvals)
    assert created["approvals"] == approvals
    tools = {
        t["name"]: t
        for t in (await api.get(f"/connections/{created['id']}/tools", user="root")).json()["data"]
    }
    assert tools["book_table"]["rules"] == {
        "approvers": ["bob", "carol"],
        "quorum": 2,
        "expiresAfter": 3600,
        "remindAfter": 600,
    }
    assert tools["cancel_booking"]["rules"] == {
        "approvers": ["admins"],
        "quorum": 1,
        "expiresAfter": 3600,
        "remindAfter": 600,
    }
    # The change is in the activity log, and null removes the setting.
    changed = await api.request(
        "PATCH", f"/connections/{created['id']}", user="root", json={"approvals": None}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["approvals"] is None
    tools_after = (await api.get(f"/connections/{created['id']}/tools", user="root")).json()["data"]
    assert all(t["rules"] is None for t in tools_after)
    activity = (await api.get("/activity", user="root")).json()["data"]
    assert activity[0]["action"] == "connection.updated"
    assert activity[0]["changes"] == {"approvals": None}
    assert activity[1]["changes"]["approvals"] == approvals


# --- the gate ---------------------------------------------------------------------------------


async def test_a_quorum_of_two_who_are_not_the_owner_and_a_third_user_refused(
    api: Api, tmp_path: Path
) -> None:
    created = await add_bookings(
        api,
        tmp_path,
        approvals={"tools": {"book_table": {"approvers": ["bob", "carol"], "quorum": 2}}},
    )
    await set_level(api, created["id"], "non-consequential")
    stream = await api.say(call("bookings_book_table", BOOKING))
    ask = stream.ask
    assert ask["origin"] == "approval"
    assert ask["approvers"] == ["bob", "carol"]
    assert ask["quorum"] == 2
    history_id = stream.history_id
    # The owner is not an approver, nor is an admin the setting does not name.
    titles = {
        "alice": "Not an approver of this call",
        "root": "Not authorized to access this history",
    }
    for user, title in titles.items():
        refused = await approve_as(api, user, history_id, ask)
        assert refused.status_code == 403, refused.text
        assert refused.json()["title"] == title
        assert (await api.get("/approvals", user=user)).json()["data"] == []
    # Each approver's inbox holds it, with the call's arguments.
    for user in ("bob", "carol"):
        inbox = (await api.get("/approvals", user=user)).json()["data"]
        assert [(i["historyId"], i["arguments"]) for i in inbox] == [(history_id, BOOKING)]
    first = await approve_as(api, "bob", history_id, ask)
    assert first.status_code == 200, first.text
    assert first.json()["data"]["status"] == "waiting"
    assert server_calls(tmp_path) == []
    view = await api.history(history_id)
    assert [a["userId"] for a in view["pendingAsk"]["approvedBy"]] == ["bob"]
    last = await approve_as(api, "carol", history_id, ask)
    assert last.status_code == 200, last.text
    assert last.json()["data"]["status"] == "answered"
    view = await settled(api, history_id)
    assert server_calls(tmp_path) == [{"tool": "book_table", "arguments": BOOKING}]
    result = [r for r in view["rows"] if r["type"] == "tool-result"][-1]
    assert not result.get("isError"), result
    assert "Booked a table for 2" in json.dumps(result["result"])
    audit = (await api.get("/audit?tool=bookings_book_table", user="root")).json()["data"]
    assert [(r["action"], r["actor"]) for r in reversed(audit)] == [
        ("gate.asked", "agent:helper"),
        ("gate.approved", "bob"),
        ("gate.approved", "carol"),
        ("gate.outcome", "agent:helper"),
    ]
    assert audit[0]["changes"]["status"] == "succeeded"
    assert audit[0]["tool"] == "bookings_book_table"


async def test_a_deny_ends_a_quorum_and_nothing_runs(api: Api, tmp_path: Path) -> None:
    created = await add_bookings(
        api, tmp_path, approvals={"approvers": ["bob", "carol"], "quorum": 2}
    )
    await set_level(api, created["id"], "non-consequential")
    stream = await api.say(call("bookings_book_table", BOOKING))
    ask = stream.ask
    assert (ask["approvers"], ask["quorum"]) == (["bob", "carol"], 2)
    history_id = stream.history_id
    assert (await approve_as(api, "bob", history_id, ask)).status_code == 200
    denied = await approve_as(
        api, "carol", history_id, ask, action="cancel", reason="We are closed that day"
    )
    assert denied.status_code == 200, denied.text
    view = await settled(api, history_id)
    assert server_calls(tmp_path) == []
    result = [r for r in view["rows"] if r["type"] == "tool-result"][-1]["result"]
    assert result["type"] == "execution-denied"
    assert "We are closed that day" in json.dumps(result)
    late = await approve_as(api, "bob", history_id, ask)
    assert late.status_code == 409
    audit = (await api.get("/audit?tool=bookings_book_table", user="root")).json()["data"]
    actions = [r["action"] for r in audit]
    assert actions[:2] == ["gate.outcome", "gate.denied"]


# --- edit, then approve -------------------------------------------------------------------------


async def test_edit_then_approve_sends_exactly_the_edit_once(api: Api, tmp_path: Path) -> None:
    created = await add_bookings(api, tmp_path)
    await set_level(api, created["id"], "read-only")
    stream = await api.say(call("bookings_book_table", BOOKING))
    ask = stream.ask
    assert ask["origin"] == "approval"
    history_id = stream.history_id
    # Against the MCP tool's inputSchema: a party of 40 is refused under its label.
    wrong = {**BOOKING, "party": 40}
    refused = await api.answer(
        history_id,
        ask["toolCallId"],
        {"action": "accept", "content": {"confirmed": True, "arguments": wrong}},
    )
    assert refused.status == 400, refused.problem
    assert refused.problem is not None
    fields = {f["path"]: f for f in refused.problem["fields"]}
    assert "content.arguments.party" in fields, refused.problem
    assert fields["content.arguments.party"]["message"].startswith("Party size")
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == ask["toolCallId"]
    assert server_calls(tmp_path) == []
    edited = {**BOOKING, "party": 4, "notes": "A window table"}
    answered = await api.answer(
        history_id,
        ask["toolCallId"],
        {"action": "accept", "content": {"confirmed": True, "arguments": edited}},
    )
    assert answered.status == 200, answered.problem
    assert server_calls(tmp_path) == [{"tool": "book_table", "arguments": edited}]
    result = [e["toolResult"] for e in answered.events if "toolResult" in e][-1]
    assert result["result"]["editedByUser"] is True
    assert result["result"]["changes"] == {
        "notes": {"from": "A table for two", "to": "A window table"},
        "party": {"from": 2, "to": 4},
    }
    assert "Booked a table for 4" in json.dumps(result["result"]["result"])
    assert "editedByUser" in answered.text
    # The stored call keeps the model's arguments; its result, the ones it ran with.
    rows = await api.rows(history_id)
    held = next(r for r in rows if r["type"] == "tool-call" and r["toolCallId"] == "call_1_0")
    assert held["args"] == BOOKING
    ran = next(r for r in rows if r["type"] == "tool-result" and r["toolCallId"] == "call_1_0")
    assert ran["executedArgs"] == edited
    audit = (await api.get("/audit")).json()["data"]
    approved = next(r for r in audit if r["action"] == "gate.approved")
    assert approved["changes"]["edit"]["fields"] == ["notes", "party"]
    assert "A window table" not in json.dumps(audit)


# --- an action set saved as a connection --------------------------------------------------------


async def test_an_action_sets_confirmation_waits_for_its_approvers(
    api: Api, tmp_path: Path
) -> None:
    async with serve_booking_api(create_booking_app()) as base_url:
        body = {
            "app": "custom",
            "name": "Tables",
            "kind": "actions",
            "actions": str(BOOKING_YAML),
            "settings": {"baseUrl": base_url},
            "trusted": True,
            "approvals": {
                "expiresAfter": 900,
                "tools": {"book_slot": {"approvers": ["bob", "carol"], "quorum": 2}},
            },
        }
        response = await api.post("/connections", body, user="root")
        assert response.status_code == 201, response.text
        created = response.json()["data"]
        assert created["status"]["state"] == "connected", created["status"]
        tools = {
            t["name"]: t["rules"]
            for t in (await api.get(f"/connections/{created['id']}/tools", user="root")).json()[
                "data"
            ]
        }
        assert tools["book_slot"] == {
            "approvers": ["bob", "carol"],
            "quorum": 2,
            "expiresAfter": 900,
            "remindAfter": None,
        }
        # A read-only action runs without a confirmation: no approver can hold it.
        held = await api.request(
            "PATCH",
            f"/connections/{created['id']}",
            user="root",
            json={"approvals": {"tools": {"find_slots": {"approvers": ["bob"]}}}},
        )
        assert held.status_code == 400, held.text
        assert "read-only action" in held.json()["fields"]["approvals.tools.find_slots.approvers"]
        await set_level(api, created["id"], "non-consequential")
        booking = {"date": "2026-12-24", "time": "19:00", "notes": "By the window"}
        stream = await api.say(call("tables_book_slot", booking))
        ask = stream.ask
        assert ask["origin"] == "confirmation"
        assert ask["toolName"] == "tables_book_slot"
        assert (ask["approvers"], ask["quorum"]) == (["bob", "carol"], 2)
        assert ask["preview"] == booking
        history_id = stream.history_id
        for user in ("bob", "carol"):
            inbox = (await api.get("/approvals", user=user)).json()["data"]
            assert [i["ask"]["preview"] for i in inbox] == [booking]
        assert (await approve_as(api, "root", history_id, ask)).status_code == 403
        first = await approve_as(api, "bob", history_id, ask)
        assert first.status_code == 200, first.text
        assert first.json()["data"]["status"] == "waiting"

        async def posted() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(base_url=base_url) as http:
                stats = (await http.get("/stats")).json()["requests"]
            return [r for r in stats if r["path"] == "/bookings"]

        assert await posted() == []
        last = await approve_as(api, "carol", history_id, ask)
        assert last.status_code == 200, last.text
        await settled(api, history_id)
        assert [r["method"] for r in await posted()] == ["POST"]
