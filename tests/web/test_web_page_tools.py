"""Page tools in Chromium: the notes page of tool-safety-classes.md (byte for byte, with
``webmcp.js`` loaded before it) and the ``<handrail-chat>`` element beside it at
``/demo/notes-page``; the scripted model lists, adds and deletes notes in the page, through the
site-permission question and the approvals of consequential calls. Then the element embedded in
a page of another origin (another loopback port, allowed by ``HANDRAIL_ALLOWED_ORIGINS``), and
a page of an origin not on the list, which the browser refuses.

The demo server here is this module's own (``handrail demo`` in a subprocess with an allowed
origin); the host pages are served by a plain HTTP server on other ports of 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect
from web_pages import open_tab

from demo_server import TOKENS, DemoServer, free_port
from handrail.demo.notes_page import NOTES_PAGE

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "tool-safety-classes.md"


@dataclass
class HostPages:
    """A plain static server of host pages on its own loopback port."""

    url: str
    folder: Path


def _serve(folder: Path, port: int) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def host_ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, host_ports: tuple[int, int]
) -> Iterator[DemoServer]:
    allowed = f"http://127.0.0.1:{host_ports[0]}"
    env = {"HANDRAIL_ALLOWED_ORIGINS": allowed, "HANDRAIL_PAGE_TOOL_TIMEOUT": "60"}
    with DemoServer.running(tmp_path_factory.mktemp("page-demo"), env_extra=env) as running:
        yield running


HOST_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Host app</title>
  <script src="{server}/static/webmcp.js"></script>
</head>
<body>
  <h1>Host app</h1>
  <p id="runs">0</p>
  <script>
    const registry = navigator.modelContext;
    registry.registerTool({{
      name: "whoami",
      description: "Say which page this is.",
      inputSchema: {{ type: "object", properties: {{}} }},
      annotations: {{ readOnlyHint: true }},
      execute: async () => ({{
        content: [{{ type: "text", text: "the host page at " + location.origin }}]
      }})
    }});
    registry.registerTool({{
      name: "explode",
      description: "A tool whose execute throws.",
      annotations: {{ readOnlyHint: true }},
      execute: async () => {{ throw new Error("the page's database is gone"); }}
    }});
    registry.registerTool({{
      name: "slow_count",
      description: "Counts its runs, and finishes when the page says so.",
      inputSchema: {{
        type: "object", properties: {{ label: {{ type: "string" }} }}, required: ["label"]
      }},
      annotations: {{ readOnlyHint: true }},
      execute: async ({{ label }}) => {{
        const runs = Number(localStorage.getItem("runs") || 0) + 1;
        localStorage.setItem("runs", String(runs));
        document.getElementById("runs").textContent = String(runs);
        await new Promise((resolve) => {{ window.release = resolve; }});
        return {{ content: [{{ type: "text", text: label + " ran " + runs }}] }};
      }}
    }});
    registry.registerTool({{
      name: "clarify",
      description: "A name the model cannot take.",
      execute: async () => ({{ content: [] }})
    }});
  </script>
  <script type="module" src="{server}/static/handrail-chat.js"></script>
  <handrail-chat server="{server}"></handrail-chat>
  <script>
    document.querySelector("handrail-chat").getToken = async () => location.hash.slice(1);
  </script>
</body>
</html>
"""


#: A page whose browser has its own WebMCP (a stand-in defined before the polyfill loads), and
#: one without, which uses provideContext and unregisterTool.
NATIVE_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Native WebMCP</title>
  <script>
    window.nativeCalls = [];
    const own = {{
      registerTool(tool) {{ nativeCalls.push("register " + tool.name); }},
      unregisterTool(name) {{ nativeCalls.push("unregister " + name); }},
      provideContext(context) {{ nativeCalls.push("provide " + context.tools.length); }},
    }};
    Object.defineProperty(navigator, "modelContext", {{ value: own, configurable: true }});
  </script>
  <script src="{server}/static/webmcp.js"></script>
