"""Webhooks: one signed POST per event, in the Standard Webhooks format.

The body is ``{"type": "ask.created", "timestamp": "<ISO 8601>", "data": {...}}`` and the
headers are

    webhook-id: <the event's id: the same on every retry, so receivers drop repeats>
    webhook-timestamp: <seconds since the epoch, as of this attempt>
    webhook-signature: v1,<base64 of HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>

A receiver checks the signature over the exact bytes of the body and refuses a timestamp far
from its clock (replays). Any 2xx answer is delivered; anything else, a timeout or a refused
connection is retried with backoff (`handrail.server.reach`). Redirects are not followed: a
3xx is a failed attempt. An attempt ends by `WEBHOOK_TIMEOUT` seconds whatever the receiver
does (however slowly it answers, a byte at a time); its status line and headers are all that is
read of its answer, never its body.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Final

import httpx

from .reach_config import WebhookConfig

__all__ = ["WEBHOOK_TIMEOUT", "PostOutcome", "post_webhook", "sign", "webhook_body"]

#: Seconds a receiver has to answer one attempt, from the connection to its answer's headers.
WEBHOOK_TIMEOUT: Final = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class PostOutcome:
    ok: bool
    status_code: int | None
    error: str | None


def webhook_body(payload: dict[str, Any]) -> bytes:
    """The exact bytes posted (and signed) for a delivery's payload."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sign(secret: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256>``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


async def post_webhook(
    client: httpx.AsyncClient, hook: WebhookConfig, message_id: str, payload: dict[str, Any]
) -> PostOutcome:
    """One attempt: POST the payload to the hook's URL, signed as of now."""
    body = webhook_body(payload)
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "user-agent": "handrail-webhooks",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(hook.secret, message_id, timestamp, body),
    }
    try:
        # The whole exchange has `WEBHOOK_TIMEOUT` (httpx's own timeout is per read: a receiver
        # that answers a byte at a time would hold the attempt, and every delivery after it,
        # for as long as it likes). The status decides; the answer's body is not read.
        async with asyncio.timeout(WEBHOOK_TIMEOUT):
            async with client.stream("POST", hook.url, content=body, headers=headers) as response:
                status_code = response.status_code
    except (TimeoutError, httpx.TimeoutException):
        return PostOutcome(ok=False, status_code=None, error="The receiver did not answer in time.")
    except httpx.HTTPError as exc:
        return PostOutcome(
            ok=False,
            status_code=None,
            error=f"Could not reach the receiver ({type(exc).__name__}).",
        )
    if 200 <= status_code < 300:
        return PostOutcome(ok=True, status_code=status_code, error=None)
    # The answer's body is the receiver's (untrusted) text: the log keeps only the status.
    return PostOutcome(
        ok=False,
        status_code=status_code,
        error=f"The receiver answered {status_code}.",
    )
