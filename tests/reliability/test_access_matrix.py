"""The authorization matrix, generated from the routes: every route of the app × the owner,
another user, an admin, nobody and bad tokens (see `access`), on both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from access import CAPABILITY_ROUTES, PUBLIC_ROUTES, check_route, route_calls
from reliability_helpers import probing_api
from server_helpers import Api

from handrail.demo.agent import demo_agent


@pytest.fixture
async def notes_api(database_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async with probing_api(database_url, tmp_path, [demo_agent()]) as running:
        yield running


async def test_every_route_keeps_each_users_things_their_own(notes_api: Api) -> None:
    document = (await notes_api.client.get("/openapi.json")).json()
    calls = route_calls(notes_api.app, document)
    # Exactly the declared routes are public (or authorized by a secret in their URL), and
    # every operation of the document is here.
    assert {c.key for c in calls if c.public} == PUBLIC_ROUTES | CAPABILITY_ROUTES
    documented = {
        f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item
    }
    assert documented == {
        f"{c.method} {c.template.replace(':path', '')}"
        for c in calls
        if not c.public or (c.operation is not None and c.key in CAPABILITY_ROUTES)
    }
    assert [c.key for c in calls if c.admin_reads] == ["GET /api/histories/{id}"]

    outcomes = [await check_route(notes_api, call) for call in calls]
    problems = [f"{o.key}: {p}" for o in outcomes for p in o.problems]
    assert not problems, "\n".join(problems)
    assert sum(o.calls for o in outcomes) >= 10 * len(calls)
