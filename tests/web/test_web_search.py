"""Search in the inbox and in the conversation list asks the server (``GET /api/inbox?q=``,
``GET /api/histories?q=``) once the person stops typing, so it finds what the first page did
not load, and pages its answer like the list itself.

bob (on this module's own demo server) has one old conversation waiting on an ask about a
needle, and more newer ones than a page holds, so neither list loads the needle at first."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, Request, expect
from web_pages import App, command

from demo_server import DemoServer

#: More than the 50 of a first page.
FILLERS = 55
NEEDLE = {"title": "Needle in the haystack", "prompt": "Was the needle found?"}


@pytest.fixture(scope="module")
def haystack(own_server: DemoServer) -> dict[str, Any]:
    """The needle's conversation (the oldest), then `FILLERS` newer ones, each waiting."""
    with own_server.api("bob") as api:
        needle = api.post("/histories", json={"title": "Old notes"}).raise_for_status()
        history: dict[str, Any] = needle.json()["data"]
        prompt = command("ask_confirm", NEEDLE)
        api.post(f"/histories/{history['id']}/turn", json={"prompt": prompt}).raise_for_status()
        for n in range(FILLERS):
            filler = api.post("/histories", json={"title": f"Filler {n}"}).raise_for_status()
            filler_id = filler.json()["data"]["id"]
            ask = command("ask_confirm", {"title": f"Filler ask {n}", "prompt": "Go on?"})
            api.post(f"/histories/{filler_id}/turn", json={"prompt": ask}).raise_for_status()
    return history


def _searches(requests: list[Request], path: str) -> list[str]:
    """The `q` of each request to ``/api<path>`` that searched, in order."""
    found = []
    for request in requests:
        url = urlsplit(request.url)
        if url.path == "/api" + path:
            found.extend(parse_qs(url.query).get("q", []))
    return found


def _app(page: Page, server: DemoServer) -> App:
    return App(page=page, base_url=server.url)


def test_the_inbox_search_finds_an_ask_beyond_the_first_page(
    app: App, own_server: DemoServer, haystack: dict[str, Any]
) -> None:
    app = _app(app.page, own_server)
    requests: list[Request] = []
    app.page.on("request", lambda request: requests.append(request))
    app.sign_in_as("bob", "/inbox")
    inbox = app.page.get_by_role("list", name="Waiting on you")
    expect(inbox).to_have_attribute("data-loaded", "true")
    status = app.page.locator(".toolbar").get_by_role("status")
    expect(status).to_have_text("50+ asks waiting on you.")
    needle = app.page.locator(f'.inbox-item[data-history-id="{haystack["id"]}"]')
    expect(needle).to_have_count(0)  # not on the first page

    search = app.page.get_by_label("Search titles and prompts")
    search.press_sequentially("NEEDLE", delay=20)
    expect(inbox).to_have_attribute("data-query", "NEEDLE")
    expect(needle).to_be_visible()
    expect(needle).to_contain_text("Needle in the haystack")
    expect(app.page.locator(".inbox-item")).to_have_count(1)
    expect(status).to_have_text("1 ask waiting on you matches “NEEDLE”.")
    # Debounced: the server was asked once typing stopped, not once per key.
    asked = _searches(requests, "/inbox")
    assert asked[-1] == "NEEDLE"
    assert len(asked) < len("NEEDLE"), asked
    # Its card acts as any other: the full ask is there.
    needle.get_by_role("button", name="Answer here").click()
    expect(needle.locator("article.card")).to_contain_text("Was the needle found?")

    # A search pages like the list: "Show more" follows the Link header, which keeps q.
    search.fill("filler ask")
    expect(inbox).to_have_attribute("data-query", "filler ask")
    expect(app.page.locator(".inbox-item")).to_have_count(50)
    expect(status).to_have_text("50+ asks waiting on you match “filler ask”.")
    app.page.get_by_role("button", name="Show more").click()
    expect(app.page.locator(".inbox-item")).to_have_count(FILLERS)
    expect(needle).to_have_count(0)
    assert any("cursor=" in r.url and "q=filler" in r.url for r in requests)

    search.fill("no ask says this")
    expect(inbox).to_have_attribute("data-query", "no ask says this")
    expect(app.page.locator(".inbox-item")).to_have_count(0)
    expect(status).to_have_text("No ask waiting on you matches “no ask says this”.")
    search.fill("")
    expect(inbox).to_have_attribute("data-query", "")
    expect(app.page.locator(".inbox-item")).to_have_count(50)


def test_the_conversation_search_finds_one_by_its_messages(
    app: App, own_server: DemoServer, haystack: dict[str, Any]
) -> None:
    app = _app(app.page, own_server)
    requests: list[Request] = []
    app.page.on("request", lambda request: requests.append(request))
    app.sign_in_as("bob", "/")
    conversations = app.page.locator(".conversation-list")
    expect(conversations).to_have_attribute("data-loaded", "true")
    expect(conversations.locator("a")).to_have_count(50)
    link = conversations.locator(f'a[data-history-id="{haystack["id"]}"]')
    expect(link).to_have_count(0)

    search = app.page.get_by_label("Search conversations")
    # Its title is "Old notes": only its message says "needle".
    search.press_sequentially("needle", delay=20)
    expect(conversations).to_have_attribute("data-query", "needle")
    expect(link).to_be_visible()
    expect(conversations.locator("a")).to_have_count(1)
    expect(link).to_contain_text("Old notes")
    expect(link).to_contain_text("Found in its messages")
    asked = _searches(requests, "/histories")
    assert asked[-1] == "needle"
    assert len(asked) < len("needle"), asked

    search.fill("Filler 1")
    expect(conversations).to_have_attribute("data-query", "Filler 1")
    titles = conversations.locator(".conversation-title").all_inner_texts()
    # Filler 1 and Filler 10 to 19: by title, each says why it is listed.
    assert sorted(titles) == sorted(["Filler 1", *(f"Filler {n}" for n in range(10, 20))])
    expect(conversations.locator(".conversation-found")).to_have_count(0)

    search.fill("")
    expect(conversations).to_have_attribute("data-query", "")
    expect(conversations.locator("a")).to_have_count(50)
