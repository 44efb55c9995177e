"""The built-in gates, one class per origin, registered in the gate table (`gate.py`).

- `ModelAskGate`: the model's ``ask_<kind>`` calls; the answer is the call's result.
- `ClarifyGate`: the ``clarify`` tool; the answer envelope is its result.
- `ApprovalGate` (``origin: "approval"``): a confirm before a tool the policy asks about; the
  held call runs once when approved (with an optional grant scope).
- `PermissionGate` (``origin: "permission"``): a choice of the connection's permission level
  the first time a conversation uses it; the held call is then decided again.
- `SelectionGate` (``origin: "selection"``): a choice among a dependency's candidates for an
  HTTP action; the action goes on with the choice.
- `ConfirmationGate` (``origin: "confirmation"``): a confirm of one prepared HTTP request with
  its ``preview`` and ``expiresAt``; confirming sends it once.

The held call is the one the model made; its id is named by ``heldToolCallId`` and its
arguments are replayed from the paused turn's messages, never taken from a client.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Final

from .._util import iso, json_encoder, new_id, now_iso, utc_now
from ..actions import check_input as check_action_input
from ..asks import (
    AskValidationError,
    PendingAsk,
    clarify_simple_card,
    to_simple_card,
    validate_ask_input,
    validate_clarify_response,
)
from ..asks.cards import confirmation_card
from ..asks.checks import add, invalid_enum
from ..asks.text import cut_text
from ..errors import ConfirmationExpired
from ..policy import (
    GRANT_SCOPES,
    PERMISSION_LABELS,
    PERMISSION_LEVELS,
    GrantScope,
    PermissionLevel,
)
from .agent import Agent
from .approvals import edit_errors, edit_note, edited_arguments
from .gate import MODEL_ASK, Answer, Gate, register_gate, uncertain_confirmation
from .messages import ToolCall, ToolResultMessage
from .page_tools import PageToolSet, page_approval_input, page_permission_input
from .tool_arguments import check_arguments
from .tools import Tool, ToolSet
from .wording import level_choice, values_phrase, what_is_chosen

if TYPE_CHECKING:
    from ..actions import ActionTool, NeedsSelection, PreparedRequest
    from .action_calls import ActionBinding
    from .steps import StepRunner, TurnRun

log = logging.getLogger("handrail.runtime")


def _edit_problems(tool: Tool, arguments: Any) -> list[str]:
    """What is wrong with a person's edit of a call to `tool`: what its own check finds, and
    its schema's bounds (the edit goes to the tool as it is, so a server's ``maximum`` holds
    for it)."""
    found = tool.check(arguments)
    bounded = check_arguments(tool.input_schema, arguments, bounds=True)
    if isinstance(arguments, dict):
        # An argument the connection sets (from its settings) runs with the connection's value
        # whatever the edit says: an edit of it would read as done and not be.
        projected = tool.project(arguments)
        found += [
            f"{name}: is set by the connection, so it cannot be edited"
            for name, value in arguments.items()
            if name in projected and projected[name] != value
        ]
    return [*found, *(p for p in bounded if p not in found)]


APPROVAL: Final = "approval"
PERMISSION: Final = "permission"
SELECTION: Final = "selection"
CONFIRMATION: Final = "confirmation"
PROMPT_MAX: Final = 500


def declared_title(agent: Agent, tool: Tool) -> str | None:
    """A tool's human ``title`` (a Python tool's, an MCP tool's, or the HTTP action's behind
    it), or None when it declares none."""
    if tool.title:
        return tool.title
    found = agent.actions.get(tool.name)
    if found is not None and found[1].title:
        return found[1].title
    return None


def tool_label(agent: Agent, tool: Tool) -> str:
    """What the person reads for a tool: its human ``title`` (see `declared_title`), else
    its name."""
    return declared_title(agent, tool) or tool.name


def denial_reason(envelope: Mapping[str, Any]) -> str | None:
    """Why an answer does not allow the held call, or None when it does (approve)."""
    action = envelope.get("action")
    if action == "decline":
        return "user_declined"
    if action == "cancel":
        reason = envelope.get("reason")
        return reason if isinstance(reason, str) and reason else "user_cancelled"
    content = envelope.get("content")
    if isinstance(content, dict) and content.get("confirmed") is True:
        return None
    return "user_denied"


def chosen_option(envelope: Mapping[str, Any]) -> str | None:
    """The option id a one-choice answer picked, or None when declined or cancelled."""
    if envelope.get("action") != "accept":
        return None
    selected = envelope.get("content", {}).get("selected", [])
    return str(selected[0]) if selected else None


def chosen_level(envelope: Mapping[str, Any]) -> PermissionLevel | None:
    """The level a permission answer chose, or None when it was declined or cancelled."""
    chosen = chosen_option(envelope)
    for level in PERMISSION_LEVELS:
        if level == chosen:
            return level
    return None


class _ModelResult(Gate):
    """A gate whose answer is the result of the model's own call (asks and clarify)."""

    holds_call = False

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        run.messages.append(
            ToolResultMessage(
                tool_call_id=pending.tool_call_id,
                tool_name=self.tool_name(pending),
                content=answer.envelope,
                parts=answer.parts,
            )
        )


