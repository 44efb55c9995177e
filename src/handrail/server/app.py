"""The FastAPI app: `create_app` wires the config, the store, the runtime and the routes.

    app = create_app(load_config("handrail.yaml"))

The app's lifespan opens the store (running its migrations) and builds the runtime; at
shutdown it waits for the turns still running, then closes the store. A store or runtime passed
in is used as it is, and the store is then left open for its owner to close.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from starlette.middleware.cors import CORSMiddleware

from ..connections import SecretBox, load_catalog
from ..runtime.connected import ConnectionHub
from ..runtime.runtime import Runtime
from ..store import Store
from .audit import add_audit_routes
from .auth import Authenticator
from .chat import add_chat_routes
from .config import ServerConfig
from .confirmations import add_confirmation_routes
from .connections import add_connection_routes
from .deliveries import add_delivery_routes
from .edge import HandrailAPI
from .events import add_event_routes
from .grants import add_grant_routes
from .histories import add_history_routes
from .inbox import add_inbox_routes
from .info import add_info_routes
from .instructions import add_instruction_routes
from .links import add_link_routes
from .openapi import install_openapi
from .problems import install_problem_handlers
from .reach import Reach
from .tokens import add_token_routes
from .uploads import add_upload_routes
from .web import add_web_routes

__all__ = ["create_app"]

log = logging.getLogger("handrail.server")

DESCRIPTION: Final = (
    "handrail's HTTP API. Authenticate with `Authorization: Bearer <token>`. Success bodies "
    "are `{data, requestId}`; errors are problem JSON `{status, title, detail, code?, "
    "fields?, requestId}` (`application/problem+json`). Before any route, the server may refuse "
    "a request on its connection, whatever the route: 431 when its line and headers pass the "
    "server's limit, 408 when its headers or body come too slowly, and 503 when the server "
    "already holds as many connections as it takes (each closes the connection)."
)


def create_app(
    config: ServerConfig,
    *,
    runtime: Runtime | None = None,
    store: Store | None = None,
) -> HandrailAPI:
    """The handrail ASGI app for `config`.

    Without `store`, the lifespan opens ``config.database_url`` (uploads in
    ``config.blob_dir``) and closes it at shutdown. Without `runtime`, it builds one for
    ``config.agents`` (each without a model gets ``config.model``). A `runtime` brings its own
    store when `store` is not given. The users, the prefix, the upload and JSON caps and
    whether the headless endpoints exist always come from `config` (its agents decide the
    upload cap and the headless endpoints).
    """

    @asynccontextmanager
    async def lifespan(app: HandrailAPI) -> AsyncIterator[None]:
        opened: Store | None = None
        the_store = store if store is not None else (runtime.store if runtime else None)
        if the_store is None:
            opened = await Store.open(
                config.database_url,
                blob_dir=config.blob_dir,
                synchronous=config.sqlite_synchronous,
                wait_s=config.database_wait,
            )
            the_store = opened
        try:
            the_runtime = runtime
            if the_runtime is None:
                the_runtime = Runtime(
                    store=the_store,
                    agents=config.resolved_agents(),
                    lease_s=config.turn_lease,
                    page_tool_timeout=config.page_tool_timeout,
                )
                for agent in the_runtime.agents.values():
                    the_runtime.model_for(agent)  # a bad model name fails the start-up
            # The saved connections' tools first, so that a turn taken over has them too.
            hub = ConnectionHub(
                the_store,
                catalog=catalog,
                secrets=SecretBox.from_env(),
                call_timeout=config.tool_timeout,
                # Approvers are configured users; with JWTs, any user id may be one.
                users=None if config.jwt is not None else [u.id for u in config.users],
            )
            await hub.start(the_runtime.agents.values())
            app.state.connections = hub
            # Hear the other processes' events (PostgreSQL) before serving anyone.
            await the_store.events.start()
            try:
                # Take over the turns of server processes that stopped (their leases lapsed).
                the_runtime.start()
                app.state.store = the_store
                app.state.runtime = the_runtime
                # Webhooks and email: their outbox is sent from every process.
                reach = Reach(the_store, config)
                app.state.reach = reach
                await reach.start()
                try:
                    yield
                finally:
                    # The turns still running finish with their tools, then the servers stop.
                    await the_runtime.aclose()
                    await reach.aclose()
            finally:
                await hub.aclose()
        finally:
            if opened is not None:
                await opened.close()

    # The app's one middleware is its edge (request ids, errors as problem JSON, the URL's text
    # rule: `handrail.server.edge`); CORS, when configured, goes outside it.
    app = HandrailAPI(
        title="handrail",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    # A broken app definition stops the start-up here, with every problem listed.
    catalog = load_catalog(config.catalog_dirs)
    app.state.authenticator = Authenticator(config.users, jwt=config.jwt)
    app.state.upload_cap = config.upload_cap
    app.state.max_json_bytes = config.max_json_bytes
    app.state.max_files_answer_bytes = config.max_files_answer_bytes
    app.state.link_key = config.link_key
    app.state.api_prefix = config.api_prefix
    install_problem_handlers(app)
    prefix = config.api_prefix
    add_chat_routes(app.router, prefix)
    add_history_routes(app.router, prefix, asks_enabled=config.asks_enabled)
    if config.asks_enabled:
        add_inbox_routes(app.router, prefix)  # GET /inbox: pending asks, searchable
    add_upload_routes(app.router, prefix)
    add_grant_routes(app.router, prefix)
    add_confirmation_routes(app.router, prefix)
    add_connection_routes(app.router, prefix)  # /catalog, /connections, /activity
    add_audit_routes(app.router, prefix)  # /audit, /approvals
    add_token_routes(app.router, prefix)  # POST /tokens: an admin mints a user's token
    add_instruction_routes(app.router, prefix)  # reset a connection's, read a history's
    add_info_routes(app.router, prefix)  # GET /info: the caller, the model, the agents
    add_delivery_routes(app.router, prefix)  # GET /deliveries: webhooks' and emails' log
    add_link_routes(app.router)  # /links/{token}: the one-time answer links of emails
    add_event_routes(app.router, prefix)  # GET /events: the caller's events, as SSE
    add_web_routes(app.router, prefix)  # the web UI: /, /watch, /inbox, /grants, /static/...
    install_openapi(app, description=DESCRIPTION)
    if config.allowed_origins:
        # Pages of these origins may call the API from a browser (the <handrail-chat>
        # element): bearer tokens only, never cookies, so no credentials. Outermost, so that
        # error answers carry the headers too. Any other origin gets none: its browser refuses.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.allowed_origins),
            allow_credentials=False,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Accept", "Last-Event-ID"],
            expose_headers=["Link", "X-Request-Id", "Retry-After"],
            max_age=600,
        )
    return app
