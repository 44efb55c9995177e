"""What a person reads when something goes wrong, or when a call did not run: never a code the
server uses (user_denied, user_sent_message), a JSON path (settings.baseUrl), or a lost
message. A message the server never took goes back in the message box; a reason code reads in
words in the transcript, on the watch and in the audit log; a connection's field errors show
under their fields by label; Deny selected says which answers were not sent and keeps them
selected; a reload after an answer elsewhere leaves the focus on its notice."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Route, expect
from web_pages import App, command

from demo_server import DemoServer

#: The problem JSON of a 503 the server gives when its database is gone for a moment.
UNAVAILABLE = json.dumps(
    {
        "status": 503,
        "title": "Database unavailable",
        "detail": "The server lost its connection to the database and opens a new one. "
        "Send the request again in a moment.",
        "code": "database-unavailable",
    }
)


def unavailable(route: Route) -> None:
    route.fulfill(status=503, content_type="application/problem+json", body=UNAVAILABLE)


def test_a_message_the_server_never_took_goes_back_in_the_box(app: App) -> None:
    app.sign_in_as("alice")
    composer = app.page.get_by_label("Message", exact=True)
    app.page.route("**/api/prompt", lambda route: route.abort())
    app.say("Lunch at noon?")
    sent = app.page.locator(".msg-user").last
    expect(sent).to_contain_text("Not sent")
    error = app.page.locator(".msg-error").last
    expect(error).to_have_text(
        "Your message was not sent: The server cannot be reached: Check that handrail is still "
        "running, then try again. It is back in the message box, to send again."
    )
    expect(composer).to_have_value("Lunch at noon?")
    expect(composer).to_be_focused()
    app.shoot("composer-not-sent")

    app.page.unroute("**/api/prompt")
    app.page.route("**/api/prompt", unavailable)
    composer.press("Enter")
    expect(app.page.locator(".msg-error").last).to_contain_text(
        "Your message was not sent: Database unavailable: The server lost its connection"
    )
    expect(composer).to_have_value("Lunch at noon?")

    app.page.unroute("**/api/prompt")
    composer.press("Enter")
    expect(app.reply()).to_contain_text("You said: Lunch at noon?")
    expect(composer).to_have_value("")


def test_a_call_that_did_not_run_says_why_in_words(
    app: App, phone: App, demo_server: DemoServer
) -> None:
    demo_server.reset_policy("bob")
    with demo_server.api("bob") as api:
        api.put("/permissions/local:notes", json={"level": "non-consequential"}).raise_for_status()
    # Denied in the chat: the call's line says so in words.
    app.sign_in_as("bob")
    app.say(command("call delete_note", {"title": "Groceries"}))
    app.card(origin="approval").click("Keep it")
    line = app.page.locator("details.msg.tool").last
    expect(line).to_contain_text("Did not run (you denied it).")
    expect(line).not_to_contain_text("user_denied")

    # Cancelled by a new message: the audit log says what happened, never the code.
    app.say(command("ask_confirm", {"title": "Lights off?", "prompt": "Turn them off?"}))
    app.card(kind="confirm").expect_pending()
    app.say("Never mind")
    expect(app.reply()).to_contain_text("You said: Never mind")
    app.goto("/audit")
    cancelled = app.page.locator("tr", has_text="Cancelled").first
    expect(cancelled).to_contain_text("a new message was sent")
    expect(app.page.locator("main")).not_to_contain_text("user_sent_message")
    expect(app.page.locator("main")).not_to_contain_text("user_denied")
    app.shoot("audit-reasons-in-words")

    # On the watch: the tap's status line.
    demo_server.ask("bob", command("call delete_note", {"title": "Old receipts"}))
    phone.sign_in_as("bob", "/watch")
    card = phone.page.locator(".simple-card").filter(has_text="Old receipts")
    card.get_by_role("button", name="Keep it").click()
    status = phone.page.get_by_role("status").filter(has_text="sent")
    expect(status).to_contain_text("“Keep it” sent: the call did not run (you denied it).")


def test_a_connections_field_error_shows_under_its_field(app: App, demo_server: DemoServer) -> None:
    app.sign_in_as("admin", "/connections")
    booking = app.page.locator(".catalog-app", has_text="Find free table slots")
    # The kind of connection in words, not its code (actions, mcp-stdio).
    expect(booking.get_by_role("heading")).to_have_text("Example booking · HTTP actions")
    booking.get_by_role("button", name="Add Example booking").click()
    form = app.page.get_by_role("form", name="Add Example booking")
    form.get_by_label("Name").fill("Tables")
    base_url = form.get_by_label("Base URL")
    base_url.fill("ftp://example.com/booking")
    form.get_by_role("button", name="Add connection").click()
    expect(form.get_by_role("alert")).to_contain_text(
        "Example booking was not added: a field needs a change (see below)."
    )
    expect(base_url).to_have_attribute("aria-invalid", "true")
    expect(base_url).to_have_accessible_description(
        re.compile(r"Base URL: must be an http\(s\) URL\.$")
    )
    expect(base_url).to_be_focused()
    expect(form).not_to_contain_text("settings.")
    expect(form).not_to_contain_text("See fields")
    app.shoot("connection-field-error")

    form.get_by_role("button", name="Cancel").click()

    # A name whose tools clash with a saved connection's: said under Name, with no id or repr.
    with demo_server.api("admin") as api:
        saved = api.post("/connections", json={"app": "booking", "name": "Tables"})
        saved_id = saved.raise_for_status().json()["data"]["id"]
    try:
        booking.get_by_role("button", name="Add Example booking").click()
        form = app.page.get_by_role("form", name="Add Example booking")
        name = form.get_by_label("Name")
        name.fill("Tables")
        form.get_by_role("button", name="Add connection").click()
        expect(name).to_have_accessible_description(
            re.compile("Name: its tools would clash with those of the connection “Tables”\\.$")
        )
        expect(name).to_be_focused()
        form.get_by_role("button", name="Cancel").click()
    finally:
        with demo_server.api("admin") as api:
            api.delete(f"/connections/{saved_id}").raise_for_status()


def test_deny_selected_keeps_what_was_not_sent(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("bob")
    with demo_server.api("bob") as api:
        api.put("/permissions/local:notes", json={"level": "non-consequential"}).raise_for_status()
    demo_server.ask("bob", command("call delete_note", {"title": "Old minutes"}))
    app.sign_in_as("bob", "/inbox")
    box = app.page.get_by_role("checkbox", name="Select “Delete a note”").first
    box.check()
    app.page.route("**/api/histories/*/turn", unavailable)
    app.page.get_by_role("button", name="Deny selected").click()
    said = app.page.locator(".inbox-said")
    expect(said).to_have_text(
        "Denied 0 of 1. One was not sent (Database unavailable: The server lost its connection "
        "to the database and opens a new one. Send the request again in a moment.); it stays "
        "selected: press Deny selected again."
    )
    expect(said).to_be_focused()
    expect(box).to_be_checked()
    app.page.unroute("**/api/histories/*/turn")
    app.page.get_by_role("button", name="Deny selected").click()
    expect(said).to_have_text("Denied 1: that call does not run.")


def test_an_ask_answered_elsewhere_leaves_the_focus_on_the_notice(
    app: App, second_tab: App
) -> None:
    # The first tab hears no events, so its card is still open when it answers.
    app.page.route("**/api/events*", lambda route: route.abort())
    app.sign_in_as("bob")
    app.say(command("ask_confirm", {"title": "Water the plants?", "prompt": "Now?"}))
    card = app.card(kind="confirm")
    history = app.history_id()
    second_tab.sign_in_as("bob", f"/c/{history}")
    second_tab.card(kind="confirm").click("Confirm")
    second_tab.card(kind="confirm").expect_summary("Confirmed")
    card.click("Confirm")
    notice = app.page.locator(".transcript-notice")
    expect(notice).to_contain_text("That ask was already answered elsewhere")
    expect(notice).to_be_focused()
    app.card(kind="confirm").expect_summary("Confirmed")
