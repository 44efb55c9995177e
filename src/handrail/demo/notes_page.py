"""The notes page of ``tool-safety-classes.md`` with handrail's chat beside it:
``GET /demo/notes-page`` (``?user=bob`` speaks as another demo user).

The page is the document's application byte for byte (`NOTES_PAGE`, kept in
``notes_page.html``); the demo adds only two things around it: the WebMCP polyfill as the
first script of its head (so ``document.modelContext`` exists when the page's own script runs),
and, before ``</body>``, the ``<handrail-chat>`` element of the ``notes-page`` agent, which has
no tools of its own, so the page's ``list_notes``, ``add_note``, ``delete_note`` and
``notes_house_style`` are the agent's. The page's stylesheet (``../example.css``, which is
``/example.css`` here) puts the chat beside the notes.
"""

from __future__ import annotations

import html
from importlib import resources
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..runtime.agent import Agent
from ..server.config import UserConfig
from ..server.problems import not_found

__all__ = [
    "NOTES_PAGE",
    "NOTES_PAGE_AGENT",
    "NOTES_PAGE_PATH",
    "add_notes_page_routes",
    "notes_page_agent",
    "notes_page_document",
]

NOTES_PAGE_PATH: Final = "/demo/notes-page"
NOTES_PAGE_AGENT: Final = "notes-page"
#: The document's notes application, byte for byte.
NOTES_PAGE: Final = (
    resources.files("handrail").joinpath("demo", "notes_page.html").read_text(encoding="utf-8")
)
POLYFILL: Final = '  <script src="/static/webmcp.js"></script>\n'
EXAMPLE_CSS: Final = """/* The notes page in the demo: the notes, and the chat beside them. */
body {
  margin: 0;
  font: 16px/1.5 system-ui, sans-serif;
  display: grid;
  grid-template-columns: minmax(16rem, 1fr) minmax(20rem, 30rem);
  grid-template-rows: auto 1fr;
  gap: 0 1.5rem;
  min-height: 100vh;
}
header, main { grid-column: 1; padding: 0 1.5rem; }
.handrail-side { grid-column: 2; grid-row: 1 / span 2; padding: 1rem; }
.handrail-side handrail-chat { height: calc(100vh - 6rem); }
.notes li strong { display: block; }
.out { color: #1d6b33; }
@media (max-width: 48rem) {
  body { display: block; }
  .handrail-side handrail-chat { height: auto; }
}
"""


def notes_page_agent() -> Agent:
    """The agent of the notes page: no tools of its own; the page's tools are its tools."""
    return Agent(
        NOTES_PAGE_AGENT,
        instructions=(
            "You manage the notes of the web page the user is on, with the page's own tools: "
            "read notes_house_style before adding a note, and say which note you will delete "
            "before deleting it."
        ),
    )


def notes_page_document(token: str) -> str:
    """The page as the demo serves it: the document's page with the polyfill first in its head
    and the chat element (speaking with `token`) before ``</body>``."""
    head = "<head>\n"
    start = NOTES_PAGE.index(head) + len(head)
    page = NOTES_PAGE[:start] + POLYFILL + NOTES_PAGE[start:]
    chat = (
        '  <aside class="handrail-side" aria-label="handrail">\n'
        "    <p>Ask the agent: “List my notes”, “Delete the old draft”, or "
        '<code>call add_note {"title": "Ideas", "body": "One line."}</code>.</p>\n'
        f'    <handrail-chat agent="{NOTES_PAGE_AGENT}" '
        f'token="{html.escape(token, quote=True)}"></handrail-chat>\n'
        "  </aside>\n"
        '  <script type="module" src="/static/handrail-chat.js"></script>\n'
    )
    end = page.rindex("</body>")
    return page[:end] + chat + page[end:]


def add_notes_page_routes(router: APIRouter, users: tuple[UserConfig, ...]) -> None:
    """Add ``GET /demo/notes-page`` and its stylesheet ``/example.css``."""
    tokens = {user.id: user.token for user in users}
    default = users[0].id

    async def page(request: Request) -> Response:
        user = request.query_params.get("user", default)
        token = tokens.get(user)
        if token is None:
            listed = ", ".join(tokens)
            raise not_found("Not Found", f"No demo user is named {user!r}; the users are {listed}.")
        return Response(
            notes_page_document(token),
            media_type="text/html; charset=utf-8",
            headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
        )

    async def stylesheet(request: Request) -> Response:
        return Response(EXAMPLE_CSS, media_type="text/css; charset=utf-8")

    router.add_route(NOTES_PAGE_PATH, page, methods=["GET"], include_in_schema=False)
    router.add_route("/example.css", stylesheet, methods=["GET"], include_in_schema=False)
