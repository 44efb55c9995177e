"""Agents run outside handrail: the ``http`` and ``process`` adapters.

An adapter is one more `Model`: each model step becomes one JSON *step request* to a program of
the user's own, whose *reply* gives the step's text and tool calls. Every tool call it returns
goes through the same gates as the native runner's (the runtime cannot tell them apart).

The step request (see ``docs/reference/adapters.md``)::

    {"conversationId": "...", "sessionId": "..." | null,
     "agent": {"name": "...", "instructions": "..."},
     "messages": [...handrail's message JSON...],
     "tools": [{"name", "description", "inputSchema"}],
     "connectionInstructions": {"text", "digest"} | null,
     "context": {"connectionInstructions": {"text", "digest"} | null}}

The reply: ``{"sessionId"?: str | null, "text"?: str, "toolCalls"?: [{"id", "name",
"arguments"}]}``. A session the reply names is offered again (``sessionId``) to the next step of
the same conversation only while the connection instructions' digest is the same; a changed or
removed snapshot starts a new session (``sessionId: null``). Sessions are remembered by the
process (the messages carry the whole conversation either way).

- `HttpAdapter` POSTs the request to a URL, with configured headers (secrets from the
  environment) and an optional payload template whose keys the request's own keys override.
- `ProcessAdapter` runs a command per step: the request on stdin, the reply on stdout, and
  ``HANDRAIL_CONNECTION_INSTRUCTIONS_FILE`` naming a JSON file of the snapshot (empty when none
  applies), mode 0600 in a fresh temporary folder that is removed when the step ends, however
  it ends; a path set in the configuration or the server's environment never overrides it. The
  process gets only a few of the server's environment variables (``HOME``, ``PATH``...), as a
  stdio MCP server does, then its configured ``env``: never the server's secrets.

A reply that is not that shape, an HTTP error, a non-zero exit or a timeout fails the turn with
an `AdapterError` naming the adapter and the way forward, never a traceback.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import tempfile
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import httpx

from ...connections.child_env import child_environment
from ...connections.instructions import Snapshot
from ..messages import ToolCall, messages_to_json
from ._convert import strict_json
from .base import (
    ModelError,
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    storable_stream,
)

__all__ = [
    "ADAPTER_TYPES",
    "DEFAULT_ADAPTER_TIMEOUT",
    "INSTRUCTIONS_FILE_ENV",
    "AdapterError",
    "HttpAdapter",
    "ProcessAdapter",
    "parse_reply",
    "step_request",
]

log = logging.getLogger("handrail.adapters")

ADAPTER_TYPES: Final = ("http", "process")
#: Seconds a step may take unless the adapter's ``timeout_s`` says otherwise.
DEFAULT_ADAPTER_TIMEOUT: Final = 120.0
#: The environment variable that names the process adapter's instructions file.
INSTRUCTIONS_FILE_ENV: Final = "HANDRAIL_CONNECTION_INSTRUCTIONS_FILE"
#: The most a reply may hold (bytes).
REPLY_MAX_BYTES: Final = 4 * 1024 * 1024
#: How much of a process's stderr the log keeps (its last bytes; the rest is read and dropped).
STDERR_KEPT_BYTES: Final = 2000
#: Seconds a stopped process's pipes get to reach their end (read and dropped) before the step
#: gives up waiting for it.
STOP_GRACE_S: Final = 5.0
_READ_CHUNK: Final = 65536
#: How many conversations' sessions one adapter remembers.
SESSIONS_MAX: Final = 10_000
_REPLY_KEYS: Final = frozenset({"sessionId", "text", "toolCalls"})
_CALL_KEYS: Final = frozenset({"id", "name", "arguments"})


class AdapterError(ModelError):
    """An adapter's step failed; the message names the adapter and the way forward, and is
    shown to the person (it never holds a header value, an environment value or a prompt)."""


def step_request(request: ModelRequest, session_id: str | None) -> dict[str, Any]:
    """The step request of one model step (the server owns every key)."""
    snapshot = (
        request.connection_instructions.to_json()
        if request.connection_instructions is not None
        else None
    )
    return {
        "conversationId": request.conversation_id,
        "sessionId": session_id,
        "agent": {"name": request.agent_name, "instructions": request.agent_instructions},
        "messages": messages_to_json(list(request.messages)),
        "tools": [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
            for t in request.tools
        ],
        "connectionInstructions": snapshot,
        "context": {"connectionInstructions": snapshot},
    }


def parse_reply(data: Any, adapter: str) -> tuple[str | None, bool, str, list[ToolCall]]:
    """``(session_id, names_session, text, tool_calls)`` of a reply; `AdapterError` naming
    what is wrong when it is not the reply's shape."""

    def wrong(what: str) -> AdapterError:
        return AdapterError(
            f"The {adapter} answered a reply that is not a step reply: {what}. It must answer "
            '{"sessionId"?: string or null, "text"?: string, "toolCalls"?: [{"id", "name", '
            '"arguments"}]} (see docs/reference/adapters.md).'
        )

    if not isinstance(data, Mapping):
        raise wrong("it is not a JSON object")
    unknown = sorted(str(k) for k in data if k not in _REPLY_KEYS)
    if unknown:
        raise wrong(f"it has the unknown keys {', '.join(unknown)}")
    session = data.get("sessionId")
    if session is not None and not (isinstance(session, str) and session):
        raise wrong("sessionId is not a non-empty string or null")
    text = data.get("text", "")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise wrong("text is not a string")
    raw_calls = data.get("toolCalls", [])
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise wrong("toolCalls is not a list")
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_calls):
        where = f"toolCalls[{index}]"
        if not isinstance(raw, Mapping):
            raise wrong(f"{where} is not an object")
        extra = sorted(str(k) for k in raw if k not in _CALL_KEYS)
        if extra:
            raise wrong(f"{where} has the unknown keys {', '.join(extra)}")
        call_id, name = raw.get("id"), raw.get("name")
        arguments = raw.get("arguments", {})
        if not isinstance(call_id, str):
            raise wrong(f"{where}.id is not a string")
        # An empty id is given the next free one by the runtime, as a repeated one is.
        if call_id and call_id in seen:
            raise wrong(f"{where}.id {call_id!r} is used twice")
        seen.add(call_id)
        if not isinstance(name, str) or not name:
            raise wrong(f"{where}.name is not a non-empty string")
        if not isinstance(arguments, Mapping):
            raise wrong(f"{where}.arguments is not an object")
        calls.append(ToolCall(id=call_id, name=name, arguments=dict(arguments)))
    return session, "sessionId" in data, text, calls


