"""Reliability tests: what must hold when things go wrong (database errors, hostile text,
open ports). They reuse the server tests' helpers (``tests/server/server_helpers.py``): `api` is
a running app on a SQLite file, `any_api` the same on each backend."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from server_helpers import Api, sqlite_url, start_api

from _pg import postgres_cluster  # noqa: F401 (a fixture)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(sqlite_url(tmp_path), tmp_path) as running:
        yield running


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    cluster = request.getfixturevalue("postgres_cluster")
    return str(cluster.new_database_url())


@pytest.fixture
async def any_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(database_url, tmp_path) as running:
        yield running
