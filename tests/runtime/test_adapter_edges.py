"""The edges of the agent adapters, with real programs and real HTTP servers on loopback.

The ``http`` adapter's ``timeout_s`` holds for the whole step (a reply sent a byte at a time
does not stretch it), and a reply is read no further than 4 MiB (an endless body cannot fill
the server's memory). The ``process`` adapter reads no more than that of stdout and only the
tail of stderr; a process stopped at its timeout is stopped with the programs it started, even
after it exited itself, and the step ends. A reply holding ``NaN`` or nested too deeply to read
is not JSON (for the providers' tool arguments too); a tool call with an empty id gets a free
one. A header value HTTP cannot carry is refused at start, without showing it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from handrail.errors import ConfigError
from handrail.policy import ToolHints
from handrail.runtime.agent import Agent, Tool, ToolSet
from handrail.runtime.messages import UserMessage
from handrail.runtime.models import INVALID_ARGUMENTS_KEY
from handrail.runtime.models.adapters import (
    AdapterError,
    HttpAdapter,
    ProcessAdapter,
)
from handrail.runtime.models.anthropic import AnthropicModel
from handrail.runtime.models.base import ModelEvent, ModelRequest, ToolCallPart
from handrail.runtime.models.openai import OpenAIModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.server.adapter_config import adapter_from_config
from handrail.store import Store

ALICE = Principal(user_id="alice")
CAP = 4 * 1024 * 1024

Reply = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], str]]:
    """Starts a loopback server whose POSTs `reply` answers; its URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Reply) -> str:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                # The client may stop reading, as it should.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    reply(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/step"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def step(text: str = "hello") -> ModelRequest:
    return ModelRequest(system="", messages=[UserMessage(text=text)], conversation_id="c1")


async def failure(model: Any, request: ModelRequest | None = None) -> tuple[str, float]:
    """The error of a step that must fail, and how long it took."""
    started = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        async for _ in model.stream(request or step()):
            pass
    return str(caught.value), time.monotonic() - started


def answer(body: bytes) -> Reply:
    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return reply


# --- the http adapter -----------------------------------------------------------------------


async def test_a_reply_sent_slowly_still_times_out(serve: Callable[[Reply], str]) -> None:
    body = b'{"text": "' + b"a" * 30 + b'"}'

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:  # each read is quick; the whole reply takes 12 seconds
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.3)

    url = serve(drip)
    adapter = HttpAdapter(agent="remote", url=url, timeout_s=1)
    error, took = await failure(adapter)
    assert error == (
        f"The http adapter of the agent remote ({url}) did not answer within 1 seconds. Make it "
        "answer sooner, or raise its timeout_s."
    )
    assert took < 5
    await adapter.aclose()


