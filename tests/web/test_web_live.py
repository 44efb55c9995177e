"""Live pages (GET /api/events): two tabs of one user and a second user, the inbox and the
count in the tab title following an answer at once, a sign-in that lasts across tabs until
sign-out, turn progress and Stop, and browser notifications (opt-in).

These tests speak as ``bob`` (and ``alice`` as the second user); they count relative to what
is already waiting, since the server is shared by the session."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, Response, expect
from web_pages import App, command

from demo_server import TOKENS, DemoServer

#: "At once": an event crosses in well under a second; the margin is for a loaded machine.
AT_ONCE_MS = 3000

CONFIRM = {
    "title": "Archive the report",
    "prompt": "Archive last year's report?",
    "confirmLabel": "Archive",
    "denyLabel": "Keep it",
}


def _live(page: Page) -> None:
    """The page's event stream is in place."""
    expect(page.locator("html")).to_have_attribute("data-live", "on")


def _loaded(page: Page) -> None:
    """The inbox's first load arrived (the page marks its list once it shows the server's)."""
    list_ = page.get_by_role("list", name="Waiting on you")
    expect(list_).to_have_attribute("data-loaded", "true")


def _waiting(page: Page) -> int:
    """How many asks the inbox lists, once it loaded."""
    _loaded(page)
    status = page.locator(".toolbar").get_by_role("status")
    found = re.match(r"^(\d+)", status.inner_text())
    return int(found.group(1)) if found else 0


def _ask(app: App, title: str) -> str:
    """Send an ask_confirm with `title` in a new conversation; its history id."""
    app.goto("/")
    app.say(command("ask_confirm", {**CONFIRM, "title": title}))
    card = app.card(kind="confirm")
    card.expect_pending()
    return app.history_id()


def test_an_answer_in_one_tab_shows_in_the_others_at_once(
    app: App, browser: Browser, demo_server: DemoServer
) -> None:
    app.sign_in_as("bob")
    # The second tab of the same browser is signed in already (localStorage).
    inbox = App(page=app.page.context.new_page(), base_url=app.base_url)
    inbox.goto("/inbox")
    expect(inbox.page.locator(".who")).to_contain_text("Signed in as bob")
    _live(inbox.page)
    before = _waiting(inbox.page)
    if before:
        expect(inbox.page).to_have_title(re.compile(rf"^\({before}\+?\) Inbox"))

    history_id = _ask(app, "Live one")
    item = inbox.page.locator(f'.inbox-item[data-history-id="{history_id}"]')
    expect(item).to_be_visible(timeout=AT_ONCE_MS)
    expect(inbox.page).to_have_title(re.compile(rf"^\({before + 1}\+?\) Inbox"), timeout=AT_ONCE_MS)

    # The same conversation open in a third tab (its own browser context, signed in as bob).
    other_context = browser.new_context()
    try:
        watcher = App(page=other_context.new_page(), base_url=app.base_url)
        watcher.sign_in_as("bob", f"/c/{history_id}")
        watcher.card(kind="confirm").expect_pending()
        _live(watcher.page)

        app.card(kind="confirm").click("Archive")
        app.card(kind="confirm").expect_summary("Archive")
        expect(item).to_have_count(0, timeout=AT_ONCE_MS)
        if before == 0:
            expect(inbox.page).to_have_title("Inbox · handrail", timeout=AT_ONCE_MS)
        else:
            expect(inbox.page).to_have_title(
                re.compile(rf"^\({before}\+?\) Inbox"), timeout=AT_ONCE_MS
            )
        expect(watcher.page.locator("article.card.card-pending")).to_have_count(
            0, timeout=AT_ONCE_MS
        )
        expect(watcher.page.locator(".msg-agent").last).to_contain_text(
            "ask_confirm returned", timeout=AT_ONCE_MS
        )
    finally:
        other_context.close()


