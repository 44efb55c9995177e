"""Helpers of the reliability tests: the whole database as data, to show that a refused request
stored nothing, raw request bodies, and the app for probes that call every route."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from server_helpers import Api, start_api
from sqlalchemy import Connection, select

from handrail.runtime.agent import Agent
from handrail.store.blobs import REGISTERED_PREFIX
from handrail.store.tables import metadata

JSON = {"content-type": "application/json"}


@asynccontextmanager
async def probing_api(
    database_url: str, folder: Path, agents: Sequence[Agent], **options: Any
) -> AsyncIterator[Api]:
    """`start_api` for probes that call every route of the document: its event streams end
    right after ``: ready``, so that each call of ``GET /api/events`` returns."""
    async with start_api(database_url, folder, agents=list(agents), **options) as running:
        running.app.state.event_stream_max_s = 0.0
        yield running


#: Tables the server's own background work writes on its own schedule, whatever a request
#: does: the running-turns board (a turn's row written `WRITE_AFTER` after its change and renewed
#: by its process) and the event outbox (an event's row removed once it is relayed). A request
#: refused before it ran never writes them; a snapshot taken around it must not see their
#: timing as its doing.
BACKGROUND_TABLES = frozenset({"running_turns", "outbox_events"})


def _all_rows(connection: Connection) -> dict[str, list[str]]:
    return {
        table.name: sorted(repr(tuple(row)) for row in connection.execute(select(table)))
        for table in metadata.sorted_tables
        if table.name not in BACKGROUND_TABLES
    }


async def db_state(api: Api) -> dict[str, list[str]]:
    """Every row of every table (the request log included) but `BACKGROUND_TABLES`, as text."""
    return await api.store.db.read(_all_rows)


def blobs(tmp_path: Path) -> list[Path]:
    """The files in the blob folder of `start_api` (``tmp_path / "blobs"``), but the
    databases' registrations in it (which the recovery sweeper writes, at its own time)."""
    folder = tmp_path / "blobs"
    if not folder.exists():
        return []
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(REGISTERED_PREFIX)
    )


async def send_raw(
    api: Api, method: str, path: str, body: bytes, *, user: str | None = "alice", **headers: str
) -> httpx.Response:
    """`body` as it is, with a JSON content type (`headers` added)."""
    return await api.request(method, path, user=user, content=body, headers={**JSON, **headers})


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The problem JSON of `response`, which must have `status`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = dict(response.json())
    assert body["status"] == status
    assert body["requestId"] == response.headers["x-request-id"]
    return body
