"""The runtime: turns that ask, pause durably, and resume when the person answers.

A turn runs as its own task and speaks through a `Turn`'s events, so a client that disconnects
does not stop it. All state lives in the store: a paused turn is its history's ``pendingAsk``
(with the messages to replay), so any process on the same database can resume it.

Every write is a compare-and-set on the history's version (`HistoryChange`, through the one
loop in `cas.py`): the rows of a turn land at its end in one transaction, an answer lands in
one, and the loser of a race gets `NotPending`. What an answer does is the business of its gate
(`gate.py`): the runtime never branches on an ask's origin.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from .._util import new_id, utc_now
from ..asks import ASK_SURFACES, AskSurface, PendingAsk
from ..asks.cards import UnknownButtonError, resolve_button_answer
from ..errors import (
    AnswerIdMissing,
    AnswerNotObject,
    ConfigError,
    HistoryNotFound,
    NotOwner,
    NotPending,
    PromptRequired,
    UnknownAgent,
    UnknownButton,
    UnknownSurface,
)
from ..store import Store, TurnState, UserEvent
from ..store.records import (
    ConfirmationRecord,
    History,
    StoredRow,
    TurnLease,
)
from .action_calls import ActionCalls
from .agent import Agent, SourcedSets
from .answering import Answering, not_pending_detail
from .approvals import (
    ANSWER_VIAS,
)
from .committed import LAST_COMMIT_ROWS, LastCommits
from .events import (
    ask_resolved_event,
    done_event,
    error_event,
)
from .expiring import GateSweep
from .forwarding import Forwarder
from .gate import Answer
from .instructions import ResolvedInstructions, resolve_instructions
from .message_arrival import MessageArrival
from .messages import (
    Message,
    UserMessage,
)
from .models import model_from_name
from .models.base import Model
from .page_tools import DEFAULT_PAGE_TOOL_TIMEOUT, PageTools, read_page_tools, stored_page_tools
from .prompting import TurnSetup, build_turn_setup
from .recovery import DEFAULT_LEASE_S, Recovery
from .rows import Row, replayed, user_row
from .running import RunningBoard
from .steps import StepRunner, TurnRun
from .stopping import STOP_REASON, Stopper, StopResult
from .turn import Principal, Turn, TurnStopped, finished_event
from .turn_end import DELETED_DURING_TURN, TurnEnd, log_stopped, stopped_by_storage

log = logging.getLogger("handrail.runtime")


class Runtime:
    """Runs the turns of one or more agents over one store.

    `models` maps model names to model objects (tests inject the `scripted` model this way);
    any other name is built with `model_from_name`, from the agent's ``model`` or
    ``HANDRAIL_MODEL``.
    """

    def __init__(
        self,
        *,
        store: Store,
        agents: Agent | Iterable[Agent],
        models: Mapping[str, Model] | None = None,
        model: Model | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        page_tool_timeout: float = DEFAULT_PAGE_TOOL_TIMEOUT,
    ) -> None:
        agent_list = [agents] if isinstance(agents, Agent) else list(agents)
        if not agent_list:
            raise ConfigError("the runtime needs at least one agent")
        self.store = store
        self.agents: dict[str, Agent] = {}
        for agent in agent_list:
            if agent.name in self.agents:
                raise ConfigError(f"two agents are named {agent.name!r}; names must be unique")
            self.agents[agent.name] = agent
        self.default_agent = agent_list[0]
        self._models: dict[str, Model] = dict(models or {})
        self._model_override = model
        self._tasks: set[asyncio.Task[None]] = set()
        self.actions = ActionCalls(store)
        #: What the turns running now do (the history view's ``running``), in any process.
        self.running = RunningBoard(self)
        self._calls = StepRunner(store, self.actions, self.running)
        #: This process's last commit on each paused history, tried first by its answer.
        self.last_commits = LastCommits()
        #: The answers to pending asks (`answering.py`).
        self.answering = Answering(self)
        #: The open gates that are due (`expiring.py`).
        self.gate_sweep = GateSweep(self)
        #: What a message does first to a conversation that waits (`message_arrival.py`).
        self.arrival = MessageArrival(self)
        #: How its turns end (`turn_end.py`).
        self.turn_end = TurnEnd(self)
        self._built: list[Model] = []
        if not lease_s > 0:
            raise ConfigError(f"lease_s must be a positive number of seconds, not {lease_s!r}")
        #: How long a turn's lease lasts without a heartbeat, and who this runtime is.
        self.lease_s = float(lease_s)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self.recovery = Recovery(self)
        #: Stop (``POST /histories/{id}/stop``) and the turns running here, by history.
        self.stopper = Stopper(self)
        #: Answers for calls open in another process only (a legacy MCP call), forwarded.
        self.forwarder = Forwarder(self)
        self._calls.forwarder = self.forwarder
        if not page_tool_timeout > 0:
            raise ConfigError(
                f"page_tool_timeout must be a positive number of seconds, not {page_tool_timeout!r}"
            )
        #: Seconds a page has to run a page tool call before it is cancelled.
        self.page_tool_timeout = float(page_tool_timeout)

    # ----------------------------------------------------------------------------- lookups

    def model_for(self, agent: Agent) -> Model:
        if agent.adapter is not None:
            adapter: Model = agent.adapter
            if adapter not in self._built:
                self._built.append(adapter)  # closed with the runtime
            return adapter
        if self._model_override is not None:
            return self._model_override
        name = agent.model or os.environ.get("HANDRAIL_MODEL", "scripted")
        if name not in self._models:
            self._models[name] = model_from_name(name)
            self._built.append(self._models[name])
        return self._models[name]

    def agent_for(self, history: History) -> Agent:
        return self.agents.get(history.agent, self.default_agent)

    def with_page_tools(self, agent: Agent, page_tools: PageTools | None) -> Agent:
        """`agent` for one turn: with the page's tools as the connection ``page:<origin>``
        (a copy; the agent itself is not changed), or `agent` itself without page tools."""
        if page_tools is None or not page_tools.tools:
            return agent
        tool_set = page_tools.tool_set()
        turn_agent = copy.copy(agent)
        turn_agent.add_tool_source(lambda _agent: SourcedSets(tool_sets=(tool_set,)))
        return turn_agent

    def page_tools_of(self, pending: PendingAsk | None) -> PageTools | None:
        """The page tools kept with a paused turn's ask."""
        if pending is None:
            return None
        return stored_page_tools(pending.extra.get("pageTools"), timeout=self.page_tool_timeout)

    def agent_named(self, name: str | None) -> Agent:
        if name is None:
            return self.default_agent
        if name not in self.agents:
            raise UnknownAgent(f"No agent is named {name!r}; the agents are {sorted(self.agents)}.")
        return self.agents[name]

    async def owned_history(self, principal: Principal, history_id: str) -> History:
        """The history, when it exists (`HistoryNotFound`) and the caller owns it
        (`NotOwner`)."""
        return _owned(principal, history_id, await self.store.histories.get(history_id))

    async def _owned_with_rows(
        self, principal: Principal, history_id: str
    ) -> tuple[History, list[StoredRow]]:
        """The history and its rows as of one moment, with the same checks."""
        loaded = await self.store.histories.load(history_id)
        history = _owned(principal, history_id, loaded[0] if loaded else None)
        assert loaded is not None
        return history, loaded[1]

    async def next_instructions(
        self, principal: Principal, history_id: str
    ) -> ResolvedInstructions:
        """The connection instructions the conversation's next turn would get now, with every
        connection that has instructions and why each does or does not give a block."""
        history = await self.owned_history(principal, history_id)
        agent = self.agent_for(history)
        return await resolve_instructions(self.store, agent, principal, history_id=history.id)

    async def agent_instructions(
        self, principal: Principal, agent_name: str
    ) -> ResolvedInstructions:
        """What a new conversation of the agent would get from its connections now (grants for
        one conversation left out). `UnknownAgent` for a name that is not an agent's."""
        agent = self.agent_named(agent_name)
        return await resolve_instructions(self.store, agent, principal, history_id=None)

    # ----------------------------------------------------------------------------- turns

    async def start_prompt(
        self,
        principal: Principal,
        prompt: str,
        *,
        history_id: str | None = None,
        surface: str = "full",
        agent: str | None = None,
        page_tools: Any = None,
        via: str = "headless",
    ) -> Turn:
        """Start a turn with a new message. A pending ask is cancelled first
        (``user_sent_message``); a prompt is never rejected because of an ask. `via` names
        the surface the message came from (the audit log of that cancel).

        `page_tools` is a page's ``pageTools`` payload (`read_page_tools`): its tools are
        offered in this turn as the connection ``page:<origin>``."""
        checked_surface = _surface(surface)
        checked_via = _via(via)
        if not isinstance(prompt, str) or not prompt.strip():
            raise PromptRequired("Send a non-empty prompt.")
        state: TurnState | None = None
        known: tuple[Row, ...] | None = None
        page: PageTools | None = None
        if history_id is None:
            new_agent = self.agent_named(agent)
            if page_tools is not None:
                # Checked before anything is stored: a refused prompt creates no conversation.
                page = read_page_tools(page_tools, agent=new_agent, timeout=self.page_tool_timeout)
            # Its insert need not wait for the disk: the turn's first write (its pause, its
            # end or what a failure keeps) does, for both.
            history = await self.store.histories.create(
                principal.user_id, agent=new_agent.name, announce=True, synced=False
            )
        else:
            state, known = await self._prompt_state(principal, history_id)
            history = _owned(principal, history_id, state.history if state else None)
            if state is not None and state.lease is not None:
                # Another process's turn still has work here: wait for it, or take it over
                # once its lease lapses, so what it did is known before this turn starts.
                state = await self.recovery.settle(state)
                history = _owned(principal, history_id, state.history if state else None)
        the_agent = self.agent_for(history)
        if page_tools is not None:
            if page is None:
                page = read_page_tools(page_tools, agent=the_agent, timeout=self.page_tool_timeout)
            the_agent = self.with_page_tools(the_agent, page)
        model = self.model_for(the_agent)
        resolved = await resolve_instructions(
            self.store, the_agent, principal, history_id=history.id
        )
        setup = build_turn_setup(the_agent, model, checked_surface, resolved.snapshot)
        turn = Turn(history.id, user_id=history.owner_id)
        self._spawn(
            turn,
            self._prompt_turn(
                turn,
                history,
                principal,
                the_agent,
                model,
                setup,
                prompt,
                state,
                known,
                page,
                checked_via,
            ),
        )
        return turn

    async def _prompt_state(
        self, principal: Principal, history_id: str
    ) -> tuple[TurnState | None, tuple[Row, ...] | None]:
        """What a prompt's turn on `history_id` starts from, and the data of all its rows when
        they come from this process's last commit on it (`LastCommits`): that commit when the
        store says nothing a turn starts from changed since (`Store.turn_unchanged`), the
        caller owns it and it waits on no ask; otherwise a fresh read (`Store.load_turn`), on
        which every refusal is worked out."""
        last = self.last_commits.take(history_id)
        if (
            last is not None
            and last.rows is not None
            and last.history.pending_ask is None
            and last.history.owner_id == principal.user_id
            and await self.store.turn_unchanged(history_id, last.history.version)
        ):
            # As `load_turn` would give it: the copy's rows, no lease, and no confirmation
            # the turn would report (those in other states it passes over).
            return TurnState(history=last.history, rows=[], confirmations=[]), last.rows
        return await self.store.load_turn(history_id), None

    async def start_answer(
        self,
        principal: Principal,
        history_id: str,
        ask_response: Any,
        *,
        surface: str = "full",
        via: str = "headless",
    ) -> Turn:
        """Answer the pending ask and resume its turn ("Answer an ask", steps 1 to 5). `via`
        names the surface the answer came from, for the audit log (`ANSWER_VIAS`)."""
        return await self._answer(
            principal, history_id, ask_response, surface=surface, via=via, approver=False
        )

    async def start_approval(
        self, principal: Principal, history_id: str, ask_response: Any, *, via: str = "web"
    ) -> Turn:
        """An approver's answer to a call that names approvers: the caller need not own the
        conversation, only be one of the call's approvers (by id, or ``admins`` for an
        admin). An approval before the quorum is reached is recorded and the ask stays
        pending; the one that reaches it resumes the turn (as its owner's); any deny ends it.
        The caller should not be shown the turn's events (the conversation is not theirs)."""
        return await self._answer(
            principal, history_id, ask_response, surface="full", via=via, approver=True
        )

    async def _answer(
        self,
        principal: Principal,
        history_id: str,
        ask_response: Any,
        *,
        surface: str,
        via: str,
        approver: bool,
        system: bool = False,
    ) -> Turn:
        checked_surface = _surface(surface)
        checked_via = _via(via)
        if not isinstance(ask_response, dict):
            raise AnswerNotObject(
                'Send askResponse as {"toolCallId", "action", "content"?, "reason"?}.'
            )
        tool_call_id = ask_response.get("toolCallId")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise AnswerIdMissing("Name the pending ask's toolCallId in askResponse.")
        envelope = {k: v for k, v in ask_response.items() if k != "toolCallId"}
        return await self.answering.answer(
            principal,
            history_id,
            tool_call_id,
            envelope,
            surface=checked_surface,
            via=checked_via,
            approver=approver,
            system=system,
        )

    async def start_button(
        self,
        principal: Principal,
        history_id: str,
        tool_call_id: str,
        button_id: str,
        *,
        surface: str = "full",
        via: str = "card",
    ) -> Turn:
        """Answer the pending ask with the response stored on one of its card's buttons."""
        history = await self.owned_history(principal, history_id)
        pending = history.pending_ask
        if pending is None or pending.tool_call_id != tool_call_id:
            raise NotPending(not_pending_detail(pending))
        try:
            response = resolve_button_answer(pending.simple, button_id)
        except UnknownButtonError as exc:
            raise UnknownButton(
                exc.error.message + " " + exc.error.fix,
                code="UNKNOWN_BUTTON",
                fields=[exc.error.to_dict()],
            ) from None
        return await self.start_answer(
            principal,
            history_id,
            {"toolCallId": tool_call_id, **response},
            surface=surface,
            via=via,
        )

    async def sweep_gates(self, now: dt.datetime | None = None) -> list[Turn]:
        """Expire and remind the open gates that are due (`GateSweep`); `Recovery` calls it on
        its sweep. Returns the turns the expiries resumed."""
        return await self.gate_sweep.sweep(now)

    async def publish(self, event: UserEvent) -> None:
        """Publish `event` on the store's event bus (see `handrail.store.events`)."""
        await self.store.events.publish(event)

    @property
    def running_turns(self) -> int:
        """How many turns are running now. A paused turn is not running: it is its history's
        ``pendingAsk`` in the store, not a task."""
        return len(self._tasks)

    def new_lease(self, history_id: str, state: dict[str, Any]) -> TurnLease:
        """A lease of this runtime on the rest of a turn, from now for `lease_s`."""
        now = utc_now()
        return TurnLease(
            history_id=history_id,
            owner=self.owner,
            until=now + dt.timedelta(seconds=self.lease_s),
            state=state,
            created=now,
        )

    def start(self) -> None:
        """Start taking over the turns of processes that stopped (see `Recovery`). The server
        calls it at start-up; `aclose` stops it. Stop requests from other processes are
        heard from then on."""
        self.recovery.start()
        self.stopper.start()
        self.forwarder.start()

    async def stop(self, principal: Principal, history_id: str) -> StopResult:
        """Stop the conversation's running turn and cancel the ask it waits on (see
        `handrail.runtime.stopping`)."""
        return await self.stopper.stop(principal, history_id)

    async def aclose(self) -> None:
        """Stop taking over turns, wait for the turns still running (they finish and save),
        then close the models this runtime built."""
        await self.recovery.stop()
        await self.stopper.aclose()
        await self.forwarder.aclose()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self.running.aclose()
        await self.actions.aclose()
        for model in self._built:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()

    # ----------------------------------------------------------------------------- internals

    def _track(self, turn: Turn, work: Any) -> None:
        """Run `work` for `turn` as a task this runtime waits for when it closes."""
        task = asyncio.create_task(work, name=f"handrail-relay-{turn.history_id}")
        turn.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _spawn(self, turn: Turn, work: Any, *, leased: bool = False) -> None:
        """Run `work` as the turn's own task; a `leased` turn renews its lease meanwhile."""

        async def runner() -> None:
            stop_beating = self.recovery.keep_alive(turn.history_id) if leased else None
            self.stopper.running[turn.history_id] = turn
            self.running.started(turn)
            await self._turn_event(turn, "turn.started", {})
            try:
                await work
            except HistoryNotFound:
                # Deleted while the turn ran (another tab, another process): no failure.
                turn.error = DELETED_DURING_TURN
                await turn.emit(error_event(turn.error))
                await turn.emit(done_event(turn.history_id))
            except Exception as exc:
                stopped = stopped_by_storage(exc)
                if stopped is not None:
                    if turn.error != stopped[0]:  # unless what it kept met it too, said once
                        log_stopped(turn.history_id, stopped[1])
                    turn.error = stopped[0]
                else:
                    log.exception("turn on history %s failed", turn.history_id)
                    turn.error = "The turn failed. The server log has the details."
                await turn.emit(error_event(turn.error))
                await turn.emit(done_event(turn.history_id))
            finally:
                if stop_beating is not None:
                    stop_beating()
                if self.stopper.running.get(turn.history_id) is turn:
                    del self.stopper.running[turn.history_id]
                self.running.ended(turn)
                # Published before the turn's stream ends: whoever saw it end can rely on it.
                await self._turn_ended(turn)
                await turn.finish()

        task = asyncio.create_task(runner(), name=f"handrail-turn-{turn.history_id}")
        turn.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _turn_event(self, turn: Turn, kind: Any, data: dict[str, Any]) -> None:
        if turn.user_id:
            data = {**data, "turnId": turn.id}
            await self.publish(
                UserEvent(kind=kind, user_id=turn.user_id, history_id=turn.history_id, data=data)
            )

    async def _turn_ended(self, turn: Turn) -> None:
        """``turn.failed`` or ``turn.finished`` (with the title and the ask it paused on),
        unless the turn's last write carried ``turn.finished`` already (`TurnEnd.commit`)."""
        if turn.error is not None:
            await self._turn_event(turn, "turn.failed", {"error": turn.error})
            return
        if turn.finished_published or not turn.user_id:
            return
        pending = turn.pending_summary
        await self.publish(
            finished_event(turn, turn.title, pending["toolCallId"] if pending else None)
        )

    async def _prompt_turn(
        self,
        turn: Turn,
        history: History,
        principal: Principal,
        agent: Agent,
        model: Model,
        setup: TurnSetup,
        prompt: str,
        state: TurnState | None,
        known: tuple[Row, ...] | None = None,
        page: PageTools | None = None,
        via: str = "headless",
    ) -> None:
        """The turn of a new message. `known` is the data of all the history's rows when
        `state` is this process's last commit on it (then `state.rows` is empty)."""
        # A conversation made for this prompt (no `state`) has no rows, ask or confirmations.
        prior: Sequence[Row] = ()
        stored_message = False
        uncertain: list[dict[str, Any]] = []
        if state is not None:
            history = await self._report_uncertain(history, state.confirmations, uncertain)
            history, stored_message = await self._cancel_pending_for_message(
                turn, history, prompt, via
            )
        # After ``{askResolved}``, which is the first event of a prompt that cancelled the
        # pending ask (the spec's "SSE events"): the page's tools, then the uncertain results.
        if page is not None:
            await turn.emit(page.event())
        for event in uncertain:
            await turn.emit(event)
        if state is not None:
            if history.version != state.history.version:
                prior = [r.data for r in await self.store.histories.rows(history.id)]
            elif known is not None:
                prior = known
            else:
                prior = [r.data for r in state.rows]
        row_count = len(prior)
        messages: list[Message] = await replayed(prior)
        if not stored_message:
            messages.append(UserMessage(text=prompt))
        run = TurnRun(
            turn=turn,
            history=history,
            principal=principal,
            agent=agent,
            model=model,
            setup=setup,
            messages=messages,
            turn_start=len(messages),
            # A message stored with the cancel is the last row already.
            prompt_index=row_count if stored_message else None,
            row_count=row_count,
            stored_rows=tuple(prior) if row_count <= LAST_COMMIT_ROWS else None,
            rows=[] if stored_message else [user_row(prompt)],
            log_prompt=prompt,
            lease_owner=self.owner if stored_message else None,
            page_tools=page,
        )
        await self._run_steps(run)

    async def _run_steps(self, run: TurnRun) -> None:
        """The model steps of a turn, then its commit (or what a failure keeps)."""
        try:
            await self._calls.steps(run)
        except TurnStopped:
            await self._calls.release_queued(run, STOP_REASON)
            Stopper.settle_run(run)
        except Exception as exc:
            await self._fail(run, exc)
            return
        await self._commit(run)

    async def _cancel_pending_for_message(
        self, turn: Turn, history: History, prompt: str, via: str = "headless"
    ) -> tuple[History, bool]:
        """The message's cancel of the ask the history waits on (`MessageArrival`)."""
        return await self.arrival.cancel_pending(turn, history, prompt, via)

    async def _report_uncertain(
        self,
        history: History,
        records: list[ConfirmationRecord],
        events: list[dict[str, Any]],
    ) -> History:
        """The uncertain side effects the model reads first (`MessageArrival`); their events
        go to `events`."""
        return await self.arrival.report_uncertain(history, records, events)

    async def _answer_turn(
        self, run: TurnRun, pending: PendingAsk, answer: Answer, *, recovering: bool = False
    ) -> None:
        await run.turn.emit(ask_resolved_event(pending.tool_call_id, answer.action))
        try:
            if recovering:
                await self._calls.recover(run, pending, answer)
            else:
                await self._calls.resolve(run, pending, answer)
            self._audit_outcome(run, pending)
            # An ask waiting in line behind the answered one is asked now, before the model.
            self._calls.next_in_line(run)
            if run.pause is None:
                await self._calls.steps(run)
        except TurnStopped:
            self._audit_outcome(run, pending)
            await self._calls.release_queued(run, STOP_REASON)
            Stopper.settle_run(run, answered=pending.tool_call_id)
        except Exception as exc:
            if not run.output and not run.rows and await self._undo_answer(run, pending):
                return
            await self._fail(run, exc)
            return
        await self._commit(run)

    def _audit_outcome(self, run: TurnRun, pending: PendingAsk) -> None:
        """The audit record of what became of the held call (`TurnEnd.audit_outcome`)."""
        self.turn_end.audit_outcome(run, pending)

    async def _undo_answer(self, run: TurnRun, pending: PendingAsk) -> bool:
        """Put the answered ask back, when it can be (`TurnEnd.undo_answer`)."""
        return await self.turn_end.undo_answer(run, pending)

    async def _commit(self, run: TurnRun) -> None:
        """The turn's last change (`TurnEnd.commit`)."""
        await self.turn_end.commit(run)

    async def _fail(self, run: TurnRun, exc: Exception) -> None:
        """What a failed turn keeps (`TurnEnd.fail`)."""
        await self.turn_end.fail(run, exc)


def _via(via: Any) -> str:
    if via not in ANSWER_VIAS:
        raise UnknownSurface(f"via must be one of {', '.join(ANSWER_VIAS)}.")
    return str(via)


def _surface(surface: Any) -> AskSurface:
    if surface not in ASK_SURFACES:
        raise UnknownSurface(f"surface must be one of {', '.join(ASK_SURFACES)}.")
    return cast(AskSurface, surface)


def _owned(principal: Principal, history_id: str, history: History | None) -> History:
    if history is None:
        raise HistoryNotFound(f"No history has the id {history_id!r}.")
    if history.owner_id != principal.user_id:
        raise NotOwner("The history belongs to another user.")
    return history
