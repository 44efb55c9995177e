"""Action fixtures: `fake_api` is the scripted HTTP API of `action_helpers`, served once per
session on 127.0.0.1 and reset before each test; `client` is an httpx client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from action_helpers import FakeApi, serve


@pytest.fixture(scope="session")
def _served_api() -> Iterator[FakeApi]:
    api = FakeApi()
    with serve(api) as url:
        api.url = url
        yield api


@pytest.fixture
def fake_api(_served_api: FakeApi) -> FakeApi:
    _served_api.reset()
    return _served_api


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as http:
        yield http
