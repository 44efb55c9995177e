"""Connection instructions in the browser: an admin edits a connection's "Agent instructions"
(the toggle, the text, Reset to default after a change, the amber notice when off; a failed
save keeps the draft); another user reads them without controls; the agent page shows them
read-only under "From connections", with where each comes from and the notice when off."""

from __future__ import annotations

from playwright.sync_api import expect
from web_pages import App

from demo_server import DemoServer

TEMPLATE = (
    "Read notes_house_style before adding a note. Say which note you will delete before you "
    "delete it."
)


def test_an_admin_edits_the_agent_instructions_and_others_read_them(
    app: App, second_tab: App, demo_server: DemoServer
) -> None:
    with demo_server.api("admin") as api:
        response = api.post("/connections", json={"app": "notes", "name": "Guide"}, timeout=60)
        assert response.status_code == 201, response.text
        connection_id = response.json()["data"]["id"]
    try:
        app.sign_in_as("admin", "/connections")
        card = app.page.locator(f"#connection-{connection_id}")
        section = card.locator("[data-section='instructions']")
        expect(section.get_by_role("heading", name="Agent instructions")).to_be_visible()
        toggle = section.get_by_label("Tell agents to use Guide")
        expect(toggle).to_be_checked()
        text = section.get_by_label("What agents are told")
        expect(text).to_have_value(TEMPLATE)
        expect(section.get_by_role("button", name="Reset to default")).to_have_count(0)
        expect(section.locator(".instructions-off")).to_have_count(0)

        # The server's own instructions are only ever copied by hand, and saved on purpose.
        section.get_by_role("button", name="Copy the server's own instructions").click()
        expect(text).to_have_value("A notes app. Read notes_house_style before adding a note.")
        with demo_server.api("admin") as api:
            still = api.get(f"/connections/{connection_id}").json()["data"]
        assert still["agentInstructions"]["text"] == TEMPLATE

        # A failed save keeps the draft, with the reason.
        text.fill("   ")
        section.get_by_role("button", name="Save instructions").click()
        expect(section.get_by_role("alert")).to_contain_text("Not saved: the text is required")
        expect(text).to_have_value("   ")

        # Edited and turned off: saved, the amber notice, and Reset to default.
        text.fill("Say which note you will delete first.")
        toggle.uncheck()
        section.get_by_role("button", name="Save instructions").click()
        section = app.page.locator(f"#connection-{connection_id} [data-section='instructions']")
        expect(section.locator(".instructions-off")).to_contain_text(
            "Turned off: agents are not told to use Guide"
        )
        expect(section.get_by_label("What agents are told")).to_have_value(
            "Say which note you will delete first."
        )
        expect(section.get_by_label("Tell agents to use Guide")).not_to_be_checked()
        app.shoot("connection-instructions")
        with demo_server.api("admin") as api:
            saved = api.get(f"/connections/{connection_id}").json()["data"]
        assert saved["agentInstructions"] == {
            "enabled": False,
            "text": "Say which note you will delete first.",
            "template": {"id": "notes.usage", "version": 1},
        }

        # Reset adopts the default text and keeps the toggle off.
        section.get_by_role("button", name="Reset to default").click()
        section = app.page.locator(f"#connection-{connection_id} [data-section='instructions']")
        expect(section.get_by_label("What agents are told")).to_have_value(TEMPLATE)
        expect(section.get_by_label("Tell agents to use Guide")).not_to_be_checked()
        expect(section.locator(".instructions-off")).to_be_visible()
        expect(section.get_by_role("button", name="Reset to default")).to_have_count(0)

        # Another user reads them, with the notice, and no control.
        second_tab.sign_in_as("bob", "/connections")
        seen = second_tab.page.locator(f"#connection-{connection_id}")
        seen_section = seen.locator("[data-section='instructions']")
        expect(seen_section).to_contain_text(TEMPLATE)
        expect(seen_section.locator(".instructions-off")).to_be_visible()
        expect(seen.get_by_role("button")).to_have_count(0)
        expect(seen.get_by_role("textbox")).to_have_count(0)

        # The agent page: read-only, from connections, with the source and the notice.
        second_tab.goto("/agents")
        expect(second_tab.page.get_by_role("heading", name="Agents", level=1)).to_be_visible()
        source = second_tab.page.locator(f".source[data-connection-id='{connection_id}']").first
        expect(source.get_by_role("link", name="Guide")).to_have_attribute(
            "href", f"/connections#connection-{connection_id}"
        )
        expect(source).to_contain_text("App: notes")
        expect(source).to_contain_text("default instructions notes.usage (version 1)")
        expect(source.locator(".instructions-off")).to_contain_text("Turned off")
        expect(second_tab.page.locator(".from-connections").first).to_contain_text(
            "can change from task to task"
        )
        expect(source.get_by_role("button")).to_have_count(0)

        # Turned on again: given to the agent's conversations.
        app.page.locator(f"#connection-{connection_id} [data-section='instructions']").get_by_label(
            "Tell agents to use Guide"
        ).check()
        app.page.locator(f"#connection-{connection_id} [data-section='instructions']").get_by_role(
            "button", name="Save instructions"
        ).click()
        expect(app.page.locator(f"#connection-{connection_id} .instructions-off")).to_have_count(0)
        second_tab.page.reload()
        source = second_tab.page.locator(f".source[data-connection-id='{connection_id}']").first
        expect(source).to_contain_text("Given to this agent's conversations now.")
        second_tab.shoot("agent-from-connections")
    finally:
        with demo_server.api("admin") as api:
            api.delete(f"/connections/{connection_id}")


def test_the_editor_appears_only_with_template_metadata(app: App, demo_server: DemoServer) -> None:
    """A connection whose app has no default instructions gets no editor: instructions an admin
    saved for it through the API are shown read-only, and one with none shows no section."""
    created: list[str] = []
    with demo_server.api("admin") as api:
        for name, extra in (
            ("Wiki", {"agentInstructions": {"enabled": True, "text": "Search before you save."}}),
            ("Plain", {}),
        ):
            body = {
                "app": "custom",
                "name": name,
                "kind": "mcp-stdio",
                "mcp": {"command": "handrail-test-no-such-command", "args": []},
                **extra,
            }
            response = api.post("/connections", json=body, timeout=60)
            assert response.status_code == 201, response.text
            created.append(response.json()["data"]["id"])
    try:
        app.sign_in_as("admin", "/connections")
        wiki = app.page.locator(f"#connection-{created[0]}")
        section = wiki.locator("[data-section='instructions']")
        expect(section).to_contain_text("Search before you save.")
        expect(section.get_by_role("textbox")).to_have_count(0)
        expect(section.get_by_role("button")).to_have_count(0)
        plain = app.page.locator(f"#connection-{created[1]}")
        expect(plain.get_by_role("heading", name="Plain")).to_be_visible()
        expect(plain.locator("[data-section='instructions']")).to_have_count(0)
    finally:
        with demo_server.api("admin") as api:
            for connection_id in created:
                api.delete(f"/connections/{connection_id}")
