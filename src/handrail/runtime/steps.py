"""The steps of a turn: calling the model, and every tool call it makes.

Ask calls are validated and pause the turn (one slot per turn); ``clarify`` calls do the same
with an envelope; host tool calls are checked, then decided by the policy: run, deny, or pause
on an approval or a permission ask. `StepRunner.resolve_gate` carries out the answer to those.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._util import iso, new_id, utc_now
from ..asks import (
    AskValidationError,
    clarify_error_text,
    clarify_simple_card,
    to_simple_card,
    validate_ask_input,
    validate_clarify_prompts,
)
from ..policy import Decision, GrantScope, decide
from ..store import Store
from ..store.records import History
from .action_calls import ActionBinding, ActionCalls, ActionStep
from .agent import Agent
from .events import error_event, text_event, tool_call_event, tool_result_event
from .gates import (
    CONFIRMATION,
    PERMISSION,
    SELECTION,
    approval_pending,
    chosen_level,
    chosen_option,
    denial_reason,
    execution_denied,
    permission_pending,
)
from .messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from .models import INVALID_ARGUMENTS_KEY
from .models.base import Model, ModelRequest, TextDelta, ToolCallPart
from .prompting import CLARIFY_TOOL, TurnSetup
from .rows import Row, assistant_row, call_row, result_row
from .tools import Tool, ToolError, ToolSet, invalid_arguments_text
from .turn import Principal, Turn

log = logging.getLogger("handrail.runtime")

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
    rows: list[Row] = field(default_factory=list)
    turn_id: str = field(default_factory=new_id)
    output: bool = False
    pause: dict[str, Any] | None = None
    log_prompt: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


class StepRunner:
    """Runs the model steps and tool calls of turns over one store."""

    def __init__(self, store: Store, actions: ActionCalls) -> None:
        self.store = store
        self.actions = actions

    async def steps(self, run: TurnRun) -> None:
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

    async def _run_calls(self, run: TurnRun, calls: list[ToolCall], step: str) -> None:
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

    def _clarify_call(self, run: TurnRun, call: ToolCall, step: str) -> None:
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
        binding = _binding(run.agent, tool.name)
        # An HTTP action: read-only ones run when allowed; a side effect's confirmation is its
        # approval, so it goes to its confirmation whether the level allows it or asks.
        if (
            binding is not None
            and decision.action in ("allow", "ask")
            and (binding.tool.needs_confirmation or decision.action == "allow")
        ):
            await self._action(run, call, binding)
            return
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

    async def _action(
        self,
        run: TurnRun,
        call: ToolCall,
        binding: ActionBinding,
        choices: Mapping[str, str] | None = None,
    ) -> None:
        """Run an action as far as it goes: its result, or a gate to pause on."""
        if binding.tool.needs_confirmation and run.pause is not None:
            await self._deny(run, call, "one_ask_at_a_time")
            return
        step = await self.actions.call(
            binding,
            call,
            history_id=run.history.id,
            user_id=run.principal.user_id,
            choices=choices,
        )
        await self._action_step(run, call, step, f"{run.turn_id}:gate")

    async def _action_step(
        self, run: TurnRun, call: ToolCall, step: ActionStep, where: str
    ) -> None:
        if step.gate is not None:
            run.pause = step.gate
            run.rows.append(_gate_row(step.gate, where))
        else:
            await self._tool_result(run, call, step.result, is_error=step.is_error)

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

    async def _run_and_record(self, run: TurnRun, tool: Tool, call: ToolCall) -> None:
        content, is_error = await _run_tool(tool, call)
        await self._tool_result(run, call, content, is_error=is_error)

    async def _deny(self, run: TurnRun, call: ToolCall, reason: str) -> None:
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
        self, run: TurnRun, call: ToolCall, content: Any, *, is_error: bool
    ) -> None:
        run.rows.append(result_row(call.id, call.name, content, is_error=is_error))
        run.messages.append(
            ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=content, is_error=is_error
            )
        )
        run.output = True
        await run.turn.emit(tool_result_event(call.id, call.name, content))

    async def resolve_gate(
        self, run: TurnRun, pending: dict[str, Any], envelope: dict[str, Any], scope: GrantScope
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
        binding = _binding(agent, tool.name)
        if pending["origin"] in (SELECTION, CONFIRMATION) and binding is not None:
            reason = denial_reason(envelope)
            if pending["origin"] == SELECTION:
                chosen = chosen_option(envelope)
                if chosen is None:
                    await self._deny(run, call, reason or "user_declined")
                    return
                choices = {**pending.get("choices", {}), str(pending["dependency"]): chosen}
                await self._action(run, call, binding, choices)
                return
            if reason is not None:
                await self.actions.cancel(pending, reason)
                await self._deny(run, call, reason)
                return
            step = await self.actions.confirm(
                binding, call, pending, history_id=run.history.id, user_id=user_id
            )
            await self._action_step(run, call, step, f"{run.turn_id}:gate")
            return
        if pending["origin"] == PERMISSION:
            level = chosen_level(envelope)
            if level is None:
                await self._deny(run, call, denial_reason(envelope) or "user_declined")
                return
            await self.store.permissions.set(user_id, connection.connection_id, level)
            decision = await self._decide(run, tool, connection, clarify_in_step=False)
            if (
                binding is not None
                and decision.action in ("allow", "ask")
                and (binding.tool.needs_confirmation or decision.action == "allow")
            ):
                await self._action(run, call, binding)
            elif decision.action == "allow":
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


async def _run_tool(tool: Tool, call: ToolCall) -> tuple[Any, bool]:
    """Run a host tool: its result, or the error the model sees (never a traceback)."""
    try:
        return await tool.run(call.arguments), False
    except ToolError as exc:
        return str(exc), True
    except Exception:
        log.exception("tool %s failed", tool.name)
        return f"The tool {tool.name} failed unexpectedly. Try another way, or tell the user.", True


def _invalid_ask_text(tool_name: str, errors: list[AskValidationError]) -> str:
    problems = "; ".join(f"{e.path or '(the input)'}: {e.message} {e.fix}" for e in errors)
    return f"Invalid {tool_name} input, so nothing was shown to the user. {problems}"


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


def _binding(agent: Agent, tool_name: str) -> ActionBinding | None:
    found = agent.actions.get(tool_name)
    if found is None:
        return None
    return ActionBinding(action_set=found[0], tool=found[1])
