"""Store fixtures: every test that takes `store` runs on both backends (the `backend` and
`database_url` fixtures of ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handrail.store import Store


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store with its blobs in ``tmp_path/blobs``."""
    opened = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    try:
        yield opened
    finally:
        await opened.close()
