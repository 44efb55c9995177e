"""A tool call refused with the JSON-RPC error -32042 (`URLElicitationRequiredError`, MCP
2025-11-25 "URL mode elicitation"), over HTTP, against the SDK test server of
``tests/connections`` in both protocol modes (its ``needs_page`` tool raises the SDK's
`UrlElicitationRequiredError`, which reaches the client as that error in either mode).

Each URL the error lists becomes the URL consent ask (a ``confirm`` with ``elicitation: {mode:
"url", url}``), one after another; handrail never fetches a URL (a loopback listener counts
every connection made to it). Once the person consented to all, the call is sent again with the
same arguments, exactly once per refusal and never before; a decline or cancel ends the call
with the model told so, and nothing is sent again. The test server counts its calls in
``TEST_LOG``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, sqlite_url, start_api
from test_server_elicitation import MODES, _Listener, call, connect, eapi, listener, results

from handrail.connections import new_secret_key

__all__ = ["eapi", "listener"]  # the fixtures, shared with test_server_elicitation

YES = {"action": "accept", "content": {"confirmed": True}}
NO = {"action": "accept", "content": {"confirmed": False}}


def needs_page(url: str, **extra: Any) -> str:
    return call("test_needs_page", {"url": url, **extra})


def calls(log: Path) -> list[str]:
    """The calls the test server had, as it wrote them (one line each, before it answered)."""
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("protocol", MODES)
async def test_the_refused_call_asks_consent_and_is_sent_again_once(
    eapi: Api, protocol: str, listener: _Listener, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    test = await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    asked = await eapi.say(needs_page(listener.url))
    ask = asked.ask
    assert results(asked) == []
    assert ask["origin"] == "elicitation"
    assert ask["kind"] == "confirm"
    assert ask["connectionId"] == test["id"]
    assert ask["toolName"] == "test_needs_page"
    assert ask["elicitation"] == {"mode": "url", "server": "Test", "url": listener.url}
    assert ask["input"]["title"] == "Test asks you to open a page"
    assert ask["input"]["prompt"] == "Sign in to the example service (page 1 of 1)."
    assert ask["simple"]["text"] == f"Sign in to the example service (page 1 of 1). {listener.url}"
    view = await eapi.history(asked.history_id)
    assert view["pendingAsk"]["elicitation"]["url"] == listener.url
    assert "mcp" not in view["pendingAsk"]
    # Refused once; nothing is sent again while the person has not consented.
    assert calls(log) == ["needs_page: call 1"]
    done = await eapi.answer(asked.history_id, ask["toolCallId"], YES)
    assert done.status == 200, done.problem
    assert results(done) == ["signed in after 2 calls"]
    assert calls(log) == ["needs_page: call 1", "needs_page: call 2"]
    assert listener.hits == 0


@pytest.mark.parametrize("protocol", MODES)
async def test_several_pages_are_asked_one_after_another(
    eapi: Api, protocol: str, listener: _Listener, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    asked = await eapi.say(needs_page(listener.url, pages=2))
    assert asked.ask["elicitation"]["url"] == listener.url
    second = await eapi.answer(asked.history_id, asked.ask["toolCallId"], YES)
    assert results(second) == []
    assert second.ask["kind"] == "confirm"
    assert second.ask["elicitation"]["url"] == f"{listener.url}&page=2"
    assert second.ask["input"]["prompt"] == "Sign in to the example service (page 2 of 2)."
    assert calls(log) == ["needs_page: call 1"]
    done = await eapi.answer(asked.history_id, second.ask["toolCallId"], YES)
    assert results(done) == ["signed in after 2 calls"]
    assert calls(log) == ["needs_page: call 1", "needs_page: call 2"]
    assert listener.hits == 0


@pytest.mark.parametrize("protocol", MODES)
async def test_a_decline_or_cancel_ends_the_call_and_nothing_is_sent_again(
    eapi: Api, protocol: str, listener: _Listener, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    # The card's Decline button on the first of two pages: the second is never asked.
    asked = await eapi.say(needs_page(listener.url, pages=2))
    declined = await eapi.answer(asked.history_id, asked.ask["toolCallId"], NO)
    assert declined.status == 200, declined.problem
    assert [e for e in declined.events if "ask" in e] == []
    [text] = results(declined)
    assert text.startswith(
        f"The server Test refused the call of needs_page until the user opens {listener.url} "
    )
    assert "the user declined, so the call was not sent again and nothing was carried out" in text
    assert calls(log) == ["needs_page: call 1"]
    # A cancel says so; the next call of the tool is a new one (refused, then asked again).
    again = await eapi.say(needs_page(listener.url, times=5), history_id=asked.history_id)
    cancelled = await eapi.answer(
        again.history_id, again.ask["toolCallId"], {"action": "cancel", "reason": "not now"}
    )
    [text] = results(cancelled)
    assert "the user cancelled the question, so the call was not sent again" in text
    assert calls(log) == ["needs_page: call 1", "needs_page: call 2"]
    rows = (await eapi.history(asked.history_id))["rows"]
    errors = [r for r in rows if r.get("type") == "tool-result" and r.get("isError")]
    assert len(errors) == 2
    assert listener.hits == 0


@pytest.mark.parametrize("protocol", MODES)
async def test_rounds_of_refusals_are_bounded(
    eapi: Api, protocol: str, listener: _Listener, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    await connect(eapi, protocol, env={"TEST_LOG": str(log)})
    step = await eapi.say(needs_page(listener.url, times=100))
    for _ in range(9):
        step = await eapi.answer(step.history_id, step.ask["toolCallId"], YES)
        assert results(step) == []
    last = await eapi.answer(step.history_id, step.ask["toolCallId"], YES)
    assert results(last) == [
        "The server Test asked for more than 10 rounds of input in one call of needs_page, so "
        "handrail stopped it. Tell the user."
    ]
    assert len(calls(log)) == 11
    assert listener.hits == 0


@pytest.mark.parametrize("protocol", MODES)
async def test_the_consent_is_answered_in_a_new_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    """No call stays open while the person decides (in either mode): the refusal's URLs are
    stored with the pending ask, so another process (here after a restart, with a new server
    child) takes the consent and sends the call again."""
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    log = tmp_path / "calls.log"
    page = "https://example.com/sign-in?state=abc"
    async with start_api(url, tmp_path) as first:
        await connect(first, protocol, env={"TEST_LOG": str(log)})
        asked = await first.say(needs_page(page))
    async with start_api(url, tmp_path) as second:
        done = await second.answer(asked.history_id, asked.ask["toolCallId"], YES)
        assert done.status == 200, done.problem
        assert results(done) == ["signed in after 2 calls"]
    assert calls(log) == ["needs_page: call 1", "needs_page: call 2"]


async def test_a_refused_retry_is_sent_again_with_the_answers_it_carried(
    eapi: Api, listener: _Listener, tmp_path: Path
) -> None:
    """2026-07-28: the server asked for a name, then refused the retry that carried it with
    -32042. Once the person consented, that retry is sent again as it was (the name and the
    ``requestState``): the person is not asked for the name a second time."""
    log = tmp_path / "calls.log"
    await connect(eapi, "2026-07-28", env={"TEST_LOG": str(log)})
    asked = await eapi.say(call("test_name_then_page", {"url": listener.url}))
    assert asked.ask["kind"] == "form"
    name = {"action": "accept", "content": {"values": {"name": "Ada"}}}
    consent = await eapi.answer(asked.history_id, asked.ask["toolCallId"], name)
    assert consent.status == 200, consent.problem
    assert consent.ask["elicitation"] == {"mode": "url", "server": "Test", "url": listener.url}
    done = await eapi.answer(consent.history_id, consent.ask["toolCallId"], YES)
    assert done.status == 200, done.problem
    assert [e for e in done.events if "ask" in e] == []
    assert results(done) == ['signed in, accept {"name": "Ada"}']
    heard = ['name_then_page: accept {"name": "Ada"}']
    assert calls(log) == ["name_then_page: asked", *heard, *heard]
    assert listener.hits == 0
