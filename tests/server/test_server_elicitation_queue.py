"""Only one ask at a time: an MCP server's request for input that comes while another ask holds
the conversation's one slot waits in line, over HTTP, against the SDK test server of
``tests/connections`` in both protocol modes (2026-07-28 ``input_required`` rounds, and legacy
``elicitation/create`` inside the open call).

The model asks something and calls an eliciting tool in one step: the person sees the model's
ask first; the call stays open (legacy) or its round is kept (2026-07-28), its timeout stopped;
once the ask is answered the elicitation becomes the pending ask, and then the call completes.
When the first ask is cancelled instead (a new message, Stop) the call waiting behind it ends
too: the server hears ``cancel`` (legacy; the test server writes what it heard to
``TEST_LOG``) and the model reads that the call did not finish. No call is left without a
result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from server_helpers import CONFIRM, Api, command, sqlite_url, start_api
from test_server_elicitation import MODES, NAME_AND_AGE, accept, connect, eapi, elicit, results

from handrail.connections import new_secret_key

__all__ = ["eapi"]  # the fixture, shared with test_server_elicitation

YES = {"action": "accept", "content": {"confirmed": True}}


def ask_then_elicit(message: str = "Who?") -> str:
    """One model step: the model's own confirm, then a call whose server asks for input."""
    return command("ask_confirm", CONFIRM) + "\n" + elicit(NAME_AND_AGE, message)


def elicit_result(rows: list[dict[str, Any]]) -> Any:
    """The result row of the eliciting call (exactly one)."""
    [found] = [
        r["result"]
        for r in rows
        if r.get("type") == "tool-result" and r.get("toolName") == "test_elicit"
    ]
    return found


async def heard(log: Path, lines: int) -> list[str]:
    """What the test server heard, once it wrote `lines` lines (bounded wait)."""
    for _ in range(200):
        if log.exists() and len(log.read_text().splitlines()) >= lines:
            break
        await asyncio.sleep(0.05)
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("protocol", MODES)
async def test_an_elicitation_waits_until_the_models_ask_is_answered(
    eapi: Api, protocol: str, tmp_path: Path
) -> None:
    log = tmp_path / "heard.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    asked = await eapi.say(ask_then_elicit())
    assert asked.ask["kind"] == "confirm"
    assert "origin" not in asked.ask  # the model's own ask holds the slot
    assert results(asked) == []  # the eliciting call has not finished
    view = await eapi.history(asked.history_id)
    assert view["pendingAsk"]["toolCallId"] == asked.ask["toolCallId"]
    assert "queued" not in view["pendingAsk"]  # what waits in line is never shown
    listed = (await eapi.get("/histories/pendingAsks")).json()["data"]
    assert [e["toolCallId"] for e in listed] == [asked.ask["toolCallId"]]
    assert not log.exists()  # the server has heard nothing yet

    answered = await eapi.answer(asked.history_id, asked.ask["toolCallId"], YES)
    assert answered.status == 200, answered.problem
    ask = answered.ask
    assert ask["origin"] == "elicitation"
    assert ask["input"]["prompt"] == "Who?"
    assert results(answered) == []  # the model was not called in between

    done = await eapi.answer(asked.history_id, ask["toolCallId"], accept({"full_name": "Ada"}))
    assert results(done) == ['accept {"Full Name": "Ada"}']
    assert await heard(log, 1) == ['Who?: accept {"Full Name": "Ada"}']
    text = "".join(e["text"] for e in done.events if "text" in e)
    assert 'test_elicit returned: "accept {\\"Full Name\\": \\"Ada\\"}"' in text
    assert (await eapi.history(asked.history_id))["pendingAsk"] is None


