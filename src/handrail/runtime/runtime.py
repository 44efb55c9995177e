"""The runtime: turns that ask, pause durably, and resume when the person answers.

A turn runs as its own task and speaks through a `Turn`'s events, so a client that disconnects
does not stop it. All state lives in the store: a paused turn is its history's ``pendingAsk``
(with the messages to replay), so any process on the same database can resume it.

Every write is a compare-and-set on the history's version (`HistoryChange`): the rows of a turn
land at its end in one transaction, an answer lands in one, and the loser of a race gets 409.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from .._util import iso, new_id, utc_now
from ..asks import (
    ASK_SURFACES,
    AskSurface,
    AskValidationError,
    clarify_error_text,
    clarify_simple_card,
    to_simple_card,
    validate_ask_input,
    validate_clarify_prompts,
)
from ..asks.cards import UnknownButtonError, resolve_button_answer
from ..asks.limits import DEFAULT_MAX_FILE_SIZE
from ..asks.text import cut_text
from ..errors import BadRequest, ConfigError, Conflict, Forbidden, NotFound
from ..policy import Decision, GrantScope, decide
from ..store import Store
from ..store.records import UNSET, AskStatus, History, HistoryChange
from .agent import Agent
from .answer_files import invalid_answer, load_answer_files
from .events import (
    ask_event,
    ask_resolved_event,
    done_event,
    error_event,
    text_event,
    tool_call_event,
    tool_result_event,
)
from .gates import (
    GATE_ORIGINS,
    PERMISSION,
    approval_pending,
    chosen_level,
    denial_reason,
    execution_denied,
    gate_answer_errors,
    permission_pending,
    split_scope,
)
from .messages import (
    AssistantMessage,
    FilePart,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    messages_from_json,
    messages_to_json,
)
from .models import INVALID_ARGUMENTS_KEY, model_from_name
from .models.base import Model, ModelError, ModelRequest, TextDelta, ToolCallPart
from .prompting import CLARIFY_TOOL, TurnSetup, build_turn_setup
from .rows import Row, assistant_row, call_row, result_row, rows_to_messages, user_row
from .tools import Tool, ToolError, ToolSet, invalid_arguments_text
from .turn import Principal, Turn

log = logging.getLogger("handrail.runtime")

MAX_STEPS: Final = 12
TITLE_MAX: Final = 60
NOT_PENDING: Final = "This ask is no longer pending"
CANCEL_OTHER: Final = {"action": "cancel", "reason": "one_ask_at_a_time"}
CANCEL_BY_MESSAGE: Final = {"action": "cancel", "reason": "user_sent_message"}


@dataclass(kw_only=True)
class _Run:
    """One turn in flight: what the model has seen, and the rows it will append."""

    turn: Turn
    history: History
    principal: Principal
    agent: Agent
    model: Model
    setup: TurnSetup
    messages: list[Message]
    turn_start: int
    prompt_index: int | None
    rows: list[Row] = field(default_factory=list)
    turn_id: str = field(default_factory=new_id)
    output: bool = False
    pause: dict[str, Any] | None = None
    log_prompt: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


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
        self._built: list[Model] = []

    # ----------------------------------------------------------------------------- lookups

    def model_for(self, agent: Agent) -> Model:
        if self._model_override is not None:
            return self._model_override
        name = agent.model or os.environ.get("HANDRAIL_MODEL", "scripted")
        if name not in self._models:
            self._models[name] = model_from_name(name)
            self._built.append(self._models[name])
        return self._models[name]

    def agent_for(self, history: History) -> Agent:
        return self.agents.get(history.agent, self.default_agent)

    def agent_named(self, name: str | None) -> Agent:
        if name is None:
            return self.default_agent
        if name not in self.agents:
            raise BadRequest(
                "Unknown agent",
                f"No agent is named {name!r}; the agents are {sorted(self.agents)}.",
            )
        return self.agents[name]

    async def owned_history(self, principal: Principal, history_id: str) -> History:
        """The history, when it exists (404) and the caller owns it (403)."""
        history = await self.store.histories.get(history_id)
        if history is None:
            raise NotFound("History not found", f"No history has the id {history_id!r}.")
        if history.owner_id != principal.user_id:
            raise Forbidden(
                "Not authorized to access this history",
                "The history belongs to another user.",
            )
        return history

    # ----------------------------------------------------------------------------- turns

    async def start_prompt(
        self,
        principal: Principal,
        prompt: str,
        *,
        history_id: str | None = None,
        surface: str = "full",
        agent: str | None = None,
    ) -> Turn:
        """Start a turn with a new message. A pending ask is cancelled first
        (``user_sent_message``); a prompt is never rejected because of an ask."""
        checked_surface = _surface(surface)
        if not isinstance(prompt, str) or not prompt.strip():
            raise BadRequest("prompt is required", "Send a non-empty prompt.")
        if history_id is None:
            history = await self.store.histories.create(
                principal.user_id, agent=self.agent_named(agent).name
            )
        else:
            history = await self.owned_history(principal, history_id)
        the_agent = self.agent_for(history)
        model = self.model_for(the_agent)
        setup = build_turn_setup(the_agent, model, checked_surface)
        turn = Turn(history.id)
        self._spawn(
            turn, self._prompt_turn(turn, history, principal, the_agent, model, setup, prompt)
        )
        return turn

    async def start_answer(
        self,
        principal: Principal,
        history_id: str,
        ask_response: Any,
        *,
        surface: str = "full",
    ) -> Turn:
        """Answer the pending ask and resume its turn ("Answer an ask", steps 1 to 5)."""
        checked_surface = _surface(surface)
        if not isinstance(ask_response, dict):
            raise BadRequest(
                "askResponse must be an object",
                'Send askResponse as {"toolCallId", "action", "content"?, "reason"?}.',
            )
        tool_call_id = ask_response.get("toolCallId")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise BadRequest(
                "askResponse.toolCallId is required",
                "Name the pending ask's toolCallId in askResponse.",
            )
        history = await self.owned_history(principal, history_id)
        pending = history.pending_ask
        if pending is None or pending.get("toolCallId") != tool_call_id:
            raise Conflict(NOT_PENDING, _not_pending_detail(pending))
        envelope = {k: v for k, v in ask_response.items() if k != "toolCallId"}
        agent = self.agent_for(history)
        cap = agent.asks.max_file_size_bytes if agent.asks else DEFAULT_MAX_FILE_SIZE
        errors = gate_answer_errors(pending, envelope, cap)
        if errors:
            raise invalid_answer(errors)
        scope: GrantScope = split_scope(pending, envelope)[1]
        stored: dict[str, Any] = envelope
        parts: tuple[FilePart, ...] = ()
        if pending["kind"] == "files" and envelope["action"] == "accept":
            stored, parts = await load_answer_files(
                self.store, principal, envelope, max_file_size_bytes=cap
            )
        model = self.model_for(agent)
        setup = build_turn_setup(agent, model, checked_surface)
        prior = await self.store.histories.rows(history.id)
        prompt_index = int(pending.get("promptIndex", len(prior)))
        replay = rows_to_messages(r.data for r in prior[:prompt_index])
        response_messages = messages_from_json(pending.get("responseMessages", []))
        # Step 4: one atomic update, or 409 for the loser of a race.
        tool_name = _ask_tool_name(pending)
        status: AskStatus = "cancelled" if envelope["action"] == "cancel" else "answered"
        try:
            answered = await self.store.histories.apply(
                history.id,
                HistoryChange(
                    append=[result_row(tool_call_id, tool_name, stored)],
                    ask_status={tool_call_id: status},
                    pending_ask=None,
                ),
                expected_version=history.version,
            )
        except Conflict:
            raise Conflict(
                NOT_PENDING, "Another answer or message resolved the ask first."
            ) from None
        turn = Turn(history.id)
        run = _Run(
            turn=turn,
            history=answered,
            principal=principal,
            agent=agent,
            model=model,
            setup=setup,
            messages=[
                *replay,
                *response_messages,
                # A gate's answer is carried out on the held call instead (see _resolve_gate).
                *(
                    []
                    if pending.get("origin") in GATE_ORIGINS
                    else [
                        ToolResultMessage(
                            tool_call_id=tool_call_id,
                            tool_name=tool_name,
                            content=stored,
                            parts=parts,
                        )
                    ]
                ),
            ],
            turn_start=len(replay),
            prompt_index=prompt_index,
            log_prompt=json.dumps(stored, ensure_ascii=False),
            metadata={
                "ask": {**_ask_meta(pending), "action": envelope["action"], "phase": "answered"}
            },
        )
        self._spawn(turn, self._answer_turn(run, pending, envelope, scope))
        return turn

    async def start_button(
        self,
        principal: Principal,
        history_id: str,
        tool_call_id: str,
        button_id: str,
        *,
        surface: str = "full",
    ) -> Turn:
        """Answer the pending ask with the response stored on one of its card's buttons."""
        history = await self.owned_history(principal, history_id)
        pending = history.pending_ask
        if pending is None or pending.get("toolCallId") != tool_call_id:
            raise Conflict(NOT_PENDING, _not_pending_detail(pending))
        try:
            response = resolve_button_answer(pending["simple"], button_id)
        except UnknownButtonError as exc:
            raise BadRequest(
                "Unknown buttonId",
                exc.error.message + " " + exc.error.fix,
                code="UNKNOWN_BUTTON",
                fields=[exc.error.to_dict()],
            ) from None
        return await self.start_answer(
            principal, history_id, {"toolCallId": tool_call_id, **response}, surface=surface
        )

    async def aclose(self) -> None:
        """Wait for the turns still running (they finish and save), then close the models
        this runtime built."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        for model in self._built:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()

    # ----------------------------------------------------------------------------- internals

    def _spawn(self, turn: Turn, work: Any) -> None:
        async def runner() -> None:
            try:
                await work
            except Exception:
                log.exception("turn on history %s failed", turn.history_id)
                turn.error = "The turn failed. The server log has the details."
                await turn.emit(error_event(turn.error))
                await turn.emit(done_event(turn.history_id))
            finally:
                await turn.finish()

        task = asyncio.create_task(runner(), name=f"handrail-turn-{turn.history_id}")
        turn.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _prompt_turn(
        self,
        turn: Turn,
        history: History,
        principal: Principal,
        agent: Agent,
        model: Model,
        setup: TurnSetup,
        prompt: str,
    ) -> None:
        history = await self._cancel_pending_for_message(turn, history)
        prior = await self.store.histories.rows(history.id)
        messages: list[Message] = [
            *rows_to_messages(r.data for r in prior),
            UserMessage(text=prompt),
        ]
        run = _Run(
            turn=turn,
            history=history,
            principal=principal,
            agent=agent,
            model=model,
            setup=setup,
            messages=messages,
            turn_start=len(messages),
            prompt_index=None,
            rows=[user_row(prompt)],
            log_prompt=prompt,
        )
        try:
            await self._steps(run)
        except Exception as exc:
            await self._fail(run, exc)
            return
        await self._commit(run)

    async def _cancel_pending_for_message(self, turn: Turn, history: History) -> History:
        """Record ``cancel: user_sent_message`` for a pending ask, once even when two prompts
        race; when another answer resolved it first, go on without ``{askResolved}``."""
        while history.pending_ask is not None:
            pending = history.pending_ask
            tool_call_id = pending["toolCallId"]
            try:
                history = await self.store.histories.apply(
                    history.id,
                    HistoryChange(
                        append=[
                            result_row(tool_call_id, _ask_tool_name(pending), CANCEL_BY_MESSAGE)
                        ],
                        ask_status={tool_call_id: "cancelled"},
                        pending_ask=None,
                    ),
                    expected_version=history.version,
                )
            except Conflict:
                reloaded = await self.store.histories.get(history.id)
                if reloaded is None:
                    raise NotFound("History not found", "The history was deleted.") from None
                history = reloaded
                continue
            await turn.emit(ask_resolved_event(tool_call_id, "cancel"))
        return history

    async def _answer_turn(
        self, run: _Run, pending: dict[str, Any], envelope: dict[str, Any], scope: GrantScope
    ) -> None:
        await run.turn.emit(ask_resolved_event(pending["toolCallId"], envelope["action"]))
        try:
            if pending.get("origin") in GATE_ORIGINS:
                await self._resolve_gate(run, pending, envelope, scope)
            if run.pause is None:
                await self._steps(run)
        except Exception as exc:
            if not run.output and not run.rows and await self._undo_answer(run, pending):
                return
            await self._fail(run, exc)
            return
        await self._commit(run)

    async def _undo_answer(self, run: _Run, pending: dict[str, Any]) -> bool:
        """Put the answered ask back, when nothing but ``{askResolved}`` reached the client
        and the conversation has not changed since the answer."""
        tool_call_id = pending["toolCallId"]
        try:
            await self.store.histories.apply(
                run.history.id,
                HistoryChange(
                    ask_status={tool_call_id: "pending"},
                    remove_results=[tool_call_id],
                    pending_ask=pending,
                ),
                expected_version=run.history.version,
            )
        except (Conflict, NotFound):
            return False
        run.turn.error = _failure_text()
        run.turn.pending_summary = {
            "toolCallId": tool_call_id,
            "kind": pending["kind"],
            "simple": pending["simple"],
        }
        await run.turn.emit(error_event(_failure_text()))
        await run.turn.emit(done_event(run.history.id, pending_tool_call_id=tool_call_id))
        await self._log(run, error=_failure_text())
        return True

    async def _steps(self, run: _Run) -> None:
        """Call the model step by step until it answers without tools or an ask pauses."""
        for step in range(MAX_STEPS):
            text: list[str] = []
            calls: list[ToolCall] = []
            request = ModelRequest(
                system=run.setup.system, messages=tuple(run.messages), tools=run.setup.specs
            )
            async for event in run.model.stream(request):
                if isinstance(event, TextDelta) and event.text:
                    text.append(event.text)
                    run.output = True
                    await run.turn.emit(text_event(event.text))
                elif isinstance(event, ToolCallPart):
                    calls.append(event.call)
            said = "".join(text)
            if not calls:
                if said:
                    run.rows.append(assistant_row(said))
                run.messages.append(AssistantMessage(text=said))
                return
            # Text in a step that calls tools is dropped: the question belongs in the ask.
            run.messages.append(AssistantMessage(tool_calls=tuple(calls)))
            await self._run_calls(run, calls, f"{run.turn_id}:{step}")
            if run.pause is not None:
                return
        run.rows.append(assistant_row(f"(The agent stopped after {MAX_STEPS} steps.)"))
        await run.turn.emit(error_event(f"The agent stopped after {MAX_STEPS} steps."))

    async def _run_calls(self, run: _Run, calls: list[ToolCall], step: str) -> None:
        setup = run.setup
        clarify_in_step = any(call.name == CLARIFY_TOOL for call in calls) and setup.clarify
        for call in calls:
            if call.name == CLARIFY_TOOL and setup.clarify:
                self._clarify_call(run, call, step)
                continue
            kind = setup.ask_tools.get(call.name)
            if kind is not None:
                errors = validate_ask_input(kind, call.arguments, surface=setup.surface)
                if errors:
                    run.messages.append(
                        ToolResultMessage(
                            tool_call_id=call.id,
                            tool_name=call.name,
                            content=_invalid_ask_text(call.name, errors),
                            is_error=True,
                        )
                    )
                elif run.pause is None:
                    run.pause = {
                        "toolCallId": call.id,
                        "kind": kind,
                        "input": call.arguments,
                        "simple": to_simple_card(kind, call.arguments, call.id),
                        "created": iso(utc_now()),
                    }
                    run.rows.append(call_row(call, step=step, ask_kind=kind))
                else:
                    run.rows.append(call_row(call, step=step, ask_kind=kind, status="cancelled"))
                    run.rows.append(result_row(call.id, call.name, CANCEL_OTHER))
                    run.messages.append(
                        ToolResultMessage(
                            tool_call_id=call.id, tool_name=call.name, content=CANCEL_OTHER
                        )
                    )
                continue
            await self._host_call(run, call, step, clarify_in_step=clarify_in_step)

    def _clarify_call(self, run: _Run, call: ToolCall, step: str) -> None:
        """A ``clarify`` call: an invalid one returns the error text to the model and the turn
        goes on; a valid one pauses like an ask (one slot, later ones cancelled)."""
        result = validate_clarify_prompts(
            call.arguments.get("prompts"), call.arguments.get("title")
        )
        if result.envelope is None:
            run.messages.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=clarify_error_text(result.errors),
                    is_error=True,
                )
            )
            return
        if run.pause is not None:
            run.rows.append(call_row(call, step=step, ask_kind="clarify", status="cancelled"))
            run.rows.append(result_row(call.id, call.name, CANCEL_OTHER))
            run.messages.append(
                ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=CANCEL_OTHER)
            )
            return
        run.pause = {
            "toolCallId": call.id,
            "kind": "clarify",
            "input": result.envelope,
            "simple": clarify_simple_card(result.envelope, call.id),
            "created": iso(utc_now()),
        }
        run.rows.append(call_row(call, step=step, ask_kind="clarify"))

    async def _host_call(
        self, run: _Run, call: ToolCall, step: str, *, clarify_in_step: bool
    ) -> None:
        """A call of a host tool: checked, then decided by the policy: run it, deny it, or pause
        on an approval or a permission ask (when the one slot is free; else deny it)."""
        setup = run.setup
        tool = setup.host_tools.get(call.name)
        run.rows.append(call_row(call, step=step))
        await run.turn.emit(tool_call_event(call.id, call.name, call.arguments))
        if tool is None:
            offered = ", ".join(sorted([*setup.host_tools, *setup.ask_tools])) or "none"
            text = f"There is no tool named {call.name!r}. The tools are: {offered}."
            await self._tool_result(run, call, text, is_error=True)
            return
        if INVALID_ARGUMENTS_KEY in call.arguments:
            text = (
                f"The arguments of {call.name} were not a JSON object, so it did not run. "
                "Call it again with a JSON object that matches its input schema."
            )
            await self._tool_result(run, call, text, is_error=True)
            return
        problems = tool.check(call.arguments)
        if problems:
            await self._tool_result(
                run, call, invalid_arguments_text(tool.name, problems), is_error=True
            )
            return
        connection = run.agent.connection_of(tool.name)
        decision = await self._decide(run, tool, connection, clarify_in_step=clarify_in_step)
        if decision.action == "allow":
            await self._run_and_record(run, tool, call)
            return
        if decision.action == "deny":
            if run.agent.asks is None and decision.reason:
                log.warning("tool %s needs an ask but asks are off: denied", tool.name)
            await self._tool_result(run, call, decision.reason, is_error=True)
            return
        if run.pause is not None:
            await self._deny(run, call, "one_ask_at_a_time")
            return
        if decision.action == "permission":
            gate = permission_pending(connection, tool, call)
        else:
            gate = approval_pending(run.agent, tool, call)
        run.pause = gate
        run.rows.append(_gate_row(gate, step))

    async def _decide(
        self, run: _Run, tool: Tool, connection: ToolSet, *, clarify_in_step: bool
    ) -> Decision:
        user_id = run.principal.user_id
        permission = await self.store.permissions.get(user_id, connection.connection_id)
        grant = await self.store.grants.find(
            user_id, connection.connection_id, tool.name, history_id=run.history.id
        )
        return decide(
            tool.safety(trusted=connection.trusted),
            level=permission.level if permission is not None else None,
            granted=grant is not None,
            asks_enabled=run.agent.asks is not None,
            clarify_in_step=clarify_in_step,
        )

    async def _run_and_record(self, run: _Run, tool: Tool, call: ToolCall) -> None:
        content, is_error = await _run_tool(tool, call)
        await self._tool_result(run, call, content, is_error=is_error)

    async def _deny(self, run: _Run, call: ToolCall, reason: str) -> None:
        """The held call does not run: the model reads why, the client sees ``approved:
        false``."""
        denied = execution_denied(reason)
        run.rows.append(result_row(call.id, call.name, denied, is_error=True))
        run.messages.append(
            ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=denied, is_error=True
            )
        )
        run.output = True
        await run.turn.emit(
            tool_result_event(call.id, call.name, {"approved": False, "reason": reason})
        )

    async def _tool_result(
        self, run: _Run, call: ToolCall, content: Any, *, is_error: bool
    ) -> None:
        run.rows.append(result_row(call.id, call.name, content, is_error=is_error))
        run.messages.append(
            ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=content, is_error=is_error
            )
        )
        run.output = True
        await run.turn.emit(tool_result_event(call.id, call.name, content))

    async def _resolve_gate(
        self, run: _Run, pending: dict[str, Any], envelope: dict[str, Any], scope: GrantScope
    ) -> None:
        """Carry out the answer to an approval or a permission ask on the held call."""
        call = _held_call(run.messages, pending)
        agent = run.agent
        tool = agent.tools.get(call.name) if call is not None else None
        if call is None or tool is None:
            log.warning("the held call of %s is gone; nothing runs", pending["toolCallId"])
            return
        connection = agent.connection_of(tool.name)
        user_id = run.principal.user_id
        if pending["origin"] == PERMISSION:
            level = chosen_level(envelope)
            if level is None:
                await self._deny(run, call, denial_reason(envelope) or "user_declined")
                return
            await self.store.permissions.set(user_id, connection.connection_id, level)
            decision = await self._decide(run, tool, connection, clarify_in_step=False)
            if decision.action == "allow":
                await self._run_and_record(run, tool, call)
            elif decision.action == "deny":
                await self._tool_result(run, call, decision.reason, is_error=True)
            else:
                gate = approval_pending(agent, tool, call)
                run.pause = gate
                run.rows.append(_gate_row(gate, f"{run.turn_id}:gate"))
            return
        reason = denial_reason(envelope)
        if reason is not None:
            await self._deny(run, call, reason)
            return
        if scope == "conversation":
            await self.store.grants.add(
                user_id,
                connection.connection_id,
                tool.name,
                "conversation",
                history_id=run.history.id,
            )
        elif scope == "always":
            await self.store.grants.add(user_id, connection.connection_id, tool.name, "always")
        await self._run_and_record(run, tool, call)

    async def _commit(self, run: _Run) -> None:
        """Append the turn's rows and write its pending ask in one compare-and-set."""
        history_id = run.history.id
        while True:
            current = await self.store.histories.get(history_id)
            if current is None:
                await run.turn.emit(error_event("The conversation was deleted during the turn."))
                await run.turn.emit(done_event(history_id))
                return
            rows = list(run.rows)
            pending: dict[str, Any] | None = None
            if run.pause is not None:
                if current.pending_ask is None:
                    prompt_index = run.prompt_index
                    if prompt_index is None:
                        prompt_index = len(await self.store.histories.rows(history_id)) + 1
                    pending = {
                        **run.pause,
                        "promptIndex": prompt_index,
                        "responseMessages": messages_to_json(run.messages[run.turn_start :]),
                    }
                else:
                    rows = _cancel_paused(rows, run.pause)
            title = current.title or _title_for(run)
            change = HistoryChange(
                append=rows,
                pending_ask=pending if pending is not None else _keep(),
                title=title if current.title is None and title else _keep(),
            )
            try:
                await self.store.histories.apply(
                    history_id, change, expected_version=current.version
                )
            except Conflict:
                continue
            except NotFound:
                await run.turn.emit(error_event("The conversation was deleted during the turn."))
                await run.turn.emit(done_event(history_id))
                return
            break
        run.turn.title = title
        if pending is not None:
            meta = {**_ask_meta(pending), "phase": "asked"}
            run.metadata["nextAsk" if "ask" in run.metadata else "ask"] = meta
            run.turn.pending_summary = {
                "toolCallId": pending["toolCallId"],
                "kind": pending["kind"],
                "simple": pending["simple"],
            }
            await run.turn.emit(ask_event(pending, history_id))
        await run.turn.emit(
            done_event(
                history_id,
                title=title,
                pending_tool_call_id=pending["toolCallId"] if pending else None,
            )
        )
        await self._log(run)

    async def _fail(self, run: _Run, exc: Exception) -> None:
        """Keep what the turn did before the failure; drop the ask it had not paused on."""
        if isinstance(exc, ModelError):
            log.warning("model call failed on history %s: %s", run.history.id, exc)
        else:
            log.exception("turn on history %s failed", run.history.id, exc_info=exc)
        message = _failure_text()
        run.turn.error = message
        if run.pause is not None:
            run.rows = _cancel_paused(run.rows, run.pause, result={"action": "cancel"})
            run.pause = None
        if run.rows:
            while True:
                current = await self.store.histories.get(run.history.id)
                if current is None:
                    break
                try:
                    await self.store.histories.apply(
                        run.history.id,
                        HistoryChange(
                            append=run.rows,
                            title=_title_for(run) if current.title is None else _keep(),
                        ),
                        expected_version=current.version,
                    )
                except Conflict:
                    continue
                except NotFound:
                    break
                run.turn.title = current.title or _title_for(run)
                break
        await run.turn.emit(error_event(message))
        await run.turn.emit(done_event(run.history.id, title=run.turn.title))
        await self._log(run, error=str(exc) or type(exc).__name__)

    async def _log(self, run: _Run, *, error: str | None = None) -> None:
        text = "".join(e["text"] for e in run.turn.events if "text" in e)
        try:
            await self.store.requests.add(
                history_id=run.history.id,
                owner_id=run.principal.user_id,
                request_type="general",
                prompt=run.log_prompt,
                response=text,
                error=error,
                metadata=run.metadata,
                model=run.model.name,
                duration_ms=int((time.monotonic() - run.started) * 1000),
            )
        except Exception:
            log.exception("could not write the request log of history %s", run.history.id)


