"""Answers for what lives in one process only: a legacy MCP call parked in the process that
made it, answered through another process of the same deployment (PostgreSQL).

A gate says what it holds that only one process has (`Gate.held_elsewhere`: a key, when this
process is not the one) and whether this process holds a key (`Gate.holds_here`). When an
answer for such an ask reaches another process:

1. `Forwarder.find` asks the other processes over the event bus (``ask.forwarding``, step
   ``find``) whether one of them holds it; the one that does says so (step ``held``) within
   `REMOTE_ACK_S`. None does (the process is gone, or the bus stays in one process, as on
   SQLite): the gate's `before_answer` decides as usual (the ask is cancelled
   ``server_restarted``).
2. The answer is stored as any answer is (the same compare-and-set), under a lease of this
   process that names the key (``forward``).
3. `Forwarder.relay` says the answer is stored (step ``answered``); the holding process hands
   the lease over to itself (`LeaseRepo.hand_over`) and carries the answer out: the call goes
   on where it is open. Should it stop first, the lease lapses and any process takes the turn
   over (`Recovery`): the gate's `recover` tells the model the call did not finish.
4. The process that took the answer streams the turn's outcome to its client once the turn
   ended (``turn.finished`` or ``turn.failed``), read back from what the turn stored.

An ask cancelled in another process (a new message, Stop) releases what it held through the
holder (`Forwarder.release`, step ``released``): a parked legacy call hears ``cancel``. So does
a holder that finds the turn taken over by another process before it could take the lease.

The events carry only the key (a random id) and the step, never an answer.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Final

from .._util import utc_now
from ..asks import PendingAsk
from ..store import Subscription, UserEvent
from ..store.records import History
from .events import (
    ask_event,
    ask_resolved_event,
    done_event,
    error_event,
    text_event,
    tool_result_event,
)
from .gate import registered_gates
from .listening import BusListener
from .turn import Turn

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["FORWARD_WAIT_S", "REMOTE_ACK_S", "Forwarder"]

log = logging.getLogger("handrail.runtime")

#: How long the process that took an answer waits for the holder to say it holds the call.
REMOTE_ACK_S: Final = 1.0
#: How long it waits for the holder's turn to end before it answers its client with what is
#: stored so far.
FORWARD_WAIT_S: Final = 300.0
KIND: Final = "ask.forwarding"


class Forwarder:
    """Forwarding for one runtime: finding the holder, relaying, and listening as a holder."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._listener = BusListener(
            runtime.store.events,
            KIND,
            self._heard,
            name="handrail-forward",
            failed="could not take the forwarded answer on %s",
        )

    @property
    def crosses_processes(self) -> bool:
        return self.runtime.store.events.crosses_processes

    # ----------------------------------------------------------------- the answering process

    async def find(self, user_id: str, history_id: str, key: str) -> bool:
        """Whether another live process holds `key` (it says so within `REMOTE_ACK_S`)."""
        if not self.crosses_processes:
            return False
        bus = self.runtime.store.events
        async with bus.subscribe(user_id) as events:
            await bus.publish(_event(user_id, history_id, "find", key))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + REMOTE_ACK_S
            while (left := deadline - loop.time()) > 0:
                event = await events.get(timeout=left)
                if event is not None and _step(event, key) == "held":
                    return True
        return False

    async def relay(
        self, turn: Turn, history: History, pending: PendingAsk, action: str, key: str
    ) -> None:
        """Tell the holder the answer is stored, then give `turn`'s client the outcome of the
        holder's turn once it ends (read back from the stored conversation)."""
        store = self.runtime.store
        bus = store.events
        error: str | None = None
        try:
            async with bus.subscribe(history.owner_id) as events:
                await bus.publish(_event(history.owner_id, history.id, "answered", key))
                await turn.emit(ask_resolved_event(pending.tool_call_id, action))
                error = await _turn_end(events, history.id)
            await self._replay(turn, history.id, pending, error)
        except Exception:
            log.exception("relaying the forwarded answer on history %s failed", history.id)
            turn.error = "The turn failed. The server log has the details."
            await turn.emit(error_event(turn.error))
            await turn.emit(done_event(history.id))
        finally:
            await turn.finish()

    async def _replay(
        self, turn: Turn, history_id: str, pending: PendingAsk, error: str | None
    ) -> None:
        store = self.runtime.store
        rows = [r.data for r in await store.histories.rows(history_id)]
        answered = [
            i
            for i, r in enumerate(rows)
            if r.get("type") == "tool-result" and r.get("toolCallId") == pending.tool_call_id
        ]
        for row in rows[answered[-1] + 1 :] if answered else []:
            if row.get("type") == "tool-result":
                result = row.get("result")
                if isinstance(result, dict) and result.get("type") == "execution-denied":
                    result = {"approved": False, "reason": result.get("reason")}
                await turn.emit(
                    tool_result_event(str(row["toolCallId"]), str(row["toolName"]), result)
                )
            elif row.get("type") == "assistant" and row.get("text"):
                await turn.emit(text_event(str(row["text"])))
        current = await store.histories.get(history_id)
        waiting = current.pending_ask if current is not None else None
        turn.title = current.title if current is not None else None
        if error is not None:
            turn.error = error
            await turn.emit(error_event(error))
        if waiting is not None:
            turn.pending_summary = waiting.public("turn")
            await turn.emit(ask_event(waiting, history_id))
        await turn.emit(
            done_event(
                history_id,
                title=turn.title,
                pending_tool_call_id=waiting.tool_call_id if waiting else None,
            )
        )

    async def release(self, user_id: str, history_id: str, key: str) -> None:
        """The ask holding `key` was cancelled here: the process that holds it releases it
        (a parked legacy call hears ``cancel``). Nothing waits for it: a process that is gone
        holds nothing."""
        if self.crosses_processes:
            await self.runtime.store.events.publish(_event(user_id, history_id, "released", key))

    # ----------------------------------------------------------------- the holding process

    def start(self) -> None:
        """Hear ``ask.forwarding`` from the other processes (PostgreSQL only)."""
        if self.crosses_processes:
            self._listener.start()

    async def aclose(self) -> None:
        await self._listener.aclose()

    async def _heard(self, event: UserEvent, history_id: str) -> None:
        key = str(event.data.get("key") or "")
        if not key or not _held_here(key):
            return
        if event.data.get("step") == "released":
            for gate in registered_gates().values():
                gate.release_here(key)
        elif event.data.get("step") == "find":
            await self.runtime.publish(_event(event.user_id, history_id, "held", key))
        elif event.data.get("step") == "answered":
            await self._go_on(history_id, key)

    async def _go_on(self, history_id: str, key: str) -> None:
        """The answer for `key` is stored: take its turn's lease over and carry it out here,
        where the call is open."""
        runtime = self.runtime
        lease = await runtime.store.leases.get(history_id)
        if lease is None or lease.state.get("forward") != key:
            for gate in registered_gates().values():
                gate.release_here(key)
            return
        until = utc_now() + dt.timedelta(seconds=runtime.lease_s)
        taken = await runtime.store.leases.hand_over(lease, runtime.owner, until)
        if taken is None:
            # Another process took the turn over first (this one was too slow): the model
            # reads there that the call did not finish; the server hears ``cancel`` here.
            for gate in registered_gates().values():
                gate.release_here(key)
            return
        await runtime.recovery.resume(taken, recovering=False)


def _held_here(key: str) -> bool:
    return any(gate.holds_here(key) for gate in registered_gates().values())


def _event(user_id: str, history_id: str, step: str, key: str) -> UserEvent:
    data = {"step": step, "key": key}
    return UserEvent(kind=KIND, user_id=user_id, history_id=history_id, data=data)


def _step(event: UserEvent, key: str) -> Any:
    if event.kind != KIND or event.data.get("key") != key:
        return None
    return event.data.get("step")


async def _turn_end(events: Subscription, history_id: str) -> str | None:
    """Wait for the conversation's turn to end (bounded by `FORWARD_WAIT_S`): its error, if
    it failed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FORWARD_WAIT_S
    while (left := deadline - loop.time()) > 0:
        event = await events.get(timeout=left)
        if event is None and events.ended:
            return None  # the bus is closing (the server stops)
        if event is None or event.history_id != history_id:
            continue
        if event.kind == "turn.finished":
            return None
        if event.kind == "turn.failed":
            return str(event.data.get("error") or "The turn failed.")
    log.warning("the forwarded turn on history %s did not end in time", history_id)
    return None
