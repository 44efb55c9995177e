"""The headless turn route's prompt on a history this app created: no read when nothing changed
(`LastCommits`, checked by `Store.turn_unchanged`), and when another app on the same database
(another process) changed it in between, the outcome of a fresh read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, command, start_api

from examples import PLAN


def count_loads(api: Api, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loads: list[str] = []
    real = api.store.load_turn

    async def load_turn(history_id: str) -> Any:
        loads.append(history_id)
        return await real(history_id)

    monkeypatch.setattr(api.store, "load_turn", load_turn)
    return loads


async def create(api: Api) -> str:
    response = await api.post("/histories", {})
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


async def turn(api: Api, history_id: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post(f"/histories/{history_id}/turn", body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


async def test_a_cycle_reads_nothing_before_its_prompt(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with start_api(database_url, tmp_path) as api:
        loads = count_loads(api, monkeypatch)
        history_id = await create(api)
        paused = await turn(api, history_id, {"prompt": command("ask_choice", PLAN)})
        answer = {"toolCallId": paused["pendingAsk"]["toolCallId"], "action": "accept"}
        answer["content"] = {"selected": ["team"]}
        await turn(api, history_id, {"askResponse": answer})
        again = await turn(api, history_id, {"prompt": "and now?"})
        assert again["text"] == "You said: and now?"
        assert loads == []
        rows = await api.rows(history_id)
        assert [r["type"] for r in rows] == [
            "user",
            "tool-call",
            "tool-result",
            "assistant",
            "user",
            "assistant",
        ]


@pytest.mark.parametrize("elsewhere", ["paused", "replied", "deleted"])
async def test_a_change_by_another_process_is_read_before_the_prompt(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: str
) -> None:
    async with (
        start_api(database_url, tmp_path / "a") as here,
        start_api(database_url, tmp_path / "b") as there,
    ):
        loads = count_loads(here, monkeypatch)
        history_id = await create(here)
        if elsewhere == "paused":
            asked = await turn(there, history_id, {"prompt": command("ask_choice", PLAN)})
            call_id = asked["pendingAsk"]["toolCallId"]
        elif elsewhere == "replied":
            await turn(there, history_id, {"prompt": "said there"})
        else:
            assert (await there.request("DELETE", f"/histories/{history_id}")).status_code == 200
        response = await here.post(f"/histories/{history_id}/turn", {"prompt": "mine"})
        assert loads == [history_id]  # the copy failed its check: read
        if elsewhere == "deleted":
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 200, response.text
        assert response.json()["data"]["text"] == "You said: mine"
        rows = await here.rows(history_id)
        if elsewhere == "paused":
            # The other process's ask is cancelled by this message, as after any read.
            assert [r["type"] for r in rows] == [
                "user",
                "tool-call",
                "tool-result",
                "user",
                "assistant",
            ]
            assert rows[2]["toolCallId"] == call_id
            assert rows[2]["result"] == {"action": "cancel", "reason": "user_sent_message"}
            history = await there.history(history_id)
            assert history["pendingAsk"] is None
        else:
            assert [(r["type"], r.get("text")) for r in rows] == [
                ("user", "said there"),
                ("assistant", "You said: said there"),
                ("user", "mine"),
                ("assistant", "You said: mine"),
            ]
