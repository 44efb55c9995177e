"""Page objects for the browser tests: the demo server in a subprocess, and `App`, one browser
tab of the web UI with the steps a person takes (sign in, start a prompt, answer a card).

A new per-kind test needs only these steps: start from a prompt (`App.start` for a playbook
prompt, `App.say` for a scripted-model command such as ``ask_form {...}``), find the card
(`App.card`), act in it with Playwright locators, and check the reply (`App.reply`) and the
summary (`Card.expect_summary`). `App.shoot` saves a screenshot under
``test-results/screenshots/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from playwright.sync_api import Browser, ConsoleMessage, FloatRect, Locator, Page, Route, expect

ROOT: Final = Path(__file__).resolve().parents[2]
SCREENSHOTS: Final = ROOT / "test-results" / "screenshots"
CHROMIUM: Final = "/usr/bin/chromium"
#: Debian's Chromium, headless, as a sandboxed CI machine can run it; never a downloaded build.
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCRIPTED_LINE: Final = "Model: scripted — a deterministic script, not AI"
#: How long a step may wait for the UI (ms): the scripted model answers at once.
TIMEOUT_MS: Final = 10_000


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def command(tool: str, value: dict[str, Any]) -> str:
    """A scripted-model command line, such as ``ask_form {...}``."""
    return f"{tool} {compact(value)}"


@dataclass
class Card:
    """One ask card in the transcript."""

    app: App
    locator: Locator

    def button(self, name: str, *, exact: bool = True) -> Locator:
        return self.locator.get_by_role("button", name=name, exact=exact)

    def click(self, name: str) -> None:
        self.button(name).click()

    def expect_pending(self) -> None:
        expect(self.locator).to_have_attribute("data-status", "pending")

    def expect_summary(self, text: str, status: str = "answered") -> None:
        """The controls are gone and the summary says `text`."""
        expect(self.locator).to_have_attribute("data-status", status)
        expect(self.locator.locator(".card-summary")).to_contain_text(text)
        expect(self.locator.locator("form, button, input")).to_have_count(0)

    def error_for(self, label: str) -> Locator:
        """The error shown under the field labelled `label`."""
        field_ = self.locator.locator(".field, .field-group").filter(has_text=label).first
        return field_.locator(".field-error")

    def shoot(self, name: str) -> None:
        self.app.shoot(name, self.locator)


@dataclass
class App:
    """One browser tab of the web UI."""

    page: Page
    base_url: str
    shots: list[Path] = field(default_factory=list)

    def goto(self, path: str = "/") -> None:
        self.page.goto(self.base_url + path)

    def sign_in_as(self, user: str, path: str = "/") -> None:
        self.goto(path)
        self.page.get_by_role("button", name=f"Sign in as {user}").click()
        expect(self.page.locator(".who")).to_contain_text(f"Signed in as {user}")

    def start(self, prompt: str) -> None:
        """Start a new conversation with a playbook prompt, by its button on the empty chat."""
        self.goto("/")
        self.page.locator(".empty-state").get_by_role("button", name=prompt).click()
        expect(self.page.locator(".msg-user").last).to_have_text(f"You: {prompt}")

    def book_first_free_time(self) -> tuple[Card, str]:
        """The demo's "Book a table": read/write allowed, the first free time chosen (other
        tests of the session book times of the same date, so a fixed one may be taken by now).
        The confirmation card, and the time chosen ("19:30")."""
        self.start("Book a table")
        permission = self.card(origin="permission")
        permission.locator.get_by_role("radio", name="Allow read/write").check()
        permission.click("Save and continue")
        selection = self.card(origin="selection")
        first_free = selection.locator.get_by_role("radio").first
        expect(first_free).to_be_visible()
        first_free.check()
        label = str(first_free.evaluate("box => box.labels[0].textContent"))
        chosen = re.search(r"\d\d:\d\d", label)
        assert chosen, label
        selection.click("Submit")
        return self.card(origin="confirmation"), chosen.group(0)

    def say(self, text: str) -> None:
        """Send a message in the composer (a new conversation unless one is open)."""
        composer = self.page.get_by_label("Message", exact=True)
        composer.fill(text)
        composer.press("Enter")

    def card(self, *, kind: str | None = None, origin: str | None = None) -> Card:
        """The last ask card (of that kind or origin)."""
        selector = "article.card"
        if kind is not None:
            selector += f'[data-kind="{kind}"]'
        if origin is not None:
            selector += f'[data-origin="{origin}"]'
        locator = self.page.locator(selector).last
        expect(locator).to_be_visible()
        return Card(self, locator)

    def reply(self) -> Locator:
        """The agent's last message."""
        return self.page.locator(".msg-agent").last

    def history_id(self) -> str:
        """The id of the conversation the tab shows (from the address bar)."""
        expect(self.page).to_have_url(re.compile(r"/c/[0-9a-f]{24}$"))
        return self.page.url.rsplit("/c/", 1)[1]

    def shoot(self, name: str, locator: Locator | None = None) -> Path:
        """Save a screenshot of the page (or of `locator`) as ``<name>.png``."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        if locator is not None:
            # A clip of the full page, so a card taller than the window comes out whole.
            locator.scroll_into_view_if_needed()
            box = locator.bounding_box()
            assert box is not None, f"{name}: the element is not visible"
            scroll_x, scroll_y = self.page.evaluate("[window.scrollX, window.scrollY]")
            margin = 8
            clip: FloatRect = {
                "x": max(0, box["x"] + scroll_x - margin),
                "y": max(0, box["y"] + scroll_y - margin),
                "width": box["width"] + 2 * margin,
                "height": box["height"] + 2 * margin,
            }
            self.page.screenshot(path=str(path), full_page=True, clip=clip, animations="disabled")
        else:
            self.page.screenshot(path=str(path), full_page=True, animations="disabled")
        self.shots.append(path)
        return path

    def fake_history(self, history: dict[str, Any]) -> None:
        """Answer ``GET /api/histories/<id>`` with `history`, for an ask the demo cannot make
        yet (a confirmation). Everything else goes to the server."""

        def fulfill(route: Route) -> None:
            if route.request.method != "GET":
                route.continue_()
                return
            route.fulfill(
                status=200,
                content_type="application/json",
                body=json.dumps({"data": history, "requestId": "test"}),
            )

        self.page.route(f"**/api/histories/{history['id']}", fulfill)


@contextmanager
def open_tab(
    browser: Browser,
    base_url: str,
    width: int,
    height: int,
    *,
    color_scheme: Literal["light", "dark"] | None = None,
    errors: list[str] | None = None,
) -> Iterator[App]:
    """A fresh tab (its own browser context: no sign-in yet) of the web UI at `base_url`, of
    `width` x `height`. The errors its pages log go to `errors` when given, for the test to
    check; else the test fails when there was one."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, locale="en-US", color_scheme=color_scheme
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    logged: list[str] = [] if errors is None else errors
    page.on("pageerror", lambda error: logged.append(str(error)))

    def on_console(message: ConsoleMessage) -> None:
        # An API error answer (400, 401, 409) is logged by the browser as a failed resource;
        # anything else at error level (a script error, a Content-Security-Policy violation)
        # is an error of the page.
        if message.type == "error" and "Failed to load resource" not in message.text:
            logged.append(message.text)

    page.on("console", on_console)
    try:
        yield App(page=page, base_url=base_url)
    finally:
        context.close()
    assert errors is not None or not logged, f"the page logged errors: {logged}"
