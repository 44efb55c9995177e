"""Helpers of the webhook and email tests: a webhook receiver served by uvicorn on 127.0.0.1
(a real socket, in a background thread) that records what it receives and answers with the
statuses a test plans, a real SMTP server (`aiosmtpd`) that keeps the messages it gets, and an
event of the bus's shape."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import email
import email.policy
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import uvicorn
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from handrail._util import new_id

#: A Standard Webhooks secret (``whsec_`` and the base64 of 32 bytes).
WEBHOOK_SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode("ascii")


@dataclass(frozen=True, kw_only=True)
class Event:
    """A user event as the bus publishes it (kind, id, user, history, public data)."""

    kind: str
    user_id: str
    history_id: str | None
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=new_id)


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Records each POST; answers the next planned status (200 when the plan is empty)."""

    plan: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        self.received.append(Received(headers=dict(request.headers), body=body))
        status = self.plan.pop(0) if self.plan else 200
        return Response(b"receiver says no" if status >= 300 else b"", status_code=status)


@contextlib.contextmanager
def receiving(plan: list[int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(plan=list(plan or []))
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the webhook receiver did not start")
        time.sleep(0.01)
    receiver.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield receiver
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        return "250 OK"


class _Session(SMTP):
    """An SMTP session that its controller knows while its connection is open."""

    def __init__(self, sessions: set[SMTP], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sessions = sessions

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._sessions.add(self)

    def connection_lost(self, error: Exception | None) -> None:
        self._sessions.discard(self)
        super().connection_lost(error)


class _Controller(Controller):
    """aiosmtpd's controller, whose `stop` first lets the open sessions end (a client's QUIT
    still on its way), then closes what is left, so no session's transport is left for the
    garbage collector to warn about in a later test."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions: set[SMTP] = set()

    def factory(self) -> SMTP:
        return _Session(self.sessions, self.handler, **self.SMTP_kwargs)

    def stop(self, no_assert: bool = False) -> None:
        if not self._ended(5.0):
            self.loop.call_soon_threadsafe(self._close_sessions)
            self._ended(5.0)
        super().stop(no_assert)

    def _ended(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.sessions and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self.sessions

    def _close_sessions(self) -> None:
        for session in list(self.sessions):
            if session.transport is not None:
                session.transport.close()


@dataclass
class Mailbox:
    port: int
    messages: list[EmailMessage]


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files in `folder` (the certificate is
    also the CA the client is told to trust)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@contextlib.contextmanager
def smtp_server(
    *, tls: tuple[Path, Path] | None = None, login: tuple[str, str] | None = None
) -> Iterator[Mailbox]:
    """A real SMTP server on a free port of 127.0.0.1: plain, or with `tls` (a certificate and
    key) requiring STARTTLS; with `login`, it requires that user name and password."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    handler = _Mailbox()
    options: dict[str, Any] = {}
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        options.update(tls_context=context, require_starttls=True)
    if login is not None:

        def check(_server: Any, _session: Any, _envelope: Any, _mechanism: str, data: Any) -> Any:
            ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
                login[0].encode(),
                login[1].encode(),
            )
            return AuthResult(success=ok, handled=False)

        options.update(authenticator=check, auth_required=True)
    controller = _Controller(handler, hostname="127.0.0.1", port=port, **options)
    controller.start()
    try:
        yield Mailbox(port=port, messages=handler.messages)
    finally:
        controller.stop()


async def eventually(check: Any, *, rounds: int = 200, pause: float = 0.025) -> Any:
    """Await `check()` until it returns something truthy (a bounded number of rounds)."""
    for _ in range(rounds):
        value = await check()
        if value:
            return value
        await asyncio.sleep(pause)
    raise AssertionError("the condition never held")
