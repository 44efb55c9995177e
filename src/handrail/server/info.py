"""``GET /info``: what a client shows about this server to the signed-in user.

The web UI reads it once after sign-in: who the caller is, which model answers (and whether it
is AI at all: ``scripted`` is a deterministic script), the agents with the ask kinds they offer,
and the playbook of plain-language prompts to try with a note for some of them (the app's
``state.playbook`` and ``state.playbook_notes``, which the demo sets; empty otherwise).

``GET /demo`` exists only when the app runs as the demo (`add_demo_route`): it lists the demo
users and their fixed tokens without authentication, so the sign-in page can offer one-click
"Sign in as ..." buttons. Those tokens are public by design (``handrail demo`` prints them); a
server that is not the demo has no such route (404).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..runtime.agent import Agent
from ..runtime.turn import Principal
from .auth import Caller
from .bodies import runtime_of
from .config import UserConfig
from .openapi import JsonSchema, json_ok, problems
from .problems import ok

__all__ = ["SCRIPTED_MODEL", "add_demo_route", "add_info_routes", "server_info"]


#: The name of the deterministic model, which is not AI.
SCRIPTED_MODEL: Final = "scripted"


def _agent_json(request: Request, agent: Agent) -> dict[str, Any]:
    model = runtime_of(request).model_for(agent).name
    return {
        "name": agent.name,
        "model": model,
        "askKinds": list(agent.asks.kinds) if agent.asks is not None else [],
        "clarify": agent.clarify and agent.asks is not None,
    }


def server_info(request: Request, principal: Principal) -> dict[str, Any]:
    """The body of ``GET /info`` for `principal`."""
    runtime = runtime_of(request)
    agents = [_agent_json(request, agent) for agent in runtime.agents.values()]
    model = runtime.model_for(runtime.default_agent).name
    playbook: Sequence[str] = getattr(request.app.state, "playbook", ())
    notes: Mapping[str, str] = getattr(request.app.state, "playbook_notes", {})
    return {
        "user": {"id": principal.user_id, "isAdmin": principal.is_admin},
        "model": model,
        "modelIsAI": model != SCRIPTED_MODEL,
        "agents": agents,
        "playbook": list(playbook),
        "playbookNotes": dict(notes),
        # The per-file cap of uploads, so a page can refuse a file before sending it.
        "maxUploadBytes": getattr(request.app.state, "upload_cap", None),
    }


async def get_info(request: Request, principal: Caller) -> JSONResponse:
    return ok(request, server_info(request, principal))


INFO_SCHEMA: Final[JsonSchema] = {
    "title": "ServerInfo",
    "type": "object",
    "properties": {
        "user": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "isAdmin": {"type": "boolean"}},
            "required": ["id", "isAdmin"],
        },
        "model": {
            "type": "string",
            "description": "The default agent's model: scripted, openai:<model> or "
            "anthropic:<model>.",
        },
        "modelIsAI": {
            "type": "boolean",
            "description": "False for the scripted model, a deterministic script.",
        },
        "agents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "model": {"type": "string"},
                    "askKinds": {"type": "array", "items": {"type": "string"}},
                    "clarify": {"type": "boolean"},
                },
                "required": ["name", "model", "askKinds", "clarify"],
            },
        },
        "playbook": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Plain-language prompts to try (the demo's playbook).",
        },
        "playbookNotes": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "A note to show with some of the prompts, by prompt.",
        },
        "maxUploadBytes": {
            "type": ["integer", "null"],
            "description": "The per-file cap of POST /files/upload, in bytes.",
        },
    },
    "required": ["user", "model", "modelIsAI", "agents", "playbook", "playbookNotes"],
}


def add_info_routes(router: APIRouter, prefix: str) -> None:
    """Add ``<prefix>/info``."""
    router.add_api_route(
        prefix + "/info",
        get_info,
        methods=["GET"],
        name="getInfo",
        operation_id="getInfo",
        tags=["info"],
        summary="The caller, the model in use, the agents and the prompts to try",
        responses={**json_ok(INFO_SCHEMA, "What the server offers the caller."), **problems()},
    )


def add_demo_route(router: APIRouter, prefix: str, users: Sequence[UserConfig]) -> None:
    """Add ``<prefix>/demo``, unauthenticated: the demo users and their public tokens. Only
    for the demo, whose tokens are fixed and printed at start."""
    listed = [{"id": user.id, "token": user.token, "isAdmin": user.admin} for user in users]

    async def get_demo(request: Request) -> JSONResponse:
        return ok(request, {"users": listed})

    router.add_api_route(
        prefix + "/demo",
        get_demo,
        methods=["GET"],
        name="getDemo",
        operation_id="getDemo",
        tags=["info"],
        summary="The demo users and their public tokens (the demo only; no authentication)",
        responses={
            **json_ok(
                {
                    "type": "object",
                    "properties": {
                        "users": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string"},
                                    "token": {"type": "string"},
                                    "isAdmin": {"type": "boolean"},
                                },
                                "required": ["id", "token", "isAdmin"],
                            },
                        }
                    },
                    "required": ["users"],
                },
                "The demo users.",
            ),
            **problems(),
        },
        openapi_extra={"security": []},
    )
