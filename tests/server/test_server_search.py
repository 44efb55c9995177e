"""Server-side search: ``GET /histories?q=`` (a conversation's title and its messages) and
``GET /inbox?q=`` (an ask's title and prompt, its conversation's title), case-insensitive,
the caller's own only, a page at a time with ``q`` kept in the Link, on both backends; a bad
``q`` is a 400 naming it."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from server_helpers import Api, command, load_schema

from examples import PIZZA, plan
from handrail.store.search import QUERY_MAX

LINK = re.compile(r'^<([^>]+)>; rel="next"$')


async def listed(api: Api, path: str, *, user: str = "alice") -> list[dict[str, Any]]:
    """Every item of a paged list, following the Link header."""
    items: list[dict[str, Any]] = []
    url: str | None = "http://handrail/api" + path
    for _ in range(20):
        assert url is not None
        response = await api.client.get(url, headers=api.auth(user))
        assert response.status_code == 200, response.text
        items.extend(response.json()["data"])
        link = response.headers.get("link")
        if link is None:
            return items
        match = LINK.match(link)
        assert match, link
        url = match.group(1)
    raise AssertionError("the pages never end")


async def titled(api: Api, title: str, *prompts: str, user: str = "alice") -> str:
    response = await api.post("/histories", {"title": title}, user=user)
    assert response.status_code == 201, response.text
    history_id = str(response.json()["data"]["id"])
    for prompt in prompts:
        stream = await api.prompt({"historyId": history_id, "prompt": prompt}, user=user)
        assert stream.status == 200, stream.problem
    return history_id


async def test_conversations_by_title_and_messages(any_api: Api) -> None:
    trip = await titled(any_api, "Trip to Lisbon", "Book the FLIGHT")
    rent = await titled(any_api, "Wohnung", "Ärger mit dem Vermieter")
    await titled(any_api, "Lisbon for bob", "flight", user="bob")
    assert [h["id"] for h in await listed(any_api, "/histories?q=lisbon")] == [trip]
    assert [h["id"] for h in await listed(any_api, "/histories?q=flight")] == [trip]
    # The agent's reply is a message too (the scripted model says "You said: ...").
    assert [h["id"] for h in await listed(any_api, "/histories?q=YOU%20SAID")] == [rent, trip]
    assert [h["id"] for h in await listed(any_api, "/histories?q=%C3%84RGER")] == [rent]
    assert [h["id"] for h in await listed(any_api, "/histories?q=%20%20")] == [rent, trip]
    assert await listed(any_api, "/histories?q=nowhere") == []
    [bobs] = await listed(any_api, "/histories?q=LISBON", user="bob")
    assert bobs["title"] == "Lisbon for bob"
    renamed = await any_api.request("PATCH", f"/histories/{rent}", json={"title": "Flat hunt"})
    assert renamed.status_code == 200
    assert [h["id"] for h in await listed(any_api, "/histories?q=flat")] == [rent]
    assert (await any_api.request("DELETE", f"/histories/{trip}")).status_code == 200
    assert await listed(any_api, "/histories?q=lisbon") == []


async def newest_first(api: Api, history_ids: list[str]) -> list[str]:
    """`history_ids` in the lists' documented order: newest first by (created, id), so
    conversations made in the same millisecond go by id."""
    views = [await api.history(history_id) for history_id in history_ids]
    return [v["id"] for v in sorted(views, key=lambda v: (v["created"], v["id"]), reverse=True)]


async def test_a_search_is_paged_and_its_link_keeps_q(any_api: Api) -> None:
    made = await newest_first(any_api, [await titled(any_api, f"Report {n}") for n in range(5)])
    await titled(any_api, "Other")
    response = await any_api.get("/histories?q=report&limit=2")
    assert response.status_code == 200
    assert [h["id"] for h in response.json()["data"]] == made[:2]
    match = LINK.match(response.headers["link"])
    assert match
    assert parse_qs(urlsplit(match.group(1)).query)["q"] == ["report"]
    assert [h["id"] for h in await listed(any_api, "/histories?q=REPORT&limit=2")] == made


async def test_inbox_lists_and_searches_the_callers_pending_asks(any_api: Api) -> None:
    chosen = await titled(any_api, "Billing", command("ask_choice", plan()))
    pizza = await titled(any_api, "Lunch", command("ask_choice", PIZZA))
    await titled(any_api, "No ask here", "choose a plan")
    await titled(any_api, "Bob's", command("ask_choice", plan()), user="bob")
    everything = await listed(any_api, "/inbox")
    assert [item["historyId"] for item in everything] == [pizza, chosen]
    pending = (await any_api.get("/histories/pendingAsks")).json()["data"]
    for item, plain in zip(everything, pending, strict=True):
        view = (await any_api.history(item["historyId"]))["pendingAsk"]
        assert item == {**plain, "agent": "helper", "pendingAsk": view}
    assert [i["historyId"] for i in await listed(any_api, "/inbox?q=CHOOSE%20A%20PLAN")] == [chosen]
    assert [i["historyId"] for i in await listed(any_api, "/inbox?q=toppings")] == [pizza]
    assert [i["historyId"] for i in await listed(any_api, "/inbox?q=lunch")] == [pizza]
    assert await listed(any_api, "/inbox?q=no%20ask") == []
    [bobs] = await listed(any_api, "/inbox?q=plan", user="bob")
    assert bobs["title"] == "Bob's"
    # Answered, the ask leaves the inbox and its search.
    ask = everything[0]
    answer = {"action": "accept", "content": {"selected": ["cheese"]}}
    answered = await any_api.answer(pizza, ask["toolCallId"], answer)
    assert answered.status == 200, answered.problem
    assert await listed(any_api, "/inbox?q=toppings") == []
    assert [i["historyId"] for i in await listed(any_api, "/inbox")] == [chosen]


async def test_inbox_pages_chain_with_q(any_api: Api) -> None:
    made = [await titled(any_api, f"Ask {n}", command("ask_choice", plan())) for n in range(3)]
    response = await any_api.get("/inbox?limit=1&q=plan")
    assert len(response.json()["data"]) == 1
    assert "q=plan" in response.headers["link"]
    found = await listed(any_api, "/inbox?limit=1&q=plan")
    assert [i["historyId"] for i in found] == list(reversed(made))
    # A cursor of the inbox is not one of pendingAsks (and the other way round).
    cursor = parse_qs(urlsplit(LINK.match(response.headers["link"]).group(1)).query)["cursor"]  # type: ignore[union-attr]
    wrong = await any_api.get(f"/histories/pendingAsks?cursor={cursor[0]}")
    assert wrong.status_code == 400
    assert list(wrong.json()["fields"]) == ["cursor"]


@pytest.mark.parametrize("route", ["/histories", "/inbox"])
@pytest.mark.parametrize("q", ["x" * (QUERY_MAX + 1), "tab%09inside", "line%0Abreak"])
async def test_a_bad_q_is_a_400_naming_it(any_api: Api, route: str, q: str) -> None:
    response = await any_api.get(f"{route}?q={q}")
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["title"] == "Validation failed"
    assert list(problem["fields"]) == ["q"]
    assert "characters" in problem["fields"]["q"]


async def test_the_inbox_item_schema_describes_the_items(any_api: Api) -> None:
    await titled(any_api, "Billing", command("ask_choice", plan()))
    document = (await any_api.client.get("/openapi.json")).json()
    operation = document["paths"]["/api/inbox"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["limit", "cursor", "q"]
    schema = document["components"]["schemas"]["InboxItem"]
    [item] = await listed(any_api, "/inbox")
    assert set(schema["required"]) <= set(item)
    assert set(item) <= set(schema["properties"])
    # The plain list's published schema still forbids the extra fields.
    assert (
        load_schema("pendingAsksResponse")["properties"]["data"]["items"].get(
            "additionalProperties"
        )
        is False
    )
