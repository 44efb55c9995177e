"""Server fixtures: `api` is a running app (its lifespan entered) on a SQLite file in
``tmp_path``; `any_api` is the same on each backend, ``sqlite`` and ``postgresql`` (the
suite's one `database_url` fixture, in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server_helpers import Api, sqlite_url, start_api

from _pg import postgres_cluster  # noqa: F401 (a fixture)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(sqlite_url(tmp_path), tmp_path) as running:
        yield running


@pytest.fixture
async def any_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(database_url, tmp_path) as running:
        yield running
