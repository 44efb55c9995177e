"""Text from tools, HTTP actions and models is made storable before it is stored.

A NUL cannot be stored in PostgreSQL's text or JSONB, and a lone surrogate is not UTF-8 (SQLite,
every client): either one in a tool's result, a model's text or its tool arguments used to fail
the turn, and the conversation with it for ever. `handrail._util.storable` replaces them with
U+FFFD; model adapters apply it to what they stream (`storable_stream`), host tools and HTTP
actions to their results, which then say so (`UNSTORABLE_NOTE`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import Api, Stream, start_api

from handrail._util import REPLACEMENT, storable, storable_text
from handrail.actions import ActionResult
from handrail.demo.booking_api import booking_action_set
from handrail.policy import ToolHints
from handrail.runtime.action_calls import ActionBinding, ActionCalls
from handrail.runtime.agent import Agent, Tool, ToolError
from handrail.runtime.messages import UserMessage
from handrail.runtime.models import storable_stream
from handrail.runtime.models.anthropic import AnthropicModel
from handrail.runtime.models.base import (
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
)
from handrail.runtime.models.openai import OpenAIModel
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.tools import UNSTORABLE_NOTE
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")

#: Text with what cannot be stored, and what can: emoji (astral, ZWJ), accents, U+FFFD itself.
UNSTORABLE = ["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"]
texts = st.lists(
    st.one_of(
        st.sampled_from([*UNSTORABLE, "😀", "👩\u200d👩\u200d👧", "é", "e\u0301", REPLACEMENT]),
        st.characters(codec=None),
    ),
    max_size=16,
).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def encodable(value: Any) -> bool:
    """True when every string in `value` is UTF-8 without NUL."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return "\x00" not in value
    if isinstance(value, dict):
        return all(encodable(k) and encodable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(encodable(v) for v in value)
    return True


def dirty(value: Any) -> bool:
    """True when some string of `value` has a NUL or a lone surrogate (a split pair is whole)."""
    return storable(value)[1]


# --- the pure function ------------------------------------------------------------------------


def test_storable_text_replaces_nul_and_lone_surrogates() -> None:
    assert storable_text("a\x00b") == ("a\ufffdb", True)
    assert storable_text("x\ud800y\udc00") == ("x\ufffdy\ufffd", True)
    assert storable_text("\udc00\ud800") == ("\ufffd\ufffd", True)  # low then high: no pair
    # A pair split in two code points is the character it makes.
    assert storable_text("\ud83d\ude00!") == ("😀!", False)
    clean = "Café 😀 \ufffd"
    assert storable_text(clean)[0] is clean


def test_storable_walks_keys_values_and_items() -> None:
    value = {"k\x00": ["ok", ("\ud800", 3)], "n": None, "t": True, "x": 1.5}
    assert storable(value) == (
        {"k\ufffd": ["ok", ("\ufffd", 3)], "n": None, "t": True, "x": 1.5},
        True,
    )
    clean = {"a": [1, "b", {"c": "😀"}]}
    cleaned, replaced = storable(clean)
    assert cleaned is clean
    assert not replaced


@settings(max_examples=200)
@given(json_values)
def test_storable_gives_storable_values(value: Any) -> None:
    cleaned, replaced = storable(value)
    assert encodable(cleaned)
    assert storable(cleaned) == (cleaned, False)  # idempotent
    assert replaced == (not encodable(_joined(value)))
    if not replaced and encodable(value):
        assert cleaned is value
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")


def _joined(value: Any) -> Any:
    """`value` with split surrogate pairs joined (what `storable` does silently)."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, dict):
        return {_joined(k): _joined(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_joined(v) for v in value]
    return value


# --- a runtime with tools that return anything -------------------------------------------------


class Echoing:
    """The scripted model, then (after tool results) `extra` text of its own, split where it
    falls: a model whose stream is made storable by the shared decorator."""

    def __init__(self) -> None:
        self.inner = ScriptedModel()
        self.extra = ""

    @property
    def name(self) -> str:
        return "echoing"

    @property
    def supports_tools(self) -> bool:
        return True

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        async for event in self.inner.stream(request):
            if isinstance(event, StepEnd) and self.extra:
                half = len(self.extra) // 2
                yield TextDelta(text=self.extra[:half])
                yield TextDelta(text=self.extra[half:])
            yield event


class Bench:
    """A runtime whose tools return (or fail with) whatever the test sets."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.value: Any = None
        self.seen: list[Any] = []
        self.model = Echoing()
        self.runtime = Runtime(
            store=store, agents=Agent("helper", tools=self.tools()), model=self.model
        )

    def tools(self) -> list[Tool]:
        def returns() -> Any:
            return self.value

        def fails() -> Any:
            raise ToolError(f"It broke: {self.value}")

        def echo(text: str) -> str:
            self.seen.append(text)
            return text

        def add_note(title: str, body: str) -> str:
            self.seen.append(title)
            return f"Added the note “{title}”."

        hints = ToolHints(read_only=True, open_world=False)
        return [
            Tool.from_function(returns, description="Returns the value.", read_only=True),
            Tool.from_function(fails, description="Fails.", read_only=True),
            Tool(
                name="echo",
                description="Echoes.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
                function=echo,
                hints=hints,
            ),
            Tool.from_function(add_note, description="Adds a note.", consequential=False),
        ]

    async def allow(self) -> None:
        await self.store.permissions.set("alice", "local:helper", "non-consequential")

    async def turn(self, prompt: str, history_id: str | None = None) -> list[dict[str, Any]]:
        turn = await self.runtime.start_prompt(ALICE, prompt, history_id=history_id)
        return [event async for event in turn.stream()]

    async def rows(self, history_id: str) -> list[dict[str, Any]]:
        return [row.data for row in await self.store.histories.rows(history_id)]


def call(tool: str, arguments: dict[str, Any]) -> str:
    # ensure_ascii: NUL and surrogates travel as \u escapes, so the prompt itself is clean.
    return f"call {tool} {json.dumps(arguments)}"


def assert_fine(events: list[dict[str, Any]]) -> str:
    """The turn did not fail; its history id."""
    assert not [e for e in events if "error" in e], events
    assert "done" in events[-1], events
    return str(events[-1]["historyId"])


def results(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {r["toolName"]: r["result"] for r in rows if r["type"] == "tool-result"}


@pytest.fixture
async def bench(database_url: str, tmp_path: Path) -> AsyncIterator[Bench]:
    store = await Store.open(database_url, blob_dir=tmp_path / "files")
    made = Bench(store)
    await made.allow()
    yield made
    await made.runtime.aclose()
    await store.close()


async def test_a_note_titled_with_a_nul_is_stored_and_later_turns_work(bench: Bench) -> None:
    """The issue's case: ``add_note`` with the title "a\\u0000b" for real, through a tool."""
    events = await bench.turn(call("add_note", {"title": "a\x00b", "body": "x"}))
    history_id = assert_fine(events)
    assert bench.seen == ["a\ufffdb"]  # the tool got storable arguments
    rows = await bench.rows(history_id)
    assert [r["args"] for r in rows if r["type"] == "tool-call"] == [
        {"title": "a\ufffdb", "body": "x"}
    ]
    assert results(rows) == {"add_note": "Added the note “a\ufffdb”."}
    for prompt in ("hello", "again"):
        assert_fine(await bench.turn(prompt, history_id))
    assert [r["text"] for r in await bench.rows(history_id) if r["type"] == "assistant"][-1] == (
        "You said: again"
    )


async def test_a_tool_result_with_a_lone_surrogate_says_it_was_replaced(bench: Bench) -> None:
    bench.value = {"title": "x\ud800", "list": ["\x00"]}
    history_id = assert_fine(await bench.turn(call("returns", {})))
    expected = {"result": {"title": "x\ufffd", "list": ["\ufffd"]}, "note": UNSTORABLE_NOTE}
    assert results(await bench.rows(history_id)) == {"returns": expected}
    bench.value = "plain \x00 text"
    history_id = assert_fine(await bench.turn(call("returns", {}), history_id))
    assert results(await bench.rows(history_id))["returns"] == (
        f"plain \ufffd text\n\n({UNSTORABLE_NOTE})"
    )
    bench.value = "\udfff"
    history_id = assert_fine(await bench.turn(call("fails", {}), history_id))
    rows = await bench.rows(history_id)
    failed = [r for r in rows if r["type"] == "tool-result" and r["toolName"] == "fails"]
    assert failed[-1]["result"] == f"It broke: \ufffd\n\n({UNSTORABLE_NOTE})"
    assert failed[-1]["isError"] is True
    assert_fine(await bench.turn("hello", history_id))


async def test_model_text_and_arguments_are_made_storable(bench: Bench) -> None:
    bench.model.extra = " and \x00 \ud83d\ude00 \udc00 \ud83d"
    history_id = assert_fine(await bench.turn(call("echo", {"text": "\ud800 \ud83d\ude00"})))
    assert bench.seen == ["\ufffd 😀"]
    texts = [r["text"] for r in await bench.rows(history_id) if r["type"] == "assistant"]
    assert texts[-1].endswith(" and \ufffd 😀 \ufffd \ufffd")
    assert_fine(await bench.turn("hello", history_id))


@contextlib.asynccontextmanager
async def _returning(
    returns: Callable[[], Any], database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[Api, Stream]]:
    """A server whose agent has the read-only tool `returns`, and a turn that called it (it did
    not fail)."""
    tool = Tool.from_function(returns, description="Returns a value.", read_only=True)
    async with start_api(database_url, tmp_path, agents=[Agent("helper", tools=[tool])]) as api:
        await api.store.permissions.set("alice", "local:helper", "read-only")
        stream = await api.say(call("returns", {}))
        assert not [e for e in stream.events if "error" in e]
        yield api, stream


async def test_through_the_server_the_history_reads_back(database_url: str, tmp_path: Path) -> None:
    """On SQLite a lone surrogate from a tool was a 500, and the history read as 500 for ever."""

    def returns() -> str:
        return "half \ud83d of it \x00"

    async with _returning(returns, database_url, tmp_path) as (api, stream):
        history = await api.history(stream.history_id)
        shown = [r for r in history["rows"] if r["type"] == "tool-result"]
        assert shown[0]["result"] == f"half \ufffd of it \ufffd\n\n({UNSTORABLE_NOTE})"
        await api.say("hello", stream.history_id)
        assert (await api.get(f"/histories/{stream.history_id}")).status_code == 200


async def test_nan_and_the_infinities_are_null_stored_shown_and_sent(
    database_url: str, tmp_path: Path
) -> None:
    """JSON has no NaN: a tool's NaN was a 500 when its history was read on SQLite, and a
    failed write on PostgreSQL (JSONB refuses it). It is null for the model, the store and
    the client alike; a float that is a number stays exactly that number."""

    def returns() -> dict[str, Any]:
        return {"ratio": math.nan, "bounds": [math.inf, -math.inf], "small": 1.5e-07}

    async with _returning(returns, database_url, tmp_path) as (api, stream):
        expected = {"ratio": None, "bounds": [None, None], "small": 1.5e-07}
        history = await api.history(stream.history_id)
        assert results(history["rows"]) == {"returns": expected}
        said = [r["text"] for r in history["rows"] if r["type"] == "assistant"]
        assert said == ['returns returned: {"ratio":null,"bounds":[null,null],"small":1.5e-7}']
        stored = await api.store.histories.rows(stream.history_id)
        assert results([r.data for r in stored]) == {"returns": expected}


# --- HTTP action results ----------------------------------------------------------------------


async def test_an_action_result_gets_a_note_field(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite:///{tmp_path / 'x.db'}", blob_dir=tmp_path / "files")
    async with httpx.AsyncClient() as client:
        calls = ActionCalls(store, client=client)
        action_set = booking_action_set("http://127.0.0.1:9")
        binding = ActionBinding(action_set=action_set, tool=action_set.tools["find_slots"])
        result = ActionResult(status="completed", http_status=200, data={"slots": ["\x00"]})
        step = calls._result(binding, result)
        assert step.result == {
            "status": "completed",
            "httpStatus": 200,
            "data": {"slots": ["\ufffd"]},
            "note": UNSTORABLE_NOTE,
        }
        clean = ActionResult(status="completed", http_status=200, data={"slots": []})
        assert "note" not in calls._result(binding, clean).result
    await store.close()


# --- the provider adapters --------------------------------------------------------------------


def _openai(body: str) -> OpenAIModel:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, content=body.encode(), headers={"content-type": "text/event-stream"}
        )

    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="https://llm.test/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    return OpenAIModel("gpt-4.1-mini", client=client)


def _anthropic(body: str) -> AnthropicModel:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, content=body.encode(), headers={"content-type": "text/event-stream"}
        )

    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        base_url="https://claude.test",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    return AnthropicModel("claude-test", client=client)


def _openai_sse() -> str:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n"

    call_fragment = {
        "index": 0,
        "id": "call_\x00",
        "type": "function",
        "function": {"name": "echo", "arguments": json.dumps({"text": "\x00\ud800"})},
    }
    return (
        chunk({"role": "assistant", "content": "a\x00"})
        + chunk({"content": "\ud83d"})
        + chunk({"content": "\ude00 \udfff"})
        + chunk({"tool_calls": [call_fragment]})
        + chunk({}, finish="tool_calls")
        + "data: [DONE]\n\n"
    )


def _anthropic_sse() -> str:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return (
        event("message_start", {"type": "message_start", "message": message})
        + event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        + event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "a\x00"},
            },
        )
        + event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "\ud83d"},
            },
        )
        + event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "\ude00 \udfff"},
            },
        )
        + event("content_block_stop", {"type": "content_block_stop", "index": 0})
        + event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_\x00",
                    "name": "echo",
                    "input": {},
                },
            },
        )
        + event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {
                    "type": "input_json_delta",
                    "partial_json": json.dumps({"text": "\x00\ud800"}),
                },
            },
        )
        + event("content_block_stop", {"type": "content_block_stop", "index": 1})
        + event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 2},
            },
        )
        + event("message_stop", {"type": "message_stop"})
    )


