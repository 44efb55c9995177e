"""MCP elicitation answered as asks, over HTTP, against real servers: the test server of
``tests/connections`` (the official SDK's server API) in both protocol modes (2026-07-28 with
``input_required`` rounds, and legacy with ``elicitation/create`` inside the open call), and the
npm everything server (legacy).

A tool call whose server asks for input pauses the turn on a pending ask (``origin:
"elicitation"``, with the connection and tool on it); the answer, validated as any answer of
its kind, goes back to the server as its `ElicitResult`, and the call goes on."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, Stream, sqlite_url, start_api

from handrail.connections import new_secret_key
from npm_packages import EVERYTHING, installed

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = ROOT / "tests" / "connections" / "mcp_test_server.py"
MODES = ["2026-07-28", "legacy"]

NAME_AND_AGE = {
    "type": "object",
    "properties": {
        "Full Name": {"type": "string", "title": "Your name", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c"]},
            "maxItems": 2,
        },
    },
    "required": ["Full Name"],
}


@pytest.fixture
async def eapi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        yield api


async def connect(
    api: Api,
    protocol: str,
    name: str = "Test",
    env: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body = {
        **extra,
        "app": "custom",
        "name": name,
        "kind": "mcp-stdio",
        "mcp": {"command": sys.executable, "args": [str(TEST_SERVER)], "env": env or {}},
        "protocol": protocol,
        "trusted": True,
    }
    response = await api.post("/connections", body, user="root")
    assert response.status_code == 201, response.text
    connection = dict(response.json()["data"])
    assert connection["status"]["state"] == "connected", connection["status"]
    level = await api.request(
        "PUT", f"/permissions/{connection['id']}", user="alice", json={"level": "read-only"}
    )
    assert level.status_code == 200, level.text
    return connection


def call(model_name: str, arguments: dict[str, Any] | None = None) -> str:
    return f"call {model_name} {json.dumps(arguments or {})}"


def elicit(schema: dict[str, Any], message: str = "A few details, please.") -> str:
    return call("test_elicit", {"message": message, "schema": json.dumps(schema)})


def results(stream: Stream) -> list[Any]:
    return [e["toolResult"]["result"] for e in stream.events if "toolResult" in e]


def accept(values: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"values": values}}


@pytest.mark.parametrize("protocol", MODES)
async def test_a_form_round_trip_maps_ids_and_values_back(eapi: Api, protocol: str) -> None:
    test = await connect(eapi, protocol)
    asked = await eapi.say(elicit(NAME_AND_AGE))
    ask = asked.ask
    assert ask["origin"] == "elicitation"
    assert ask["kind"] == "form"
    assert ask["connectionId"] == test["id"]
    assert ask["toolName"] == "test_elicit"
    assert ask["elicitation"] == {"mode": "form", "server": "Test"}
    assert ask["input"] == {
        "title": "Test asks",
        "prompt": "A few details, please.",
        "fields": [
            {
                "id": "full_name",
                "label": "Your name",
                "required": True,
                "type": "text",
                "maxLength": 40,
            },
            {"id": "age", "label": "Age", "type": "number", "integer": True, "min": 0, "max": 150},
            {
                "id": "tags",
                "label": "Tags",
                "type": "multiselect",
                "options": [
                    {"id": "a", "label": "a"},
                    {"id": "b", "label": "b"},
                    {"id": "c", "label": "c"},
                ],
                "helperText": "Pick at most 2",
            },
        ],
        "submitLabel": "Send",
        "allowDecline": True,
    }
    # The pending ask shows in the plain list as a plain form.
    listed = (await eapi.get("/histories/pendingAsks")).json()["data"]
    assert [a["kind"] for a in listed] == ["form"]
    done = await eapi.answer(
        asked.history_id, ask["toolCallId"], accept({"full_name": "Ada", "age": 36, "tags": []})
    )
    assert done.status == 200, done.problem
    assert results(done) == ['accept {"Full Name": "Ada", "age": 36}']
    assert (await eapi.history(asked.history_id))["pendingAsk"] is None


#: Every row of the mapping, in two requests of at most one form each (8 fields): the text
#: kinds and numbers, then the choices. Each property name is the server's own, not a field id.
EVERY_ROW = [
    {
        "type": "object",
        "properties": {
            "Nick": {"type": "string", "minLength": 2, "maxLength": 9, "default": "ada"},
            "Bio": {"type": "string", "maxLength": 5000},
            "Mail": {"type": "string", "format": "email"},
            "Site": {"type": "string", "format": "uri"},
            "Day": {"type": "string", "format": "date"},
            "At": {"type": "string", "format": "date-time"},
            "Score": {"type": "number", "minimum": 0.5, "maximum": 9.5},
            "Count": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["Nick"],
    },
    {
        "type": "object",
        "properties": {
            "Ok": {"type": "boolean", "default": True},
            "Size": {"type": "string", "enum": ["s", "m"]},
            "Hero": {
                "type": "string",
                "oneOf": [{"const": "h1", "title": "Hero one"}, {"const": "h2"}],
            },
            "Pet": {"type": "string", "enum": ["cat", "dog"], "enumNames": ["Cats", "Dogs"]},
            "Tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "minItems": 1,
                "maxItems": 2,
            },
            "Fish": {
                "type": "array",
                "items": {"anyOf": [{"const": "tuna", "title": "Tuna"}, {"const": "cod"}]},
            },
        },
        "required": ["Size"],
    },
]


@pytest.mark.parametrize("protocol", MODES)
async def test_every_mapping_row_goes_to_the_server_and_back(eapi: Api, protocol: str) -> None:
    """Each row of the mapping through a real server in both modes: the field each property
    becomes, and the answer the server hears under its own names and values."""
    await connect(eapi, protocol)
    words = await eapi.say(elicit(EVERY_ROW[0], "Words and numbers?"))
    fields = {f["id"]: f for f in words.ask["input"]["fields"]}
    assert {k: f["type"] for k, f in fields.items()} == {
        "nick": "text",
        "bio": "textarea",
        "mail": "email",
        "site": "url",
        "day": "date",
        "at": "datetime",
        "score": "number",
        "count": "number",
    }
    assert (fields["nick"]["minLength"], fields["nick"]["maxLength"]) == (2, 9)
    assert (fields["nick"]["default"], fields["nick"]["required"]) == ("ada", True)
    assert (fields["score"]["min"], fields["score"]["max"]) == (0.5, 9.5)
    assert fields["count"]["integer"] is True
    values = {
        "nick": "Ada",
        "bio": "Wrote the first program.",
        "mail": "ada@example.com",
        "site": "https://example.com/ada",
        "day": "1815-12-10",
        "at": "2026-12-04T19:00:00Z",
        "score": 9.5,
        "count": 3,
    }
    done = await eapi.answer(words.history_id, words.ask["toolCallId"], accept(values))
    assert done.status == 200, done.problem
    heard = {
        "At": "2026-12-04T19:00:00Z",
        "Bio": "Wrote the first program.",
        "Count": 3,
        "Day": "1815-12-10",
        "Mail": "ada@example.com",
        "Nick": "Ada",
        "Score": 9.5,
        "Site": "https://example.com/ada",
    }
    assert results(done) == [f"accept {json.dumps(heard, sort_keys=True)}"]

    choices = await eapi.say(elicit(EVERY_ROW[1], "Choices?"), history_id=words.history_id)
    fields = {f["id"]: f for f in choices.ask["input"]["fields"]}
    assert {k: f["type"] for k, f in fields.items()} == {
        "ok": "boolean",
        "size": "select",
        "hero": "select",
        "pet": "select",
        "tags": "multiselect",
        "fish": "multiselect",
    }
    assert fields["ok"]["default"] is True
    assert fields["size"]["required"] is True
    assert fields["hero"]["options"] == [
        {"id": "h1", "label": "Hero one"},
        {"id": "h2", "label": "h2"},
    ]
    assert [o["label"] for o in fields["pet"]["options"]] == ["Cats", "Dogs"]
    assert fields["tags"]["helperText"] == "Pick 1 to 2"
    assert fields["fish"]["options"][0] == {"id": "tuna", "label": "Tuna"}
    picked = {"ok": False, "size": "m", "hero": "h1", "pet": "dog", "tags": ["a", "c"]}
    done = await eapi.answer(choices.history_id, choices.ask["toolCallId"], accept(picked))
    assert done.status == 200, done.problem
    heard = {"Hero": "h1", "Ok": False, "Pet": "dog", "Size": "m", "Tags": ["a", "c"]}
    assert results(done) == [f"accept {json.dumps(heard, sort_keys=True)}"]


@pytest.mark.parametrize("protocol", MODES)
async def test_the_calls_timeout_stops_while_the_person_answers(eapi: Api, protocol: str) -> None:
    await connect(eapi, protocol, timeout=1)
    asked = await eapi.say(elicit(NAME_AND_AGE))
    await asyncio.sleep(2.5)  # longer than the call may take, all of it spent waiting on a person
    done = await eapi.answer(
        asked.history_id, asked.ask["toolCallId"], accept({"full_name": "Ada"})
    )
    assert results(done) == ['accept {"Full Name": "Ada"}']
    # The clock still runs while the server works.
    slow = await eapi.say(call("test_slow", {"seconds": 3}), history_id=asked.history_id)
    [timed_out] = results(slow)
    assert "did not answer within 1 seconds" in timed_out


@pytest.mark.parametrize("protocol", MODES)
async def test_decline_and_cancel_reach_the_server(eapi: Api, protocol: str) -> None:
    await connect(eapi, protocol)
    asked = await eapi.say(elicit(NAME_AND_AGE))
    declined = await eapi.answer(asked.history_id, asked.ask["toolCallId"], {"action": "decline"})
    assert results(declined) == ["decline"]
    again = await eapi.say(elicit(NAME_AND_AGE), history_id=asked.history_id)
    cancelled = await eapi.answer(
        again.history_id, again.ask["toolCallId"], {"action": "cancel", "reason": "not now"}
    )
    assert results(cancelled) == ["cancel"]


@pytest.mark.parametrize("protocol", MODES)
async def test_an_invalid_answer_is_400_and_the_server_still_waits(
    eapi: Api, protocol: str
) -> None:
    await connect(eapi, protocol)
    asked = await eapi.say(elicit(NAME_AND_AGE))
    tool_call_id = asked.ask["toolCallId"]
    wrong = accept({"full_name": "", "age": 1.5, "tags": ["a", "b", "c"]})
    bad = await eapi.answer(asked.history_id, tool_call_id, wrong)
    assert bad.status == 400
    assert bad.problem is not None
    paths = {f["path"]: f["code"] for f in bad.problem["fields"]}
    assert paths == {
        "content.values.full_name": "REQUIRED_FIELD",
        "content.values.age": "FIELD_TYPE_MISMATCH",
    }
    too_many = await eapi.answer(
        asked.history_id, tool_call_id, accept({"full_name": "Ada", "tags": ["a", "b", "c"]})
    )
    assert too_many.status == 400
    assert too_many.problem is not None
    assert [(f["path"], f["code"]) for f in too_many.problem["fields"]] == [
        ("content.values.tags", "TOO_LONG")
    ]
    assert (await eapi.history(asked.history_id))["pendingAsk"]["toolCallId"] == tool_call_id
    done = await eapi.answer(asked.history_id, tool_call_id, accept({"full_name": "Ada"}))
    assert results(done) == ['accept {"Full Name": "Ada"}']


@pytest.mark.parametrize("protocol", MODES)
async def test_two_questions_follow_one_another(eapi: Api, protocol: str) -> None:
    await connect(eapi, protocol)
    asked = await eapi.say(call("test_elicit_two"))
    assert asked.ask["input"]["prompt"] == "Your name?"
    second = await eapi.answer(asked.history_id, asked.ask["toolCallId"], accept({"name": "Bo"}))
    assert results(second) == []
    assert second.ask["input"]["prompt"] == "Your color?"
    assert second.ask["input"]["fields"][0]["type"] == "select"
    done = await eapi.answer(asked.history_id, second.ask["toolCallId"], accept({"color": "blue"}))
    assert results(done) == ['accept {"name": "Bo"} | accept {"color": "blue"}']


async def test_rounds_are_bounded(eapi: Api) -> None:
    await connect(eapi, "2026-07-28")
    ran = await eapi.say(call("test_never_done"))
    assert results(ran) == [
        "The server Test asked for more than 10 rounds of input in one call of never_done, so "
        "handrail stopped it. Tell the user."
    ]


@pytest.mark.parametrize("protocol", MODES)
async def test_a_second_asking_call_in_the_same_step_waits_for_the_first(
    eapi: Api, protocol: str, tmp_path: Path
) -> None:
    heard = tmp_path / "heard.log"
    both = elicit(NAME_AND_AGE, "First?") + "\n" + elicit(NAME_AND_AGE, "Second?")
    await connect(eapi, protocol, env={"TEST_LOG": str(heard)})
    asked = await eapi.say(both)
    assert asked.ask["input"]["prompt"] == "First?"
    assert results(asked) == []  # neither call has finished: the second waits in line
    second = await eapi.answer(
        asked.history_id, asked.ask["toolCallId"], accept({"full_name": "A"})
    )
    assert results(second) == ['accept {"Full Name": "A"}']
    assert second.ask["input"]["prompt"] == "Second?"
    done = await eapi.answer(asked.history_id, second.ask["toolCallId"], accept({"full_name": "B"}))
    assert results(done) == ['accept {"Full Name": "B"}']
    assert heard.read_text().splitlines() == [
        'First?: accept {"Full Name": "A"}',
        'Second?: accept {"Full Name": "B"}',
    ]
    assert (await eapi.history(asked.history_id))["pendingAsk"] is None


async def test_a_legacy_request_while_two_calls_of_its_server_are_open_is_cancelled(
    eapi: Api, tmp_path: Path
) -> None:
    """A legacy server's request names no call (the SDK's request context carries only the
    request's own id and ``_meta``): with two calls of that server open in one process it
    cannot be told whose it is, so it is cancelled to the server, shown to nobody, and both
    calls end with their results."""
    log = tmp_path / "heard.log"
    await connect(eapi, "legacy", env={"TEST_LOG": str(log)})
    slow = asyncio.create_task(eapi.say(call("test_slow", {"seconds": 3})))
    running = eapi.app.state.runtime.stopper.running
    for _ in range(200):  # until the slow call is open on the server
        if any((t.progress or {}).get("phase") == "tool" for t in running.values()):
            break
        await asyncio.sleep(0.02)
    asking = await eapi.say(call("test_wait_then_elicit", {"seconds": 0.2}))
    working = await slow
    assert results(asking) == ["cancel"]
    assert results(working) == ["slept 3.0"]
    assert log.read_text().splitlines() == ["Waited: cancel"]
    for stream in (asking, working):
        assert not [e for e in stream.events if "ask" in e]
        assert (await eapi.history(stream.history_id))["pendingAsk"] is None
    # One call open: its request is shown as usual.
    alone = await eapi.say(call("test_wait_then_elicit", {"seconds": 0}))
    assert alone.ask["input"]["prompt"] == "Waited. Name?"
    done = await eapi.answer(alone.history_id, alone.ask["toolCallId"], accept({"name": "Cy"}))
    assert results(done) == ['accept {"name": "Cy"}']


@pytest.mark.parametrize("protocol", MODES)
async def test_an_empty_schema_is_a_confirm(eapi: Api, protocol: str) -> None:
    await connect(eapi, protocol)
    asked = await eapi.say(elicit({"type": "object", "properties": {}}, "Go ahead?"))
    assert asked.ask["kind"] == "confirm"
    assert asked.ask["input"]["prompt"] == "Go ahead?"
    yes = {"action": "accept", "content": {"confirmed": True}}
    done = await eapi.answer(asked.history_id, asked.ask["toolCallId"], yes)
    assert results(done) == ["accept {}"]


@pytest.mark.parametrize("protocol", MODES)
async def test_a_schema_no_form_holds_is_declined_and_the_model_told_why(
    eapi: Api, protocol: str
) -> None:
    await connect(eapi, protocol)
    nested = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    ran = await eapi.say(elicit(nested))
    assert ran.done.get("pendingToolCallId") is None
    [error] = results(ran)
    assert error.startswith("Test asked the user for input that handrail cannot show as a form")
    assert "holds fields of its own" in error
    assert error.endswith("The tool then answered: decline")


@pytest.mark.parametrize("protocol", MODES)
async def test_answered_from_the_headless_turn_endpoint_with_a_card_button(
    eapi: Api, protocol: str
) -> None:
    await connect(eapi, protocol)
    with_defaults = {
        "type": "object",
        "properties": {"city": {"type": "string", "default": "Lisbon"}},
        "required": ["city"],
    }
    asked = await eapi.say(elicit(with_defaults))
    buttons = [b["id"] for b in asked.ask["simple"]["buttons"]]
    assert buttons == ["submit-defaults", "cancel"]
    response = await eapi.post(
        f"/histories/{asked.history_id}/turn",
        {"toolCallId": asked.ask["toolCallId"], "buttonId": "submit-defaults"},
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert "pendingAsk" not in data
    assert data["text"] == 'test_elicit returned: "accept {\\"city\\": \\"Lisbon\\"}"'
    rows = (await eapi.history(asked.history_id))["rows"]
    answered = [r for r in rows if r.get("toolCallId") == asked.ask["toolCallId"]]
    assert answered[-1]["result"] == accept({"city": "Lisbon"})


class _Listener:
    """A loopback socket that counts every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.hits = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/sign-in?state=abc"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    one = _Listener()
    try:
        yield one
    finally:
        one.close()


