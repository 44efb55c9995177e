"""The MCP client of a connection: one server, kept connected through the official SDK
(`mcp.client.Client`), over stdio or streamable HTTP.

`McpLink` owns the SDK client in a supervisor task (the SDK's context must be entered and left
in one task): it connects, lists the tools, and stays connected until it is closed. A stdio
server is a child process of this server process; when it dies (a call finds the connection
closed, or connecting fails) the supervisor starts it again after a backoff that doubles from
half a second to `BACKOFF_MAX`. The child's stderr goes to the ``handrail.connections`` log one
line at a time, with every secret value masked.

What reaches the caller:

- `ListedTool`: a tool as the server lists it, its annotations (and the WebMCP hints a server
  states in the tool's ``_meta`` under `HINTS_META_KEY`) as declared, never defaults.
- `CallOutcome`: a result for the model: text as text, otherwise ``{content, structuredContent}``
  as the SDK gives them, and ``isError``. An image or audio block keeps its place, type and
  MIME type, with its data replaced by its size and a note: no file bytes are stored in a
  conversation. Images (PNG, JPEG, GIF, WebP, up to `IMAGE_MAX_BYTES`) come with the outcome as
  `McpFile`s, for the model to see with the result on that turn.
- `McpCallFailed`: the server failed, timed out, or is not there; its message names the way
  forward and its `code` is ``TOOL_SERVER_ERROR``, ``TOOL_TIMEOUT`` or ``TOOL_CONNECTION_ERROR``.
- `ElicitationNeeded`: the server asks a person first: an elicitation (2026-07-28 rounds, or a
  legacy request in the open call), or a refusal with -32042 naming pages to open, after which
  the call is sent again as it was (a URL-required round, `mcp_rounds`).

The server's ``instructions`` are kept (`McpLink.instructions`) for admins to read; nothing here
puts them into a prompt.

The pieces live beside it: `mcp_tools` (the listing), `mcp_outcome` (a call's result),
`mcp_parked` (legacy calls waiting on an answer here), `mcp_rounds` (the rounds kept with a
pending ask) and `mcp_stderr` (a stdio server's log).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

import httpx2
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._util import new_id, storable_text
from ..errors import HandrailError
from .catalog import McpLaunch
from .child_env import child_environment
from .elicitation import ElicitationRequest
from .mcp_outcome import (
    IMAGE_MAX_BYTES,
    CallOutcome,
    ElicitationNeeded,
    McpCallFailed,
    McpFile,
    outcome_of,
)
from .mcp_parked import (
    PARK_MAX,
    PARKED,
    Parked,
    ParkedCallGone,
    drop_result,
    parked_here,
    release_parked,
)
from .mcp_rounds import (
    INPUT_ROUNDS_MAX,
    URL_REQUIRED,
    consented,
    next_key,
    refused_round,
    request_args,
    request_json,
    responses_of,
    restarted,
    too_many_rounds,
    url_consent,
)
from .mcp_stderr import StderrLog
from .mcp_tools import HINTS_META_KEY, ListedTool, list_tools
from .oauth import AuthorizationNeeded, OAuthLink, SignIn, SignInFailed
from .secrets import mask

__all__ = [
    "BACKOFF_MAX",
    "HINTS_META_KEY",
    "IMAGE_MAX_BYTES",
    "CallOutcome",
    "ElicitationNeeded",
    "LinkState",
    "ListedTool",
    "McpCallFailed",
    "McpFile",
    "McpLink",
    "ParkedCallGone",
    "parked_here",
    "release_parked",
]

log = logging.getLogger("handrail.connections")

CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001
#: The longest wait between two attempts to start a server again.
BACKOFF_MAX: Final = 30.0
BACKOFF_FIRST: Final = 0.5
#: Seconds to connect (and list the tools) before the attempt counts as failed.
CONNECT_TIMEOUT: Final = 30.0
_STATE_ONLY_WAIT: Final = 0.05

LinkState = Literal["starting", "connected", "error", "closed"]


@dataclass(kw_only=True)
class _Attempt:
    client: Client | None = None
    lost: asyncio.Event = field(default_factory=asyncio.Event)


class McpLink:
    """One MCP server, kept connected (see the module's docs).

    `launch` has its placeholders filled already; `secrets` are the values to mask in the
    server's stderr; `mode` is the protocol mode (``auto``, ``legacy`` or ``2026-07-28``)."""

    def __init__(
        self,
        *,
        name: str,
        launch: McpLaunch,
        secrets: Sequence[str] = (),
        call_timeout: float = 60.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        on_change: Callable[[McpLink], Awaitable[None]] | None = None,
        oauth: OAuthLink | None = None,
    ) -> None:
        self.name = name
        #: The authorization of an HTTP server that may require signing in (OAuth).
        self.oauth = oauth
        #: The sign-in the link waits on (an admin's browser), if any.
        self.sign_in: SignIn | None = None
        self._clock: asyncio.Timeout | None = None
        if oauth is not None:
            oauth.on_wait = self._waiting
        #: Called (in the supervisor) each time the link connects again or fails again after
        #: its first start: the owner updates what it shows (`start` covers the first).
        self.on_change = on_change
        self._settles = 0
        self._reports = 0
        self._reported = asyncio.Event()
        self._waited = False
        self.launch = launch
        self._fixed_secrets = [s for s in secrets if s]
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.state: LinkState = "starting"
        self.message: str | None = None
        self.instructions: str | None = None
        self.tools: list[ListedTool] = []
        self.listed: bool = False
        self._attempt = _Attempt()
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.restarts = 0
        #: Legacy calls open in this process, by id (see `Parked`).
        self._open: dict[str, Parked] = {}

    # --- life --------------------------------------------------------------------------------

    async def start(self, *, wait: float | None = None) -> None:
        """Start the supervisor and wait (up to `wait` seconds, default the connect timeout)
        for the first attempt to connect or fail."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"handrail-mcp-{self.name}")
        await self.wait_settled(self.connect_timeout + 1 if wait is None else wait)

    async def wait_settled(self, timeout: float) -> None:
        """Wait until the link is connected, in error, or waiting on a sign-in (or `timeout`
        passes)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self.state == "starting" and self.sign_in is None:
                    self._changed.clear()
                    await self._changed.wait()

    async def aclose(self) -> None:
        """Stop the server (a stdio child is ended) and the supervisor."""
        self._closing.set()
        if self.sign_in is not None and self.oauth is not None:
            self.oauth.sign_ins.cancel(self.sign_in.state, "the connection was changed or removed")
        self._attempt.lost.set()
        if self._task is not None:
            try:
                async with asyncio.timeout(15):
                    await asyncio.shield(self._task)
            except TimeoutError:
                self._task.cancel()
            except asyncio.CancelledError:
                self._task.cancel()
                raise  # the caller was cancelled: so is its wait, never swallowed
            except Exception:
                log.exception("stopping the MCP server %s failed", self.name)
        self._set("closed", None)

    @property
    def _secrets(self) -> list[str]:
        """The values to mask: the connection's secrets and its current tokens."""
        if self.oauth is None:
            return self._fixed_secrets
        return [*self._fixed_secrets, *self.oauth.saved.values()]

    def _waiting(self, sign_in: SignIn | None) -> None:
        """The flow waits on an admin's browser (`sign_in`), or its answer came (None): the
        connect timeout stops meanwhile, as the sign-in has its own."""
        self.sign_in = sign_in
        if sign_in is not None:
            self._waited = True
        if self._clock is not None:
            loop = asyncio.get_running_loop()
            self._clock.reschedule(None if sign_in else loop.time() + self.connect_timeout)
        self._changed.set()

    @property
    def needs_sign_in(self) -> bool:
        """The server requires a sign-in that has not happened (or was revoked)."""
        return self.oauth is not None and self.oauth.needed

    def _set(self, state: LinkState, message: str | None) -> None:
        self.state = state
        self.message = message
        self._changed.set()

    async def _settled(self) -> None:
        """The link connected or failed: tell the owner, but for the first start (unless
        that start waited on a sign-in, which `start` returned at)."""
        self._settles += 1
        first = self._settles == 1 and not self._waited
        if not first and self.on_change is not None and not self._closing.is_set():
            try:
                await self.on_change(self)
            except Exception:
                log.exception("the owner of the MCP server %s failed to take its change", self.name)
        self._reports += 1
        self._reported.set()

    @property
    def reports(self) -> int:
        """How many times the link settled (and its owner was told, when it is told)."""
        return self._reports

    async def wait_reported(self, after: int, timeout: float) -> None:
        """Wait until the link settled more than `after` times (or `timeout` passes)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._reports <= after:
                    self._reported.clear()
                    await self._reported.wait()

    async def _supervise(self) -> None:
        delay = BACKOFF_FIRST
        while not self._closing.is_set():
            attempt = _Attempt()
            self._attempt = attempt
            try:
                await self._connected(attempt)
            except Exception as exc:
                before = self.message
                self.sign_in = None
                self._set("error", self._failure_text(exc))
                if self.message != before:  # once per new reason, not at every retry
                    log.warning(
                        "MCP server %s: %s", self.name, mask(self.message or "", self._secrets)
                    )
                await self._settled()
                if isinstance(_leaf(exc), AuthorizationNeeded | SignInFailed):
                    # Trying again cannot help: an admin signs in (which starts a new link).
                    await self._closing.wait()
                    return
            else:
                if not self._closing.is_set():
                    self._set("starting", None)
                    delay = BACKOFF_FIRST
            if self._closing.is_set():
                return
            self.restarts += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._closing.wait()
            delay = min(delay * 2, BACKOFF_MAX)

    async def _connected(self, attempt: _Attempt) -> None:
        """One connection: connect, list, serve calls until it is lost or closed."""
        errlog = StderrLog(self.name, self._secrets) if self.launch.transport == "stdio" else None
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = Client(
                    self._server(errlog, stack),
                    mode=self.launch.protocol,
                    read_timeout_seconds=self.connect_timeout,
                    elicitation_callback=self._on_elicitation,
                    input_required_max_rounds=INPUT_ROUNDS_MAX,
                )
                async with asyncio.timeout(self.connect_timeout) as clock:
                    self._clock = clock
                    try:
                        await stack.enter_async_context(client)
                    finally:
                        self._clock = None
                if errlog is not None:
                    errlog.spawned()
                self.instructions = client.instructions
                async with asyncio.timeout(self.connect_timeout):
                    self.tools = await list_tools(client)
                self.listed = True
                attempt.client = client
                self._set("connected", None)
                await self._settled()
                await attempt.lost.wait()
                attempt.client = None
        finally:
            attempt.client = None
            if errlog is not None:
                errlog.close()

    def _server(self, errlog: StderrLog | None, stack: contextlib.AsyncExitStack) -> Any:
        launch = self.launch
        if launch.transport == "stdio":
            assert launch.command is not None
            assert errlog is not None
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=launch.command, args=list(launch.args), env=child_environment(launch.env)
            )
            return stdio_client(params, errlog=cast(Any, errlog.writer))
        from mcp.client.streamable_http import streamable_http_client

        assert launch.url is not None
        http = httpx2.AsyncClient(
            headers=dict(launch.headers),
            timeout=httpx2.Timeout(30.0, read=300.0),
            auth=self.oauth.auth() if self.oauth is not None else None,
        )
        stack.push_async_callback(http.aclose)
        return streamable_http_client(launch.url, http_client=http)

    def _failure_text(self, exc: BaseException) -> str:
        """Why the server could not be started or reached, with the way forward."""
        where = (
            f"the command {self.launch.command!r}"
            if self.launch.transport == "stdio"
            else f"the server at {self.launch.url}"
        )
        if isinstance(exc, AuthorizationNeeded | SignInFailed):
            return mask(str(exc), self._secrets)
        if isinstance(exc, TimeoutError):
            reason = f"{where} did not answer within {self.connect_timeout:g} seconds"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            reason = f"{where} cannot be run ({exc.strerror or type(exc).__name__})"
        elif isinstance(exc, BaseExceptionGroup):
            inner = _first_leaf(exc)
            return self._failure_text(inner) if inner is not exc else f"{where} failed"
        elif isinstance(exc, httpx2.HTTPError | OSError):
            reason = f"{where} cannot be reached ({type(exc).__name__}: {exc})"
        elif isinstance(exc, MCPError):
            reason = f"{where} refused the connection ({exc.error.message})"
        else:
            reason = f"{where} failed ({type(exc).__name__}: {exc})"
        # A sentence for the Connections page: "The command 'x' cannot be run (...)".
        text = (
            f"{reason[:1].upper()}{reason[1:]}. Check the connection's settings (command, URL, "
            "secrets) and that the server runs, then refresh the connection."
        )
        return mask(text, self._secrets)

    # --- use -----------------------------------------------------------------------------------

    async def refresh(self) -> list[ListedTool]:
        """List the tools again (a server in error is started again first)."""
        if self.state == "error":
            self._attempt.lost.set()
            self._set("starting", None)
            await self.wait_settled(self.connect_timeout + 1)
        client = self._attempt.client
        if client is None:
            raise McpCallFailed(self._unavailable_text(), code="TOOL_CONNECTION_ERROR")
        try:
            async with asyncio.timeout(self.connect_timeout):
                self.tools = await list_tools(client)
        except Exception as exc:
            self._lose()
            raise McpCallFailed(self._failure_text(exc), code="TOOL_CONNECTION_ERROR") from None
        self.listed = True
        return self.tools

    async def call(
        self, tool: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> CallOutcome:
        """Call `tool` once and give its result; `McpCallFailed` when there is none, and
        `ElicitationNeeded` when the server asks a person for input first."""
        limit = self.call_timeout if timeout is None else timeout
        return await self._start(tool, dict(arguments), limit, {"round": 0})

    async def _start(
        self, tool: str, arguments: dict[str, Any], limit: float, state: dict[str, Any]
    ) -> CallOutcome:
        """Send the call, first or again (after a URL-required round): `state` counts the
        rounds so far (``{round, restarted}``) and, on 2026-07-28, holds the answers and the
        ``requestState`` of a refused retry to send again."""
        client = await self._client()
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._rounds(client, tool, arguments, limit, state)
        rounds = int(state.get("round") or 0)
        parked = Parked(id=new_id(), tool=tool, limit=limit, remaining=limit, rounds=rounds)
        parked.task = asyncio.create_task(
            client.call_tool(tool, arguments, read_timeout_seconds=PARK_MAX + limit),
            name=f"handrail-mcp-call-{tool}",
        )
        self._open[parked.id] = parked
        PARKED[parked.id] = self
        parked.task.add_done_callback(lambda _task: self._closed_call(parked))
        return await self._wait_parked(parked)

    async def resume(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        resume: Mapping[str, Any],
        answer: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> CallOutcome:
        """Go on with a call that waited on a person, with `answer` (an `ElicitResult` as
        JSON): the same outcomes as `call`. A legacy call not parked here is
        `ParkedCallGone`. A URL-required round (see `mcp_rounds`) asks its next URL, or ends
        on a decline, or once all are consented to sends the refused request again as it
        was."""
        limit = self.call_timeout if timeout is None else timeout
        if resume.get("protocol") == "legacy":
            parked = self._open.get(str(resume.get("parked")))
            if parked is None or parked.waiting is None or parked.waiting.done():
                raise ParkedCallGone(f"the call of {tool} is not parked in this process")
            parked.waiting.set_result(types.ElicitResult.model_validate(dict(answer)))
            parked.waiting = None
            return await self._wait_parked(parked)
        state = dict(resume)
        key = str(state.get("key"))
        state["responses"] = {**dict(state.get("responses") or {}), key: dict(answer)}
        if state.get("protocol") == URL_REQUIRED:
            again = consented(state, self.name, tool)
            return await self._start(tool, dict(arguments), limit, again)
        client = await self._client()
        return await self._rounds(client, tool, dict(arguments), limit, state)

    def is_parked(self, resume: Mapping[str, Any]) -> bool:
        """Whether the legacy call of `resume` waits in this process (a 2026-07-28 call can go
        on anywhere: always True)."""
        if resume.get("protocol") != "legacy":
            return True
        parked = self._open.get(str(resume.get("parked")))
        return parked is not None and parked.waiting is not None and not parked.waiting.done()

    def release(self, resume: Mapping[str, Any]) -> None:
        """The ask of a parked legacy call was cancelled: the server gets ``cancel`` and the
        call's result is dropped."""
        parked = self._open.get(str(resume.get("parked")))
        if parked is None:
            return
        if parked.waiting is not None and not parked.waiting.done():
            parked.waiting.set_result(types.ElicitResult(action="cancel"))
        parked.waiting = None
        if parked.task is not None and not parked.task.done():
            parked.task.add_done_callback(drop_result)

    async def _client(self) -> Client:
        if self.state == "starting":
            await self.wait_settled(min(self.connect_timeout, 10.0))
        client = self._attempt.client
        if client is None:
            raise McpCallFailed(self._unavailable_text(), code="TOOL_CONNECTION_ERROR")
        return client

    def _closed_call(self, parked: Parked) -> None:
        """A legacy call ended: an answer it waited for can no longer be taken, and unless a
        turn waits for its result it is forgotten."""
        if parked.waiting is not None and not parked.waiting.done():
            parked.waiting.cancel()
        parked.waiting = None
        if not parked.watched:
            if parked.task is not None:
                drop_result(parked.task)
            self._forget(parked)

    def _forget(self, parked: Parked) -> None:
        self._open.pop(parked.id, None)
        PARKED.pop(parked.id, None)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """A legacy server asks for input inside an open call: the call is parked and its
        turn pauses on an ask. A request no single open call can own is cancelled: the
        protocol does not say which call it is for, and a person must never see another's."""
        open_calls = [
            p
            for p in self._open.values()
            if p.task is not None and not p.task.done() and p.waiting is None
        ]
        if len(open_calls) != 1:
            log.warning(
                "MCP server %s asked for input with %d calls open; cancelled",
                self.name,
                len(open_calls),
            )
            return types.ElicitResult(action="cancel")
        parked = open_calls[0]
        answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        parked.waiting = answered
        parked.asked.put_nowait((params, answered))
        try:
            async with asyncio.timeout(PARK_MAX):
                return cast(types.ElicitResult, await answered)
        except (TimeoutError, asyncio.CancelledError):
            return types.ElicitResult(action="cancel")

    async def _wait_parked(self, parked: Parked) -> CallOutcome:
        """Wait for a legacy call's result or its next request for input, on the call's
        clock, which stops while a person answers."""
        assert parked.task is not None
        asked = asyncio.ensure_future(parked.asked.get())
        started = time.monotonic()
        parked.watched = True
        try:
            done, _ = await asyncio.wait(
                {parked.task, asked},
                timeout=max(parked.remaining, 0.0),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            parked.watched = False
            parked.remaining -= time.monotonic() - started
            if not asked.done():
                asked.cancel()
        if asked in done:
            params, _answered = asked.result()
            raise ElicitationNeeded(
                self._request_of(params), {"protocol": "legacy", "parked": parked.id}
            )
        self._forget(parked)
        if parked.task not in done:
            parked.task.cancel()
            raise self._timed_out(parked.tool, parked.limit)
        try:
            result = parked.task.result()
        except MCPError as exc:
            if exc.code == types.URL_ELICITATION_REQUIRED:
                rounds = parked.rounds + 1
                raise self._url_required(parked.tool, exc.error, rounds, parked.limit) from None
            raise self._failed(parked.tool, exc, parked.limit) from None
        except Exception as exc:
            raise self._failed(parked.tool, exc, parked.limit) from None
        return outcome_of(result)

    async def _rounds(
        self,
        client: Client,
        tool: str,
        arguments: dict[str, Any],
        limit: float,
        state: dict[str, Any],
    ) -> CallOutcome:
        """Drive a 2026-07-28 call's rounds: ask a person for each input request in turn
        (`ElicitationNeeded` carries the rounds so far), then retry with the responses and the
        ``requestState`` byte-exact. A state the server rejects restarts the call once; a
        refusal with -32042 is a URL-required round (see `mcp_rounds`)."""
        while True:
            key = next_key(state)
            if key is not None:
                request = ElicitationRequest(**request_args(state["requests"][key], self.name))
                raise ElicitationNeeded(request, {**state, "protocol": "2026-07-28", "key": key})
            responses = responses_of(state) if state.get("order") else None
            try:
                result = await self._send(
                    client, tool, arguments, limit, responses, state.get("requestState")
                )
            except _UrlRequired as refused:
                rounds, again, retry = refused_round(state)
                raise self._url_required(tool, refused.error, rounds, limit, again, retry) from None
            except _StateRejected:
                if state.get("restarted"):
                    raise McpCallFailed(
                        f"The server {self.name} refused the call of {tool} again after it was "
                        "started over: it no longer accepts the answers given. Call the tool "
                        "again, or tell the user.",
                        code="TOOL_SERVER_ERROR",
                    ) from None
                state = {"round": 0, "restarted": True}
                continue
            if not isinstance(result, types.InputRequiredResult):
                outcome = outcome_of(result)
                return restarted(outcome, self.name) if state.get("restarted") else outcome
            rounds = int(state.get("round") or 0) + 1
            if rounds > INPUT_ROUNDS_MAX:
                raise too_many_rounds(self.name, tool)
            requests: dict[str, Any] = {}
            responses_now: dict[str, Any] = {}
            for key, asked in sorted((result.input_requests or {}).items()):
                if isinstance(asked, types.ElicitRequest):
                    requests[key] = request_json(asked.params)
                elif isinstance(asked, types.ListRootsRequest):
                    responses_now[key] = {"roots": []}
                else:
                    raise McpCallFailed(
                        f"The server {self.name} asked to use the model during the call of "
                        f"{tool}; handrail does not lend the model to servers. Tell the user.",
                        code="TOOL_SERVER_ERROR",
                    )
            if result.request_state is not None and storable_text(result.request_state)[1]:
                raise McpCallFailed(
                    f"The server {self.name} sent a call state handrail cannot keep (it holds "
                    f"NUL or broken characters), so the call of {tool} was stopped. Tell the "
                    "user; the server's developers can fix it.",
                    code="TOOL_SERVER_ERROR",
                )
            if not requests and not responses_now:
                await asyncio.sleep(_STATE_ONLY_WAIT * min(rounds, 5))
            state = {
                "round": rounds,
                "restarted": bool(state.get("restarted")),
                "requestState": result.request_state,
                "requests": requests,
                "order": [*requests, *responses_now],
                "responses": responses_now,
            }

    async def _send(
        self,
        client: Client,
        tool: str,
        arguments: dict[str, Any],
        limit: float,
        responses: dict[str, Any] | None,
        request_state: str | None,
    ) -> Any:
        try:
            async with asyncio.timeout(limit + 5):
                return await client.session.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=limit,
                    input_responses=responses,
                    request_state=request_state,
                    allow_input_required=True,
                )
        except MCPError as exc:
            data = exc.error.data
            if (
                request_state is not None
                and exc.code == types.INVALID_PARAMS
                and isinstance(data, dict)
                and data.get("reason") == "invalid_request_state"
            ):
                raise _StateRejected() from None
            if exc.code == types.URL_ELICITATION_REQUIRED:
                raise _UrlRequired(exc.error) from None
            raise self._failed(tool, exc, limit) from None
        except Exception as exc:
            raise self._failed(tool, exc, limit) from None

    def _failed(self, tool: str, exc: BaseException, limit: float) -> McpCallFailed:
        """The `McpCallFailed` of a call that raised `exc`."""
        if isinstance(exc, TimeoutError):
            return self._timed_out(tool, limit)
        if isinstance(exc, MCPError):
            if exc.code == REQUEST_TIMEOUT:
                return self._timed_out(tool, limit)
            if exc.code == CONNECTION_CLOSED:
                self._lose()
                if self.needs_sign_in:
                    return self._sign_in_lost(tool)
                return McpCallFailed(
                    f"The server {self.name} stopped during the call of {tool}, so it may or may "
                    "not have been carried out; handrail is starting the server again. Check "
                    "whether it took effect before calling it again, or tell the user.",
                    code="TOOL_CONNECTION_ERROR",
                )
            message = mask(exc.error.message, self._secrets)
            return McpCallFailed(
                f"The server {self.name} refused the call of {tool}: {message}. Check the "
                "arguments against the tool's schema and try again, or tell the user.",
                code="TOOL_SERVER_ERROR",
            )
        if isinstance(exc, asyncio.CancelledError):
            return McpCallFailed(
                f"The call of {tool} on {self.name} was stopped before it answered; it may or "
                "may not have been carried out. Check before calling it again, or tell the user.",
                code="TOOL_CONNECTION_ERROR",
            )
        self._lose()
        if self.needs_sign_in or isinstance(_leaf(exc), AuthorizationNeeded):
            return self._sign_in_lost(tool)
        log.warning("the call of %s on %s failed: %s", tool, self.name, type(exc).__name__)
        return McpCallFailed(
            f"The server {self.name} failed during the call of {tool} "
            f"({type(exc).__name__}); it may or may not have been carried out. Check before "
            "calling it again, or tell the user.",
            code="TOOL_CONNECTION_ERROR",
        )

    def _request_of(self, params: types.ElicitRequestParams) -> ElicitationRequest:
        return ElicitationRequest(**request_args(request_json(params), self.name))

    def _url_required(
        self,
        tool: str,
        error: types.ErrorData,
        rounds: int,
        limit: float,
        again: bool = False,
        retry: dict[str, Any] | None = None,
    ) -> HandrailError:
        """A call refused with -32042, making round `rounds` of the call (see `mcp_rounds`);
        `retry`: what the refused 2026-07-28 retry carried."""
        made = url_consent(error, rounds, server=self.name, tool=tool, restarted=again, retry=retry)
        return made or self._failed(tool, MCPError.from_error_data(error), limit)

    def _sign_in_lost(self, tool: str) -> McpCallFailed:
        return McpCallFailed(
            f"The server {self.name} refused the call of {tool} because its sign-in was revoked "
            "or expired, so it was not carried out. Tell the user that an admin must sign in "
            "to this connection again.",
            code="TOOL_CONNECTION_ERROR",
        )

    def _timed_out(self, tool: str, limit: float) -> McpCallFailed:
        return McpCallFailed(
            f"{tool} on {self.name} did not answer within {limit:g} seconds; it may still be "
            "running on the server. Do not call it again at once: tell the user it timed out, "
            "or check its effect with a read-only tool first.",
            code="TOOL_TIMEOUT",
        )

    def _unavailable_text(self) -> str:
        if self.state == "error" and self.message:
            return (
                f"The server {self.name} is not available: {self.message} Until then, tell the "
                "user that this connection does not work and an admin can fix it."
            )
        return (
            f"The server {self.name} is starting again and not available yet. Try the call "
            "again in a moment, or tell the user."
        )

    def _lose(self) -> None:
        """The connection is gone: the supervisor starts the server again."""
        if not self._closing.is_set():
            self._set("starting", None)
        self._attempt.lost.set()


class _StateRejected(Exception):
    """The server refused the ``requestState`` it was sent back (expired, or sealed by
    another process)."""


class _UrlRequired(Exception):
    """The server refused the call with -32042 (`URLElicitationRequiredError`)."""

    def __init__(self, error: types.ErrorData) -> None:
        super().__init__(error.message)
        self.error = error


def _leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group (`exc` itself when it is none)."""
    return _first_leaf(exc) if isinstance(exc, BaseExceptionGroup) else exc


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_leaf(exc)
        return exc
    return group
