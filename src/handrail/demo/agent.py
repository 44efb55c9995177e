"""The demo agent: the notes tools of ``tool-safety-classes.md``, the plan picker of the spec's
wire example, clarify, and the scripted model's playbook of plain-language prompts.

The notes live in the process's memory, one list per user (the tools read the calling user with
`calling_user_id`): every user starts with the same three notes, what one user adds or deletes
no other user sees, and restarting the demo brings them back.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any, Final

from ..runtime.agent import Agent, AsksOptions
from ..runtime.tools import ToolError, ToolSet, calling_user_id
from .booking_api import booking_action_set

__all__ = [
    "DEMO_AGENT_NAME",
    "DEMO_INSTRUCTIONS",
    "INVOICE_FORM",
    "NOTES_CONNECTION",
    "PLAN_PICKER",
    "PLAYBOOK",
    "PLAYBOOK_NOTES",
    "STARTING_NOTES",
    "demo_agent",
    "next_friday",
    "notes_tools",
]

DEMO_AGENT_NAME: Final = "demo"
#: The notes tools' connection: the permission ask and the grants name it.
NOTES_CONNECTION: Final = "local:notes"

#: The notes every demo starts with (the spec's notes application).
STARTING_NOTES: Final[tuple[tuple[str, str], ...]] = (
    ("Shopping list", "Coffee, oats, lemons."),
    ("Old draft", "An outline nobody needs any more."),
    ("Meeting agenda", "Budget, hiring, the launch."),
)

#: The plan picker of the spec's wire example (``agent-ui-asks.md``, "Wire example").
PLAN_PICKER: Final[Mapping[str, Any]] = {
    "title": "Choose a plan",
    "prompt": "Which plan should I set up?",
    "select": "one",
    "options": [
        {"id": "starter", "label": "Starter", "description": "$0, one seat"},
        {"id": "team", "label": "Team", "description": "$20 per seat"},
        {"id": "enterprise", "label": "Enterprise"},
    ],
    "default": ["team"],
    "submitLabel": "Set up plan",
}

ANNOUNCEMENT: Final[Mapping[str, Any]] = {
    "title": "Launch announcement",
    "prompt": "Here is a draft announcement. Edit anything, then send it back.",
    "initial": (
        "# We're live\n\nToday we launched **handrail**: agents that ask before they act.\n\n"
        "- Typed questions in the chat\n- Approvals before risky tools\n"
    ),
    "maxLength": 2000,
    "submitLabel": "Send it back",
}

INVOICE_FORM: Final[Mapping[str, Any]] = {
    "title": "Invoice details",
    "prompt": "A few details for the invoice.",
    "fields": [
        {
            "id": "company",
            "type": "text",
            "label": "Company name",
            "required": True,
            "maxLength": 120,
        },
        {
            "id": "email",
            "type": "email",
            "label": "Billing email",
            "helperText": "The invoice goes to this address.",
        },
        {"id": "seats", "type": "number", "label": "Seats", "min": 1, "max": 500, "integer": True},
        {"id": "start", "type": "date", "label": "Start date"},
        {
            "id": "region",
            "type": "select",
            "label": "Region",
            "options": [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}],
        },
        {"id": "notify", "type": "boolean", "label": "Email me the invoice", "default": True},
        {"id": "notes", "type": "textarea", "label": "Notes for accounting", "maxLength": 1000},
    ],
    "submitLabel": "Send details",
}

RECEIPT: Final[Mapping[str, Any]] = {
    "title": "Upload a receipt",
    "prompt": "Upload the receipt for your expense report.",
    "accept": ["image", "pdf", "text", "csv"],
    "maxFiles": 3,
    "submitLabel": "Send receipt",
}

DATABASE: Final[Mapping[str, Any]] = {
    "title": "Create database",
    "prompts": [
        {"id": "name", "kind": "text", "question": "Database name", "placeholder": "main"},
        {
            "id": "region",
            "kind": "choice",
            "question": "Where should it run?",
            "options": [
                {"id": "fra", "label": "Frankfurt"},
                {"id": "nyc", "label": "New York"},
                {"id": "syd", "label": "Sydney"},
            ],
        },
        {
            "id": "id_mode",
            "kind": "choice",
            "question": "Database ID",
            "options": [
                {"id": "unique", "label": "Auto-generate (unique())"},
                {"id": "custom", "label": "I'll provide a custom ID"},
            ],
        },
        {
            "id": "backups",
            "kind": "confirm",
            "question": "Turn on daily backups?",
            "confirmLabel": "Yes, back it up",
            "cancelLabel": "No backups",
            "hint": "Backups are kept for seven days.",
        },
    ],
}


def next_friday(today: dt.date | None = None) -> str:
    """The date of the coming Friday (a week on, when today is one), as YYYY-MM-DD."""
    today = today or dt.date.today()
    return (today + dt.timedelta(days=(4 - today.weekday()) % 7 or 7)).isoformat()


#: "Book a table" books through the example booking API (`handrail.demo.booking_api`, mounted
#: at /demo/booking): without a time, the free slots of the date are offered (a selection),
#: then the prepared booking is shown for confirmation and sent once.
BOOKING: Final[Mapping[str, Any]] = {"date": next_friday(), "notes": "A table for two"}


def _command(verb: str, value: Mapping[str, Any]) -> str:
    return f"{verb} {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"


#: The scripted model's playbook: each plain-language prompt (as the page lists it) and the
#: command text it runs, which leads to its kind of ask.
PLAYBOOK: Final[Mapping[str, str]] = {
    "Set up billing for my team": _command("ask_choice", PLAN_PICKER),
    "Delete the old draft": _command("call delete_note", {"title": "Old draft"}),
    "Book a table": _command("call book_slot", BOOKING),
    "Draft an announcement": _command("ask_markdown", ANNOUNCEMENT),
    "Fill in invoice details": _command("ask_form", INVOICE_FORM),
    "Upload a receipt": _command("ask_files", RECEIPT),
    "Create a database": _command("clarify", DATABASE),
    "List my notes": _command("call list_notes", {}),
}

#: Notes the page shows with some playbook prompts.
PLAYBOOK_NOTES: Final[Mapping[str, str]] = {
    "Book a table": (
        "calls the example booking API over HTTP: pick a time, then review the prepared "
        "booking and confirm it; it is sent once, and only after you confirm."
    ),
}

DEMO_INSTRUCTIONS: Final = (
    "You are the assistant of handrail's demo. You manage the user's notes with the notes "
    "tools (read notes_house_style before adding one), set up billing plans (ask which plan "
    "with ask_choice: Starter, Team or Enterprise), draft announcements (send the draft with "
    "ask_markdown), collect invoice details (ask_form), receipts (ask_files) and the details "
    "of a new database (clarify), and book tables with find_slots and book_slot (the user "
    "reviews and confirms each booking). "
    "When you need the user to choose, confirm, edit, fill in or upload something, ask with an "
    "ask tool instead of asking in plain text."
)


def _delete_approval(arguments: dict[str, Any]) -> dict[str, Any]:
    title = str(arguments.get("title", "this note"))[:200]
    return {
        "title": "Delete a note",
        "prompt": f"Delete the note “{title}”? It cannot be undone.",
        "confirmLabel": "Delete",
        "denyLabel": "Keep it",
        "destructive": True,
    }


def notes_tools() -> ToolSet:
    """The notes application of ``tool-safety-classes.md`` as a trusted tool set: one
    read-only tool, one mutating, one consequential, and a skill. Each user has their own
    notes, starting with the three of `STARTING_NOTES`."""
    by_user: dict[str, list[dict[str, str]]] = {}

    def my_notes() -> list[dict[str, str]]:
        user = calling_user_id() or ""
        if user not in by_user:
            by_user[user] = [{"title": title, "body": body} for title, body in STARTING_NOTES]
        return by_user[user]

    tools = ToolSet(NOTES_CONNECTION, "Notes")

    @tools.tool(read_only=True, open_world=False)
    def list_notes() -> list[dict[str, str]]:
        """List every note, with its title and body."""
        return [dict(note) for note in my_notes()]

    @tools.tool(read_only=False, consequential=False, open_world=False)
    def add_note(title: str, body: str) -> str:
        """Add a note with a title and a body.

        Args:
            title: A short title
            body: The note itself
        """
        my_notes().append({"title": title, "body": body})
        return f"Added the note “{title}”."

    @tools.tool(consequential=True, destructive=True, open_world=False)
    def delete_note(title: str) -> str:
        """Delete the note with this exact title. It cannot be undone.

        Args:
            title: The note's title
        """
        notes = my_notes()
        for index, note in enumerate(notes):
            if note["title"] == title:
                del notes[index]
                return f"Deleted the note “{title}”."
        titles = ", ".join(note["title"] for note in notes)
        raise ToolError(f"No note is titled “{title}”. The notes are: {titles}.")

    @tools.tool(read_only=True, skill=True, open_world=False)
    def notes_house_style() -> str:
        """How notes in this app should be titled and written. Read this before adding a note."""
        return (
            "Title a note with two to four words in sentence case. Write the body as one line. "
            "Never delete a note without saying which one first."
        )

    return tools


def team_tools() -> ToolSet:
    """A shared board whose posts need two approvals (bob's and an admin's): the demo of
    approvers and a quorum. Each approval waits in the approvers' inbox."""
    board: list[dict[str, str]] = []
    tools = ToolSet("local:team", "Team board")

    @tools.tool(
        title="Publish to the team board",
        consequential=True,
        open_world=False,
        approvers=["bob", "admins"],
        quorum=2,
    )
    def publish_note(title: str, body: str = "") -> str:
        """Publish a note to the team board (bob and an admin approve it first).

        Args:
            title: The note's title
            body: What the post says
        """
        board.append({"title": title, "body": body, "by": calling_user_id() or ""})
        return f"Published “{title}” to the team board."

    return tools