class _Sessions:
    """Each conversation's session, with the digest it was made under."""

    def __init__(self) -> None:
        self._by_conversation: OrderedDict[str, tuple[str, str | None]] = OrderedDict()

    def offer(self, conversation_id: str | None, digest: str | None) -> str | None:
        """The session to offer: the conversation's, while the digest is the same."""
        if conversation_id is None:
            return None
        found = self._by_conversation.get(conversation_id)
        if found is None:
            return None
        if found[1] != digest:
            # Changed or removed instructions: the old session is not reused.
            del self._by_conversation[conversation_id]
            return None
        self._by_conversation.move_to_end(conversation_id)
        return found[0]

    def keep(self, conversation_id: str | None, session: str | None, digest: str | None) -> None:
        if conversation_id is None:
            return
        if session is None:
            self._by_conversation.pop(conversation_id, None)
            return
        self._by_conversation[conversation_id] = (session, digest)
        self._by_conversation.move_to_end(conversation_id)
        while len(self._by_conversation) > SESSIONS_MAX:
            self._by_conversation.popitem(last=False)


def _digest(request: ModelRequest) -> str | None:
    snapshot = request.connection_instructions
    return snapshot.digest if snapshot is not None else None


def _events(text: str, calls: Sequence[ToolCall]) -> list[ModelEvent]:
    events: list[ModelEvent] = []
    if text:
        events.append(TextDelta(text=text))
    events.extend(ToolCallPart(call=call) for call in calls)
    events.append(StepEnd(finish_reason="tool_calls" if calls else "stop"))
    return events


