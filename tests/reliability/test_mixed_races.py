"""Everything at once on one conversation (see `mixed_races`), on both databases: answers
through both routes, the button, a message, a title change, a read and a delete."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mixed_races import mixed_races
from server_helpers import Api, start_api

from handrail.demo.agent import demo_agent

ROUNDS = 12


@pytest.fixture
async def demo_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async with start_api(
        database_url, tmp_path, agents=[demo_agent()], raise_app_exceptions=False
    ) as running:
        yield running


async def test_everything_at_once_settles_each_ask_once(demo_api: Api) -> None:
    figures = await mixed_races(demo_api, ROUNDS)
    assert not figures.problems, "\n".join(figures.problems)
    assert figures.requests >= 6 * ROUNDS
    assert sum(figures.settled.values()) == ROUNDS - ROUNDS // 3