</head>
<body>
  <script>
    navigator.modelContext.registerTool({{
      name: "one", description: "One.", execute: async () => ({{ content: [] }})
    }});
    navigator.modelContext.provideContext({{ tools: [
      {{ name: "two", description: "Two.", annotations: {{ readOnlyHint: true }},
         execute: async () => ({{ content: [] }}) }},
      {{ name: "three", description: "Three.", execute: async () => ({{ content: [] }}) }}
    ] }});
    navigator.modelContext.unregisterTool("three");
  </script>
</body>
</html>
"""
POLYFILLED_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Polyfilled WebMCP</title>
  <script src="{server}/static/webmcp.js"></script>
</head>
<body>
  <script>
    const registry = document.modelContext;
    window.same = registry === navigator.modelContext;
    const handle = registry.registerTool({{
      name: "a", description: "A.", execute: async () => ({{ content: [] }})
    }});
    try {{
      registry.registerTool({{ name: "a", description: "Again.", execute: async () => 1 }});
    }} catch (error) {{ window.duplicate = error.name; }}
    try {{
      registry.registerTool({{ name: "b" }});
    }} catch (error) {{ window.noExecute = error.name; }}
    registry.provideContext({{ tools: [
      {{ name: "b", description: "B.", inputSchema: {{ type: "object", properties: {{}} }},
         execute: async () => ({{ content: [] }}) }},
      {{ name: "c", description: "C.", execute: async () => ({{ content: [] }}) }}
    ] }});
    registry.unregisterTool("c");
    window.changes = 0;
    handrailWebMCP.onChange(() => {{ window.changes += 1; }});
    registry.registerTool({{
      name: "d", description: "D.", execute: async () => ({{ content: [] }})
    }}).unregister();
  </script>
</body>
</html>
"""


@pytest.fixture(scope="module")
def hosts(
    tmp_path_factory: pytest.TempPathFactory, server: DemoServer, host_ports: tuple[int, int]
) -> Iterator[tuple[HostPages, HostPages]]:
    folder = tmp_path_factory.mktemp("host")
    (folder / "host.html").write_text(HOST_PAGE.format(server=server.url), encoding="utf-8")
    (folder / "native.html").write_text(NATIVE_PAGE.format(server=server.url), encoding="utf-8")
    (folder / "polyfilled.html").write_text(
        POLYFILLED_PAGE.format(server=server.url), encoding="utf-8"
    )
    allowed = _serve(folder, host_ports[0])
    refused = _serve(folder, host_ports[1])
    yield HostPages(next(allowed), folder), HostPages(next(refused), folder)
    for gen in (allowed, refused):
        next(gen, None)


@dataclass
class Tab:
    page: Page
    errors: list[str]

    @property
    def chat(self) -> Locator:
        return self.page.locator("handrail-chat")

    def say(self, text: str) -> None:
        composer = self.chat.get_by_label("Message", exact=True)
        composer.fill(text)
        composer.press("Enter")

    def card(self, origin: str) -> Locator:
        card = self.chat.locator(f'article.card[data-origin="{origin}"]').last
        expect(card).to_be_visible()
        return card

    def reply(self) -> Locator:
        return self.chat.locator(".msg-agent").last


@pytest.fixture
def tab(browser: Browser) -> Iterator[Tab]:
    errors: list[str] = []  # each test checks what its pages logged
    with open_tab(browser, "", 1300, 900, errors=errors) as app:
        yield Tab(app.page, errors)


def reset(server: DemoServer, user: str) -> None:
    server.reset_policy(user)


def allow_site(tab: Tab, label: str) -> None:
    card = tab.card("permission")
    expect(card).to_contain_text("Let the agent use this website's tools?")
    card.get_by_text(label, exact=True).click()
    card.get_by_role("button", name="Save and continue").click()


