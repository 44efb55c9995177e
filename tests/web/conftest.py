"""Browser tests of the web UI: the demo server (``handrail demo`` in a subprocess, on a random
port of 127.0.0.1, with a fresh SQLite folder) once per session, Debian's Chromium once per
module, and a fresh browser context per test (so sessionStorage, and the sign-in, start
empty).

Chromium is Debian's ``/usr/bin/chromium`` (``scripts/ensure-chromium.sh`` installs it),
launched with Playwright's ``executable_path``; ``playwright install`` is never run. Without
it, these tests are skipped with the reason.

Page objects and steps are in ``web_pages.py``; screenshots go to ``test-results/screenshots``.

The server lives for the whole session, so tests keep out of each other's way by user: the
card tests speak as ``alice``, the inbox, reload and keyboard tests as ``bob``, and the /watch
test as ``admin`` (it counts every pending ask of its user).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, expect, sync_playwright
from web_pages import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, App, open_tab

from demo_server import DemoServer

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    with DemoServer.running(tmp_path_factory.mktemp("demo")) as server:
        yield server


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """A demo server of the module's own (its users start with nothing), with uvicorn's access
    log in its `log` (``--log-level info``): for tests that count what the server was asked."""
    folder = tmp_path_factory.mktemp("own-demo")
    with DemoServer.running(folder, args_extra=["--log-level", "info"]) as server:
        yield server


# Playwright's sync API keeps its event loop marked as running in this thread while it is
# open, and pytest-asyncio cannot run an async test then. So Playwright and the browser live
# per module, and async tests (test_web_server.py) stay in modules that use no browser.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure-chromium.sh", pytrace=False)
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


def _open(browser: Browser, demo_server: DemoServer, width: int, height: int) -> Iterator[App]:
    with open_tab(browser, demo_server.url, width, height) as app:
        yield app


@pytest.fixture
def app(browser: Browser, demo_server: DemoServer) -> Iterator[App]:
    """A fresh tab at a laptop's size, not signed in."""
    yield from _open(browser, demo_server, 1100, 900)


@pytest.fixture
def phone(browser: Browser, demo_server: DemoServer) -> Iterator[App]:
    """A fresh tab at a phone's width (360px), not signed in."""
    yield from _open(browser, demo_server, 360, 740)


@pytest.fixture
def wrist(browser: Browser, demo_server: DemoServer) -> Iterator[App]:
    """A fresh tab at a watch's size (198 x 242, a 45 mm watch's screen), not signed in."""
    yield from _open(browser, demo_server, 198, 242)


@pytest.fixture
def second_tab(browser: Browser, demo_server: DemoServer) -> Iterator[App]:
    """Another fresh tab (its own sessionStorage), for answering from two places."""
    yield from _open(browser, demo_server, 1100, 900)
