"""The Connections page: an admin adds the notes MCP server from the catalog in the browser,
sees it connected with its tools' classes, trusts it and overrides a class; another user sees
it with their own level and no admin controls."""

from __future__ import annotations

import re

from playwright.sync_api import expect
from web_pages import App

from demo_server import DemoServer

#: How long starting (or restarting) the notes server may take on a loaded machine (ms).
RESTART_MS = 30_000


def test_an_admin_adds_a_connection_in_the_ui(
    app: App, second_tab: App, demo_server: DemoServer
) -> None:
    try:
        app.sign_in_as("admin", "/connections")
        expect(app.page.get_by_role("heading", name="Connections", level=1)).to_be_visible()
        # The list's own heading says what it holds (it repeated the page's).
        headings = app.page.get_by_role("heading", level=2)
        expect(headings.first).to_have_text("Connections on this server")
        notes_app = app.page.locator(".catalog-app", has_text="Read, add and delete short notes")
        notes_app.get_by_role("button", name="Add Notes").click()
        form = app.page.get_by_role("form", name="Add Notes")
        form.get_by_label("Name").fill("Jotter")
        form.get_by_role("button", name="Add connection").click()
        card = app.page.locator(".connection", has_text="Jotter")
        expect(card.locator(".badge-state-connected")).to_have_text("Connected", timeout=RESTART_MS)
        expect(card).to_contain_text("App: notes")
        expect(card).to_contain_text("not trusted")
        delete = card.locator("tr[data-tool='delete_note']")
        expect(delete).to_contain_text("jotter_delete_note")
        expect(delete.locator(".badge")).to_have_text("consequential")
        listing = card.locator("tr[data-tool='list_notes']")
        expect(listing.locator(".badge")).to_have_text("consequential")  # not trusted yet
        card.get_by_role("button", name="Trust").click()
        # Trust restarts the notes server (a stdio process), which takes its time on a busy
        # machine: the page shows the change once the server answers again.
        expect(card).to_contain_text("· trusted", timeout=RESTART_MS)
        expect(card.locator(".badge-state-connected")).to_have_text("Connected", timeout=RESTART_MS)
        expect(card.locator("tr[data-tool='list_notes'] .badge")).to_have_text(
            "read-only", timeout=RESTART_MS
        )
        card.locator("tr[data-tool='add_note']").get_by_label("Class of add_note").select_option(
            "consequential"
        )
        expect(card.locator("tr[data-tool='add_note'] .badge")).to_have_text(
            "consequential", timeout=RESTART_MS
        )
        app.shoot("connections")

        second_tab.sign_in_as("bob", "/connections")
        seen = second_tab.page.locator(".connection", has_text="Jotter")
        expect(seen).to_contain_text("Your level: not set (its next use asks)")
        expect(seen.get_by_role("button")).to_have_count(0)
        expect(second_tab.page.get_by_role("heading", name="Add from the catalog")).to_have_count(0)
        expect(second_tab.page.get_by_role("link", name="Connections")).to_have_attribute(
            "aria-current", "page"
        )
    finally:
        with demo_server.api("admin") as api:
            for connection in api.get("/connections").json()["data"]:
                if re.fullmatch(r"[0-9a-f]{24}", connection["id"]):
                    api.delete(f"/connections/{connection['id']}")


#: For each tool table's names and class badges: whether it sits on one line.
_WHOLE = """
() => [...document.querySelectorAll('.tool-table code, .tool-table .badge')].map((el) => {
  const size = parseFloat(getComputedStyle(el).fontSize);
  return [el.textContent, el.getClientRects().length === 1
    && el.getBoundingClientRect().height < size * 2];
})
"""


def test_the_tool_tables_keep_names_and_classes_whole(app: App) -> None:
    # `publish_note` cut into "publish_no / te" and "READ- / ONLY" in two lines made the
    # tables hard to read at a laptop's width: each name and class stays on one line.
    app.sign_in_as("admin", "/connections")
    expect(app.page.locator(".tool-table code", has_text="publish_note").first).to_be_visible()
    whole = app.page.evaluate(_WHOLE)
    assert len(whole) > 10
    assert [text for text, one_line in whole if not one_line] == []
