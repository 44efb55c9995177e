"""Sending a prepared request: secrets added from the environment at send time, no redirect
followed, a timeout per attempt, the response read in chunks up to its cap, and retries only
where they are safe.

A read-only GET or HEAD may be retried; a write only when it carries an idempotency key, and
then every attempt sends the same key. Timeouts, connection errors, 5xx and 429 are retried,
after ``backoff_ms * multiplier**n`` plus jitter; nothing else is.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from .model import ActionSet, ActionTool
from .prepare import InvalidInput, PreparedRequest, PrepareError, prepare, unsendable_in_header
from .problems import RuntimeCode
from .refs import Ref
from .results import ActionResult, Resolved

__all__ = ["Sleep", "call", "retry_delay_ms", "send"]

Sleep = Callable[[float], Awaitable[None]]
#: The longest a ``Retry-After`` answer makes a retry wait.
MAX_RETRY_AFTER_S: Final = 30.0
#: The share of the delay added at most as jitter.
JITTER: Final = 0.25


@dataclass(frozen=True, kw_only=True, slots=True)
class _Outcome:
    """One attempt: a status and body, or the code of what went wrong; `retry` says whether
    another attempt may help."""

    status: int | None = None
    data: Any = None
    code: RuntimeCode | None = None
    message: str | None = None
    retry: bool = False
    retry_after_s: float | None = None
    #: The request may have reached the API though no answer came (a timeout after the
    #: connection was made, a connection that broke after the request was written).
    maybe_sent: bool = False


def retry_delay_ms(
    tool: ActionTool, attempt: int, *, rand: Callable[[], float] = random.random
) -> float:
    """The wait in ms after the `attempt`-th attempt (1-based): ``backoff_ms *
    multiplier**(attempt-1)``, plus up to a quarter of that as jitter."""
    transport = tool.transport
    base = transport.backoff_ms * transport.multiplier ** (attempt - 1)
    return float(base + base * JITTER * rand())


def may_retry(tool: ActionTool, prepared: PreparedRequest) -> bool:
    """A read-only GET or HEAD may be retried; a write only with an idempotency key."""
    if prepared.idempotency_key is not None:
        return True
    return tool.effect == "read-only" and prepared.method in ("GET", "HEAD")


async def send(
    action_set: ActionSet,
    prepared: PreparedRequest,
    *,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None = None,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> ActionResult:
    """Send `prepared` with its tool's transport policy and return the outcome. Secret headers
    are read from `env` (default: the process environment) now; a missing one fails with
    ``TOOL_SECRET_MISSING`` before anything is sent."""
    if prepared.action_set != action_set.id:
        raise ValueError(
            f"the request was prepared for the action set {prepared.action_set!r}, not "
            f"{action_set.id!r}"
        )
    tool = action_set.tool(prepared.tool)
    secrets = _secret_headers(action_set, tool, prepared, os.environ if env is None else env)
    if isinstance(secrets, ActionResult):
        return secrets
    headers = {**prepared.headers, **secrets}
    content: bytes | None = None
    if prepared.has_body:
        content = json.dumps(prepared.body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    attempts = tool.transport.retry_attempts if may_retry(tool, prepared) else 1
    outcome = _Outcome()
    made = 0
    for attempt in range(1, attempts + 1):
        made = attempt
        outcome = await _attempt(client, tool, prepared, headers, content)
        if not outcome.retry or attempt == attempts:
            break
        delay_s = retry_delay_ms(tool, attempt, rand=rand) / 1000
        if outcome.retry_after_s is not None:
            delay_s = max(delay_s, min(outcome.retry_after_s, MAX_RETRY_AFTER_S))
        await sleep(delay_s)
    return _result(tool, outcome, made)


def _secret_headers(
    action_set: ActionSet, tool: ActionTool, prepared: PreparedRequest, env: Mapping[str, str]
) -> dict[str, str] | ActionResult:
    out: dict[str, str] = {}
    auth = action_set.auth
    for name in prepared.secret_headers:
        if name == auth.secret_header and auth.secret_env is not None:
            secret = env.get(auth.secret_env)
            variable = auth.secret_env
            value = None if not secret else auth.header_value(secret)
        else:
            ref = tool.headers.get(name)
            variable = ref.name if isinstance(ref, Ref) and ref.name else name
            value = env.get(variable) or None
        if value is not None and unsendable_in_header(value) is not None:
            # Which character is not said: it is part of the secret.
            return ActionResult(
                status="error",
                code="TOOL_SECRET_MISSING",
                message=(
                    f"{tool.name} was not sent: the secret in {variable} holds a character no "
                    "HTTP header can carry (a line break, an accent, a control character). "
                    "Tell the person the connection's secret must be set again."
                ),
            )
        if value is None:
            return ActionResult(
                status="error",
                code="TOOL_SECRET_MISSING",
                message=(
                    f"{tool.name} was not sent: the secret in {variable} is not set on the "
                    "server. Tell the person the connection is not configured."
                ),
            )
        out[name] = value
    return out


async def _attempt(
    client: httpx.AsyncClient,
    tool: ActionTool,
    prepared: PreparedRequest,
    headers: Mapping[str, str],
    content: bytes | None,
) -> _Outcome:
    transport = tool.transport
    seconds = transport.timeout_ms / 1000
    try:
        async with asyncio.timeout(seconds):
            request = client.build_request(
                prepared.method,
                prepared.url,
                headers=headers,
                content=content,
                timeout=httpx.Timeout(seconds),
            )
            response = await client.send(request, stream=True, follow_redirects=False)
            try:
                return await _read(response, tool)
            finally:
                await response.aclose()
    except (TimeoutError, httpx.TimeoutException) as exc:
        return _Outcome(
            code="TOOL_TIMEOUT",
            message=f"no answer within {transport.timeout_ms} ms",
            retry=True,
            maybe_sent=not isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout),
        )
    except httpx.TransportError as exc:
        return _Outcome(
            code="TOOL_CONNECTION_ERROR",
            message=f"the connection failed ({type(exc).__name__})",
            retry=True,
            maybe_sent=not isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol),
        )


async def _read(response: httpx.Response, tool: ActionTool) -> _Outcome:
    status = response.status_code
    if 300 <= status < 400:
        where = response.headers.get("location")
        return _Outcome(
            status=status,
            code="TOOL_REDIRECT_BLOCKED",
            message=f"the API answered {status}, a redirect"
            + (f" to {where}" if where else "")
            + "; redirects are never followed",
        )
    cap = tool.transport.max_response_bytes
    declared = response.headers.get("content-length")
    too_big = _Outcome(
        status=status,
        code="TOOL_OUTPUT_LIMIT",
        message=f"the answer is larger than {cap} bytes (max_response_bytes)",
    )
    # A HEAD answer declares the length of a body it does not send: nothing is read.
    head = response.request.method == "HEAD"
    if not head and declared is not None and declared.isdigit() and int(declared) > cap:
        return too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            return too_big
        chunks.append(chunk)
    data = _parse(b"".join(chunks), response)
    if 200 <= status < 300:
        return _Outcome(status=status, data=data)
    retry_after = _retry_after(response)
    if status == 429:
        return _Outcome(
            status=status,
            data=data,
            code="TOOL_CLIENT_ERROR",
            message="the API answered 429 (too many requests)",
            retry=True,
            retry_after_s=retry_after,
        )
    if status >= 500:
        return _Outcome(
            status=status,
            data=data,
            code="TOOL_SERVER_ERROR",
            message=f"the API answered {status}",
            retry=True,
            retry_after_s=retry_after,
        )
    return _Outcome(
        status=status, data=data, code="TOOL_CLIENT_ERROR", message=f"the API answered {status}"
    )


def _parse(raw: bytes, response: httpx.Response) -> Any:
    if not raw:
        return None
    kind = response.headers.get("content-type", "").lower()
    text = raw.decode(response.encoding or "utf-8", errors="replace")
    if "json" in kind or text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


def _result(tool: ActionTool, outcome: _Outcome, attempts: int) -> ActionResult:
    if outcome.code is None:
        return ActionResult(
            status="completed", http_status=outcome.status, data=outcome.data, attempts=attempts
        )
    after = f" (after {attempts} attempts)" if attempts > 1 else ""
    message = f"{tool.name}: {outcome.message}{after}."
    if outcome.maybe_sent and tool.effect != "read-only":
        # The spec's "a timeout may happen after the API accepted the booking".
        message += (
            " The request may have reached the API and taken effect before the answer was "
            "lost: check its status with the API before you call it again."
        )
    return ActionResult(
        status="error",
        http_status=outcome.status,
        data=outcome.data,
        code=outcome.code,
        message=message,
        attempts=attempts,
    )


async def call(
    action_set: ActionSet,
    tool: ActionTool | str,
    input: Mapping[str, Any],
    *,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None = None,
    resolved: Resolved | None = None,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> ActionResult:
    """Prepare and send at once, with no confirmation: for read-only tools and dependencies.
    An input that does not fit gives a ``needs_input`` result, nothing sent."""
    try:
        prepared = prepare(action_set, tool, input, resolved=resolved)
    except (InvalidInput, PrepareError) as exc:
        return ActionResult(status="needs_input", message=str(exc))
    return await send(action_set, prepared, client=client, env=env, sleep=sleep, rand=rand)
