"""Connections to the server ``handrail serve`` runs, over real sockets on 127.0.0.1: headers
over the cap get 431, connections that send nothing, or trickle their headers or body, are
closed after their timeout (with or without a token), and a connection over the limit gets
503 at once. Each server runs in a subprocess with short timeouts set by environment
variables, as an operator would set them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from demo_server import free_port

TOKEN = "reliability-token-0123456789"
HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
MAX_HEADER_BYTES = 8192
#: How long past its timeout a connection may stay open (a loaded machine is slow).
SLACK = 4.0
CONNECTIONS = 20


@dataclass
class Served:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def info_status(self) -> int:
        request = urllib.request.Request(
            f"http://{self.host}:{self.port}/api/info",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)


def serve(folder: Path, **settings: str) -> Iterator[Served]:
    """``handrail serve`` (no config file: the defaults and these environment variables)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env.update(
        HANDRAIL_TOKEN=TOKEN,
        HANDRAIL_PORT=str(port),
        HANDRAIL_DATABASE_URL=f"sqlite:///{folder / 'handrail.db'}",
        HANDRAIL_BLOB_DIR=str(folder / "files"),
        **settings,
    )
    log = folder / "server.log"
    args = [sys.executable, "-m", "handrail.cli", "serve", "--log-level", "warning"]
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
        served = Served(host="127.0.0.1", port=port, process=process, log=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"handrail serve exited:\n{log.read_text()}")
                try:
                    if served.info_status() == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"handrail serve did not start:\n{log.read_text()}")
                time.sleep(0.1)
            yield served
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(
        tmp_path_factory.mktemp("served"),
        HANDRAIL_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        HANDRAIL_BODY_TIMEOUT=str(BODY_TIMEOUT),
        HANDRAIL_MAX_HEADER_BYTES=str(MAX_HEADER_BYTES),
    )


