"""The asks the server makes itself: an approval before a tool runs, and the permission level of
a connection the first time a conversation uses it.

Both are pending asks like any other (one slot, the same endpoints, cards and events); they
differ in what answering does: the held tool call runs, or is denied with a reason the model
reads. The held call is the one the model made; its id is named by ``heldToolCallId`` and its
arguments are replayed from the paused turn's messages, never taken from a client.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from .._util import iso, new_id, utc_now
from ..asks import (
    AskValidationError,
    to_simple_card,
    validate_ask_input,
    validate_ask_response,
    validate_clarify_response,
)
from ..asks.checks import add, invalid_enum
from ..asks.text import cut_text
from ..policy import (
    GRANT_SCOPES,
    PERMISSION_DESCRIPTIONS,
    PERMISSION_LEVELS,
    GrantScope,
    PermissionLevel,
)
from .agent import Agent
from .messages import ToolCall
from .tools import Tool, ToolSet

log = logging.getLogger("handrail.runtime")

APPROVAL: Final = "approval"
PERMISSION: Final = "permission"
SELECTION: Final = "selection"
CONFIRMATION: Final = "confirmation"
#: The asks the server makes itself; answering them acts on the held tool call.
GATE_ORIGINS: Final = (APPROVAL, PERMISSION, SELECTION, CONFIRMATION)
PROMPT_MAX: Final = 500

PERMISSION_OPTION_LABELS: Final[dict[str, str]] = {
    "ask": "Ask every time",
    "read-only": "Allow read-only",
    "non-consequential": "Allow read/write",
}


def execution_denied(reason: str) -> dict[str, str]:
    """What the model gets as the result of a tool call the person did not allow."""
    return {"type": "execution-denied", "reason": reason}


def approval_input(agent: Agent, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The confirm input of an approval: the agent's ``approvals[tool](input)``, or the fallback
    wording when there is none, it raises, or it returns an input that is not a valid confirm."""
    make = agent.asks.approvals.get(tool.name) if agent.asks is not None else None
    if make is not None:
        try:
            made = make(dict(arguments))
        except Exception:
            log.warning(
                "the approval input of %s raised; using the default", tool.name, exc_info=True
            )
        else:
            if not validate_ask_input("confirm", made):
                return dict(made)
            log.warning(
                "the approval input of %s is not a valid confirm; using the default", tool.name
            )
    prompt = f"Allow {tool.name}? {tool.description}".strip()
    return {
        "prompt": cut_text(prompt, PROMPT_MAX),
        "confirmLabel": "Allow",
        "denyLabel": "Deny",
    }


def approval_pending(agent: Agent, tool: Tool, call: ToolCall) -> dict[str, Any]:
    """The pending ask of an approval for `call`: a confirm with ``origin: "approval"``."""
    approval_id = f"approval_{new_id()}"
    confirm = approval_input(agent, tool, call.arguments)
    return {
        "toolCallId": approval_id,
        "kind": "confirm",
        "input": confirm,
        "simple": to_simple_card("confirm", confirm, approval_id),
        "created": iso(utc_now()),
        "origin": APPROVAL,
        "approvalId": approval_id,
        "toolName": tool.name,
        "heldToolCallId": call.id,
    }


def permission_input(connection: ToolSet, tool: Tool) -> dict[str, Any]:
    name = connection.name
    return {
        "title": cut_text(f"Allow {name} to use its tools?", 80),
        "prompt": cut_text(
            f"{name} wants to use {tool.name}. What may {name}'s tools do in your "
            "conversations without asking you first?",
            PROMPT_MAX,
        ),
        "select": "one",
        "options": [
            {
                "id": level,
                "label": PERMISSION_OPTION_LABELS[level],
                "description": PERMISSION_DESCRIPTIONS[level],
            }
            for level in PERMISSION_LEVELS
        ],
        "allowDecline": True,
    }


def permission_pending(connection: ToolSet, tool: Tool, call: ToolCall) -> dict[str, Any]:
    """The pending ask of a permission level: a choice with ``origin: "permission"``."""
    ask_id = f"permission_{new_id()}"
    choice = permission_input(connection, tool)
    return {
        "toolCallId": ask_id,
        "kind": "choice",
        "input": choice,
        "simple": to_simple_card("choice", choice, ask_id),
        "created": iso(utc_now()),
        "origin": PERMISSION,
        "toolName": tool.name,
        "connectionId": connection.connection_id,
        "heldToolCallId": call.id,
    }


def denial_reason(envelope: dict[str, Any]) -> str | None:
    """Why an answer does not allow the held call, or None when it does (approve)."""
    action = envelope.get("action")
    if action == "decline":
        return "user_declined"
    if action == "cancel":
        reason = envelope.get("reason")
        return reason if isinstance(reason, str) and reason else "user_cancelled"
    content = envelope.get("content")
    if isinstance(content, dict) and content.get("confirmed") is True:
        return None
    return "user_denied"


def split_scope(
    pending: dict[str, Any], envelope: dict[str, Any]
) -> tuple[dict[str, Any], GrantScope, list[AskValidationError]]:
    """An approval's answer may carry ``content.scope`` (``once``, the default,
    ``conversation`` or ``always``): returns the envelope without it, the scope, and its error.
    On other asks the key is left in place, so validation refuses it as any unknown key."""
    content = envelope.get("content")
    if pending.get("origin") != APPROVAL or not isinstance(content, dict) or "scope" not in content:
        return envelope, "once", []
    scope = content["scope"]
    rest = {**envelope, "content": {k: v for k, v in content.items() if k != "scope"}}
    errors: list[AskValidationError] = []
    if scope not in GRANT_SCOPES:
        invalid_enum(errors, "content.scope", scope, GRANT_SCOPES)
        return rest, "once", errors
    return rest, scope, errors


def gate_answer_errors(
    pending: dict[str, Any], envelope: dict[str, Any], max_file_size_bytes: int
) -> list[AskValidationError]:
    """Validate an answer to any pending ask: a gate's wider answers included."""
    if pending["kind"] == "clarify":
        return validate_clarify_response(pending["input"], envelope)
    rest, _scope, errors = split_scope(pending, envelope)
    errors = errors + validate_ask_response(
        pending["kind"], pending["input"], rest, max_file_size_bytes=max_file_size_bytes
    )
    if pending.get("origin") == PERMISSION and rest.get("action") == "accept":
        selected = (rest.get("content") or {}).get("selected")
        if (
            isinstance(selected, list)
            and len(selected) == 1
            and selected[0] not in PERMISSION_LEVELS
        ):
            add(
                errors, "content.selected[0]", "OPTION_NOT_OFFERED", "Not a level.", "Pick a level."
            )
    return errors


def chosen_level(envelope: dict[str, Any]) -> PermissionLevel | None:
    """The level a permission answer chose, or None when it was declined or cancelled."""
    if envelope.get("action") != "accept":
        return None
    selected = envelope.get("content", {}).get("selected", [])
    level = selected[0] if selected else None
    return level if level in PERMISSION_LEVELS else None


def chosen_option(envelope: dict[str, Any]) -> str | None:
    """The option id a one-choice answer picked, or None when declined or cancelled."""
    if envelope.get("action") != "accept":
        return None
    selected = envelope.get("content", {}).get("selected", [])
    return str(selected[0]) if selected else None
