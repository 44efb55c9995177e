"""Email: a message per new ask or reminder, with the ask's simple card and a one-time link per
button.

The message holds what the card holds and nothing more: its title, its text (the prompt cut to
140 characters), its buttons' labels, and a link to the conversation in the app when the card
hands off. An approver's message (a gate that names approvers, in another user's conversation)
says whose conversation asks, and links to the approver's inbox instead: they may not open the
conversation. Each button's link opens a page that shows the card and the chosen button, and asks
for one more click (mail scanners open links; opening one never answers).

The outbox keeps only the ids of the links, never a link's token: the token is the id and its
HMAC under the link key (`link_token`), made again when the message is sent.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import html
import smtplib
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any, Final

from .._util import new_id, utc_now
from ..asks import PendingAsk
from ..asks.text import cut_text
from ..store.outbox import AnswerLink
from .reach_config import EmailConfig

__all__ = [
    "SMTP_TIMEOUT",
    "email_payload",
    "link_id_of",
    "link_token",
    "new_links",
    "render_email",
    "send_email",
]

#: Seconds the SMTP server has for each step of one message.
SMTP_TIMEOUT: Final = 30.0
#: The links' path on the server (beside the web UI's pages, outside the API prefix).
LINKS_PATH: Final = "/links"
_SIGNATURE_BYTES: Final = 16
#: UTF-16 code units of a subject made of the card's text (an ask without a title).
_SUBJECT_TEXT_MAX: Final = 60


def link_token(key: bytes, link_id: str) -> str:
    """A link's token: ``<id>.<base64url HMAC-SHA256(key, id), cut to 16 bytes>``."""
    digest = hmac.new(key, b"link:" + link_id.encode("ascii"), hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(digest[:_SIGNATURE_BYTES]).rstrip(b"=").decode("ascii")
    return f"{link_id}.{signature}"


def link_id_of(key: bytes, token: str) -> str | None:
    """The link id of a token that this key signed, else None."""
    link_id, sep, _ = token.partition(".")
    if not sep or len(link_id) != 24 or not all(c in "0123456789abcdef" for c in link_id):
        return None
    return link_id if hmac.compare_digest(link_token(key, link_id), token) else None


def new_links(
    pending: PendingAsk, *, user_id: str, history_id: str, ttl: float
) -> list[AnswerLink]:
    """One link per button of the ask's card. A link lasts `ttl` seconds, and never beyond the
    ask's own expiry."""
    now = utc_now()
    expires = now + dt.timedelta(seconds=ttl)
    if pending.expires_at:
        try:
            ask_expires = dt.datetime.fromisoformat(pending.expires_at.replace("Z", "+00:00"))
        except ValueError:
            ask_expires = None
        if ask_expires is not None:
            expires = min(expires, ask_expires.astimezone(dt.UTC))
    return [
        AnswerLink(
            id=new_id(),
            user_id=user_id,
            history_id=history_id,
            tool_call_id=pending.tool_call_id,
            button_id=str(button.get("id")),
            expires=expires,
            created=now,
        )
        for button in pending.simple.get("buttons", [])
        if isinstance(button, Mapping) and isinstance(button.get("id"), str)
    ]


def email_payload(
    pending: PendingAsk,
    links: list[AnswerLink],
    *,
    to: str,
    history_id: str,
    reminder: bool,
    owner_id: str | None = None,
) -> dict[str, Any]:
    """What the outbox keeps to send the message: the address, the card (its title, text,
    button labels with their link ids, handoff) and the conversation (`owner_id`: its owner,
    for an approver's message)."""
    card = pending.simple
    by_button = {link.button_id: link.id for link in links}
    buttons = [
        {
            "label": str(b.get("label", "")),
            "style": str(b.get("style", "")),
            "link": by_button[b["id"]],
        }
        for b in card.get("buttons", [])
        if isinstance(b, Mapping) and b.get("id") in by_button
    ]
    out: dict[str, Any] = {
        "to": to,
        "historyId": history_id,
        "reminder": reminder,
        "text": str(card.get("text", "")),
        "buttons": buttons,
        "handoff": bool(card.get("handoff")),
    }
    if isinstance(card.get("title"), str):
        out["title"] = card["title"]
    if owner_id is not None:
        out["ownerId"] = owner_id
    return out


def render_email(
    payload: Mapping[str, Any], *, sender: str, key: bytes, public_url: str
) -> EmailMessage:
    """The message of a payload, in plain text and HTML."""
    title = payload.get("title")
    text = str(payload.get("text", ""))
    reminder = bool(payload.get("reminder"))
    # A header holds one line: a title or text from a tool or a model may hold line breaks
    # (``\n``, and U+2028, U+0085 and the like, which no header may hold either).
    subject = _one_line(title) if isinstance(title, str) else ""
    if not subject:
        subject = cut_text(_one_line(text), _SUBJECT_TEXT_MAX) or "An ask is waiting"
    subject = ("Reminder: " if reminder else "") + subject
    owner = payload.get("ownerId")
    approver = isinstance(owner, str) and bool(owner)
    # An approver answers in their inbox: the conversation is not theirs to open.
    app_link = (
        f"{public_url}/inbox" if approver else f"{public_url}/c/{payload.get('historyId', '')}"
    )
    buttons = [
        (str(b.get("label", "")), f"{public_url}{LINKS_PATH}/{link_token(key, str(b['link']))}")
        for b in payload.get("buttons", [])
        if isinstance(b, Mapping) and "link" in b
    ]
    if approver:
        opening = (
            f"An assistant asks for your approval in {owner}'s conversation."
            if not reminder
            else f"A call in {owner}'s conversation still waits for your approval."
        )
    else:
        opening = (
            "An assistant is waiting for your answer."
            if not reminder
            else "This ask still waits for your answer."
        )
    lines = [opening, ""]
    if isinstance(title, str) and title:
        lines += [title, ""]
    lines += [text, ""]
    for label, url in buttons:
        lines.append(f"{label}: {url}")
    if payload.get("handoff") or not buttons:
        lines += ["", f"Answer in handrail: {app_link}"]
    elif approver:
        lines += ["", f"Or open your inbox: {app_link}"]
    else:
        lines += ["", f"Or open the conversation: {app_link}"]
    lines += ["", "Each link works once. Opening one shows the ask and asks you to confirm."]
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = sender
    message["To"] = str(payload["to"])
    message["Date"] = format_datetime(utc_now())
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message.set_content("\n".join(lines))
    message.add_alternative(
        _html(title, text, buttons, app_link, bool(payload.get("handoff")), opening, approver),
        subtype="html",
    )
    return message


def _one_line(text: str) -> str:
    """`text` on one line: each run of white space, line breaks among it, one space."""
    return " ".join(text.split())


def _html(
    title: Any,
    text: str,
    buttons: list[tuple[str, str]],
    app_link: str,
    handoff: bool,
    opening: str,
    approver: bool,
) -> str:
    # The ask's title and text take their own direction (an ask in Arabic reads right to
    # left); the email's own words are English.
    parts = ['<!doctype html><html lang="en"><body style="font-family:sans-serif;max-width:36em">']
    parts.append(f"<p>{html.escape(opening)}</p>")
    if isinstance(title, str) and title:
        parts.append(f'<h2 dir="auto">{html.escape(title)}</h2>')
    parts.append(f'<p dir="auto">{html.escape(text)}</p><p>')
    for label, url in buttons:
        parts.append(
            f'<a href="{html.escape(url)}" style="display:inline-block;margin:0 .5em .5em 0;'
            f"padding:.5em 1em;border:1px solid #333;border-radius:6px;color:#111;"
            f'text-decoration:none" dir="auto">{html.escape(label)}</a>'
        )
    parts.append("</p>")
    what = (
        "Answer in handrail"
        if handoff or not buttons
        else "Open your inbox"
        if approver
        else "Open the conversation"
    )
    parts.append(f'<p><a href="{html.escape(app_link)}">{what}</a></p>')
    parts.append(
        '<p style="color:#555;font-size:small">Each link works once. Opening one shows the ask '
        "and asks you to confirm.</p></body></html>"
    )
    return "".join(parts)


async def send_email(config: EmailConfig, message: EmailMessage) -> None:
    """Send one message through the SMTP server (in a worker thread: `smtplib` blocks)."""
    await asyncio.to_thread(_send, config, message)


def _send(config: EmailConfig, message: EmailMessage) -> None:
    context = ssl.create_default_context(cafile=config.ca_file)
    smtp: smtplib.SMTP
    if config.tls == "tls":
        smtp = smtplib.SMTP_SSL(config.host, config.port, timeout=SMTP_TIMEOUT, context=context)
    else:
        smtp = smtplib.SMTP(config.host, config.port, timeout=SMTP_TIMEOUT)
    with smtp:
        if config.tls == "starttls":
            smtp.starttls(context=context)
        if config.username is not None and config.password is not None:
            smtp.login(config.username, config.password)
        smtp.send_message(message)
