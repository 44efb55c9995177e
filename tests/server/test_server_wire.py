"""Asks end to end over HTTP with the scripted model, on SQLite and PostgreSQL: the spec's wire
example, each kind paused and answered, decline and cancel, several asks, the compact surface."""

from __future__ import annotations

from typing import Any

from server_helpers import CONFIRM, FILES, FORM, MARKDOWN, Api, command, compact

from examples import PLAN, plan_card


async def test_wire_example(any_api: Api) -> None:
    """The spec's "Wire example": turn 1 asks, turn 2 answers; four rows."""
    turn1 = await any_api.say(command("ask_choice", PLAN))
    assert [next(iter(e)) for e in turn1.events] == ["ask", "done"]
    ask_event = turn1.events[0]
    history_id = ask_event["historyId"]
    tool_call_id = ask_event["ask"]["toolCallId"]
    assert ask_event == {
        "ask": {
            "input": PLAN,
            "kind": "choice",
            "simple": plan_card(tool_call_id),
            "toolCallId": tool_call_id,
        },
        "historyId": history_id,
    }
    done = dict(turn1.done)
    assert isinstance(done.pop("title"), str)
    assert done == {
        "done": True,
        "historyId": history_id,
        "pendingAsk": {"toolCallId": tool_call_id},
    }

    answer = {"action": "accept", "content": {"selected": ["team"]}}
    turn2 = await any_api.answer(history_id, tool_call_id, answer)
    assert turn2.status == 200, turn2.problem
    assert turn2.events[0] == {"askResolved": {"action": "accept", "toolCallId": tool_call_id}}
    assert turn2.text == f"ask_choice returned: {compact(answer)}"
    done2 = turn2.done
    assert done2["historyId"] == history_id
    assert "pendingAsk" not in done2
    assert set(done2) <= {"done", "historyId", "title"}

    assert await any_api.rows(history_id) == [
        {"type": "user", "text": command("ask_choice", PLAN)},
        {
            "type": "tool-call",
            "toolName": "ask_choice",
            "toolCallId": tool_call_id,
            "args": PLAN,
            "ask": {"kind": "choice", "status": "answered"},
        },
        {
            "type": "tool-result",
            "toolName": "ask_choice",
            "toolCallId": tool_call_id,
            "result": answer,
        },
        {"type": "assistant", "text": turn2.text},
    ]
    assert (await any_api.history(history_id))["pendingAsk"] is None