def test_the_notes_page_is_the_documents_with_the_polyfill_first(server: DemoServer) -> None:
    spec = SPEC.read_text(encoding="utf-8")
    assert NOTES_PAGE.rstrip("\n") in spec  # byte for byte as the document gives it
    served = httpx.get(server.url + "/demo/notes-page").text
    head = served.index("<head>")
    assert served.index('<script src="/static/webmcp.js"></script>') < served.index("<script>\n")
    assert served[head:].index("webmcp.js") < served[head:].index("const notes")
    # Only the polyfill and the chat element were added around the page.
    added = re.compile(
        r'  <script src="/static/webmcp.js"></script>\n|  <aside class="handrail-side".*?</aside>\n'
        r'  <script type="module" src="/static/handrail-chat.js"></script>\n',
        re.S,
    )
    assert added.sub("", served) == NOTES_PAGE


def test_the_agent_lists_adds_and_deletes_notes_in_the_page(tab: Tab, server: DemoServer) -> None:
    reset(server, "alice")
    page = tab.page
    page.goto(server.url + "/demo/notes-page?user=alice")
    expect(page.locator("#notes li")).to_have_count(3)
    expect(tab.chat.locator(".hc-user")).to_contain_text("Signed in as alice")
    tab.chat.get_by_role("button", name="New conversation").click()

    # List: the site-permission question on first use; then the page runs list_notes.
    tab.say("call list_notes {}")
    allow_site(tab, "Allow non-consequential read/write tools on this website")
    expect(tab.reply()).to_contain_text("list_notes returned:")
    expect(tab.reply()).to_contain_text("Shopping list")
    expect(tab.reply()).to_contain_text('"untrustedContent":true')

    # Add runs without another question.
    tab.say('call add_note {"title": "Ideas", "body": "One line."}')
    expect(page.locator("#notes li")).to_have_count(4)
    expect(page.locator("#out")).to_have_text("Added “Ideas”.")
    expect(tab.reply()).to_contain_text("add_note returned:")
    expect(tab.chat.locator('article.card[data-origin="permission"]')).to_have_count(1)

    # Delete is consequential: asked about; "Allow this call only" deletes once.
    tab.say('call delete_note {"title": "Old draft"}')
    approval = tab.card("approval")
    expect(approval).to_contain_text("Allow delete_note on this website?")
    approval.get_by_role("button", name="Allow this call only").click()
    expect(page.locator("#notes li")).to_have_count(3)
    expect(page.locator("#out")).to_have_text("Deleted “Old draft”.")
    expect(approval).to_contain_text("this call only")
    with server.api("alice") as api:
        assert api.get("/grants").json()["data"] == []

    # A delete of a missing title: asked again; the page's isError result reaches the model,
    # which reads the titles that exist.
    tab.say('call delete_note {"title": "Old draft"}')
    again = tab.card("approval")
    expect(tab.chat.locator('article.card[data-origin="approval"]')).to_have_count(2)
    again.get_by_role("button", name="Allow this call only").click()
    expect(tab.reply()).to_contain_text("delete_note failed:")
    expect(tab.reply()).to_contain_text("The notes are: Shopping list, Meeting agenda, Ideas.")
    expect(page.locator("#notes li")).to_have_count(3)
    assert not tab.errors, tab.errors


def test_the_wider_answers_are_behind_the_arrow(tab: Tab, server: DemoServer) -> None:
    reset(server, "bob")
    page = tab.page
    page.goto(server.url + "/demo/notes-page?user=bob")
    tab.chat.get_by_role("button", name="New conversation").click()
    tab.say('call delete_note {"title": "Shopping list"}')
    allow_site(tab, "Allow read-only tools on this website")
    approval = tab.card("approval")
    arrow = approval.get_by_role("button", name="More ways to allow")
    arrow.click()
    expect(arrow).to_have_attribute("aria-expanded", "true")
    approval.get_by_role("menuitem", name="Allow in this conversation").click()
    expect(page.locator("#notes li")).to_have_count(2)
    expect(approval).to_contain_text("allow in this conversation")
    with server.api("bob") as api:
        grants = api.get("/grants").json()["data"]
    assert [(g["toolName"], g["scope"]) for g in grants] == [("delete_note", "conversation")]
    # Granted for this conversation: the next delete runs without a question.
    tab.say('call delete_note {"title": "Meeting agenda"}')
    expect(page.locator("#notes li")).to_have_count(1)
    expect(tab.chat.locator('article.card[data-origin="approval"]')).to_have_count(1)
    assert not tab.errors, tab.errors


