"""The open gates that are due (`Runtime.sweep_gates`, which `Recovery` runs on its sweep): an
expired gate is cancelled through the answer path, and one past its ``remindAt`` is reminded
once."""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from .._util import utc_now
from ..errors import HistoryNotFound, NotPending
from ..store.audit import OpenGate, audit_record
from ..store.events import ask_created_event as user_ask_created
from .turn import Principal, Turn

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["GateSweep"]

log = logging.getLogger("handrail.runtime")


class GateSweep:
    """Expires and reminds the open gates of a runtime's store."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    async def sweep(self, now: dt.datetime | None = None) -> list[Turn]:
        """Expire and remind the open gates that are due (`Recovery` calls it on its sweep).

        An expired gate is cancelled with reason ``expired`` through the answer path, so its
        gate releases what it holds, the model is told (its held call did not run) and the
        audit log records ``gate.expired``; an expiry never approves. A gate past its
        ``remindAt`` is marked reminded once (``gate.reminded`` in the audit log). Returns the
        turns the expiries resumed."""
        moment = now or utc_now()
        turns: list[Turn] = []
        for gate in await self.store.audit.due(moment):
            if gate.expires is not None and gate.expires <= moment:
                cancel = {"toolCallId": gate.ask_id, "action": "cancel", "reason": "expired"}
                try:
                    turns.append(
                        await self.runtime._answer(
                            Principal(user_id=gate.owner_id),
                            gate.history_id,
                            cancel,
                            surface="full",
                            via="expiry",
                            approver=False,
                            system=True,
                        )
                    )
                except (NotPending, HistoryNotFound):
                    await self.store.audit.drop(gate.history_id, gate.ask_id)
                except Exception:
                    log.warning("could not expire the ask %s", gate.ask_id, exc_info=True)
            else:
                await self._remind(gate, moment)
        return turns

    async def _remind(self, gate: OpenGate, moment: dt.datetime) -> None:
        """Mark a gate reminded once, with its audit record and ``ask.reminder`` (webhooks and
        email send it) in one transaction, then publish the reminder."""
        history = await self.store.histories.get(gate.history_id)
        pending = history.pending_ask if history is not None else None
        current = pending is not None and pending.tool_call_id == gate.ask_id
        events = (
            [user_ask_created(gate.owner_id, gate.history_id, pending, kind="ask.reminder")]
            if pending is not None and current
            else []
        )
        record = audit_record(
            actor="handrail",
            action="gate.reminded",
            subject=gate.ask_id,
            changes={"askId": gate.ask_id, "origin": gate.origin},
            history_id=gate.history_id,
            owner_id=gate.owner_id,
            tool=gate.tool,
        )
        if await self.store.audit.remind(
            gate.history_id, gate.ask_id, moment, records=[record], events=events
        ):
            for event in events:
                await self.runtime.publish(event)
