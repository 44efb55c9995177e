"""Cancelling the ask a conversation waits on, without a model call: the one change that a new
message (``user_sent_message``) and a stop (``stopped``) both make, and the release of what the
cancelled gates held once it is committed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..asks import PendingAsk
from ..store.events import ask_resolved_event as user_ask_resolved
from ..store.records import History, HistoryChange
from .approvals import answered_record
from .gate import gate_for, queued_asks, queued_denials
from .rows import Row, result_row

if TYPE_CHECKING:
    from .steps import StepRunner

__all__ = ["cancel_change", "release_cancelled"]


def cancel_change(
    current: History,
    pending: PendingAsk,
    reason: str,
    *,
    via: str,
    envelope: Mapping[str, Any] | None = None,
    more_rows: Sequence[Row] = (),
    **fields: Any,
) -> HistoryChange:
    """The change that cancels `pending`, the ask `current` waits on, with `reason`: the ask's
    result (`envelope`, by default ``{action: "cancel", reason}``), its gate's denial rows and
    those of the asks queued behind it, then `more_rows`; its status ``cancelled``, no pending
    ask, the ``gate.cancelled`` record and the ``ask.resolved`` event; `fields` are the rest of
    the change (a title, a lease)."""
    if envelope is None:
        envelope = {"action": "cancel", "reason": reason}
    gate = gate_for(pending)
    return HistoryChange(
        append=[
            result_row(pending.tool_call_id, gate.tool_name(pending), dict(envelope)),
            *gate.denial_rows(pending, reason),
            *queued_denials(queued_asks(pending), reason),
            *more_rows,
        ],
        ask_status={pending.tool_call_id: "cancelled"},
        pending_ask=None,
        events=[user_ask_resolved(current.owner_id, current.id, pending, "cancel", reason=reason)],
        audit=[
            answered_record(
                pending,
                envelope,
                history_id=current.id,
                owner_id=current.owner_id,
                actor=current.owner_id,
                via=via,
                holds_call=gate.holds_call,
                action="gate.cancelled",
            )
        ],
        **fields,
    )


async def release_cancelled(
    calls: StepRunner, cancelled: Sequence[PendingAsk], reason: str, history: History
) -> None:
    """Once the cancel of `cancelled` committed: each one's gate, and those of the asks queued
    behind it, release what they hold."""
    for pending in cancelled:
        for held in [pending, *queued_asks(pending)]:
            await calls.release(held, reason, user_id=history.owner_id, history_id=history.id)
