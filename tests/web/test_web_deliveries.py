"""The delivery log page (/deliveries, on GET /api/deliveries): an admin sees each webhook of an
ask, delivered or waiting to be retried, with its attempts, status, next retry and the log of
its attempts; the header links to it for admins only.

Webhooks come from the administrator's configuration file, so this module runs
``handrail serve`` with one of its own, posting to two receivers on loopback in the test: one
that takes the event (204) and one that is down (503)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from web_pages import SCREENSHOTS, TIMEOUT_MS, command

from demo_server import free_port

TOKENS = {"alice": "alice-token-0123456789", "admin": "admin-token-0123456789"}
CONFIRM = {"title": "Ship it", "prompt": "Ship the release?", "confirmLabel": "Ship"}


class _Receiver(BaseHTTPRequestHandler):
    posts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        _Receiver.posts.append(self.path)
        self.send_response(204 if self.path == "/ok" else 503)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass
class Served:
    url: str
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("deliveries")
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hooks = f"http://127.0.0.1:{receiver.server_address[1]}"
    config = folder / "handrail.yaml"
    config.write_text(
        "database_url: sqlite:///state.db\n"
        "model: scripted\n"
        "users:\n"
        "  - {id: alice, token_env: ALICE_TOKEN}\n"
        "  - {id: admin, token_env: ADMIN_TOKEN, admin: true}\n"
        "agents:\n  - {name: helper, instructions: Be brief.}\n"
        "webhooks:\n"
        f"  - {{name: ops, url: '{hooks}/ok', secret_env: HOOK_SECRET, events: [ask.created]}}\n"
        f"  - {{name: pager, url: '{hooks}/down', secret_env: HOOK_SECRET,"
        " events: [ask.created], attempts: 3, backoff: 900}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env.update(ALICE_TOKEN=TOKENS["alice"], ADMIN_TOKEN=TOKENS["admin"], HOOK_SECRET="s" * 32)
    port = free_port()
    log = folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "handrail.cli", "serve", "--config", str(config)),
                *("--port", str(port), "--log-level", "warning"),
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if process.poll() is not None:
                raise RuntimeError(f"handrail serve exited:\n{log.read_text()}")
            try:
                httpx.get(url + "/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield Served(url=url, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        receiver.shutdown()
        receiver.server_close()


def _api(served: Served, user: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"}
    return httpx.Client(base_url=served.url + "/api", headers=headers, timeout=10)


def _sign_in(page: Page, served: Served, user: str, path: str) -> None:
    page.goto(served.url + path)
    page.get_by_label("Token").fill(TOKENS[user])
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".who")).to_contain_text(f"Signed in as {user}")


def _tried_once(served: Served) -> list[dict[str, Any]]:
    """The two deliveries of the ask, once each was tried (the outbox sends at once)."""
    with _api(served, "admin") as api:
        for _ in range(100):
            deliveries = api.get("/deliveries").raise_for_status().json()["data"]
            if len(deliveries) == 2 and all(d["attempts"] == 1 for d in deliveries):
                return list(deliveries)
            time.sleep(0.1)
    raise AssertionError(f"the deliveries were not tried: {deliveries}")


def test_an_admin_reads_the_delivery_log(browser: Browser, served: Served) -> None:
    with _api(served, "alice") as api:
        history = api.post("/histories", json={}).raise_for_status().json()["data"]
        prompt = command("ask_confirm", CONFIRM)
        api.post(f"/histories/{history['id']}/turn", json={"prompt": prompt}).raise_for_status()
    deliveries = {d["target"]: d for d in _tried_once(served)}
    assert deliveries["ops"]["status"] == "delivered"
    assert deliveries["pager"]["status"] == "pending"
    assert sorted(_Receiver.posts) == ["/down", "/ok"]

    context = browser.new_context(viewport={"width": 1200, "height": 800}, locale="en-US")
    context.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    try:
        page = context.new_page()
        _sign_in(page, served, "admin", "/")
        page.get_by_role("link", name="Deliveries").click()
        expect(page).to_have_url(served.url + "/deliveries")
        expect(page.get_by_role("heading", name="Deliveries", level=1)).to_be_visible()
        expect(page.locator(".lead")).to_contain_text("As an admin you see everyone's.")

        ops = page.locator('tr.delivery[data-target="ops"]')
        expect(ops.locator('td[data-label="Event"]')).to_contain_text("Ask created")
        expect(ops.locator('td[data-label="Event"]')).to_contain_text(deliveries["ops"]["eventId"])
        expect(ops.locator('td[data-label="Where"]')).to_have_text("Webhook “ops”")
        expect(ops.locator('td[data-label="User"]')).to_have_text("alice")
        expect(ops.locator('td[data-label="Status"]')).to_have_text("Delivered")
        expect(ops.locator('td[data-label="Attempts"]')).to_have_text("1")
        expect(ops.locator('td[data-label="Next retry"]')).to_have_text("—")

        pager = page.locator('tr.delivery[data-target="pager"]')
        expect(pager.locator('td[data-label="Status"]')).to_have_text("Retrying")
        expect(pager.locator('td[data-label="Attempts"]')).to_have_text("1")
        # The second attempt waits the backoff: 900 s, and up to 10% of jitter.
        expect(pager.locator('td[data-label="Next retry"]')).to_have_text(
            re.compile(r"^in 1[5-7] min$")
        )
        expect(pager.locator('td[data-label="Last error"]')).to_have_text(
            "The receiver answered 503."
        )
        pager.get_by_role("button", name="Attempts").click()
        log = page.locator("tr.delivery-log:not([hidden])")
        expect(log.locator(".delivery-attempt")).to_have_count(1)
        expect(log.locator(".delivery-attempt")).to_contain_text(
            "Attempt 1: The receiver answered 503."
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "deliveries.png"), full_page=True)

        # A user who is not an admin has no link to it; the page shows only their own.
        page.get_by_role("button", name="Sign out").click()
        _sign_in(page, served, "alice", "/")
        expect(page.get_by_role("navigation", name="Main")).to_be_visible()
        expect(page.get_by_role("link", name="Deliveries")).to_have_count(0)
        page.goto(served.url + "/deliveries")
        expect(page.locator(".lead")).to_contain_text("You see the deliveries of your own asks.")
        expect(page.locator("tr.delivery")).to_have_count(2)
        expect(page.locator('td[data-label="User"]')).to_have_count(0)
    finally:
        context.close()
    assert not errors, errors