@pytest.mark.parametrize("protocol", MODES)
async def test_a_url_elicitation_is_consent_and_never_fetched(
    eapi: Api, protocol: str, listener: _Listener
) -> None:
    await connect(eapi, protocol)
    asked = await eapi.say(call("test_open_page", {"url": listener.url}))
    ask = asked.ask
    assert ask["kind"] == "confirm"
    assert ask["elicitation"] == {"mode": "url", "server": "Test", "url": listener.url}
    assert ask["input"]["prompt"] == "Sign in to the example service."
    # The simple card (a watch, an email) shows the whole URL too, with the server's name.
    card = ask["simple"]
    assert card["title"] == "Test asks you to open a page"
    assert card["text"] == f"Sign in to the example service. {listener.url}"
    assert [b["id"] for b in card["buttons"]] == ["approve", "deny"]
    assert card["handoff"] is False
    view = await eapi.history(asked.history_id)
    assert view["pendingAsk"]["elicitation"]["url"] == listener.url
    yes = {"action": "accept", "content": {"confirmed": True}}
    done = await eapi.answer(asked.history_id, ask["toolCallId"], yes)
    assert results(done) == ["accept"]
    assert listener.hits == 0


@pytest.mark.parametrize("protocol", MODES)
async def test_a_url_too_long_for_the_card_is_only_declined_there(
    eapi: Api, protocol: str, listener: _Listener
) -> None:
    """A small screen never consents to a page it cannot show: when the URL does not fit the
    card whole, the card offers only the decline button and hands off; the full ask (which
    shows the whole URL) still allows it."""
    await connect(eapi, protocol)
    long_url = listener.url + "&scope=" + "calendar.read+" * 12
    asked = await eapi.say(call("test_open_page", {"url": long_url}))
    card = asked.ask["simple"]
    assert card["handoff"] is True
    assert [b["id"] for b in card["buttons"]] == ["deny"]
    assert card["buttons"][0]["response"] == {"action": "accept", "content": {"confirmed": False}}
    assert len(card["text"]) <= 140
    assert card["text"].startswith("Sign in to the example service.")
    refused = await eapi.post(
        f"/histories/{asked.history_id}/turn",
        {"toolCallId": asked.ask["toolCallId"], "buttonId": "approve"},
    )
    assert refused.status_code == 400, refused.text
    assert asked.ask["elicitation"]["url"] == long_url
    yes = {"action": "accept", "content": {"confirmed": True}}
    done = await eapi.answer(asked.history_id, asked.ask["toolCallId"], yes)
    assert results(done) == ["accept"]
    assert listener.hits == 0


