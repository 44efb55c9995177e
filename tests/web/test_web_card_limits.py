"""The markdown and files cards check their limits before anything is sent (bugs found by
trying them): the markdown card's Submit is off over its limit and a server's error clears once
the draft is edited; the files card says which file beyond ``maxFiles`` was left out, and names
a file of the wrong type or over the upload limit (in MB, not a byte count) before uploading."""

from __future__ import annotations

import json

from playwright.sync_api import Route, expect
from web_pages import App, command


def test_markdown_submit_is_off_over_the_limit_and_a_stale_error_clears(app: App) -> None:
    app.sign_in_as("alice")
    app.say(
        command("ask_markdown", {"prompt": "Shorten it.", "initial": "Short.", "maxLength": 20})
    )
    card = app.card(kind="markdown")
    editor = card.locator.get_by_label("Draft (markdown)")
    submit = card.button("Submit")
    expect(submit).to_be_enabled()
    editor.fill("x" * 30)
    expect(card.locator.locator(".counter")).to_contain_text("10 too many")
    expect(submit).to_be_disabled()
    editor.fill("y" * 20)
    expect(submit).to_be_enabled()

    # The server refuses the draft once: its error shows under the editor...
    def refuse(route: Route) -> None:
        problem = {
            "status": 400,
            "title": "Validation failed",
            "detail": "The answer does not match the ask.",
            "fields": [
                {
                    "path": "content.markdown",
                    "code": "TOO_LONG",
                    "message": "The draft is refused.",
                    "fix": "Change it.",
                }
            ],
        }
        route.fulfill(status=400, content_type="application/problem+json", body=json.dumps(problem))

    app.page.route("**/api/prompt", refuse)
    submit.click()
    error = card.locator.locator(".field-error").filter(has_text="The draft is refused.")
    expect(error).to_be_visible()
    app.page.unroute("**/api/prompt")
    # ...and goes once the draft is edited: it was about the text as it was.
    editor.press("End")
    editor.press("Backspace")
    expect(error).to_be_hidden()
    expect(editor).not_to_have_attribute("aria-invalid", "true")


def test_files_beyond_max_wrong_types_and_large_files_are_named_before_upload(app: App) -> None:
    app.sign_in_as("alice")
    app.say(command("ask_files", {"prompt": "Send the notes.", "accept": ["text"], "maxFiles": 3}))
    card = app.card(kind="files")
    picker = card.locator.locator("input[type=file]")
    uploads: list[str] = []
    app.page.on("request", lambda r: uploads.append(r.url) if "/files/upload" in r.url else None)
    four = [
        {"name": f"{n}.txt", "mimeType": "text/plain", "buffer": f"note {n}".encode()}
        for n in ("a", "b", "c", "d")
    ]
    picker.set_input_files(four)
    status = card.locator.locator(".choice-status")
    expect(status).to_contain_text("At most 3 can be sent, so “d.txt” was not added.")
    expect(card.locator.locator(".file-item")).to_have_count(3)
    expect(status).to_contain_text("each at most 10.5 MB")
    expect(card.button("Submit")).to_be_enabled()

    # A file of another type and one over the limit are named, and nothing can be sent.
    card.locator.get_by_role("button", name="Remove a.txt").click()
    card.locator.get_by_role("button", name="Remove b.txt").click()
    png = {"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n" + b"0" * 8}
    picker.set_input_files([png])
    expect(card.locator.locator(".field-error:not([hidden])")).to_contain_text(
        "photo.png is not text"
    )
    expect(card.button("Submit")).to_be_disabled()
    card.locator.get_by_role("button", name="Remove photo.png").click()
    big = {"name": "big.txt", "mimeType": "text/plain", "buffer": b"x" * 11_000_000}
    picker.set_input_files([big])
    expect(card.locator.locator(".field-error:not([hidden])")).to_contain_text(
        "big.txt is 11.0 MB, more than the limit of 10.5 MB"
    )
    expect(card.button("Submit")).to_be_disabled()
    assert uploads == []