class ModelAskGate(_ModelResult):
    """The model's ``ask_<kind>`` calls."""

    origin = MODEL_ASK

    def ask(self, call: ToolCall, kind: str) -> PendingAsk:
        return PendingAsk(
            tool_call_id=call.id,
            kind=kind,
            input=call.arguments,
            simple=to_simple_card(kind, call.arguments, call.id),
            created=now_iso(),
        )


class ClarifyGate(_ModelResult):
    """The ``clarify`` tool: 1-5 prompts as one ask."""

    origin = "clarify"
    tool: ClassVar[str] = "clarify"

    def ask(self, call: ToolCall, envelope: dict[str, Any]) -> PendingAsk:
        return PendingAsk(
            tool_call_id=call.id,
            kind="clarify",
            input=envelope,
            simple=clarify_simple_card(envelope, call.id),
            created=now_iso(),
        )

    def tool_name(self, pending: PendingAsk) -> str:
        return self.tool

    def answer_errors(
        self, pending: PendingAsk, envelope: dict[str, Any], *, max_file_size_bytes: int
    ) -> list[AskValidationError]:
        return validate_clarify_response(pending.input, envelope)


class ApprovalGate(Gate):
    """A confirm before a tool the policy asks about."""

    origin = APPROVAL

    def ask(self, agent: Agent, tool: Tool, call: ToolCall) -> PendingAsk:
        approval_id = f"approval_{new_id()}"
        page = _page_of(agent, tool)
        held = _connection_id(agent, tool)
        # The person approves the call as it would run: managed arguments included.
        projected = tool.project(call.arguments)
        confirm = (
            page_approval_input(page, tool, projected)
            if page is not None
            else approval_input(agent, tool, projected)
        )
        return PendingAsk(
            tool_call_id=approval_id,
            kind="confirm",
            input=confirm,
            simple=to_simple_card("confirm", confirm, approval_id),
            created=now_iso(),
            origin=APPROVAL,
            approval_id=approval_id,
            tool_name=tool.name,
            connection_id=page.connection_id if page is not None else None,
            held_tool_call_id=call.id,
            arguments_digest=arguments_digest(tool.project(call.arguments)),
            # Server-only: the connection the person is asked about (a page tool's is public).
            extra={HELD_CONNECTION: held} if held is not None and page is None else {},
        )

    approvable = True

    def split_answer(
        self, pending: PendingAsk, envelope: dict[str, Any]
    ) -> tuple[dict[str, Any], GrantScope, list[AskValidationError]]:
        """An approval's answer may carry ``content.scope`` (``once``, the default,
        ``conversation`` or ``always``) and ``content.arguments`` (the call's arguments as
        the person edited them, checked by `edit_errors`)."""
        content = envelope.get("content")
        if not isinstance(content, dict) or not ({"scope", "arguments"} & set(content)):
            return envelope, "once", []
        rest = {
            **envelope,
            "content": {k: v for k, v in content.items() if k not in ("scope", "arguments")},
        }
        if "scope" not in content:
            return rest, "once", []
        scope = content["scope"]
        errors: list[AskValidationError] = []
        for allowed in GRANT_SCOPES:
            if scope == allowed:
                return rest, allowed, errors
        invalid_enum(errors, "content.scope", scope, GRANT_SCOPES)
        return rest, "once", errors

    def edit_errors(
        self, agent: Agent, pending: PendingAsk, envelope: dict[str, Any]
    ) -> list[AskValidationError]:
        tool = agent.tools.get(pending.tool_name or "")
        if tool is None:
            return []
        return edit_errors(envelope, tool.input_schema, lambda a: _edit_problems(tool, a))

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held(run, pending)
        if held is None:
            return
        call, tool = held
        reason = denial_reason(answer.envelope)
        if reason is not None:
            await runner.deny(run, call, reason)
            return
        digest = pending.arguments_digest
        if digest is not None and digest != arguments_digest(tool.project(call.arguments)):
            await runner.tool_result(run, call, stale_approval_text(tool.name), is_error=True)
            return
        connection = run.agent.connection_of(tool.name)
        if not _same_connection(pending, connection) or _rules_grew(run.agent, pending, tool.name):
            # The person approved a call of another connection, or one that waited for
            # fewer approvers than the tool names now: it does not run on this approval.
            await runner.tool_result(run, call, changed_approval_text(tool.name), is_error=True)
            return
        user_id = run.principal.user_id
        # The grant is the person's answer about the tool, whatever they made of this call.
        if answer.scope == "conversation":
            await runner.store.grants.add(
                user_id,
                connection.connection_id,
                tool.name,
                "conversation",
                history_id=run.history.id,
            )
        elif answer.scope == "always":
            await runner.store.grants.add(user_id, connection.connection_id, tool.name, "always")
        edited = edited_arguments(answer.envelope)
        if edited is not None and edited not in (call.arguments, tool.project(call.arguments)):
            # Edit, then approve: the call runs once with the person's arguments; the model
            # reads that they changed them, and how.
            await runner.run_and_record(run, tool, call, edited=edited)
            return
        await runner.run_and_record(run, tool, call)


