"""``GET /grants`` and ``GET /connections`` a page at a time, as the histories are (``limit``,
an opaque ``cursor``, ``Link: <...>; rel="next"``): the pages chain until one has no Link and
give every item once in the list's order; a bad cursor, one of another list or one given to
another user is a 400 naming ``cursor``. ``GET /activity`` is paged the same way (see
``test_server_connections.py``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import Api, sqlite_url, start_api

from handrail.runtime.agent import Agent

LINK = re.compile(r'^<([^>]+)>; rel="next"$')


def next_url(response: httpx.Response) -> str | None:
    link = response.headers.get("link")
    if link is None:
        return None
    match = LINK.match(link)
    assert match, link
    return match.group(1)


async def walk(api: Api, path: str, *, user: str) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    url: str | None = "http://handrail/api" + path
    while url is not None:
        response = await api.client.get(url, headers=api.auth(user))
        assert response.status_code == 200, response.text
        pages.append(response.json()["data"])
        url = next_url(response)
        assert len(pages) < 50, "the pages never end"
    return pages


@pytest.fixture
async def papi(tmp_path: Path) -> AsyncIterator[Api]:
    agent = Agent("helper")

    @agent.tool(read_only=True, name="today")
    def today() -> str:
        """Today's date."""
        return "2026-12-01"

    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
        yield api


async def test_grants_page_newest_first_through_link(papi: Api) -> None:
    grants = papi.store.grants
    made = [await grants.add("alice", "local:helper", f"tool_{n}", "always") for n in range(5)]
    await grants.add("bob", "local:helper", "tool_0", "always")
    pages = await walk(papi, "/grants?limit=2", user="alice")
    assert [len(page) for page in pages] == [2, 2, 1]
    listed = [g["id"] for page in pages for g in page]
    expected = [g.id for g in sorted(made, key=lambda g: (g.created, g.id), reverse=True)]
    assert listed == expected
    whole = await walk(papi, "/grants", user="alice")
    assert [g["id"] for g in whole[0]] == expected
    assert len(whole) == 1

    first = await papi.client.get("/api/grants?limit=2", headers=papi.auth("alice"))
    link = next_url(first)
    assert link is not None
    cursor = link.split("cursor=", 1)[1]
    # Another user's cursor, another list's cursor and a made-up one are 400s naming cursor.
    for user, path, why in (
        ("bob", f"/grants?cursor={cursor}", "was given to another user"),
        ("alice", f"/connections?cursor={cursor}", "belongs to another list (grants)"),
        ("alice", "/grants?cursor=not-a-cursor", "is not a cursor this server gave out"),
    ):
        response = await papi.get(path, user=user)
        assert response.status_code == 400, response.text
        problem = response.json()
        assert why in problem["detail"]
        assert "cursor" in problem["fields"]
    bad = await papi.get("/grants?limit=0")
    assert bad.status_code == 400
    assert "limit" in bad.json()["fields"]


async def test_connections_page_oldest_first_then_the_configured_ones(
    papi: Api, tmp_path: Path
) -> None:
    names = ["Alpha", "Bravo", "Charlie"]
    added = []
    for name in names:
        body = {"app": "booking", "name": name, "settings": {"baseUrl": "http://127.0.0.1:9"}}
        response = await papi.post("/connections", body, user="root")
        assert response.status_code == 201, response.text
        added.append(response.json()["data"]["id"])
    pages = await walk(papi, "/connections?limit=2", user="bob")
    assert [[c["name"] for c in page] for page in pages] == [
        ["Alpha", "Bravo"],
        ["Charlie", "helper"],
    ]
    assert [c["id"] for c in pages[1]] == [added[2], "local:helper"]
    assert pages[1][1]["readOnly"] is True
    singles = await walk(papi, "/connections?limit=1", user="bob")
    assert [[c["name"] for c in page] for page in singles] == [
        ["Alpha"],
        ["Bravo"],
        ["Charlie"],
        ["helper"],
    ]
    whole = await walk(papi, "/connections", user="root")
    assert [[c["name"] for c in page] for page in whole] == [[*names, "helper"]]
    # A connection removed between two pages moves no other across the boundary.
    first = await papi.client.get("/api/connections?limit=1", headers=papi.auth("root"))
    link = next_url(first)
    assert link is not None
    await papi.request("DELETE", f"/connections/{added[1]}", user="root")
    rest = await papi.client.get(link, headers=papi.auth("root"))
    assert [c["name"] for c in rest.json()["data"]] == ["Charlie"]
    assert next_url(rest) is not None
