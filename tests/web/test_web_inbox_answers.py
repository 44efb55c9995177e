"""The inbox answers a choice, a form and a files ask in place ("Answer here" opens the ask's
full card in the list): the answer reaches the model (the inbox shows what the agent said) and
the ask leaves the list. One test, one page, to keep the browser's time short."""

from __future__ import annotations

from playwright.sync_api import Locator, expect
from web_pages import App, command

from demo_server import DemoServer

CHOICE = {
    "prompt": "Which inbox plan?",
    "select": "one",
    "options": [{"id": "basic", "label": "Basic"}, {"id": "pro", "label": "Pro"}],
    "submitLabel": "Pick plan",
}
FORM = {
    "title": "Inbox invoice",
    "prompt": "Who is the invoice for?",
    "fields": [
        {"id": "company", "type": "text", "label": "Company", "required": True},
        {"id": "seats", "type": "number", "label": "Seats", "integer": True, "min": 1, "max": 50},
    ],
    "submitLabel": "Send invoice",
}
FILES = {"prompt": "Send the inbox notes.", "accept": ["text"], "submitLabel": "Send notes"}
NOTES = b"Inbox notes: call Ada.\n"


def test_the_inbox_answers_choice_form_and_files_in_place(
    app: App, demo_server: DemoServer
) -> None:
    choice = demo_server.ask("bob", command("ask_choice", CHOICE))["historyId"]
    form = demo_server.ask("bob", command("ask_form", FORM))["historyId"]
    files = demo_server.ask("bob", command("ask_files", FILES))["historyId"]
    app.sign_in_as("bob", "/inbox")
    page = app.page
    said = page.locator(".inbox-said")
    # The title is underlined as the link it is; the kind's badge beside it is not.
    link = page.locator(f'.inbox-item[data-history-id="{choice}"] .inbox-link')
    lines = link.evaluate(
        "a => [a, a.querySelector('.inbox-title')].map(e => getComputedStyle(e).textDecorationLine)"
    )
    assert lines == ["none", "underline"]

    def open_card(history_id: str) -> tuple[Locator, Locator]:
        item = page.locator(f'.inbox-item[data-history-id="{history_id}"]')
        item.get_by_role("button", name="Answer here").click()
        return item, item.locator("article.card")

    item, card = open_card(choice)
    card.get_by_role("radio", name="Pro").check()
    card.get_by_role("button", name="Pick plan").click()
    expect(said).to_have_text(
        'Answered. The agent said: ask_choice returned: {"action":"accept","content":'
        '{"selected":["pro"]}}'
    )
    expect(item).to_have_count(0)

    item, card = open_card(form)
    card.get_by_label("Company").fill("Ada Ltd")
    card.get_by_label("Seats").fill("7")
    card.get_by_role("button", name="Send invoice").click()
    expect(said).to_have_text(
        'Answered. The agent said: ask_form returned: {"action":"accept","content":'
        '{"values":{"company":"Ada Ltd","seats":7}}}'
    )
    expect(item).to_have_count(0)

    item, card = open_card(files)
    card.locator("input[type=file]").set_input_files(
        {"name": "notes.txt", "mimeType": "text/plain", "buffer": NOTES}
    )
    expect(card.locator(".file-item")).to_contain_text("notes.txt")
    card.get_by_role("button", name="Send notes").click()
    expect(said).to_contain_text('Answered. The agent said: ask_files returned: {"action":"accept"')
    expect(said).to_contain_text(
        f'"filename":"notes.txt","mimeType":"text/plain","size":{len(NOTES)}'
    )
    expect(item).to_have_count(0)

    # The card uploaded the file and answered with its id.
    with demo_server.api("bob") as api:
        rows = api.get(f"/histories/{files}").raise_for_status().json()["data"]["rows"]
    [result] = [r["result"] for r in rows if r.get("toolName") == "ask_files" and "result" in r]
    [sent] = result["content"]["files"]
    assert sent["filename"] == "notes.txt"
    assert "fileId" in sent
