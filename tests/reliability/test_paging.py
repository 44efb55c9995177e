"""Paged lists: ``GET /histories`` and ``GET /histories/pendingAsks`` a page at a time.

Each route, on both databases: the pages chain through ``Link: <...>; rel="next"`` until a page
has none, and give every item once in the list's order; items added or removed between two
pages repeat or skip no other item; ``limit`` is 1 to 200 (default 50); a bad cursor is a 400
naming ``cursor``, never a 500; and no cursor reaches another user's items. The bodies stay
exactly the published schemas. The store's page queries read one range of their index
(``EXPLAIN`` on SQLite and PostgreSQL), so a page costs the same at any list length.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from server_helpers import CONFIRM, Api, command, load_schema
from sqlalchemy import Connection, insert, text

from handrail.server.paging import CURSOR_MAX_LENGTH, DEFAULT_LIMIT, MAX_LIMIT, encode_cursor
from handrail.store.histories import _list_query
from handrail.store.paging import Position
from handrail.store.tables import histories

HTTP_API = Path(__file__).resolve().parents[2] / "docs" / "reference" / "http-api.md"
LINK = re.compile(r'^<([^>]+)>; rel="next"$')

#: The two routes: path, the field that names an item's conversation, and the list's name.
ROUTES = {
    "histories": ("/histories", "id"),
    "pendingAsks": ("/histories/pendingAsks", "historyId"),
}


def next_url(response: httpx.Response) -> str | None:
    link = response.headers.get("link")
    if link is None:
        return None
    match = LINK.match(link)
    assert match, link
    return match.group(1)


async def get_url(api: Api, url: str, *, user: str = "alice") -> httpx.Response:
    response = await api.client.get(url, headers=api.auth(user))
    assert response.status_code == 200, response.text
    return response


async def walk(api: Api, path: str, *, user: str = "alice") -> list[list[dict[str, Any]]]:
    """Every page of a list, following Link from `path` until a page has none."""
    pages: list[list[dict[str, Any]]] = []
    url: str | None = "http://handrail/api" + path
    while url is not None:
        response = await get_url(api, url, user=user)
        pages.append(response.json()["data"])
        url = next_url(response)
        assert len(pages) < 100, "the pages never end"
    return pages


def ids(items: list[dict[str, Any]], key: str) -> list[str]:
    return [str(item[key]) for item in items]


async def add(api: Api, route: str, *, user: str = "alice") -> str:
    """One more item of the list `route` for `user`: a conversation, or one waiting on an ask."""
    if route == "histories":
        response = await api.post("/histories", {}, user=user)
        assert response.status_code == 201, response.text
        return str(response.json()["data"]["id"])
    stream = await api.prompt({"prompt": command("ask_confirm", CONFIRM)}, user=user)
    assert stream.status == 200, stream.problem
    return stream.history_id


async def expected(api: Api, route: str, user: str = "alice") -> list[str]:
    """The whole list, in its order, from the store's unpaged read."""
    listed = (
        await api.store.histories.list(user)
        if route == "histories"
        else await api.store.histories.pending(user)
    )
    return [h.id for h in listed]