class _Adapter(abc.ABC):
    """What both adapters share: the session bookkeeping and the reply. Each adapter names
    itself (`label`, for errors) and makes the exchange (`_exchange`: the step request's JSON
    out, the reply's bytes back)."""

    supports_tools = True

    def __init__(self, agent: str, timeout_s: float) -> None:
        self.agent = agent
        self.timeout_s = float(timeout_s)
        self.sessions = _Sessions()

    @property
    @abc.abstractmethod
    def label(self) -> str: ...

    @abc.abstractmethod
    async def _exchange(self, body: dict[str, Any], snapshot: Snapshot | None) -> bytes: ...

    @storable_stream
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        digest = _digest(request)
        offered = self.sessions.offer(request.conversation_id, digest)
        body = step_request(request, offered)
        raw = await self._exchange(body, request.connection_instructions)
        try:
            data = strict_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            # NaN, Infinity and nesting too deep to read are not JSON either (`strict_json`).
            raise AdapterError(
                f"The {self.label} answered something that is not JSON. It must answer one "
                "JSON object, the step reply (see docs/reference/adapters.md)."
            ) from None
        session, named, text, calls = parse_reply(data, self.label)
        if named or offered is None:
            self.sessions.keep(request.conversation_id, session, digest)
        for event in _events(text, calls):
            yield event


