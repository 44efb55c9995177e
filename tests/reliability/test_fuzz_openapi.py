"""Bad input generated from the OpenAPI document and Hypothesis, on both databases.

Every operation of the live ``/openapi.json`` gets requests from `fuzzing.requests_for`:
schemathesis's cases, the same with hostile values swapped in, raw bodies, hostile paths and
queries, and answers and scripted commands that reach the runtime, sent as alice (mostly), bob,
the admin, nobody and a bad token, to the app in process with the demo agent (notes tools, every
ask kind) on a database seeded with a conversation paused on every kind of ask. What must hold
for every one: no 5xx, every error problem JSON, no traceback in a body or the log, and a
refused request (4xx) leaves every row of every table and every blob as it was.

The counts are bounded so that both databases take well under half a minute;
``bench/reliability.py --examples N`` runs the same with large counts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fuzzing import Fuzzer, LogCapture, fuzz_operations, seed
from reliability_helpers import probing_api
from server_helpers import Api

from handrail.demo.agent import demo_agent
from handrail.runtime.agent import Agent

EXAMPLES_PER_OPERATION = 20


@pytest.fixture
async def demo_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    agents = [demo_agent(), Agent("quiet", asks=False)]
    async with probing_api(database_url, tmp_path, agents) as running:
        yield running


async def test_no_bad_input_gets_a_5xx_or_stores_anything(demo_api: Api, tmp_path: Path) -> None:
    document = (await demo_api.client.get("/openapi.json")).json()
    seeded = await seed(demo_api)
    with LogCapture() as logs:
        fuzzer = Fuzzer(demo_api, tmp_path / "blobs", logs)
        try:
            operations = await fuzz_operations(fuzzer, document, seeded, EXAMPLES_PER_OPERATION)
        finally:
            await fuzzer.aclose()
    figures = fuzzer.figures
    assert len(operations) >= 16  # every route of the API, read from the live document
    assert set(figures.by_operation) == set(operations), figures.by_operation
    assert figures.cases >= EXAMPLES_PER_OPERATION * len(operations) // 2
    assert any(400 <= s < 500 for s in figures.by_status), figures.report()
    assert any(s < 300 for s in figures.by_status), figures.report()
    assert not figures.failures, figures.report()
