"""Signing in: one click per demo user, a token, the model line, signing out."""

from __future__ import annotations

from playwright.sync_api import expect
from web_pages import SCRIPTED_LINE, App


def test_sign_in_as_alice_by_button_shows_the_model(app: App) -> None:
    app.goto("/")
    expect(app.page.get_by_role("heading", name="Sign in to handrail")).to_be_visible()
    for user in ("alice", "bob", "admin"):
        expect(app.page.get_by_role("button", name=f"Sign in as {user}")).to_be_visible()
    app.shoot("signin")
    app.page.get_by_role("button", name="Sign in as alice").click()
    expect(app.page.locator(".who")).to_contain_text("Signed in as alice")
    expect(app.page.locator(".model-line")).to_have_text(SCRIPTED_LINE)
    # The token lives in localStorage (it lasts across tabs), never in the address bar.
    assert "demo-alice" not in app.page.url
    assert app.page.evaluate("localStorage.getItem('handrail.token')") == "demo-alice"
    app.shoot("chat-empty")


def test_sign_in_with_a_token_and_out(app: App) -> None:
    app.goto("/inbox")
    token = app.page.get_by_label("Token")
    token.fill("not-a-token")
    token.press("Enter")
    expect(app.page.get_by_role("alert")).to_contain_text("does not know that token")
    token.fill("demo-admin")
    app.page.get_by_role("button", name="Sign in", exact=True).click()
    expect(app.page.locator(".who")).to_contain_text("Signed in as admin (admin)")
    expect(app.page.get_by_role("heading", name="Inbox")).to_be_visible()
    app.page.get_by_role("button", name="Sign out").click()
    expect(app.page.get_by_role("heading", name="Sign in to handrail")).to_be_visible()
    assert app.page.evaluate("localStorage.getItem('handrail.token')") is None


def test_phone_width_sign_in_and_chat_fit(phone: App) -> None:
    phone.sign_in_as("alice")
    expect(phone.page.locator(".model-line")).to_have_text(SCRIPTED_LINE)
    width = phone.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"the page scrolls sideways at 360px ({width}px wide)"
    # The top bar's buttons keep to one line (the signed-in line wraps instead).
    for name in ("Sign out", "Notify me"):
        box = phone.page.get_by_role("button", name=name).bounding_box()
        assert box is not None, name
        assert box["height"] <= 40, (name, box)
    phone.shoot("phone-chat-empty")
