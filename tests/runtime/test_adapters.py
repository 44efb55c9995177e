"""Agents run outside handrail: the ``process`` and ``http`` adapters, end to end in process
(a real store, real child processes, a real HTTP server on loopback).

The process adapter's agent (``capture_agent.py``) records each step request and its
instructions file (path, mode, content); the tests check the file is 0600 in a fresh 0700
folder that is gone after the step, on success and on failure, and that an inherited path
never overrides it. Sessions are reused only while the snapshot's digest is the same. Tool
calls an adapter returns pass the same gates as a model's; a paused turn resumes with its
snapshot. The process gets its configured variables and the MCP SDK's safe few, never the
server's secrets. A bad reply, a non-zero exit, a timeout and an HTTP error fail the turn naming
the adapter."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from handrail.connections.instructions import InstructionSource
from handrail.errors import ConfigError
from handrail.policy import ToolHints
from handrail.runtime.agent import Agent, SourcedSets, Tool, ToolSet
from handrail.runtime.models.adapters import (
    INSTRUCTIONS_FILE_ENV,
    HttpAdapter,
    ProcessAdapter,
)
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.server import ServerConfig
from handrail.store import Store

ROOT = Path(__file__).resolve().parents[2]
CAPTURE_AGENT = Path(__file__).resolve().parent / "capture_agent.py"
EXAMPLES = ROOT / "examples" / "adapters"
ALICE = Principal(user_id="alice")
PERMIT = {"action": "accept", "content": {"selected": ["read-only"]}}
APPROVE = {"action": "accept", "content": {"confirmed": True}}


class Guidance:
    """A tool source with one connection whose instructions a test changes."""

    def __init__(self) -> None:
        self.setting: dict[str, Any] | None = {"enabled": True, "text": "Use the handbook."}
        self.tools = ToolSet(
            "conn-handbook",
            "Handbook",
            tools=[
                Tool(
                    name="handbook_lookup",
                    description="Look a page up.",
                    input_schema={"type": "object", "properties": {}},
                    function=lambda: "page 7",
                    hints=ToolHints(read_only=True),
                ),
                Tool(
                    name="handbook_wipe",
                    description="Wipe the handbook.",
                    input_schema={"type": "object", "properties": {}},
                    function=lambda: "wiped",
                    hints=ToolHints(read_only=False, destructive=True, consequential=True),
                ),
            ],
        )

    def __call__(self, agent: Agent) -> SourcedSets:
        guidance = {}
        if self.setting is not None:
            guidance["conn-handbook"] = InstructionSource(
                connection_id="conn-handbook",
                name="Handbook",
                connector="custom",
                method="python",
                setting=self.setting,
            )
        return SourcedSets(tool_sets=(self.tools,), guidance=guidance)


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    folder = tmp_path / "captures"
    folder.mkdir()
    return folder


def process_agent(captures: Path, mode: str = "reply", timeout_s: float = 30) -> Agent:
    adapter = ProcessAdapter(
        agent="outside",
        command=sys.executable,
        args=[str(CAPTURE_AGENT)],
        env={"CAPTURE_DIR": str(captures), "CAPTURE_MODE": mode},
        timeout_s=timeout_s,
    )
    return Agent("outside", instructions="You help with releases.", adapter=adapter)


def captured(captures: Path, n: int) -> dict[str, Any]:
    return dict(json.loads((captures / f"{n}.json").read_text(encoding="utf-8")))


async def events_of(turn_coro: Any) -> list[dict[str, Any]]:
    turn = await turn_coro
    return [event async for event in turn.stream()]


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


def runtime_for(store: Store, agent: Agent, guidance: Guidance | None = None) -> Runtime:
    if guidance is not None:
        agent.add_tool_source(guidance)
    return Runtime(store=store, agents=agent)


# --- the process adapter --------------------------------------------------------------------


async def test_a_real_process_step_with_its_instructions_file(
    store: Store, captures: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    inherited = tmp_path / "inherited.json"
    inherited.write_text('{"text": "forged", "digest": "0"}', encoding="utf-8")
    monkeypatch.setenv(INSTRUCTIONS_FILE_ENV, str(inherited))
    guidance = Guidance()
    runtime = runtime_for(store, process_agent(captures), guidance)
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    assert texts(events) == "You said: hello"
    one = captured(captures, 1)
    # The file: the snapshot as JSON, 0600, in a fresh 0700 folder, gone after the step.
    assert one["path"] != str(inherited)
    assert one["mode"] == 0o600
    assert one["folderMode"] == 0o700
    snapshot = json.loads(one["content"])
    assert snapshot["digest"] == hashlib.sha256(snapshot["text"].encode()).hexdigest()
    assert "Use the handbook." in snapshot["text"]
    assert not Path(one["path"]).parent.exists()
    # The step request, exactly its keys; the snapshot at the top level and on context.
    request = one["request"]
    assert sorted(request) == [
        "agent",
        "connectionInstructions",
        "context",
        "conversationId",
        "messages",
        "sessionId",
        "tools",
    ]
    assert request["agent"] == {"name": "outside", "instructions": "You help with releases."}
    assert request["connectionInstructions"] == snapshot
    assert request["context"] == {"connectionInstructions": snapshot}
    assert request["sessionId"] is None
    assert request["conversationId"] == events[-1]["historyId"]
    assert request["messages"] == [{"v": 1, "kind": "user", "text": "hello"}]
    tools = {t["name"]: t for t in request["tools"]}
    assert tools["handbook_lookup"] == {
        "name": "handbook_lookup",
        "description": "Look a page up.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    assert "ask_confirm" in tools


async def test_the_process_gets_its_own_environment_never_the_servers_secrets(
    store: Store, captures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries = {
        "HANDRAIL_SECRET_KEY": "canary-secret-key",
        "OPENAI_API_KEY": "canary-provider-key",
        "HANDRAIL_SMTP_PASSWORD": "canary-smtp",
    }
    for name, value in canaries.items():
        monkeypatch.setenv(name, value)
    agent = config(
        {
            "name": "outside",
            "instructions": "You help with releases.",
            "adapter": {
                "type": "process",
                "command": sys.executable,
                "args": [str(CAPTURE_AGENT)],
                "env": {
                    "CAPTURE_DIR": str(captures),
                    "LEVEL": "2",
                    "AGENT_KEY": {"secret_env": "AGENT_KEY"},
                },
            },
        },
        env={**os.environ, "AGENT_KEY": "the-agent-s-own"},
    ).agents[0]
    runtime = runtime_for(store, agent)
    assert texts(await events_of(runtime.start_prompt(ALICE, "hello"))) == "You said: hello"
    environ = captured(captures, 1)["environ"]
    # Its configured variables (a secret named by secret_env too) and the instructions file.
    assert environ["CAPTURE_DIR"] == str(captures)
    assert environ["LEVEL"] == "2"
    assert environ["AGENT_KEY"] == "the-agent-s-own"
    assert environ[INSTRUCTIONS_FILE_ENV] == captured(captures, 1)["path"]
    # None of the server's secrets, by name or by value.
    assert not set(canaries) & set(environ)
    assert not set(canaries.values()) & set(environ.values())
    # Of the server's own, only the MCP SDK's safe few (what a stdio MCP server gets); Python
    # itself may add LC_CTYPE (PEP 538).
    assert environ["PATH"] == os.environ["PATH"]
    inherited = set(environ) - {"CAPTURE_DIR", "LEVEL", "AGENT_KEY", INSTRUCTIONS_FILE_ENV}
    assert inherited - {"LC_CTYPE"} <= set(DEFAULT_INHERITED_ENV_VARS)
    # The docs name that list.
    documented = (ROOT / "docs" / "reference" / "adapters.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in documented for name in DEFAULT_INHERITED_ENV_VARS)
    await runtime.aclose()


async def test_sessions_are_reused_only_while_the_digest_is_the_same(
    store: Store, captures: Path
) -> None:
    guidance = Guidance()
    runtime = runtime_for(store, process_agent(captures), guidance)
    first = await events_of(runtime.start_prompt(ALICE, "one"))
    history_id = first[-1]["historyId"]
    await events_of(runtime.start_prompt(ALICE, "two", history_id=history_id))
    assert captured(captures, 1)["request"]["sessionId"] is None
    assert captured(captures, 2)["request"]["sessionId"] == "s-1"
    # Another conversation has its own session.
    await events_of(runtime.start_prompt(ALICE, "elsewhere"))
    assert captured(captures, 3)["request"]["sessionId"] is None
    # Edited instructions: a new session.
    assert guidance.setting is not None
    guidance.setting = {**guidance.setting, "text": "Use the new handbook."}
    await events_of(runtime.start_prompt(ALICE, "three", history_id=history_id))
    edited = captured(captures, 4)
    assert edited["request"]["sessionId"] is None
    assert "Use the new handbook." in json.loads(edited["content"])["text"]
    await events_of(runtime.start_prompt(ALICE, "four", history_id=history_id))
    assert captured(captures, 5)["request"]["sessionId"] == "s-4"
    # Removed instructions: a new session, an empty file, null in the request.
    guidance.setting = None
    await events_of(runtime.start_prompt(ALICE, "five", history_id=history_id))
    removed = captured(captures, 6)
    assert removed["request"]["sessionId"] is None
    assert removed["content"] == ""
    assert removed["request"]["connectionInstructions"] is None
    assert removed["request"]["context"] == {"connectionInstructions": None}


async def test_an_adapters_tool_calls_pass_the_gates_and_a_paused_turn_keeps_its_snapshot(
    store: Store, captures: Path
) -> None:
    guidance = Guidance()
    runtime = runtime_for(store, process_agent(captures), guidance)
    paused = await events_of(runtime.start_prompt(ALICE, "call handbook_wipe {}"))
    [ask] = [e["ask"] for e in paused if "ask" in e]
    assert ask["origin"] == "permission"  # no level yet: the same gate as any model's call
    history_id = paused[-1]["historyId"]
    started = json.loads(captured(captures, 1)["content"])
    # The instructions change while the turn waits.
    guidance.setting = {"enabled": True, "text": "Never wipe anything."}
    permitted = await events_of(
        runtime.start_answer(ALICE, history_id, {"toolCallId": ask["toolCallId"], **PERMIT})
    )
    # Read-only does not cover a consequential tool: an approval, still no wipe.
    [approval] = [e["ask"] for e in permitted if "ask" in e]
    assert approval["origin"] == "approval"
    done = await events_of(
        runtime.start_answer(ALICE, history_id, {"toolCallId": approval["toolCallId"], **APPROVE})
    )
    assert texts(done) == 'handbook_wipe returned: "wiped"'
    resumed = captured(captures, 2)
    # The resumed step has the snapshot the turn started with, and its session.
    assert json.loads(resumed["content"]) == started
    assert resumed["request"]["connectionInstructions"] == started
    assert resumed["request"]["sessionId"] == "s-1"
    # The next turn gets the new instructions, so a new session.
    await events_of(runtime.start_prompt(ALICE, "next", history_id=history_id))
    following = captured(captures, 3)
    assert "Never wipe anything." in json.loads(following["content"])["text"]
    assert following["request"]["sessionId"] is None


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("fail", "exited with status 3; it must exit 0"),
        ("garbage", "answered something that is not JSON"),
        ("shape", "not a step reply: it has the unknown keys tool_calls"),
    ],
)
async def test_a_failing_process_fails_the_turn_naming_the_adapter(
    store: Store, captures: Path, mode: str, words: str
) -> None:
    runtime = runtime_for(store, process_agent(captures, mode), Guidance())
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    [error] = [e["error"] for e in events if "error" in e]
    assert error.startswith("The process adapter of the agent outside (")
    assert words in error
    assert "Traceback" not in error
    # The instructions file is removed on failure too.
    assert not Path(captured(captures, 1)["path"]).parent.exists()


async def test_a_slow_process_is_stopped_and_its_file_removed(store: Store, captures: Path) -> None:
    runtime = runtime_for(store, process_agent(captures, "sleep", timeout_s=2), Guidance())
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    [error] = [e["error"] for e in events if "error" in e]
    assert "did not finish within 2 seconds, so it was stopped" in error
    assert "raise its timeout_s" in error
    assert not Path(captured(captures, 1)["path"]).parent.exists()


async def test_a_missing_command_names_the_adapter(store: Store, tmp_path: Path) -> None:
    adapter = ProcessAdapter(agent="outside", command=str(tmp_path / "nothing-here"))
    runtime = runtime_for(store, Agent("outside", adapter=adapter))
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    [error] = [e["error"] for e in events if "error" in e]
    assert "The process adapter of the agent outside (nothing-here) could not be started" in error


async def test_the_example_process_agent_composes_its_prompt(store: Store) -> None:
    adapter = ProcessAdapter(
        agent="outside", command=sys.executable, args=[str(EXAMPLES / "process_agent.py")]
    )
    agent = Agent("outside", instructions="You help with releases.", adapter=adapter)
    guidance = Guidance()
    runtime = runtime_for(store, agent, guidance)
    resolved = await runtime.next_instructions(
        ALICE, (await store.histories.create("alice", agent="outside")).id
    )
    assert resolved.snapshot is not None
    expected = len("You help with releases.\n\n" + resolved.snapshot.text)
    events = await events_of(runtime.start_prompt(ALICE, "hi"))
    assert texts(events) == f"You said: hi (my prompt has {expected} characters)"
    history_id = events[-1]["historyId"]
    [ask] = [
        e["ask"]
        for e in await events_of(
            runtime.start_prompt(ALICE, "call handbook_lookup {}", history_id=history_id)
        )
        if "ask" in e
    ]
    done = await events_of(
        runtime.start_answer(ALICE, history_id, {"toolCallId": ask["toolCallId"], **PERMIT})
    )
    assert texts(done) == 'handbook_lookup returned: "page 7"'


# --- the http adapter -----------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.status = 200


@pytest.fixture
def http_agent() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorder.requests.append((dict(self.headers), body))
            last = body["messages"][-1]
            reply = {"text": f"You said: {last.get('text', '')}"}
            reply["sessionId"] = body["sessionId"] or f"h-{len(recorder.requests)}"
            data = json.dumps(reply).encode()
            self.send_response(recorder.status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/step", recorder
    finally:
        server.shutdown()
        server.server_close()


async def test_http_steps_carry_server_owned_instructions_and_headers(
    store: Store, http_agent: tuple[str, Recorder]
) -> None:
    url, recorder = http_agent
    adapter = HttpAdapter(
        agent="remote",
        url=url,
        headers={"Authorization": "Bearer sekrit-7"},
        payload_template={
            "model": "small",
            "connectionInstructions": {"text": "forged", "digest": "0"},
            "sessionId": "forged-session",
            "context": {"tenant": "t1", "connectionInstructions": "forged"},
        },
    )
    guidance = Guidance()
    runtime = runtime_for(
        store, Agent("remote", instructions="Remote help.", adapter=adapter), guidance
    )
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    assert texts(events) == "You said: hello"
    headers, body = recorder.requests[0]
    assert headers["Authorization"] == "Bearer sekrit-7"
    assert body["model"] == "small"  # the template's own keys stay
    snapshot = body["connectionInstructions"]
    assert snapshot is not None
    assert snapshot["text"] != "forged"  # the server's own field overrides the template
    assert "Use the handbook." in snapshot["text"]
    assert body["context"] == {"tenant": "t1", "connectionInstructions": snapshot}
    assert body["sessionId"] is None
    assert body["agent"] == {"name": "remote", "instructions": "Remote help."}
    history_id = events[-1]["historyId"]
    await events_of(runtime.start_prompt(ALICE, "again", history_id=history_id))
    assert recorder.requests[1][1]["sessionId"] == "h-1"
    guidance.setting = {"enabled": False, "text": "Use the handbook."}  # off: no snapshot
    await events_of(runtime.start_prompt(ALICE, "off", history_id=history_id))
    assert recorder.requests[2][1]["sessionId"] is None
    assert recorder.requests[2][1]["connectionInstructions"] is None
    await runtime.aclose()


async def test_http_errors_name_the_adapter(store: Store, http_agent: tuple[str, Recorder]) -> None:
    url, recorder = http_agent
    recorder.status = 500
    runtime = runtime_for(store, Agent("remote", adapter=HttpAdapter(agent="remote", url=url)))
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    [error] = [e["error"] for e in events if "error" in e]
    assert error == (
        f"The http adapter of the agent remote ({url}) answered HTTP 500; it must answer 200 "
        "with the step reply as JSON. Its own log says why."
    )
    gone = HttpAdapter(agent="remote", url="http://127.0.0.1:9/step")
    runtime = runtime_for(store, Agent("gone", adapter=gone))
    events = await events_of(runtime.start_prompt(ALICE, "hello"))
    [error] = [e["error"] for e in events if "error" in e]
    assert "could not be reached" in error
    assert "Check that it runs and that its url is right." in error
    await runtime.aclose()


# --- configuration ----------------------------------------------------------------------------


def config(agent: dict[str, Any], env: dict[str, str] | None = None) -> ServerConfig:
    data = {"users": [{"id": "alice", "token": "alice-token-0123456789"}], "agents": [agent]}
    return ServerConfig.from_mapping(data, env=env or {})


def test_adapters_from_the_configuration() -> None:
    process = config(
        {
            "name": "outside",
            "instructions": "Help.",
            "adapter": {
                "type": "process",
                "command": "python",
                "args": ["agent.py"],
                "env": {"LEVEL": "2"},
                "timeout_s": 5,
            },
        }
    ).agents[0]
    assert isinstance(process.adapter, ProcessAdapter)
    assert process.adapter.args == ("agent.py",)
    assert process.adapter.timeout_s == 5
    remote = config(
        {
            "name": "remote",
            "adapter": {
                "type": "http",
                "url": "http://127.0.0.1:9000/step",
                "headers": {"Authorization": {"secret_env": "REMOTE_TOKEN", "prefix": "Bearer "}},
                "payload_template": {"model": "small"},
            },
        },
        env={"REMOTE_TOKEN": "t0k"},
    ).agents[0]
    assert isinstance(remote.adapter, HttpAdapter)
    assert remote.adapter._headers == {"Authorization": "Bearer t0k"}
    assert remote.adapter.payload_template == {"model": "small"}


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        ({"type": "grpc"}, "agents[0].adapter.type: must be one of http, process"),
        ({"type": "process"}, "agents[0].adapter.command: required"),
        (
            {"type": "process", "command": "x", "env": {INSTRUCTIONS_FILE_ENV: "/tmp/mine"}},
            f"agents[0].adapter.env.{INSTRUCTIONS_FILE_ENV}: the server sets",
        ),
        (
            {"type": "process", "command": "x", "env": {"KEY": {"secret_env": "NOPE"}}},
            "agents[0].adapter.env.KEY.secret_env: the environment variable NOPE is not set",
        ),
        ({"type": "process", "command": "x", "env": {"N": 1}}, "agents[0].adapter.env.N: must"),
        ({"type": "http", "url": "ftp://x"}, "agents[0].adapter.url: required"),
        (
            {"type": "http", "url": "http://x", "headers": {"A": {"secret_env": "NOPE"}}},
            "agents[0].adapter.headers.A.secret_env: the environment variable NOPE is not set",
        ),
        ({"type": "http", "url": "http://x", "timeout_s": 0}, "agents[0].adapter.timeout_s"),
        ({"type": "process", "command": "x", "cwd": "/"}, "agents[0].adapter.cwd: unknown"),
    ],
)
def test_a_bad_adapter_setting_names_its_path(adapter: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config({"name": "outside", "adapter": adapter})
    assert str(caught.value).startswith(message), str(caught.value)


def test_an_agent_has_a_model_or_an_adapter() -> None:
    with pytest.raises(ConfigError, match=r"agents\[0\]\.model: an agent run by an adapter"):
        config(
            {
                "name": "outside",
                "model": "scripted",
                "adapter": {"type": "process", "command": "x"},
            }
        )


def test_the_example_configuration_loads() -> None:
    loaded = ServerConfig.from_mapping(
        __import__("yaml").safe_load((EXAMPLES / "handrail.yaml").read_text()), env=dict(os.environ)
    )
    assert [type(a.adapter).__name__ for a in loaded.agents] == ["ProcessAdapter", "HttpAdapter"]
