"""Serving the app with uvicorn, with the guards on connections that uvicorn leaves out.

    server = Server(uvicorn_config(app, config, log_level="info"))
    server.run()

uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``), but with its
httptools protocol it takes request headers of any size, and waits for ever on a connection
that sends nothing, or sends its headers or its body a byte at a time: a few hundred such
connections, which need no token, hold the server's sockets. `GuardedProtocol` is uvicorn's
httptools protocol with four guards, set by `ConnectionLimits` (from the `ServerConfig`):

- **Header size.** A request whose line and headers pass ``max_header_bytes`` gets 431 and the
  connection is closed; the bytes are counted as they arrive, so no more than one read past
  the limit is ever held.
- **Header time.** A request's line and headers must arrive within ``header_timeout`` seconds,
  counted from when the connection opened or the previous response ended: else 408 and the
  connection is closed (without a response when nothing of a request arrived; uvicorn
  closes an idle keep-alive connection sooner).
- **Body time.** A body must arrive within ``body_timeout`` seconds of its headers, plus one
  second for each `BODY_BYTES_PER_SECOND` received, so a large upload that keeps arriving at
  that rate is never cut: else 408 (when no response has started) and the connection is
  closed; the route reading the body sees the client as gone. Time while the server itself
  stopped reading (the route was busy) does not count.
- **Connections.** At most ``max_connections`` are open at once; one more gets 503 and is
  closed at once.

Each refusal is a problem JSON body, as every other error of the API.

Two more changes save work per request. uvicorn works out the access log's line (the client's
address, the path quoted again) for every response, and only then does the logger drop it when
the log level is above ``info`` (``--log-level warning``): `GuardedProtocol` logs responses only
when the access logger takes ``info`` records when the connection opens. And uvicorn's protocol
saves a socket write (a system call, and on loopback a
wake-up of the client) per response: uvicorn writes a response's head when the app starts it
and its body when the app sends it, so every JSON answer went out in two writes.
`JoinedWritesCycle` holds the head of a response whose length is known (``Content-Length``,
not ``HEAD``, a body to come) and writes it with the body's first bytes. A streamed response
(the event streams, chunked) still gets its head at once.
"""

from __future__ import annotations

import asyncio
import copy
import errno
import gc
import json
import logging
import socket
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, cast

import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import DefaultFormatter
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from .._util import new_uuid4
from ..errors import ConfigError
from ..store import storage_trouble
from .config import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
    ServerConfig,
)
from .events import END_STREAM_KEY

__all__ = [
    "BODY_BYTES_PER_SECOND",
    "YOUNG_COLLECTION_AFTER",
    "ConnectionLimits",
    "GuardedProtocol",
    "JoinedWritesCycle",
    "Server",
    "guarded_protocol",
    "listen",
    "settle_heap",
    "uvicorn_config",
]

#: A body gets one more second for each this many bytes received (16 KiB, 128 kbit/s).
BODY_BYTES_PER_SECOND: Final = 16 * 1024

