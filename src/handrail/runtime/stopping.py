"""Stop: the person ends the running turn of a conversation, from any tab or server process.

`Stopper.stop` is what ``POST /histories/{id}/stop`` runs:

1. A turn of the conversation running in this process is asked to stop (`Turn.stop_requested`).
   Otherwise the request goes to the other processes as a ``turn.stopping`` event; the process
   that runs the turn answers with ``turn.progress {phase: "stopping"}`` and stops it.
2. The turn stops at its next safe point (`steps.until_stopped`): a model step is cancelled
   (what it said stays), a running tool's task is cancelled and its result says so (uncertain,
   ``TOOL_EXECUTION_UNCERTAIN``, unless the tool is read-only or idempotent), calls not yet run
   are denied with reason ``stopped``, a prepared request not yet consumed is cancelled (never
   sent), and one already being sent finishes and has its outcome recorded. What the turn did is
   committed with one compare-and-set, as at the end of any turn.
3. An ask the conversation then waits on is cancelled with reason ``stopped`` (its gate
   releases what it holds: a confirmation can no longer be confirmed); the model is not called.

The runtime listens for ``turn.stopping`` events from `Runtime.start` on (`Stopper.listen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..asks import PendingAsk
from ..store import UserEvent
from ..store.records import History, HistoryChange
from .cancelling import cancel_change, release_cancelled
from .cas import compare_and_set
from .gate import execution_denied
from .listening import BusListener
from .messages import AssistantMessage, ToolResultMessage
from .rows import result_row
from .turn import Principal, Turn
from .turn_end import cancel_paused

if TYPE_CHECKING:
    from .runtime import Runtime
    from .steps import TurnRun

__all__ = ["STOP_REASON", "StopResult", "Stopper"]

log = logging.getLogger("handrail.runtime")

#: The reason of what Stop cancels or denies.
STOP_REASON: Final = "stopped"
#: How long Stop waits for another process to say it runs the turn.
REMOTE_ACK_S: Final = 1.0
#: How long Stop waits for a stopping turn to end (a request being sent finishes first).
STOP_WAIT_S: Final = 60.0


@dataclass(frozen=True, kw_only=True, slots=True)
class StopResult:
    """What Stop did: whether a running turn was stopped, and the ask it cancelled."""

    history_id: str
    stopped: bool
    cancelled_ask: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "historyId": self.history_id,
            "stopped": self.stopped,
            "cancelledAsk": self.cancelled_ask,
        }


class Stopper:
    """Stop for one runtime: the turns it runs, by history id, and the stop requests."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.running: dict[str, Turn] = {}
        self._listener = BusListener(
            runtime.store.events,
            "turn.stopping",
            self._heard,
            name="handrail-stop-listen",
            failed="could not stop the turn on %s",
        )

    # --------------------------------------------------------------------------- stop

    async def stop(self, principal: Principal, history_id: str) -> StopResult:
        """Stop the conversation's running turn (here or in another process), then cancel
        the ask it waits on. The caller must own the conversation."""
        runtime = self.runtime
        await runtime.owned_history(principal, history_id)
        stopped = await self._stop_here(history_id)
        if not stopped:
            stopped = await self._stop_elsewhere(principal.user_id, history_id)
        history = await runtime.owned_history(principal, history_id)
        cancelled = await self.cancel_pending(history, via="web")
        return StopResult(history_id=history_id, stopped=stopped, cancelled_ask=cancelled)

    async def _stop_here(self, history_id: str) -> bool:
        turn = self.running.get(history_id)
        if turn is None:
            return False
        await self._request(turn)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(turn.wait(), STOP_WAIT_S)
        return True

    async def _request(self, turn: Turn) -> None:
        if turn.stop_requested.is_set() or (turn.progress or {}).get("phase") == "stopping":
            return
        # "stopping" is published before the turn hears it, so no client sees it after the
        # turn's last event.
        self.runtime.running.progressed(turn, {"phase": "stopping"})
        try:
            await self.runtime.publish(
                UserEvent(
                    kind="turn.progress",
                    user_id=turn.user_id,
                    history_id=turn.history_id,
                    data={"phase": "stopping", "turnId": turn.id},
                )
            )
        finally:
            turn.stop_requested.set()

    async def _stop_elsewhere(self, user_id: str, history_id: str) -> bool:
        """Ask the other processes; True when one of them ran the turn and it ended."""
        bus = self.runtime.store.events
        async with bus.subscribe(user_id) as events:
            await bus.publish(
                UserEvent(kind="turn.stopping", user_id=user_id, history_id=history_id)
            )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + REMOTE_ACK_S
            acknowledged = False
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    return False
                event = await events.get(timeout=left)
                if event is None or event.history_id != history_id:
                    continue
                if event.kind == "turn.progress" and event.data.get("phase") == "stopping":
                    if not acknowledged:
                        acknowledged = True
                        deadline = loop.time() + STOP_WAIT_S
                elif event.kind in ("turn.finished", "turn.failed") and acknowledged:
                    return True

    async def cancel_pending(self, history: History, *, via: str) -> str | None:
        """Cancel the ask `history` waits on with reason ``stopped`` (no model call): its
        gate releases what it holds. The id of the ask cancelled, or None."""
        if history.pending_ask is None:
            return None
        runtime = self.runtime
        cancelled: list[PendingAsk] = []

        def cancel(current: History) -> HistoryChange | None:
            cancelled.clear()
            pending = current.pending_ask
            if pending is None:
                return None
            cancelled.append(pending)
            return cancel_change(current, pending, STOP_REASON, via=via)

        await compare_and_set(runtime.store, history.id, cancel, current=history)
        await release_cancelled(runtime._calls, cancelled, STOP_REASON, history)
        return cancelled[0].tool_call_id if cancelled else None

    # --------------------------------------------------------------------------- a run

    @staticmethod
    def settle_run(run: TurnRun, *, answered: str | None = None) -> None:
        """Make a stopped run's rows whole before its commit: the ask it was about to pause
        on is cancelled (``stopped``), and every call of the turn without a result (a call a
        gate held, a call the model made in the step Stop cut) gets ``execution-denied``.
        `answered` is the ask the turn resumed from (its result is stored already)."""
        run.turn.stopped = True
        if run.pause is not None:
            run.rows = cancel_paused(
                run.rows, run.pause, result={"action": "cancel", "reason": STOP_REASON}
            )
            run.pause = None
        calls: dict[str, str] = {}
        done: set[str] = set()
        for message in run.messages[run.turn_start :]:
            if isinstance(message, AssistantMessage):
                calls.update({c.id: c.name for c in message.tool_calls})
            elif isinstance(message, ToolResultMessage):
                done.add(message.tool_call_id)
        for row in run.rows:
            if row.get("type") == "tool-result":
                done.add(str(row.get("toolCallId")))
        if answered is not None:
            done.add(answered)
        for call_id, name in calls.items():
            if call_id not in done:
                run.rows.append(
                    result_row(call_id, name, execution_denied(STOP_REASON), is_error=True)
                )
                run.messages.append(
                    ToolResultMessage(
                        tool_call_id=call_id,
                        tool_name=name,
                        content=execution_denied(STOP_REASON),
                        is_error=True,
                    )
                )

    # --------------------------------------------------------------------------- listening

    def start(self) -> None:
        """Hear ``turn.stopping`` from the other processes (and this one's own)."""
        self._listener.start()

    async def aclose(self) -> None:
        await self._listener.aclose()

    async def _heard(self, event: UserEvent, history_id: str) -> None:
        turn = self.running.get(history_id)
        if turn is not None and turn.user_id == event.user_id:
            await self._request(turn)
