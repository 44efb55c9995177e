"""The audit log over HTTP: every gate asked and how it ended, with the surface an answer came
from (``X-Handrail-Via``), who may read it (the owner, an admin; not another user), filters,
paging, the JSON Lines and CSV exports, and a canary: a secret-looking argument never appears
in it (only digests) — on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gates_helpers import NotesApp, call, notes_api, set_level
from server_helpers import Api

from handrail.runtime.tools import ToolSet

CANARY = "sk-CANARY-7f3e91"
APPROVE = {"action": "accept", "content": {"confirmed": True}}


@pytest.fixture
def notes() -> NotesApp:
    return NotesApp()


@pytest.fixture
async def api(database_url: str, tmp_path: Path, notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(database_url, tmp_path, notes) as opened:
        yield opened


async def test_the_audit_log_records_each_gate_and_who_answered_from_where(api: Api) -> None:
    await set_level(api, "non-consequential")
    stream = await api.say(call("delete_note", {"title": CANARY}))
    ask = stream.ask
    response = await api.request(
        "POST",
        f"/histories/{stream.history_id}/turn",
        json={"askResponse": {"toolCallId": ask["toolCallId"], "action": "cancel", "reason": "No"}},
        headers={"X-Handrail-Via": "watch"},
    )
    assert response.status_code == 200, response.text
    page = await api.get("/audit")
    assert page.status_code == 200, page.text
    records = page.json()["data"]
    assert [r["action"] for r in records] == ["gate.outcome", "gate.denied", "gate.asked"]
    denied = records[1]
    assert denied["actor"] == "alice"
    assert denied["changes"]["via"] == "watch"
    assert denied["changes"]["reason"] == "No"
    assert denied["tool"] == "delete_note"
    assert records[0]["changes"]["status"] == "denied"
    assert "argumentsDigest" in records[2]["changes"]
    # Another user sees none of it; an admin sees it all; filters narrow it.
    assert (await api.get("/audit", user="bob")).json()["data"] == []
    assert len((await api.get("/audit", user="root")).json()["data"]) == 3
    assert (await api.get("/audit?tool=other", user="root")).json()["data"] == []
    assert len((await api.get("/audit?user=alice&limit=2", user="root")).json()["data"]) == 2
    bad = await api.get("/audit?since=yesterday")
    assert bad.status_code == 400
    assert "since" in bad.json()["detail"]
    # Exports hold the same records, and never the argument itself.
    jsonl = await api.get("/audit?format=jsonl")
    assert jsonl.status_code == 200
    lines = [json.loads(line) for line in jsonl.text.splitlines()]
    assert [r["id"] for r in lines] == [r["id"] for r in records]
    exported = await api.get("/audit?format=csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [r["action"] for r in rows] == [r["action"] for r in records]
    for text in (page.text, jsonl.text, exported.text):
        assert CANARY not in text
        assert "data:" not in text


async def test_the_approver_inbox_is_empty_for_a_call_without_approvers(api: Api) -> None:
    await set_level(api, "non-consequential")
    await api.say(call("delete_note", {"title": "Old draft"}))
    inbox = await api.get("/approvals", user="bob")
    assert inbox.status_code == 200
    assert inbox.json()["data"] == []


@pytest.fixture
def vault_notes() -> NotesApp:
    """The notes app plus a vault whose wipe needs bob and an admin, and whose export needs an
    admin alone."""
    app = NotesApp()
    vault = ToolSet("local:vault", "Vault")

    @vault.tool(
        title="Wipe the vault",
        consequential=True,
        open_world=False,
        approvers=["bob", "admins"],
        quorum=2,
    )
    def wipe_vault(reason: str) -> str:
        """Wipe every secret in the vault."""
        app.ran.append("wipe_vault")
        return "Wiped."

    @vault.tool(consequential=True, open_world=False, approvers=["admins"])
    def export_vault() -> str:
        """Export the vault."""
        app.ran.append("export_vault")
        return "Exported."

    app.agent.add_tool_set(vault)
    return app


@pytest.fixture
async def vault_api(database_url: str, tmp_path: Path, vault_notes: NotesApp) -> AsyncIterator[Api]:
    async with notes_api(database_url, tmp_path, vault_notes) as opened:
        yield opened


async def test_a_quorum_over_http(vault_api: Api, vault_notes: NotesApp) -> None:
    api = vault_api
    await set_level(api, "non-consequential", "local:vault")
    stream = await api.say(call("wipe_vault", {"reason": "Rotate everything"}))
    ask = stream.ask
    assert ask["approvers"] == ["bob", "admins"]
    assert ask["quorum"] == 2
    history_id = stream.history_id
    # The owner is no approver: approving is refused; the ask stays pending.
    mine = await api.answer(history_id, ask["toolCallId"], APPROVE)
    assert mine.status == 403
    assert mine.problem["title"] == "Not an approver of this call"
    # Each approver's inbox holds it, with the call and no more of the conversation.
    for user in ("bob", "root"):
        inbox = (await api.get("/approvals", user=user)).json()["data"]
        assert [i["historyId"] for i in inbox] == [history_id]
        assert inbox[0]["arguments"] == {"reason": "Rotate everything"}
        assert inbox[0]["ownerId"] == "alice"
        assert "responseMessages" not in json.dumps(inbox)
    assert (await api.get("/approvals")).json()["data"] == []
    # An approver may not read the conversation itself.
    assert (await api.get(f"/histories/{history_id}", user="bob")).status_code in (403, 404)
    first = await api.post(
        f"/approvals/{history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="bob"
    )
    assert first.status_code == 200, first.text
    assert first.json()["data"]["status"] == "waiting"
    assert [a["userId"] for a in first.json()["data"]["approvedBy"]] == ["bob"]
    again = await api.post(
        f"/approvals/{history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="bob"
    )
    assert again.status_code == 409
    # The owner sees who approved so far.
    view = await api.history(history_id)
    assert [a["userId"] for a in view["pendingAsk"]["approvedBy"]] == ["bob"]
    assert vault_notes.ran == []
    last = await api.post(
        f"/approvals/{history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="root"
    )
    assert last.status_code == 200, last.text
    assert last.json()["data"]["status"] == "answered"
    for _ in range(100):
        if vault_notes.ran:
            break
        await asyncio.sleep(0.05)
    assert vault_notes.ran == ["wipe_vault"]
    audit = (await api.get("/audit")).json()["data"]
    assert [(r["action"], r["actor"]) for r in reversed(audit)][:3] == [
        ("gate.asked", "agent:notes"),
        ("gate.approved", "bob"),
        ("gate.approved", "root"),
    ]
    # Bob reads the gates he answered, not the rest of alice's log.
    assert [r["action"] for r in (await api.get("/audit", user="bob")).json()["data"]] == [
        "gate.approved"
    ]


async def test_a_third_user_is_refused(vault_api: Api, vault_notes: NotesApp) -> None:
    api = vault_api
    await set_level(api, "non-consequential", "local:vault")
    stream = await api.say(call("export_vault"))
    ask = stream.ask
    assert ask["approvers"] == ["admins"]
    refused = await api.post(
        f"/approvals/{stream.history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="bob"
    )
    assert refused.status_code == 403
    assert (await api.get("/approvals", user="bob")).json()["data"] == []
    # A deny by the owner ends it; the admin then learns it is no longer pending.
    denied = await api.answer(
        stream.history_id, ask["toolCallId"], {"action": "cancel", "reason": "Not now"}
    )
    assert denied.status == 200
    late = await api.post(
        f"/approvals/{stream.history_id}",
        {"toolCallId": ask["toolCallId"], **APPROVE},
        user="root",
    )
    assert late.status_code == 409
    assert vault_notes.ran == []


async def test_the_audit_log_is_filtered_by_time(api: Api) -> None:
    """``since`` (inclusive) and ``until`` (exclusive) narrow the records to a time range, in
    the page and in the exports alike."""
    await set_level(api, "non-consequential")
    stream = await api.say(call("delete_note", {"title": "Old draft"}))
    denied = await api.answer(stream.history_id, stream.ask["toolCallId"], {"action": "cancel"})
    assert denied.status == 200
    records = (await api.get("/audit")).json()["data"]
    assert len(records) == 3
    stamps = sorted(r["created"] for r in records)
    first, last = stamps[0], stamps[-1]

    async def actions(query: str) -> list[str]:
        response = await api.get("/audit?" + query)
        assert response.status_code == 200, response.text
        return [r["action"] for r in response.json()["data"]]

    everything = [r["action"] for r in records]
    assert await actions(f"since={first}") == everything
    assert await actions(f"until={first}") == []
    assert await actions("since=2999-01-01T00:00:00Z") == []
    assert await actions("until=2999-01-01T00:00:00Z") == everything
    assert await actions(f"since={first}&until={first}") == []
    if first != last:
        assert await actions(f"until={last}") == [
            r["action"] for r in records if r["created"] < last
        ]
    exported = await api.get("/audit?format=jsonl&since=2999-01-01T00:00:00Z")
    assert exported.status_code == 200
    assert exported.text.strip() == ""


async def test_an_approver_sees_the_call_and_the_agents_last_message_only(
    vault_api: Api,
) -> None:
    api = vault_api
    await set_level(api, "non-consequential", "local:vault")
    chat = await api.say("The vault holds the old keys")
    stream = await api.say(call("wipe_vault", {"reason": "Rotate"}), history_id=chat.history_id)
    ask = stream.ask
    [item] = (await api.get("/approvals", user="bob")).json()["data"]
    assert set(item) == {"historyId", "ownerId", "ask", "agentMessage", "arguments"}
    assert item["agentMessage"] == "You said: The vault holds the old keys"
    assert item["arguments"] == {"reason": "Rotate"}
    assert item["ask"]["toolCallId"] == ask["toolCallId"]
    # Nothing else of the conversation: no rows or messages.
    text = json.dumps(item)
    for key in ("rows", "responseMessages", "messages"):
        assert f'"{key}"' not in text, key
