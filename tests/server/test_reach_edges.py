"""Edges of webhooks and email, against real servers on loopback: a receiver that answers a byte
at a time is cut at the attempt's timeout (and one that sends its 2xx, then its body slowly, is
delivered at once, without waiting for the body); an ask whose title holds a line break other
than ``\\n`` (U+2028, from a tool or a model) is still mailed, its subject on one line; a message
that cannot be made is a failed attempt in the log, never a claim held forever; a message has a
``Date`` and a subject cut at a word; an email link whose answer met the storage unavailable
works again once the server is back; a plain-text webhook secret verifies as the documents say."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import email.utils
import errno
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from reach_helpers import Event, eventually, receiving
from server_helpers import CONFIRM, Api, command, sqlite_url, start_api
from standardwebhooks.webhooks import Webhook
from test_server_email import emailing, links_of, mailed

from handrail.server import email as email_module
from handrail.server import reach as reach_module
from handrail.server import webhooks as webhooks_module
from handrail.server.reach_config import webhook_configs

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode("ascii")


def hook(url: str, **extra: Any) -> Any:
    settings: dict[str, Any] = {"name": "ops", "url": url, "secret_env": "OPS_SECRET"}
    settings.update({"attempts": 1, "backoff": 0.05, **extra})
    return webhook_configs([settings], {"OPS_SECRET": SECRET})[0]


def ask_event() -> Event:
    data = {"ask": {"toolCallId": "call_1", "kind": "confirm", "prompt": "Ship it?"}}
    return Event(kind="ask.created", user_id="alice", history_id="a" * 24, data=data)


async def all_settled(api: Api, count: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        found = (await api.get("/deliveries", user="root")).json()["data"]
        done = [d for d in found if d["status"] != "pending"]
        return found if len(done) >= count else None

    return list(await eventually(check, rounds=400))


@asynccontextmanager
async def slow_receiver(
    *, head: bytes, head_pause: float = 0.0, body_bytes: int = 0, body_pause: float = 0.0
) -> AsyncIterator[str]:
    """A receiver on 127.0.0.1 that reads a request, then writes `head` (its last 40 bytes one
    at a time, `head_pause` seconds apart), then `body_bytes` bytes of body one at a time,
    `body_pause` seconds apart; yields its URL."""
    tasks: set[asyncio.Task[None]] = set()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            seen = b""
            while b"\r\n\r\n" not in seen:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                seen += chunk
            for i in range(len(head)):
                writer.write(head[i : i + 1])
                await writer.drain()
                if head_pause and i >= len(head) - 40:
                    await asyncio.sleep(head_pause)
            for _ in range(body_bytes):
                await asyncio.sleep(body_pause)
                writer.write(b"x")
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            tasks.discard(task)

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def test_a_receiver_answering_a_byte_at_a_time_is_cut_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # httpx's own timeout is per read: each byte within it would hold the attempt (and every
    # delivery after it) for as long as the receiver likes. The attempt has its timeout whole.
    monkeypatch.setattr(webhooks_module, "WEBHOOK_TIMEOUT", 1.0)
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-padding: " + b"p" * 60 + b"\r\n\r\n"
    async with slow_receiver(head=head, head_pause=0.3) as url:
        webhooks = [hook(url)]
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
            started = time.monotonic()
            await api.app.state.reach.handle(ask_event())
            [delivery] = await all_settled(api, 1)
            took = time.monotonic() - started
            detail = (await api.get(f"/deliveries/{delivery['id']}", user="root")).json()["data"]
    assert delivery["status"] == "failed"
    assert delivery["lastError"] == "The receiver did not answer in time."
    assert detail["log"][0]["statusCode"] is None
    assert detail["log"][0]["durationMs"] < 3000
    assert took < 5


async def test_a_2xx_whose_body_comes_slowly_is_delivered_without_waiting_for_it(
    tmp_path: Path,
) -> None:
    # The status decides; the receiver's body is never read (nor kept), so an endless one
    # neither holds the attempt nor lets it outlive its claim (another process would send the
    # event again).
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"
    async with slow_receiver(head=head, body_bytes=1000, body_pause=1.0) as slow:
        with receiving() as quick:
            webhooks = [hook(slow, name="slow"), hook(quick.url, name="quick")]
            async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
                started = time.monotonic()
                await api.app.state.reach.handle(ask_event())
                found = await all_settled(api, 2)
                took = time.monotonic() - started
    assert {d["target"]: d["status"] for d in found} == {"slow": "delivered", "quick": "delivered"}
    assert took < 5
    assert len(quick.received) == 1


async def test_a_title_with_a_line_separator_is_mailed_with_a_one_line_subject(
    tmp_path: Path,
) -> None:
    # A title from a tool or a model may hold U+2028 (or U+0085, a vertical tab...): no header
    # may hold one, so making the message raised, and the delivery stayed pending for ever.
    async with emailing(tmp_path) as (api, mailbox):
        title = "Clean\u2028up\x85todos"
        stream = await api.prompt({"prompt": command("ask_confirm", {**CONFIRM, "title": title})})
        assert stream.status == 200, stream.problem
        message = await mailed(mailbox)
        assert message["Subject"] == "Clean up todos"
        assert list(links_of(message)) == ["Delete 14 todos", "Keep them"]
        found = await all_settled(api, 1)
    assert [(d["channel"], d["status"]) for d in found] == [("email", "delivered")]


async def test_a_message_that_cannot_be_made_is_a_failed_attempt_in_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("no message")

    monkeypatch.setattr(reach_module, "render_email", broken)
    async with emailing(
        tmp_path, smtp={"client": {"tls": "none", "attempts": 2, "backoff": 0.05}}
    ) as (api, mailbox):
        stream = await api.prompt({"prompt": command("ask_confirm", CONFIRM)})
        assert stream.status == 200, stream.problem
        [delivery] = await all_settled(api, 1)
        detail = (await api.get(f"/deliveries/{delivery['id']}")).json()["data"]
    assert delivery["status"] == "failed"
    assert delivery["attempts"] == 2
    assert delivery["lastError"] == "The delivery could not be made (ValueError)."
    assert [a["attempt"] for a in detail["log"]] == [1, 2]
    assert mailbox.messages == []
    assert any("could not be sent" in r.getMessage() for r in caplog.records)


async def test_a_message_has_a_date_and_a_subject_cut_at_a_word(tmp_path: Path) -> None:
    prompt = (
        "Delete the fourteen completed todos from the shared family list? This cannot be undone."
    )
    async with emailing(tmp_path) as (api, mailbox):
        ask = {"prompt": prompt, "confirmLabel": "Delete", "denyLabel": "Keep"}
        stream = await api.prompt({"prompt": command("ask_confirm", ask)})
        assert stream.status == 200, stream.problem
        message = await mailed(mailbox)
    # RFC 5322 requires the origination date; many relays do not add one.
    sent = email.utils.parsedate_to_datetime(message["Date"])
    assert abs(sent - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)
    subject = message["Subject"]
    assert subject.endswith("…")
    assert len(subject) <= 60
    assert prompt.startswith(subject.removesuffix("…"))
    assert prompt[len(subject) - 1] == " "  # cut between words, not inside one


async def test_a_link_whose_answer_met_the_storage_unavailable_works_again(
    tmp_path: Path,
) -> None:
    async with emailing(tmp_path, raise_app_exceptions=False) as (api, mailbox):
        stream = await api.prompt({"prompt": command("ask_confirm", CONFIRM)})
        links = links_of(await mailed(mailbox))
        runtime = api.app.state.runtime
        answer = runtime.start_button

        async def disk_full(*_args: Any, **_kwargs: Any) -> Any:
            raise OSError(errno.ENOSPC, "No space left on device")

        runtime.start_button = disk_full
        page = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}  # a browser's form
        try:
            failed = await api.client.post(f"/links/{links['Keep them']}", headers=page)
            as_json = await api.client.post(f"/links/{links['Keep them']}")
        finally:
            runtime.start_button = answer
        # The person reads a page that says so (not problem JSON); a client of the API, JSON.
        assert failed.status_code == 503
        assert failed.headers["retry-after"]
        assert failed.headers["content-type"].startswith("text/html")
        assert "<h1>Storage full</h1>" in failed.text
        assert as_json.status_code == 503
        assert as_json.headers["content-type"] == "application/problem+json"
        assert (await api.history(stream.history_id))["pendingAsk"] is not None
        # Not "used already, the ask is answered": nothing was answered, and the link answers.
        again = await api.client.post(f"/links/{links['Keep them']}")
        assert again.status_code == 200, again.text
        assert "Answer sent" in again.text

        async def answered() -> bool:
            return (await api.history(stream.history_id))["pendingAsk"] is None

        await eventually(answered)


async def test_a_plain_text_secret_verifies_as_its_bytes_or_its_whsec_form(
    tmp_path: Path,
) -> None:
    plain = "my-plain-text-webhook-secret"
    with receiving() as receiver:
        webhooks = webhook_configs(
            [{"name": "ops", "url": receiver.url, "secret_env": "PLAIN", "attempts": 1}],
            {"PLAIN": plain},
        )
        async with start_api(sqlite_url(tmp_path), tmp_path, webhooks=webhooks) as api:
            await api.app.state.reach.handle(ask_event())
            await all_settled(api, 1)
    [got] = receiver.received
    assert Webhook(plain.encode()).verify(got.body, got.headers)["type"] == "ask.created"
    whsec = "whsec_" + base64.b64encode(plain.encode()).decode("ascii")
    assert Webhook(whsec).verify(got.body, got.headers)["type"] == "ask.created"


def test_an_untitled_reminders_subject_is_its_text_cut_at_a_word() -> None:
    # The subject of an untitled ask is the card's text cut at a word (with "…").
    payload = {"to": "a@example.com", "historyId": "a" * 24, "reminder": True, "text": "x " * 80}
    message = email_module.render_email(
        payload, sender="h@example.com", key=b"k" * 32, public_url="http://h.test"
    )
    assert message["Subject"].startswith("Reminder: x x")
    assert message["Subject"].endswith("…")
