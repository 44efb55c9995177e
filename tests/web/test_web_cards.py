"""Every ask kind as a card: start from a prompt, answer in the card, see the agent's reply and
the summary that replaces the controls. Each test saves screenshots of its card."""

from __future__ import annotations

import re
import struct
import zlib
from datetime import UTC, datetime, timedelta

import httpx
from playwright.sync_api import expect
from web_pages import App, command

from demo_server import TOKENS, DemoServer
from examples import PIZZA


#: A 1x1 PNG, for a files answer.
def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x80\x00")
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def test_choice_plan_picker(app: App) -> None:
    app.sign_in_as("alice")
    app.start("Set up billing for my team")
    card = app.card(kind="choice")
    card.expect_pending()
    expect(card.locator.get_by_role("heading", name="Choose a plan")).to_be_visible()
    # The default is preselected; Submit carries the ask's label.
    expect(card.locator.get_by_role("radio", name="Team", exact=True)).to_be_checked()
    card.shoot("choice-one")
    card.locator.get_by_role("radio", name="Starter").check()
    card.locator.get_by_role("radio", name="Team", exact=True).check()
    card.click("Set up plan")
    expect(app.reply()).to_have_text(
        'Agent: ask_choice returned: {"action":"accept","content":{"selected":["team"]}}'
    )
    card.expect_summary("Chose Team")
    card.shoot("choice-one-answered")
    app.shoot("chat-choice-answered")


def test_choice_many_enforces_bounds_and_sends_other(app: App) -> None:
    app.sign_in_as("alice")
    app.goto("/")
    pizza = PIZZA
    app.say(command("ask_choice", pizza))
    card = app.card(kind="choice")
    submit = card.button("Add toppings")
    expect(submit).to_be_enabled()
    card.locator.get_by_role("checkbox", name="Olives").check()
    card.locator.get_by_label("Another topping").fill("Basil")
    expect(submit).to_be_disabled()  # four choices: one too many
    expect(card.locator.locator(".choice-status")).to_contain_text("Remove 1")
    card.shoot("choice-many")
    card.locator.get_by_role("checkbox", name="Mushrooms").uncheck()
    card.click("Add toppings")
    expect(app.reply()).to_contain_text('"selected":["cheese","olives"],"other":"Basil"')
    card.expect_summary("Chose Extra cheese, Olives and “Basil”")


def test_confirm_book_a_table(app: App, demo_server: DemoServer) -> None:
    """The booking action end to end in the browser: the level for the booking connection,
    a time among the free slots, then the prepared booking's preview confirmed once."""
    demo_server.reset_policy("alice")
    posts_before = _booking_posts(demo_server)
    app.sign_in_as("alice")
    app.start("Book a table")
    permission = app.card(origin="permission")
    expect(permission.locator).to_contain_text("Example booking wants to use “Book a table”")
    permission.locator.get_by_role("radio", name="Allow read/write").check()
    permission.click("Save and continue")
    selection = app.card(origin="selection")
    expect(selection.locator).to_contain_text("Which time for Book a table")
    selection.shoot("selection")
    selection.locator.get_by_role("radio", name="19:00").check()
    selection.click("Submit")
    confirmation = app.card(origin="confirmation")
    preview = confirmation.locator.locator("table.preview")
    expect(preview).to_contain_text("19:00")
    expect(preview).to_contain_text("A table for two")
    expect(confirmation.locator).not_to_contain_text("slt_")
    confirmation.shoot("confirmation-booking")
    confirmation.click("Confirm")
    expect(app.reply()).to_contain_text('book_slot returned: {"status":"completed"')
    confirmation.expect_summary("Confirmed: Confirm")
    selection.expect_summary("19:00")
    assert _booking_posts(demo_server) == posts_before + 1


def _booking_posts(demo_server: DemoServer) -> int:
    """How many bookings the demo's booking API was asked to make."""
    stats = httpx.get(
        demo_server.url + "/demo/booking/stats",
        headers={"Authorization": f"Bearer {TOKENS['admin']}"},
        timeout=10,
    ).json()["requests"]
    return sum(1 for r in stats if r["method"] == "POST" and r["path"] == "/bookings")


