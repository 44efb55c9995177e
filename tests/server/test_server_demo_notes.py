"""The demo's notes are each user's own: what alice adds, bob never lists, and bob deleting a
note leaves alice's notes as they were (a bug: the demo shared one list between users)."""

from __future__ import annotations

import json
from pathlib import Path

from server_helpers import Api, command, sqlite_url, start_api

from handrail.demo.agent import STARTING_NOTES, demo_agent


async def titles(api: Api, user: str) -> list[str]:
    stream = await api.prompt({"prompt": command("call list_notes", {})}, user=user)
    assert stream.status == 200, stream.problem
    [result] = [e["toolResult"] for e in stream.events if "toolResult" in e]
    notes = result["result"]
    if isinstance(notes, str):
        notes = json.loads(notes)
    return [note["title"] for note in notes]


async def test_each_user_has_their_own_notes(tmp_path: Path) -> None:
    start = [title for title, _ in STARTING_NOTES]
    agents = [demo_agent(model="scripted")]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents) as api:
        for user in ("alice", "bob"):
            saved = await api.request(
                "PUT", "/permissions/local:notes", user=user, json={"level": "non-consequential"}
            )
            assert saved.status_code == 200, saved.text
        added = await api.prompt(
            {"prompt": command("call add_note", {"title": "Alice only", "body": "Mine."})}
        )
        assert added.status == 200
        assert await titles(api, "alice") == [*start, "Alice only"]
        assert await titles(api, "bob") == start
        assert await titles(api, "alice") == [*start, "Alice only"]
