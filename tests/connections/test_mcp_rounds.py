"""The URL-required round of a call refused with -32042 (`handrail.connections.mcp_rounds`),
pure: which errors make one, what is kept with the pending ask, and the model's text when the
person says no. The round trip against a real server is in
tests/server/test_server_elicitation_url_error.py."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import UrlElicitationRequiredError

from handrail.connections.mcp_outcome import ElicitationNeeded, McpCallFailed
from handrail.connections.mcp_rounds import (
    INPUT_ROUNDS_MAX,
    URL_ELICITATIONS_MAX,
    URL_REQUIRED,
    next_key,
    refused_text,
    url_consent,
)


def refusal(count: int) -> types.ErrorData:
    pages = [
        types.ElicitRequestURLParams(
            message=f"Open page {n}.", url=f"https://example.com/{n}", elicitation_id=f"e{n}"
        )
        for n in range(1, count + 1)
    ]
    return UrlElicitationRequiredError(pages).error


def test_a_refusal_asks_for_its_first_url_and_keeps_them_all() -> None:
    made = url_consent(refusal(2), 1, server="Docs", tool="read")
    assert isinstance(made, ElicitationNeeded)
    assert made.request.mode == "url"
    assert made.request.url == "https://example.com/1"
    assert made.request.elicitation_id == "e1"
    assert made.request.server == "Docs"
    assert made.resume == {
        "protocol": URL_REQUIRED,
        "round": 1,
        "restarted": False,
        "requests": {
            "1": {
                "mode": "url",
                "message": "Open page 1.",
                "url": "https://example.com/1",
                "elicitationId": "e1",
            },
            "2": {
                "mode": "url",
                "message": "Open page 2.",
                "url": "https://example.com/2",
                "elicitationId": "e2",
            },
        },
        "order": ["1", "2"],
        "responses": {},
        "key": "1",
    }
    assert next_key({**made.resume, "responses": {"1": {"action": "accept"}}}) == "2"


def test_an_unreadable_refusal_is_a_plain_one() -> None:
    code = types.URL_ELICITATION_REQUIRED
    unreadable: list[Any] = [
        None,
        {},
        {"elicitations": []},
        {"elicitations": [{"mode": "url", "message": "no url"}]},
        {"elicitations": "https://example.com"},
    ]
    for data in unreadable:
        error = types.ErrorData(code=code, message="URL elicitation required", data=data)
        assert url_consent(error, 1, server="Docs", tool="read") is None, data


def test_too_many_pages_or_rounds_end_the_call() -> None:
    pages = url_consent(refusal(URL_ELICITATIONS_MAX + 1), 1, server="Docs", tool="read")
    assert isinstance(pages, McpCallFailed)
    assert str(pages) == (
        f"The server Docs refused the call of read until the user opens more than "
        f"{URL_ELICITATIONS_MAX} pages, so handrail stopped it. Tell the user."
    )
    enough = url_consent(refusal(URL_ELICITATIONS_MAX), INPUT_ROUNDS_MAX, server="D", tool="r")
    assert isinstance(enough, ElicitationNeeded)
    rounds = url_consent(refusal(1), INPUT_ROUNDS_MAX + 1, server="Docs", tool="read")
    assert isinstance(rounds, McpCallFailed)
    assert "more than 10 rounds of input in one call of read" in str(rounds)


def test_the_model_reads_who_said_no() -> None:
    made = url_consent(refusal(2), 1, server="Docs", tool="read")
    assert isinstance(made, ElicitationNeeded)
    state = made.resume
    assert refused_text({**state, "responses": {"1": {"action": "accept"}}}, "Docs", "read") is None
    declined = refused_text({**state, "responses": {"1": {"action": "decline"}}}, "Docs", "read")
    assert declined == (
        "The server Docs refused the call of read until the user opens https://example.com/1 (a "
        "page of its own, such as a sign-in); the user declined, so the call was not sent again "
        "and nothing was carried out. Tell the user the tool needs that step; do not call it "
        "again unless they ask."
    )
    both = {"1": {"action": "accept"}, "2": {"action": "cancel"}}
    cancelled = refused_text({**state, "responses": both}, "Docs", "read")
    assert cancelled is not None
    assert "opens https://example.com/2" in cancelled
    assert "the user cancelled the question" in cancelled
