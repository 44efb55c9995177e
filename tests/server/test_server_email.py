"""Email end to end through a real SMTP server in the test (`aiosmtpd`): a new ask sends the
user a message with its simple card and a one-time link per button; opening a link shows the
ask and asks for one more click; confirming answers through the runtime's compare-and-set, and
a second click, another button's link, an expired link or a forged one each say why not."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from reach_helpers import Event, Mailbox, eventually, self_signed, smtp_server
from server_helpers import CONFIRM, TOKENS, Api, command, sqlite_url, start_api
from sqlalchemy import update

from handrail.errors import ConfigError
from handrail.runtime.agent import Agent
from handrail.server import ServerConfig, UserConfig
from handrail.server.auth import Authenticator
from handrail.server.reach_config import EmailConfig, email_config
from handrail.store.tables import answer_links

PUBLIC = "http://handrail.test"
KEY = b"k" * 32
EMAIL_USERS = [
    UserConfig(id="alice", token=TOKENS["alice"], email="alice@example.com"),
    UserConfig(id="bob", token=TOKENS["bob"]),
    UserConfig(id="root", token=TOKENS["root"], admin=True),
]
LINK = re.compile(re.escape(PUBLIC) + r"/links/([0-9a-f]{24}\.[A-Za-z0-9_-]+)")


@asynccontextmanager
async def emailing(
    tmp_path: Path, *, smtp: dict[str, Any] | None = None, **extra: Any
) -> AsyncIterator[tuple[Api, Mailbox]]:
    server = dict(smtp or {})
    client = server.pop("client", {"tls": "none"})
    with smtp_server(**server) as mailbox:
        email = EmailConfig(
            host="127.0.0.1", port=mailbox.port, sender="handrail@example.com", **client
        )
        settings: dict[str, Any] = {
            "users": EMAIL_USERS,
            "email": email,
            "public_url": PUBLIC,
            "link_key": KEY,
            **extra,
        }
        async with start_api(sqlite_url(tmp_path), tmp_path, **settings) as api:
            yield api, mailbox


async def ask(api: Api, user: str = "alice") -> tuple[str, dict[str, Any]]:
    stream = await api.prompt({"prompt": command("ask_confirm", CONFIRM)}, user=user)
    assert stream.status == 200, stream.problem
    return stream.history_id, stream.ask


async def mailed(mailbox: Mailbox, count: int = 1) -> EmailMessage:
    """The message the ask's ``ask.created`` event (published by the runtime) sent."""

    async def arrived() -> bool:
        return len(mailbox.messages) >= count

    await eventually(arrived)
    assert len(mailbox.messages) == count
    return mailbox.messages[-1]


def links_of(message: EmailMessage) -> dict[str, str]:
    """The button labels of the message's plain text part and their link tokens."""
    body = message.get_body(("plain",))
    assert body is not None
    text = body.get_content()
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = LINK.search(line)
        if match:
            found[line.split(": ", 1)[0]] = match.group(1)
    return found


async def test_an_ask_by_email_answered_by_link_once(tmp_path: Path) -> None:
    async with emailing(tmp_path) as (api, mailbox):
        history_id, pending = await ask(api)
        message = await mailed(mailbox)
        assert message["To"] == "alice@example.com"
        assert message["From"] == "handrail@example.com"
        assert message["Subject"] == "Clean up todos"
        links = links_of(message)
        assert list(links) == ["Delete 14 todos", "Keep them"]
        html = message.get_body(("html",))
        assert html is not None
        assert "Delete 14 completed todos?" in html.get_content()
        # The ask's own words take their own direction; the email's are English.
        assert '<html lang="en">' in html.get_content()
        assert '<p dir="auto">Delete 14 completed todos?' in html.get_content()

        # Opening a link shows the card and the choice, and answers nothing.
        opened = await api.client.get(f"/links/{links['Delete 14 todos']}")
        assert opened.status_code == 200
        assert opened.headers["referrer-policy"] == "no-referrer"
        assert "Delete 14 completed todos? This cannot be undone." in opened.text
        # The button's label is isolated in the page's sentence (an Arabic one stays whole).
        assert "Confirm: <bdi>Delete 14 todos</bdi>" in opened.text
        assert (await api.history(history_id))["pendingAsk"] is not None

        # One more click answers, through the same path as any other answer.
        sent = await api.client.post(f"/links/{links['Delete 14 todos']}")
        assert sent.status_code == 200, sent.text
        assert "Answer sent" in sent.text

        async def answered() -> dict[str, Any] | None:
            history = await api.history(history_id)
            return history if history["pendingAsk"] is None and history["rows"] else None

        history = await eventually(answered)
        [result] = [
            r
            for r in history["rows"]
            if r.get("toolCallId") == pending["toolCallId"] and r["type"] == "tool-result"
        ]
        assert result["result"] == {"action": "accept", "content": {"confirmed": True}}

        # The second click says so; the other button's link says the ask is answered.
        again = await api.client.post(f"/links/{links['Delete 14 todos']}")
        assert again.status_code == 410
        assert "This link was used already" in again.text
        reopened = await api.client.get(f"/links/{links['Delete 14 todos']}")
        assert "This link was used already" in reopened.text
        other = await api.client.post(f"/links/{links['Keep them']}")
        assert other.status_code == 409
        assert "This ask was already answered" in other.text


