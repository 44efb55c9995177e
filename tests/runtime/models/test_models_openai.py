"""The OpenAI adapter against the Chat Completions streaming wire format, through the SDK."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
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
from handrail.runtime.models.base import (
    ModelError,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    ToolSpec,
)
from handrail.runtime.models.openai import OpenAIModel

MakeClient = Callable[[Handler], openai.AsyncOpenAI]

LOOKUP = ToolSpec(
    name="lookup",
    description="Look up a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
LOOKUP_WIRE = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look up a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PDF = b"%PDF-1.7\n%test\n"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4.1-mini",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def sse(*chunks: dict[str, Any], done: bool = True) -> httpx2.Response:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return sse_response(body + ("data: [DONE]\n\n" if done else ""))


def tool_fragment(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
        fragment["function"]["name"] = name
    return fragment


def error_response(status: int, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.Response(status, json=body)


@pytest.fixture
async def model_for(
    openai_client: MakeClient,
) -> AsyncIterator[Callable[..., tuple[OpenAIModel, Recorder]]]:
    models: list[OpenAIModel] = []

    def make(
        *responses: httpx2.Response, model: str = "gpt-4.1-mini", **options: Any
    ) -> tuple[OpenAIModel, Recorder]:
        recorder = Recorder(list(responses))
        built = OpenAIModel(model, client=openai_client(recorder), **options)
        models.append(built)
        return built, recorder

    yield make
    for built in models:
        await built.client.close()


def request(*messages: Message, tools: tuple[ToolSpec, ...] = ()) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=list(messages), tools=tools)


async def test_plain_text(model_for: Callable[..., tuple[OpenAIModel, Recorder]]) -> None:
    model, recorder = model_for(
        sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo!"}),
            chunk({}, finish="stop"),
            usage_chunk(9, 2),
        )
    )
    events = await collect(model, request(UserMessage(text="Hi")))
    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo!"),
        StepEnd(finish_reason="stop", usage={"input_tokens": 9, "output_tokens": 2}),
    ]
    assert recorder.bodies == [
        {
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ]
    sent = recorder.requests[0]
    assert sent.url == "https://llm.test/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"


async def test_one_tool_call_in_fragments(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(
        sse(
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [tool_fragment(0, id="call_abc", name="lookup")],
                }
            ),
            chunk({"tool_calls": [tool_fragment(0, arguments='{"ci')]}),
            chunk({"tool_calls": [tool_fragment(0, arguments='ty": "Os')]}),
            chunk({"tool_calls": [tool_fragment(0, arguments='lo"}')]}),
            chunk({}, finish="tool_calls"),
            usage_chunk(30, 12),
        )
    )
    events = await collect(model, request(UserMessage(text="Weather in Oslo?"), tools=(LOOKUP,)))
    assert events == [
        ToolCallPart(call=ToolCall(id="call_abc", name="lookup", arguments={"city": "Oslo"})),
        StepEnd(finish_reason="tool_calls", usage={"input_tokens": 30, "output_tokens": 12}),
    ]
    assert recorder.bodies == [
        {
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Oslo?"},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [LOOKUP_WIRE],
        }
    ]


async def test_text_and_two_tool_calls_in_one_step(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(
            chunk({"role": "assistant", "content": "Checking "}),
            chunk({"content": "both."}),
            chunk({"tool_calls": [tool_fragment(0, id="call_1", name="lookup", arguments="")]}),
            chunk({"tool_calls": [tool_fragment(0, arguments='{"city":')]}),
            chunk({"tool_calls": [tool_fragment(1, id="call_2", name="lookup", arguments='{"ci')]}),
            chunk({"tool_calls": [tool_fragment(0, arguments='"Oslo"}')]}),
            chunk({"tool_calls": [tool_fragment(1, arguments='ty":"Bergen"}')]}),
            chunk({}, finish="tool_calls"),
            usage_chunk(40, 20),
        )
    )
    events = await collect(model, request(UserMessage(text="Oslo and Bergen?"), tools=(LOOKUP,)))
    assert events == [
        TextDelta(text="Checking "),
        TextDelta(text="both."),
        ToolCallPart(call=ToolCall(id="call_1", name="lookup", arguments={"city": "Oslo"})),
        ToolCallPart(call=ToolCall(id="call_2", name="lookup", arguments={"city": "Bergen"})),
        StepEnd(finish_reason="tool_calls", usage={"input_tokens": 40, "output_tokens": 20}),
    ]


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        ('{"city": "Os', {INVALID_ARGUMENTS_KEY: '{"city": "Os'}),
        ("[1, 2]", {INVALID_ARGUMENTS_KEY: "[1, 2]"}),
        ("", {}),
    ],
    ids=["cut", "not-an-object", "empty"],
)
async def test_arguments_that_are_not_an_object_are_passed_on_marked(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]], raw: str, arguments: dict[str, Any]
) -> None:
    model, _ = model_for(
        sse(
            chunk({"tool_calls": [tool_fragment(0, id="call_1", name="lookup", arguments=raw)]}),
            chunk({}, finish="tool_calls"),
        )
    )
    events = await collect(model, request(UserMessage(text="x"), tools=(LOOKUP,)))
    assert events == [
        ToolCallPart(call=ToolCall(id="call_1", name="lookup", arguments=arguments)),
        StepEnd(finish_reason="tool_calls", usage={}),
    ]


async def test_history_with_tool_calls_and_results(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(sse(chunk({"content": "ok"}, finish="stop")))
    history: list[Message] = [
        UserMessage(text="Weather in Oslo and Bergen?"),
        AssistantMessage(
            text="Checking.",
            tool_calls=(
                ToolCall(id="call_1", name="lookup", arguments={"city": "Oslo"}),
                ToolCall(id="call_2", name="lookup", arguments={"city": "Bergen", "n": [1]}),
            ),
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="lookup", content={"temp": 4, "sky": "grå"}
        ),
        ToolResultMessage(
            tool_call_id="call_2", tool_name="lookup", content="Bergen is down.", is_error=True
        ),
        AssistantMessage(text="Oslo is 4 degrees."),
        UserMessage(text="And tomorrow?"),
        AssistantMessage(tool_calls=(ToolCall(id="call_3", name="lookup", arguments={}),)),
        ToolResultMessage(
            tool_call_id="call_3", tool_name="lookup", content={"error": "x"}, is_error=True
        ),
        ToolResultMessage(tool_call_id="call_4", tool_name="other", content=None),
    ]
    await collect(model, request(*history, tools=(LOOKUP,)))
    assert recorder.bodies[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"city":"Bergen","n":[1]}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp":4,"sky":"grå"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: Bergen is down."},
        {"role": "assistant", "content": "Oslo is 4 degrees."},
        {"role": "user", "content": "And tomorrow?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": 'Error: {"error":"x"}'},
        {"role": "tool", "tool_call_id": "call_4", "content": "null"},
    ]


async def test_files_follow_the_step_in_a_user_message(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(sse(chunk({"content": "Got them."}, finish="stop")))
    answer = {"action": "accept", "content": {"files": [{"fileId": "f1"}]}}
    history: list[Message] = [
        UserMessage(text="Check my receipts."),
        AssistantMessage(
            tool_calls=(
                ToolCall(id="call_1", name="ask_files", arguments={"prompt": "Receipts?"}),
                ToolCall(id="call_2", name="lookup", arguments={}),
            )
        ),
        ToolResultMessage(
            tool_call_id="call_1",
            tool_name="ask_files",
            content=answer,
            parts=(
                FilePart(filename="receipt.png", mime_type="image/png", data=PNG),
                FilePart(filename="bill.pdf", mime_type="application/pdf", data=PDF),
                FilePart(filename="notes.txt", mime_type="text/plain", data="Total: 12 €".encode()),
            ),
        ),
        ToolResultMessage(tool_call_id="call_2", tool_name="lookup", content="done"),
        UserMessage(text="Thanks."),
    ]
    await collect(model, request(*history))
    png_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    pdf_url = "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    assert recorder.bodies[0]["messages"][3:] == [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": '{"action":"accept","content":{"files":[{"fileId":"f1"}]}}',
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "done"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Files from ask_files (tool call call_1):"},
                {"type": "text", "text": "File 1 of 3: receipt.png (image/png, 16 bytes)"},
                {"type": "image_url", "image_url": {"url": png_url}},
                {"type": "text", "text": "File 2 of 3: bill.pdf (application/pdf, 15 bytes)"},
                {"type": "file", "file": {"filename": "bill.pdf", "file_data": pdf_url}},
                {"type": "text", "text": "File 3 of 3: notes.txt (text/plain, 13 bytes)"},
                {"type": "text", "text": "Total: 12 €"},
            ],
        },
        {"role": "user", "content": "Thanks."},
    ]


async def test_files_at_the_end_of_the_history_and_a_long_text_file(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(sse(chunk({"content": "ok"}, finish="stop")))
    long_text = b"a" * 100_005
    history: list[Message] = [
        AssistantMessage(tool_calls=(ToolCall(id="c", name="ask_files", arguments={}),)),
        ToolResultMessage(
            tool_call_id="c",
            tool_name="ask_files",
            content="files",
            parts=(
                FilePart(filename="big.csv", mime_type="text/csv; charset=utf-8", data=long_text),
                FilePart(filename="x.bin", mime_type="application/zip", data=b"PK"),
            ),
        ),
    ]
    await collect(model, request(*history))
    files = recorder.bodies[0]["messages"][-1]
    assert files["role"] == "user"
    assert files["content"][1:] == [
        {
            "type": "text",
            "text": "File 1 of 2: big.csv (text/csv; charset=utf-8, 100005 bytes)",
        },
        {
            "type": "text",
            "text": "a" * 100_000 + "\n[The file is cut to its first 100000 of 100005 bytes.]",
        },
        {"type": "text", "text": "File 2 of 2: x.bin (application/zip, 2 bytes)"},
        {
            "type": "text",
            "text": "[This file is not shown: the model is not sent files of type "
            "application/zip.]",
        },
    ]


async def test_image_models_get_no_tools(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(sse(chunk({"content": "ok"}, finish="stop")), model="gpt-image-1")
    assert model.supports_tools is False
    await collect(model, request(UserMessage(text="draw"), tools=(LOOKUP,)))
    assert "tools" not in recorder.bodies[0]


async def test_options_go_to_every_request(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, recorder = model_for(
        sse(chunk({"content": "ok"}, finish="stop")),
        temperature=0.2,
        parallel_tool_calls=False,
        extra_body={"top_k": 5},
    )
    await collect(model, request(UserMessage(text="x"), tools=(LOOKUP,)))
    body = recorder.bodies[0]
    assert (body["temperature"], body["parallel_tool_calls"], body["top_k"]) == (0.2, False, 5)


def test_refuses_unknown_and_reserved_options(openai_client: MakeClient) -> None:
    client = openai_client(Recorder())
    with pytest.raises(ConfigError, match="does not know the option"):
        OpenAIModel("gpt-4.1-mini", client=client, temprature=1)
    with pytest.raises(ConfigError, match="sets stream itself"):
        OpenAIModel("gpt-4.1-mini", client=client, stream=False)
    with pytest.raises(ConfigError, match="needs a model id"):
        OpenAIModel(" ", client=client)


def test_is_a_model_named_after_the_provider(openai_client: MakeClient) -> None:
    model = OpenAIModel("gpt-4.1-mini", client=openai_client(Recorder()))
    assert isinstance(model, Model)
    assert (model.name, model.supports_tools) == ("openai:gpt-4.1-mini", True)


def test_a_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4.1-mini")


async def test_owns_and_closes_the_client_it_makes() -> None:
    model = OpenAIModel("gpt-4.1-mini", api_key="k", base_url="http://localhost:11434/v1")
    assert str(model.client.base_url) == "http://localhost:11434/v1/"
    await model.aclose()
    assert model.client.is_closed()


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {API_KEY[:8]}****{API_KEY[-4:]}.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            "Model openai:gpt-4.1-mini: the API key was rejected (HTTP 401, invalid_api_key); "
            "check OPENAI_API_KEY.",
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
            "Model openai:gpt-4.1-mini: rate limit or quota reached (HTTP 429, "
            "rate_limit_exceeded); try again later.",
        ),
        (
            500,
            {"error": {"message": "The server had an error", "type": "server_error", "code": None}},
            "Model openai:gpt-4.1-mini: the provider had a server error (HTTP 500, server_error); "
            "try again later.",
        ),
        (
            400,
            {
                "error": {
                    "message": f"Invalid schema for function 'lookup'. Key {API_KEY} is odd.",
                    "type": "invalid_request_error",
                    "code": None,
                }
            },
            "Model openai:gpt-4.1-mini: the provider rejected the request (HTTP 400, "
            "invalid_request_error): Invalid schema for function 'lookup'. Key [redacted] is odd.",
        ),
    ],
    ids=["401", "429", "500", "400"],
)
async def test_http_errors_become_model_errors_without_the_key(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
    status: int,
    body: dict[str, Any],
    expected: str,
) -> None:
    model, _ = model_for(error_response(status, body))
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == []
    assert isinstance(error, ModelError)
    assert str(error) == expected
    assert API_KEY[:8] not in str(error)
    assert API_KEY[-4:] not in str(error)


async def test_a_truncated_stream_is_a_model_error_after_its_text(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    model, _ = model_for(
        sse(chunk({"content": "Partial"}), chunk({"content": " answer"}), done=False)
    )
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Partial"), TextDelta(text=" answer")]
    assert isinstance(error, ModelError)
    assert str(error) == (
        "Model openai:gpt-4.1-mini: the stream ended before the model finished its step."
    )


async def test_a_stream_cut_inside_a_chunk_is_a_model_error(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    cut = f'data: {json.dumps(chunk({"content": "Hi"}))}\n\ndata: {{"id": "chatcmpl-1", "cho\n\n'
    model, _ = model_for(sse_response(cut))
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Hi")]
    assert isinstance(error, ModelError)
    assert "malformed or cut off" in str(error)


async def test_an_error_inside_the_stream_is_a_model_error(
    model_for: Callable[..., tuple[OpenAIModel, Recorder]],
) -> None:
    error_chunk = {"error": {"message": "The model overloaded.", "type": "server_error"}}
    model, _ = model_for(sse(chunk({"content": "Hi"}), error_chunk))
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == [TextDelta(text="Hi")]
    assert str(error) == (
        "Model openai:gpt-4.1-mini: the provider reported an error during the stream "
        "(server_error): The model overloaded."
    )


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        (httpx2.ReadTimeout("timed out"), "Model openai:gpt-4.1-mini: the request timed out."),
        (
            httpx2.ConnectError("refused"),
            "Model openai:gpt-4.1-mini: could not connect to llm.test.",
        ),
    ],
    ids=["timeout", "connect"],
)
async def test_transport_failures_become_model_errors(
    openai_client: MakeClient, exception: Exception, expected: str
) -> None:
    def handler(sent: httpx2.Request) -> httpx2.Response:
        raise exception

    model = OpenAIModel("gpt-4.1-mini", client=openai_client(handler))
    events, error = await collect_until_error(model, request(UserMessage(text="Hi")))
    assert events == []
    assert isinstance(error, ModelError)
    assert str(error) == expected
