"""The Anthropic adapter against the Messages streaming wire format, through the SDK."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import httpx2
import pytest
from _model_wire import API_KEY, Handler, Recorder, collect, collect_until_error, sse_response

from handrail.errors import ConfigError
from handrail.runtime.messages import (
    AssistantMessage,
    FilePart,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from handrail.runtime.models import INVALID_ARGUMENTS_KEY, Model
from handrail.runtime.models.anthropic import AnthropicModel
from handrail.runtime.models.base import (
    ModelError,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    ToolSpec,
)

MakeClient = Callable[[Handler], anthropic.AsyncAnthropic]
MODEL = "claude-test"  # a made-up id: the SDK warns about retired ones

LOOKUP = ToolSpec(
    name="lookup",
    description="Look up a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
LOOKUP_WIRE = {
    "name": "lookup",
    "description": "Look up a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PDF = b"%PDF-1.7\n%test\n"


def message_start(input_tokens: int = 25) -> tuple[str, dict[str, Any]]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        },
    )


def text_start(index: int) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
    )


def text_delta(index: int, text: str) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "text_delta", "text": text},
        },
    )


def tool_start(index: int, id: str, name: str) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}},
        },
    )


def json_delta(index: int, partial: str) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": partial},
        },
    )


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str, output_tokens: int) -> tuple[str, dict[str, Any]]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
PING = ("ping", {"type": "ping"})


def sse(*events: tuple[str, dict[str, Any]]) -> httpx2.Response:
    return sse_response(
        "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    )


def text_reply(text: str) -> httpx2.Response:
    return sse(
        message_start(),
        text_start(0),
        text_delta(0, text),
        block_stop(0),
        message_delta("end_turn", 3),
        MESSAGE_STOP,
    )


@pytest.fixture
async def model_for(
    anthropic_client: MakeClient,
) -> AsyncIterator[Callable[..., tuple[AnthropicModel, Recorder]]]:
    models: list[AnthropicModel] = []

    def make(*responses: httpx2.Response, **options: Any) -> tuple[AnthropicModel, Recorder]:
        recorder = Recorder(list(responses))
        built = AnthropicModel(MODEL, client=anthropic_client(recorder), **options)
        models.append(built)
        return built, recorder

    yield make
    for built in models:
        await built.client.close()


def request(
    *messages: Message, tools: tuple[ToolSpec, ...] = (), system: str = "Be brief."
) -> ModelRequest:
    return ModelRequest(system=system, messages=list(messages), tools=tools)


async def test_plain_text(model_for: Callable[..., tuple[AnthropicModel, Recorder]]) -> None:
    model, recorder = model_for(
        sse(
            message_start(25),
            text_start(0),
            PING,
            text_delta(0, "Hel"),
            text_delta(0, "lo!"),
            block_stop(0),
            message_delta("end_turn", 15),
            MESSAGE_STOP,
        )
    )
    events = await collect(model, request(UserMessage(text="Hi")))
    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo!"),
        StepEnd(finish_reason="end_turn", usage={"input_tokens": 25, "output_tokens": 15}),
    ]
    assert recorder.bodies == [
        {
            "model": MODEL,
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            "stream": True,
        }
    ]
    sent = recorder.requests[0]
    assert sent.url == "https://claude.test/v1/messages"
    # Older SDKs send the key as x-api-key, newer ones as a bearer token.
    sent_key = sent.headers.get("x-api-key") or sent.headers["authorization"].removeprefix(
        "Bearer "
    )
    assert sent_key == API_KEY


async def test_one_tool_call_in_fragments(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, recorder = model_for(
        sse(
            message_start(40),
            tool_start(0, "toolu_01", "lookup"),
            json_delta(0, ""),
            json_delta(0, '{"ci'),
            json_delta(0, 'ty": "Os'),
            json_delta(0, 'lo"}'),
            block_stop(0),
            message_delta("tool_use", 30),
            MESSAGE_STOP,
        )
    )
    events = await collect(
        model, request(UserMessage(text="Weather in Oslo?"), tools=(LOOKUP,), system="")
    )
    assert events == [
        ToolCallPart(call=ToolCall(id="toolu_01", name="lookup", arguments={"city": "Oslo"})),
        StepEnd(finish_reason="tool_use", usage={"input_tokens": 40, "output_tokens": 30}),
    ]
    assert recorder.bodies == [
        {
            "model": MODEL,
            "max_tokens": 4096,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}
            ],
            "stream": True,
            "tools": [LOOKUP_WIRE],
        }
    ]


async def test_text_and_two_tool_calls_in_one_step(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(
            message_start(50),
            text_start(0),
            text_delta(0, "Checking "),
            text_delta(0, "both."),
            block_stop(0),
            tool_start(1, "toolu_01", "lookup"),
            json_delta(1, '{"city":'),
            json_delta(1, ' "Oslo"}'),
            block_stop(1),
            tool_start(2, "toolu_02", "lookup"),
            json_delta(2, '{"city": "Bergen"}'),
            block_stop(2),
            message_delta("tool_use", 60),
            MESSAGE_STOP,
        )
    )
    events = await collect(model, request(UserMessage(text="Oslo and Bergen?"), tools=(LOOKUP,)))
    assert events == [
        TextDelta(text="Checking "),
        TextDelta(text="both."),
        ToolCallPart(call=ToolCall(id="toolu_01", name="lookup", arguments={"city": "Oslo"})),
        ToolCallPart(call=ToolCall(id="toolu_02", name="lookup", arguments={"city": "Bergen"})),
        StepEnd(finish_reason="tool_use", usage={"input_tokens": 50, "output_tokens": 60}),
    ]


async def test_tool_input_that_is_not_an_object_is_passed_on_marked(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(
            message_start(),
            tool_start(0, "toolu_01", "lookup"),
            json_delta(0, '{"city": "Os'),
            block_stop(0),
            tool_start(1, "toolu_02", "lookup"),
            block_stop(1),
            message_delta("tool_use", 5),
            MESSAGE_STOP,
        )
    )
    events = await collect(model, request(UserMessage(text="x"), tools=(LOOKUP,)))
    assert events[:2] == [
        ToolCallPart(
            call=ToolCall(
                id="toolu_01", name="lookup", arguments={INVALID_ARGUMENTS_KEY: '{"city": "Os'}
            )
        ),
        ToolCallPart(call=ToolCall(id="toolu_02", name="lookup", arguments={})),
    ]


async def test_history_alternates_and_merges_turns(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, recorder = model_for(text_reply("ok"))
    history: list[Message] = [
        UserMessage(text="Weather in Oslo and Bergen?"),
        AssistantMessage(
            text="Checking.",
            tool_calls=(
                ToolCall(id="toolu_1", name="lookup", arguments={"city": "Oslo"}),
                ToolCall(id="toolu_2", name="lookup", arguments={"city": "Bergen"}),
            ),
        ),
        ToolResultMessage(
            tool_call_id="toolu_1", tool_name="lookup", content={"temp": 4, "sky": "grå"}
        ),
        ToolResultMessage(
            tool_call_id="toolu_2", tool_name="lookup", content="Bergen is down.", is_error=True
        ),
        AssistantMessage(tool_calls=(ToolCall(id="toolu_3", name="ask_confirm", arguments={}),)),
        ToolResultMessage(
            tool_call_id="toolu_3",
            tool_name="ask_confirm",
            content={"action": "cancel", "reason": "user_sent_message"},
        ),
        UserMessage(text="Never mind."),
        AssistantMessage(),
        UserMessage(text="Still there?"),
    ]
    await collect(model, request(*history, tools=(LOOKUP,)))
    assert recorder.bodies[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Bergen?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Oslo"}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "lookup",
                    "input": {"city": "Bergen"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": '{"temp":4,"sky":"grå"}',
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Bergen is down.",
                    "is_error": True,
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_3", "name": "ask_confirm", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_3",
                    "content": '{"action":"cancel","reason":"user_sent_message"}',
                },
                {"type": "text", "text": "Never mind."},
                {"type": "text", "text": "Still there?"},
            ],
        },
    ]


async def test_files_go_inside_the_tool_result(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, recorder = model_for(text_reply("Got them."))
    history: list[Message] = [
        UserMessage(text="Check my receipts."),
        AssistantMessage(
            tool_calls=(
                ToolCall(id="toolu_1", name="ask_files", arguments={"prompt": "Receipts?"}),
            )
        ),
        ToolResultMessage(
            tool_call_id="toolu_1",
            tool_name="ask_files",
            content={"action": "accept", "content": {"files": [{"fileId": "f1"}]}},
            parts=(
                FilePart(filename="receipt.png", mime_type="image/png", data=PNG),
                FilePart(filename="bill.pdf", mime_type="application/pdf", data=PDF),
                FilePart(
                    filename="notes.json", mime_type="application/json", data=b'{"total": 12}'
                ),
            ),
        ),
    ]
    await collect(model, request(*history))
    assert recorder.bodies[0]["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "text",
                        "text": '{"action":"accept","content":{"files":[{"fileId":"f1"}]}}',
                    },
                    {"type": "text", "text": "File 1 of 3: receipt.png (image/png, 16 bytes)"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(PNG).decode(),
                        },
                    },
                    {"type": "text", "text": "File 2 of 3: bill.pdf (application/pdf, 15 bytes)"},
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": base64.b64encode(PDF).decode(),
                        },
                        "title": "bill.pdf",
                    },
                    {
                        "type": "text",
                        "text": "File 3 of 3: notes.json (application/json, 13 bytes)",
                    },
                    {"type": "text", "text": '{"total": 12}'},
                ],
            }
        ],
    }


async def test_options_and_max_tokens(anthropic_client: MakeClient) -> None:
    recorder = Recorder([text_reply("ok")])
    client = anthropic_client(recorder)
    model = AnthropicModel(MODEL, client=client, max_tokens=512, stop_sequences=["END"])
    await collect(model, request(UserMessage(text="x")))
    body = recorder.bodies[0]
    assert (body["max_tokens"], body["stop_sequences"]) == (512, ["END"])
    await client.close()


def test_refuses_unknown_and_reserved_options(anthropic_client: MakeClient) -> None:
    client = anthropic_client(Recorder())
    with pytest.raises(ConfigError, match="does not know the option"):
        AnthropicModel(MODEL, client=client, top_kk=1)
    with pytest.raises(ConfigError, match="sets system itself"):
        AnthropicModel(MODEL, client=client, system="x")
    with pytest.raises(ConfigError, match="max_tokens must be 1 or more"):
        AnthropicModel(MODEL, client=client, max_tokens=0)


def test_is_a_model_named_after_the_provider(anthropic_client: MakeClient) -> None:
    model = AnthropicModel(MODEL, client=anthropic_client(Recorder()))
    assert isinstance(model, Model)
    assert (model.name, model.supports_tools) == (f"anthropic:{MODEL}", True)


async def test_owns_and_closes_the_client_it_makes() -> None:
    model = AnthropicModel(MODEL, api_key="k")
    await model.aclose()
    assert model.client.is_closed()


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            401,
            {
                "type": "error",
                "error": {
                    "type": "authentication_error",
                    "message": f"invalid x-api-key {API_KEY}",
                },
            },
            f"Model anthropic:{MODEL}: the API key was rejected (HTTP 401, authentication_error); "
            "check ANTHROPIC_API_KEY.",
        ),
        (
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down."}},
            f"Model anthropic:{MODEL}: rate limit or quota reached (HTTP 429, rate_limit_error); "
            "try again later.",
        ),
        (
            500,
            {"type": "error", "error": {"type": "api_error", "message": "Internal error"}},
            f"Model anthropic:{MODEL}: the provider had a server error (HTTP 500, api_error); "
            "try again later.",
        ),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            f"Model anthropic:{MODEL}: the provider had a server error (HTTP 529, "
            "overloaded_error); try again later.",
        ),
        (
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "messages.1: tool_use ids were found without tool_result blocks",
                },
            },
            f"Model anthropic:{MODEL}: the provider rejected the request (HTTP 400, "
            "invalid_request_error): messages.1: tool_use ids were found without tool_result "
            "blocks",
        ),
    ],
    ids=["401", "429", "500", "529", "400"],
)
async def test_http_errors_become_model_errors_without_the_key(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
    status: int,
    body: dict[str, Any],
    expected: str,
) -> None:
    model, _ = model_for(httpx2.Response(status, json=body))
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == []
    assert isinstance(error, ModelError)
    assert str(error) == expected
    assert "SECRET" not in str(error)


async def test_a_truncated_stream_is_a_model_error_after_its_text(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(
            message_start(),
            text_start(0),
            text_delta(0, "Partial"),
            tool_start(1, "toolu_1", "lookup"),
            json_delta(1, '{"ci'),
        )
    )
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Partial")]
    assert isinstance(error, ModelError)
    assert str(error) == (
        f"Model anthropic:{MODEL}: the stream ended before the model finished its step."
    )


async def test_an_error_event_inside_the_stream_is_a_model_error(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(
            message_start(),
            text_start(0),
            text_delta(0, "Hi"),
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        )
    )
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Hi")]
    assert str(error) == (
        f"Model anthropic:{MODEL}: the provider reported an error during the stream "
        "(overloaded_error): Overloaded"
    )


class _BrokenStream(httpx2.AsyncByteStream):
    def __init__(self, first: bytes) -> None:
        self.first = first

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        raise httpx2.ReadError("connection reset")

    async def aclose(self) -> None:
        pass


async def test_a_connection_lost_mid_stream_is_a_model_error(
    model_for: Callable[..., tuple[AnthropicModel, Recorder]],
) -> None:
    name, data = text_delta(0, "Hi")
    first = "".join(
        f"event: {n}\ndata: {json.dumps(d)}\n\n"
        for n, d in (message_start(), text_start(0), (name, data))
    ).encode()
    response = httpx2.Response(
        200, stream=_BrokenStream(first), headers={"content-type": "text/event-stream"}
    )
    model, _ = model_for(response)
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Hi")]
    assert isinstance(error, ModelError)
    assert "malformed or cut off" in str(error)


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        (httpx2.ReadTimeout("timed out"), f"Model anthropic:{MODEL}: the request timed out."),
        (
            httpx2.ConnectError("refused"),
            f"Model anthropic:{MODEL}: could not connect to claude.test.",
        ),
    ],
    ids=["timeout", "connect"],
)
async def test_transport_failures_become_model_errors(
    anthropic_client: MakeClient, exception: Exception, expected: str
) -> None:
    def handler(sent: httpx2.Request) -> httpx2.Response:
        raise exception

    client = anthropic_client(handler)
    model = AnthropicModel(MODEL, client=client)
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert (events, str(error)) == ([], expected)
    assert isinstance(error, ModelError)
    await client.close()


async def test_no_credentials_is_a_model_error(
    http_client: Callable[[Handler], httpx2.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    client = anthropic.AsyncAnthropic(http_client=http_client(Recorder()), max_retries=0)
    model = AnthropicModel(MODEL, client=client)
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == []
    assert isinstance(error, ModelError)
    assert "ANTHROPIC_API_KEY" in str(error)
    await client.close()