_REASONS: Final = {
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """The guards of `GuardedProtocol`: bytes of a request's line and headers, the seconds
    they and a body may take, and how many connections may be open."""

    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    #: The API's prefix, for the upload route a slow body's 408 names.
    api_prefix: str = "/api"

    @classmethod
    def of(cls, config: ServerConfig) -> ConnectionLimits:
        return cls(
            max_header_bytes=config.max_header_bytes,
            header_timeout=config.header_timeout,
            body_timeout=config.body_timeout,
            max_connections=config.max_connections,
            api_prefix=config.api_prefix,
        )


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the guards of `limits` (see the module docstring).
    `guarded_protocol` makes a subclass with other limits."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What the connection waits for: a request's head, its body, or nothing (the app has
        #: the whole request and answers it).
        self._waiting: Literal["head", "body"] | None = None
        #: When the wait ends (a body's is later by a second per `BODY_BYTES_PER_SECOND`
        #: received). One timer per connection checks it, and is only moved earlier: under
        #: load it fires once per timeout, not twice per request.
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._head_bytes = 0  # bytes received while the head was not complete
        #: Bytes of the read the parser is on, when that read began with the head's wait (more
        #: than the limit when it did not: the head's size is then added up).
        self._feeding = 0
        #: Whether part of the head came in a read that began before it (after a pipelined
        #: request), so that `_head_bytes` does not count it.
        self._head_uncounted = False
        self._body_bytes = 0
        self._refused = False
        # uvicorn builds each response's access log line before the logger's level drops it.
        self.access_log = self.access_log and self.access_logger.isEnabledFor(logging.INFO)

    # --- the connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refuse(
                503,
                f"The server has {self.limits.max_connections} connections open, its limit. "
                "Try again in a moment.",
            )
            return
        self._wait_for_head()

    def shutdown(self) -> None:
        """The server is stopping: an open event stream (``GET /events``) ends now, as a
        finished response, instead of holding the shutdown until its client leaves."""
        super().shutdown()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            end = cycle.scope.get(END_STREAM_KEY)
            if callable(end):
                end()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        in_head = self._waiting == "head"
        self._feeding = len(data) if in_head else self.limits.max_header_bytes + 1
        super().data_received(data)
        if self._refused or self._waiting != "head":
            return
        if not in_head:
            self._head_uncounted = True
            return
        self._head_bytes += len(data)
        if self._head_bytes > self.limits.max_header_bytes:
            self._refuse_head_size()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if (
            self._waiting is None
            and not self._refused
            and not self.transport.is_closing()
            and self.cycle is not None
            and self.cycle.response_complete  # no pipelined request is still to answer
        ):
            self._wait_for_head()

    # --- the parser's callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._waiting != "head" and not self._refused:
            self._wait_for_head()  # a pipelined request: its head starts now
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        limit = self.limits.max_header_bytes
        # The line and headers came in the reads counted so far and the one being parsed, so
        # they are only added up when those could pass the limit.
        if self._head_uncounted or self._head_bytes + self._feeding > limit:
            self._head_uncounted = False
            size = len(self.url) + sum(len(name) + len(value) for name, value in self.headers)
            if size > limit:
                self._refuse_head_size()
                return
        self._waiting = "body"
        self._body_bytes = 0
        self._wait_until(self.loop.time() + self.limits.body_timeout)
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and type(cycle) is RequestResponseCycle:
            # The request's task has not run yet; it answers through the joined writes.
            cycle.__class__ = JoinedWritesCycle

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._waiting = None  # the timer, when it fires, finds nothing to wait for
        super().on_message_complete()
        if self.cycle is not None and self.cycle.response_complete:
            self._wait_for_head()

    # --- the guards -------------------------------------------------------------------------

    def _wait_for_head(self) -> None:
        self._waiting = "head"
        self._head_bytes = 0
        self._wait_until(self.loop.time() + self.limits.header_timeout)

    def _wait_until(self, deadline: float) -> None:
        self._deadline = deadline
        if self._timer is None or self._timer_at > deadline:
            self._arm_at(deadline)

    def _arm_at(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._refused or self.transport.is_closing() or self._waiting is None:
            return
        head = self._waiting == "head"
        if self.flow.read_paused:
            # The server stopped reading (the route is busy, or a pipelined request waits):
            # the client cannot send, so this time is not the client's.
            self._deadline += self.limits.header_timeout if head else self.limits.body_timeout
        deadline = self._deadline
        if not head:
            deadline += self._body_bytes / BODY_BYTES_PER_SECOND
        if self.loop.time() < deadline:
            self._arm_at(deadline)
            return
        if not head:
            self._refuse(
                408,
                f"The request body did not arrive in time ({self.limits.body_timeout:g} "
                f"seconds, plus one for each {BODY_BYTES_PER_SECOND} bytes received). Send it "
                f"at once, or upload large files with POST {self.limits.api_prefix}/files/upload.",
            )
        elif self._head_bytes == 0:
            # Nothing of a request arrived: close as uvicorn closes an idle connection.
            self._refused = True
            self._waiting = None
            self.transport.close()
        else:
            self._refuse(
                408,
                f"The request's line and headers did not arrive within "
                f"{self.limits.header_timeout:g} seconds. Send them at once.",
            )

    def _refuse_head_size(self) -> None:
        self._refuse(
            431,
            f"The request's line and headers are larger than {self.limits.max_header_bytes} "
            "bytes. Send fewer or shorter headers.",
        )

    def _refuse(self, status: int, detail: str) -> None:
        """Answer `status` with a problem and close. No answer goes out when the request's
        own response has started: the client has its answer (a 401 before the body was read,
        say) and only the rest of its body is not wanted."""
        answered = False
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            answered = cycle.response_started
            # The route that reads the body gets a disconnect; what it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        elif cycle is not None and self._waiting == "body":
            answered = True
        self._refused = True
        self._waiting = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not answered and not self.transport.is_closing():
            self.transport.write(_problem_response(status, detail))
        self.transport.close()


class JoinedWritesCycle(RequestResponseCycle):
    """uvicorn's request-response cycle, writing the head of a response of known length
    together with its body (see the module docstring)."""

    #: The head written with the next body message.
    _head: bytes | None = None

    async def send(self, message: Any) -> None:
        kind = message["type"]
        if kind == "http.response.start" and not self.response_started:
            real = self.transport
            held = _Written()
            self.transport = cast("asyncio.Transport", held)
            try:
                await super().send(message)
            finally:
                self.transport = real
            head = b"".join(held.chunks)
            if (
                self.chunked_encoding is False
                and self.expected_content_length > 0
                and self.scope["method"] != "HEAD"
                and not self.disconnected
            ):
                self._head = head
            elif head:
                real.write(head)
            return
        held_head = self._head
        if held_head is None or kind != "http.response.body":
            await super().send(message)
            return
        self._head = None
        real = self.transport
        joined = _Prefixed(real, held_head)
        self.transport = cast("asyncio.Transport", joined)
        try:
            await super().send(message)
        finally:
            self.transport = real
            if joined.prefix is not None and not self.disconnected and not real.is_closing():
                real.write(joined.prefix)  # the body was refused: the head goes as before


class _Written:
    """Stands in for the transport while uvicorn writes a response's head."""

    __slots__ = ("chunks",)

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.chunks.append(data)


class _Prefixed:
    """Stands in for the transport while uvicorn writes a body: the first write goes out
    after `prefix` (the held head) in one write."""

    __slots__ = ("prefix", "real")

    def __init__(self, real: asyncio.Transport, prefix: bytes) -> None:
        self.real = real
        self.prefix: bytes | None = prefix

    def write(self, data: bytes) -> None:
        prefix = self.prefix
        self.prefix = None
        self.real.write(data if prefix is None else prefix + data)

    def close(self) -> None:
        if self.prefix is not None:
            self.write(b"")
        self.real.close()

    def is_closing(self) -> bool:
        return self.real.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _problem_response(status: int, detail: str) -> bytes:
    request_id = new_uuid4()
    title = _REASONS[status]
    body = json.dumps(
        {"status": status, "title": title, "detail": detail, "requestId": request_id},
        separators=(",", ":"),
    ).encode()
    head = (
        f"HTTP/1.1 {status} {title}\r\n"
        "content-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\n"
        f"x-request-id: {request_id}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedProtocol]:
    """A `GuardedProtocol` with `limits`, for uvicorn's ``http`` setting."""
    return type("GuardedProtocol", (GuardedProtocol,), {"limits": limits})


class Server(uvicorn.Server):
    """uvicorn's server that, once the app has started (its lifespan ran: the modules, the
    app, its routes and schemas, the runtime and the store are in memory), sets what it holds
    aside from the garbage collector (`settle_heap`)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        settle_heap()


#: Allocations (net of deallocations) between two collections of the youngest generation
#: once the server has started (Python's default is 700).
YOUNG_COLLECTION_AFTER: Final = 5000


def settle_heap() -> None:
    """Collect the garbage of the start-up, then move every object still alive to the
    collector's permanent generation (`gc.freeze`): they are never scanned again. The youngest
    generation is collected every `YOUNG_COLLECTION_AFTER` allocations from then on.

    A busy server promotes the objects of the requests in flight to the oldest generation, so
    the collector runs a full collection every thousand cycles or so, and a full collection
    walks every object of the process: about 90 ms of the event loop on this app, a tenth of a
    millisecond a cycle. Frozen objects are still freed by their reference counts; only a
    cycle among them that later becomes garbage is kept (the start-up's objects live as long
    as the server).

    With 32 requests in flight, the net count of allocations passes 700 every few requests:
    the youngest generation was collected about once every two cycles and each collection
    promoted the objects of the requests in flight, which is what filled the oldest one. At
    5000 it is collected about once a hundred cycles (the objects of a request are freed by
    their reference counts in between), and the handful of cyclic garbage a cycle may leave
    waits a little longer."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_AFTER, middle, oldest)


def listen(host: str, port: int, *, backlog: int = 2048) -> list[socket.socket]:
    """The listening sockets of `host` and `port` (one a resolved address, as asyncio's
    ``create_server`` makes them), for `Server.run`'s ``sockets``: made before the app starts,
    so that an address in use stops the start at once, with what to do, and nothing of the
    app (its database, its recovery) ran meanwhile. Raises `ConfigError`."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ConfigError(
            f"Cannot listen on {where}: the host {host!r} is not known ({exc.strerror}). "
            "Give an address of this machine with --host (or the host setting)."
        ) from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ConfigError(f"Cannot listen on {where}: {_why_not(exc)}") from None
    return sockets


def _why_not(error: OSError) -> str:
    """Why an address could not be listened on, and the way forward."""
    if error.errno == errno.EADDRINUSE:
        return (
            "another program listens there (another handrail, perhaps). Stop it, or choose "
            "another port with --port (or the port setting)."
        )
    if error.errno == errno.EACCES:
        return (
            "this user may not listen on that port (ports below 1024 need privileges). Choose "
            "a port from 1024 up with --port (or the port setting)."
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            "that address is not one of this machine's. Give one of its addresses with --host "
            "(or the host setting), such as 127.0.0.1."
        )
    return f"{error.strerror or error}."


class HandrailFormatter(DefaultFormatter):
    """uvicorn's formatter for handrail's lines, and a line whose error is the storage
    unavailable (`handrail.store.storage_trouble`: a full disk, the database unreachable or its
    connection lost) kept to one line, what happened at its end, without a traceback: a
    background task that met it (a lease's renewal, a sweep, the outbox) tells the
    administrator what the line says, and tracebacks would bury it. The record itself is left
    as it is for every other handler."""

    def format(self, record: logging.LogRecord) -> str:
        error = record.exc_info[1] if record.exc_info else None
        trouble = storage_trouble(error) if error is not None else None
        if trouble is None:
            return super().format(record)
        shown = logging.makeLogRecord(record.__dict__)
        shown.msg = f"{record.getMessage()} ({trouble[1]})"
        shown.args = None
        shown.exc_info = None
        shown.exc_text = None
        return super().format(shown)


def log_config(log_level: str) -> dict[str, Any]:
    """uvicorn's logging configuration, and handrail's loggers (``handrail.*``) beside it at
    `log_level`: ``WARNING:  handrail.store: ...`` on standard error, as uvicorn's own lines
    (the storage's trouble in one line, `HandrailFormatter`)."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["handrail"] = {
        "()": HandrailFormatter,
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
        "use_colors": None,
    }
    config["handlers"]["handrail"] = {
        "formatter": "handrail",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    # Propagating too: a handler of the root logger (none in `handrail serve`; pytest's
    # capture, an embedding program's) hears them as well.
    config["loggers"]["handrail"] = {"handlers": ["handrail"], "level": log_level.upper()}
    return config


def uvicorn_config(app: Any, config: ServerConfig, *, log_level: str = "info") -> uvicorn.Config:
    """The uvicorn configuration that serves `app` on ``config.host`` and ``config.port``
    with the connection guards of `config`; handrail's own log lines go with uvicorn's
    (`log_config`)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        log_level=log_level,
        log_config=log_config(log_level),
        http=guarded_protocol(ConnectionLimits.of(config)),
        ws="none",  # no route takes a WebSocket
    )
