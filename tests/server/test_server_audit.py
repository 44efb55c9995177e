"""The audit log over HTTP: every gate asked and how it ended, with the surface an answer came
from (``X-Handrail-Via``), who may read it (the owner, an admin; not another user), filters,
paging, the JSON Lines and CSV exports, and a canary: a secret-looking argument never appears
in it (only digests) — on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gates_helpers import NotesApp, call, notes_api, set_level
from server_helpers import Api

CANARY = "sk-CANARY-7f3e91"


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
