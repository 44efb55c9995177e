"""Reading ``GET /api/events`` as a client does: a real HTTP server on loopback (uvicorn with
handrail's protocol, in the test's event loop) and an SSE reader over httpx."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from demo_server import free_port
from handrail.server.serving import ConnectionLimits, guarded_protocol


@dataclass
class Block:
    """One SSE block: its ``id:``, its parsed ``data:`` and its comments."""

    id: str | None = None
    data: dict[str, Any] | None = None
    comments: list[str] = field(default_factory=list)
    retry: int | None = None


class EventReader:
    """The blocks of an open event stream, one at a time (a task reads them as they come, so
    a wait that times out loses nothing)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._blocks: asyncio.Queue[Block | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        block = Block()
        seen = False
        try:
            async for line in self.response.aiter_lines():
                if line == "":
                    if seen:
                        self._blocks.put_nowait(block)
                    block, seen = Block(), False
                    continue
                seen = True
                if line.startswith(":"):
                    block.comments.append(line[1:].strip())
                elif line.startswith("id: "):
                    block.id = line[4:]
                elif line.startswith("data: "):
                    block.data = json.loads(line[6:])
                elif line.startswith("retry: "):
                    block.retry = int(line[7:])
        except httpx.HTTPError:
            pass
        finally:
            self._blocks.put_nowait(None)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def block(self, timeout: float = 5) -> Block:
        """The next block (waits at most `timeout` seconds); EOFError once the stream ended."""
        block = await asyncio.wait_for(self._blocks.get(), timeout)
        if block is None:
            self._blocks.put_nowait(None)
            raise EOFError("the stream ended")
        return block

    async def event(self, timeout: float = 5) -> dict[str, Any]:
        """The next event's data (comments are skipped)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            block = await self.block(max(deadline - loop.time(), 0.01))
            if block.data is not None:
                return block.data

    async def until(self, kind: str, timeout: float = 5) -> dict[str, Any]:
        """Events until one of `kind`; that one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            event = await self.event(max(deadline - loop.time(), 0.01))
            if event["kind"] == kind:
                return event

    async def kinds(self, count: int, timeout: float = 5) -> list[str]:
        return [(await self.event(timeout))["kind"] for _ in range(count)]

    async def nothing(self, seconds: float = 0.3) -> None:
        """No event arrives within `seconds` (comments may)."""
        with contextlib.suppress(TimeoutError):
            event = await self.event(seconds)
            raise AssertionError(f"an event arrived: {event}")


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[tuple[str, uvicorn.Server]]:
    """`app` served by uvicorn (handrail's protocol) on a free loopback port in this event
    loop: its base URL and the server. Stopped (gracefully) at the end."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=guarded_protocol(ConnectionLimits()),
        ws="none",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@contextlib.asynccontextmanager
async def open_events(
    client: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> AsyncIterator[EventReader]:
    """``GET url`` as an event stream, read once its ``: ready`` comment came."""
    async with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = EventReader(response)
        try:
            first = await reader.block()
            assert first.retry == 3000
            assert first.comments == ["ready"]
            yield reader
        finally:
            await reader.close()
