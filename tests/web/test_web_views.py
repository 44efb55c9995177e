"""The inbox, the compact /watch view, and a pending ask that survives a reload or is answered
in another tab."""

from __future__ import annotations

from playwright.sync_api import expect
from web_pages import App, command

from demo_server import DemoServer

#: A plain confirm the scripted model asks when told to.
TABLE = {
    "title": "Book a table",
    "prompt": "Book a table for two at Trattoria Sole, Friday at 19:30?",
    "confirmLabel": "Book it",
    "denyLabel": "Not now",
}


def test_inbox_lists_pending_asks_across_conversations(app: App, demo_server: DemoServer) -> None:
    plan = demo_server.ask("bob", "Set up billing for my team")
    draft = demo_server.ask("bob", "Draft an announcement")
    app.sign_in_as("bob", "/inbox")
    expect(app.page.get_by_role("heading", name="Inbox")).to_be_visible()
    items = app.page.locator(".inbox-item")
    expect(items.filter(has_text="Which plan should I set up?")).to_have_count(1)
    expect(items.filter(has_text="Launch announcement")).to_have_count(1)
    expect(items.first).to_contain_text("Launch announcement")  # newest first
    with demo_server.api("bob") as api:
        waiting = len(api.get("/histories/pendingAsks").json()["data"])
    expect(app.page.get_by_role("link", name="Inbox")).to_contain_text(str(waiting))
    app.shoot("inbox")
    items.filter(has_text="Choose a plan").get_by_role("link").click()
    expect(app.page).to_have_url(f"{demo_server.url}/c/{plan['historyId']}")
    app.card(kind="choice").expect_pending()
    assert draft["pendingAsk"]["kind"] == "markdown"


def test_watch_answers_a_choice_and_a_confirm_by_button(
    phone: App, demo_server: DemoServer
) -> None:
    plan = demo_server.ask("admin", "Set up billing for my team")
    booking = demo_server.ask("admin", command("ask_confirm", TABLE))
    demo_server.ask("admin", "Fill in invoice details")
    phone.sign_in_as("admin", "/watch")
    cards = phone.page.locator(".simple-card")
    expect(cards).to_have_count(3)
    form_card = cards.filter(has_text="Invoice details")
    expect(form_card.locator(".handoff")).to_have_text("Fill it in on your phone")
    choice_card = cards.filter(has_text="Choose a plan")
    expect(choice_card.get_by_role("button")).to_have_text(["Team", "Starter", "Enterprise"])
    width = phone.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"/watch scrolls sideways at 360px ({width}px wide)"
    phone.shoot("watch")

    choice_card.get_by_role("button", name="Team").click()
    status = phone.page.get_by_role("status").filter(has_text="sent")
    expect(status).to_contain_text("“Team” sent. The agent says: ask_choice returned")
    expect(cards).to_have_count(2)
    cards.filter(has_text="Book a table").get_by_role("button", name="Book it").click()
    expect(status).to_contain_text("“Book it” sent.")
    expect(cards).to_have_count(1)
    phone.shoot("watch-answered")

    with demo_server.api("admin") as api:
        for result, answer in ((plan, '["team"]'), (booking, '"confirmed":true')):
            rows = api.get(f"/histories/{result['historyId']}").json()["data"]["rows"]
            assert rows[1]["ask"]["status"] == "answered"
            assert answer in rows[-1]["text"]


def test_reload_restores_a_pending_ask_and_another_tab_sees_it_answered(
    app: App, second_tab: App, demo_server: DemoServer
) -> None:
    app.sign_in_as("bob")
    app.start("Draft an announcement")
    history_id = app.history_id()
    app.card(kind="markdown").locator.get_by_label("Draft (markdown)").fill("# Changed")
    app.page.reload()
    card = app.card(kind="markdown")
    card.expect_pending()
    expect(card.locator.get_by_label("Draft (markdown)")).to_have_value(
        "# We're live\n\nToday we launched **handrail**: agents that ask before they act.\n\n"
        "- Typed questions in the chat\n- Approvals before risky tools\n"
    )

    second_tab.sign_in_as("bob", f"/c/{history_id}")
    second_tab.card(kind="markdown").expect_pending()
    expect(second_tab.page.locator("html")).to_have_attribute("data-live", "on")

    card.click("Send it back")
    card.expect_summary("Approved the draft as is")

    # The other tab hears of the answer (GET /api/events) and shows how it ended, untouched.
    second_tab.card(kind="markdown").expect_summary("Approved the draft as is")
    expect(second_tab.page.locator("article.card.card-pending")).to_have_count(0)
    second_tab.page.reload()
    second_tab.card(kind="markdown").expect_summary("Approved the draft as is")


def test_a_message_cancels_the_pending_ask(app: App) -> None:
    app.sign_in_as("bob")
    app.say(command("ask_confirm", TABLE))
    card = app.card(kind="confirm")
    expect(app.page.get_by_text("Sending a message cancels it.")).to_be_visible()
    app.say("Never mind")
    expect(app.reply()).to_have_text("Agent: You said: Never mind")
    card.expect_summary("Cancelled: a new message was sent", status="cancelled")
    app.page.reload()
    app.card(kind="confirm").expect_summary("Cancelled: a new message was sent", status="cancelled")


def test_the_keyboard_answers_a_card(app: App) -> None:
    app.sign_in_as("bob")
    app.start("Set up billing for my team")
    card = app.card(kind="choice")
    # The new card takes the focus; Tab enters its options at the preselected one.
    expect(card.locator).to_be_focused()
    app.page.keyboard.press("Tab")
    expect(card.locator.get_by_role("radio", name="Team", exact=True)).to_be_focused()
    app.page.keyboard.press("ArrowUp")
    expect(card.locator.get_by_role("radio", name="Starter")).to_be_checked()
    app.page.keyboard.press("Tab")
    expect(card.button("Set up plan")).to_be_focused()
    app.page.keyboard.press("Enter")
    card.expect_summary("Chose Starter")
    expect(card.locator).to_be_focused()  # the summary keeps the focus for the next step


def test_cards_fit_a_phone(phone: App) -> None:
    phone.sign_in_as("bob")
    for prompt, kind in (
        ("Fill in invoice details", "form"),
        ("Draft an announcement", "markdown"),
    ):
        phone.start(prompt)
        card = phone.card(kind=kind)
        width = phone.page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, f"a {kind} card scrolls sideways at 360px ({width}px wide)"
        phone.shoot(f"phone-{kind}")
        card.expect_pending()


def test_an_admin_reads_another_users_conversation_without_answering(
    app: App, demo_server: DemoServer
) -> None:
    theirs = demo_server.ask("alice", "Set up billing for my team")
    app.sign_in_as("admin", f"/c/{theirs['historyId']}")
    card = app.card(kind="choice")
    expect(card.locator).to_contain_text("Waiting for an answer.")
    expect(card.locator.get_by_role("radio")).to_have_count(0)
    expect(app.page.get_by_label("Message", exact=True)).to_be_disabled()
    expect(app.page.get_by_text("as an admin: you cannot speak in it")).to_be_visible()