def test_destructive_confirm_and_deny(app: App) -> None:
    app.sign_in_as("alice")
    app.goto("/")
    app.say(
        command(
            "ask_confirm",
            {
                "title": "Clean up todos",
                "prompt": "Delete 14 completed todos? This cannot be undone.",
                "confirmLabel": "Delete 14 todos",
                "denyLabel": "Keep them",
                "destructive": True,
                "allowDecline": True,
            },
        )
    )
    card = app.card(kind="confirm")
    expect(card.button("Delete 14 todos")).to_have_class(re.compile(r"\bbtn-danger\b"))
    expect(card.button("Skip")).to_be_visible()
    card.shoot("confirm-destructive")
    card.click("Keep them")
    expect(app.reply()).to_contain_text('"confirmed":false')
    card.expect_summary("Denied: Keep them")


def test_markdown_edit_preview_and_changed(app: App) -> None:
    app.sign_in_as("alice")
    app.start("Draft an announcement")
    card = app.card(kind="markdown")
    editor = card.locator.get_by_label("Draft (markdown)")
    expect(editor).to_have_value(re.compile(r"^# We're live"))
    preview = card.locator.locator(".md-preview")
    expect(preview.get_by_role("heading", name="We're live")).to_be_visible()
    card.shoot("markdown")
    editor.fill("# We're live\n\nWe launched **today**. <script>alert(1)</script>")
    expect(preview.locator("strong")).to_have_text("today")
    expect(preview).to_contain_text("<script>alert(1)</script>")  # shown as text, never run
    expect(preview.locator("script")).to_have_count(0)
    card.click("Send it back")
    expect(app.reply()).to_contain_text('"changed":true')
    card.expect_summary("Sent back an edited draft")


def test_form_invoice_error_under_its_field_then_answer(app: App) -> None:
    app.sign_in_as("alice")
    app.start("Fill in invoice details")
    card = app.card(kind="form")
    expect(card.locator.get_by_role("switch", name="Email me the invoice")).to_be_checked()
    card.shoot("form-invoice")
    card.locator.get_by_label("Company name").fill("Acme")
    card.locator.get_by_label("Seats").fill("9999")  # out of range, forced through
    card.click("Send details")
    error = card.error_for("Seats")
    expect(error).to_be_visible()
    expect(error).to_contain_text("500")
    expect(card.locator.get_by_label("Seats")).to_have_attribute("aria-invalid", "true")
    card.expect_pending()
    card.shoot("form-error")
    card.locator.get_by_label("Seats").fill("12")
    card.locator.get_by_label("Region").select_option("eu")
    card.click("Send details")
    expect(app.reply()).to_contain_text('"company":"Acme"')
    expect(app.reply()).to_contain_text('"seats":12')
    card.expect_summary("Sent the details")


def test_form_every_field_type(app: App) -> None:
    app.sign_in_as("alice")
    app.goto("/")
    fields = [
        {"id": "site", "type": "url", "label": "Website"},
        {"id": "phone", "type": "phone", "label": "Phone", "helperText": "With the country code."},
        {"id": "at", "type": "time", "label": "Time", "default": "09:30"},
        {
            "id": "when",
            "type": "datetime",
            "label": "Meeting",
            "required": True,
            "default": "2026-10-01T09:30:00+02:00",
        },
        {
            "id": "tags",
            "type": "multiselect",
            "label": "Tags",
            "options": [{"id": "a", "label": "Alpha"}, {"id": "b", "label": "Beta"}],
        },
        {"id": "note", "type": "textarea", "label": "Note"},
        {"id": "mail", "type": "email", "label": "Email", "required": True},
        {"id": "size", "type": "number", "label": "Size", "min": 0, "max": 1.5},
    ]
    app.say(
        command("ask_form", {"title": "Every field", "prompt": "Fill these in.", "fields": fields})
    )
    card = app.card(kind="form")
    expect(card.locator.get_by_label("Time zone offset")).to_have_value("+02:00")
    card.shoot("form-field-types")
    card.locator.get_by_label("Website").fill("https://example.com")
    card.locator.get_by_label("Phone").fill("+1 (415) 555-2671")
    card.locator.get_by_role("checkbox", name="Beta").check()
    card.locator.get_by_label("Email").fill("a@example.com")
    card.locator.get_by_label("Size").fill("1.25")
    card.click("Submit")
    reply = app.reply()
    expect(reply).to_contain_text('"phone":"+14155552671"')
    expect(reply).to_contain_text('"when":"2026-10-01T09:30+02:00"')
    expect(reply).to_contain_text('"tags":["b"]')
    expect(reply).to_contain_text('"at":"09:30"')
    card.expect_summary("Sent the details")