def test_a_second_user_sees_nothing_of_it(
    app: App, second_tab: App, demo_server: DemoServer
) -> None:
    second_tab.sign_in_as("alice", "/inbox")
    _live(second_tab.page)
    _loaded(second_tab.page)  # earlier tests' asks are listed before counting
    items_before = second_tab.page.locator(".inbox-item").count()
    app.sign_in_as("bob")
    history_id = _ask(app, "Only bob's")
    # Then an ask of alice's own. Her stream is in order, so once her page lists it, an event
    # of bob's that reached her page would have been shown already (no fixed wait).
    own = demo_server.ask("alice", command("ask_confirm", {**CONFIRM, "title": "Alice's own"}))
    listed = second_tab.page.locator(f'.inbox-item[data-history-id="{own["historyId"]}"]')
    expect(listed).to_be_visible(timeout=AT_ONCE_MS)
    expect(second_tab.page.locator(f'[data-history-id="{history_id}"]')).to_have_count(0)
    assert second_tab.page.locator(".inbox-item").count() == items_before + 1
    app.card(kind="confirm").click("Keep it")
    with demo_server.api("alice") as api:
        no = {"action": "accept", "content": {"confirmed": False}}
        answer = {"askResponse": {"toolCallId": own["pendingAsk"]["toolCallId"], **no}}
        api.post(f"/histories/{own['historyId']}/turn", json=answer).raise_for_status()


def test_sign_out_in_one_tab_signs_out_every_tab(app: App) -> None:
    app.sign_in_as("bob", "/inbox")
    other = App(page=app.page.context.new_page(), base_url=app.base_url)
    other.goto("/grants")
    expect(other.page.locator(".who")).to_contain_text("Signed in as bob")
    app.page.get_by_role("button", name="Sign out").click()
    expect(other.page.get_by_role("heading", name="Sign in to handrail")).to_be_visible(
        timeout=AT_ONCE_MS
    )
    assert other.page.evaluate("localStorage.getItem('handrail.token')") is None


def test_progress_and_stop(app: App, demo_server: DemoServer) -> None:
    # The clock's one tool is read-only: a read-only level lets it run without asking.
    response = httpx.put(
        f"{demo_server.url}/api/permissions/local:clock",
        json={"level": "read-only"},
        headers={"Authorization": f"Bearer {TOKENS['bob']}"},
    )
    assert response.status_code == 200, response.text
    app.sign_in_as("bob")
    _live(app.page)
    app.say('call wait_a_while {"seconds": 60}')
    progress = app.page.locator(".turn-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Running Wait a few seconds…")
    history_id = app.history_id() if "/c/" in app.page.url else None
    app.page.get_by_role("button", name="Stop").click()
    expect(progress).to_be_hidden(timeout=10_000)
    expect(app.page.locator(".transcript-notice")).to_contain_text("You stopped the turn")
    tool = app.page.locator("details.msg.tool").last
    expect(tool).to_contain_text("did not finish")
    # The conversation goes on after Stop.
    app.say("hello again")
    expect(app.reply()).to_contain_text("You said: hello again")
    assert history_id is None or history_id == app.history_id()


def test_notifications_are_opt_in_and_open_the_conversation(
    app: App, browser: Browser, demo_server: DemoServer
) -> None:
    context = app.page.context
    context.grant_permissions(["notifications"], origin=demo_server.url)
    # Record the notifications the page shows (the real constructor still runs).
    context.add_init_script(
        """
        window.__shown = [];
        const Real = window.Notification;
        class Recorded extends Real {
          constructor(title, options) {
            super(title, options);
            window.__shown.push({ title, body: options && options.body });
            window.__last = this;
          }
        }
        Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
        Recorded.requestPermission = (...args) => Real.requestPermission(...args);
        window.Notification = Recorded;
        """
    )
    app.sign_in_as("bob", "/inbox")
    _live(app.page)
    toggle = app.page.get_by_role("button", name="Notify me")
    expect(toggle).to_be_visible()

    asker = App(page=context.new_page(), base_url=app.base_url)
    before = _ask(asker, "Before opting in")
    # The inbox lists it after a read the event started, so the event was handled by then.
    listed = app.page.locator(f'.inbox-item[data-history-id="{before}"]')
    expect(listed).to_be_visible(timeout=AT_ONCE_MS)
    assert app.page.evaluate("window.__shown.length") == 0  # off until the person opts in

    toggle.click()
    expect(app.page.get_by_role("button", name="Notifications on")).to_be_visible()
    history_id = _ask(asker, "Notify about this")
    app.page.wait_for_function("window.__shown.length === 1", timeout=AT_ONCE_MS)
    shown = app.page.evaluate("window.__shown[0]")
    assert shown["title"] == "Notify about this"
    assert shown["body"] == CONFIRM["prompt"]
    app.page.evaluate("window.__last.onclick()")
    expect(app.page).to_have_url(re.compile(rf"/c/{history_id}$"))
    asker.card(kind="confirm").click("Keep it")