async def test_a_link_of_an_ask_answered_in_the_app_says_answered(tmp_path: Path) -> None:
    async with emailing(tmp_path) as (api, mailbox):
        history_id, pending = await ask(api)
        links = links_of(await mailed(mailbox))
        stream = await api.answer(history_id, pending["toolCallId"], {"action": "cancel"})
        assert stream.status == 200
        page = await api.client.get(f"/links/{links['Delete 14 todos']}")
        assert page.status_code == 409
        assert "This ask was already answered" in page.text
        assert "Confirm" not in page.text


async def test_a_link_of_an_ask_replaced_by_a_new_one_says_answered(tmp_path: Path) -> None:
    async with emailing(tmp_path) as (api, mailbox):
        history_id, first = await ask(api)
        old = links_of(await mailed(mailbox))
        # A new message cancels the ask, and the turn it starts asks again (same buttons).
        stream = await api.say(command("ask_confirm", CONFIRM), history_id)
        second = stream.ask
        assert second["toolCallId"] != first["toolCallId"]
        new = links_of(await mailed(mailbox, count=2))
        assert list(new) == list(old)
        for method in ("GET", "POST"):
            page = await api.client.request(method, f"/links/{old['Delete 14 todos']}")
            assert page.status_code == 409
            assert "This ask was already answered" in page.text
        # The old link answered nothing: the new ask still waits, and its own link answers it.
        assert (await api.history(history_id))["pendingAsk"]["toolCallId"] == second["toolCallId"]
        sent = await api.client.post(f"/links/{new['Keep them']}")
        assert sent.status_code == 200, sent.text


async def test_expired_and_forged_links_say_so(tmp_path: Path) -> None:
    async with emailing(tmp_path) as (api, mailbox):
        history_id, _pending = await ask(api)
        links = links_of(await mailed(mailbox))
        token = links["Keep them"]
        forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        page = await api.client.get(f"/links/{forged}")
        assert page.status_code == 404
        assert "This link is not valid" in page.text
        assert (await api.client.post(f"/links/{forged}")).status_code == 404
        link_id = token.split(".")[0]
        past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
        await api.store.db.write(
            lambda c: c.execute(
                update(answer_links).where(answer_links.c.id == link_id).values(expires=past)
            )
        )
        expired = await api.client.post(f"/links/{token}")
        assert expired.status_code == 410
        assert "This link expired" in expired.text
        assert (await api.history(history_id))["pendingAsk"] is not None


async def test_a_link_of_a_user_taken_out_of_the_configuration_answers_nothing(
    tmp_path: Path,
) -> None:
    """alice is mailed a link, then the server starts again without her (its authenticator is
    what a restart with the new user list makes): the link opens a page that says so and
    answers nothing; the ask still waits."""
    async with emailing(tmp_path) as (api, mailbox):
        history_id, _pending = await ask(api)
        token = links_of(await mailed(mailbox))["Keep them"]
        others = [user for user in EMAIL_USERS if user.id != "alice"]
        api.app.state.authenticator = Authenticator(others)
        for method in ("GET", "POST"):
            page = await api.client.request(method, f"/links/{token}")
            assert page.status_code == 410
            assert "This link no longer works" in page.text
            assert "Confirm" not in page.text
        history = await api.store.histories.get(history_id)
        assert history is not None
        assert history.pending_ask is not None


async def test_a_link_shows_no_more_than_the_card(tmp_path: Path) -> None:
    long_prompt = "Publish the draft? " + "Secret detail beyond the card. " * 12
    async with emailing(tmp_path) as (api, mailbox):
        stream = await api.prompt(
            {"prompt": command("ask_confirm", {"prompt": long_prompt, "title": "Publish"})}
        )
        history_id, _pending = stream.history_id, stream.ask
        message = await mailed(mailbox)
        card = (await api.history(history_id))["pendingAsk"]["simple"]
        assert len(card["text"]) <= 140
        assert card["text"].endswith("…")
        shown = card["text"].count("Secret detail beyond the card.")
        assert 0 < shown < 12
        for part in ("plain", "html"):
            body = message.get_body((part,))
            assert body is not None
            # The card's text (cut to 140), never the rest of the prompt.
            assert card["text"] in body.get_content()
            assert body.get_content().count("Secret detail beyond the card.") == shown
        links = links_of(message)
        page = await api.client.get(f"/links/{next(iter(links.values()))}")
        assert card["text"] in page.text
        assert page.text.count("Secret detail beyond the card.") == shown


async def test_no_address_no_email_and_another_users_ask_is_not_mailed(tmp_path: Path) -> None:
    async with emailing(tmp_path) as (api, mailbox):
        history_id, pending = await ask(api, user="bob")
        event = Event(
            kind="ask.created", user_id="bob", history_id=history_id, data={"ask": pending}
        )
        assert await api.app.state.reach.handle(event) == 0
        # An event naming alice for bob's conversation sends nothing either.
        forged = Event(
            kind="ask.created", user_id="alice", history_id=history_id, data={"ask": pending}
        )
        assert await api.app.state.reach.handle(forged) == 0
        assert mailbox.messages == []


