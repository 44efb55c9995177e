"""Signing in to an MCP server that requires authorization, in the browser: an admin adds an
HTTP connection whose server asks for OAuth, the Connections page shows a "Sign in to <name>"
link that opens a new tab, the authorization server (run in the test on loopback) sends that
tab back to handrail's callback, the tab says so, and the page shows the connection connected.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect
from web_pages import App

from demo_server import DemoServer, free_port

AUTH_SERVER = Path(__file__).resolve().parents[1] / "connections" / "mcp_auth_server.py"


@pytest.fixture
def auth_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(AUTH_SERVER), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/test/counts", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


def test_an_admin_signs_in_to_a_connection_in_a_new_tab(
    app: App, demo_server: DemoServer, auth_server: str
) -> None:
    with demo_server.api("admin") as api:
        body = {"app": "custom", "name": "Vault", "kind": "mcp-http", "mcp": {"url": auth_server}}
        added = api.post("/connections", json=body).json()["data"]
    try:
        assert added["status"]["signIn"] == "waiting", added["status"]
        app.sign_in_as("admin", "/connections")
        card = app.page.locator(".connection", has_text="Vault")
        expect(card.locator(".badge-state-starting")).to_have_text("Starting")
        expect(card).to_contain_text("Waiting for admin to sign in to Vault in their browser.")
        link = card.get_by_role("link", name="Sign in to Vault")
        expect(link).to_have_attribute("target", "_blank")
        with app.page.context.expect_page() as opened:
            link.click()
        tab = opened.value
        expect(tab.get_by_role("heading", name="Signed in to Vault")).to_be_visible()
        expect(tab.get_by_text("You can close this tab.")).to_be_visible()
        tab.close()
        expect(card.locator(".badge-state-connected")).to_have_text("Connected")
        expect(card.locator("tr[data-tool='whoami']")).to_contain_text("vault_whoami")
        expect(card.get_by_role("link", name="Sign in to Vault")).to_have_count(0)
        app.shoot("connection-signed-in")
    finally:
        with demo_server.api("admin") as api:
            api.delete(f"/connections/{added['id']}")
