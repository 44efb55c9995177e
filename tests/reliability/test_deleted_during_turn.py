"""A conversation deleted while a turn on it runs: the turn ends with a clear error, not a
traceback in the log. (Found by racing prompts, answers and deletes on one conversation: a
prompt whose cancel of the pending ask met the deleted history logged "turn on history ...
failed" with HistoryNotFound's traceback and told the person only that the turn failed.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fuzzing import LogCapture
from server_helpers import Api, Stream, command, start_api

from examples import PLAN

DELETED = "The conversation was deleted during the turn."


@pytest.fixture
async def deleting_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    """An app whose store deletes a history right before the first change a turn applies to
    it, as a DELETE from another tab would, once `armed` names it."""
    async with start_api(database_url, tmp_path) as api:
        histories = api.store.histories
        original = histories.apply
        armed: set[str] = set()

        async def deleted_first(history_id: str, *args: Any, **kwargs: Any) -> Any:
            if history_id in armed:
                armed.discard(history_id)
                await histories.delete(history_id)
            return await original(history_id, *args, **kwargs)

        histories.apply = deleted_first  # type: ignore[method-assign]
        api.armed = armed  # type: ignore[attr-defined]
        yield api


async def test_a_prompt_cancelling_an_ask_of_a_deleted_conversation(deleting_api: Api) -> None:
    paused = await deleting_api.say(command("ask_choice", PLAN))
    deleting_api.armed.add(paused.history_id)  # type: ignore[attr-defined]
    with LogCapture() as logs:
        stream = await deleting_api.prompt({"historyId": paused.history_id, "prompt": "hi"})
    assert stream.status == 200
    assert stream.events == [{"error": DELETED}, {"done": True, "historyId": paused.history_id}]
    assert [r.getMessage() for r in logs.records] == []
    gone = await deleting_api.get(f"/histories/{paused.history_id}")
    assert gone.status_code == 404


async def test_a_headless_turn_on_a_conversation_deleted_meanwhile(deleting_api: Api) -> None:
    paused = await deleting_api.say(command("ask_choice", PLAN))
    deleting_api.armed.add(paused.history_id)  # type: ignore[attr-defined]
    with LogCapture() as logs:
        response = await deleting_api.post(f"/histories/{paused.history_id}/turn", {"prompt": "hi"})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["error"] == DELETED
    assert [r.getMessage() for r in logs.records] == []


async def test_an_answer_to_a_conversation_deleted_meanwhile(deleting_api: Api) -> None:
    paused = await deleting_api.say(command("ask_choice", PLAN))
    deleting_api.armed.add(paused.history_id)  # type: ignore[attr-defined]
    answer = {"action": "accept", "content": {"selected": ["team"]}}
    with LogCapture() as logs:
        stream: Stream = await deleting_api.answer(
            paused.history_id, paused.ask["toolCallId"], answer
        )
    # Deleted before the answer committed: the answer cannot be taken, and says why.
    assert stream.status in (200, 404), stream.problem
    if stream.status == 200:
        assert {"error": DELETED} in stream.events
    assert [r.getMessage() for r in logs.records] == []