def test_the_chat_embedded_in_another_origin(
    tab: Tab, server: DemoServer, hosts: tuple[HostPages, HostPages]
) -> None:
    allowed, _refused = hosts
    reset(server, "alice")
    # The host app's backend mints a short-lived token for its user with an admin token;
    # the page's getToken hands it to the element.
    with server.api("admin") as admin:
        minted = admin.post("/tokens", json={"userId": "alice", "expiresIn": 600})
    token = minted.raise_for_status().json()["data"]["token"]
    page = tab.page
    page.goto(f"{allowed.url}/host.html#{token}")
    expect(tab.chat.locator(".hc-user")).to_contain_text("Signed in as alice")
    tab.chat.get_by_role("button", name="New conversation").click()
    tab.say("call whoami {}")
    # The refused name is said in the chat and in the console.
    notice = tab.chat.locator(".msg-notice")
    expect(notice).to_contain_text("The page's tool “clarify” was not offered to the agent")
    allow_site(tab, "Allow read-only tools on this website")
    expect(tab.reply()).to_contain_text(f"the host page at {allowed.url}")
    assert any('the page\'s tool "clarify" was not offered' in e for e in tab.errors), tab.errors

    # A tool whose execute throws: the model reads the error, the turn goes on.
    tab.say("call explode {}")
    expect(tab.reply()).to_contain_text("explode failed:")
    expect(tab.reply()).to_contain_text(
        "The page's tool explode failed: the page's database is gone"
    )

    # Posted by another user: 403; a second result for a call: 409 (from this page).
    tab.say('call slow_count {"label": "first"}')
    expect(page.locator("#runs")).to_have_text("1")
    with server.api("alice") as api:
        history = next(h for h in api.get("/histories").json()["data"] if h.get("pendingAsk"))
        pending = api.get(f"/histories/{history['id']}").json()["data"]["pendingAsk"]
    body = {
        "historyId": history["id"],
        "askResponse": {
            "toolCallId": pending["toolCallId"],
            "action": "accept",
            "content": {"content": [{"type": "text", "text": "forged"}]},
        },
    }
    status = page.evaluate(
        """async ([url, token, body]) => (await fetch(url, {method: "POST",
            headers: {Authorization: "Bearer " + token, "Content-Type": "application/json"},
            body: JSON.stringify(body)})).status""",
        [server.url + "/api/prompt", TOKENS["bob"], body],
    )
    assert status == 403
    page.evaluate("window.release()")
    expect(tab.reply()).to_contain_text("slow_count returned:")
    expect(tab.reply()).to_contain_text("first ran 1")
    twice = page.evaluate(
        """async ([url, token, body]) => (await fetch(url, {method: "POST",
            headers: {Authorization: "Bearer " + token, "Content-Type": "application/json"},
            body: JSON.stringify(body)})).status""",
        [server.url + "/api/prompt", TOKENS["alice"], body],
    )
    assert twice == 409
    unexpected = [e for e in tab.errors if "clarify" not in e and "explode" not in e]
    assert not unexpected, unexpected


