"""Shared test setup: where the conformance fixtures live.

The fixtures are not part of this repository. They sit in ``shared/conformance/terreno`` beside
the repository's folder (CI clones the repository next to ``shared/``), so the path is found
from this file, never from the working directory.

Tests get them two ways:

- the session fixture ``conformance_dir``, the folder itself;
- a test that takes ``valid_fixture`` or ``invalid_fixture`` runs once per file of
  ``valid/`` or ``invalid/``, with the file's `Path`, and the file name as the case id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

from _pg import postgres_cluster  # noqa: F401 (a fixture: the session's throwaway PostgreSQL)
from handrail.store import Store

# Hypothesis checks what a property does, never how fast: on a busy 2-core machine one example
# may take several times its usual time, and a deadline would fail a correct property.
settings.register_profile("handrail", deadline=None)
settings.load_profile("handrail")

CONFORMANCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "terreno"


def find_conformance_dir() -> Path:
    """The conformance folder, or a test failure that says where it was looked for."""
    if not (CONFORMANCE_DIR / "valid").is_dir() or not (CONFORMANCE_DIR / "invalid").is_dir():
        pytest.fail(
            f"The conformance fixtures are missing: expected {CONFORMANCE_DIR} with valid/ and "
            "invalid/ folders. Put the shared/ folder beside the repository's folder.",
            pytrace=False,
        )
    return CONFORMANCE_DIR


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    """The ``shared/conformance/terreno`` folder beside the repository."""
    return find_conformance_dir()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name, folder in (("valid_fixture", "valid"), ("invalid_fixture", "invalid")):
        if name in metafunc.fixturenames:
            files = sorted((find_conformance_dir() / folder).glob("*.json"))
            if not files:
                pytest.fail(f"No fixtures in {CONFORMANCE_DIR / folder}.", pytrace=False)
            metafunc.parametrize(name, files, ids=[f.name for f in files])


BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs on both databases."""
    return str(request.param)


@pytest.fixture
def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An empty database on `backend`, as a plain (non-async) URL: a SQLite file in
    ``tmp_path``, or a fresh database in the session's throwaway PostgreSQL cluster."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'handrail.db'}"
    cluster = request.getfixturevalue("postgres_cluster")
    return str(cluster.new_database_url()).replace("+asyncpg", "", 1)


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store on `database_url` (each backend), its uploads in ``tmp_path/blobs``."""
    opened = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    try:
        yield opened
    finally:
        await opened.close()