#: The stored key of the connection an approval's held call belongs to (server-only).
HELD_CONNECTION: Final = "heldConnectionId"


def _connection_id(agent: Agent, tool: Tool) -> str | None:
    """The id of the connection that holds `tool`, or None when none does."""
    try:
        return agent.connection_of(tool.name).connection_id
    except KeyError:
        return None


def _same_connection(pending: PendingAsk, connection: ToolSet) -> bool:
    """Whether the held call's tool is still the one of the connection the person was asked
    about (an ask stored before that was recorded counts as the same)."""
    asked = pending.connection_id or pending.extra.get(HELD_CONNECTION)
    return asked is None or asked == connection.connection_id


def _rules_grew(agent: Agent, pending: PendingAsk, tool_name: str) -> bool:
    """Whether the tool now names approvers (or a quorum) that the approval did not wait for:
    they were set after it was asked, and an approval without them runs nothing."""
    rules = agent.rules_for(tool_name)
    if not rules.approvers:
        return False
    waited = set(pending.approvers or ())
    return not set(rules.approvers) <= waited or rules.quorum > (pending.quorum or 1)


def _page_of(agent: Agent, tool: Tool) -> PageToolSet | None:
    """The page connection of a page tool, or None for any other tool."""
    try:
        connection = agent.connection_of(tool.name)
    except KeyError:
        return None
    return connection if isinstance(connection, PageToolSet) else None


#: `json.dumps` with these options, built once (it makes an encoder at each call otherwise).
_CANONICAL: Final = json_encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """The SHA-256 hex of the arguments as canonical JSON."""
    text = _CANONICAL(arguments)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stale_approval_text(tool_name: str) -> str:
    """The tool error of an approved call whose arguments changed since it was asked about."""
    return (
        f"The approval was for {tool_name} with other arguments: the connection's settings "
        "changed since the person was asked, so the call did not run. Call it again if it is "
        "still needed; the person will be asked about the call as it would run now."
    )


def changed_approval_text(tool_name: str) -> str:
    """The tool error of a held call whose connection (or approvers) changed since the person
    was asked about it."""
    return (
        f"The person answered about {tool_name} as its connection stood when they were asked: "
        "the connection was replaced, or its approvers changed, since then, so the call did not "
        "run. Call it again if it is still needed; it will be asked about as it stands now."
    )