#: The longest wait `wait_a_while` takes.
WAIT_MAX_S: Final = 60


def clock_tools() -> ToolSet:
    """A tool that takes its time, to try Stop on: ``call wait_a_while {"seconds": 30}``."""
    tools = ToolSet("local:clock", "Clock")

    @tools.tool(title="Wait a few seconds", read_only=True, open_world=False)
    async def wait_a_while(seconds: int = 10) -> str:
        """Wait a number of seconds (at most 60), then say so: a long task to try Stop on.

        Args:
            seconds: How long to wait, in seconds
        """
        waited = max(0, min(int(seconds), WAIT_MAX_S))
        await asyncio.sleep(waited)
        return f"Waited {waited} seconds."

    return tools


def demo_agent(
    *, name: str = DEMO_AGENT_NAME, model: str | None = None, booking_url: str | None = None
) -> Agent:
    """A new demo agent with its own notes (`notes_tools`), every ask kind, clarify, and, with
    `booking_url` (where the example booking API runs), the booking action set."""
    action_sets = [booking_action_set(booking_url)] if booking_url else []
    return Agent(
        name,
        instructions=DEMO_INSTRUCTIONS,
        model=model,
        asks=AsksOptions(approvals={"delete_note": _delete_approval}),
        tool_sets=[notes_tools(), team_tools(), clock_tools()],
        action_sets=action_sets,
        clarify=True,
    )