def test_email_settings_come_from_the_file_and_the_environment() -> None:
    env = {
        "HANDRAIL_SMTP_HOST": "smtp.example.com",
        "HANDRAIL_SMTP_FROM": "bot@example.com",
        "HANDRAIL_SMTP_USERNAME": "bot",
        "HANDRAIL_SMTP_PASSWORD": "pw-secret",
    }
    config = email_config(None, env)
    assert config is not None
    assert (config.host, config.port, config.tls) == ("smtp.example.com", 587, "starttls")
    assert (config.username, config.password) == ("bot", "pw-secret")
    assert "pw-secret" not in repr(config)
    assert email_config(None, {}) is None
    tls = email_config({"host": "mail", "tls": "tls", "from": "a@b.example"}, {})
    assert tls is not None
    assert tls.port == 465
    with pytest.raises(ConfigError, match=r"email\.tls: must be one of"):
        email_config({"host": "mail", "tls": "ssl", "from": "a@b.example"}, {})
    with pytest.raises(ConfigError, match=r"email\.from: required"):
        email_config({"host": "mail"}, {})
    with pytest.raises(ConfigError, match="set both, or neither"):
        email_config({"host": "mail", "from": "a@b.example"}, {"HANDRAIL_SMTP_USERNAME": "x"})
    with pytest.raises(ConfigError, match=r"email\.password: unknown setting"):
        email_config({"host": "mail", "from": "a@b.example", "password": "x"}, {})
    data = {
        "users": [{"id": "alice", "token": "a" * 20, "email": "alice@example.com"}],
        "agents": [{"name": "helper"}],
        "email": {"host": "mail", "from": "a@b.example"},
    }
    with pytest.raises(ConfigError, match="public_url: required when email is on"):
        ServerConfig.from_mapping(data, env={})
    with pytest.raises(ConfigError, match="HANDRAIL_LINK_KEY: required"):
        ServerConfig.from_mapping({**data, "public_url": PUBLIC}, env={})
    config_ok = ServerConfig.from_mapping(
        {**data, "public_url": PUBLIC + "/"}, env={"HANDRAIL_LINK_KEY": "x" * 32}
    )
    assert config_ok.public_url == PUBLIC
    assert config_ok.users[0].email == "alice@example.com"


async def test_a_reminder_sends_the_card_again(tmp_path: Path) -> None:
    agents = [Agent("helper", instructions="You help people.", remind_after=30)]
    async with emailing(tmp_path, agents=agents) as (api, mailbox):
        history_id, pending = await ask(api)
        first = links_of(await mailed(mailbox))
        later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=31)
        await api.app.state.runtime.sweep_gates(later)
        reminder = await mailed(mailbox, count=2)
        assert reminder["Subject"] == "Reminder: Clean up todos"
        again = links_of(reminder)
        assert list(again) == list(first)
        assert set(again.values()).isdisjoint(first.values())  # links of their own
        # Either message's link answers; the first click wins.
        sent = await api.client.post(f"/links/{again['Keep them']}")
        assert sent.status_code == 200
        late = await api.client.post(f"/links/{first['Delete 14 todos']}")
        assert late.status_code == 409
        assert "This ask was already answered" in late.text
        deliveries = (await api.get("/deliveries")).json()["data"]
        assert sorted(d["type"] for d in deliveries) == ["ask.created", "ask.reminder"]
        assert {d["channel"] for d in deliveries} == {"email"}
        assert history_id
        assert pending["toolCallId"]


async def test_starttls_and_a_login(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    client = {"tls": "starttls", "ca_file": str(cert), "username": "bot", "password": "pw-1"}
    smtp = {"tls": (cert, key), "login": ("bot", "pw-1"), "client": client}
    async with emailing(tmp_path, smtp=smtp) as (api, mailbox):
        await ask(api)
        message = await mailed(mailbox)
        assert message["To"] == "alice@example.com"

        async def delivered() -> bool:
            found = (await api.get("/deliveries")).json()["data"]
            return [d["status"] for d in found] == ["delivered"]

        await eventually(delivered)


async def test_a_wrong_password_is_retried_then_fails_and_says_so(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    client = {"tls": "starttls", "ca_file": str(cert), "username": "bot", "password": "nope"}
    client.update(attempts=2, backoff=0.05)
    smtp = {"tls": (cert, key), "login": ("bot", "pw-1"), "client": client}
    async with emailing(tmp_path, smtp=smtp) as (api, mailbox):
        await ask(api)

        async def failed() -> dict[str, Any] | None:
            found = (await api.get("/deliveries")).json()["data"]
            return found[0] if found and found[0]["status"] == "failed" else None

        delivery = await eventually(failed)
        assert delivery["attempts"] == 2
        assert delivery["lastError"].startswith("The SMTP server refused")
        assert "nope" not in json.dumps(delivery)
        assert mailbox.messages == []
