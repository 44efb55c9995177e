"""A confirmed call that then failed shows as failed, never as a success: the booking API
refuses the confirmed booking (a queued 400 fault of the demo's booking API), and the chat's
entry of the call reads "Failed", while the answered confirmation keeps showing what was
confirmed (its preview)."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect
from web_pages import App

from demo_server import TOKENS, DemoServer


def _queue_refusal(demo_server: DemoServer) -> None:
    """The booking API's next POST /bookings answers 400 (a client error: never retried)."""
    fault = {"status": 400, "body": {"error": "The kitchen is closed.", "code": "CLOSED"}}
    response = httpx.post(
        demo_server.url + "/demo/booking/control",
        json={"path": "/bookings", "next": [fault]},
        headers={"Authorization": f"Bearer {TOKENS['admin']}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.json()["queued"]["/bookings"] == 1


def test_a_confirmed_booking_the_api_refused_shows_as_failed(
    app: App, demo_server: DemoServer
) -> None:
    demo_server.reset_policy("alice")
    app.sign_in_as("alice")
    confirmation, chosen = app.book_first_free_time()
    expect(confirmation.locator.locator("table.preview")).to_contain_text(chosen)
    _queue_refusal(demo_server)
    confirmation.click("Confirm")
    expect(app.reply()).to_contain_text("book_slot failed:")
    expect(app.reply()).to_contain_text('"status":"error"')
    # The call's own entry says it failed, never that it returned.
    entry = app.page.locator("details.msg.tool").last
    expect(entry).to_have_class(re.compile(r"\btool-error\b"))
    expect(entry).to_contain_text("Failed")
    expect(entry).not_to_contain_text("Returned")
    # The answered confirmation still shows what was confirmed.
    confirmation.expect_summary("Confirmed: Confirm")
    expect(confirmation.locator.locator("table.preview")).to_contain_text(chosen)
