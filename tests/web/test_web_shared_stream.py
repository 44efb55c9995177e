"""All the tabs of one browser share ONE event stream (`GET /api/events`): a leader tab reads
it and relays each event to the others over a BroadcastChannel, so a seventh tab does not wait
for one of the browser's six connections per host. Closing the leader hands the stream to
another tab, which resumes with Last-Event-ID; signing out closes it in every tab.

The streams are counted on the server, from uvicorn's access log (one line per response
started): this module runs its own demo server (`own_server`), so only its own requests are
in that log."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Request, Route, expect
from web_pages import TIMEOUT_MS, command

from demo_server import DemoServer

#: More tabs than the browser's six connections per host (HTTP/1.1).
TABS = 7
CONFIRM = {"title": "Shared", "prompt": "Is one stream enough?", "confirmLabel": "Yes"}


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 900, "height": 700}, locale="en-US")
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


def _streams_opened(log: Path) -> int:
    """How many event streams the server answered (the access log's lines for them)."""
    return len(re.findall(r'"GET /api/events[ ?][^"]*" 200', log.read_text()))


def _ask(server: DemoServer, title: str) -> str:
    return str(server.ask("bob", command("ask_confirm", {**CONFIRM, "title": title}))["historyId"])


def _listed(page: Page, history_id: str) -> None:
    expect(page.locator(f'.inbox-item[data-history-id="{history_id}"]')).to_be_visible()


def _leaders(pages: list[Page]) -> list[Page]:
    return [p for p in pages if p.evaluate("document.documentElement.dataset.liveRole") == "leader"]


def _one_leader(pages: list[Page]) -> Page:
    """The one tab that reads the stream, once it is open (the lock passes at once)."""
    for _ in range(100):
        leaders = _leaders(pages)
        if len(leaders) == 1 and leaders[0].locator("html").get_attribute("data-live") == "on":
            return leaders[0]
        pages[0].wait_for_timeout(100)
    raise AssertionError(f"no single leader: {len(_leaders(pages))} tabs lead")


def test_tabs_share_one_stream_and_hand_it_over(
    context: BrowserContext, own_server: DemoServer
) -> None:
    errors: list[str] = []
    stream_requests: list[Request] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    context.on("request", lambda r: stream_requests.append(r) if "/api/events" in r.url else None)
    gap: list[str] = []

    def open_stream(route: Route) -> None:
        # The stream opened again after the leader went: an ask made before it is in place
        # must still reach every tab (replayed from Last-Event-ID).
        if len(stream_requests) == 2 and not gap:
            gap.append(_ask(own_server, "In the gap"))
        route.continue_()

    context.route("**/api/events*", open_stream)
    first = context.new_page()
    first.goto(own_server.url + "/inbox")
    first.get_by_role("button", name="Sign in as bob").click()
    pages = [first]
    for _ in range(TABS - 1):
        page = context.new_page()
        page.goto(own_server.url + "/inbox")
        pages.append(page)
    for page in pages:
        # Every tab loads (the seventh too) and hears the stream.
        expect(page.locator(".who")).to_contain_text("Signed in as bob")
        expect(page.locator("html")).to_have_attribute("data-live", "on")
        expect(page.get_by_role("list", name="Waiting on you")).to_have_attribute(
            "data-loaded", "true"
        )
    _one_leader(pages)
    assert _streams_opened(own_server.log) == 1

    history_id = _ask(own_server, "For every tab")
    for page in pages:
        _listed(page, history_id)

    # The leader closes: another tab takes the stream over, with the last id it heard.
    leader = _leaders(pages)[0]
    leader.close()
    pages.remove(leader)
    new_leader = _one_leader(pages)
    assert new_leader is not leader
    for page in pages:
        expect(page.locator("html")).to_have_attribute("data-live", "on")
    assert _streams_opened(own_server.log) == 2
    resumed = stream_requests[-1].headers
    assert re.fullmatch(r"[0-9a-f]{24}", resumed.get("last-event-id", "")), resumed
    assert gap
    for page in pages:
        _listed(page, gap[0])

    second_id = _ask(own_server, "After the hand-over")
    for page in pages:
        _listed(page, second_id)

    # Sign-out in one tab closes the stream of all of them: no tab leads or listens.
    pages[-1].get_by_role("button", name="Sign out").click()
    for page in pages:
        expect(page.get_by_role("heading", name="Sign in to handrail")).to_be_visible()
        expect(page.locator("html")).to_have_attribute("data-live", "off")
    held = pages[0].evaluate(
        "navigator.locks.query().then(q => q.held.concat(q.pending)"
        ".filter(l => l.name.startsWith('handrail.events.')).length)"
    )
    assert held == 0
    assert _streams_opened(own_server.log) == 2
    assert not errors, errors


#: Each tab hears another tab's sign-in or sign-out (the "storage" event) this late.
_SLOW_STORAGE = """
const add = window.addEventListener.bind(window);
window.addEventListener = (type, listener, options) =>
  add(type, type === "storage" ? (e) => setTimeout(() => listener(e), 1500) : listener, options);
"""


def test_a_tab_that_has_not_heard_the_sign_out_does_not_take_the_stream_over(
    context: BrowserContext, own_server: DemoServer
) -> None:
    # The leader signs out and lets the lock go at once; the tab the lock passes to may hear
    # the sign-out only later (each tab gets its "storage" event in its own time): it must see
    # the token is gone and not open a stream for a signed-out browser.
    context.add_init_script(_SLOW_STORAGE)
    before = _streams_opened(own_server.log)
    first = context.new_page()
    first.goto(own_server.url + "/inbox")
    first.get_by_role("button", name="Sign in as bob").click()
    second = context.new_page()
    second.goto(own_server.url + "/inbox")
    pages = [first, second]
    for page in pages:
        expect(page.locator("html")).to_have_attribute("data-live", "on")
    leader = _one_leader(pages)
    follower = second if leader is first else first
    assert _streams_opened(own_server.log) == before + 1

    leader.get_by_role("button", name="Sign out").click()
    expect(leader.get_by_role("heading", name="Sign in to handrail")).to_be_visible()
    # The follower has the lock now and has not yet heard the sign-out.
    expect(follower.locator(".who")).to_contain_text("Signed in as bob")
    follower.wait_for_timeout(500)
    expect(follower.get_by_role("heading", name="Sign in to handrail")).to_be_visible()
    expect(follower.locator("html")).to_have_attribute("data-live", "off")
    assert _streams_opened(own_server.log) == before + 1