async def test_an_endless_reply_is_cut_at_four_mib(serve: Callable[[Reply], str]) -> None:
    def endless(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b"x" * 65536
        for _ in range(4096):  # 256 MiB at most, unless the client stops reading first
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    url = serve(endless)
    adapter = HttpAdapter(agent="remote", url=url, timeout_s=60)
    error, took = await failure(adapter)
    assert error == (
        f"The http adapter of the agent remote ({url}) answered more than {CAP} bytes; keep a "
        "reply smaller."
    )
    assert took < 30
    # A declared length above the cap is refused before its body is read.
    big = HttpAdapter(agent="remote", url=serve(answer(b" " * (CAP + 1))))
    assert "answered more than 4194304 bytes" in (await failure(big))[0]
    # A reply of exactly the cap is read.
    exact = b'{"text": "ok"}'
    fits = HttpAdapter(agent="remote", url=serve(answer(exact + b" " * (CAP - len(exact)))))
    assert [e.kind async for e in fits.stream(step())] == ["text", "end"]
    for one in (adapter, big, fits):
        await one.aclose()


@pytest.mark.parametrize(
    "body",
    [
        b'{"toolCalls": [{"id": "a", "name": "t", "arguments": {"x": NaN}}]}',
        b'{"text": "hi", "sessionId": null, "toolCalls": [], "x": Infinity}',
        b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["nan", "infinity", "nested-too-deeply"],
)
async def test_a_reply_that_is_not_strict_json_is_not_json(
    serve: Callable[[Reply], str], body: bytes
) -> None:
    url = serve(answer(body))
    adapter = HttpAdapter(agent="remote", url=url)
    error, _ = await failure(adapter)
    assert error == (
        f"The http adapter of the agent remote ({url}) answered something that is not JSON. It "
        "must answer one JSON object, the step reply (see docs/reference/adapters.md)."
    )
    await adapter.aclose()


async def test_a_tool_call_with_an_empty_id_gets_a_free_one(
    store: Store, serve: Callable[[Reply], str]
) -> None:
    url = serve(
        answer(
            b'{"toolCalls": [{"id": "", "name": "lookup", "arguments": {}}, '
            b'{"id": "", "name": "lookup", "arguments": {}}]}'
        )
    )
    agent = Agent("remote", adapter=HttpAdapter(agent="remote", url=url))
    agent.add_tool_set(
        ToolSet(
            "conn-lookup",
            "Lookup",
            tools=[
                Tool(
                    name="lookup",
                    description="Look it up.",
                    input_schema={"type": "object", "properties": {}},
                    function=lambda: "found",
                    hints=ToolHints(read_only=True),
                )
            ],
        )
    )
    runtime = Runtime(store=store, agents=agent)
    turn = await runtime.start_prompt(ALICE, "hello")
    events = [event async for event in turn.stream()]
    assert [e["toolCall"]["toolCallId"] for e in events if "toolCall" in e] == [
        "call_1",
        "call_2",
    ]
    assert not [e for e in events if "error" in e]
    await runtime.aclose()


def test_a_header_value_http_cannot_carry_is_refused_at_start() -> None:
    adapter = {
        "type": "http",
        "url": "http://127.0.0.1:9/step",
        "headers": {"Authorization": {"secret_env": "REMOTE_TOKEN", "prefix": "Bearer "}},
    }
    for value in ("sekrit-7\n", "sekrit-7 ", "sékrit-7", "sekrit\r\nX-Forged: 1"):
        with pytest.raises(ConfigError) as caught:
            adapter_from_config(adapter, "agents[0].adapter", "remote", {"REMOTE_TOKEN": value})
        message = str(caught.value)
        assert message.startswith(
            "agents[0].adapter.headers.Authorization: the environment variable REMOTE_TOKEN is "
            "not a value an HTTP header can carry"
        )
        assert "krit" not in message
    plain = {**adapter, "headers": {"X-Team": "a b\tc"}}
    assert isinstance(adapter_from_config(plain, "a", "remote", {}), HttpAdapter)
    with pytest.raises(ConfigError, match=r"^a\.headers\.X-Team: the value is not"):
        adapter_from_config({**adapter, "headers": {"X-Team": " a"}}, "a", "remote", {})


# --- the process adapter --------------------------------------------------------------------


def python_agent(code: str, timeout_s: float = 30) -> ProcessAdapter:
    return ProcessAdapter(
        agent="outside", command=sys.executable, args=["-c", code], timeout_s=timeout_s
    )


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent to reap it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_an_endless_stdout_is_cut_at_four_mib_and_the_process_stopped(
    tmp_path: Path,
) -> None:
    code = (
        "import os, sys\n"
        f"open({str(tmp_path / 'file')!r}, 'w').write("
        "os.environ['HANDRAIL_CONNECTION_INSTRUCTIONS_FILE'])\n"
        "while True: sys.stdout.write('x' * 65536)\n"
    )
    error, took = await failure(python_agent(code))
    assert error == (
        f"The process adapter of the agent outside ({Path(sys.executable).name}) wrote more "
        f"than {CAP} bytes; keep a reply smaller."
    )
    assert took < 20
    assert not Path((tmp_path / "file").read_text()).parent.exists()


async def test_an_endless_stderr_keeps_its_tail_and_the_timeout_ends_the_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every pipe is read as it comes: stopped at its timeout, the step ends at once (a pipe
    # left unread kept the step waiting for the process for ever) with at most 2000 bytes of
    # stderr kept.
    code = "import sys\nwhile True: sys.stderr.write('e' * 65536)\n"
    error, took = await failure(python_agent(code, timeout_s=2))
    assert "did not finish within 2 seconds, so it was stopped" in error
    assert took < 15
    finished = python_agent(
        "import sys\nfor _ in range(2000): sys.stderr.write('e' * 65536)\n"
        "sys.stderr.write('the end')\nsys.stdout.write('{\"text\": \"ok\"}')\n"
    )
    with caplog.at_level("WARNING", logger="handrail.adapters"):
        assert [e.kind async for e in finished.stream(step())] == ["text", "end"]
    [record] = [r for r in caplog.records if r.name == "handrail.adapters"]
    logged = record.getMessage()
    assert logged.endswith("e" * 1993 + "the end")
    assert len(logged) < 2200


async def test_a_timeout_stops_the_programs_the_process_left_running(tmp_path: Path) -> None:
    # The process replies and exits, but a program it started holds its stdout open: the step
    # times out, and that program is stopped too (it was left running).
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        'sys.stdout.write(\'{"text": "hi"}\')\n'
    )
    error, took = await failure(python_agent(code, timeout_s=2))
    assert "did not finish within 2 seconds, so it was stopped" in error
    assert took < 15
    child = int(pid_file.read_text())
    for _ in range(50):
        if not running(child):
            break
        await asyncio.sleep(0.1)
    assert not running(child)


async def test_a_process_reply_that_is_not_strict_json_is_not_json() -> None:
    error, _ = await failure(
        python_agent('import sys\nsys.stdout.write(\'{"text": "hi", "x": NaN}\')\n')
    )
    assert "answered something that is not JSON" in error
    deep = "import sys\nsys.stdout.write('{\"text\": ' + '[' * 100000 + ']' * 100000 + '}')\n"
    error, _ = await failure(python_agent(deep))
    assert "answered something that is not JSON" in error


# --- the providers' tool arguments ----------------------------------------------------------


def provider(arguments: str) -> Reply:
    """A loopback provider that answers one streamed tool call with `arguments`, as OpenAI's
    Chat Completions or Anthropic's Messages API stream it."""

    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        lines: list[str] = []
        if handler.path.endswith("/chat/completions"):

            def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
                data = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                return f"data: {json.dumps(data)}\n\n"

            call = {"index": 0, "id": "call_1", "type": "function"}
            lines = [
                chunk(
                    {
                        "role": "assistant",
                        "tool_calls": [{**call, "function": {"name": "t", "arguments": ""}}],
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
            ]
        else:
            usage = {"input_tokens": 3, "output_tokens": 1}
            message = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            events: list[dict[str, Any]] = [
                {"type": "message_start", "message": message},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "t",
                        "input": {},
                    },
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": arguments},
                },
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
                {"type": "message_stop"},
            ]
            lines = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
        handler.wfile.write("".join(lines).encode())

    return reply


@pytest.mark.parametrize(
    "arguments",
    ['{"x": NaN}', '{"x": -Infinity}', '{"x": ' + "[" * 5000 + "]" * 5000 + "}"],
    ids=["nan", "infinity", "nested-too-deeply"],
)
async def test_provider_tool_arguments_that_are_not_json_are_passed_on_marked(
    serve: Callable[[Reply], str], arguments: str
) -> None:
    url = serve(provider(arguments)).removesuffix("/step")
    openai_model = OpenAIModel(
        "m", client=openai.AsyncOpenAI(api_key="sk-loopback", base_url=url + "/v1", max_retries=0)
    )
    claude = AnthropicModel(
        "c", client=anthropic.AsyncAnthropic(api_key="sk-loopback", base_url=url, max_retries=0)
    )
    for model in (openai_model, claude):
        events: list[ModelEvent] = [e async for e in model.stream(step())]
        [call] = [e.call for e in events if isinstance(e, ToolCallPart)]
        assert call.arguments == {INVALID_ARGUMENTS_KEY: arguments}
    await openai_model.client.close()
    await claude.client.close()
