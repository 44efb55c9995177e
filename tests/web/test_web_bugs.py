"""The bugs found by trying the web UI, each with the check that failed before its fix: a long
word in a markdown preview or the Conversations panel at 390 px no longer widens the page, a
missing or foreign conversation says so (not "as an admin"), an unknown path is a page (not raw
JSON), dark-mode badges and watch buttons reach 4.5:1 (contrast computed from the colours
the browser renders), and a new conversation's first prompt is not wiped by a first render
that came late."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect
from web_pages import App, command

from demo_server import DemoServer

#: The WCAG 2 contrast ratio of the element's text colour on its nearest opaque background.
CONTRAST_JS = """
(el) => {
  const rgb = (value) => (value.match(/[\\d.]+/g) || []).map(Number);
  const channel = (c) => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = ([r, g, b]) =>
    0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  let node = el;
  let background = null;
  while (node) {
    const parts = rgb(getComputedStyle(node).backgroundColor);
    if (parts.length === 3 || (parts.length === 4 && parts[3] > 0.99)) {
      background = parts.slice(0, 3);
      break;
    }
    node = node.parentElement;
  }
  background = background || [255, 255, 255];
  const text = rgb(getComputedStyle(el).color).slice(0, 3);
  const [a, b] = [luminance(text), luminance(background)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}
"""


@pytest.fixture
def dark_phone(browser: Browser, demo_server: DemoServer) -> Iterator[App]:
    """A phone-sized tab in dark mode."""
    context = browser.new_context(
        viewport={"width": 390, "height": 800}, locale="en-US", color_scheme="dark"
    )
    page = context.new_page()
    try:
        yield App(page=page, base_url=demo_server.url)
    finally:
        context.close()


def confirm_item(tool_call_id: str, title: str, *, destructive: bool = False) -> dict[str, Any]:
    """A pending confirm as ``GET /api/histories/pendingAsks`` lists it."""
    confirm = {"action": "accept", "content": {"confirmed": True}}
    deny = {"action": "accept", "content": {"confirmed": False}}
    return {
        "historyId": "f" * 24,
        "toolCallId": tool_call_id,
        "kind": "confirm",
        "created": "2026-12-01T14:00:00.000Z",
        "simple": {
            "toolCallId": tool_call_id,
            "kind": "confirm",
            "title": title,
            "text": f"{title}? Expires 14:05:00 UTC.",
            "buttons": [
                {
                    "id": "confirm",
                    "label": "Do it",
                    "style": "destructive" if destructive else "primary",
                    "response": confirm,
                },
                {"id": "deny", "label": "Not now", "style": "cancel", "response": deny},
            ],
            "handoff": False,
        },
    }


def fake_pending(page: Page, items: list[dict[str, Any]]) -> None:
    """Answer the pending asks list with `items` (so no other test's asks show here)."""

    def fulfill(route: Route) -> None:
        body = {"data": items, "requestId": "test"}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/api/histories/pendingAsks*", fulfill)


def page_width(app: App) -> int:
    return int(app.page.evaluate("document.documentElement.scrollWidth"))


def test_a_long_word_in_a_markdown_preview_does_not_widen_the_page(app: App) -> None:
    app.sign_in_as("alice")
    word = "x" * 3000
    app.say(command("ask_markdown", {"prompt": "Edit the note.", "initial": f"A {word} word."}))
    card = app.card(kind="markdown")
    expect(card.locator.locator(".md-preview")).to_contain_text("xxxx")
    assert page_width(app) <= 1100


def test_the_conversations_panel_at_390px_does_not_widen_the_page(
    browser: Browser, demo_server: DemoServer
) -> None:
    long_title = "Q" * 200
    demo_server.ask("alice", command("ask_confirm", {"prompt": "Fine?"}))
    with demo_server.api("alice") as api:
        made = api.post("/histories", json={}).json()["data"]
        api.patch(f"/histories/{made['id']}", json={"title": long_title}).raise_for_status()
    context = browser.new_context(viewport={"width": 390, "height": 800}, locale="en-US")
    page = context.new_page()
    try:
        app = App(page=page, base_url=demo_server.url)
        app.sign_in_as("alice")
        sidebar = page.get_by_role("complementary", name="Conversations")
        summary = sidebar.locator("summary")
        if summary.count() and summary.first.is_visible():
            summary.first.click()
        expect(sidebar.get_by_text(long_title[:50])).to_be_visible()
        assert page_width(app) <= 390, f"the page is {page_width(app)}px wide at 390px"
    finally:
        context.close()


def test_a_missing_or_foreign_conversation_says_so_not_as_an_admin(
    app: App, demo_server: DemoServer
) -> None:
    with demo_server.api("alice") as api:
        theirs = api.post("/histories", json={}).json()["data"]["id"]
    app.sign_in_as("bob")
    for history_id in ("0" * 24, theirs):
        app.goto(f"/c/{history_id}")
        expect(app.page.get_by_role("alert")).to_be_visible()
        hint = app.page.locator(".composer .helper")
        expect(hint).to_contain_text("Start a new conversation")
        expect(hint).not_to_contain_text("as an admin")


def test_an_unknown_path_is_a_page_not_raw_json(app: App) -> None:
    app.goto("/no/such/page")
    expect(app.page.get_by_role("heading", name="Page not found")).to_be_visible()
    assert '"status"' not in app.page.content()
    app.page.get_by_role("link", name="Go to handrail's start page").click()
    expect(app.page.get_by_role("button", name="Sign in as alice")).to_be_visible()


def _low_contrast_badges(page: Page) -> list[str]:
    """Each badge the page shows under 4.5:1; a page that shows none fails (nothing checked)."""
    badges = [badge for badge in page.locator(".badge").all() if badge.is_visible()]
    assert badges, f"no badge shows on {page.url}"
    low = []
    for badge in badges:
        ratio = badge.evaluate(CONTRAST_JS)
        if ratio < 4.5:
            low.append(f"{badge.inner_text()!r} ({badge.get_attribute('class')}) is {ratio:.2f}:1")
    return low


def test_dark_mode_badges_and_watch_buttons_have_enough_contrast(
    dark_phone: App, demo_server: DemoServer
) -> None:
    # Real badges: an ask's kind in the inbox and on its card, each tool's safety class on the
    # Grants page.
    ask = {"title": "Dark badges", "prompt": "Readable?", "confirmLabel": "Yes"}
    asked = demo_server.ask("admin", command("ask_confirm", ask))
    history_id = asked["historyId"]
    try:
        dark_phone.sign_in_as("admin", "/inbox")
        page = dark_phone.page
        expect(page.locator(f'.inbox-item[data-history-id="{history_id}"]')).to_be_visible()
        count = page.locator(".nav .count").first
        expect(count).to_be_visible()
        ratio = count.evaluate(CONTRAST_JS)
        assert ratio >= 4.5, f"the header's count badge is {ratio:.2f}:1 in dark mode"
        low = _low_contrast_badges(page)
        dark_phone.goto(f"/c/{history_id}")
        expect(page.locator("article.card .badge")).to_be_visible()
        low += _low_contrast_badges(page)
        dark_phone.goto("/grants")
        for safety_class in ("read-only", "mutating", "consequential"):
            expect(page.locator(f".badge-{safety_class}").first).to_be_visible()
        low += _low_contrast_badges(page)
        assert low == [], low
    finally:
        with demo_server.api("admin") as api:
            no = {"action": "accept", "content": {"confirmed": False}}
            answer = {"askResponse": {"toolCallId": asked["pendingAsk"]["toolCallId"], **no}}
            api.post(f"/histories/{history_id}/turn", json=answer).raise_for_status()

    items = [confirm_item("call_d", "Delete it", destructive=True), confirm_item("call_k", "Go on")]
    fake_pending(dark_phone.page, items)
    dark_phone.goto("/watch")
    buttons = dark_phone.page.locator(".simple-card .btn")
    expect(buttons.first).to_be_visible()
    styles = set()
    for button in buttons.all():
        ratio = button.evaluate(CONTRAST_JS)
        styles.add(button.get_attribute("class"))
        assert ratio >= 4.5, f"{button.inner_text()!r} is {ratio:.2f}:1"
    assert any("btn-danger" in (s or "") for s in styles)
    assert any("btn-primary" in (s or "") for s in styles)


def test_watch_an_expired_confirmation_says_so_and_only_cancel_is_left(phone: App) -> None:
    items = [confirm_item("call_a", "Book a table"), confirm_item("call_b", "Send the mail")]
    fake_pending(phone.page, items)

    def stale(route: Route) -> None:
        problem = {
            "status": 409,
            "title": "Confirmation expired",
            "detail": "The prepared request expired before it was confirmed; nothing was sent.",
            "code": "CONFIRMATION_STALE",
        }
        route.fulfill(status=409, content_type="application/problem+json", body=json.dumps(problem))

    phone.page.route("**/api/histories/*/turn", stale)
    phone.sign_in_as("alice", "/watch")
    cards = phone.page.locator(".simple-card")
    expect(cards).to_have_count(2)
    first = cards.filter(has_text="Book a table")
    first.get_by_role("button", name="Do it").click()
    status = phone.page.get_by_role("status")
    expect(status).to_contain_text("the confirmation expired, so nothing was done")
    expect(status).not_to_contain_text("answered elsewhere")
    # The card is no longer tappable for what expired: only its cancel stays, with why.
    expect(first.get_by_role("button")).to_have_text(["Not now"])
    expect(first.locator(".expired-note")).to_have_text("Expired: nothing was sent.")
    # The focus stays on the card that was tapped, not lost to the page.
    expect(first.get_by_role("button", name="Not now")).to_be_focused()


def test_watch_keeps_the_focus_after_a_tap(phone: App) -> None:
    items = [confirm_item("call_a", "Book a table"), confirm_item("call_b", "Send the mail")]
    fake_pending(phone.page, items)

    def sent(route: Route) -> None:
        items.pop(0)  # the answered ask leaves the list
        body = {"data": {"historyId": "f" * 24, "text": "Done."}, "requestId": "test"}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    phone.page.route("**/api/histories/*/turn", sent)
    phone.sign_in_as("alice", "/watch")
    cards = phone.page.locator(".simple-card")
    expect(cards).to_have_count(2)
    cards.first.get_by_role("button", name="Do it").focus()
    phone.page.keyboard.press("Enter")
    expect(phone.page.get_by_role("status")).to_contain_text("“Do it” sent. The agent says: Done.")
    expect(cards).to_have_count(1)
    # The next card takes the tapped one's place, and the focus.
    expect(cards.first.get_by_role("button", name="Do it")).to_be_focused()


def test_every_rule_of_the_stylesheet_is_closed() -> None:
    # A merge once left a rule open, and the browser dropped every rule after it.
    css = (Path(__file__).resolve().parents[2] / "src/handrail/web/static/style.css").read_text()
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    depth = 0
    for number, line in enumerate(css.splitlines(), start=1):
        starts_rule = bool(line) and not line[0].isspace() and line[0] != "}"
        # A rule or an @media block starts at the top level (rules inside @media are indented).
        assert not starts_rule or depth == 0, f"style.css line {number} starts inside an open rule"
        depth += line.count("{") - line.count("}")
        assert depth >= 0, f"style.css line {number} closes a rule that is not open"
    assert depth == 0, "style.css leaves a rule open"


def test_a_new_conversations_first_prompt_stays_when_the_first_render_comes_late(
    app: App,
) -> None:
    """The chat's first render waited for the tools' safety classes (``GET /api/permissions``).
    When they came after the turn had made its conversation (``history.created`` names it),
    that render loaded the conversation, which holds no row until the turn's pause: the prompt
    just sent and the turn's notices were wiped. A new conversation now renders at once."""
    held: list[Route] = []
    app.page.route("**/api/permissions", lambda route: held.append(route))
    app.sign_in_as("alice")
    prompt = command("ask_confirm", {"title": "Go ahead?", "prompt": "Shall I go on?"})
    app.say(prompt)
    app.card(kind="confirm").expect_pending()
    assert held, "the safety classes came before the ask: nothing was late"
    loads: list[str] = []
    one_history = re.compile(r"/api/histories/[0-9a-f]{24}$")
    app.page.on("request", lambda r: loads.append(r.url) if one_history.search(r.url) else None)
    with app.page.expect_response("**/api/permissions"):
        for route in held:
            route.continue_()
    app.page.unroute("**/api/permissions")
    # What the classes' arrival sets off runs at once (a few promise steps): a moment shows it.
    app.page.wait_for_timeout(300)
    assert loads == []
    expect(app.page.locator(".msg-user")).to_have_text(["You: " + prompt])
    expect(app.page.locator(".empty-state")).to_have_count(0)
    app.card(kind="confirm").expect_pending()