async def _run_tool(tool: Tool, call: ToolCall) -> tuple[Any, bool]:
    """Run a host tool: its result, or the error the model sees (never a traceback)."""
    try:
        return await tool.run(call.arguments), False
    except ToolError as exc:
        return str(exc), True
    except Exception:
        log.exception("tool %s failed", tool.name)
        return f"The tool {tool.name} failed unexpectedly. Try another way, or tell the user.", True


def _surface(surface: Any) -> AskSurface:
    if surface not in ASK_SURFACES:
        raise BadRequest(
            "surface is not a known surface",
            f"surface must be one of {', '.join(ASK_SURFACES)}.",
        )
    return cast(AskSurface, surface)


def _ask_tool_name(pending: dict[str, Any]) -> str:
    if pending.get("origin") and pending.get("toolName"):
        return str(pending["toolName"])
    if pending["kind"] == "clarify":
        return CLARIFY_TOOL
    return f"ask_{pending['kind']}"


def _ask_meta(pending: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"kind": pending["kind"], "toolCallId": pending["toolCallId"]}
    if pending.get("origin"):
        meta["origin"] = pending["origin"]
        if pending.get("toolName"):
            meta["toolName"] = pending["toolName"]
    return meta


def _not_pending_detail(pending: dict[str, Any] | None) -> str:
    if pending is None:
        return "The history waits on no ask: it was answered, cancelled, or never asked."
    return "The history waits on another ask. Reload the conversation to see it."


