"""The events of the per-user event bus (`handrail.store.events`): their kinds and wire form.

An event is a `UserEvent`: a `kind` tag, an id (24 hex characters), the user it concerns, the
history it is about (if any), when it happened and its public data. The kinds
(`EVENT_KINDS`):

==================  ==========================================================================
``ask.created``     a history now waits on an ask; data ``{ask}``: `PendingAsk.public("event")`
``ask.answered``    the ask was answered; data ``{toolCallId, action, kind, origin?}``
``ask.cancelled``   the ask was cancelled; data ``{toolCallId, action, kind, origin?, reason?}``
``ask.reminder``    an ask is still waiting and someone should be reminded; data ``{ask}``
``turn.started``    a turn began running; data ``{turnId}``
``turn.progress``   what the running turn does now; data ``{turnId, phase, toolName?,
                    toolCallId?}``
                    with phase ``thinking`` (a model step), ``tool`` (a tool runs) or
                    ``stopping`` (the person pressed Stop)
``turn.stopping``   Stop was pressed for the conversation (the process running its turn stops
                    it); data ``{}``
``ask.forwarding``  an answer for a call open in one process only (a legacy MCP call) reached
                    another process; data ``{step, key}``: ``find`` (who holds ``key``?),
                    ``held`` (this process does), ``answered`` (the answer is stored: go on),
                    ``released`` (the ask was cancelled: release the call)
``turn.finished``   the turn ended; data ``{turnId, title?, pendingToolCallId?, stopped?}``
``turn.failed``     the turn ended with an error; data ``{turnId, error}`` (words for the person)
``history.created`` a conversation was made; data ``{title, agent}``
``history.renamed`` its title changed; data ``{title}``
``history.deleted`` it was deleted; data ``{}``
``reload``          made by a subscription, never published: events may have been missed (the
                    replay window was passed, the consumer fell behind, the link to PostgreSQL
                    dropped); the consumer should read the state again
==================  ==========================================================================

The data is public: only what the person may see (an ask's ``event`` surface, never its
replay messages, a secret or a file's bytes). The wire form is `UserEvent.to_json`:
``{id, kind, userId, historyId, created, data}``, plus ``approvers`` for an ask event of a gate
that names approvers.

An event concerns its user (the conversation's owner) and, for the ask events of a gate with
approvers, every one of them (`UserEvent.approvers`: user ids, or ``admins`` for every admin):
everyone who may answer it hears it (`UserEvent.concerns`). The ask's ``event`` surface is all
an approver gets: the call, its arguments or preview, who approved so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

from handrail._frozen import slot_init
from handrail._util import iso, new_id, now_iso, utc_now
from handrail.asks import PendingAsk

__all__ = ["EVENT_KINDS", "EventKind", "UserEvent", "ask_created_event", "ask_resolved_event"]

EventKind = Literal[
    "ask.created",
    "ask.answered",
    "ask.cancelled",
    "ask.reminder",
    "turn.started",
    "turn.progress",
    "turn.stopping",
    "ask.forwarding",
    "turn.finished",
    "turn.failed",
    "history.created",
    "history.renamed",
    "history.deleted",
    "reload",
]
EVENT_KINDS: Final[tuple[str, ...]] = get_args(EventKind)


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class UserEvent:
    """One change that concerns `user_id`, with its public `data` (see the module)."""

    kind: EventKind
    user_id: str
    history_id: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=new_id)
    created: str = field(default_factory=now_iso)
    #: The others who may answer it (an ask event of a gate with approvers): user ids, or
    #: ``admins`` for every admin.
    approvers: tuple[str, ...] = ()

    def concerns(self, user_id: str, *, is_admin: bool = False) -> bool:
        """Whether `user_id` hears it: its user, or one of its approvers (``admins``: any
        admin)."""
        if user_id == self.user_id or user_id in self.approvers:
            return True
        return is_admin and "admins" in self.approvers

    def to_json(self) -> dict[str, Any]:
        """The wire form: ``{id, kind, userId, historyId, created, data}`` (and
        ``approvers`` when it has some)."""
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "userId": self.user_id,
            "historyId": self.history_id,
            "created": self.created,
            "data": dict(self.data),
        }
        if self.approvers:
            out["approvers"] = list(self.approvers)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UserEvent:
        """`to_json`'s inverse. Raises ValueError for a shape that is not an event."""
        kind = data.get("kind")
        if kind not in EVENT_KINDS:
            raise ValueError(f"not an event kind: {kind!r}")
        user_id, event_id = data.get("userId"), data.get("id")
        if not isinstance(user_id, str) or not isinstance(event_id, str):
            raise ValueError("an event needs a userId and an id")
        history_id = data.get("historyId")
        payload = data.get("data") or {}
        created = data.get("created")
        approvers = data.get("approvers")
        return cls(
            kind=cast(EventKind, kind),
            user_id=user_id,
            history_id=history_id if isinstance(history_id, str) else None,
            data=dict(payload) if isinstance(payload, Mapping) else {},
            id=event_id,
            created=created if isinstance(created, str) else iso(utc_now()),
            approvers=tuple(str(a) for a in approvers) if isinstance(approvers, list) else (),
        )


def ask_created_event(
    user_id: str, history_id: str, pending: PendingAsk, *, kind: EventKind = "ask.created"
) -> UserEvent:
    """``ask.created`` (or ``ask.reminder``) for `pending`: its ``event`` surface only; it
    reaches the ask's approvers too."""
    return UserEvent(
        kind=kind,
        user_id=user_id,
        history_id=history_id,
        data={"ask": pending.public("event")},
        approvers=tuple(pending.approvers or ()),
    )


def ask_resolved_event(
    user_id: str,
    history_id: str,
    pending: PendingAsk,
    action: str,
    *,
    reason: str | None = None,
) -> UserEvent:
    """``ask.answered`` (accept, decline) or ``ask.cancelled`` (cancel) for `pending`; it
    reaches the ask's approvers too."""
    data: dict[str, Any] = {
        "toolCallId": pending.tool_call_id,
        "action": action,
        "kind": pending.card_kind,
    }
    if pending.origin:
        data["origin"] = pending.origin
    if reason:
        data["reason"] = reason
    kind: EventKind = "ask.cancelled" if action == "cancel" else "ask.answered"
    return UserEvent(
        kind=kind,
        user_id=user_id,
        history_id=history_id,
        data=data,
        approvers=tuple(pending.approvers or ()),
    )