async def test_a_legacy_call_whose_process_is_gone_is_cancelled_server_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    async with start_api(url, tmp_path) as first:
        await connect(first, "legacy")
        asked = await first.say(elicit(NAME_AND_AGE))
        assert asked.ask["origin"] == "elicitation"
    # The process that held the call stopped (its server with it); another answers.
    async with start_api(url, tmp_path) as second:
        done = await second.answer(
            asked.history_id, asked.ask["toolCallId"], accept({"full_name": "Ada"})
        )
        assert done.status == 200, done.problem
        resolved = [e["askResolved"] for e in done.events if "askResolved" in e]
        assert resolved == [{"toolCallId": asked.ask["toolCallId"], "action": "cancel"}]
        [error] = results(done)
        assert "reached a server process that does not hold the call" in error
        assert error.endswith("Call the tool again to ask once more.")
        rows = (await second.history(asked.history_id))["rows"]
        answer_rows = [r for r in rows if r.get("toolCallId") == asked.ask["toolCallId"]]
        assert answer_rows[-1]["result"] == {"action": "cancel", "reason": "server_restarted"}


async def test_a_2026_call_goes_on_in_a_new_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state of a 2026-07-28 call is stored with its ask: a new process (with a new server
    child sharing the state key) answers it."""
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    async with start_api(url, tmp_path) as first:
        await connect(first, "2026-07-28", env={"TEST_STATE_KEY": "k" * 40})
        asked = await first.say(elicit(NAME_AND_AGE))
    async with start_api(url, tmp_path) as second:
        done = await second.answer(
            asked.history_id, asked.ask["toolCallId"], accept({"full_name": "Ada", "age": 3})
        )
        assert results(done) == ['accept {"Full Name": "Ada", "age": 3}']


async def test_a_rejected_state_restarts_the_call_once_and_the_model_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a shared key the new server child rejects the old state (sealed by the first
    child under a key of its own): the call is started over once (asking again), and the model
    reads that it was."""
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    url = sqlite_url(tmp_path)
    async with start_api(url, tmp_path) as first:
        await connect(first, "2026-07-28")
        asked = await first.say(elicit(NAME_AND_AGE))
    async with start_api(url, tmp_path) as second:
        again = await second.answer(
            asked.history_id, asked.ask["toolCallId"], accept({"full_name": "Ada"})
        )
        assert results(again) == []
        assert again.ask["origin"] == "elicitation"
        done = await second.answer(
            asked.history_id, again.ask["toolCallId"], accept({"full_name": "Bea"})
        )
        [result] = results(done)
        assert result.startswith("(The server Test no longer accepted the earlier answers")
        assert result.endswith('accept {"Full Name": "Bea"}')


