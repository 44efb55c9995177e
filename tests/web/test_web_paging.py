"""Paged lists in the browser: the inbox (``GET /api/inbox``) and the conversation list load the
first page, and "Show more" follows the ``Link: <...>; rel="next"`` header page after page until
there is none.

The two lists are answered by the test (``page.route``) with the server's own paging: 75 items,
50 a page by default, each page's ``Link`` pointing at the next with an opaque cursor, so the
UI is held to the header rather than to a count. Signing in and everything else goes to the
demo server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Route, expect
from web_pages import App

TOTAL = 75


def _pending(n: int) -> dict[str, Any]:
    history_id = f"{n:024x}"
    return {
        "historyId": history_id,
        "title": f"Conversation {n}",
        "toolCallId": f"call_{n}",
        "kind": "confirm",
        "simple": {
            "kind": "confirm",
            "toolCallId": f"call_{n}",
            "title": f"Question {n}",
            "text": f"Shall I go on with step {n}?",
            "buttons": [],
            "handoff": False,
        },
        "created": "2026-12-01T08:00:00.000Z",
    }


def _inbox_item(n: int) -> dict[str, Any]:
    """An item of ``GET /api/inbox``: the pendingAsks item with its agent and its ask."""
    ask = {
        "toolCallId": f"call_{n}",
        "kind": "confirm",
        "input": {"title": f"Question {n}", "prompt": f"Shall I go on with step {n}?"},
    }
    return {**_pending(n), "agent": "demo", "pendingAsk": ask}


def _history(n: int) -> dict[str, Any]:
    return {
        "id": f"{n:024x}",
        "userId": "alice",
        "agent": "demo",
        "title": f"Conversation {n}",
        "created": "2026-12-01T08:00:00.000Z",
        "updated": "2026-12-01T08:00:00.000Z",
        "pendingAsk": None,
    }


def serve_pages(app: App, path: str, item: Callable[[int], dict[str, Any]]) -> list[str]:
    """Answer ``GET /api<path>`` a page at a time; returns the URLs asked for, in order."""
    asked: list[str] = []

    def fulfill(route: Route) -> None:
        if route.request.method != "GET":
            route.continue_()
            return
        url = route.request.url
        asked.append(url)
        query = parse_qs(urlsplit(url).query)
        limit = int(query.get("limit", ["50"])[0])
        start = int(query["cursor"][0].removeprefix("after-")) if "cursor" in query else 0
        items = [item(n) for n in range(start, min(start + limit, TOTAL))]
        headers = {}
        if start + limit < TOTAL:
            base = url.split("?", 1)[0]
            headers["Link"] = f'<{base}?limit={limit}&cursor=after-{start + limit}>; rel="next"'
        route.fulfill(
            status=200,
            content_type="application/json",
            headers=headers,
            body=json.dumps({"data": items, "requestId": "test"}),
        )

    app.page.route(re.compile(r"/api" + re.escape(path) + r"(\?.*)?$"), fulfill)
    return asked


def test_the_inbox_shows_more_pages_until_the_last(app: App) -> None:
    asked = serve_pages(app, "/inbox", _inbox_item)
    serve_pages(app, "/histories/pendingAsks", _pending)  # the header's count
    app.sign_in_as("alice", "/inbox")
    items = app.page.locator(".inbox-item")
    expect(items).to_have_count(50)
    expect(app.page.get_by_role("status")).to_have_text("50+ asks waiting on you.")
    expect(app.page.get_by_role("link", name="Inbox")).to_contain_text("50+")
    more = app.page.get_by_role("button", name="Show more")
    more.click()
    expect(items).to_have_count(TOTAL)
    expect(more).to_be_hidden()
    expect(app.page.get_by_role("status")).to_have_text(f"{TOTAL} asks waiting on you.")
    expect(items.last).to_contain_text(f"Question {TOTAL - 1}")
    assert any("cursor=after-50" in url for url in asked), asked


def test_the_conversation_list_shows_more_pages(app: App) -> None:
    asked = serve_pages(app, "/histories", _history)
    app.sign_in_as("alice", "/")
    conversations = app.page.locator(".conversation-list a")
    expect(conversations).to_have_count(50)
    more = app.page.locator(".conversations-more")
    more.click()
    expect(conversations).to_have_count(TOTAL)
    expect(more).to_be_hidden()
    expect(conversations.last).to_contain_text(f"Conversation {TOTAL - 1}")
    assert any("cursor=after-50" in url for url in asked), asked
