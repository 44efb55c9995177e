"""The watch names the real gate behind each card: a permission, a confirmation with its live
countdown, a clarify (each read from the conversation's view, not guessed from the card); and
a confirmed call that then failed says so after the tap."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Locator, expect
from web_pages import App, command

from demo_server import TOKENS, DemoServer


def test_the_watch_names_permission_confirmation_and_clarify_gates(
    phone: App, demo_server: DemoServer
) -> None:
    demo_server.reset_policy("bob")
    permission = demo_server.ask("bob", command("call delete_note", {"title": "Gate draft"}))
    assert permission["pendingAsk"]["kind"] == "choice"
    clarify = demo_server.ask("bob", "Create a database")
    assert clarify["pendingAsk"]["kind"] == "form"
    with demo_server.api("bob") as api:
        api.put("/permissions/booking", json={"level": "non-consequential"}).raise_for_status()
    booking = {"date": "2027-03-15", "time": "20:00", "notes": "Watch gate"}
    confirmation = demo_server.ask("bob", command("call book_slot", booking))
    assert confirmation["pendingAsk"]["kind"] == "confirm"

    phone.sign_in_as("bob", "/watch")
    cards = phone.page.locator(".simple-card")

    def gate_of(text: str) -> Locator:
        return cards.filter(has_text=text).last.locator(".watch-gate")

    expect(gate_of("Allow Notes to use its tools?")).to_contain_text("Permission")
    expect(gate_of("Create database")).to_contain_text("Clarify")
    confirm_gate = gate_of("Watch gate")
    expect(confirm_gate).to_contain_text("Confirmation")
    expect(confirm_gate.locator(".watch-countdown")).to_have_text(
        re.compile(r"· expires in \d+:\d\d")
    )
    phone.shoot("watch-gates")
    # Leave nothing waiting for the other tests of the session.
    with demo_server.api("bob") as api:
        for asked in (permission, clarify, confirmation):
            cancel = {"toolCallId": asked["pendingAsk"]["toolCallId"], "action": "cancel"}
            api.post(
                f"/histories/{asked['historyId']}/turn", json={"askResponse": cancel}
            ).raise_for_status()


def test_a_confirmed_call_that_then_failed_says_so_on_the_watch(
    phone: App, demo_server: DemoServer
) -> None:
    demo_server.reset_policy("bob")
    with demo_server.api("bob") as api:
        api.put("/permissions/booking", json={"level": "non-consequential"}).raise_for_status()
    booking = {"date": "2027-03-16", "time": "20:00", "notes": "Refused on the watch"}
    asked = demo_server.ask("bob", command("call book_slot", booking))
    assert asked["pendingAsk"]["kind"] == "confirm"
    fault = {"status": 400, "body": {"error": "The kitchen is closed.", "code": "CLOSED"}}
    queued = httpx.post(
        demo_server.url + "/demo/booking/control",
        json={"path": "/bookings", "next": [fault]},
        headers={"Authorization": f"Bearer {TOKENS['admin']}"},
        timeout=10,
    )
    assert queued.status_code == 200, queued.text
    phone.sign_in_as("bob", "/watch")
    card = phone.page.locator(".simple-card").filter(has_text="Refused on the watch")
    expect(card.locator(".watch-gate")).to_contain_text("Confirmation")
    card.get_by_role("button", name="Confirm").click()
    status = phone.page.get_by_role("status").filter(has_text="sent")
    expect(status).to_contain_text("“Confirm” was sent, but the call failed: ")
    expect(status).to_contain_text("400")


def test_on_a_watch_sized_screen_the_asks_come_first(wrist: App, demo_server: DemoServer) -> None:
    """At a watch's width the top bar is one line (the brand and Sign out), the page does not
    scroll sideways, and the newest ask's card starts on the first screen; a tap answers it."""
    asked = demo_server.ask(
        "bob",
        command(
            "ask_choice",
            {
                "title": "Wrist check",
                "select": "one",
                "prompt": "Which one?",
                "options": [{"id": "a", "label": "First"}, {"id": "b", "label": "Second"}],
            },
        ),
    )
    assert asked["pendingAsk"]["kind"] == "choice"
    wrist.sign_in_as("bob", "/watch")
    page = wrist.page
    card = page.locator(".simple-card").filter(has_text="Wrist check")
    expect(card).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 198
    expect(page.locator(".nav")).to_be_hidden()
    expect(page.locator(".who .user")).to_be_hidden()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.locator(".model-line")).to_be_visible()
    top = page.locator(".simple-card").first.bounding_box()
    assert top is not None
    assert top["y"] < 242, top
    brand = page.locator(".brand").bounding_box()
    sign_out = page.get_by_role("button", name="Sign out").bounding_box()
    assert brand is not None
    assert sign_out is not None
    assert abs(brand["y"] - sign_out["y"]) < brand["height"], (brand, sign_out)
    wrist.shoot("watch-wrist")
    card.get_by_role("button", name="First").click()
    expect(page.get_by_role("status")).to_contain_text("“First” sent.")
    assert page.evaluate("document.documentElement.scrollWidth") <= 198