@pytest.mark.parametrize("protocol", MODES)
async def test_the_calls_timeout_stops_while_its_ask_waits_in_line(
    eapi: Api, protocol: str
) -> None:
    await connect(eapi, protocol, timeout=1)
    asked = await eapi.say(ask_then_elicit())
    await asyncio.sleep(2.5)  # longer than the call may take, all of it waiting in line
    answered = await eapi.answer(asked.history_id, asked.ask["toolCallId"], YES)
    await asyncio.sleep(1.5)  # and waiting on the person
    done = await eapi.answer(
        asked.history_id, answered.ask["toolCallId"], accept({"full_name": "Ada"})
    )
    assert results(done) == ['accept {"Full Name": "Ada"}']


@pytest.mark.parametrize("protocol", MODES)
async def test_a_new_message_ends_the_call_waiting_in_line(
    eapi: Api, protocol: str, tmp_path: Path
) -> None:
    log = tmp_path / "heard.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    asked = await eapi.say(ask_then_elicit())
    again = await eapi.say("Never mind.", history_id=asked.history_id)
    assert again.status == 200
    rows = await eapi.rows(asked.history_id)
    assert elicit_result(rows) == {"type": "execution-denied", "reason": "user_sent_message"}
    assert (await eapi.history(asked.history_id))["pendingAsk"] is None
    if protocol == "legacy":
        # The open call heard "cancel" and ended on the server.
        assert await heard(log, 1) == ["Who?: cancel"]
    else:
        assert not log.exists()  # nothing was open on the server: its round is dropped
    # The connection serves calls as before.
    after = await eapi.say(elicit(NAME_AND_AGE, "Again?"), history_id=asked.history_id)
    done = await eapi.answer(asked.history_id, after.ask["toolCallId"], accept({"full_name": "Bo"}))
    assert results(done) == ['accept {"Full Name": "Bo"}']


@pytest.mark.parametrize("protocol", MODES)
async def test_stop_ends_the_ask_and_the_call_waiting_in_line(
    eapi: Api, protocol: str, tmp_path: Path
) -> None:
    log = tmp_path / "heard.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    asked = await eapi.say(ask_then_elicit())
    stopped = await eapi.post(f"/histories/{asked.history_id}/stop")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["data"]["cancelledAsk"] == asked.ask["toolCallId"]
    rows = await eapi.rows(asked.history_id)
    assert elicit_result(rows) == {"type": "execution-denied", "reason": "stopped"}
    if protocol == "legacy":
        assert await heard(log, 1) == ["Who?: cancel"]
    else:
        assert not log.exists()
    assert (await eapi.history(asked.history_id))["pendingAsk"] is None


async def test_a_legacy_call_in_line_whose_process_is_gone_is_cancelled_server_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process holding the open call stopped while its ask waited in line: the answer to
    the first ask (in another process) brings it up, and its answer tells the model the call
    did not finish."""
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    async with start_api(url, tmp_path) as first:
        await connect(first, "legacy")
        asked = await first.say(ask_then_elicit())
    async with start_api(url, tmp_path) as second:
        answered = await second.answer(asked.history_id, asked.ask["toolCallId"], YES)
        assert answered.ask["origin"] == "elicitation"
        done = await second.answer(
            asked.history_id, answered.ask["toolCallId"], accept({"full_name": "Ada"})
        )
        [error] = results(done)
        assert "reached a server process that does not hold the call" in error
        assert (await second.history(asked.history_id))["pendingAsk"] is None


async def test_a_2026_call_in_line_goes_on_in_a_new_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2026-07-28 round waiting in line is stored with the pending ask: a new process asks it
    once the first ask is answered, and finishes the call."""
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    async with start_api(url, tmp_path) as first:
        await connect(first, "2026-07-28", env={"TEST_STATE_KEY": "k" * 40})
        asked = await first.say(ask_then_elicit())
    async with start_api(url, tmp_path) as second:
        answered = await second.answer(asked.history_id, asked.ask["toolCallId"], YES)
        assert answered.ask["input"]["prompt"] == "Who?"
        done = await second.answer(
            asked.history_id, answered.ask["toolCallId"], accept({"full_name": "Ada"})
        )
        assert results(done) == ['accept {"Full Name": "Ada"}']