class HttpAdapter(_Adapter):
    """POSTs each step request to `url` as JSON and reads the reply from the response body.

    `headers` are sent with every request (their values are never logged or shown);
    `payload_template` is a JSON object whose keys go into the request first, so the server's
    own keys (``connectionInstructions`` above all) always override it; a template's
    ``context`` object is merged with the server's."""

    def __init__(
        self,
        *,
        agent: str,
        url: str,
        headers: Mapping[str, str] | None = None,
        payload_template: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_ADAPTER_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(agent, timeout_s)
        self.url = url
        self._headers = dict(headers or {})
        self.payload_template = dict(payload_template or {})
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout_s),
            follow_redirects=False,
            transport=transport,
        )

    @property
    def name(self) -> str:
        return f"http:{self.url}"

    @property
    def label(self) -> str:
        return f"http adapter of the agent {self.agent} ({self.url})"

    def payload(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request as sent: the template's keys, then the server's (which win)."""
        out = {**self.payload_template, **body}
        context = self.payload_template.get("context")
        if isinstance(context, Mapping):
            out["context"] = {**context, **body["context"]}
        return out

    async def _exchange(self, body: dict[str, Any], snapshot: Snapshot | None) -> bytes:
        # `timeout_s` is the whole step's: httpx's own timeout is per read, so a reply sent a
        # byte at a time would never time out.
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._post(body)
        except (TimeoutError, httpx.TimeoutException):
            raise AdapterError(
                f"The {self.label} did not answer within {self.timeout_s:g} seconds. Make it "
                "answer sooner, or raise its timeout_s."
            ) from None

    async def _post(self, body: dict[str, Any]) -> bytes:
        """The reply's bytes, read no further than `REPLY_MAX_BYTES`."""
        try:
            async with self._client.stream(
                "POST", self.url, json=self.payload(body), headers=self._headers
            ) as response:
                if response.status_code != 200:
                    raise AdapterError(
                        f"The {self.label} answered HTTP {response.status_code}; it must answer "
                        "200 with the step reply as JSON. Its own log says why."
                    )
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > REPLY_MAX_BYTES:
                    raise self._too_large()
                content = bytearray()
                async for chunk in response.aiter_bytes():
                    content += chunk
                    if len(content) > REPLY_MAX_BYTES:
                        raise self._too_large()
                return bytes(content)
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as exc:
            raise AdapterError(
                f"The {self.label} could not be reached ({type(exc).__name__}). Check that it "
                "runs and that its url is right."
            ) from None

    def _too_large(self) -> AdapterError:
        return AdapterError(
            f"The {self.label} answered more than {REPLY_MAX_BYTES} bytes; keep a reply smaller."
        )

    async def aclose(self) -> None:
        await self._client.aclose()


class ProcessAdapter(_Adapter):
    """Runs ``command args...`` once per step: the step request on stdin, the reply on stdout.

    The process does not get the server's environment (it holds secrets the process did not ask
    for): only what a stdio MCP server gets (`child_environment`: ``HOME``, ``PATH`` and a few
    more), then `env`, then ``HANDRAIL_CONNECTION_INSTRUCTIONS_FILE``, which nothing overrides.
    Its stderr goes to the ``handrail.adapters`` log."""

    def __init__(
        self,
        *,
        agent: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_ADAPTER_TIMEOUT,
    ) -> None:
        super().__init__(agent, timeout_s)
        self.command = command
        self.args = tuple(args)
        self._env = dict(env or {})

    @property
    def name(self) -> str:
        return f"process:{Path(self.command).name}"

    @property
    def label(self) -> str:
        return f"process adapter of the agent {self.agent} ({Path(self.command).name})"

    def unstartable(self) -> str | None:
        """Why `command` cannot be run (not on the PATH the process gets, nor an executable
        file), with the way forward; None when it can. Checked before a server starts."""
        path = child_environment(self._env).get("PATH")
        if shutil.which(self.command, path=path) is not None:
            return None
        return (
            f"{self.command!r} is not a program this server can run (not on the PATH, or not "
            "an executable file). Give its full path, such as /usr/bin/python3, or install it."
        )

    async def _exchange(self, body: dict[str, Any], snapshot: Snapshot | None) -> bytes:
        folder = tempfile.mkdtemp(prefix="handrail-instructions-")
        try:
            path = os.path.join(folder, "connection-instructions.json")
            content = json.dumps(snapshot.to_json(), ensure_ascii=False) if snapshot else ""
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(content)
            env = {**child_environment(self._env), INSTRUCTIONS_FILE_ENV: path}
            return await self._run(json.dumps(body, ensure_ascii=False).encode("utf-8"), env)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def _run(self, stdin: bytes, env: Mapping[str, str]) -> bytes:
        try:
            process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as exc:
            raise AdapterError(
                f"The {self.label} could not be started ({exc.strerror or type(exc).__name__}). "
                "Check its command and that it may be run."
            ) from None
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        # Read as it comes, so that neither pipe fills up, and never more than the reply's cap
        # (stdout) or the log's (stderr): a process that writes without end cannot fill memory.
        out = asyncio.ensure_future(_read_up_to(process.stdout, REPLY_MAX_BYTES))
        err = asyncio.ensure_future(_read_tail(process.stderr, STDERR_KEPT_BYTES))
        stdout = stderr = b""
        finished = False
        try:
            async with asyncio.timeout(self.timeout_s):
                await _feed(process.stdin, stdin)
                stdout = await out
                if len(stdout) > REPLY_MAX_BYTES:
                    raise AdapterError(
                        f"The {self.label} wrote more than {REPLY_MAX_BYTES} bytes; keep a "
                        "reply smaller."
                    )
                stderr = await err
                await process.wait()
            finished = True
        except TimeoutError:
            raise AdapterError(
                f"The {self.label} did not finish within {self.timeout_s:g} seconds, so it was "
                "stopped. Make it answer sooner, or raise its timeout_s."
            ) from None
        finally:
            if not finished:
                await _stop(process, (out, err), self.label)
        if stderr:
            log.warning("%s wrote to stderr: %s", self.label, stderr.decode(errors="replace"))
        if process.returncode != 0:
            raise AdapterError(
                f"The {self.label} exited with status {process.returncode}; it must exit 0 "
                "after writing the step reply to stdout. The server log has its stderr."
            )
        return stdout


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write the step request and close stdin; a process that does not read it is no error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


async def _read_up_to(stream: asyncio.StreamReader, limit: int) -> bytes:
    """What `stream` holds up to its end, or a little more than `limit` bytes (then it stops
    reading)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


async def _read_tail(stream: asyncio.StreamReader, keep: int) -> bytes:
    """The last `keep` bytes of `stream`, read to its end."""
    tail = b""
    while chunk := await stream.read(_READ_CHUNK):
        tail = (tail + chunk)[-keep:]
    return tail


async def _stop(
    process: asyncio.subprocess.Process, readers: Sequence[asyncio.Future[bytes]], label: str
) -> None:
    """Stop a step's process that did not finish (a timeout, a reply too large, a cancelled
    turn): kill it and its children, then read what is left in its pipes until they end (a pipe
    nobody reads would keep `wait` from ever returning), for at most `STOP_GRACE_S`."""
    _kill(process)
    for reader in readers:
        reader.cancel()
    # Each reader has let go of its stream before it is read here (a stream takes one reader).
    await asyncio.gather(*readers, return_exceptions=True)
    waited = False
    with contextlib.suppress(Exception):
        async with asyncio.timeout(STOP_GRACE_S):
            for stream in (process.stdout, process.stderr):
                while stream is not None and await stream.read(_READ_CHUNK):
                    pass
            await process.wait()
            waited = True
    if not waited:
        log.warning(
            "the %s was stopped, but its pipes were still open after %g seconds (a program it "
            "started in a session of its own may hold them)",
            label,
            STOP_GRACE_S,
        )


def _kill(process: asyncio.subprocess.Process) -> None:
    """Stop the process and any children it started (its own session, whose group keeps the
    process's id while any of them runs): also when the process itself has exited already, since
    a child it left behind may still run."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