def approval_input(agent: Agent, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The confirm input of an approval: the agent's ``approvals[tool](input)``, or the fallback
    wording when there is none, it raises, or it returns an input that is not a valid confirm."""
    make = agent.asks.approvals.get(tool.name) if agent.asks is not None else None
    if make is not None:
        try:
            made = make(dict(arguments))
        except Exception:
            log.warning(
                "the approval input of %s raised; using the default", tool.name, exc_info=True
            )
        else:
            if not validate_ask_input("confirm", made):
                return dict(made)
            log.warning(
                "the approval input of %s is not a valid confirm; using the default", tool.name
            )
    # Spoken to the person: the tool's title and what this call does with its arguments,
    # never the tool's description (text written for the model).
    phrase = values_phrase(arguments, tool.input_schema)
    label = tool_label(agent, tool)
    prompt = f"Allow {label}{phrase}?"
    return {
        "title": cut_text(label, 80),
        "prompt": cut_text(prompt, PROMPT_MAX),
        "confirmLabel": "Allow",
        "denyLabel": "Deny",
    }


class PermissionGate(Gate):
    """The permission level of a connection, asked the first time a conversation uses it."""

    origin = PERMISSION

    def ask(self, agent: Agent, connection: ToolSet, tool: Tool, call: ToolCall) -> PendingAsk:
        ask_id = f"permission_{new_id()}"
        choice = (
            page_permission_input(connection, tool)
            if isinstance(connection, PageToolSet)
            else permission_input(connection, tool, tool_label(agent, tool))
        )
        return PendingAsk(
            tool_call_id=ask_id,
            kind="choice",
            input=choice,
            simple=to_simple_card("choice", choice, ask_id),
            created=now_iso(),
            origin=PERMISSION,
            tool_name=tool.name,
            connection_id=connection.connection_id,
            held_tool_call_id=call.id,
        )

    def answer_errors(
        self, pending: PendingAsk, envelope: dict[str, Any], *, max_file_size_bytes: int
    ) -> list[AskValidationError]:
        errors = super().answer_errors(pending, envelope, max_file_size_bytes=max_file_size_bytes)
        if envelope.get("action") == "accept":
            selected = (envelope.get("content") or {}).get("selected")
            if (
                isinstance(selected, list)
                and len(selected) == 1
                and selected[0] not in PERMISSION_LEVELS
            ):
                add(
                    errors,
                    "content.selected[0]",
                    "OPTION_NOT_OFFERED",
                    "Not a level.",
                    "Pick a level.",
                )
        return errors

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held(run, pending)
        if held is None:
            return
        call, tool = held
        level = chosen_level(answer.envelope)
        if level is None:
            await runner.deny(run, call, denial_reason(answer.envelope) or "user_declined")
            return
        connection = run.agent.connection_of(tool.name)
        if not _same_connection(pending, connection):
            # The level was chosen for the connection the person was asked about.
            await runner.tool_result(run, call, changed_approval_text(tool.name), is_error=True)
            return
        await runner.store.permissions.set(run.principal.user_id, connection.connection_id, level)
        await runner.decided_call(run, tool, call)


def permission_input(connection: ToolSet, tool: Tool, label: str | None = None) -> dict[str, Any]:
    """The choice of a permission ask; `label` is the tool as the person reads it (its
    ``title``, see `tool_label`), its name by default."""
    name = connection.name
    return level_choice(
        cut_text(f"Allow {name} to use its tools?", 80),
        cut_text(
            f"{name} wants to use “{label or tool.name}”. What may {name}'s tools do in your "
            "conversations without asking you first?",
            PROMPT_MAX,
        ),
        PERMISSION_LABELS,
    )


class SelectionGate(Gate):
    """A choice among the candidates of an HTTP action's dependency."""

    origin = SELECTION

    def ask(
        self,
        binding: ActionBinding,
        call: ToolCall,
        needs: NeedsSelection,
        choices: Mapping[str, str],
    ) -> PendingAsk:
        ask_id = f"selection_{new_id()}"
        choice: dict[str, Any] = {
            **selection_words(binding, call, needs.dependency),
            "select": "one",
            "options": needs.choice_options()[:50],
            "allowDecline": True,
        }
        return PendingAsk(
            tool_call_id=ask_id,
            kind="choice",
            input=choice,
            simple=to_simple_card("choice", choice, ask_id),
            created=now_iso(),
            origin=SELECTION,
            # The name the model called (a saved connection's prefixed one): the agent's
            # tools, rules and the audit log know the action by it.
            tool_name=call.name,
            connection_id=binding.action_set.id,
            held_tool_call_id=call.id,
            dependency=needs.dependency,
            choices=dict(choices),
        )

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held_action(run, pending)
        if held is None:
            return
        call, binding = held
        call = as_edited(call, pending)
        chosen = chosen_option(answer.envelope)
        if chosen is None:
            await runner.deny(run, call, denial_reason(answer.envelope) or "user_declined")
            return
        choices = {**(pending.choices or {}), str(pending.dependency): chosen}
        await runner.action(run, call, binding, choices, edited=pending.edited_arguments)


def selection_words(binding: ActionBinding, call: ToolCall, dependency: str) -> dict[str, str]:
    """The ``title`` and ``prompt`` of a selection, in the person's words: what is being chosen
    (the fields the candidates decide, by their labels: "time"), for which action (its title)
    and with which values the call already gave ("Book a table on 2026-12-04")."""
    tool = binding.tool
    schema = tool.input_schema
    dep = tool.dependencies.get(dependency)
    decided: list[str] = []
    if dep is not None and dep.select is not None:
        decided = [str(path[-1]) for path in dep.select.match if path]
        decided += [name for name in dep.fills if name not in decided]
        decided = decided or list(dep.select.facts)
    what = what_is_chosen(decided, schema) or "option"
    given = {k: v for k, v in call.arguments.items() if k not in decided}
    doing = f"{tool.label}{values_phrase(given, schema)}"
    return {
        "title": cut_text(f"Choose a {what}", 80),
        "prompt": cut_text(f"Several fit. Which {what} for {doing}?", PROMPT_MAX),
    }


def confirmation_prompt(tool: ActionTool, preview: Mapping[str, Any]) -> str:
    """The prompt of a confirmation: the action's title followed by its preview, as a question
    ("Book a table on 2026-12-04 at 19:00, notes: A table for two?"), never its description."""
    return cut_text(f"{tool.label}{values_phrase(preview, tool.input_schema)}?", PROMPT_MAX)


class ConfirmationGate(Gate):
    """A confirm of one prepared HTTP request, sent once when confirmed before it expires."""

    origin = CONFIRMATION
    approvable = True

    def split_answer(
        self, pending: PendingAsk, envelope: dict[str, Any]
    ) -> tuple[dict[str, Any], GrantScope, list[AskValidationError]]:
        """A confirm may carry ``content.arguments``: the action's input as the person
        edited it, which prepares the request again (a new preview to confirm)."""
        content = envelope.get("content")
        if not isinstance(content, dict) or "arguments" not in content:
            return envelope, "once", []
        rest = {**envelope, "content": {k: v for k, v in content.items() if k != "arguments"}}
        return rest, "once", []

    def edit_errors(
        self, agent: Agent, pending: PendingAsk, envelope: dict[str, Any]
    ) -> list[AskValidationError]:
        tool = agent.tools.get(pending.tool_name or "")
        found = agent.actions.get(pending.tool_name or "")
        if tool is None or found is None:
            return []
        action = found[1]

        def problems(arguments: Any) -> list[str]:
            # The action's own input rule too (it refuses properties its schema does not
            # declare): an edit it would refuse is a 400, never a consumed confirmation.
            found = _edit_problems(tool, arguments)
            return [*found, *(p for p in check_action_input(action, arguments) if p not in found)]

        return edit_errors(envelope, tool.input_schema, problems)

    def ask(
        self,
        binding: ActionBinding,
        call: ToolCall,
        prepared: PreparedRequest,
        confirmation_id: str,
    ) -> PendingAsk:
        ask_id = f"confirmation_{confirmation_id}"
        tool = binding.tool
        confirm: dict[str, Any] = {
            "title": cut_text(tool.title or f"Confirm {tool.name}", 80),
            "prompt": confirmation_prompt(tool, prepared.preview),
            "confirmLabel": "Confirm",
            "denyLabel": "Cancel",
            "destructive": tool.effect == "destructive",
        }
        expires_at = iso(prepared.expires_at)
        return PendingAsk(
            tool_call_id=ask_id,
            kind="confirm",
            input=confirm,
            simple=confirmation_card(confirm, ask_id, expires_at=expires_at),
            created=now_iso(),
            origin=CONFIRMATION,
            tool_name=call.name,
            connection_id=binding.action_set.id,
            held_tool_call_id=call.id,
            confirmation_id=confirmation_id,
            preview=dict(prepared.preview),
            expires_at=expires_at,
        )

    async def before_answer(
        self, runner: StepRunner, pending: PendingAsk, envelope: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A confirm after ``expiresAt`` is refused, and the prepared request can never be
        sent; cancelling it is always taken."""
        if expired(pending) and denial_reason(envelope) is None:
            await runner.actions.expire(pending)
            raise ConfirmationExpired(
                "The prepared request expired before it was confirmed; nothing was sent. "
                "Cancel it, or ask the agent to prepare it again.",
                code="CONFIRMATION_STALE",
            )
        return None

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held_action(run, pending)
        if held is None:
            return
        model_call, binding = held
        call = as_edited(model_call, pending)
        reason = denial_reason(answer.envelope)
        if reason is not None:
            await runner.actions.cancel(pending, reason)
            await runner.deny(run, call, reason)
            return
        if _rules_grew(run.agent, pending, call.name):
            # Approvers were named for the action after it was asked: this confirmation,
            # which did not wait for them, sends nothing (a new call asks them).
            await runner.actions.cancel(pending, "changed")
            await runner.tool_result(run, call, changed_approval_text(call.name), is_error=True)
            return
        edited = edited_arguments(answer.envelope)
        if edited is not None and edited != call.arguments:
            # An edited confirmation is prepared again: a new request, preview and id to
            # confirm; this one is stale and never sent. Nothing edited is sent unseen.
            await runner.actions.cancel(pending, "edited")
            again = ToolCall(id=call.id, name=call.name, arguments=edited)
            step = await runner.actions.call(
                binding,
                runner.projected(run, again),
                history_id=run.history.id,
                user_id=run.principal.user_id,
            )
            if step.gate is not None:
                step = replace(step, gate=step.gate.replace(edited_arguments=edited))
            await runner.action_step(run, again, step)
            return
        if run.turn.stop_requested.is_set():
            # Stop came before the request was consumed: it is never sent.
            await runner.actions.cancel(pending, "stopped")
            await runner.deny(run, call, "stopped")
            return
        await runner.tool_progress(run, call)
        # Bound to the arguments as they run now: a changed managed argument makes it stale.
        step = await runner.actions.confirm(
            binding,
            runner.projected(run, call),
            pending,
            history_id=run.history.id,
            user_id=run.principal.user_id,
        )
        if pending.edited_arguments is not None and step.gate is None:
            step = replace(
                step, result=edit_note(model_call.arguments, call.arguments, step.result)
            )
        await runner.action_step(run, call, step)

    async def recover(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        """A confirmed request whose process stopped: still ``pending`` means it was never
        consumed, so it is sent now (once, if unexpired); ``consumed`` means it may have been
        sent: it is ``uncertain`` at once and never resent; a recorded outcome is reported."""
        record = (
            await runner.store.confirmations.get(pending.confirmation_id)
            if pending.confirmation_id
            else None
        )
        if record is None or record.state == "pending" or denial_reason(answer.envelope):
            await self.resolve(runner, run, pending, answer)
            return
        held = runner.held(run, pending)
        if held is None:
            return
        call = held[0]
        if record.state == "consumed":
            record = await runner.store.confirmations.abandon(record.id)
        if record.state in ("succeeded", "failed"):
            outcome = {
                "status": "completed" if record.state == "succeeded" else "error",
                "outcome": record.outcome,
                "confirmationId": record.id,
            }
            await runner.tool_result(run, call, outcome, is_error=record.state == "failed")
            return
        await runner.tool_result(run, call, uncertain_confirmation(record.id), is_error=True)

    async def cancelled(self, runner: StepRunner, pending: PendingAsk, reason: str) -> None:
        await runner.actions.cancel(pending, reason)


def as_edited(call: ToolCall, pending: PendingAsk) -> ToolCall:
    """The held call with the arguments the person edited (an action prepared again), or the
    model's call as it is."""
    if pending.edited_arguments is None:
        return call
    return ToolCall(id=call.id, name=call.name, arguments=dict(pending.edited_arguments))


def expired(pending: PendingAsk, now: dt.datetime | None = None) -> bool:
    """Whether a confirmation gate is past its ``expiresAt``."""
    if pending.origin != CONFIRMATION or not pending.expires_at:
        return False
    when = dt.datetime.fromisoformat(pending.expires_at.replace("Z", "+00:00"))
    return (now or utc_now()) >= when


MODEL_ASKS: Final = register_gate(ModelAskGate())
CLARIFY: Final = register_gate(ClarifyGate())
APPROVALS: Final = register_gate(ApprovalGate())
PERMISSIONS: Final = register_gate(PermissionGate())
SELECTIONS: Final = register_gate(SelectionGate())
CONFIRMATIONS: Final = register_gate(ConfirmationGate())