async def connect(server: Served) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def read_until_closed(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection; fails after `seconds`."""
    data = b""
    async with asyncio.timeout(seconds):
        while True:
            try:
                chunk = await reader.read(65536)
            except ConnectionResetError:
                return data
            if not chunk:
                return data
            data += chunk


async def trickle(writer: asyncio.StreamWriter, byte: bytes, until: asyncio.Event) -> None:
    """Send `byte` every 0.1 s until `until` is set or the server closes."""
    while not until.is_set():
        try:
            writer.write(byte)
            await writer.drain()
        except (ConnectionError, OSError):
            return
        await asyncio.sleep(0.1)


async def slow_request(server: Served, head: bytes, byte: bytes) -> tuple[bytes, float]:
    """Send `head`, then `byte` again and again; what came back and when the server closed,
    counted from before the connection was made (the server's clocks start when it accepts
    it, which a busy machine may put well before `connect` returns)."""
    started = time.monotonic()
    reader, writer = await connect(server)
    closed = asyncio.Event()
    writer.write(head)
    await writer.drain()
    sender = asyncio.create_task(trickle(writer, byte, closed))
    try:
        data = await read_until_closed(reader, HEADER_TIMEOUT + BODY_TIMEOUT + SLACK + 5)
    finally:
        closed.set()
        await sender
        writer.close()
    return data, time.monotonic() - started


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), response[:200]
    return int(response[9:12])


def problem_of(response: bytes) -> dict[str, Any]:
    head, _, body = response.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head.lower(), head
    assert b"connection: close" in head.lower(), head
    return dict(json.loads(body))


async def test_connections_that_send_nothing_are_closed(server: Served) -> None:
    pairs = [await connect(server) for _ in range(CONNECTIONS)]
    started = time.monotonic()
    results = await asyncio.gather(
        *(read_until_closed(reader, HEADER_TIMEOUT + SLACK) for reader, _ in pairs)
    )
    assert results == [b""] * CONNECTIONS  # closed without a word, as an idle keep-alive one
    assert time.monotonic() - started >= HEADER_TIMEOUT * 0.9
    for _, writer in pairs:
        writer.close()
    assert server.info_status() == 200


async def test_trickled_headers_get_408_and_are_closed(server: Served) -> None:
    head = b"GET /api/info HTTP/1.1\r\nHost: x\r\nX-Slow: "
    outcomes = await asyncio.gather(*(slow_request(server, head, b"a") for _ in range(CONNECTIONS)))
    for response, seconds in outcomes:
        assert status_of(response) == 408
        assert problem_of(response)["title"] == "Request Timeout"
        assert "did not arrive within 1 seconds" in problem_of(response)["detail"]
        assert HEADER_TIMEOUT * 0.9 <= seconds <= HEADER_TIMEOUT + SLACK
    assert server.info_status() == 200


async def test_a_trickled_body_is_closed_with_or_without_a_token(server: Served) -> None:
    with_token = (
        b"POST /api/histories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 100000\r\n\r\n{"
    )
    without = (
        b"POST /api/prompt HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n{"
    )
    outcomes = await asyncio.gather(
        *(slow_request(server, with_token, b" ") for _ in range(CONNECTIONS // 2)),
        *(slow_request(server, without, b" ") for _ in range(CONNECTIONS // 2)),
    )
    for response, seconds in outcomes[: CONNECTIONS // 2]:
        assert status_of(response) == 408  # the route was still reading the body
        detail = problem_of(response)["detail"]
        assert "request body did not arrive in time" in detail
        assert "POST /api/files/upload" in detail  # the route under the API prefix
        assert BODY_TIMEOUT * 0.9 <= seconds <= BODY_TIMEOUT + SLACK
    for response, seconds in outcomes[CONNECTIONS // 2 :]:
        assert status_of(response) == 401  # answered at once, then the body still trickled
        assert response.count(b"HTTP/1.1 ") == 1  # and closed without another answer
        assert seconds <= BODY_TIMEOUT + SLACK
    async with asyncio.timeout(10):
        histories = await asyncio.to_thread(server.info_status)
    assert histories == 200


async def test_a_body_that_keeps_arriving_is_not_cut(server: Served) -> None:
    """The body may take longer than body_timeout while it arrives at 16 KiB/s or faster."""
    boundary = b"hr-7f3a"
    data = b"a" * (200 * 1024)
    body = (
        b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; '
        b'filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n'
        + data
        + b"\r\n--"
        + boundary
        + b"--\r\n"
    )
    head = (
        b"POST /api/files/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Type: multipart/form-data; boundary="
        + boundary
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n"
    )
    reader, writer = await connect(server)
    started = time.monotonic()
    writer.write(head)
    step = len(body) // 20
    for start in range(0, len(body), step):  # 200 KiB over about 2 s: 100 KiB/s
        writer.write(body[start : start + step])
        await writer.drain()
        await asyncio.sleep(0.1)
    response = await read_until_closed(reader, 10)
    writer.close()
    assert time.monotonic() - started > BODY_TIMEOUT * 1.5
    assert status_of(response) == 201, response[:300]


async def test_keep_alive_and_pipelined_requests_are_served(server: Served) -> None:
    """The guards time each request, not the connection: a connection that keeps asking is
    answered every time, and two requests sent at once are both answered."""
    request = b"GET /api/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
    reader, writer = await connect(server)
    for _ in range(3):  # three requests over 3 x 0.6 s, longer than header_timeout
        writer.write(request + b"\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert status_of(head) == 200
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        await asyncio.sleep(0.6)
    writer.write((request + b"\r\n\r\n") + (request + b"\r\nConnection: close\r\n\r\n"))
    await writer.drain()
    both = await read_until_closed(reader, SLACK)
    writer.close()
    assert both.count(b"HTTP/1.1 200 OK") == 2
    assert b"HTTP/1.1 408" not in both  # (a request id may hold the digits 408)


async def test_headers_over_the_cap_get_431(server: Served) -> None:
    # In one write: the whole head arrives in one read, counted header by header.
    many = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(100))
    reader, writer = await connect(server)
    writer.write(b"GET /api/info HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    await writer.drain()
    response = await read_until_closed(reader, SLACK)
    writer.close()
    assert status_of(response) == 431
    assert f"larger than {MAX_HEADER_BYTES} bytes" in problem_of(response)["detail"]
    # Just under the cap is fine.
    few = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(50))
    reader, writer = await connect(server)
    writer.write(
        b"GET /api/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n"
        b"Connection: close\r\n" + few + b"\r\n"
    )
    await writer.drain()
    response = await read_until_closed(reader, SLACK)
    writer.close()
    assert status_of(response) == 200


async def test_a_huge_header_is_cut_off_early(server: Served) -> None:
    """50 MB of one header: refused once the bytes received pass the cap, never read in full
    nor answered 200."""
    reader, writer = await connect(server)
    writer.write(b"GET /api/info HTTP/1.1\r\nHost: x\r\nX-Huge: ")
    sent = 0
    refused = False
    chunk = b"v" * 65536
    try:
        async with asyncio.timeout(SLACK + 5):
            while sent < 50 * 1024 * 1024:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
    except (ConnectionError, OSError):
        refused = True
    response = b""
    try:
        response = await read_until_closed(reader, SLACK)
    except (ConnectionError, OSError):
        refused = True
    writer.close()
    assert refused or response
    assert sent < 10 * 1024 * 1024  # the server closed long before 50 MB
    if response:
        assert status_of(response) == 431


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(
        tmp_path_factory.mktemp("small"),
        HANDRAIL_MAX_CONNECTIONS="5",
        HANDRAIL_HEADER_TIMEOUT="30",
    )


async def test_a_connection_over_the_limit_gets_503_at_once(small_server: Served) -> None:
    await asyncio.sleep(0.2)  # the start-up's own requests are gone
    held = [await connect(small_server) for _ in range(5)]
    await asyncio.sleep(0.2)
    reader, writer = await connect(small_server)
    started = time.monotonic()
    response = await read_until_closed(reader, SLACK)
    writer.close()
    assert time.monotonic() - started < SLACK
    assert status_of(response) == 503
    assert "5 connections open, its limit" in problem_of(response)["detail"]
    for _, held_writer in held:
        held_writer.close()
    deadline = time.monotonic() + 10
    while True:  # the server sees the held ones go, and takes new ones again
        status = await asyncio.to_thread(small_server.info_status)
        if status == 200 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert status == 200
