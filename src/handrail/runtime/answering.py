"""Answering a pending ask ("Answer an ask", steps 1 to 5): who may answer, the answer checked
by its gate, one compare-and-set that records it and leases the rest of the turn, then the turn
that carries it out (`Runtime._answer_turn`).

A lost race is worked out again on the history as it is now. The first try is on the history as
this process's paused turn committed it, when it did (`LastCommits`): no read of the history
and its rows; its compare-and-set on the version is the check, and what it refuses is worked
out again on a fresh read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .._util import iso, json_encoder, utc_now
from ..asks import AskSurface, AskValidationError, PendingAsk
from ..asks.limits import DEFAULT_MAX_FILE_SIZE
from ..errors import (
    AlreadyApproved,
    DomainError,
    HistoryNotFound,
    NotApprover,
    NotOwner,
    NotPending,
)
from ..store import HistoryConflict
from ..store.events import ask_created_event as user_ask_created
from ..store.events import ask_resolved_event as user_ask_resolved
from ..store.records import AskStatus, History, HistoryChange, StoredRow
from .answer_files import (
    after_answer,
    invalid_answer,
    keep_answer_files,
    kept_file_ids,
    load_answer_files,
)
from .answer_run import answer_run
from .approvals import answered_record, approves, edited_arguments, is_approver
from .cas import CAS_ATTEMPTS, compare_and_set
from .committed import LAST_COMMIT_ROWS
from .events import ask_event, done_event
from .gate import Answer, gate_for
from .messages import AssistantMessage, FilePart, Message, messages_from_json
from .rows import THREAD_ROWS, Row, replayed, result_row
from .turn import Principal, Turn

if TYPE_CHECKING:
    from .runtime import Runtime

#: The request log's prompt of an answer: ``json.dumps(envelope, ensure_ascii=False)``.
_LOG_JSON: Final = json_encoder(ensure_ascii=False)


class Answering:
    """The answers to a runtime's pending asks (`Runtime.start_answer`, `start_approval`, and
    the expiry of a gate)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    async def answer(
        self,
        principal: Principal,
        history_id: str,
        tool_call_id: str,
        envelope: dict[str, Any],
        *,
        surface: AskSurface,
        via: str,
        approver: bool,
        system: bool,
    ) -> Turn:
        """Answer the pending ask `tool_call_id` of `history_id` with `envelope` (the
        ``askResponse`` without its ``toolCallId``), and resume its turn."""
        # A lost race is worked out again on the history as it is now: the loser of an
        # approval racing a deny finds the ask gone (409); a deny after another approver's
        # approval still ends it. The first try is on the history as this process's turn
        # paused it, when it did (`LastCommits`): the compare-and-set checks it, and what it
        # refuses is worked out again on a fresh read.
        last = self.runtime.last_commits.take(history_id)
        for _attempt in range(CAS_ATTEMPTS):
            replay: tuple[Message, ...] | None = None
            prior: list[StoredRow] = []
            known: tuple[Row, ...] | None
            if last is not None and last.replay is not None:
                history, replay, known = last.history, last.replay, last.rows
                last = None
            else:
                last = None
                loaded = await self.store.histories.load(history_id)
                if loaded is None:
                    raise HistoryNotFound(f"No history has the id {history_id!r}.")
                history, prior = loaded
                known = tuple(r.data for r in prior) if len(prior) <= LAST_COMMIT_ROWS else None
            try:
                return await self._as_of(
                    principal,
                    history,
                    prior,
                    replay,
                    known,
                    tool_call_id,
                    envelope,
                    surface=surface,
                    via=via,
                    approver=approver,
                    system=system,
                )
            except HistoryConflict:
                continue
            except DomainError:
                if replay is None:
                    raise
        raise NotPending("Another answer or message resolved the ask first.")

    async def _as_of(
        self,
        principal: Principal,
        history: History,
        prior: list[StoredRow],
        replay: tuple[Message, ...] | None,
        known: tuple[Row, ...] | None,
        tool_call_id: str,
        envelope: dict[str, Any],
        *,
        surface: AskSurface,
        via: str,
        approver: bool,
        system: bool,
    ) -> Turn:
        """The answer on the history as read (`prior`: its rows) or as this process last
        wrote it (`replay`: the messages its answer replays); `known` is the data of all its
        rows when known: who may answer, then `_once`."""
        pending = history.pending_ask
        owner = history.owner_id == principal.user_id
        if not system and not owner:
            allowed = approver and pending is not None and is_approver(pending, principal)
            if (
                approver
                and not allowed
                and (pending is None or pending.tool_call_id != tool_call_id)
            ):
                # An approver of a gate that ended meanwhile learns that it ended.
                named = await self.store.audit.approvers_of(history.id, tool_call_id)
                allowed = is_approver(
                    PendingAsk.from_json(
                        {
                            "toolCallId": tool_call_id,
                            "kind": "confirm",
                            "input": {},
                            "simple": {},
                            "approvers": named,
                        }
                    ),
                    principal,
                )
            if not allowed:
                raise NotOwner("The history belongs to another user.")
        if pending is None or pending.tool_call_id != tool_call_id:
            raise NotPending(not_pending_detail(pending))
        return await self._once(
            principal,
            history,
            prior,
            replay,
            known,
            pending,
            envelope,
            surface=surface,
            via=via,
            system=system,
        )

    async def _once(
        self,
        principal: Principal,
        history: History,
        prior: list[StoredRow],
        replay: tuple[Message, ...] | None,
        known: tuple[Row, ...] | None,
        pending: PendingAsk,
        envelope: dict[str, Any],
        *,
        surface: AskSurface,
        via: str,
        system: bool,
    ) -> Turn:
        """One try of an answer on the history as read: validate, then one compare-and-set
        (a `HistoryConflict` when the history moved on, which the caller retries)."""
        tool_call_id = pending.tool_call_id
        page = self.runtime.page_tools_of(pending)
        agent = self.runtime.with_page_tools(self.runtime.agent_for(history), page)
        cap = agent.asks.max_file_size_bytes if agent.asks else DEFAULT_MAX_FILE_SIZE
        gate = gate_for(pending)
        errors = gate.answer_errors(pending, envelope, max_file_size_bytes=cap)
        errors += gate.edit_errors(agent, pending, envelope)
        if errors:
            raise invalid_answer(errors)
        scope = gate.split_answer(pending, envelope)[1]
        actor = "handrail" if system else principal.user_id
        held_args = held_arguments(pending)
        approvals: int | None = None
        if pending.approvers and not system:
            approved_by = list(pending.approved_by or [])
            if approves(envelope):
                if not is_approver(pending, principal):
                    names = ", ".join(pending.approvers)
                    raise NotApprover(
                        f"This call waits for the approval of {pending.quorum or 1} of: "
                        f"{names}. You may deny it."
                    )
                if any(a.get("userId") == principal.user_id for a in approved_by):
                    raise AlreadyApproved(
                        "You approved this call already; it waits for the other approvers."
                    )
                if edited_arguments(envelope) is not None:
                    # Every approver approves the same call: an edit would change what the
                    # others approved.
                    raise invalid_answer(
                        [
                            AskValidationError(
                                path="content.arguments",
                                code="UNKNOWN_KEY",
                                message="A call with approvers runs as it was asked.",
                                fix="Approve it as it is, or deny it with a note saying what "
                                "to change.",
                            )
                        ]
                    )
                if scope != "once":
                    raise invalid_answer(
                        [
                            AskValidationError(
                                path="content.scope",
                                code="INVALID_ENUM",
                                message="A call with approvers is approved once each time.",
                                fix='Send scope "once", or leave it out.',
                            )
                        ]
                    )
                approved_by.append({"userId": principal.user_id, "at": iso(utc_now()), "via": via})
                approvals = len(approved_by)
                if approvals < (pending.quorum or 1):
                    return await self._partial_approval(
                        history, pending, approved_by, envelope, actor=actor, via=via
                    )
        # What the ask holds may be open in another live process only (a legacy MCP call):
        # then the answer is stored here and carried out there (`forwarding.py`).
        forward = gate.held_elsewhere(pending)
        if forward is not None and not await self.runtime.forwarder.find(
            history.owner_id, history.id, forward
        ):
            forward = None
        if forward is None:
            replaced = await gate.before_answer(self.runtime._calls, pending, envelope)
            if replaced is not None:
                envelope = replaced
        stored: dict[str, Any] = envelope
        parts: tuple[FilePart, ...] = ()
        if pending.kind == "files" and envelope["action"] == "accept":
            stored, parts = await load_answer_files(
                self.store, principal, envelope, max_file_size_bytes=cap
            )
        run_principal = (
            principal
            if principal.user_id == history.owner_id
            else Principal(user_id=history.owner_id)
        )
        model = self.runtime.model_for(agent)
        record = answered_record(
            pending,
            stored,
            history_id=history.id,
            owner_id=history.owner_id,
            actor=actor,
            via=via,
            holds_call=gate.holds_call,
            held_arguments=held_args,
            scope=scope,
            approvals=approvals,
            action="gate.expired" if system else None,
        )
        # Step 4: one atomic update, or a lost race (worked out again by the caller).
        status: AskStatus = "cancelled" if envelope["action"] == "cancel" else "answered"
        lease_state: dict[str, Any] = {
            "kind": "answer",
            "pending": pending.to_json(),
            "answer": stored,
            "scope": scope,
            "surface": surface,
        }
        if forward is not None:
            lease_state["forward"] = forward
        # A data URL's bytes, kept for a process that takes the turn over once the answer that
        # names them commits (`answer_files.py`).
        kept = kept_file_ids(stored, parts)
        if kept:
            lease_state["keptFiles"] = kept
        resolved = user_ask_resolved(
            history.owner_id,
            history.id,
            pending,
            envelope["action"],
            reason=envelope.get("reason") if isinstance(envelope.get("reason"), str) else None,
        )
        answer_change = HistoryChange(
            append=[result_row(tool_call_id, gate.tool_name(pending), stored)],
            ask_status={tool_call_id: status},
            pending_ask=None,
            lease=self.runtime.new_lease(history.id, lease_state),
            audit=[record],
            events=[resolved],
        )
        answered = await compare_and_set(
            self.store, history.id, lambda _now: answer_change, current=history, attempts=1
        )
        await keep_answer_files(self.store, stored, parts, kept)
        turn = Turn(history.id, user_id=history.owner_id)
        if forward is not None:
            relay = self.runtime.forwarder.relay(
                turn, answered, pending, envelope["action"], forward
            )
            self.runtime._track(turn, relay)
            return turn
        if replay is None and len(prior) > THREAD_ROWS:
            # A long history's replay, made on a thread (`answer_run` would make it here).
            index = pending.prompt_index if pending.prompt_index is not None else len(prior)
            replay = tuple(await replayed([r.data for r in prior[:index]]))
        run = answer_run(
            turn,
            answered,
            prior,
            pending,
            replay=replay,
            stored_rows=None if known is None else (*known, *answer_change.append),
            principal=run_principal,
            agent=agent,
            model=model,
            surface=surface,
            log_prompt=_LOG_JSON(stored),
            metadata={
                "ask": {**ask_meta(pending), "action": envelope["action"], "phase": "answered"}
            },
            lease_owner=self.runtime.owner,
            page_tools=page,
        )
        answer = Answer(envelope=stored, scope=scope, parts=parts)
        work = self.runtime._answer_turn(run, pending, answer)
        self.runtime._spawn(turn, after_answer(self.store, history.id, kept, work), leased=True)
        return turn

    async def _partial_approval(
        self,
        history: History,
        pending: PendingAsk,
        approved_by: list[dict[str, Any]],
        envelope: dict[str, Any],
        *,
        actor: str,
        via: str,
    ) -> Turn:
        """An approval before the quorum: recorded on the pending ask (who approved so far),
        which stays pending; nothing runs."""
        updated = pending.replace(approved_by=approved_by)
        record = answered_record(
            updated,
            envelope,
            history_id=history.id,
            owner_id=history.owner_id,
            actor=actor,
            via=via,
            holds_call=True,
            approvals=len(approved_by),
        )
        # The owner's open pages show who approved so far.
        change = HistoryChange(
            pending_ask=updated,
            audit=[record],
            events=[user_ask_created(history.owner_id, history.id, updated)],
        )
        await compare_and_set(
            self.store, history.id, lambda _now: change, current=history, attempts=1
        )
        turn = Turn(history.id)
        turn.pending_summary = updated.public("turn")
        await turn.emit(ask_event(updated, history.id))
        await turn.emit(done_event(history.id, pending_tool_call_id=updated.tool_call_id))
        await turn.finish()
        return turn


def held_arguments(pending: PendingAsk) -> dict[str, Any] | None:
    """The arguments of the call a gate holds, from the paused turn's own messages."""
    if not pending.held_tool_call_id:
        return None
    for message in reversed(messages_from_json(pending.response_messages or [])):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id == pending.held_tool_call_id:
                    return dict(call.arguments)
    return None


def ask_meta(pending: PendingAsk) -> dict[str, Any]:
    meta: dict[str, Any] = {"kind": pending.kind, "toolCallId": pending.tool_call_id}
    if pending.origin:
        meta["origin"] = pending.origin
        if pending.tool_name:
            meta["toolName"] = pending.tool_name
    return meta


def not_pending_detail(pending: PendingAsk | None) -> str:
    if pending is None:
        return "The history waits on no ask: it was answered, cancelled, or never asked."
    return "The history waits on another ask. Reload the conversation to see it."
