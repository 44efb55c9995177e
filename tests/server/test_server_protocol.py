"""handrail's uvicorn protocol (`handrail.server.serving.GuardedProtocol`) fed bytes directly,
read by read: the header cap holds however a head is split between reads, and the access log
line is only made when the logger takes it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from handrail.server.serving import ConnectionLimits, guarded_protocol

LIMIT = 1024


class _Transport(asyncio.Transport):
    """Keeps what the protocol writes."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _hanging_app(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.Event().wait()  # the first request is still being answered


def _protocol(app: Any = _hanging_app, **config: Any) -> tuple[Any, _Transport]:
    cls = guarded_protocol(ConnectionLimits(max_header_bytes=LIMIT))
    loaded = uvicorn.Config(app, lifespan="off", **config)
    loaded.load()
    protocol = cls(config=loaded, server_state=ServerState(), app_state={})
    transport = _Transport()
    protocol.connection_made(transport)
    return protocol, transport


def _request(extra: bytes = b"") -> bytes:
    return b"GET /a HTTP/1.1\r\nHost: t\r\n" + extra + b"\r\n"


async def test_a_head_split_after_a_pipelined_request_is_still_capped() -> None:
    protocol, transport = _protocol()
    try:
        protocol.data_received(_request())  # answered by an app that takes its time
        await asyncio.sleep(0)
        big = _request(b"X-Big: " + b"x" * LIMIT + b"\r\n")
        # The second head starts in a read that began while the first request was served,
        # and ends in a read shorter than the cap.
        protocol.data_received(big[:300])
        assert not transport.written
        protocol.data_received(big[300:])
        assert transport.written
        assert transport.written[-1].startswith(b"HTTP/1.1 431 ")
        assert transport.closed
    finally:
        protocol.connection_lost(None)


async def test_a_head_within_the_cap_in_two_reads_is_served() -> None:
    protocol, transport = _protocol()
    try:
        head = _request(b"X-Some: " + b"y" * (LIMIT - 200) + b"\r\n")
        protocol.data_received(head[:100])
        protocol.data_received(head[100:])
        await asyncio.sleep(0)
        assert not transport.written
        assert not transport.closed
        assert protocol.cycle is not None
    finally:
        protocol.connection_lost(None)


async def test_the_access_log_line_is_made_only_when_the_logger_takes_it() -> None:
    quiet, _ = _protocol(log_level="warning")
    loud, _ = _protocol(log_level="info")
    try:
        assert logging.getLogger("uvicorn.access").hasHandlers()
        assert quiet.access_log is False
        assert loud.access_log is True
    finally:
        quiet.connection_lost(None)
        loud.connection_lost(None)