@pytest.mark.parametrize(
    "make",
    [lambda: _openai(_openai_sse()), lambda: _anthropic(_anthropic_sse())],
    ids=["openai", "anthropic"],
)
async def test_provider_adapters_stream_storable_text_and_arguments(
    make: Callable[[], OpenAIModel | AnthropicModel],
) -> None:
    model = make()
    request = ModelRequest(system="", messages=[UserMessage(text="hi")])
    try:
        events = [event async for event in model.stream(request)]
    finally:
        await model.client.close()
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "a\ufffd😀 \ufffd"
    (part,) = [e for e in events if isinstance(e, ToolCallPart)]
    assert part.call.id.endswith("_\ufffd")
    assert part.call.arguments == {"text": "\ufffd\ufffd"}
    assert all(encodable(e.text) for e in events if isinstance(e, TextDelta))


# --- the property: anything through a tool result, a model's text and tool arguments -----------


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_text_is_stored_read_back_and_later_turns_work(
    database_url: str, tmp_path: Path, data: st.DataObject
) -> None:
    value = data.draw(json_values, label="tool result")
    argument = data.draw(texts, label="tool argument")
    said = data.draw(texts, label="model text")
    with asyncio.Runner() as runner:
        runner.run(_example(database_url, tmp_path, value, argument, said))


async def _example(url: str, tmp_path: Path, value: Any, argument: str, said: str) -> None:
    store = await Store.open(url, blob_dir=tmp_path / "files")
    bench = Bench(store)
    try:
        await bench.allow()
        bench.value = value
        bench.model.extra = said
        prompt = call("returns", {}) + "\n" + call("echo", {"text": argument})
        history_id = assert_fine(await bench.turn(prompt))
        rows = await bench.rows(history_id)
        assert encodable(rows)
        stored = results(rows)
        expected, replaced = storable(value)
        if replaced:
            assert stored["returns"] == (
                f"{expected}\n\n({UNSTORABLE_NOTE})"
                if isinstance(expected, str)
                else {"result": expected, "note": UNSTORABLE_NOTE}
            )
        else:
            assert stored["returns"] == expected
        assert stored["echo"] == storable_text(argument)[0]
        assert bench.seen == [storable_text(argument)[0]]
        assert_fine(await bench.turn("and then?", history_id))
        later = await bench.rows(history_id)
        assert later[: len(rows)] == rows
        reply = "You said: and then?" + storable_text(said)[0]  # the model adds `said`
        assert later[-1] == {"type": "assistant", "text": reply}
    finally:
        await bench.runtime.aclose()
        await store.close()
