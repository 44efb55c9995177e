"""The web UI against axe-core's accessibility rules (WCAG 2 A and AA, and axe's best
practices such as landmarks and the order of headings): every page a person opens, signed in
and not, with a card of every kind the demo's prompts make (pending and answered), the gates of
a booking, the demo's notes page with the embedded chat (`<handrail-chat>`), and the page the
server writes for an address that does not exist; in light and in dark mode.

axe-core is the npm package that `scripts/ensure-npm-packages.sh` installs (``make test`` runs
it); it runs inside the page (evaluated through the browser's protocol, which the page's
Content-Security-Policy leaves alone). Each run has a demo server of its own: the asks it makes
as admin reach no other test, and the booking asks its permission again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.sync_api import Browser, expect
from web_pages import App, command, open_tab

from demo_server import DemoServer
from npm_packages import AXE, installed

#: The demo's prompts, each leading to one kind of ask (the booking's gates come after).
PROMPTS = (
    "Set up billing for my team",
    "Delete the old draft",
    "Draft an announcement",
    "Fill in invoice details",
    "Upload a receipt",
    "Create a database",
)
CONFIRM = {
    "title": "Publish the notes?",
    "prompt": "They go to the team.",
    "confirmLabel": "Publish",
}
#: The pages of the top bar (admin sees them all) and the chat's own.
PAGES = ("/", "/inbox", "/watch", "/connections", "/grants", "/agents", "/audit", "/deliveries")

_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((rule) => ({
    id: rule.id,
    help: rule.help,
    nodes: rule.nodes.slice(0, 3).map((node) => node.target.join(" ")),
  }));
}"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    return installed(AXE).read_text(encoding="utf-8")


@pytest.fixture(params=["light", "dark"])
def tab(request: pytest.FixtureRequest, browser: Browser, tmp_path: Path) -> Iterator[App]:
    scheme: Literal["light", "dark"] = request.param
    with (
        DemoServer.running(tmp_path) as server,
        open_tab(browser, server.url, 1100, 900, color_scheme=scheme) as app,
    ):
        yield app


def violations(app: App, axe_source: str) -> list[str]:
    """What axe finds on the page as it is now: one line a rule broken, with where."""
    page = app.page
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(axe_source)
    found: list[dict[str, Any]] = page.evaluate(_RUN)
    return [f"{rule['id']}: {rule['help']} ({', '.join(rule['nodes'])})" for rule in found]


def loaded(app: App) -> None:
    """Wait for the page's heading and for its lists to have loaded."""
    expect(app.page.locator("main h1")).to_be_visible()
    expect(app.page.get_by_text("Loading…")).to_have_count(0)


def test_every_page_and_card_meets_the_accessibility_rules(tab: App, axe_source: str) -> None:
    found: dict[str, list[str]] = {}

    def audit(name: str) -> None:
        found[name] = violations(tab, axe_source)

    tab.goto("/")
    expect(tab.page.get_by_role("button", name="Sign in as admin")).to_be_visible()
    audit("the sign-in page")
    tab.sign_in_as("admin")

    for prompt in PROMPTS:
        tab.start(prompt)
        tab.card()
        audit(f"the card of “{prompt}”")
    tab.goto("/")
    tab.say(command("ask_confirm", CONFIRM))
    confirm = tab.card(kind="confirm")
    audit("a confirm card")
    confirm.click("Publish")
    expect(tab.reply()).to_contain_text("ask_confirm returned")
    audit("an answered card")
    tab.book_first_free_time()
    audit("a booking's confirmation card, after its permission and selection")

    for path in PAGES:
        tab.goto(path)
        loaded(tab)
        audit(f"the page {path}")

    # The demo's notes page: the chat element embedded in a page that has its own `main`.
    tab.goto("/demo/notes-page?user=admin")
    expect(tab.page.locator("#notes li")).to_have_count(3)
    expect(tab.page.locator("handrail-chat .hc-user")).to_contain_text("Signed in as admin")
    audit("the demo's notes page, with <handrail-chat>")

    # A page of the UI that does not exist, and an address the server has no page for.
    tab.goto("/c/000000000000000000000000")
    loaded(tab)
    audit("a conversation that does not exist")
    tab.goto("/no-such-page")
    expect(tab.page.get_by_role("heading", name="Page not found")).to_be_visible()
    audit("the server's page for an address it does not have")

    assert {name: rules for name, rules in found.items() if rules} == {}
    assert len(found) == len(PROMPTS) + len(PAGES) + 7