def _approval(app: App, title: str) -> str:
    """A new conversation paused on the approval of deleting note `title`; its id."""
    app.goto("/")
    app.say(command("call delete_note", {"title": title}))
    app.card(origin="approval").expect_pending()
    return app.history_id()


def test_the_inbox_acts_inline_filters_searches_and_denies_in_bulk(
    app: App, demo_server: DemoServer
) -> None:
    # Deleting a note is consequential: with the level set, each call waits on an approval.
    response = httpx.put(
        f"{demo_server.url}/api/permissions/local:notes",
        json={"level": "non-consequential"},
        headers={"Authorization": f"Bearer {TOKENS['bob']}"},
    )
    assert response.status_code == 200, response.text
    app.sign_in_as("bob")
    asker = App(page=app.page.context.new_page(), base_url=app.base_url)
    question = _ask(asker, "Inline question")
    first = _approval(asker, "Bulk one")
    second = _approval(asker, "Bulk two")

    app.goto("/inbox")
    _live(app.page)
    page = app.page
    item = page.locator(f'.inbox-item[data-history-id="{question}"]')
    expect(item.locator(".watch-gate")).to_contain_text("Question")
    approval = page.locator(f'.inbox-item[data-history-id="{first}"]')
    expect(approval.locator(".watch-gate")).to_contain_text("Approval")

    # Filters and search.
    page.get_by_label("Gate").select_option("approval")
    expect(item).to_have_count(0)
    expect(approval).to_be_visible()
    page.get_by_label("Gate").select_option("")
    page.get_by_label("Search titles and prompts").fill("Inline question")
    expect(item).to_be_visible()
    expect(approval).to_have_count(0)
    page.get_by_label("Search titles and prompts").fill("")
    page.get_by_label("Conversation").select_option(first)
    expect(approval).to_be_visible()
    expect(item).to_have_count(0)
    page.get_by_label("Conversation").select_option("")
    page.get_by_label("Kind").select_option("choice")
    expect(item).to_have_count(0)
    page.get_by_label("Kind").select_option("")
    page.get_by_label("Agent").select_option("demo")
    expect(item).to_be_visible()
    page.get_by_label("Agent").select_option("")

    # Answer the question in place.
    item.get_by_role("button", name="Answer here").click()
    item.locator("article.card").get_by_role("button", name="Archive").click()
    expect(item).to_have_count(0)
    expect(page.locator(".inbox-said")).to_contain_text("Answered")
    asker.page.reload()
    asker.goto(f"/c/{question}")
    asker.card(kind="confirm").expect_summary("Archive")

    # Deny both approvals at once.
    for history_id in (first, second):
        page.locator(f'.inbox-item[data-history-id="{history_id}"]').get_by_label(
            "Select “Delete a note”"
        ).check()
    page.get_by_role("button", name="Deny selected").click()
    expect(page.locator(".inbox-said")).to_contain_text("Denied 2")
    for history_id in (first, second):
        expect(page.locator(f'.inbox-item[data-history-id="{history_id}"]')).to_have_count(0)
        asker.goto(f"/c/{history_id}")
        expect(asker.page.locator("details.msg.tool").last).to_contain_text("Did not run")