def assert_bad(response: httpx.Response, field: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["title"] == "Validation failed"
    assert list(problem["fields"]) == [field]
    assert problem["detail"]
    return problem


# --- chaining -----------------------------------------------------------------------------------


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_pages_chain_through_link_until_none(any_api: Api, route: str) -> None:
    path, key = ROUTES[route]
    for _ in range(7):
        await add(any_api, route)
    await add(any_api, route, user="bob")
    pages = await walk(any_api, path + "?limit=3")
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [i for page in pages for i in ids(page, key)] == await expected(any_api, route)
    # Without limit the page holds up to 50: all 7, and no Link.
    first = await any_api.get(path)
    assert ids(first.json()["data"], key) == await expected(any_api, route)
    assert "link" not in first.headers


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_an_exact_last_page_has_no_link(any_api: Api, route: str) -> None:
    path, _ = ROUTES[route]
    for _ in range(4):
        await add(any_api, route)
    pages = await walk(any_api, path + "?limit=2")
    assert [len(page) for page in pages] == [2, 2]
    empty = await any_api.get(path, user="bob")
    assert empty.json()["data"] == []
    assert "link" not in empty.headers


async def test_the_link_keeps_the_limit_and_the_path(any_api: Api) -> None:
    for _ in range(3):
        await add(any_api, "histories")
    response = await any_api.get("/histories?limit=2")
    url = next_url(response)
    assert url is not None
    parsed = httpx.URL(url)
    assert parsed.path == "/api/histories"
    assert parsed.params["limit"] == "2"
    assert parsed.params["cursor"]
    assert response.links["next"]["url"] == url  # the standard form: httpx reads it


async def test_a_page_of_pending_asks_is_exactly_the_published_schema(any_api: Api) -> None:
    for _ in range(3):
        await add(any_api, "pendingAsks")
    schema = load_schema("pendingAsksResponse")
    response = await any_api.get("/histories/pendingAsks?limit=2")
    assert next_url(response) is not None
    jsonschema.validate(response.json(), schema)
    assert set(response.json()) == {"data", "requestId"}


# --- changes between pages ----------------------------------------------------------------------


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_items_added_between_pages_repeat_or_skip_nothing(any_api: Api, route: str) -> None:
    path, key = ROUTES[route]
    for _ in range(9):
        await add(any_api, route)
    before = await expected(any_api, route)
    seen: list[str] = []
    url: str | None = f"http://handrail/api{path}?limit=4"
    added: list[str] = []
    while url is not None:
        response = await get_url(any_api, url)
        seen += ids(response.json()["data"], key)
        url = next_url(response)
        added.append(await add(any_api, route))  # newer than every item: before page 1
    assert seen == before
    assert not set(added) & set(seen)
    now_first = ids((await walk(any_api, path))[0], key)
    assert set(now_first[: len(added)]) == set(added)  # the new ones lead the list now


async def test_asks_answered_between_pages_skip_no_other_ask(any_api: Api) -> None:
    for _ in range(8):
        await add(any_api, "pendingAsks")
    before = await expected(any_api, "pendingAsks")
    first = await any_api.get("/histories/pendingAsks?limit=3")
    seen = ids(first.json()["data"], "historyId")
    # A new message cancels an ask: one already seen, and one not reached yet.
    gone = [before[1], before[5]]
    for history_id in gone:
        await any_api.say("never mind", history_id)
    url = next_url(first)
    while url is not None:
        response = await get_url(any_api, url)
        seen += ids(response.json()["data"], "historyId")
        url = next_url(response)
    assert seen == [i for i in before if i != before[5]]


async def test_ties_in_time_are_broken_by_id(any_api: Api) -> None:
    """Many items at the same instant: each page starts exactly after the last id."""
    moment = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    made = [f"{n:024x}" for n in range(1, 24)]
    pending = {"toolCallId": "call_1", "kind": "confirm", "input": {}, "simple": {}}

    def fill(connection: Connection) -> None:
        connection.execute(
            insert(histories),
            [
                {
                    "id": history_id,
                    "owner_id": "alice",
                    "agent": "helper",
                    "title": None,
                    "pending_ask": dict(pending, created="2026-12-01T08:00:00.000Z"),
                    "pending_created": moment,
                    "version": 1,
                    "next_seq": 0,
                    "created": moment,
                    "updated": moment,
                    "deleted_at": None,
                }
                for history_id in made
            ],
        )

    await any_api.store.db.write(fill)
    for route in ("histories", "pendingAsks"):
        pages = await walk(any_api, ROUTES[route][0] + "?limit=5")
        assert [len(page) for page in pages] == [5, 5, 5, 5, 3]
        assert [i for page in pages for i in ids(page, ROUTES[route][1])] == made[::-1]


# --- limit --------------------------------------------------------------------------------------


async def test_limit_is_one_to_two_hundred_and_defaults_to_fifty(any_api: Api) -> None:
    for _ in range(60):
        await add(any_api, "histories")
    default = await any_api.get("/histories")
    assert len(default.json()["data"]) == 50
    assert httpx.URL(next_url(default) or "").params["limit"] == "50"
    largest = await any_api.get("/histories?limit=200")  # over 50: built in batches
    assert ids(largest.json()["data"], "id") == await expected(any_api, "histories")
    assert "link" not in largest.headers
    assert len((await any_api.get("/histories?limit=1")).json()["data"]) == 1
    for route in sorted(ROUTES):
        for bad in ("0", "201", "-1", "abc", "1.5", "", "١", "99999999999999999999"):
            problem = assert_bad(await any_api.get(f"{ROUTES[route][0]}?limit={bad}"), "limit")
            assert "1 to 200" in problem["fields"]["limit"]


# --- cursors ------------------------------------------------------------------------------------


def _raw(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_a_bad_cursor_is_a_400_naming_cursor(any_api: Api, route: str) -> None:
    path, _ = ROUTES[route]
    for _ in range(3):
        await add(any_api, route)
    good = httpx.URL(next_url(await any_api.get(path + "?limit=1")) or "").params["cursor"]
    other = "pendingAsks" if route == "histories" else "histories"
    position = Position(at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), id="a" * 24)
    bad = [
        "not-a-cursor",
        "!!!",
        "=",
        "a",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _raw({"v": 1}),
        _raw([]),
        _raw([2, route, "x", 0, "a" * 24]),
        _raw([1, route, "x", True, "a" * 24]),
        _raw([1, route, "x", 10**30, "a" * 24]),
        _raw([1, route, "x", 0, "../../etc"]),
        _raw([1, route, "x", 0.5, "a" * 24]),
        good[:-3],
        good + "AAAA",
        "x" * 513,
        encode_cursor(other, "alice", position),
    ]
    for cursor in bad:
        response = await any_api.request("GET", path, params={"cursor": cursor, "limit": 1})
        assert_bad(response, "cursor")
    other_list = await any_api.request(
        "GET", path, params={"cursor": encode_cursor(other, "alice", position)}
    )
    assert "another list" in assert_bad(other_list, "cursor")["detail"]


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_another_users_cursor_never_reveals_their_items(any_api: Api, route: str) -> None:
    path, key = ROUTES[route]
    bobs = [await add(any_api, route, user="bob") for _ in range(4)]
    alices = [await add(any_api, route) for _ in range(3)]
    bob_page = await any_api.get(path + "?limit=2", user="bob")
    bob_next = next_url(bob_page)
    assert bob_next is not None
    # Bob's next link, sent with Alice's token: refused, and nothing of Bob's in the answer.
    stolen = await any_api.client.get(bob_next, headers=any_api.auth("alice"))
    problem = assert_bad(stolen, "cursor")
    assert "another user" in problem["detail"]
    assert not any(history_id in stolen.text for history_id in bobs)
    # A cursor made for Alice at Bob's position still lists only Alice's items.
    bob_history = await any_api.store.histories.get(bobs[-1])
    assert bob_history is not None
    at = bob_history.created
    if route == "pendingAsks":
        at = dt.datetime.fromisoformat(
            (await any_api.history(bobs[-1], user="bob"))["pendingAsk"]["created"]
        )
    forged = encode_cursor(route, "alice", Position(at=at, id=bobs[-1]))
    response = await any_api.request("GET", path, params={"cursor": forged, "limit": 200})
    assert response.status_code == 200, response.text
    assert set(ids(response.json()["data"], key)) <= set(alices)
    # An admin's list is their own too.
    assert (await any_api.get(path, user="root")).json()["data"] == []


# --- indexes ------------------------------------------------------------------------------------


def _fill_many(connection: Connection) -> None:
    """20,000 histories of two owners, every third one waiting on an ask, some deleted."""
    base = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    rows = []
    for n in range(20_000):
        at = base + dt.timedelta(seconds=n)
        waiting = n % 3 == 0
        rows.append(
            {
                "id": f"{n:024x}",
                "owner_id": "alice" if n % 2 else "bob",
                "agent": "helper",
                "title": None,
                "pending_ask": {"toolCallId": f"call_{n}", "kind": "confirm"} if waiting else None,
                "pending_created": at if waiting else None,
                "version": 1,
                "next_seq": 0,
                "created": at,
                "updated": at,
                "deleted_at": at if n % 10 == 0 else None,
            }
        )
    connection.execute(insert(histories), rows)
    if connection.dialect.name == "postgresql":
        connection.execute(text("ANALYZE histories"))
    else:
        connection.execute(text("ANALYZE"))


def _plan(connection: Connection, pending: bool, after: bool, search: bool = False) -> str:
    statement = _list_query(pending, True, after, search).statement.params(
        owner="alice",
        after_at=dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.UTC),  # deep in the list
        after_id="0" * 24,
        limit=51,
        pattern="%trip%",
    )
    sql = str(statement.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql).all()
        return "\n".join(str(row[-1]) for row in rows)
    return "\n".join(str(row[0]) for row in connection.exec_driver_sql("EXPLAIN " + sql).all())


