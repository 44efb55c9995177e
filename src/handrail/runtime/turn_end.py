"""The end of a turn: its last change, one compare-and-set that appends its rows, writes the
ask it paused on and ends its lease (`TurnEnd.commit`); what a failed turn keeps
(`TurnEnd.fail`); an answer put back when its turn failed before anything reached the client
(`TurnEnd.undo_answer`); and a turn another process took over (`TurnEnd.taken_over`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final

from .._util import utc_now
from ..asks import PendingAsk
from ..errors import Conflict, HistoryNotFound
from ..store import LeaseLost, UserEvent, request_record, storage_trouble
from ..store.audit import audit_record
from ..store.events import ask_created_event as user_ask_created
from ..store.records import UNSET, History, HistoryChange, ReleaseLease, RequestRecord
from .answering import ask_meta, held_arguments
from .approvals import apply_rules, asked_record, call_status, outcome_record
from .cas import compare_and_set
from .events import ask_event, done_event, error_event
from .gate import gate_for, queued_denials
from .messages import messages_to_json
from .models.adapters import AdapterError
from .models.base import ModelError
from .rows import Row, result_row, title_of
from .steps import CANCEL_OTHER, TurnRun
from .turn import finished_event

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger("handrail.runtime")

#: The error of a turn whose conversation was deleted while it ran.
DELETED_DURING_TURN: Final = "The conversation was deleted during the turn."
#: A turn's error when a write of it met a full disk (`handrail.store.storage_full`).
STORAGE_FULL_TURN: Final = (
    "The turn stopped: the server's disk is full. Try again once the server's administrator has "
    "freed space."
)
#: A turn's error when it could not reach its database (`handrail.store.database_unreachable`).
DATABASE_UNREACHABLE_TURN: Final = (
    "The turn stopped: the server cannot reach its database. Try again in a moment."
)
#: A turn's error when its SQLite write waited its time for another program's lock.
DATABASE_BUSY_TURN: Final = (
    "The turn stopped: the server's database is busy (another program holds it). Try again in "
    "a moment."
)
#: A turn's error when its database connection was lost (`handrail.store.connection_lost`): a
#: write may have been saved.
CONNECTION_LOST_TURN: Final = (
    "The turn stopped: the server lost its connection to the database. Reload the "
    "conversation to see what was saved, then try again."
)


#: A turn's error by what `storage_trouble` says stopped it.
_STOPPED_TEXT: Final = {
    "disk-full": STORAGE_FULL_TURN,
    "unreachable": DATABASE_UNREACHABLE_TURN,
    "busy": DATABASE_BUSY_TURN,
    "connection-lost": CONNECTION_LOST_TURN,
}


def stopped_by_storage(exc: BaseException) -> tuple[str, str] | None:
    """A turn stopped by its storage rather than by a fault of its own (`storage_trouble`):
    the person's text and the log line's words (one line, no traceback: there is nothing to
    debug); None for any other error."""
    trouble = storage_trouble(exc)
    return None if trouble is None else (_STOPPED_TEXT[trouble[0]], trouble[1])


def log_stopped(history_id: str, words: str) -> None:
    """Log a turn `stopped_by_storage` in its one line."""
    log.error("turn on history %s stopped: %s", history_id, words)


class TurnEnd:
    """How the turns of a runtime end (`Runtime._commit`, `_fail`, `_undo_answer`,
    `_audit_outcome`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    def audit_outcome(self, run: TurnRun, pending: PendingAsk) -> None:
        """The audit record of what became of the held call: its result's status, or
        ``waiting`` when it paused on another gate (a permission, a confirmation prepared
        again)."""
        held = pending.held_tool_call_id
        if not held or not gate_for(pending).holds_call:
            return
        found = call_status(run.rows, held)
        if found is None and run.pause is None:
            return
        status = found[0] if found is not None else "waiting"
        executed: Any = None
        for row in run.rows:
            if row.get("toolCallId") == held and "executedArgs" in row:
                executed = row["executedArgs"]
        run.audit.append(
            outcome_record(
                pending,
                history_id=run.history.id,
                owner_id=run.history.owner_id,
                agent=run.agent.name,
                status=status,
                arguments=executed if executed is not None else pending.edited_arguments,
            )
        )

    async def undo_answer(self, run: TurnRun, pending: PendingAsk) -> bool:
        """Put the answered ask back, when nothing but ``{askResolved}`` reached the client
        and the conversation has not changed since the answer."""
        tool_call_id = pending.tool_call_id
        reopened = audit_record(
            actor="handrail",
            action="gate.reopened",
            subject=tool_call_id,
            changes={"askId": tool_call_id, "origin": pending.origin, "why": "the turn failed"},
            history_id=run.history.id,
            owner_id=run.history.owner_id,
            tool=pending.tool_name,
        )
        undo = HistoryChange(
            ask_status={tool_call_id: "pending"},
            remove_results=[tool_call_id],
            pending_ask=pending,
            lease=_release(run),
            audit=[reopened],
            events=[user_ask_created(run.history.owner_id, run.history.id, pending)],
        )
        try:
            await compare_and_set(
                self.store,
                run.history.id,
                lambda _now: undo,
                current=run.history,
                log=lambda: _log_record(run, error=_failure_text()),
                attempts=1,
            )
        except (Conflict, HistoryNotFound):  # LeaseLost too: the new owner decides
            return False
        run.turn.error = _failure_text()
        run.turn.pending_summary = pending.public("turn")
        await run.turn.emit(error_event(_failure_text()))
        await run.turn.emit(done_event(run.history.id, pending_tool_call_id=tool_call_id))
        return True

    async def commit(self, run: TurnRun) -> None:
        """Append the turn's rows and write its pending ask in one compare-and-set."""
        history_id = run.history.id
        row_count = run.row_count
        self.runtime._calls.next_in_line(run)
        pending: PendingAsk | None = None
        #: Asks in line dropped because another ask got the slot first (released after).
        dropped: list[PendingAsk] = []
        title: str | None = None
        metadata: dict[str, Any] = dict(run.metadata)

        #: Whether the history was read again (a lost race): then the turn's messages are not
        #: those of the rows its ask replays, and they are not kept (`LastCommits`).
        reread = False
        #: The rows the written change appended.
        appended: list[Row] = []

        async def read() -> History | None:
            nonlocal row_count, reread
            reread = True
            loaded = await self.store.histories.load(history_id)
            if loaded is None:
                return None
            row_count = len(loaded[1])
            return loaded[0]

        async def write(current: History) -> HistoryChange:
            nonlocal pending, title, metadata, row_count, reread
            rows = list(run.rows)
            pending = None
            dropped.clear()
            if run.pause is not None:
                if current.pending_ask is None:
                    prompt_index = run.prompt_index
                    if prompt_index is None:
                        if row_count is None:
                            reread = True
                            row_count = len(await self.store.histories.rows(history_id))
                        prompt_index = row_count + 1
                    snapshot = run.setup.instructions
                    pending = run.pause.replace(
                        prompt_index=prompt_index,
                        response_messages=messages_to_json(run.messages[run.turn_start :]),
                        connection_instructions=snapshot.to_json() if snapshot else None,
                        queued=[q.to_json() for q in run.queued] or None,
                    )
                    if run.page_tools is not None and run.page_tools.tools:
                        extra = {**pending.extra, "pageTools": run.page_tools.to_json()}
                        pending = pending.replace(extra=extra)
                    pending = apply_rules(
                        pending,
                        run.agent.rules_for(pending.tool_name if pending.origin else None),
                        approvable=gate_for(pending).approvable,
                        now=utc_now(),
                    )
                else:
                    rows = cancel_paused(rows, run.pause)
                    dropped.extend(run.queued)
                    rows.extend(queued_denials(run.queued, "one_ask_at_a_time"))
            title = current.title or _title_for(run)
            metadata = dict(run.metadata)
            if pending is not None:
                meta = {**ask_meta(pending), "phase": "asked"}
                metadata["nextAsk" if "ask" in metadata else "ask"] = meta
            audit = list(run.audit)
            if pending is not None:
                audit.append(
                    asked_record(
                        pending,
                        history_id=history_id,
                        owner_id=current.owner_id,
                        agent=run.agent.name,
                        arguments=held_arguments(pending),
                    )
                )
            events: list[UserEvent] = []
            if title and current.title is None:
                events.append(
                    UserEvent(
                        kind="history.renamed",
                        user_id=current.owner_id,
                        history_id=history_id,
                        data={"title": title},
                    )
                )
            if pending is not None:
                events.append(user_ask_created(current.owner_id, history_id, pending))
            if run.turn.user_id:
                # The turn ends with this write: its commit publishes ``turn.finished`` with
                # the write's own events (on PostgreSQL in the same statement, where one
                # published after it would cost a statement of its own).
                pending_id = pending.tool_call_id if pending else None
                events.append(finished_event(run.turn, title, pending_id))
            appended[:] = rows
            return HistoryChange(
                append=rows,
                pending_ask=pending if pending is not None else _keep(),
                title=title if current.title is None and title else _keep(),
                lease=_release(run),
                audit=audit,
                events=events,
                synced=not _redone_if_lost(run, rows, audit, pending, dropped),
            )

        # First try the history as the turn last saw it: when nothing changed meanwhile, the
        # compare-and-set succeeds without reading it again.
        try:
            written = await compare_and_set(
                self.store,
                history_id,
                write,
                current=run.history,
                read=read,
                log=lambda: _log_record(run, metadata=metadata),
            )
        except HistoryNotFound:
            run.turn.error = DELETED_DURING_TURN
            await run.turn.emit(error_event(DELETED_DURING_TURN))
            await run.turn.emit(done_event(history_id))
            return
        except LeaseLost:
            await self.taken_over(run)
            return
        # Whoever heard this write's turn.finished (delivered here at its commit, before this
        # task yields) finds the turn no longer running here either; the turn's end does it
        # again, with nothing left to do.
        self.runtime.running.ended(run.turn)
        for waiting in dropped:
            await self.runtime._calls.release(
                waiting, "one_ask_at_a_time", user_id=run.history.owner_id, history_id=history_id
            )
        run.turn.title = title
        run.turn.finished_published = bool(run.turn.user_id)
        run.metadata = metadata
        if reread:
            self.runtime.last_commits.drop(history_id)
        else:
            # The next turn on it starts here (`LastCommits`): an answer from the messages
            # before this turn's prompt, a prompt from the rows.
            known = run.stored_rows
            self.runtime.last_commits.keep(
                written,
                run.messages[: run.turn_start] if pending is not None else None,
                None if known is None else [*known, *appended],
            )
        if pending is not None:
            run.turn.pending_summary = pending.public("turn")
            await run.turn.emit(ask_event(pending, history_id))
        await run.turn.emit(
            done_event(
                history_id,
                title=title,
                pending_tool_call_id=pending.tool_call_id if pending else None,
            )
        )

    async def fail(self, run: TurnRun, exc: Exception) -> None:
        """Keep what the turn did before the failure; drop the ask it had not paused on."""
        stopped = stopped_by_storage(exc)
        if isinstance(exc, ModelError):
            log.warning("model call failed on history %s: %s", run.history.id, exc)
        elif stopped is not None:
            log_stopped(run.history.id, stopped[1])
        else:
            log.exception("turn on history %s failed", run.history.id, exc_info=exc)
        # An adapter's error names the adapter and the way forward: the person reads it.
        if isinstance(exc, AdapterError):
            message = str(exc)
        elif stopped is not None:
            message = stopped[0]
        else:
            message = _failure_text()
        run.turn.error = message
        await self.runtime._calls.release_queued(run, "turn_failed")
        if run.pause is not None:
            run.rows = cancel_paused(run.rows, run.pause, result={"action": "cancel"})
            run.pause = None
        entry = _log_record(run, error=str(exc) or type(exc).__name__)
        logged = False
        # A turn that holds a lease writes even with no rows: its last change ends the lease.
        if run.rows or run.lease_owner is not None:

            def keep(current: History) -> HistoryChange:
                return HistoryChange(
                    append=run.rows,
                    title=_title_for(run) if current.title is None else _keep(),
                    lease=_release(run),
                    audit=list(run.audit),
                )

            try:
                written = await compare_and_set(self.store, run.history.id, keep, log=lambda: entry)
            except HistoryNotFound:
                pass
            except LeaseLost:
                await self.taken_over(run)
                return
            else:
                logged = True
                run.turn.title = written.title
        await run.turn.emit(error_event(message))
        await run.turn.emit(done_event(run.history.id, title=run.turn.title))
        if not logged:
            await self.log(entry)

    async def taken_over(self, run: TurnRun) -> None:
        """Another process took this turn over (its lease lapsed while this one was slow):
        nothing of this run is written; the other process finishes the turn."""
        log.warning("the turn on history %s was taken over by another process", run.history.id)
        run.turn.error = (
            "The turn was taken over by another server process; reload the conversation."
        )
        await run.turn.emit(error_event(run.turn.error))
        await run.turn.emit(done_event(run.history.id))

    async def log(self, entry: RequestRecord) -> None:
        """Write a request log entry on its own (a turn that saves rows writes it with them)."""
        try:
            await self.store.requests.add(entry)
        except Exception:
            log.exception("could not write the request log of history %s", entry.history_id)


def _log_record(
    run: TurnRun, *, error: str | None = None, metadata: dict[str, Any] | None = None
) -> RequestRecord:
    """The turn's request log entry: its prompt, the text it streamed, and its metadata."""
    return request_record(
        history_id=run.history.id,
        owner_id=run.principal.user_id,
        request_type="general",
        prompt=run.log_prompt,
        response="".join(e["text"] for e in run.turn.events if "text" in e),
        error=error,
        metadata=run.metadata if metadata is None else metadata,
        model=run.model.name,
        duration_ms=int((time.monotonic() - run.started) * 1000),
    )


def cancel_paused(
    rows: list[Row], pause: PendingAsk, *, result: dict[str, Any] | None = None
) -> list[Row]:
    """The rows with the paused ask cancelled: its call row marked ``cancelled`` and its
    cancel result added right after it; a gate's held call gets its denial too."""
    cancel = result or CANCEL_OTHER
    out: list[Row] = []
    for row in rows:
        if row.get("type") == "tool-call" and row.get("toolCallId") == pause.tool_call_id:
            row = {**row, "ask": {**row["ask"], "status": "cancelled"}}
            out.append(row)
            out.append(result_row(pause.tool_call_id, row["toolName"], cancel))
            reason = str(cancel.get("reason") or "user_cancelled")
            out.extend(gate_for(pause).denial_rows(pause, reason))
        else:
            out.append(row)
    return out


def _title_for(run: TurnRun) -> str | None:
    for row in run.rows:
        if row.get("type") == "user":
            return title_of(str(row.get("text", "")))
    return None


def _redone_if_lost(
    run: TurnRun,
    rows: list[Row],
    audit: list[Any],
    pending: PendingAsk | None,
    dropped: list[PendingAsk],
) -> bool:
    """Whether a turn's last change is one that its lease would have made again had a power
    loss undone it, so that its commit need not wait for the disk (`HistoryChange.synced`):
    the turn holds a lease, written with its input (the answer, the message), which waited
    for the disk; a lapsed lease has a live process take the turn over and run the model
    again from that input (`Recovery`). So the change may hold the model's text, and nothing
    a redone turn could not make again: no tool's result (a tool that ran may have acted), no
    new ask (a person may answer it), no audit record, no ask dropped from the line."""
    return (
        run.lease_owner is not None
        and pending is None
        and not audit
        and not dropped
        and not any(row.get("type") == "tool-result" for row in rows)
    )


def _release(run: TurnRun) -> Any:
    """The lease part of a turn's last change: end the lease the turn holds, if any."""
    return ReleaseLease(owner=run.lease_owner) if run.lease_owner is not None else UNSET


def _failure_text() -> str:
    return "The model call failed. Try again in a moment."


def _keep() -> Any:
    return UNSET
