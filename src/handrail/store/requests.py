"""The request log (the spec's ``AIRequest``): one entry per model request a turn made."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, insert, select

from handrail._util import new_sorted_id, utc_now
from handrail.store.db import Database
from handrail.store.prepared import Prepared
from handrail.store.records import RequestRecord
from handrail.store.tables import requests

__all__ = ["RequestLog", "insert_request", "request_record"]

Q = requests.c
_INSERT = Prepared(insert(requests))


class RequestLog:
    """Appends and lists request log entries."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, record: RequestRecord) -> RequestRecord:
        """Write one entry (made with `request_record`) and return it."""
        await self._db.write(insert_request, record)
        return record

    async def list(self, history_id: str) -> builtins.list[RequestRecord]:
        """The history's entries, oldest first."""
        return await self._db.read(_list, history_id)


def request_record(
    *,
    history_id: str,
    owner_id: str,
    prompt: str,
    response: str,
    model: str,
    request_type: str = "general",
    error: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    duration_ms: int = 0,
    created: dt.datetime | None = None,
) -> RequestRecord:
    """A new log entry (not yet written): `RequestLog.add` writes one on its own, and
    `HistoryRepo.apply` in the transaction of the turn it logs."""
    return RequestRecord(
        id=new_sorted_id(),
        history_id=history_id,
        owner_id=owner_id,
        request_type=request_type,
        prompt=prompt,
        response=response,
        error=error,
        metadata=dict(metadata or {}),
        model=model,
        created=utc_now() if created is None else created,
        duration_ms=duration_ms,
    )


def insert_request(connection: Connection, record: RequestRecord) -> None:
    """Write `record` on `connection`."""
    _INSERT.later(
        connection,
        {
            "id": record.id,
            "history_id": record.history_id,
            "owner_id": record.owner_id,
            "request_type": record.request_type,
            "prompt": record.prompt,
            "response": record.response,
            "error": record.error,
            "metadata": record.metadata,
            "model": record.model,
            "created": record.created,
            "duration_ms": record.duration_ms,
        },
    )


def _list(connection: Connection, history_id: str) -> list[RequestRecord]:
    query = select(requests).where(Q.history_id == history_id).order_by(Q.created, Q.id)
    return [_record(row._mapping) for row in connection.execute(query)]


def _record(row: Mapping[Any, Any]) -> RequestRecord:
    return RequestRecord(
        id=row["id"],
        history_id=row["history_id"],
        owner_id=row["owner_id"],
        request_type=row["request_type"],
        prompt=row["prompt"],
        response=row["response"],
        error=row["error"],
        metadata=row["metadata"],
        model=row["model"],
        created=row["created"],
        duration_ms=row["duration_ms"],
    )
