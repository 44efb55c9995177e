"""The rounds of an MCP call that waits on a person, as JSON kept with the pending ask (the
helpers of `McpLink`'s rounds; no I/O).

Two kinds of round are stored the same way, ``{round, requests, order, responses}``: the
requests by key, the order they are asked in, the answers so far. `McpLink` asks the first
request not answered yet (`next_key`), and retries the call once all are:

- a 2026-07-28 ``input_required`` round (``protocol: "2026-07-28"``, with the server's
  ``requestState`` byte-exact): the retry carries the ``inputResponses`` and the state;
- a URL-required round (``protocol: "url-required"``, `URL_REQUIRED`): the server refused the
  call with the JSON-RPC error -32042 (`URLElicitationRequiredError`, MCP 2025-11-25) listing
  the URL elicitations it needs first. Each is a URL consent ask; once the person consented to
  all, the refused request is sent again as it was: the spec lets the client retry it "after
  the user has completed the elicitation", and the person's consent is that say-so. A refused
  first call is sent again plain (the same arguments); a refused 2026-07-28 retry again with
  the ``inputResponses`` and ``requestState`` it carried (kept in the round as ``retry``), so
  nothing the person answered before is lost or asked twice (a state the server no longer
  accepts then starts the call over once, as in any round).
  ``notifications/elicitation/complete`` is not waited for (it may reach another process, or
  never come); a decline or cancel of any of them ends the call, nothing retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
from mcp.shared.exceptions import UrlElicitationRequiredError
from pydantic import ValidationError

from .._util import storable
from .elicitation import ElicitationRequest
from .mcp_outcome import CallOutcome, ElicitationNeeded, McpCallFailed

__all__ = [
    "INPUT_ROUNDS_MAX",
    "RETRIED",
    "URL_ELICITATIONS_MAX",
    "URL_REQUIRED",
    "consented",
    "next_consent",
    "next_key",
    "refused_round",
    "refused_text",
    "request_args",
    "request_json",
    "responses_of",
    "restarted",
    "too_many_rounds",
    "url_consent",
    "url_round",
]

#: The most rounds of input a server may ask for in one call (the SDK's default), URL-required
#: rounds included.
INPUT_ROUNDS_MAX: Final = 10

#: The ``protocol`` of a round whose server refused the call with -32042 (see the module).
URL_REQUIRED: Final = "url-required"
#: The most URL elicitations one -32042 error may list (each is asked of the person in turn).
URL_ELICITATIONS_MAX: Final = 10
#: What a 2026-07-28 retry carried, kept to send it again after a -32042 refusal.
RETRIED: Final = ("requestState", "requests", "order", "responses")


def request_json(params: types.ElicitRequestParams) -> dict[str, Any]:
    """An elicitation request as stored with its pending ask (only what the ask needs)."""
    if isinstance(params, types.ElicitRequestURLParams):
        out: dict[str, Any] = {"mode": "url", "message": params.message, "url": params.url}
        if params.elicitation_id:
            out["elicitationId"] = params.elicitation_id
        return out
    return {
        "mode": "form",
        "message": params.message,
        "requestedSchema": dict(params.requested_schema),
    }


def request_args(data: Mapping[str, Any], server: str) -> dict[str, Any]:
    """The `ElicitationRequest` arguments of a stored request."""
    cleaned, _ = storable(dict(data))
    return {
        "mode": "url" if cleaned.get("mode") == "url" else "form",
        "message": str(cleaned.get("message") or ""),
        "server": server,
        "requested_schema": cleaned.get("requestedSchema"),
        "url": cleaned.get("url"),
        "elicitation_id": cleaned.get("elicitationId"),
    }


def next_key(state: Mapping[str, Any]) -> str | None:
    """The first request of the round not answered yet, if any."""
    answered = state.get("responses") or {}
    return next((k for k in state.get("order") or [] if k not in answered), None)


def responses_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """The input responses of a 2026-07-28 round, as the SDK's models."""
    out: dict[str, Any] = {}
    requests = state.get("requests") or {}
    for key, value in (state.get("responses") or {}).items():
        if key in requests:
            out[key] = types.ElicitResult.model_validate(value)
        else:
            out[key] = types.ListRootsResult.model_validate(value)
    return out


