"""Reading request bodies: JSON objects within a size limit, and the dependencies routes share.

Routes read their JSON themselves (rather than through FastAPI models) so that each mistake
gets the exact status, title and code of the spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from fastapi import Request

from ..errors import BadRequest, PayloadTooLarge, ProblemError
from ..runtime.runtime import Runtime
from ..store import Store

__all__ = ["NO_BODY", "read_json", "runtime_of", "store_of"]

#: What `read_json` returns for an empty body.
NO_BODY: Final = object()

#: The whitespace JSON allows around a value (RFC 8259): a body of only these is empty.
JSON_WHITESPACE: Final = b" \t\r\n"


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def read_json(
    request: Request, *, invalid: Callable[[str], ProblemError] | None = None
) -> Any:
    """The body parsed as JSON, or `NO_BODY` when it is empty.

    The body is read in chunks and refused with 413 once it passes the app's JSON limit
    (``app.state.max_json_bytes``). A body that is not JSON raises ``invalid(message)``
    (default: 400 ``Invalid JSON``).
    """
    limit: int = request.app.state.max_json_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip(JSON_WHITESPACE):
        return NO_BODY
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        message = f"The body is not valid JSON: {exc}."
        if invalid is not None:
            raise invalid(message) from None
        raise BadRequest("Invalid JSON", message) from None


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        "Request body too large",
        f"The body is larger than {limit} bytes. Upload large files with POST /files/upload "
        "and answer with their fileId.",
    )
