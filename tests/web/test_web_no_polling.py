"""The pages follow the event stream instead of polling: with the page's clock run two minutes
ahead (Playwright's fake clock fires every timer the page set), the inbox, the watch and the
chat ask the server nothing more (the header count included). They polled every 10 and 20
seconds before the event stream. This module runs its own demo server (`own_server`), so no
other test's asks or events reach bob while it counts."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Request, expect
from web_pages import TIMEOUT_MS, App, command

from demo_server import DemoServer

#: How far the page's clock is run: more than any poll the pages ever had (20 s).
AHEAD_MS = 120_000


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


def test_the_pages_ask_nothing_while_nothing_happens(
    context: BrowserContext, own_server: DemoServer
) -> None:
    confirm = {"title": "Quiet", "prompt": "Anything new?", "confirmLabel": "Yes"}
    asked = own_server.ask("bob", command("ask_confirm", confirm))
    history_id = asked["historyId"]
    page = context.new_page()
    page.clock.install()
    app = App(page=page, base_url=own_server.url)
    app.sign_in_as("bob", "/inbox")
    item = page.locator(f'.inbox-item[data-history-id="{history_id}"]')
    pages = {
        "/inbox": item,
        "/watch": page.locator(".simple-card").filter(has_text="Quiet"),
        f"/c/{history_id}": page.locator("article.card.card-pending"),
    }
    for path, shown in pages.items():
        app.goto(path)
        expect(page.locator("html")).to_have_attribute("data-live", "on")
        expect(shown).to_be_visible()
        expect(page.locator(".nav .count").first).to_have_text("1")
        time.sleep(0.5)  # the page's first reads are answered
        asked_for: list[str] = []

        def record(request: Request, seen: list[str] = asked_for) -> None:
            if "/api/" in request.url and "/api/events" not in request.url:
                seen.append(f"{request.method} {request.url}")

        page.on("request", record)
        page.clock.run_for(AHEAD_MS)
        time.sleep(0.5)  # a request a timer started would have gone out by now
        page.remove_listener("request", record)
        assert asked_for == [], f"{path} polled: {asked_for}"
