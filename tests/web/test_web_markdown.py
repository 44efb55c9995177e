"""Markdown in the web UI (bugs found by trying it): an ask's prompt is rendered as markdown
(it showed the asterisks), tables render (pipe tables with alignment, inside their own scroll
box), and a long streamed reply is rendered incrementally: the finished blocks are built once,
not again on every piece of text (a 300 KB reply froze the tab)."""

from __future__ import annotations

from playwright.sync_api import expect
from web_pages import App, command

TABLE = "| Plan | Seats | Price |\n| :--- | :---: | ---: |\n| Team | 10 | $99 |\n| Solo | 1 | $9 |"


def test_an_ask_prompt_is_markdown_with_a_table(app: App) -> None:
    app.sign_in_as("alice")
    prompt = f"Delete **14** todos? See `done.txt`.\n\n{TABLE}"
    app.say(command("ask_confirm", {"title": "Clean up", "prompt": prompt}))
    card = app.card(kind="confirm")
    shown = card.locator.locator(".card-prompt")
    expect(shown.locator("strong")).to_have_text("14")
    expect(shown.locator("code")).to_have_text("done.txt")
    expect(shown).not_to_contain_text("**")
    table = shown.locator("table")
    expect(table.locator("th")).to_have_text(["Plan", "Seats", "Price"])
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator("tbody tr").first.locator("td")).to_have_text(["Team", "10", "$99"])
    aligns = (
        table.locator("tbody tr")
        .first.locator("td")
        .evaluate_all("(cells) => cells.map((c) => getComputedStyle(c).textAlign)")
    )
    assert aligns == ["left", "center", "right"]
    # Markup in the prompt is text, never HTML.
    app.say(command("ask_confirm", {"prompt": "Run <img src=x onerror=alert(1)>?"}))
    card = app.card(kind="confirm")
    expect(card.locator.locator(".card-prompt")).to_contain_text("<img src=x onerror=alert(1)>")
    expect(card.locator.locator(".card-prompt img")).to_have_count(0)


def test_a_long_streamed_reply_renders_each_finished_block_once(app: App) -> None:
    app.sign_in_as("alice")
    paragraphs = [f"Paragraph {n} says a few more words about item {n}." for n in range(300)]
    message = "\n\n".join(paragraphs)
    # Count every element the reply's body gets while it streams.
    app.page.evaluate(
        """() => {
          window.__added = 0;
          new MutationObserver((records) => {
            for (const r of records) {
              for (const n of r.addedNodes) {
                if (n.nodeType === 1 && n.closest && n.closest(".msg-agent")) {
                  window.__added += 1 + n.querySelectorAll("*").length;
                }
              }
            }
          }).observe(document.body, { childList: true, subtree: true });
        }"""
    )
    app.say(message)
    reply = app.reply()
    expect(reply.locator("p")).to_have_count(300)
    expect(reply.locator("p").last).to_have_text(
        "Paragraph 299 says a few more words about item 299."
    )
    expect(reply.locator("p").first).to_have_text(
        "You said: Paragraph 0 says a few more words about item 0."
    )
    added = app.page.evaluate("window.__added")
    final = reply.locator("*").count()
    # Rendering the whole text again on every word would add ~300 x 3,000 elements.
    assert added < 3 * final + 200, f"{added} elements were added for a reply of {final}"