def test_a_page_reloaded_mid_call_runs_it_once(
    tab: Tab, server: DemoServer, hosts: tuple[HostPages, HostPages]
) -> None:
    allowed, _refused = hosts
    reset(server, "bob")
    with server.api("bob") as api:
        api.put(f"/permissions/page:{allowed.url}", json={"level": "read-only"}).raise_for_status()
    page = tab.page
    page.goto(f"{allowed.url}/host.html#{TOKENS['bob']}")
    page.evaluate("localStorage.setItem('runs', '0')")
    tab.chat.get_by_role("button", name="New conversation").click()
    tab.say('call slow_count {"label": "mid"}')
    expect(page.locator("#runs")).to_have_text("1")
    # Closed (reloaded) before the page answered: the call stays pending.
    page.reload()
    expect(page.locator("#runs")).to_have_text("2")  # the reopened page ran it, once
    card = tab.card("page-tool")
    expect(card).to_contain_text("Running Slow count on this page")
    # The web UI cannot run it: it says which page it waits for.
    with server.api("bob") as api:
        waiting_id = api.get("/histories").json()["data"][0]["id"]
    other = page.context.new_page()
    other.goto(f"{server.url}/c/{waiting_id}")
    other.get_by_role("button", name="Sign in as bob").click()
    waiting = other.locator('article.card[data-origin="page-tool"]').last
    expect(waiting).to_contain_text(f"Waiting for the page at {allowed.url} to run Slow count.")
    expect(waiting.get_by_role("button", name="Cancel the call")).to_be_visible()
    other.close()
    page.evaluate("window.release()")
    expect(tab.reply()).to_contain_text("mid ran 2")
    page.wait_for_timeout(300)
    assert page.evaluate("localStorage.getItem('runs')") == "2"
    with server.api("bob") as api:
        history = api.get("/histories").json()["data"][0]
        rows = api.get(f"/histories/{history['id']}").json()["data"]["rows"]
    results = [r for r in rows if r["type"] == "tool-result" and r["toolName"] == "slow_count"]
    assert len(results) == 2  # the gate's answer and the tool's one result
    assert [r for r in results if r.get("result", {}).get("untrustedContent")] == [results[-1]]
    unexpected = [e for e in tab.errors if "clarify" not in e]
    assert not unexpected, unexpected


def test_an_origin_not_on_the_list_is_refused(
    tab: Tab, server: DemoServer, hosts: tuple[HostPages, HostPages]
) -> None:
    _allowed, refused = hosts
    page = tab.page
    page.goto(f"{refused.url}/host.html#{TOKENS['alice']}")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("customElements.get('handrail-chat') === undefined")
    outcome = page.evaluate(
        """async (url) => { try { await fetch(url, {headers: {Authorization: "Bearer demo-alice"}});
            return "read"; } catch (error) { return error.name; } }""",
        server.url + "/api/info",
    )
    assert outcome == "TypeError"
    assert any("CORS" in e for e in tab.errors), tab.errors
    answer = httpx.get(
        server.url + "/api/info", headers={"Origin": refused.url, **_bearer("alice")}
    )
    assert "access-control-allow-origin" not in answer.headers
    allowed_answer = httpx.get(
        server.url + "/api/info", headers={"Origin": _allowed.url, **_bearer("alice")}
    )
    assert allowed_answer.headers["access-control-allow-origin"] == _allowed.url
    assert "access-control-allow-credentials" not in allowed_answer.headers


def _bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[user]}"}


def test_the_polyfill_installs_webmcp_or_reads_the_native_one(
    tab: Tab, hosts: tuple[HostPages, HostPages]
) -> None:
    allowed, _refused = hosts
    page = tab.page
    page.goto(f"{allowed.url}/polyfilled.html")
    assert page.evaluate("window.same") is True
    assert page.evaluate("window.duplicate") == "InvalidStateError"
    assert page.evaluate("window.noExecute") == "TypeError"
    # provideContext replaced the whole set; unregisterTool and unregister() removed one each.
    assert page.evaluate("handrailWebMCP.list()") == [
        {"name": "b", "description": "B.", "inputSchema": {"type": "object", "properties": {}}}
    ]
    assert page.evaluate("window.changes") == 2
    assert page.evaluate("handrailWebMCP.native") is False

    page.goto(f"{allowed.url}/native.html")
    assert page.evaluate("handrailWebMCP.native") is True
    # Every call still reached the browser's own; the polyfill read what the page registered.
    assert page.evaluate("window.nativeCalls") == [
        "register one",
        "provide 2",
        "unregister three",
    ]
    assert page.evaluate("handrailWebMCP.list()") == [
        {"name": "two", "description": "Two.", "annotations": {"readOnlyHint": True}}
    ]
    assert page.evaluate("document.modelContext === navigator.modelContext") is True
    assert not tab.errors, tab.errors