async def test_a_page_is_one_range_of_its_index(any_api: Api) -> None:
    await any_api.store.db.write(_fill_many)
    for pending in (False, True):
        index = (
            "ix_histories_owner_id_pending_created_id"
            if pending
            else "ix_histories_owner_id_created_id"
        )
        for after, search in itertools.product((False, True), (False, True)):
            plan = await any_api.store.db.read(_plan, pending, after, search)
            # A search reads the owner's range of the same index, never the whole table.
            assert index in plan, plan
            assert "Seq Scan on histories" not in plan, plan
            if any_api.store.db.backend == "sqlite":
                assert f"SEARCH histories USING INDEX {index} (owner_id=?" in plan, plan
            if search and any_api.store.db.backend == "postgresql":
                continue  # the planner may sort the few matches it expects instead
            # The index gives the order: no sort step on top of it.
            assert "TEMP B-TREE" not in plan, plan
            assert "Sort" not in plan, plan
            if any_api.store.db.backend == "postgresql":
                assert "Index Scan Backward" in plan, plan


# --- the documents ------------------------------------------------------------------------------


async def test_the_openapi_document_describes_limit_cursor_and_link(any_api: Api) -> None:
    document = (await any_api.client.get("/openapi.json")).json()
    for path in ("/api/histories", "/api/histories/pendingAsks", "/api/inbox"):
        operation = document["paths"][path]["get"]
        parameters = {p["name"]: p for p in operation["parameters"]}
        searchable = path != "/api/histories/pendingAsks"
        assert set(parameters) == {"limit", "cursor"} | ({"q"} if searchable else set())
        assert all(p["in"] == "query" and not p["required"] for p in parameters.values())
        limit = parameters["limit"]["schema"]
        assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
            "integer",
            1,
            MAX_LIMIT,
            DEFAULT_LIMIT,
        )
        cursor = parameters["cursor"]["schema"]
        assert {"type": "string", "maxLength": CURSOR_MAX_LENGTH} in cursor["anyOf"]
        assert "Link" in operation["responses"]["200"]["headers"]
        assert "400" in operation["responses"]


def test_the_http_reference_documents_the_paging() -> None:
    text = HTTP_API.read_text()
    section = text.split("## Paged lists", 1)[1].split("\n## ", 1)[0]
    for needle in (
        "| `limit` |",
        "| `cursor` |",
        f"from 1 to {MAX_LIMIT}. Default {DEFAULT_LIMIT}.",
        'rel="next"',
        f"over {CURSOR_MAX_LENGTH} characters",
    ):
        assert needle in section, needle
