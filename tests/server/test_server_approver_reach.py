"""Approvers are reached like owners: the ask events of a gate that names approvers
(``ask.created``, ``ask.answered``, ``ask.cancelled``, ``ask.reminder``) reach each approver's
``GET /api/events`` (``admins``: every admin), webhooks that want an approver fire for them,
and an approver with an address gets the email, whose links answer as that approver. They get
only what the gate needs: the call and its arguments, never the rest of the conversation (a
canary said earlier in it reaches no approver). A user who is not an approver hears nothing."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest
from event_stream import open_events, serving
from reach_helpers import WEBHOOK_SECRET, Mailbox, eventually, receiving, smtp_server
from server_helpers import TOKENS, Api, sqlite_url, start_api
from test_server_email import KEY, PUBLIC, links_of

from handrail._util import utc_now
from handrail.runtime.agent import Agent
from handrail.runtime.tools import ToolSet
from handrail.server import UserConfig
from handrail.server.reach_config import EmailConfig, webhook_configs
from handrail.store.events import ask_created_event

CANARY = "diary-canary-5c1e"
APPROVE = {"action": "accept", "content": {"confirmed": True}}
WIPE = 'call wipe_vault {"reason": "Rotate the keys"}'


@pytest.fixture(autouse=True)
def _carol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TOKENS, "carol", "carol-token-0123456789")


def users() -> list[UserConfig]:
    return [
        UserConfig(id="alice", token=TOKENS["alice"], email="alice@example.com"),
        UserConfig(id="bob", token=TOKENS["bob"], email="bob@example.com"),
        UserConfig(id="carol", token=TOKENS["carol"], email="carol@example.com"),
        UserConfig(id="root", token=TOKENS["root"], admin=True, email="root@example.com"),
    ]


def vault_agent(ran: list[str]) -> Agent:
    vault = ToolSet("local:vault", "Vault")

    @vault.tool(
        title="Wipe the vault",
        consequential=True,
        open_world=False,
        approvers=["bob", "admins"],
        quorum=2,
        remind_after=60,
    )
    def wipe_vault(reason: str) -> str:
        """Wipe every secret in the vault."""
        ran.append("wipe_vault")
        return "Wiped."

    return Agent("helper", instructions="You help people.", tool_sets=[vault])


@asynccontextmanager
async def running(tmp_path: Path, ran: list[str], **settings: Any) -> AsyncIterator[Api]:
    async with start_api(
        sqlite_url(tmp_path), tmp_path, agents=[vault_agent(ran)], users=users(), **settings
    ) as api:
        response = await api.request(
            "PUT", "/permissions/local:vault", json={"level": "non-consequential"}
        )
        assert response.status_code == 200, response.text
        # Something the approvers must never see: said before the call, in the conversation.
        said = await api.say(f"My diary says {CANARY}")
        api.history_id = said.history_id  # type: ignore[attr-defined]
        yield api


def auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[user]}"}


async def wipe(api: Api) -> dict[str, Any]:
    stream = await api.say(WIPE, api.history_id)  # type: ignore[attr-defined]
    ask = stream.ask
    assert (ask["approvers"], ask["quorum"]) == (["bob", "admins"], 2)
    return ask


async def test_the_ask_events_reach_every_approver_and_no_one_else(tmp_path: Path) -> None:
    ran: list[str] = []
    async with (
        running(tmp_path, ran) as api,
        serving(api.app) as (base, _server),
        httpx.AsyncClient(timeout=10) as client,
        open_events(client, base + "/api/events", auth("bob")) as bob,
        open_events(client, base + "/api/events", auth("root")) as root,
        open_events(client, base + "/api/events", auth("carol")) as carol,
    ):
        ask = await wipe(api)
        history_id = api.history_id  # type: ignore[attr-defined]
        heard: list[dict[str, Any]] = []
        for reader in (bob, root):
            created = await reader.until("ask.created")
            heard.append(created)
            assert created["historyId"] == history_id
            assert created["userId"] == "alice"
            assert created["approvers"] == ["bob", "admins"]
            assert created["data"]["ask"]["toolCallId"] == ask["toolCallId"]
            assert created["data"]["ask"]["toolName"] == "wipe_vault"
            assert "Rotate the keys" in json.dumps(created["data"]["ask"]["input"])
        # Bob's approval: the gate is asked again with who approved so far, to everyone.
        first = await api.post(
            f"/approvals/{history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="bob"
        )
        assert first.status_code == 200, first.text
        for reader in (bob, root):
            again = await reader.until("ask.created")
            heard.append(again)
            assert [a["userId"] for a in again["data"]["ask"]["approvedBy"]] == ["bob"]
        # The reminder reaches them too.
        later = utc_now() + dt.timedelta(seconds=120)
        await api.app.state.runtime.sweep_gates(later)
        for reader in (bob, root):
            heard.append(await reader.until("ask.reminder"))
        last = await api.post(
            f"/approvals/{history_id}", {"toolCallId": ask["toolCallId"], **APPROVE}, user="root"
        )
        assert last.status_code == 200, last.text
        for reader in (bob, root):
            answered = await reader.until("ask.answered")
            heard.append(answered)
            assert answered["data"] == {
                "toolCallId": ask["toolCallId"],
                "action": "accept",
                "kind": "confirm",
                "origin": "approval",
            }
        await eventually(lambda: _ran(ran))
        # A second call, denied by its owner: the cancel reaches the approvers.
        second = await wipe(api)
        for reader in (bob, root):
            heard.append(await reader.until("ask.created"))
        denied = await api.answer(
            history_id, second["toolCallId"], {"action": "cancel", "reason": "Not today"}
        )
        assert denied.status == 200
        for reader in (bob, root):
            cancelled = await reader.until("ask.cancelled")
            heard.append(cancelled)
            assert cancelled["data"]["reason"] == "Not today"
        # Only ask events, and only what the gate needs.
        await bob.nothing(0.2)
        await carol.nothing(0.1)
        assert {e["kind"] for e in heard} == {
            "ask.created",
            "ask.reminder",
            "ask.answered",
            "ask.cancelled",
        }
        text = json.dumps(heard)
        assert CANARY not in text
        for private in ("responseMessages", "promptIndex", "connectionInstructions"):
            assert private not in text


async def _ran(ran: list[str]) -> bool:
    return bool(ran)


def _hook(name: str, url: str, **extra: Any) -> Any:
    settings = {"name": name, "url": url, "secret_env": "OPS_SECRET", "backoff": 0.05, **extra}
    return webhook_configs([settings], {"OPS_SECRET": WEBHOOK_SECRET})[0]


async def _mails(mailbox: Mailbox, count: int) -> list[EmailMessage]:
    async def arrived() -> bool:
        return len(mailbox.messages) >= count

    try:
        await eventually(arrived)
    except AssertionError:
        raise AssertionError([m["To"] for m in mailbox.messages]) from None
    return list(mailbox.messages)


def _plain(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    return str(body.get_content())


async def test_webhooks_and_email_reach_the_approvers_whose_links_answer_as_them(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    with receiving() as bobs, receiving() as everyones, smtp_server() as mailbox:
        email = EmailConfig(
            host="127.0.0.1", port=mailbox.port, sender="handrail@example.com", tls="none"
        )
        hooks = [
            _hook("bobs", bobs.url, users=["bob"], events=["ask.created"]),
            _hook("everyones", everyones.url, events=["ask.created"]),
        ]
        async with running(
            tmp_path, ran, webhooks=hooks, email=email, public_url=PUBLIC, link_key=KEY
        ) as api:
            ask = await wipe(api)
            history_id = api.history_id  # type: ignore[attr-defined]

            async def posted() -> bool:
                return bool(bobs.received) and bool(everyones.received)

            await eventually(posted)
            # Bob's webhook fires for the gate waiting on him; the one for everyone fires
            # once for the event.
            [got] = [json.loads(r.body) for r in bobs.received]
            assert got["type"] == "ask.created"
            assert got["data"]["userId"] == "bob"
            assert got["data"]["ownerId"] == "alice"
            assert got["data"]["ask"]["toolCallId"] == ask["toolCallId"]
            assert [json.loads(r.body)["data"]["userId"] for r in everyones.received] == ["alice"]
            # Email: the owner, bob and the admin (carol is no approver).
            messages = await _mails(mailbox, 3)
            by_to = {m["To"]: m for m in messages}
            assert sorted(by_to) == ["alice@example.com", "bob@example.com", "root@example.com"]
            assert CANARY not in json.dumps([r.body.decode() for r in bobs.received])
            # The owner is no approver: their message offers only the deny.
            assert list(links_of(by_to["alice@example.com"])) == ["Deny"]
            bobs_mail = by_to["bob@example.com"]
            text = _plain(bobs_mail)
            assert "asks for your approval in alice's conversation" in text
            assert f"{PUBLIC}/inbox" in text
            assert f"/c/{history_id}" not in text
            html = bobs_mail.get_body(("html",))
            assert html is not None
            for body in (text, html.get_content()):
                assert CANARY not in body
            # Bob's link answers as bob: an approval, waiting for the quorum.
            links = links_of(bobs_mail)
            assert list(links) == ["Allow", "Deny"], text
            opened = await api.client.get(f"/links/{links['Allow']}")
            assert opened.status_code == 200, opened.text
            assert CANARY not in opened.text
            sent = await api.client.post(f"/links/{links['Allow']}")
            assert sent.status_code == 200, sent.text
            view = await api.history(history_id)
            assert [a["userId"] for a in view["pendingAsk"]["approvedBy"]] == ["bob"]
            assert ran == []
            # Bob's approval announced the ask again (who approved so far) for the open pages:
            # no new ask, so nothing is posted or mailed again.
            history = await api.store.histories.get(history_id)
            assert history is not None
            assert history.pending_ask is not None
            again_announced = ask_created_event("alice", history_id, history.pending_ask)
            assert again_announced.data["ask"]["approvedBy"]
            assert await api.app.state.reach.handle(again_announced) == 0
            # A reminder of the gate mails who has yet to answer: the owner and the admin,
            # not bob, who approved.
            reminder = ask_created_event(
                "alice", history_id, history.pending_ask, kind="ask.reminder"
            )
            assert await api.app.state.reach.handle(reminder) == 2
            reminded = (await _mails(mailbox, 5))[3:]
            assert sorted(m["To"] for m in reminded) == ["alice@example.com", "root@example.com"]
            # The admin's link reaches the quorum: the call runs once.
            admin_links = links_of(by_to["root@example.com"])
            done = await api.client.post(f"/links/{admin_links['Allow']}")
            assert done.status_code == 200, done.text
            await eventually(lambda: _ran(ran))
            assert ran == ["wipe_vault"]
            audit = (await api.get("/audit?tool=wipe_vault", user="root")).json()["data"]
            approvals = [
                (r["actor"], r["changes"]["via"]) for r in audit if r["action"] == "gate.approved"
            ]
            assert sorted(approvals) == [("bob", "link"), ("root", "link")]
            # A used link says so; the webhook logs name who each delivery was for.
            again = await api.client.post(f"/links/{links['Allow']}")
            assert again.status_code == 410
