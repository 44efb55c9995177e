"""The steps of a turn: calling the model, and every tool call it makes.

Ask calls are validated and pause the turn (one slot per turn); ``clarify`` calls do the same
with an envelope; host tool calls are checked, then decided by the policy: run, deny, or pause
on an approval or a permission ask. `StepRunner.resolve` carries out an answer through the
gate table (`gate.py`); nothing here branches on an ask's origin.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .._util import new_id, title_from_name
from ..asks import (
    AskValidationError,
    PendingAsk,
    clarify_error_text,
    validate_ask_input,
    validate_clarify_prompts,
)
from ..policy import Decision, decide
from ..store import Store, UserEvent
from ..store.records import History
from .action_calls import ActionBinding, ActionCalls, ActionStep
from .agent import Agent
from .approvals import edit_note
from .events import error_event, text_event, tool_call_event, tool_result_event
from .gate import (
    Answer,
    GateRequired,
    execution_denied,
    gate_for,
    safe_to_run_again,
    stopped_result,
    uncertain_result,
)
from .gates import APPROVALS, CLARIFY, MODEL_ASKS, PERMISSIONS, declared_title
from .messages import (
    AssistantMessage,
    FilePart,
    Message,
    ToolCall,
    ToolResultMessage,
    call_ids,
)
from .models import INVALID_ARGUMENTS_KEY
from .models.base import Model, ModelRequest, TextDelta, ToolCallPart, storable_output
from .page_tools import PageTools
from .prompting import CLARIFY_TOOL, TurnSetup
from .rows import Row, assistant_row, call_row, result_row
from .running import RunningBoard
from .tools import CALLING_USER, Tool, ToolError, ToolOutput, ToolSet, invalid_arguments_text
from .turn import Principal, Turn, TurnStopped

if TYPE_CHECKING:
    from .forwarding import Forwarder

log = logging.getLogger("handrail.runtime")

T = TypeVar("T")

MAX_STEPS: Final = 12
CANCEL_OTHER: Final = {"action": "cancel", "reason": "one_ask_at_a_time"}


@dataclass(kw_only=True)
class TurnRun:
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
    #: How many rows the history had when the turn read it (None: not read).
    row_count: int | None = None
    #: The data of all the history's rows as of `history`'s version, when this process knows
    #: them (a read, a create, `LastCommits`): kept with the turn's last commit.
    stored_rows: tuple[Row, ...] | None = None
    rows: list[Row] = field(default_factory=list)
    turn_id: str = field(default_factory=new_id)
    output: bool = False
    pause: PendingAsk | None = None
    log_prompt: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    #: The process whose turn lease this run holds (its last change releases it), if any.
    lease_owner: str | None = None
    #: When a run takes over a turn whose process stopped: the held tool call that may or
    #: may not have run already (it is reported uncertain, not run again, unless it is safe).
    recovering: str | None = None
    #: The page tools this turn offers (the connection ``page:<origin>``), kept with its ask.
    page_tools: PageTools | None = None
    #: Audit log records to write with the turn's last change (`approvals.py`).
    audit: list[Any] = field(default_factory=list)
    #: Gate asks waiting for the one slot behind `pause`, in order (a gate that
    #: `waits_in_line`: an MCP server's request for input while another ask held the slot).
    #: Stored on the pending ask; the first becomes the pending ask once the slot is free.
    queued: list[PendingAsk] = field(default_factory=list)


class StepRunner:
    """Runs the model steps and tool calls of turns over one store.

    Gates (`gate.py`) carry out answers through its public methods: `held`, `deny`,
    `tool_result`, `run_and_record`, `decided_call`, `action` and `action_step`.
    """

    def __init__(
        self, store: Store, actions: ActionCalls, board: RunningBoard | None = None
    ) -> None:
        self.store = store
        self.actions = actions
        #: Tells the process holding what a cancelled ask held there to release it.
        self.forwarder: Forwarder | None = None
        self.board = board

    async def steps(self, run: TurnRun) -> None:
        """Call the model step by step until it answers without tools or an ask pauses."""
        for step in range(MAX_STEPS):
            if stopping(run):
                raise TurnStopped
            await self.progress(run, "thinking")
            text: list[str] = []
            calls: list[ToolCall] = []
            request = ModelRequest(
                system=run.setup.system,
                messages=tuple(run.messages),
                tools=run.setup.specs,
                conversation_id=run.history.id,
                agent_name=run.agent.name,
                agent_instructions=run.agent.instructions,
                connection_instructions=run.setup.instructions,
            )
            try:
                await until_stopped(run, self._model_step(run, request, text, calls))
            except TurnStopped:
                # What the model said before Stop stays; its unfinished calls never ran.
                said = "".join(text)
                if said:
                    run.rows.append(assistant_row(said))
                    run.messages.append(AssistantMessage(text=said))
                raise
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

    async def _model_step(
        self, run: TurnRun, request: ModelRequest, text: list[str], calls: list[ToolCall]
    ) -> None:
        # Every model's output is storable: a model of the user's own that does not use
        # `storable_stream` cannot break a turn with NUL or lone surrogates (one that does is
        # not cleaned twice).
        taken: set[str] | None = None  # the conversation's call ids, read at the first call
        async for event in storable_output(run.model, request):
            if isinstance(event, TextDelta) and event.text:
                text.append(event.text)
                run.output = True
                await run.turn.emit(text_event(event.text))
            elif isinstance(event, ToolCallPart):
                if taken is None:
                    taken = call_ids(run.messages)
                call = event.call
                if not call.id or call.id in taken:
                    call = _renamed(call, taken)
                taken.add(call.id)
                calls.append(call)

    async def tool_progress(self, run: TurnRun, call: ToolCall, tool: Tool | None = None) -> None:
        """Tell the person that `call` runs now: phase ``tool`` with the tool's ``toolName``,
        ``toolTitle`` (its declared title, else one made from its name: never the name the
        model reads) and ``toolCallId``."""
        tool = tool or run.agent.tools.get(call.name)
        title = declared_title(run.agent, tool) if tool is not None else None
        await self.progress(
            run,
            "tool",
            toolName=call.name,
            toolTitle=title or title_from_name(call.name),
            toolCallId=call.id,
        )

    async def progress(self, run: TurnRun, phase: str, **data: Any) -> None:
        """Tell the person what the turn does now (a ``turn.progress`` event): ``thinking``
        (a model step), ``tool`` (a tool runs: see `tool_progress`)."""
        progress = {"phase": phase, **data}
        if self.board is not None:
            self.board.progressed(run.turn, progress)
        else:
            run.turn.progress = progress
        await self.store.events.publish(
            UserEvent(
                kind="turn.progress",
                user_id=run.turn.user_id or run.principal.user_id,
                history_id=run.history.id,
                data={**progress, "turnId": run.turn.id},
            )
        )

    async def _run_calls(self, run: TurnRun, calls: list[ToolCall], step: str) -> None:
        setup = run.setup
        clarify_in_step = any(call.name == CLARIFY_TOOL for call in calls) and setup.clarify
        for call in calls:
            if stopping(run):
                # Stop came between two calls of a step: the rest never run.
                if call.name != CLARIFY_TOOL and call.name not in setup.ask_tools:
                    run.rows.append(call_row(call, step=step))
                    await self.deny(run, call, "stopped")
                else:
                    self._tool_error(run, call, "The person pressed Stop; this was not shown.")
                continue
            if call.name == CLARIFY_TOOL and setup.clarify:
                self._clarify_call(run, call, step)
                continue
            kind = setup.ask_tools.get(call.name)
            if kind is not None:
                errors = validate_ask_input(kind, call.arguments, surface=setup.surface)
                if errors:
                    self._tool_error(run, call, _invalid_ask_text(call.name, errors))
                elif run.pause is None:
                    run.pause = MODEL_ASKS.ask(call, kind)
                    run.rows.append(call_row(call, step=step, ask_kind=kind))
                else:
                    self._cancel_extra_ask(run, call, step, kind)
                continue
            await self._host_call(run, call, step, clarify_in_step=clarify_in_step)

    def _clarify_call(self, run: TurnRun, call: ToolCall, step: str) -> None:
        """A ``clarify`` call: an invalid one returns the error text to the model and the turn
        goes on; a valid one pauses like an ask (one slot, later ones cancelled)."""
        result = validate_clarify_prompts(
            call.arguments.get("prompts"), call.arguments.get("title")
        )
        if result.envelope is None:
            self._tool_error(run, call, clarify_error_text(result.errors))
        elif run.pause is not None:
            self._cancel_extra_ask(run, call, step, "clarify")
        else:
            run.pause = CLARIFY.ask(call, result.envelope)
            run.rows.append(call_row(call, step=step, ask_kind="clarify"))

    def _tool_error(self, run: TurnRun, call: ToolCall, text: str) -> None:
        """An invalid ask or clarify call: the model reads why; nothing is stored."""
        run.messages.append(
            ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=text, is_error=True
            )
        )

    def _cancel_extra_ask(self, run: TurnRun, call: ToolCall, step: str, kind: str) -> None:
        """An ask after the first in a step: cancelled with ``one_ask_at_a_time``."""
        run.rows.append(call_row(call, step=step, ask_kind=kind, status="cancelled"))
        run.rows.append(result_row(call.id, call.name, CANCEL_OTHER))
        run.messages.append(
            ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=CANCEL_OTHER)
        )

    async def _host_call(
        self, run: TurnRun, call: ToolCall, step: str, *, clarify_in_step: bool
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
            await self.tool_result(run, call, text, is_error=True)
            return
        if INVALID_ARGUMENTS_KEY in call.arguments:
            text = (
                f"The arguments of {call.name} were not a JSON object, so it did not run. "
                "Call it again with a JSON object that matches its input schema."
            )
            await self.tool_result(run, call, text, is_error=True)
            return
        problems = tool.check(call.arguments)
        if problems:
            await self.tool_result(
                run, call, invalid_arguments_text(tool.name, problems), is_error=True
            )
            return
        await self.decided_call(run, tool, call, clarify_in_step=clarify_in_step)

    async def decided_call(
        self, run: TurnRun, tool: Tool, call: ToolCall, *, clarify_in_step: bool = False
    ) -> None:
        """Decide a checked call by the policy and act on it: run it, send an action to its
        next gate, deny it, or pause on a permission ask or an approval."""
        connection = run.agent.connection_of(tool.name)
        decision = await self._decide(run, tool, connection, clarify_in_step=clarify_in_step)
        binding = self.binding(run.agent, tool.name)
        # An HTTP action: read-only ones run when allowed; a side effect's confirmation is its
        # approval, so it goes to its confirmation whether the level allows it or asks.
        if (
            binding is not None
            and decision.action in ("allow", "ask")
            and (binding.tool.needs_confirmation or decision.action == "allow")
        ):
            await self.action(run, call, binding)
            return
        if decision.action == "allow" and not run.agent.rules_for(tool.name).approvers:
            await self.run_and_record(run, tool, call)
            return
        if decision.action == "allow":
            # A tool with approvers is asked about every time, whatever was granted.
            decision = Decision(action="ask", reason="the tool names approvers")
        if decision.action == "deny":
            if run.agent.asks is None and decision.reason:
                log.warning("tool %s needs an ask but asks are off: denied", tool.name)
            await self.tool_result(run, call, decision.reason, is_error=True)
            return
        if run.pause is not None:
            await self.deny(run, call, "one_ask_at_a_time")
            return
        if decision.action == "permission":
            self.pause(run, PERMISSIONS.ask(run.agent, connection, tool, call))
        else:
            self.pause(run, APPROVALS.ask(run.agent, tool, call))

    def pause(self, run: TurnRun, pending: PendingAsk, where: str | None = None) -> None:
        """Pause the turn on a gate's ask, with the gate's display row."""
        run.pause = pending
        run.rows.append(_gate_row(pending, where or f"{run.turn_id}:gate"))

    async def action(
        self,
        run: TurnRun,
        call: ToolCall,
        binding: ActionBinding,
        choices: Mapping[str, str] | None = None,
        *,
        edited: dict[str, Any] | None = None,
    ) -> None:
        """Run an action as far as it goes: its result, or a gate to pause on. `edited` are
        the arguments the person edited (the call then runs with them; its gates keep them)."""
        if binding.tool.needs_confirmation and run.pause is not None:
            await self.deny(run, call, "one_ask_at_a_time")
            return
        if stopping(run):
            await self.deny(run, call, "stopped")
            return
        await self.tool_progress(run, call)
        step = await self.actions.call(
            binding,
            self.projected(run, call),
            history_id=run.history.id,
            user_id=run.principal.user_id,
            choices=choices,
        )
        if edited is not None and step.gate is not None:
            step = dataclasses.replace(step, gate=step.gate.replace(edited_arguments=edited))
        await self.action_step(run, call, step)

    def projected(self, run: TurnRun, call: ToolCall) -> ToolCall:
        """The call with the arguments its tool runs with (managed arguments after the
        caller's): what an HTTP action is prepared, bound and confirmed with."""
        tool = run.agent.tools.get(call.name)
        if tool is None:
            return call
        arguments = tool.project(call.arguments)
        if arguments == call.arguments:
            return call
        return ToolCall(id=call.id, name=call.name, arguments=arguments)

    async def action_step(self, run: TurnRun, call: ToolCall, step: ActionStep) -> None:
        """What an action call came to: pause on its gate, or give the model its result."""
        if step.gate is not None:
            self.pause(run, step.gate)
        else:
            await self.tool_result(run, call, step.result, is_error=step.is_error)

    async def _decide(
        self, run: TurnRun, tool: Tool, connection: ToolSet, *, clarify_in_step: bool
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

    async def run_and_record(
        self, run: TurnRun, tool: Tool, call: ToolCall, *, edited: dict[str, Any] | None = None
    ) -> None:
        """Run the tool once and give the model its result; a tool that raises
        `GateRequired` pauses the turn on that gate instead. In a turn taken over from a
        process that stopped, the held call may have run already: unless the tool is
        read-only or idempotent it is not run again, and the model and the person read that
        its outcome is uncertain (``TOOL_EXECUTION_UNCERTAIN``)."""
        if run.recovering == call.id and not safe_to_run_again(run.agent, tool):
            await self.tool_result(run, call, uncertain_result(tool.name), is_error=True)
            return
        if stopping(run):
            await self.deny(run, call, "stopped")
            return
        await self.tool_progress(run, call, tool)
        executed = call.arguments if edited is None else edited
        await self.continue_call(run, tool, call, lambda: tool.run(executed), edited=edited)

    async def continue_call(
        self,
        run: TurnRun,
        tool: Tool,
        call: ToolCall,
        work: Callable[[], Awaitable[Any]],
        *,
        edited: dict[str, Any] | None = None,
    ) -> None:
        """Run `work` for a held call (the tool itself, or the rest of a call a gate held)
        and give the model its result; `GateRequired` pauses the turn on that gate again.
        `edited` are the arguments the person changed the call to, if they did."""
        try:
            content, is_error = await until_stopped(
                run, _run_tool(tool, work, run.principal.user_id)
            )
        except TurnStopped:
            # Stopped while it ran: the tool's task is cancelled; whether it took effect is
            # known only for a tool that has none.
            safe = safe_to_run_again(run.agent, tool)
            await self.tool_result(run, call, stopped_result(tool.name, safe=safe), is_error=True)
            raise
        except GateRequired as required:
            await self._gate_required(run, tool, call, required)
            return
        if edited is not None:
            content = edit_note(call.arguments, edited, content)
        await self.tool_result(run, call, content, is_error=is_error, executed_args=edited)

    async def _gate_required(
        self, run: TurnRun, tool: Tool, call: ToolCall, required: GateRequired
    ) -> None:
        gate = gate_for(required.origin)
        pending = gate.make(
            call, tool_name=tool.name, kind=required.kind, input=required.input, **required.state
        )
        if run.pause is not None and not gate.waits_in_line:
            await gate.cancelled(self, pending, "one_ask_at_a_time")
            await self.deny(run, call, "one_ask_at_a_time")
            return
        errors = validate_ask_input(required.kind, required.input)
        if errors:
            log.warning("tool %s asked for an invalid %s ask", tool.name, required.origin)
            await gate.cancelled(self, pending, "invalid_ask")
            text = f"The tool {tool.name} failed: it asked the person an invalid question."
            await self.tool_result(run, call, text, is_error=True)
            return
        if run.pause is not None:
            # The slot is taken: the call stays open (its clock stopped) and its ask waits in
            # line, to be asked once the slot is free (`next_in_line`).
            run.queued.append(pending)
            return
        self.pause(run, pending)

    def next_in_line(self, run: TurnRun) -> None:
        """The slot is free (the ask the turn resumed from is done and nothing paused it
        again): the first ask waiting in line becomes the one the turn pauses on."""
        if run.pause is None and run.queued:
            self.pause(run, run.queued.pop(0))

    async def release_queued(self, run: TurnRun, reason: str) -> None:
        """Drop the asks waiting in line (the turn stopped or failed before they were asked):
        each held call's model reads that it did not finish (``execution-denied`` with
        `reason`), and its gate releases what it holds (a parked call hears ``cancel``)."""
        queued, run.queued = run.queued, []
        for pending in queued:
            held = pending.held_tool_call_id
            if held and not _has_result(run, held):
                call = ToolCall(id=held, name=gate_for(pending).tool_name(pending), arguments={})
                await self.deny(run, call, reason)
            await self.release(
                pending, reason, user_id=run.history.owner_id, history_id=run.history.id
            )

    async def deny(self, run: TurnRun, call: ToolCall, reason: str) -> None:
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

    async def tool_result(
        self,
        run: TurnRun,
        call: ToolCall,
        content: Any,
        *,
        is_error: bool,
        executed_args: Mapping[str, Any] | None = None,
    ) -> None:
        """Give the model a call's result, store it, and stream it. `executed_args` are the
        arguments it ran with when the person edited the model's (kept in the result row
        beside the model's own, which stay in the call row); a `ToolOutput`'s files go to the
        model only."""
        parts: tuple[FilePart, ...] = ()
        if isinstance(content, ToolOutput):
            content, parts = content.content, content.parts
        row = result_row(call.id, call.name, content, is_error=is_error)
        if executed_args is not None:
            row["executedArgs"] = dict(executed_args)
        run.rows.append(row)
        run.messages.append(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=content,
                is_error=is_error,
                parts=parts,
            )
        )
        run.output = True
        await run.turn.emit(tool_result_event(call.id, call.name, content))

    def held(self, run: TurnRun, pending: PendingAsk) -> tuple[ToolCall, Tool] | None:
        """The tool call a gate holds and its tool, found in the paused turn's own messages;
        None (logged) when either is gone, and then nothing runs."""
        call = _held_call(run.messages, pending)
        tool = run.agent.tools.get(call.name) if call is not None else None
        if call is None or tool is None:
            log.warning("the held call of %s is gone; nothing runs", pending.tool_call_id)
            if call is not None:
                # Its tool is gone (its connection was removed): the model reads why.
                text = tool_gone_text(call.name)
                run.rows.append(result_row(call.id, call.name, text, is_error=True))
                run.messages.append(
                    ToolResultMessage(
                        tool_call_id=call.id, tool_name=call.name, content=text, is_error=True
                    )
                )
                run.output = True
            return None
        return call, tool

    def held_action(
        self, run: TurnRun, pending: PendingAsk
    ) -> tuple[ToolCall, ActionBinding] | None:
        """The held call of an HTTP action's gate and its action (None when either is gone)."""
        held = self.held(run, pending)
        binding = self.binding(run.agent, held[1].name) if held is not None else None
        if held is None or binding is None:
            return None
        return held[0], binding

    def binding(self, agent: Agent, tool_name: str) -> ActionBinding | None:
        """The HTTP action behind an agent's tool, if it is one."""
        found = agent.actions.get(tool_name)
        if found is None:
            return None
        return ActionBinding(action_set=found[0], tool=found[1])

    async def release(
        self, pending: PendingAsk, reason: str, *, user_id: str, history_id: str
    ) -> None:
        """A cancelled ask's gate releases what it holds: here, or (what lives in another
        process only, a legacy MCP call parked there) in the process that holds it."""
        gate = gate_for(pending)
        await gate.cancelled(self, pending, reason)
        key = gate.held_elsewhere(pending)
        if key is not None and self.forwarder is not None:
            await self.forwarder.release(user_id, history_id, key)

    async def resolve(self, run: TurnRun, pending: PendingAsk, answer: Answer) -> None:
        """Carry out an answer through its gate."""
        await gate_for(pending).resolve(self, run, pending, answer)

    async def recover(self, run: TurnRun, pending: PendingAsk, answer: Answer) -> None:
        """Carry out an answer again, for a turn taken over from a process that stopped after
        the answer was committed: the gate decides what is safe to do again."""
        run.recovering = pending.held_tool_call_id
        await gate_for(pending).recover(self, run, pending, answer)


def stopping(run: TurnRun) -> bool:
    """Whether the person pressed Stop on this run's turn."""
    return run.turn.stop_requested.is_set()


async def until_stopped(run: TurnRun, work: Awaitable[T]) -> T:
    """`work`'s result; when Stop comes first, `work` is cancelled and `TurnStopped` raised.

    `work` runs in the turn's own task: Stop cancels that task while it waits here (as
    `asyncio.timeout` does), and the cancellation this caused is taken back once it has
    ended `work`. A cancellation from elsewhere (the server stopping) goes on as it came."""
    stop = run.turn.stop_requested
    if stop.is_set():
        if asyncio.iscoroutine(work):
            work.close()
        raise TurnStopped
    task = asyncio.current_task()
    if task is None:  # not in a task: nothing to cancel
        return await work
    inside = True
    cancelled = False

    def cancel() -> None:
        nonlocal cancelled
        if asyncio.current_task() is task:
            # Stop asked from inside `work` itself: cancelled at its next wait.
            task.get_loop().call_soon(cancel_now)
        else:
            cancel_now()

    def cancel_now() -> None:
        nonlocal cancelled
        if inside and not cancelled:
            cancelled = True
            task.cancel()

    stop.watch(cancel)
    try:
        result = await work
    except asyncio.CancelledError:
        if cancelled and task.uncancel() == 0:
            raise TurnStopped from None
        raise
    finally:
        inside = False
        stop.unwatch(cancel)
    if cancelled:  # `work` caught its cancellation and returned
        task.uncancel()
        raise TurnStopped
    return result


async def _run_tool(
    tool: Tool, work: Callable[[], Awaitable[Any]], user_id: str
) -> tuple[Any, bool]:
    """Run a host tool (`work`) for `user_id` (`calling_user_id` inside it): its result, or
    the error the model sees (never a traceback)."""
    token = CALLING_USER.set(user_id)
    try:
        return await work(), False
    except GateRequired:
        raise
    except ToolError as exc:
        return str(exc), True
    except Exception:
        log.exception("tool %s failed", tool.name)
        return f"The tool {tool.name} failed unexpectedly. Try another way, or tell the user.", True
    finally:
        CALLING_USER.reset(token)


def _renamed(call: ToolCall, taken: set[str]) -> ToolCall:
    """`call` under an id the conversation does not hold yet. A model (or an adapter's agent)
    that numbers its calls anew each turn, or gives none, would otherwise have two calls under
    one id: an answer to one ask would change the other's status, and a result could pair with
    the wrong call."""
    base = call.id or "call"
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    renamed = f"{base}_{n}"
    log.warning(
        "the model gave the tool call id %r, %s; it is %r here",
        call.id,
        "which the conversation already holds" if call.id else "an empty one",
        renamed,
    )
    return dataclasses.replace(call, id=renamed)


def _has_result(run: TurnRun, call_id: str) -> bool:
    return any(
        isinstance(m, ToolResultMessage) and m.tool_call_id == call_id for m in run.messages
    ) or any(r.get("type") == "tool-result" and r.get("toolCallId") == call_id for r in run.rows)


def tool_gone_text(tool_name: str) -> str:
    """The tool error of a held call whose tool is no longer offered."""
    return (
        f"The tool {tool_name} is no longer available (its connection was removed or changed), "
        "so the call did not run. Tell the user, or do it another way."
    )


def _invalid_ask_text(tool_name: str, errors: list[AskValidationError]) -> str:
    problems = "; ".join(f"{e.path or '(the input)'}: {e.message} {e.fix}" for e in errors)
    return f"Invalid {tool_name} input, so nothing was shown to the user. {problems}"


def _gate_row(gate: PendingAsk, step: str) -> Row:
    """The row of a gate: a call of the host tool named by the gate's id, for display only."""
    ask: dict[str, Any] = {"kind": gate.kind, "status": "pending", "origin": gate.origin}
    return {
        "type": "tool-call",
        "toolName": gate.tool_name,
        "toolCallId": gate.tool_call_id,
        "args": gate.input,
        "step": step,
        "ask": ask,
    }


def _held_call(messages: list[Message], pending: PendingAsk) -> ToolCall | None:
    """The tool call a gate holds, found in the paused turn's own messages."""
    held = pending.held_tool_call_id
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id == held:
                    return call
    return None