def test_the_inbox_answers_typed_kinds_inline(app: App, demo_server: DemoServer) -> None:
    # Not only card buttons: a markdown draft and a clarify question, typed in the inbox.
    draft = demo_server.ask(
        "bob", command("ask_markdown", {"prompt": "Shorten the note.", "initial": "A long note."})
    )
    question = {"id": "name", "kind": "text", "question": "What is the database called?"}
    clarify = demo_server.ask("bob", "clarify " + json.dumps({"prompts": [question]}))
    app.sign_in_as("bob", "/inbox")
    _live(app.page)
    page = app.page

    item = page.locator(f'.inbox-item[data-history-id="{draft["historyId"]}"]')
    item.get_by_role("button", name="Answer here").click()
    item.get_by_label("Draft (markdown)").fill("A short note.")
    item.get_by_role("button", name="Submit").click()
    expect(item).to_have_count(0)

    item = page.locator(f'.inbox-item[data-history-id="{clarify["historyId"]}"]')
    item.get_by_role("button", name="Answer here").click()
    item.get_by_label("What is the database called?").fill("orders")
    item.get_by_role("button", name="Send answers").click()
    expect(item).to_have_count(0)

    with demo_server.api("bob") as api:
        results = []
        for asked in (draft, clarify):
            view = api.get(f"/histories/{asked['historyId']}").raise_for_status().json()["data"]
            assert view["pendingAsk"] is None
            results += [
                r["result"]
                for r in view["rows"]
                if r["type"] == "tool-result"
                and r["toolCallId"] == asked["pendingAsk"]["toolCallId"]
            ]
    drafted, clarified = results
    assert drafted["action"] == "accept"
    assert drafted["content"]["markdown"] == "A short note."
    assert {"id": "name", "kind": "text", "value": "orders"} in clarified["content"]["answers"]


def test_the_inbox_shows_a_gates_expiry(app: App, demo_server: DemoServer) -> None:
    # A booking's confirmation expires (its ttl_ms is 30 s): the inbox counts it down.
    with demo_server.api("bob") as api:
        level = {"level": "non-consequential"}
        api.put("/permissions/booking", json=level).raise_for_status()
    day = 1 + int(time.time()) % 28  # a date of its own: other tests book the usual ones
    book = command("call book_slot", {"date": f"2031-01-{day:02d}", "time": "21:00"})
    asked = demo_server.ask("bob", book)
    pending = asked["pendingAsk"]
    assert pending["toolCallId"].startswith("confirmation_"), pending
    app.sign_in_as("bob", "/inbox")
    gate = app.page.locator(f'.inbox-item[data-history-id="{asked["historyId"]}"] .watch-gate')
    expect(gate).to_contain_text("Confirmation")
    expect(gate.get_by_role("timer")).to_have_text(re.compile(r"^ · expires in 0:[0-2]\d$"))
    with demo_server.api("bob") as api:
        no = {"action": "accept", "content": {"confirmed": False}}
        answer = {"askResponse": {"toolCallId": pending["toolCallId"], **no}}
        api.post(f"/histories/{asked['historyId']}/turn", json=answer).raise_for_status()


