"""The one-time answer links of emails: ``GET /links/{token}`` and ``POST /links/{token}``.

Opening a link (``GET``) only shows: the ask's card (its title, text and the chosen button) and
one button that confirms the choice. Confirming (``POST``) marks the link used, once, and
presses the card's button through the runtime's answer path, the same compare-and-set as any
other answer: the first answer wins. A link whose token is not this server's shows "not
valid"; a used link, an expired one, and one whose ask was answered, cancelled or replaced
meanwhile each say so. A page never shows more than the card does. A link of an approver's
email (a gate that names approvers, in another user's conversation) answers as that approver
(`Runtime.start_approval`), while they are still one of the gate's approvers.

The pages are small server-rendered HTML (no script), outside the API prefix and the OpenAPI
document; the token in the URL is the only credential, so the pages send no referrer.
"""

from __future__ import annotations

import contextlib
import html
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from .._util import utc_now
from ..asks import resolve_button_answer
from ..errors import ConfirmationExpired, HandrailError, HistoryNotFound, NotOwner, NotPending
from ..runtime.approvals import is_approver
from ..runtime.runtime import Runtime
from ..runtime.turn import Principal
from ..store.outbox import AnswerLink, AnswerLinkRepo
from .auth import Authenticator
from .bodies import store_of
from .email import LINKS_PATH, link_id_of
from .problems import PAGE_HEADERS, html_page

__all__ = ["LINK_PAGE_HEADERS", "add_link_routes"]

#: A page's headers, with the confirm button's form allowed to post to this server.
LINK_PAGE_HEADERS: Final = {
    **PAGE_HEADERS,
    "Content-Security-Policy": PAGE_HEADERS["Content-Security-Policy"] + "; form-action 'self'",
}
#: The answering surface recorded for an answer sent from an email link.
LINK_SURFACE: Final = "link"

_NOT_VALID: Final = (
    "This link is not valid",
    "Check that the whole link was copied from the email, or answer in handrail.",
)
_USED: Final = ("This link was used already", "The ask is answered. Nothing more to do here.")
_EXPIRED: Final = ("This link expired", "Answer the ask in handrail instead, if it still waits.")
_GONE: Final = (
    "This link no longer works",
    "The person it was sent to is no longer a user of this server.",
)
_ANSWERED: Final = (
    "This ask was already answered",
    "It was answered, cancelled or replaced elsewhere, so this link no longer answers it.",
)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return html_page(title, body, status=status, headers=LINK_PAGE_HEADERS)


def _message(what: tuple[str, str], status: int) -> HTMLResponse:
    return _page(what[0], f'<p class="muted">{html.escape(what[1])}</p>', status)


async def _open(
    request: Request, token: str
) -> tuple[AnswerLink, dict[str, object], dict[str, object]] | HTMLResponse:
    """The link, its ask's card and its button, or the page that says why not."""
    key = getattr(request.app.state, "link_key", None)
    link_id = link_id_of(key, token) if isinstance(key, bytes) else None
    repo = AnswerLinkRepo(store_of(request).db)
    link = await repo.get(link_id) if link_id is not None else None
    if link is None:
        return _message(_NOT_VALID, 404)
    if link.used is not None:
        return _message(_USED, 410)
    if link.expires <= utc_now():
        return _message(_EXPIRED, 410)
    authenticator: Authenticator = request.app.state.authenticator
    if not authenticator.knows(link.user_id):
        return _message(_GONE, 410)
    history = await store_of(request).histories.get(link.history_id)
    pending = history.pending_ask if history is not None else None
    if (
        history is None
        or pending is None
        or pending.tool_call_id != link.tool_call_id
        or (
            history.owner_id != link.user_id
            and not is_approver(pending, _principal(request, link.user_id))
        )
    ):
        return _message(_ANSWERED, 409)
    card = pending.simple
    buttons = [b for b in card.get("buttons", []) if isinstance(b, dict)]
    button = next((b for b in buttons if b.get("id") == link.button_id), None)
    if button is None:
        return _message(_ANSWERED, 409)
    return link, card, button


def _principal(request: Request, user_id: str) -> Principal:
    authenticator: Authenticator = request.app.state.authenticator
    return authenticator.user(user_id)


def _card_html(card: dict[str, object]) -> str:
    title = card.get("title")
    parts = ['<div class="card">']
    if isinstance(title, str) and title:
        parts.append(f'<strong dir="auto">{html.escape(title)}</strong>')
    parts.append(f"""<p dir="auto">{html.escape(str(card.get("text", "")))}</p></div>""")
    return "".join(parts)


async def show_link(request: Request) -> Response:
    opened = await _open(request, str(request.path_params["token"]))
    if isinstance(opened, HTMLResponse):
        return opened
    _, card, button = opened
    label = html.escape(str(button.get("label", "")))
    style = ' class="danger"' if button.get("style") == "danger" else ""
    body = (
        f"{_card_html(card)}<p>You chose <bdi><strong>{label}</strong></bdi>. Nothing is sent "
        f'until you confirm.</p><form method="post"><button type="submit"{style}>Confirm: '
        f"<bdi>{label}</bdi></button></form>"
    )
    return _page("Confirm your answer", body)


async def use_link(request: Request) -> Response:
    opened = await _open(request, str(request.path_params["token"]))
    if isinstance(opened, HTMLResponse):
        return opened
    link, card, button = opened
    repo = AnswerLinkRepo(store_of(request).db)
    if not await repo.use(link.id, now=utc_now()):
        return _message(_USED, 410)
    runtime: Runtime = request.app.state.runtime
    principal = _principal(request, link.user_id)
    history = await store_of(request).histories.get(link.history_id)
    try:
        if history is not None and history.owner_id != link.user_id:
            # An approver's link: their approval (or deny), as from their inbox.
            response = resolve_button_answer(card, link.button_id)
            await runtime.start_approval(
                principal,
                link.history_id,
                {"toolCallId": link.tool_call_id, **response},
                via="link",
            )
        else:
            await runtime.start_button(
                principal, link.history_id, link.tool_call_id, link.button_id, via="link"
            )
    except NotPending:
        return _message(_ANSWERED, 409)
    except (HistoryNotFound, NotOwner):
        return _message(_ANSWERED, 409)
    except ConfirmationExpired:
        return _message(_EXPIRED, 410)
    except HandrailError:
        await repo.release(link.id)
        return _message(
            ("This answer could not be sent", "Answer the ask in handrail instead."), 409
        )
    except Exception:
        # The answer met the storage unavailable (a lost connection, a full disk) or another
        # fault: the link works again, so a click once the server is back answers, or says
        # the ask was answered (a change saved as its connection was lost). The edge answers
        # this request (503 with Retry-After for the storage's trouble).
        with contextlib.suppress(Exception):
            await repo.release(link.id)
        raise
    label = html.escape(str(button.get("label", "")))
    body = f"{_card_html(card)}<p>Your answer <bdi><strong>{label}</strong></bdi> was sent.</p>"
    return _page("Answer sent", body)


def add_link_routes(router: APIRouter) -> None:
    """Add ``/links/{token}`` (GET shows, POST answers), outside the API prefix."""
    path = LINKS_PATH + "/{token}"
    router.add_route(path, show_link, methods=["GET", "HEAD"], include_in_schema=False)
    router.add_route(path, use_link, methods=["POST"], include_in_schema=False)
