"""Deny with a note: an approval and a confirmation denied from their cards with a short reason
(sent as ``{action: "cancel", reason}``); the agent reads the reason, nothing runs or is sent,
and the answered card shows the note, also after a reload."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect
from web_pages import App, Card

from demo_server import TOKENS, DemoServer


def _booking_posts(demo_server: DemoServer) -> int:
    stats = httpx.get(
        demo_server.url + "/demo/booking/stats",
        headers={"Authorization": f"Bearer {TOKENS['admin']}"},
        timeout=10,
    ).json()["requests"]
    return sum(1 for r in stats if r["method"] == "POST" and r["path"] == "/bookings")


def _deny_with_note(card: Card, note: str) -> None:
    card.locator.get_by_text("Deny with a note").click()
    card.locator.get_by_label("Tell the agent why").fill(note)
    card.click("Deny with this note")


def test_an_approval_denied_with_a_note(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    app.sign_in_as("alice")
    app.start("Delete the old draft")
    permission = app.card(origin="permission")
    permission.locator.get_by_role("radio", name="Allow read/write").check()
    permission.click("Save and continue")
    approval = app.card(origin="approval")
    # An empty note is not sent.
    approval.locator.get_by_text("Deny with a note").click()
    approval.click("Deny with this note")
    expect(approval.locator.get_by_text("Write a note first")).to_be_visible()
    approval.expect_pending()
    note = "Keep it, I still need that draft"
    approval.locator.get_by_label("Tell the agent why").fill(note)
    approval.shoot("approval-deny-note")
    approval.click("Deny with this note")
    expect(app.reply()).to_contain_text("delete_note failed:")
    expect(app.reply()).to_contain_text(note)
    approval.expect_summary(f"Denied with a note: “{note}”", status="cancelled")
    approval.shoot("approval-denied-with-note")
    app.page.reload()
    app.card(origin="approval").expect_summary(f"Denied with a note: “{note}”", status="cancelled")


def test_a_confirmation_denied_with_a_note_sends_nothing(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    posts_before = _booking_posts(demo_server)
    app.sign_in_as("alice")
    confirmation, chosen = app.book_first_free_time()
    expect(confirmation.locator.locator(".card-prompt")).to_contain_text("Book a table on ")
    expect(confirmation.locator.locator(".card-prompt")).to_contain_text(f"at {chosen}")
    _deny_with_note(confirmation, "Make it 20:00 instead")
    expect(app.reply()).to_contain_text("book_slot failed:")
    expect(app.reply()).to_contain_text("Make it 20:00 instead")
    confirmation.expect_summary("Denied with a note: “Make it 20:00 instead”", status="cancelled")
    assert _booking_posts(demo_server) == posts_before