def test_conversations_are_renamed_searched_and_deleted(app: App) -> None:
    app.sign_in_as("bob")
    other = App(page=app.page.context.new_page(), base_url=app.base_url)
    other.goto("/")
    _live(other.page)
    app.say("first of the pair")
    expect(app.reply()).to_contain_text("You said: first of the pair")
    history_id = app.history_id()
    app.page.get_by_role("button", name="Rename").click()
    app.page.get_by_label("New title").fill("Quarterly plan")
    app.page.get_by_role("button", name="Save").click()
    expect(app.page.get_by_role("heading", name="Quarterly plan")).to_be_visible()
    expect(app.page).to_have_title(re.compile(r"Quarterly plan · handrail$"))
    # The other tab's list follows the rename (history.renamed).
    link = other.page.locator(f'.conversation-list a[data-history-id="{history_id}"]')
    expect(link).to_contain_text("Quarterly plan", timeout=AT_ONCE_MS)
    other.page.get_by_label("Search conversations").fill("quarterly")
    # The server searches titles and messages; a conversation listed for a message says so.
    expect(other.page.locator('.conversation-list[data-query="quarterly"]')).to_have_count(1)
    expect(link).to_be_visible()
    for item in other.page.locator(".conversation-list li").all():
        title = item.locator(".conversation-title").inner_text().lower()
        assert "quarterly" in title or item.get_attribute("data-found") == "messages", title
    other.page.get_by_label("Search conversations").fill("no such conversation at all")
    expect(link).to_be_hidden()

    app.page.get_by_role("button", name="Delete", exact=True).click()
    app.page.get_by_role("button", name="Delete it").click()
    expect(app.page).to_have_url(f"{app.base_url}/")
    expect(other.page.locator(f'a[data-history-id="{history_id}"]')).to_have_count(
        0, timeout=AT_ONCE_MS
    )


def test_a_permission_level_changes_in_place(app: App) -> None:
    app.sign_in_as("bob", "/grants")
    picker = app.page.get_by_label("Level for Clock", exact=True)
    expect(picker).to_be_visible()
    options = picker.locator("option").all_inner_texts()
    # The permission ask's own names, in its order.
    assert options[-3:] == ["Ask every time", "Allow read-only", "Allow read/write"]
    picker.select_option(label="Allow read/write")
    expect(app.page.locator('[data-connection-id="local:clock"]')).to_contain_text(
        "Level: Allow read/write"
    )
    app.page.reload()
    expect(app.page.get_by_label("Level for Clock", exact=True)).to_have_value("non-consequential")


def test_a_chat_opened_mid_turn_shows_its_progress_at_once(
    app: App, browser: Browser, demo_server: DemoServer
) -> None:
    response = httpx.put(
        f"{demo_server.url}/api/permissions/local:clock",
        json={"level": "read-only"},
        headers={"Authorization": f"Bearer {TOKENS['bob']}"},
    )
    assert response.status_code == 200, response.text
    app.sign_in_as("bob")
    _live(app.page)
    app.say("a slow one next")
    expect(app.reply()).to_contain_text("You said: a slow one next")
    history_id = app.history_id()
    app.say('call wait_a_while {"seconds": 60}')
    expect(app.page.locator(".turn-progress")).to_contain_text("Running Wait a few seconds…")

    # Another browser opens the conversation while the tool runs: the tool sends no more
    # progress events for a minute, so what the line says comes from the history view.
    other_context = browser.new_context()
    try:
        late = App(page=other_context.new_page(), base_url=app.base_url)
        views: list[dict[str, Any]] = []

        def record(response: Response) -> None:
            if response.url.endswith(f"/api/histories/{history_id}") and response.ok:
                views.append(response.json()["data"])

        late.page.on("response", record)
        late.sign_in_as("bob", f"/c/{history_id}")
        progress = late.page.locator(".turn-progress")
        expect(progress).to_be_visible()
        expect(progress).to_contain_text("Running Wait a few seconds…")
        assert views, "the page read the history view"
        running = views[-1]["running"]
        assert running["phase"] == "tool"
        assert running["tool"]["toolName"] == "wait_a_while"
        # And Stop works from there.
        late.page.get_by_role("button", name="Stop").click()
        expect(progress).to_be_hidden(timeout=10_000)
        expect(app.page.locator(".turn-progress")).to_be_hidden(timeout=10_000)
    finally:
        other_context.close()
    # Opened again now, nothing runs: no progress line.
    app.page.reload()
    expect(app.page.locator(".msg-user").last).to_contain_text("wait_a_while")
    expect(app.page.locator(".turn-progress")).to_be_hidden()
