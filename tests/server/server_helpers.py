"""Server test helpers: the app in process over httpx, speaking as three users (``alice``,
``bob``, and ``root``, an admin). `start_api` runs one with other agents, a model of the test's
own, or an existing database; ``conftest.py`` turns it into fixtures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from demo_server import free_port
from handrail.runtime.agent import Agent
from handrail.runtime.models.base import Model
from handrail.runtime.runtime import Runtime
from handrail.server import ServerConfig, UserConfig, create_app
from handrail.store import Store

SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "terreno" / "schemas"

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "root": "root-tok-42"}
USERS = [
    UserConfig(id="alice", token=TOKENS["alice"]),
    UserConfig(id="bob", token=TOKENS["bob"]),
    UserConfig(id="root", token=TOKENS["root"], admin=True),
]


CONFIRM = {
    "title": "Clean up todos",
    "prompt": "Delete 14 completed todos? This cannot be undone.",
    "confirmLabel": "Delete 14 todos",
    "denyLabel": "Keep them",
    "destructive": True,
}
MARKDOWN = {
    "title": "Launch announcement",
    "prompt": "Here is a draft announcement. Edit anything, then send it back.",
    "initial": "# We're live\n\nToday we launched.",
    "maxLength": 2000,
}
FORM = {
    "prompt": "When is the report due?",
    "fields": [
        {
            "id": "due",
            "type": "date",
            "label": "Due date",
            "required": True,
            "default": "2026-10-01",
        }
    ],
}
FILES = {"prompt": "Upload the receipt.", "accept": ["image", "text"], "maxFiles": 2}


def command(tool: str, args: dict[str, Any]) -> str:
    """A scripted-model command line: ``ask_choice {...}``."""
    return f"{tool} {json.dumps(args)}"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The events of an SSE body; every block must be one ``data:`` line."""
    events: list[dict[str, Any]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        assert "\n" not in block, block
        events.append(json.loads(block.removeprefix("data: ")))
    return events


def text_of(events: Sequence[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if "text" in e)


class Stream:
    """A finished ``POST /prompt``: its status and either its events or its problem."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status = response.status_code
        self.events: list[dict[str, Any]] = []
        self.problem: dict[str, Any] | None = None
        if self.status == 200:
            assert response.headers["content-type"].startswith("text/event-stream")
            self.events = parse_sse(response.text)
        else:
            assert response.headers["content-type"] == "application/problem+json"
            self.problem = response.json()

    @property
    def text(self) -> str:
        return text_of(self.events)

    @property
    def done(self) -> dict[str, Any]:
        assert self.events, "the stream is empty"
        assert "done" in self.events[-1], self.events
        return self.events[-1]

    @property
    def history_id(self) -> str:
        return str(self.done["historyId"])

    @property
    def ask(self) -> dict[str, Any]:
        asks = [e for e in self.events if "ask" in e]
        assert len(asks) == 1, self.events
        return dict(asks[0]["ask"])


class Api:
    """An httpx client on the app, speaking as one of the users."""

    def __init__(self, client: httpx.AsyncClient, app: Any, store: Store, url: str) -> None:
        self.client = client
        self.app = app
        self.store = store
        self.url = url

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKENS[user]}"}

    async def request(
        self, method: str, path: str, *, user: str | None = "alice", **kwargs: Any
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if user is not None:
            headers.update(self.auth(user))
        return await self.client.request(method, "/api" + path, headers=headers, **kwargs)

    async def post(self, path: str, body: Any = None, *, user: str = "alice") -> httpx.Response:
        return await self.request("POST", path, user=user, json=body)

    async def get(self, path: str, *, user: str = "alice") -> httpx.Response:
        return await self.request("GET", path, user=user)

    async def prompt(self, body: Any, *, user: str = "alice") -> Stream:
        return Stream(await self.post("/prompt", body, user=user))

    async def say(self, prompt: str, history_id: str | None = None, **extra: Any) -> Stream:
        body: dict[str, Any] = {"prompt": prompt, **extra}
        if history_id is not None:
            body["historyId"] = history_id
        stream = await self.prompt(body)
        assert stream.status == 200, stream.problem
        return stream

    async def answer(
        self,
        history_id: str,
        tool_call_id: str,
        envelope: dict[str, Any],
        *,
        user: str = "alice",
        **extra: Any,
    ) -> Stream:
        body = {
            "historyId": history_id,
            "askResponse": {"toolCallId": tool_call_id, **envelope},
            **extra,
        }
        return await self.prompt(body, user=user)

    async def history(self, history_id: str, *, user: str = "alice") -> dict[str, Any]:
        response = await self.get(f"/histories/{history_id}", user=user)
        assert response.status_code == 200, response.text
        return dict(response.json()["data"])

    async def rows(self, history_id: str) -> list[dict[str, Any]]:
        rows = (await self.history(history_id))["rows"]
        for row in rows:
            row.pop("created")
            row.pop("step", None)
        return list(rows)


def default_agents() -> list[Agent]:
    return [Agent("helper", instructions="You help people."), Agent("quiet", asks=False)]


def config_for(
    url: str,
    tmp_path: Path,
    *,
    agents: Sequence[Agent] | None = None,
    **settings: Any,
) -> ServerConfig:
    return ServerConfig(
        users=settings.pop("users", USERS),
        agents=list(agents) if agents is not None else default_agents(),
        database_url=url,
        blob_dir=tmp_path / "blobs",
        model="scripted",
        **settings,
    )


@asynccontextmanager
async def start_api(
    url: str,
    tmp_path: Path,
    *,
    agents: Sequence[Agent] | None = None,
    model: Model | None = None,
    raise_app_exceptions: bool = True,
    **settings: Any,
) -> AsyncIterator[Api]:
    """The app on `url` with its lifespan entered. With `model`, every agent uses it."""
    config = config_for(url, tmp_path, agents=agents, **settings)
    store: Store | None = None
    runtime: Runtime | None = None
    if model is not None:
        store = await Store.open(url, blob_dir=tmp_path / "blobs")
        runtime = Runtime(store=store, agents=config.resolved_agents(), model=model)
    app = create_app(config, runtime=runtime, store=store)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app, raise_app_exceptions=raise_app_exceptions)
            async with httpx.AsyncClient(transport=transport, base_url="http://handrail") as c:
                yield Api(c, app, app.state.store, url)
    finally:
        if store is not None:
            await store.close()


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'handrail.db'}"


def load_schema(name: str) -> dict[str, Any]:
    return dict(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


class RunningServer:
    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], port: int) -> None:
        self.server = server
        self.task = task
        self.base = f"http://127.0.0.1:{port}"


async def start_uvicorn(app: Any) -> RunningServer:
    """`app` under uvicorn on a free loopback port, in this event loop, once it serves."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", ws="none"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(300):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    assert server.started
    return RunningServer(server, task, port)


async def stop_uvicorn(running: RunningServer) -> None:
    running.server.should_exit = True
    await asyncio.wait_for(running.task, 30)
