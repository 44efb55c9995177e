"""Permission levels and grants → a decision: allow, ask (an approval), ask for the level
first (a permission ask), or deny with a reason the model sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from .hints import SafetyClass

PermissionLevel = Literal["ask", "read-only", "non-consequential"]
#: The levels, in the order the permission ask offers them.
PERMISSION_LEVELS: Final[tuple[PermissionLevel, ...]] = ("ask", "read-only", "non-consequential")
#: The levels' names, as the permission ask offers them and the Grants page shows them (one
#: table, so the person reads the same words in both).
PERMISSION_LABELS: Final[dict[str, str]] = {
    "ask": "Ask every time",
    "read-only": "Allow read-only",
    "non-consequential": "Allow read/write",
}
PERMISSION_DESCRIPTIONS: Final[dict[str, str]] = {
    "ask": "Every tool call waits for your approval, even one that only looks things up.",
    "read-only": "Tools that only look things up run; anything that changes something asks.",
    "non-consequential": (
        "Tools that look things up or make easy-to-undo changes run; anything that cannot be "
        "undone asks every time."
    ),
}

GrantScope = Literal["once", "conversation", "always"]
GRANT_SCOPES: Final[tuple[GrantScope, ...]] = ("once", "conversation", "always")

DecisionAction = Literal["allow", "ask", "permission", "deny"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """What to do with one tool call. `reason` says why, in words the model (for a denial) or
    a log reader can use."""

    action: DecisionAction
    reason: str


def allowed_without_asking(safety: SafetyClass, level: PermissionLevel) -> bool:
    """Whether a tool of this class runs without a question at this level."""
    if level == "non-consequential":
        return safety in ("read-only", "mutating")
    if level == "read-only":
        return safety == "read-only"
    return False


def decide(
    safety: SafetyClass,
    *,
    level: PermissionLevel | None,
    granted: bool = False,
    asks_enabled: bool = True,
    clarify_in_step: bool = False,
) -> Decision:
    """Decide one tool call.

    - In a step that called ``clarify``, only read-only tools run: the model must wait for the
      answers before it changes anything.
    - No saved level for the connection: ask for one first (a permission ask).
    - A grant for this tool (for this conversation, or always): run.
    - Within the level: run. Above it: ask (an approval), every time for consequential tools.
    - An ask needs asks on; with asks off, the call is denied.
    """
    if clarify_in_step and safety != "read-only":
        return Decision(
            action="deny",
            reason=(
                "clarify was called in this step, so no tool that changes anything runs now. "
                "Once the user has answered (or, if clarify was refused, without it), call it "
                "again."
            ),
        )
    if level is None and not granted:
        if not asks_enabled:
            return Decision(
                action="deny",
                reason="The user has not chosen what this connection's tools may do, and this "
                "agent cannot ask them. Tell the user to set a permission level.",
            )
        return Decision(action="permission", reason="No permission level is saved yet.")
    if granted:
        return Decision(action="allow", reason="The user granted this tool.")
    assert level is not None
    if allowed_without_asking(safety, level):
        return Decision(action="allow", reason=f"A {safety} tool runs at level {level}.")
    if not asks_enabled:
        return Decision(
            action="deny",
            reason=f"This {safety} tool needs the user's approval, and this agent cannot ask "
            "for it. Tell the user what you wanted to do instead.",
        )
    return Decision(action="ask", reason=f"A {safety} tool is above level {level}.")
