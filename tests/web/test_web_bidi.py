"""Text in a right-to-left script reads right to left: what the agent, a connection or the
person wrote takes its direction from its own first strong character (``dir="auto"``), each
paragraph, title, option and message apart, while the UI's own words stay left to right."""

from __future__ import annotations

from playwright.sync_api import Locator, expect
from web_pages import App, command

#: "Which plan for the team?" and its options in Arabic; one description is in English.
ARABIC_CHOICE = {
    "title": "أي خطة للفريق؟",
    "prompt": (
        "اختر خطة. يمكنك تغييرها لاحقًا.\n\n- الخطة الأساسية مجانية.\n- خطة الفريق للجميع."
        "\n\n> السعر شهري.\n\n| الخطة | السعر |\n| --- | --- |\n| الفريق | 99 |"
    ),
    "select": "one",
    "options": [
        {"id": "basic", "label": "الخطة الأساسية", "description": "مجانية لثلاثة أشخاص."},
        {"id": "team", "label": "خطة الفريق (Team)", "description": "Billed monthly."},
    ],
}
#: "Hello, world." in Hebrew.
HEBREW = "שלום, עולם."


def direction(locator: Locator) -> str:
    return str(locator.evaluate("el => el.matches(':dir(rtl)') ? 'rtl' : 'ltr'"))


def test_right_to_left_text_reads_right_to_left(app: App) -> None:
    app.sign_in_as("alice")
    app.goto("/")
    app.say(command("ask_choice", ARABIC_CHOICE))
    card = app.card(kind="choice")
    title = card.locator.get_by_role("heading", name="أي خطة للفريق؟")
    assert direction(title) == "rtl"
    prompt = card.locator.locator(".card-prompt")
    assert direction(prompt.locator("p").first) == "rtl"
    assert direction(prompt.locator("ul")) == "rtl"
    assert [direction(item) for item in prompt.locator("li").all()] == ["rtl", "rtl"]
    # A quote and a table run from the right too (the quote's rule, the table's first column).
    assert direction(prompt.locator("blockquote p")) == "rtl"
    assert direction(prompt.locator("td").first) == "rtl"
    first, second = (cell.bounding_box() for cell in prompt.locator("th").all())
    assert first is not None
    assert second is not None
    assert first["x"] > second["x"]

    # An option in Arabic is a right-to-left row: its box on the right of its label.
    basic = card.locator.get_by_role("radio", name="الخطة الأساسية")
    row = card.locator.locator(".option").filter(has_text="مجانية لثلاثة أشخاص.")
    assert direction(row) == "rtl"
    box, label = basic.bounding_box(), row.locator(".option-label").bounding_box()
    assert box is not None
    assert label is not None
    assert box["x"] > label["x"] + label["width"] - 1
    # A description keeps its own direction; the UI's own words stay left to right.
    team = card.locator.locator(".option").filter(has_text="Billed monthly.")
    assert direction(team.locator(".option-description")) == "ltr"
    assert direction(card.locator.get_by_text("Pick one.")) == "ltr"
    assert direction(card.locator.locator(".badge")) == "ltr"

    card.locator.get_by_role("radio", name="خطة الفريق (Team)").check()
    card.click("Submit")
    expect(app.reply()).to_contain_text('"selected":["team"]')

    # The person's own message in Hebrew; the scripted reply starts in English.
    app.say(HEBREW)
    mine = app.page.locator(".msg-user .msg-text").last
    expect(mine).to_have_text(HEBREW)
    assert direction(mine) == "rtl"
    expect(app.reply()).to_have_text(f"Agent: You said: {HEBREW}")
    assert direction(app.reply().locator(".msg-text p")) == "ltr"
    card.shoot("choice-right-to-left")
