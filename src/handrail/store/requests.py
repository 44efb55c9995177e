"""The request log (the spec's ``AIRequest``): one entry per model request a turn made."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select

from handrail._util import new_id, utc_now
from handrail.store.db import Database
from handrail.store.records import RequestRecord
from handrail.store.tables import requests

__all__ = ["RequestLog"]

Q = requests.c


class RequestLog:
    """Appends and lists request log entries."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
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
        """Log one request. `created` defaults to now; `metadata` to ``{}``."""
        record = RequestRecord(
            id=new_id(),
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
        async with self._db.write() as connection:
            await connection.execute(
                insert(requests).values(
                    id=record.id,
                    history_id=record.history_id,
                    owner_id=record.owner_id,
                    request_type=record.request_type,
                    prompt=record.prompt,
                    response=record.response,
                    error=record.error,
                    metadata=record.metadata,
                    model=record.model,
                    created=record.created,
                    duration_ms=record.duration_ms,
                )
            )
        return record

    async def list(self, history_id: str) -> builtins.list[RequestRecord]:
        """The history's entries, oldest first."""
        query = select(requests).where(Q.history_id == history_id).order_by(Q.created, Q.id)
        async with self._db.read() as connection:
            result = await connection.execute(query)
            return [_record(row._mapping) for row in result]


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
