"""Store fixtures: every test that takes `database_url` or `store` runs on both backends, a
SQLite file in ``tmp_path`` and a fresh database in the session's throwaway PostgreSQL cluster
(see ``tests/_pg.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from _pg import postgres_cluster  # noqa: F401 (a fixture)
from handrail.store import Store

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An empty database on `backend`, as a plain (non-async) URL."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'handrail.db'}"
    cluster = request.getfixturevalue("postgres_cluster")
    return str(cluster.new_database_url()).replace("+asyncpg", "", 1)


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store with its blobs in ``tmp_path/blobs``."""
    opened = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    try:
        yield opened
    finally:
        await opened.close()
