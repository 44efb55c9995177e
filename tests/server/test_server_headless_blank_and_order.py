"""The headless ``turn`` route's refusal of a blank prompt (the "Headless endpoints" table of
``agent-ui-asks.md``: status, title, code), and ``{askResolved}`` first in a prompt's stream that
cancels the pending ask while it offers page tools (its "SSE events")."""

from __future__ import annotations

import pytest
from server_helpers import Api, command

from examples import PLAN


@pytest.mark.parametrize("prompt", ["   ", "\n\t", " \u00a0 "])
async def test_a_blank_prompt_on_turn_is_the_headless_validation_failure(
    api: Api, prompt: str
) -> None:
    """The ``turn`` route answers a body it will not run with the headless table's 400
    (``Validation failed``, ``action-body-validation-failed``, ``fields``), as it does for
    ``""``, never with the chat route's ``prompt is required``; the pending ask stays."""
    stream = await api.say(command("ask_choice", PLAN))
    history_id, tool_call_id = stream.history_id, stream.ask["toolCallId"]
    response = await api.post(f"/histories/{history_id}/turn", {"prompt": prompt})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem == {
        "status": 400,
        "title": "Validation failed",
        "detail": "The body does not have the shape this route takes. See fields.",
        "code": "action-body-validation-failed",
        "fields": {"prompt": problem["fields"]["prompt"]},
        "requestId": response.headers["x-request-id"],
    }
    assert problem["fields"]["prompt"]
    # Nothing ran: the ask is still pending, and no row was added.
    history = await api.history(history_id)
    assert history["pendingAsk"]["toolCallId"] == tool_call_id
    assert [row["type"] for row in history["rows"]] == ["user", "tool-call"]


async def test_ask_resolved_comes_first_even_with_page_tools(api: Api) -> None:
    """``{askResolved}`` is the "first event of a turn that ... cancelled it with a new
    prompt" (SSE events): a prompt that carries the page's tools reports them after it."""
    origin = "http://127.0.0.1:8123"
    page_tools = {
        "origin": origin,
        "tools": [
            {
                "name": "list_notes",
                "description": "List every note.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": True},
            }
        ],
    }
    asked = await api.say(command("ask_choice", PLAN))
    tool_call_id = asked.ask["toolCallId"]
    follow = await api.say("Never mind", asked.history_id, pageTools=page_tools)
    kinds = [next(iter(event)) for event in follow.events]
    assert kinds[:2] == ["askResolved", "pageTools"]
    assert set(kinds[2:-1]) == {"text"}
    assert kinds[-1] == "done"
    assert follow.events[0] == {"askResolved": {"toolCallId": tool_call_id, "action": "cancel"}}
    assert follow.events[1]["pageTools"]["offered"] == ["list_notes"]
    assert follow.text == "You said: Never mind"
    # Without an ask to cancel, the page's tools are still the first event.
    again = await api.say("Hello", asked.history_id, pageTools=page_tools)
    assert next(iter(again.events[0])) == "pageTools"
