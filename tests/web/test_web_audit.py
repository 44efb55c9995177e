"""The Audit page (``/audit``) and approvers in the browser: a user reads the gates of their own
conversations (filtered by tool, user and time) and downloads the JSON Lines and CSV exports;
another user does not see them and an admin does. An approver's inbox follows the events (a
call that waits on them shows without a reload, and leaves when it ends). An admin names a
saved connection's approvers on the Connections page: a user the server does not know is
refused under the field, a good setting shows in the tools table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect
from web_pages import App, command

from demo_server import DemoServer

NOTE = "Keep it for the audit"
RESTART_MS = 30_000


def _denied_delete(demo_server: DemoServer, title: str) -> str:
    """A delete_note approval of alice's, denied with a note: its conversation's id."""
    demo_server.reset_policy("alice")
    with demo_server.api("alice") as api:
        api.put("/permissions/local:notes", json={"level": "non-consequential"}).raise_for_status()
    asked = demo_server.ask("alice", command("call delete_note", {"title": title}))
    ask = asked["pendingAsk"]
    assert ask["kind"] == "confirm"
    with demo_server.api("alice") as api:
        api.post(
            f"/histories/{asked['historyId']}/turn",
            json={
                "askResponse": {"toolCallId": ask["toolCallId"], "action": "cancel", "reason": NOTE}
            },
        ).raise_for_status()
    return str(asked["historyId"])


def test_the_audit_page_filters_and_exports(
    app: App, second_tab: App, demo_server: DemoServer
) -> None:
    _denied_delete(demo_server, "Audit draft")
    app.sign_in_as("alice", "/audit")
    expect(app.page.get_by_role("heading", name="Audit log", level=1)).to_be_visible()
    expect(app.page.get_by_role("link", name="Audit")).to_have_attribute("aria-current", "page")
    table = app.page.locator("table.audit-table[data-loaded]")
    denied = table.locator("tr.audit-record[data-action='gate.denied']").first
    expect(denied).to_contain_text("Denied")
    expect(denied).to_contain_text("delete_note")
    expect(denied).to_contain_text(f"note: “{NOTE}”")
    expect(denied).to_contain_text("from a headless client")
    outcome = table.locator("tr.audit-record[data-action='gate.outcome']").first
    expect(outcome).to_contain_text("denied")
    app.shoot("audit-page")

    # Filters: by tool, and by time.
    filters = app.page.get_by_role("search", name="Filter the audit log")
    filters.get_by_label("Tool").fill("no_such_tool")
    filters.get_by_role("button", name="Filter").click()
    expect(app.page.locator(".audit-status")).to_have_text("No record matches.")
    expect(table).to_be_hidden()
    filters.get_by_label("Tool").fill("delete_note")
    filters.get_by_label("From").fill("2099-01-01T00:00")
    filters.get_by_role("button", name="Filter").click()
    expect(app.page.locator(".audit-status")).to_have_text("No record matches.")
    filters.get_by_label("From").fill("")
    filters.get_by_role("button", name="Filter").click()
    expect(table.locator("tr.audit-record").first).to_be_visible()
    tools = table.locator("td[data-label='Tool']")
    assert set(tools.all_inner_texts()) == {"delete_note"}

    # The exports hold the same records (filtered the same way).
    with app.page.expect_download() as csv_download:
        app.page.get_by_role("button", name="Download CSV").click()
    assert csv_download.value.suggested_filename == "audit.csv"
    csv_text = Path(csv_download.value.path()).read_text(encoding="utf-8")
    assert csv_text.startswith("id,created,actor,action,subject,historyId,ownerId,tool,changes")
    assert "gate.denied" in csv_text
    assert NOTE in csv_text
    with app.page.expect_download() as jsonl_download:
        app.page.get_by_role("button", name="Download JSON Lines").click()
    assert jsonl_download.value.suggested_filename == "audit.jsonl"
    lines = Path(jsonl_download.value.path()).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["tool"] for r in records} == {"delete_note"}
    assert any(r["action"] == "gate.denied" and r["changes"]["reason"] == NOTE for r in records)

    # Bob does not see alice's gates; the admin does.
    second_tab.sign_in_as("bob", "/audit")
    bob_filters = second_tab.page.get_by_role("search", name="Filter the audit log")
    bob_filters.get_by_label("Tool").fill("delete_note")
    bob_filters.get_by_role("button", name="Filter").click()
    status = second_tab.page.locator(".audit-status")
    expect(status).to_have_text(re.compile(r"record|No record matches"))
    owners = second_tab.page.locator("tr.audit-record td[data-label='Conversation of']")
    assert "alice" not in owners.all_inner_texts()
    expect(second_tab.page.locator(".audit-table")).not_to_contain_text(NOTE)
    second_tab.page.get_by_role("button", name="Sign out").click()
    second_tab.sign_in_as("admin", "/audit")
    admin_filters = second_tab.page.get_by_role("search", name="Filter the audit log")
    admin_filters.get_by_label("User").fill("alice")
    admin_filters.get_by_label("Tool").fill("delete_note")
    admin_filters.get_by_role("button", name="Filter").click()
    expect(
        second_tab.page.locator("tr.audit-record[data-action='gate.denied']").first
    ).to_contain_text(NOTE)


def test_an_approvers_inbox_follows_the_events(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    with demo_server.api("alice") as api:
        api.put("/permissions/local:team", json={"level": "non-consequential"}).raise_for_status()
    app.sign_in_as("bob", "/inbox")
    expect(app.page.locator("ul.inbox-list[data-loaded]")).to_be_attached()
    expect(app.page.locator("html")).to_have_attribute("data-live", "on")
    waiting = app.page.locator(".approvals-list .approval-item").filter(has_text="Live post")
    expect(waiting).to_have_count(0)
    asked = demo_server.ask("alice", command("call publish_note", {"title": "Live post"}))
    # No reload: the ask.created event reaches bob, an approver, and his inbox shows it.
    expect(waiting).to_have_count(1)
    expect(waiting).to_contain_text("Asked in alice's conversation")
    app.shoot("approver-inbox-live")
    with demo_server.api("alice") as api:
        api.post(
            f"/histories/{asked['historyId']}/turn",
            json={
                "askResponse": {
                    "toolCallId": asked["pendingAsk"]["toolCallId"],
                    "action": "cancel",
                    "reason": "Not today",
                }
            },
        ).raise_for_status()
    # The cancel reaches him too: it leaves.
    expect(waiting).to_have_count(0)


def test_an_admin_names_a_connections_approvers(app: App, demo_server: DemoServer) -> None:
    with demo_server.api("admin") as api:
        created = api.post(
            "/connections", json={"app": "notes", "name": "Approved notes", "trusted": True}
        )
        created.raise_for_status()
        connection_id = created.json()["data"]["id"]
    try:
        app.sign_in_as("admin", "/connections")
        card = app.page.locator(".connection", has_text="Approved notes")
        expect(card.locator(".badge-state-connected")).to_have_text("Connected", timeout=RESTART_MS)
        row = card.locator("tr[data-tool='delete_note']")
        expect(row.locator(".tool-rules")).to_have_text("No approvers named")
        card.locator("summary", has_text="Approvers").click()
        form = card.locator("form.approvals-form")
        form.get_by_label("For").select_option("delete_note")
        form.get_by_label("Approvers").fill("bob, nobody")
        form.get_by_role("button", name="Save approvers").click()
        error = form.locator(".approvals-errors li")
        expect(error).to_contain_text("Approvers: names no user: nobody")
        expect(form.get_by_label("Approvers")).to_have_attribute("aria-invalid", "true")
        with demo_server.api("admin") as api:
            saved = api.get(f"/connections/{connection_id}").raise_for_status().json()["data"]
        assert saved["approvals"] is None
        form.get_by_label("Approvers").fill("bob, admins")
        form.get_by_label("How many must approve").fill("2")
        form.get_by_label("Expires after (minutes)").fill("60")
        form.get_by_role("button", name="Save approvers").click()
        expect(card.locator(".badge-state-connected")).to_have_text("Connected", timeout=RESTART_MS)
        expect(card.locator("tr[data-tool='delete_note'] .tool-rules")).to_have_text(
            "2 of bob and any admin · expires after 1 h", timeout=RESTART_MS
        )
        expect(card.locator("tr[data-tool='list_notes'] .tool-rules")).to_have_text(
            "No approvers named"
        )
        app.shoot("connection-approvers", card)
        with demo_server.api("admin") as api:
            saved = api.get(f"/connections/{connection_id}").raise_for_status().json()["data"]
        assert saved["approvals"] == {
            "tools": {
                "delete_note": {"approvers": ["bob", "admins"], "quorum": 2, "expiresAfter": 3600}
            }
        }
    finally:
        with demo_server.api("admin") as api:
            api.delete(f"/connections/{connection_id}")


def test_the_audit_page_fits_a_phone(phone: App, demo_server: DemoServer) -> None:
    _denied_delete(demo_server, "Phone draft")
    phone.sign_in_as("alice", "/audit")
    expect(
        phone.page.locator("table.audit-table[data-loaded] tr.audit-record").first
    ).to_be_visible()
    width = phone.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"/audit scrolls sideways at 360px ({width}px wide)"
    phone.shoot("phone-audit")


def test_a_connections_changes_read_as_words_in_the_audit(
    app: App, demo_server: DemoServer
) -> None:
    # A connection's records listed its fields' JSON names ("changed app, name, ...,
    # agentInstructions"): they say which connection, and what changed, in words.
    with demo_server.api("admin") as api:
        created = api.post("/connections", json={"app": "notes", "name": "Audited notes"})
        created.raise_for_status()
        connection_id = created.json()["data"]["id"]
        api.patch(
            f"/connections/{connection_id}",
            json={
                "name": "Renamed notes",
                "trusted": True,
                "overrides": {"add_note": "consequential"},
            },
        ).raise_for_status()
        api.post(f"/connections/{connection_id}/instructions/reset").raise_for_status()
        api.delete(f"/connections/{connection_id}").raise_for_status()
    app.sign_in_as("admin", "/audit")
    table = app.page.locator("table.audit-table[data-loaded]")

    def details(action: str) -> str:
        row = table.locator(f"tr.audit-record[data-action='{action}']").first
        return str(row.locator("td[data-label='Details']").inner_text())

    assert details("connection.created") == "“Audited notes”, the notes app · not trusted"
    assert details("connection.updated") == (
        "changed name to “Renamed notes”, trusted it, tool classes"
    )
    assert details("connection.deleted") == "“Renamed notes”"
    assert details("connection.instructions.reset") == "instructions from the app's template"
    expect(table).not_to_contain_text("agentInstructions")


def test_an_approvals_standing_yes_reads_as_its_button_says(app: App) -> None:
    # "for conversation" / "for always": the scope's own values. The page's words come from
    # the page's module, run in the browser as the page runs it.
    app.sign_in_as("alice", "/audit")
    said = app.page.evaluate(
        """() => import('/static/audit.js').then(({ detailOf }) => [
          detailOf({ action: 'gate.approved', changes: { via: 'web', scope: 'conversation' } }),
          detailOf({ action: 'gate.approved', changes: { via: 'watch', scope: 'always' } }),
          detailOf({ action: 'gate.approved', changes: { via: 'link' } }),
        ])"""
    )
    assert said == [
        "from the web app · for this conversation",
        "from the watch · always for this tool",
        "from an email link",
    ]
