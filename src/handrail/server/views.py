"""The JSON the API sends for stored records. One place decides what leaves the server.

A stored ``pendingAsk`` also holds ``promptIndex``, ``responseMessages`` and gate state, which
are for the server only: which keys each surface shows is declared once, in
`handrail.asks.PENDING_ASK_FIELDS`, and `PendingAsk.public` applies it, so nothing added to
the stored form later can leak by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._util import iso
from ..asks import PendingAsk
from ..store.records import FileRecord, History, StoredRow
from ..store.running import RunningTurn

__all__ = [
    "file_json",
    "history_json",
    "inbox_item",
    "pending_ask_summary",
    "public_pending_ask",
]


def public_pending_ask(pending: PendingAsk | None) -> dict[str, Any] | None:
    """The history view of a pending ask: never ``promptIndex`` or ``responseMessages``."""
    return None if pending is None else pending.public("view")


def history_json(
    history: History,
    rows: Sequence[StoredRow] | None = None,
    running: RunningTurn | None = None,
) -> dict[str, Any]:
    """A history as the API sends it; with `rows` (the history view), each row is its data
    plus ``created``, and ``running`` is the turn running on it (or None)."""
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
        out["running"] = None if running is None else running.to_json()
    return out


def pending_ask_summary(history: History) -> dict[str, Any]:
    """One entry of ``GET /histories/pendingAsks``. A gate shows as a plain ask of its kind
    (and a clarify ask as the kind of its card), so the published schemas hold."""
    pending = history.pending_ask
    assert pending is not None
    out: dict[str, Any] = {"historyId": history.id}
    if history.title:
        out["title"] = history.title
    out.update(pending.public("summary"))
    out.setdefault("created", iso(history.updated))
    return out


def inbox_item(history: History) -> dict[str, Any]:
    """One entry of ``GET /inbox``: the ``pendingAsks`` entry, with the conversation's agent
    and the ask as the history view shows it (its gate, expiry, held tool)."""
    return {
        **pending_ask_summary(history),
        "agent": history.agent,
        "pendingAsk": public_pending_ask(history.pending_ask),
    }


def file_json(record: FileRecord) -> dict[str, Any]:
    """An uploaded file as ``POST /files/upload`` returns it."""
    return {
        "id": record.id,
        "filename": record.filename,
        "mimeType": record.mime_type,
        "size": record.size,
    }