async def test_the_everything_servers_form_is_shown_as_consecutive_forms(eapi: Api) -> None:
    installed(EVERYTHING)
    body = {
        "app": "custom",
        "name": "Everything",
        "kind": "mcp-stdio",
        "mcp": {"command": str(EVERYTHING), "args": ["stdio"]},
        "protocol": "legacy",
        "trusted": True,
    }
    response = await eapi.post("/connections", body, user="root")
    everything = response.json()["data"]
    level = {"level": "read-only"}
    await eapi.request("PUT", f"/permissions/{everything['id']}", user="alice", json=level)
    approval = await eapi.say(call("everything_trigger-elicitation-request"))
    # The server says nothing of what the tool does, so it is approved first.
    assert approval.ask["origin"] == "approval"
    yes = {"action": "accept", "content": {"confirmed": True}}
    asked = await eapi.answer(approval.history_id, approval.ask["toolCallId"], yes)
    first = asked.ask
    assert first["origin"] == "elicitation"
    assert first["input"]["title"] == "Everything asks (1 of 2)"
    types = {f["id"]: f["type"] for f in first["input"]["fields"]}
    assert types == {
        "name": "text",
        "check": "boolean",
        "firstline": "text",
        "email": "email",
        "homepage": "url",
        "birthdate": "date",
        "integer": "number",
        "number": "number",
    }
    second = await eapi.answer(
        asked.history_id,
        first["toolCallId"],
        accept({"name": "Ada Lovelace", "check": True, "email": "ada@example.com"}),
    )
    page = second.ask["input"]
    assert page["title"] == "Everything asks (2 of 2)"
    by_id = {f["id"]: f for f in page["fields"]}
    assert by_id["untitledsingleselectenum"]["type"] == "select"
    assert by_id["titledmultipleselectenum"]["options"][0] == {"id": "fish-1", "label": "Tuna"}
    assert by_id["legacytitledenum"]["options"][1] == {"id": "pet-2", "label": "Dogs"}
    assert by_id["titledmultipleselectenum"]["default"] == ["fish-1"]
    done = await eapi.answer(
        asked.history_id,
        second.ask["toolCallId"],
        accept({"titledsingleselectenum": "hero-2", "untitledmultipleselectenum": ["piano"]}),
    )
    assert done.status == 200, done.problem
    [result] = results(done)
    assert result.startswith("\u2705 User provided the requested information!")
    assert "- Name: Ada Lovelace" in result
    assert '"titledSingleSelectEnum": "hero-2"' in result
    assert '"untitledMultipleSelectEnum": [\n      "Piano"\n    ]' in result
