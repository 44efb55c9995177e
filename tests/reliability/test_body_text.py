"""Text the databases cannot hold: NUL (U+0000) and lone surrogates (half of a UTF-16 pair, as
``JSON.stringify`` writes a cut emoji: ``"\\ud83d"``), in any string of any JSON body, value or
key, are refused with 400 naming the field before anything is stored, on SQLite and
PostgreSQL alike."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import db_state, problem, send_raw
from server_helpers import MARKDOWN, Api, command, start_api

from handrail.runtime.agent import Agent
from handrail.server.bodies import MAX_TEXT_PROBLEMS

NUL = "\\u0000"  # as the body carries them: JSON escapes
HALF = "\\ud83d"


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # {h} is the history, which waits on a markdown ask {t}
    body: str
    field: str  # the path `fields` names

    def render(self, history_id: str, tool_call_id: str) -> tuple[str, bytes]:
        fill = {"{h}": history_id, "{t}": tool_call_id}
        path, body = self.path, self.body
        for key, value in fill.items():
            path, body = path.replace(key, value), body.replace(key, value)
        return path, body.encode()


def answer(envelope: str) -> str:
    return '{"historyId": "{h}", "askResponse": {"toolCallId": "{t}", ' + envelope + "}}"


CASES = [
    Case("prompt", "POST", "/prompt", '{"prompt": "Plans ' + HALF + '"}', "prompt"),
    Case("prompt-nul", "POST", "/prompt", '{"prompt": "a' + NUL + 'b"}', "prompt"),
    Case(
        "prompt-in-history",
        "POST",
        "/prompt",
        '{"historyId": "{h}", "prompt": "' + NUL + '"}',
        "prompt",
    ),
    Case("agent", "POST", "/prompt", '{"prompt": "hi", "agent": "' + HALF + '"}', "agent"),
    Case(
        "answer",
        "POST",
        "/prompt",
        answer('"action": "accept", "content": {"markdown": "# Hi' + NUL + '", "changed": true}'),
        "askResponse.content.markdown",
    ),
    Case(
        "cancel-reason",
        "POST",
        "/prompt",
        answer('"action": "cancel", "reason": "' + HALF + '"'),
        "askResponse.reason",
    ),
    Case(
        "in-a-list",
        "POST",
        "/prompt",
        answer('"action": "accept", "content": {"markdown": "ok", "extra": ["a", "' + HALF + '"]}'),
        "askResponse.content.extra[1]",
    ),
    Case("key", "POST", "/prompt", '{"prompt": "hi", "x' + NUL + 'y": 1}', "x\\u0000y"),
    Case("create-title", "POST", "/histories", '{"title": "Plans ' + HALF + '"}', "title"),
    Case("update-title", "PATCH", "/histories/{h}", '{"title": "' + NUL + '"}', "title"),
    Case("turn-prompt", "POST", "/histories/{h}/turn", '{"prompt": "' + NUL + '"}', "prompt"),
    Case(
        "turn-answer",
        "POST",
        "/histories/{h}/turn",
        '{"askResponse": {"toolCallId": "{t}", "action": "cancel", "reason": "\\udc00"}}',
        "askResponse.reason",
    ),
    Case(
        "turn-button",
        "POST",
        "/histories/{h}/turn",
        '{"toolCallId": "{t}", "buttonId": "submit' + NUL + '"}',
        "buttonId",
    ),
]


async def paused_on_markdown(api: Api) -> tuple[str, str]:
    stream = await api.say(command("ask_markdown", MARKDOWN))
    return stream.history_id, stream.ask["toolCallId"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_text_that_cannot_be_stored_is_refused_naming_the_field(
    any_api: Api, case: Case
) -> None:
    history_id, tool_call_id = await paused_on_markdown(any_api)
    before = await db_state(any_api)
    path, body = case.render(history_id, tool_call_id)
    response = await send_raw(any_api, case.method, path, body)
    body_json = problem(response, 400)
    assert body_json["title"] == "Validation failed"
    assert body_json["code"] == "INVALID_FORMAT"
    [field] = body_json["fields"]
    assert field["path"] == case.field
    assert field["code"] == "INVALID_FORMAT"
    assert case.field in body_json["detail"]
    assert field["fix"] in body_json["detail"]
    kind = "NUL character" if NUL in case.body else "lone surrogate"
    assert kind in field["message"]
    assert await db_state(any_api) == before  # nothing stored, not even the cancel of the ask
    history = await any_api.history(history_id)
    assert history["pendingAsk"]["toolCallId"] == tool_call_id


async def test_a_permission_level_too(database_url: str, tmp_path: Path) -> None:
    agent = Agent("notes")

    @agent.tool(read_only=True)
    def list_notes() -> str:
        """List the notes."""
        return "none"

    async with start_api(database_url, tmp_path, agents=[agent]) as api:
        before = await db_state(api)
        body = b'{"level": "read-only\\u0000"}'
        response = await send_raw(api, "PUT", "/permissions/local:notes", body)
        assert problem(response, 400)["fields"][0]["path"] == "level"
        assert await db_state(api) == before
        fine = await send_raw(api, "PUT", "/permissions/local:notes", b'{"level": "read-only"}')
        assert fine.status_code == 200, fine.text


async def test_the_fix_says_how_to_send_the_text(api: Api) -> None:
    response = await send_raw(api, "POST", "/prompt", b'{"prompt": "x\\ud83d"}')
    [field] = problem(response, 400)["fields"]
    assert field["message"] == (
        "prompt holds a lone surrogate (U+D83D, character 2): half of a UTF-16 pair, which "
        "is not text and cannot be stored."
    )
    assert field["fix"].startswith("Send the whole character (both halves of the pair")
    response = await send_raw(api, "POST", "/prompt", b'{"prompt": "x\\u0000"}')
    [field] = problem(response, 400)["fields"]
    assert field["fix"] == "Remove the NUL character (U+0000) from the text."


async def test_a_surrogate_sent_as_raw_utf8_bytes_is_refused_too(any_api: Api) -> None:
    """json reads bytes with ``surrogatepass``: ED A0 BD is U+D83D, not an error."""
    before = await db_state(any_api)
    response = await send_raw(any_api, "POST", "/prompt", b'{"prompt": "x\xed\xa0\xbd"}')
    assert problem(response, 400)["fields"][0]["path"] == "prompt"
    utf16 = '{"title": "a\\u0000"}'.encode("utf-16")  # a UTF-16 body, an escaped NUL
    response = await send_raw(any_api, "POST", "/histories", utf16)
    assert problem(response, 400)["fields"][0]["path"] == "title"
    assert await db_state(any_api) == before


async def test_every_such_text_is_named_in_order(api: Api) -> None:
    body = {"prompt": "a\x00", "agent": "\ud83d", "surface": "full"}
    raw = json.dumps(body).encode()  # json.dumps escapes both, as a browser would
    response = await send_raw(api, "POST", "/prompt", raw)
    answer_ = problem(response, 400)
    assert [f["path"] for f in answer_["fields"]] == ["agent", "prompt"]
    assert "2 texts hold characters that cannot be stored (agent, prompt)" in answer_["detail"]
    many = json.dumps({"prompt": "hi", "list": ["\x00"] * 100}).encode()
    fields = problem(await send_raw(api, "POST", "/prompt", many), 400)["fields"]
    assert len(fields) == MAX_TEXT_PROBLEMS


@pytest.mark.parametrize(
    "text",
    [
        "Plans \U0001f600",  # a whole pair
        "\ud55c\uad6d\uc5b4",  # Korean: UTF-8 ED 95 9C, not a surrogate
        "\ud7ff\ue000\ufffd",  # the code points either side of the surrogates
        "tab\tand newline\n",
    ],
)
async def test_whole_text_is_stored_as_sent(any_api: Api, text: str) -> None:
    for raw in (json.dumps({"prompt": text}), json.dumps({"prompt": text}, ensure_ascii=False)):
        response = await send_raw(any_api, "POST", "/prompt", raw.encode("utf-8"))
        assert response.status_code == 200, response.text
    created = await send_raw(
        any_api, "POST", "/histories", json.dumps({"title": text.strip()}).encode()
    )
    assert created.status_code == 201, created.text
    assert created.json()["data"]["title"] == text.strip()
    rows = await any_api.rows(_history_of(response))
    assert rows[0] == {"type": "user", "text": text}


def _history_of(response: Any) -> str:
    last = [line for line in response.text.split("\n\n") if line.strip()][-1]
    return str(json.loads(last.removeprefix("data: "))["historyId"])


URLS = [
    ("GET", "/histories/%00", "url.path"),
    ("PATCH", "/histories/%00", "url.path"),
    ("DELETE", "/histories/%00", "url.path"),
    ("POST", "/histories/a%00b/turn", "url.path"),
    ("GET", "/confirmations/%00", "url.path"),
    ("DELETE", "/grants/%00", "url.path"),
    ("PUT", "/permissions/local:a%00", "url.path"),
    ("DELETE", "/permissions/local:a%00", "url.path"),
    ("GET", "/histories?cursor=%00", "url.query"),
    ("GET", "/histories/pendingAsks?limit=5%00", "url.query"),
]


@pytest.mark.parametrize(("method", "url", "field"), URLS, ids=[f"{m} {u}" for m, u, _ in URLS])
async def test_a_nul_in_the_url_is_refused_too(
    any_api: Api, method: str, url: str, field: str
) -> None:
    """An id, cursor or connection id with NUL in it never reaches the database (PostgreSQL
    refused it with a 500)."""
    before = await db_state(any_api)
    body = b'{"prompt": "hi"}' if method in ("POST", "PATCH", "PUT") else b""
    response = await send_raw(any_api, method, url, body)
    answer = problem(response, 400)
    assert answer["code"] == "INVALID_FORMAT"
    [error] = answer["fields"]
    assert error["path"] == field
    assert error["fix"].startswith("Remove %00 from the")
    assert await db_state(any_api) == before
