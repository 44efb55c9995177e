"""MCP elicitation in the browser: the npm everything server (legacy elicitation inside an open
call) asks for a form during a tool call; the person answers its two consecutive forms in the
web UI and the tool's result names what they sent. A URL request shows the whole URL and the
server's name; nothing opens or fetches it (the browser neither: no request leaves for it), and
allowing it is consent only."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Request, expect
from web_pages import App, Card

from demo_server import DemoServer
from npm_packages import EVERYTHING, installed

FORM_TOOL = "kitchen_trigger-elicitation-request"
URL_TOOL = "kitchen_trigger-url-elicitation"


@pytest.fixture
def everything(demo_server: DemoServer) -> Iterator[str]:
    """The everything server saved as the connection "Kitchen" (alice lets its tools read and
    write without asking), removed afterwards."""
    installed(EVERYTHING)
    body = {
        "app": "custom",
        "name": "Kitchen",
        "kind": "mcp-stdio",
        "mcp": {"command": str(EVERYTHING), "args": ["stdio"]},
        "protocol": "legacy",
        "trusted": True,
    }
    with demo_server.api("admin") as api:
        created = api.post("/connections", json=body)
        assert created.status_code == 201, created.text
        connection = created.json()["data"]
    assert connection["status"]["state"] == "connected", connection["status"]
    with demo_server.api("alice") as api:
        api.put(f"/permissions/{connection['id']}", json={"level": "non-consequential"})
    try:
        yield str(connection["id"])
    finally:
        with demo_server.api("admin") as api:
            api.delete(f"/connections/{connection['id']}")


def pinned(app: App, origin: str) -> Card:
    """The last card of `origin`, pinned by its id (a later card does not take its place)."""
    last = app.card(origin=origin)
    tool_call_id = last.locator.get_attribute("data-tool-call-id")
    return Card(app, app.page.locator(f'article[data-tool-call-id="{tool_call_id}"]'))


def test_a_form_elicitation_from_the_everything_server(app: App, everything: str) -> None:
    app.sign_in_as("alice")
    app.say(f"call {FORM_TOOL} {{}}")
    first = pinned(app, "elicitation")
    expect(first.locator.locator(".card-title")).to_have_text("Kitchen asks (1 of 2)")
    expect(first.locator).to_contain_text(f"Kitchen asks this while {FORM_TOOL} runs")
    expect(first.locator.locator(".badge")).to_have_text("Server asks")
    first.shoot("elicitation-form")
    first.locator.locator(".field").first.locator("input").fill("Ada Lovelace")
    first.locator.get_by_label("String with email format").fill("not an email")
    first.click("Next")
    # The form's own check: the card stays, with the error under its field.
    expect(first.error_for("String with email format")).to_be_visible()
    first.locator.get_by_label("String with email format").fill("ada@example.com")
    first.click("Next")
    first.expect_summary("Ada Lovelace")

    second = app.card(origin="elicitation")
    expect(second.locator.locator(".card-title")).to_have_text("Kitchen asks (2 of 2)")
    second.locator.get_by_label("Titled Single Select Enum", exact=True).select_option(
        label="Wonder Woman"
    )
    second.click("Send")
    second.expect_summary("Wonder Woman")
    reply = app.reply()
    expect(reply).to_contain_text(f"{FORM_TOOL} returned:")
    expect(reply).to_contain_text("Ada Lovelace")
    expect(reply).to_contain_text("hero-3")


def test_a_url_elicitation_is_shown_whole_and_never_opened(app: App, everything: str) -> None:
    url = "https://sign-in.example.invalid/authorize?client=handrail&state=a1b2c3d4e5f6"
    requested: list[str] = []

    def seen(request: Request) -> None:
        if "example.invalid" in request.url:
            requested.append(request.url)

    app.page.on("request", seen)
    app.sign_in_as("alice")
    app.say(f'call {URL_TOOL} {{"url": "{url}", "message": "Sign in to the kitchen."}}')
    card = app.card(origin="elicitation")
    expect(card.locator.locator(".badge")).to_have_text("Open a page")
    expect(card.locator).to_contain_text("Kitchen asks you to open this page:")
    link = card.locator.locator("a.elicitation-url")
    expect(link).to_have_text(url)
    expect(link).to_have_attribute("href", url)
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", re.compile("noopener"))
    card.shoot("elicitation-url")
    card.click("Allow")
    card.expect_summary("Allow")
    expect(app.reply()).to_contain_text(f"{URL_TOOL} returned:")
    assert requested == []
