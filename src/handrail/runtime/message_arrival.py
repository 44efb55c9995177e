"""What a new message does first to a conversation it does not start (`Runtime`'s prompt
turn): the side effects left uncertain by a process that died while sending them are reported
to the model (`MessageArrival.report_uncertain`), and the ask the conversation waits on is
cancelled with reason ``user_sent_message``, the message stored with the cancel
(`MessageArrival.cancel_pending`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .._util import utc_now
from ..asks import PendingAsk
from ..store.records import UNSET, ConfirmationRecord, History, HistoryChange
from .cancelling import cancel_change, release_cancelled
from .cas import compare_and_set
from .events import ask_resolved_event, tool_result_event
from .gate import uncertain_confirmation
from .rows import result_row, title_of, user_row
from .turn import Turn

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["CANCEL_BY_MESSAGE", "MessageArrival"]

CANCEL_BY_MESSAGE: Final = {"action": "cancel", "reason": "user_sent_message"}


class MessageArrival:
    """The first writes of a runtime's prompt turn on a conversation with a past."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    async def cancel_pending(
        self, turn: Turn, history: History, prompt: str, via: str = "headless"
    ) -> tuple[History, bool]:
        """Record ``cancel: user_sent_message`` for a pending ask, once even when two prompts
        race; when another answer resolved it first, go on without ``{askResolved}``.

        The message is stored with the cancel, in the same transaction, under a lease on the
        rest of the turn: a crash after it loses neither. Returns the history and whether the
        message was stored."""
        cancelled: list[PendingAsk] = []

        def cancel(current: History) -> HistoryChange | None:
            cancelled.clear()
            pending = current.pending_ask
            if pending is None:
                return None
            cancelled.append(pending)
            return cancel_change(
                current,
                pending,
                "user_sent_message",
                via=via,
                envelope=CANCEL_BY_MESSAGE,
                more_rows=[user_row(prompt)],
                title=title_of(prompt) if current.title is None else UNSET,
                lease=self.runtime.new_lease(history.id, {"kind": "prompt", "prompt": prompt}),
            )

        if history.pending_ask is None:
            return history, False
        history = await compare_and_set(self.store, history.id, cancel, current=history)
        await release_cancelled(self.runtime._calls, cancelled, "user_sent_message", history)
        for pending in cancelled:
            await turn.emit(ask_resolved_event(pending.tool_call_id, "cancel"))
        return history, bool(cancelled)

    async def report_uncertain(
        self,
        history: History,
        records: list[ConfirmationRecord],
        events: list[dict[str, Any]],
    ) -> History:
        """A side effect whose confirmation was consumed but whose outcome was never recorded
        (the process died while sending) is uncertain: the model reads
        ``TOOL_EXECUTION_UNCERTAIN`` as its call's result, once, and it is never resent.
        `records` are the history's confirmations, read with it. The ``toolResult`` events
        are added to `events`, for the caller to send after ``{askResolved}`` (a prompt's
        first event when it cancels the pending ask)."""
        now = utc_now()
        uncertain = []
        for record in records:
            if record.state == "consumed" and record.lease_until and record.lease_until <= now:
                record = await self.store.confirmations.reconcile(record.id, now)
            if record.state == "uncertain":
                uncertain.append(record)
        if not uncertain:
            return history
        missing: list[ConfirmationRecord] = []

        async def report(current: History) -> HistoryChange | None:
            rows = await self.store.histories.rows(current.id)
            answered = {
                r.data.get("toolCallId") for r in rows if r.data.get("type") == "tool-result"
            }
            missing[:] = [r for r in uncertain if r.tool_call_id not in answered]
            if not missing:
                return None
            return HistoryChange(
                append=[
                    result_row(
                        r.tool_call_id, r.tool_name, uncertain_confirmation(r.id), is_error=True
                    )
                    for r in missing
                ]
            )

        history = await compare_and_set(self.store, history.id, report, current=history)
        events.extend(
            tool_result_event(
                record.tool_call_id, record.tool_name, uncertain_confirmation(record.id)
            )
            for record in missing
        )
        return history