async def _pause(api: Api, tool: str, args: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    stream = await api.say(command(tool, args))
    ask = stream.ask
    assert stream.done["pendingAsk"] == {"toolCallId": ask["toolCallId"]}
    return stream.history_id, ask["toolCallId"], ask


async def _answer_and_check(
    api: Api, tool: str, args: dict[str, Any], answer: dict[str, Any], status: str
) -> None:
    history_id, tool_call_id, ask = await _pause(api, tool, args)
    assert ask["kind"] == tool.removeprefix("ask_")
    assert ask["input"] == args
    stream = await api.answer(history_id, tool_call_id, answer)
    assert stream.status == 200, stream.problem
    assert stream.events[0] == {
        "askResolved": {"action": answer["action"], "toolCallId": tool_call_id}
    }
    assert stream.text == f"{tool} returned: {compact(answer)}"
    rows = await api.rows(history_id)
    assert [r["type"] for r in rows] == ["user", "tool-call", "tool-result", "assistant"]
    assert rows[1]["ask"] == {"kind": ask["kind"], "status": status}
    assert rows[2]["result"] == answer


async def test_choice_many(any_api: Api) -> None:
    args = {
        "prompt": "Which toppings?",
        "select": "many",
        "options": [
            {"id": "cheese", "label": "Cheese"},
            {"id": "ham", "label": "Ham"},
            {"id": "olives", "label": "Olives"},
        ],
    }
    answer = {"action": "accept", "content": {"selected": ["cheese", "olives"]}}
    await _answer_and_check(any_api, "ask_choice", args, answer, "answered")


async def test_confirm(any_api: Api) -> None:
    answer = {"action": "accept", "content": {"confirmed": True}}
    await _answer_and_check(any_api, "ask_confirm", CONFIRM, answer, "answered")


async def test_markdown(any_api: Api) -> None:
    answer = {"action": "accept", "content": {"markdown": "# We're live", "changed": True}}
    await _answer_and_check(any_api, "ask_markdown", MARKDOWN, answer, "answered")


async def test_form(any_api: Api) -> None:
    answer = {"action": "accept", "content": {"values": {"due": "2026-11-02"}}}
    await _answer_and_check(any_api, "ask_form", FORM, answer, "answered")


async def test_files_by_data_url(any_api: Api) -> None:
    history_id, tool_call_id, _ = await _pause(any_api, "ask_files", FILES)
    url = "data:text/plain;base64,aGVsbG8gcmVjZWlwdA=="  # "hello receipt"
    answer = {
        "action": "accept",
        "content": {
            "files": [{"url": url, "filename": "r.txt", "mimeType": "text/plain", "size": 13}]
        },
    }
    stream = await any_api.answer(history_id, tool_call_id, answer)
    assert stream.status == 200, stream.problem
    stored = {
        "action": "accept",
        "content": {"files": [{"filename": "r.txt", "mimeType": "text/plain", "size": 13}]},
    }
    assert stream.text == f"ask_files returned: {compact(stored)}"
    rows = await any_api.rows(history_id)
    assert rows[2]["result"] == stored


async def test_decline(any_api: Api) -> None:
    await _answer_and_check(any_api, "ask_choice", PLAN, {"action": "decline"}, "answered")


async def test_cancel(any_api: Api) -> None:
    answer = {"action": "cancel", "reason": "changed my mind"}
    await _answer_and_check(any_api, "ask_markdown", MARKDOWN, answer, "cancelled")


async def test_decline_not_allowed(api: Api) -> None:
    history_id, tool_call_id, _ = await _pause(api, "ask_confirm", CONFIRM)
    stream = await api.answer(history_id, tool_call_id, {"action": "decline"})
    assert stream.status == 400
    assert stream.problem is not None
    assert stream.problem["title"] == "Invalid askResponse"
    assert [f["code"] for f in stream.problem["fields"]] == ["DECLINE_NOT_ALLOWED"]
    assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == tool_call_id


async def test_two_asks_in_one_step(any_api: Api) -> None:
    stream = await any_api.say(command("ask_choice", PLAN) + "\n" + command("ask_confirm", CONFIRM))
    ask = stream.ask
    assert ask["kind"] == "choice"
    history_id = stream.history_id
    rows = await any_api.rows(history_id)
    second = rows[2]["toolCallId"]
    assert [(r["type"], r.get("ask")) for r in rows] == [
        ("user", None),
        ("tool-call", {"kind": "choice", "status": "pending"}),
        ("tool-call", {"kind": "confirm", "status": "cancelled"}),
        ("tool-result", None),
    ]
    assert rows[3] == {
        "type": "tool-result",
        "toolName": "ask_confirm",
        "toolCallId": second,
        "result": {"action": "cancel", "reason": "one_ask_at_a_time"},
    }
    answer = {"action": "accept", "content": {"selected": ["starter"]}}
    resumed = await any_api.answer(history_id, ask["toolCallId"], answer)
    assert resumed.status == 200, resumed.problem
    assert f"ask_choice returned: {compact(answer)}" in resumed.text


async def test_second_ask_after_an_answer(api: Api) -> None:
    history_id, first, _ = await _pause(api, "ask_choice", PLAN)
    stream = await api.answer(history_id, first, {"action": "decline"})
    assert stream.status == 200
    again = await api.say(command("ask_confirm", CONFIRM), history_id)
    second = again.ask["toolCallId"]
    assert second != first
    done = await api.answer(
        history_id, second, {"action": "accept", "content": {"confirmed": False}}
    )
    assert done.status == 200
    statuses = [r["ask"]["status"] for r in await api.rows(history_id) if "ask" in r]
    assert statuses == ["answered", "answered"]


async def test_invalid_ask_goes_back_to_the_model(api: Api) -> None:
    """An invalid ask makes no event; the model gets a tool error and asks again correctly."""
    bad = {**PLAN, "default": ["gold"]}
    stream = await api.say(command("ask_choice", bad) + "\n" + command("ask_choice", PLAN))
    assert [next(iter(e)) for e in stream.events] == ["ask", "done"]
    tool_call_id = stream.ask["toolCallId"]
    answer = {"action": "accept", "content": {"selected": ["team"]}}
    resumed = await api.answer(stream.history_id, tool_call_id, answer)
    assert resumed.status == 200
    lines = resumed.text.splitlines()
    assert lines[0].startswith("ask_choice failed: Invalid ask_choice input")
    assert lines[1] == f"ask_choice returned: {compact(answer)}"


async def test_invalid_ask_alone_gets_a_reply(api: Api) -> None:
    stream = await api.say(command("ask_choice", {**PLAN, "default": ["gold"]}))
    assert not any("ask" in e for e in stream.events)
    assert stream.text.startswith("ask_choice failed: Invalid ask_choice input")
    assert "pendingAsk" not in stream.done


async def test_plain_message(any_api: Api) -> None:
    stream = await any_api.say("Hello there")
    assert stream.text == "You said: Hello there"
    assert stream.done == {"done": True, "historyId": stream.history_id, "title": "Hello there"}
    again = await any_api.say("And again", stream.history_id)
    assert again.history_id == stream.history_id
    assert [r["type"] for r in await any_api.rows(stream.history_id)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_prompt_cancels_the_pending_ask(any_api: Api) -> None:
    history_id, tool_call_id, _ = await _pause(any_api, "ask_choice", PLAN)
    stream = await any_api.say("Never mind", history_id)
    assert stream.events[0] == {"askResolved": {"action": "cancel", "toolCallId": tool_call_id}}
    assert stream.text == "You said: Never mind"
    rows = await any_api.rows(history_id)
    assert rows[1]["ask"]["status"] == "cancelled"
    assert rows[2]["result"] == {"action": "cancel", "reason": "user_sent_message"}
    late = await any_api.answer(history_id, tool_call_id, {"action": "decline"})
    assert late.status == 409


class TestCompact:
    async def test_compact_choice_card_has_no_handoff(self, api: Api) -> None:
        args = {
            "prompt": "Which plan?",
            "select": "one",
            "options": [{"id": "a", "label": "Starter"}, {"id": "b", "label": "Team"}],
        }
        stream = await api.say(command("ask_choice", args), surface="compact")
        card = stream.ask["simple"]
        assert card["handoff"] is False
        assert [b["id"] for b in card["buttons"]] == ["option:a", "option:b", "skip"]

    async def test_markdown_on_compact_is_a_tool_error(self, api: Api) -> None:
        stream = await api.say(command("ask_markdown", MARKDOWN), surface="compact")
        assert not any("ask" in e for e in stream.events)
        assert stream.text.startswith("ask_markdown failed: ")
        assert "pendingAsk" not in stream.done

    async def test_choice_too_wide_for_compact_is_a_tool_error(self, api: Api) -> None:
        args = {
            "prompt": "Which one?",
            "select": "one",
            "options": [{"id": str(n), "label": f"Option {n}"} for n in range(4)],
        }
        stream = await api.say(command("ask_choice", args), surface="compact")
        assert not any("ask" in e for e in stream.events)
        assert stream.text.startswith("ask_choice failed: Invalid ask_choice input")

    async def test_compact_ask_answered_from_a_full_client(self, api: Api) -> None:
        stream = await api.say(command("ask_confirm", CONFIRM), surface="compact")
        assert stream.ask["simple"]["handoff"] is False
        answer = {"action": "accept", "content": {"confirmed": True}}
        resumed = await api.answer(stream.history_id, stream.ask["toolCallId"], answer)
        assert resumed.status == 200
        assert resumed.text == f"ask_confirm returned: {compact(answer)}"


async def test_asks_off_agent(api: Api) -> None:
    """With asks off, askResponse is ignored and prompt is required; no ask tools."""
    stream = await api.prompt({"prompt": command("ask_choice", PLAN), "agent": "quiet"})
    assert stream.status == 200
    assert not any("ask" in e for e in stream.events)
    assert stream.text.startswith("ask_choice failed: There is no tool named 'ask_choice'")
    ignored = await api.prompt(
        {
            "historyId": stream.history_id,
            "askResponse": {"toolCallId": "call_1_0", "action": "decline"},
        }
    )
    assert ignored.status == 400
    assert ignored.problem is not None
    assert ignored.problem["title"] == "prompt is required"
