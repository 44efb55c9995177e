"""The JSON the API sends for stored records. One place decides what leaves the server.

A stored ``pendingAsk`` also holds ``promptIndex`` and ``responseMessages``, which are for the
model only: `public_pending_ask` copies only the fields a client may see, so nothing added to
the stored form later can leak by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from handrail.asks import ASK_KINDS

from .._util import iso
from ..store.records import FileRecord, History, StoredRow

__all__ = [
    "PUBLIC_PENDING_ASK_KEYS",
    "file_json",
    "history_json",
    "pending_ask_summary",
    "public_pending_ask",
]

#: The fields of a stored ``pendingAsk`` that a client sees, in this order.
PUBLIC_PENDING_ASK_KEYS: Final = (
    "toolCallId",
    "kind",
    "input",
    "simple",
    "created",
    "origin",
    "toolName",
    "connectionId",
    "approvalId",
    "preview",
    "expiresAt",
)


def public_pending_ask(pending: dict[str, Any] | None) -> dict[str, Any] | None:
    """The client's view of a stored ``pendingAsk``: never ``promptIndex`` or
    ``responseMessages``."""
    if pending is None:
        return None
    return {key: pending[key] for key in PUBLIC_PENDING_ASK_KEYS if key in pending}


def history_json(history: History, rows: Sequence[StoredRow] | None = None) -> dict[str, Any]:
    """A history as the API sends it; with `rows`, each row is its data plus ``created``."""
    out: dict[str, Any] = {
        "id": history.id,
        "userId": history.owner_id,
        "agent": history.agent,
        "title": history.title,
        "created": iso(history.created),
        "updated": iso(history.updated),
        "pendingAsk": public_pending_ask(history.pending_ask),
    }
    if rows is not None:
        out["rows"] = [{**row.data, "created": iso(row.created)} for row in rows]
    return out


def pending_ask_summary(history: History) -> dict[str, Any]:
    """One entry of ``GET /histories/pendingAsks``. An approval ask shows as a plain ask of its
    kind: ``origin`` and ``toolName`` are left out."""
    pending = history.pending_ask
    assert pending is not None
    out: dict[str, Any] = {"historyId": history.id}
    if history.title:
        out["title"] = history.title
    out["toolCallId"] = pending["toolCallId"]
    # A clarify ask shows as the kind of its card (one choice, one confirm, or a form), so the
    # published schemas, whose kinds are the five ask kinds, hold for every summary.
    out["kind"] = pending["kind"] if pending["kind"] in ASK_KINDS else pending["simple"]["kind"]
    out["simple"] = pending["simple"]
    out["created"] = pending.get("created") or iso(history.updated)
    return out


def file_json(record: FileRecord) -> dict[str, Any]:
    """An uploaded file as ``POST /files/upload`` returns it."""
    return {
        "id": record.id,
        "filename": record.filename,
        "mimeType": record.mime_type,
        "size": record.size,
    }