def url_round(
    error: types.ErrorData,
    rounds: int,
    *,
    restarted: bool,
    retry: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The URL-required round (numbered `rounds`) of a call refused with -32042, or None when
    the error lists no URL elicitation handrail can read (then it is a plain refusal). `retry`:
    the 2026-07-28 round whose retry was refused, to send again once consented."""
    try:
        elicitations = UrlElicitationRequiredError.from_error(error).elicitations
    except (ValueError, ValidationError, TypeError, AttributeError):
        return None
    if not elicitations:
        return None
    requests: dict[str, Any] = {}
    for number, params in enumerate(elicitations[: URL_ELICITATIONS_MAX + 1], start=1):
        requests[str(number)] = storable(request_json(params))[0]
    state: dict[str, Any] = {
        "protocol": URL_REQUIRED,
        "round": rounds,
        "restarted": restarted,
        "requests": requests,
        "order": list(requests),
        "responses": {},
    }
    if retry is not None:
        state["retry"] = dict(retry)
    return state


def url_consent(
    error: types.ErrorData,
    rounds: int,
    *,
    server: str,
    tool: str,
    restarted: bool = False,
    retry: Mapping[str, Any] | None = None,
) -> ElicitationNeeded | McpCallFailed | None:
    """A call refused with -32042, making round `rounds` of the call: the first URL to ask
    consent for, why the call ends (too many rounds or pages), or None when the error lists no
    URL elicitation handrail can read (a plain refusal, then). `retry` as in `url_round`."""
    if rounds > INPUT_ROUNDS_MAX:
        return too_many_rounds(server, tool)
    state = url_round(error, rounds, restarted=restarted, retry=retry)
    if state is None:
        return None
    if len(state["order"]) > URL_ELICITATIONS_MAX:
        return McpCallFailed(
            f"The server {server} refused the call of {tool} until the user opens more than "
            f"{URL_ELICITATIONS_MAX} pages, so handrail stopped it. Tell the user.",
            code="TOOL_SERVER_ERROR",
        )
    return next_consent(state, server)


def next_consent(state: Mapping[str, Any], server: str) -> ElicitationNeeded:
    """The next URL of a URL-required round to ask the person's consent for."""
    key = next_key(state)
    assert key is not None
    request = ElicitationRequest(**request_args(state["requests"][key], server))
    return ElicitationNeeded(request, {**state, "key": key})


def refused_round(state: Mapping[str, Any]) -> tuple[int, bool, dict[str, Any] | None]:
    """A 2026-07-28 call at round `state` refused with -32042: the URL-required round's
    number, whether the call was started over, and what the refused request carried to send
    again (`RETRIED`; None for a first call, sent again plain)."""
    rounds = int(state.get("round") or 0) + 1
    again = bool(state.get("restarted"))
    carried = state.get("order") or state.get("requestState") is not None
    retry: dict[str, Any] | None = None
    if carried:
        retry = {k: state[k] for k in RETRIED if k in state}
    return rounds, again, retry


def consented(state: Mapping[str, Any], server: str, tool: str) -> dict[str, Any]:
    """A URL-required round with its latest answer in `state`: once every URL is consented
    to, the state to send the refused request again with (``{round, restarted}`` and what a
    refused 2026-07-28 retry carried). Raises the `McpCallFailed` of a decline or cancel, or
    the `ElicitationNeeded` of the next URL."""
    refused = refused_text(state, server, tool)
    if refused is not None:
        raise McpCallFailed(refused, code="TOOL_SERVER_ERROR")
    if next_key(state) is not None:
        raise next_consent(state, server)
    again: dict[str, Any] = {"round": state.get("round"), "restarted": bool(state.get("restarted"))}
    retry = state.get("retry")
    if isinstance(retry, Mapping):
        again = {**{k: retry[k] for k in RETRIED if k in retry}, **again}
    return again


def too_many_rounds(server: str, tool: str) -> McpCallFailed:
    """Why a call that kept asking for input was stopped."""
    return McpCallFailed(
        f"The server {server} asked for more than {INPUT_ROUNDS_MAX} rounds of input in one "
        f"call of {tool}, so handrail stopped it. Tell the user.",
        code="TOOL_SERVER_ERROR",
    )


def refused_text(state: Mapping[str, Any], server: str, tool: str) -> str | None:
    """What the model reads when the person declined or cancelled a URL-required round's
    consent (None while every answer so far is an accept)."""
    requests = state.get("requests") or {}
    for key, answer in (state.get("responses") or {}).items():
        action = answer.get("action") if isinstance(answer, Mapping) else None
        if action == "accept":
            continue
        url = (requests.get(key) or {}).get("url") or "a page"
        said = "cancelled the question" if action == "cancel" else "declined"
        return (
            f"The server {server} refused the call of {tool} until the user opens {url} (a "
            f"page of its own, such as a sign-in); the user {said}, so the call was not sent "
            "again and nothing was carried out. Tell the user the tool needs that step; do not "
            "call it again unless they ask."
        )
    return None


def restarted(outcome: CallOutcome, server: str) -> CallOutcome:
    """A result of a call started over: the model reads that it was."""
    note = (
        f"(The server {server} no longer accepted the earlier answers, so the call was started "
        "over once and the person answered again.)"
    )
    if isinstance(outcome.content, str):
        return CallOutcome(content=f"{note}\n{outcome.content}", is_error=outcome.is_error)
    return CallOutcome(content={"note": note, **outcome.content}, is_error=outcome.is_error)