def test_files_upload_and_answer(app: App) -> None:
    app.sign_in_as("alice")
    app.start("Upload a receipt")
    card = app.card(kind="files")
    submit = card.button("Send receipt")
    expect(submit).to_be_disabled()
    picker = card.locator.locator("input[type=file]")
    expect(picker).to_have_attribute("accept", re.compile(r"image/png.*application/pdf.*text/csv"))
    picker.set_input_files({"name": "receipt.png", "mimeType": "image/png", "buffer": _png()})
    expect(card.locator.locator(".file-item")).to_contain_text("receipt.png")
    card.shoot("files")
    submit.click()
    expect(app.reply()).to_contain_text('"filename":"receipt.png"')
    expect(app.reply()).to_contain_text('"fileId":')
    card.expect_summary("Sent 1 file")


def test_clarify_every_prompt_in_one_form(app: App) -> None:
    app.sign_in_as("alice")
    app.start("Create a database")
    card = app.card(kind="clarify")
    expect(card.locator.get_by_role("heading", name="Create database")).to_be_visible()
    card.shoot("clarify")
    card.click("Send answers")  # required prompts are unanswered
    expect(card.locator.locator(".field-error").first).to_have_text("Answer this question.")
    card.locator.get_by_label("Database name").fill("main")
    card.locator.get_by_role("radio", name="Frankfurt").check()
    card.locator.get_by_role("radio", name="Auto-generate (unique())").check()
    card.locator.get_by_role("radio", name="Yes, back it up").check()
    card.click("Send answers")
    reply = app.reply()
    expect(reply).to_contain_text('"protocol":"appwrite.clarify/v1"')
    expect(reply).to_contain_text('{"id":"name","kind":"text","value":"main"}')
    expect(reply).to_contain_text('{"id":"backups","kind":"confirm","confirmed":true}')
    card.expect_summary("Answered")
    app.page.reload()
    card = app.card(kind="clarify")
    card.expect_summary("Answered")
    expect(card.locator.locator(".summary-values")).to_contain_text("Frankfurt")


