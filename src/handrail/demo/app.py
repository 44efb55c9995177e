"""The demo server: the web UI and the demo agent on a SQLite file in a local folder, with three
users whose tokens are fixed and public (``demo-alice``, ``demo-bob``, ``demo-admin``).

    app = create_demo_app(Path("handrail-demo"))
    uvicorn.run(app, port=8000)

The model is ``HANDRAIL_MODEL`` (``scripted`` when unset): with the scripted model the demo
agent follows `PLAYBOOK`; with a real provider the same agent and tools answer with that model.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from fastapi import FastAPI

from ..runtime.models import DEFAULT_MODEL, MODEL_ENV_VAR, ScriptedModel
from ..runtime.runtime import Runtime
from ..server.app import create_app
from ..server.config import ServerConfig, UserConfig
from ..server.info import add_demo_route
from ..store import LocalBlobStore, Store
from ..store.db import Database
from .agent import PLAYBOOK, PLAYBOOK_NOTES, demo_agent
from .booking_api import create_booking_app
from .notes_page import add_notes_page_routes, notes_page_agent

#: Where the demo server mounts the example booking API.
BOOKING_MOUNT: Final = "/demo/booking"

__all__ = [
    "DEFAULT_DEMO_FOLDER",
    "DEMO_DATABASE_NAME",
    "DEMO_USERS",
    "create_demo_app",
    "demo_config",
]

DEFAULT_DEMO_FOLDER: Final = Path("handrail-demo")
DEMO_DATABASE_NAME: Final = "handrail.db"

#: The demo's users. Their tokens are fixed and public: the demo prints them and offers them as
#: one-click sign-in buttons. Never use them for anything but the demo.
DEMO_USERS: Final = (
    UserConfig(id="alice", token="demo-alice"),
    UserConfig(id="bob", token="demo-bob"),
    UserConfig(id="admin", token="demo-admin", admin=True),
)


def demo_config(
    database: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env: Mapping[str, str] | None = None,
) -> ServerConfig:
    """The demo's configuration: its users, the demo agent, SQLite at `database` (uploads in
    ``files/`` beside it) and the model of ``HANDRAIL_MODEL`` (default ``scripted``)."""
    environ = os.environ if env is None else env
    model = environ.get(MODEL_ENV_VAR, "").strip() or DEFAULT_MODEL
    loopback = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    booking_url = f"http://{loopback}:{port}{BOOKING_MOUNT}"
    return ServerConfig(
        users=DEMO_USERS,
        agents=[demo_agent(booking_url=booking_url), notes_page_agent()],
        database_url=f"sqlite:///{database}",
        blob_dir=database.parent / "files",
        model=model,
        host=host,
        port=port,
        allowed_origins=[
            o for o in environ.get("HANDRAIL_ALLOWED_ORIGINS", "").split(",") if o.strip()
        ],
    )


def _booking_control_token(config: ServerConfig) -> str:
    """The bearer token the demo's booking API takes for ``/stats`` and ``/control``: the
    first admin user's (``demo-admin``). With no admin, a random one nobody knows, so those
    routes are closed."""
    for user in config.users:
        if user.admin and user.token:
            return user.token
    return secrets.token_urlsafe(32)


def create_demo_app(
    database: Path = DEFAULT_DEMO_FOLDER / DEMO_DATABASE_NAME,
    *,
    config: ServerConfig | None = None,
) -> FastAPI:
    """The demo as an ASGI app. Its folder is created when missing; the lifespan brings the
    database's schema up to date and closes it at shutdown.

    The scripted model gets the demo `PLAYBOOK`; ``GET /api/demo`` lists the demo users for
    the sign-in page, and ``GET /api/info`` the playbook's prompts.
    """
    config = config if config is not None else demo_config(database)
    database.parent.mkdir(parents=True, exist_ok=True)
    assert config.blob_dir is not None
    store = Store(Database(config.database_url), LocalBlobStore(config.blob_dir))
    runtime = Runtime(
        store=store,
        agents=config.resolved_agents(),
        models={DEFAULT_MODEL: ScriptedModel(playbook=PLAYBOOK)},
        page_tool_timeout=config.page_tool_timeout,
    )
    app = create_app(config, runtime=runtime, store=store)
    app.state.playbook = list(PLAYBOOK)
    app.state.playbook_notes = dict(PLAYBOOK_NOTES)
    add_demo_route(app.router, config.api_prefix, config.users)
    # The notes page of tool-safety-classes.md with the chat element beside it.
    add_notes_page_routes(app.router, tuple(config.users))
    # The example booking API, called by the booking action set over real HTTP on loopback.
    # Its request log and fault injection are the admin's alone (`_booking_control_token`).
    app.mount(BOOKING_MOUNT, create_booking_app(control_token=_booking_control_token(config)))

    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await store.db.migrate()
            for agent in runtime.agents.values():
                runtime.model_for(agent)  # a bad model name fails the start-up
            async with inner(app):
                yield
        finally:
            await store.close()

    app.router.lifespan_context = lifespan
    return app