def _invalid_ask_text(tool_name: str, errors: list[AskValidationError]) -> str:
    problems = "; ".join(f"{e.path or '(the input)'}: {e.message} {e.fix}" for e in errors)
    return f"Invalid {tool_name} input, so nothing was shown to the user. {problems}"


def _cancel_paused(
    rows: list[Row], pause: dict[str, Any], *, result: dict[str, Any] | None = None
) -> list[Row]:
    """The rows with the paused ask cancelled: its call row marked ``cancelled`` and its
    cancel result added right after it."""
    out: list[Row] = []
    for row in rows:
        if row.get("type") == "tool-call" and row.get("toolCallId") == pause["toolCallId"]:
            row = {**row, "ask": {**row["ask"], "status": "cancelled"}}
            out.append(row)
            out.append(result_row(pause["toolCallId"], row["toolName"], result or CANCEL_OTHER))
        else:
            out.append(row)
    return out


def _title_for(run: _Run) -> str | None:
    for row in run.rows:
        if row.get("type") == "user":
            first = str(row.get("text", "")).strip().splitlines()
            return cut_text(first[0], TITLE_MAX) if first else None
    return None


def _failure_text() -> str:
    return "The model call failed. Try again in a moment."


def _keep() -> Any:
    return UNSET


def _gate_row(gate: dict[str, Any], step: str) -> Row:
    """The row of a gate: a call of the host tool named by the gate's id, for display only."""
    ask: dict[str, Any] = {"kind": gate["kind"], "status": "pending", "origin": gate["origin"]}
    return {
        "type": "tool-call",
        "toolName": gate["toolName"],
        "toolCallId": gate["toolCallId"],
        "args": gate["input"],
        "step": step,
        "ask": ask,
    }


def _held_call(messages: list[Message], pending: dict[str, Any]) -> ToolCall | None:
    """The tool call a gate holds, found in the paused turn's own messages."""
    held = pending.get("heldToolCallId")
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id == held:
                    return call
    return None