def test_permission_then_destructive_approval(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    app.sign_in_as("alice")
    app.start("Delete the old draft")
    permission = app.card(origin="permission")
    expect(permission.locator).to_contain_text("Notes wants to use “delete_note”")
    expect(permission.locator).to_contain_text("easy-to-undo changes run")
    permission.shoot("permission")
    permission.locator.get_by_role("radio", name="Allow read/write").check()
    permission.click("Save and continue")
    permission.expect_summary("Level saved: Allow read/write")
    approval = app.card(origin="approval")
    expect(approval.locator).to_contain_text("delete_note")
    expect(approval.button("Delete")).to_have_class(re.compile(r"\bbtn-danger\b"))
    approval.shoot("approval")
    approval.locator.get_by_role("radio", name="This conversation").check()
    approval.click("Delete")
    expect(app.reply()).to_contain_text("delete_note returned")
    approval.expect_summary("Approved delete_note: this conversation")
    app.goto("/grants")
    row = app.page.locator("tr", has_text="delete_note")
    expect(row).to_contain_text("This conversation")
    app.shoot("grants")
    row.get_by_role("button", name=re.compile("Revoke delete_note")).click()
    expect(app.page.locator("tr", has_text="delete_note")).to_have_count(0)
    notes = app.page.locator(".connection", has_text="local:notes")
    expect(notes).to_contain_text("Level: Allow read/write")
    notes.get_by_role("button", name="Forget the level for Notes").click()
    expect(notes).to_contain_text("Level: not set (its next use asks)")


def _confirmation_history(expires_at: datetime) -> dict[str, object]:
    history_id = "c0ffee" * 4
    ask_input = {
        "title": "Book a table",
        "prompt": "Send this booking to Trattoria Sole?",
        "confirmLabel": "Book it",
        "denyLabel": "Don't book",
    }
    iso = expires_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "id": history_id,
        "userId": "alice",
        "agent": "demo",
        "title": "Book a table",
        "created": "2026-11-30T07:00:00.000Z",
        "updated": "2026-11-30T07:00:00.000Z",
        "pendingAsk": {
            "toolCallId": "confirmation_1",
            "kind": "confirm",
            "input": ask_input,
            "simple": {
                "toolCallId": "confirmation_1",
                "kind": "confirm",
                "text": "Send it?",
                "buttons": [],
                "handoff": False,
            },
            "created": "2026-11-30T07:00:00.000Z",
            "origin": "confirmation",
            "toolName": "create_booking",
            "preview": {
                "method": "POST",
                "url": "http://127.0.0.1:8001/bookings",
                "body": {
                    "restaurant": "Trattoria Sole",
                    "partySize": 2,
                    "time": "2026-12-04T19:30:00+01:00",
                },
            },
            "expiresAt": iso,
        },
        "rows": [
            {"type": "user", "text": "Book a table", "created": "2026-11-30T07:00:00.000Z"},
            {
                "type": "tool-call",
                "toolName": "create_booking",
                "toolCallId": "confirmation_1",
                "args": ask_input,
                "ask": {"kind": "confirm", "status": "pending", "origin": "confirmation"},
                "created": "2026-11-30T07:00:00.000Z",
            },
        ],
    }


def test_confirmation_preview_countdown_and_expiry(app: App) -> None:
    """The confirmation card, designed before the server makes confirmations: the history is
    faked in the browser."""
    app.sign_in_as("alice")
    history = _confirmation_history(datetime.now(UTC) + timedelta(seconds=5))
    app.fake_history(history)
    app.goto(f"/c/{history['id']}")
    card = app.card(origin="confirmation")
    table = card.locator.locator("table.preview")
    expect(table.locator("tr", has_text="Method")).to_contain_text("POST")
    expect(table.get_by_role("row", name="Party size 2", exact=True)).to_be_visible()
    expect(card.locator.locator(".countdown")).to_contain_text("Expires in 0:0")
    expect(card.button("Book it")).to_be_enabled()
    card.shoot("confirmation")
    expect(card.locator.locator(".countdown")).to_contain_text("Expired", timeout=10_000)
    expect(card.button("Book it")).to_be_disabled()
    expect(card.locator.get_by_role("alert")).to_contain_text("can no longer be confirmed")
    card.shoot("confirmation-expired")


def test_approval_shows_its_own_held_call(app: App, demo_server: DemoServer) -> None:
    """Two calls of one tool in one step: the approval names the call it holds by id, so its
    card shows that call's arguments, never the other's."""
    demo_server.reset_policy("alice")
    with demo_server.api("alice") as client:
        client.put("/permissions/local:notes", json={"level": "non-consequential"})
    app.sign_in_as("alice")
    app.goto("/")
    first = command("call delete_note", {"title": "Shopping list"})
    second = command("call delete_note", {"title": "Meeting agenda"})
    app.say(f"{first}\n{second}")
    approval = app.card(origin="approval")
    line = approval.locator.locator(".tool-line")
    expect(line).to_contain_text('"Shopping list"')
    expect(line).not_to_contain_text("Meeting agenda")
    approval.click("Keep it")
    approval.expect_summary("Denied")
