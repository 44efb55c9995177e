"""Approvals steered in the browser: edit, then approve (the call's arguments as fields; the
call runs once with the edit and the card keeps what ran; a wrong edit's 400, named by the
field's label, is checked over HTTP in tests/runtime/test_approvals.py and
tests/server/test_server_connection_approvals.py: the demo's tools take free text), and
the quorum view (the owner sees who approved so far and may only deny; bob and an admin
approve from their inboxes; the call runs once, and a confirmed call shows as done)."""

from __future__ import annotations

from playwright.sync_api import expect
from web_pages import App, command

from demo_server import DemoServer


def _allow_read_write(app: App) -> None:
    permission = app.card(origin="permission")
    permission.locator.get_by_role("radio", name="Allow read/write").check()
    permission.click("Save and continue")


def test_edit_then_approve(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    app.sign_in_as("alice")
    app.goto("/")
    app.say(
        command("call delete_note", {"title": "Old draft"}).replace(
            "call delete_note", "call delete_note", 1
        )
    )
    _allow_read_write(app)
    approval = app.card(origin="approval")
    approval.locator.get_by_text("Edit, then approve").click()
    title = approval.locator.get_by_label("Title")
    expect(title).to_have_value("Old draft")
    title.fill("Meeting agenda")
    approval.shoot("approval-edit")
    approval.click("Approve with these values")
    expect(app.reply()).to_contain_text("editedByUser")
    expect(app.reply()).to_contain_text("Deleted the note “Meeting agenda”")
    approval.expect_summary("With your changes:")
    expect(approval.locator.locator(".card-summary")).to_contain_text("Meeting agenda")
    tool = app.page.locator("details.msg.tool").last
    expect(tool.locator(".tool-result")).to_contain_text("Ran with your changes (title)")
    approval.shoot("approval-edited")


def test_the_quorum_view(app: App, second_tab: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    app.sign_in_as("alice")
    app.goto("/")
    app.say(command("call publish_note", {"title": "Launch day", "body": "Friday at ten"}))
    _allow_read_write(app)
    approval = app.card(origin="approval")
    quorum = approval.locator.locator(".quorum-line")
    expect(quorum).to_contain_text("Needs 2 approvals from bob, admins. No approvals yet.")
    # The owner is no approver: only deny is offered.
    expect(approval.button("Allow")).to_be_hidden()
    approval.shoot("quorum-owner-waiting")
    # Bob approves from his inbox; he sees the call, not the conversation.
    second_tab.sign_in_as("bob", "/inbox")
    waiting = second_tab.page.locator(".approvals-list article.card").first
    expect(waiting).to_contain_text("Launch day")
    expect(second_tab.page.locator(".approvals")).not_to_contain_text("You: ")
    second_tab.shoot("quorum-approver-inbox")
    waiting.get_by_role("button", name="Allow", exact=True).click()
    expect(second_tab.page.locator(".approvals [role=status]").first).to_contain_text(
        "It waits for more approvals"
    )
    # The owner sees who approved so far.
    app.page.reload()
    expect(app.card(origin="approval").locator.locator(".quorum-line")).to_contain_text(
        "Approved so far (1 of 2): bob."
    )
    app.shoot("quorum-owner-one-of-two")
    # An admin's approval reaches the quorum: the call runs once.
    second_tab.page.get_by_role("button", name="Sign out").click()
    second_tab.sign_in_as("admin", "/inbox")
    last = second_tab.page.locator(".approvals-list article.card").first
    last.get_by_role("button", name="Allow", exact=True).click()
    expect(second_tab.page.locator(".approvals [role=status]").first).to_contain_text(
        "Approved: the call runs now."
    )
    app.page.reload()
    expect(app.reply()).to_contain_text("Published “Launch day” to the team board.")


def test_the_watch_shows_the_real_gate_and_a_denial_as_a_denial(
    phone: App, demo_server: DemoServer
) -> None:
    demo_server.reset_policy("bob")
    with demo_server.api("bob") as api:
        api.put("/permissions/local:notes", json={"level": "non-consequential"}).raise_for_status()
    asked = demo_server.ask("bob", command("call delete_note", {"title": "Old draft"}))
    assert asked["pendingAsk"]["kind"] == "confirm"
    phone.sign_in_as("bob", "/watch")
    card = phone.page.locator(".simple-card").filter(has_text="Old draft")
    expect(card.locator(".watch-gate")).to_contain_text("Approval")
    phone.shoot("watch-approval-gate")
    card.get_by_role("button", name="Keep it").click()
    status = phone.page.get_by_role("status").filter(has_text="sent")
    expect(status).to_contain_text("“Keep it” sent: the call did not run (you denied it).")
    with demo_server.api("bob") as api:
        records = api.get("/audit").raise_for_status().json()["data"]
    denied = next(r for r in records if r["action"] == "gate.denied")
    assert denied["changes"]["via"] == "watch"


def test_an_approver_approves_from_the_watch(phone: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("alice")
    with demo_server.api("alice") as api:
        api.put("/permissions/local:team", json={"level": "non-consequential"}).raise_for_status()
    asked = demo_server.ask("alice", command("call publish_note", {"title": "Watch post"}))
    tool_call_id = asked["pendingAsk"]["toolCallId"]
    phone.sign_in_as("bob", "/watch")
    card = phone.page.locator(".simple-card").filter(has_text="Watch post")
    expect(card.locator(".watch-gate")).to_contain_text("Your approval")
    expect(card.locator(".watch-quorum")).to_contain_text("For alice: needs 2 of bob, admins.")
    phone.shoot("watch-approver")
    card.get_by_role("button", name="Allow").click()
    status = phone.page.get_by_role("status").filter(has_text="sent")
    expect(status).to_contain_text("“Allow” sent. It waits for more approvals.")
    with demo_server.api("alice") as api:
        view = api.get(f"/histories/{asked['historyId']}").raise_for_status().json()["data"]
    assert view["pendingAsk"]["toolCallId"] == tool_call_id
    assert [a["userId"] for a in view["pendingAsk"]["approvedBy"]] == ["bob"]
    assert view["pendingAsk"]["approvedBy"][0]["via"] == "watch"
    # The owner ends it (a deny always may), so no other test's admin sees it waiting.
    with demo_server.api("alice") as api:
        api.post(
            f"/histories/{asked['historyId']}/turn",
            json={"askResponse": {"toolCallId": tool_call_id, "action": "cancel"}},
        ).raise_for_status()
