"""The surface an answer came from, as the audit log records it, for the web UI's inbox: an ask
answered in place and approvals denied in bulk there are ``via: "web"`` (the inbox answers
through ``POST /histories/{id}/turn``, whose default surface is ``headless``, so it names its
own with ``X-Handrail-Via``)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from web_pages import App, command

from demo_server import DemoServer

CONFIRM = {"prompt": "Archive the surface report?", "confirmLabel": "Archive", "denyLabel": "Keep"}


def _gate_answers(demo_server: DemoServer, history_id: str) -> list[tuple[str, Any]]:
    """The (action, via) of every answer the audit log holds for `history_id`."""
    with demo_server.api("bob") as api:
        records = api.get("/audit").raise_for_status().json()["data"]
    return [
        (r["action"], r["changes"].get("via"))
        for r in records
        if r.get("historyId") == history_id and r["action"] not in ("gate.asked", "gate.outcome")
    ]


def test_answers_from_the_inbox_are_recorded_as_web(app: App, demo_server: DemoServer) -> None:
    demo_server.reset_policy("bob")
    with demo_server.api("bob") as api:
        api.put("/permissions/local:notes", json={"level": "non-consequential"}).raise_for_status()
    question = demo_server.ask("bob", command("ask_confirm", CONFIRM))["historyId"]
    approval = demo_server.ask("bob", command("call delete_note", {"title": "Surface draft"}))
    assert approval["pendingAsk"]["kind"] == "confirm"  # the approval, as a plain ask
    denied = approval["historyId"]

    app.sign_in_as("bob", "/inbox")
    page = app.page
    item = page.locator(f'.inbox-item[data-history-id="{question}"]')
    item.get_by_role("button", name="Answer here").click()
    item.locator("article.card").get_by_role("button", name="Archive").click()
    expect(item).to_have_count(0)

    held = page.locator(f'.inbox-item[data-history-id="{denied}"]')
    held.get_by_label("Select “Delete a note”").check()
    page.get_by_role("button", name="Deny selected").click()
    expect(page.locator(".inbox-said")).to_contain_text("Denied 1")

    assert _gate_answers(demo_server, question) == [("gate.answered", "web")]
    assert _gate_answers(demo_server, denied) == [("gate.denied", "web")]
