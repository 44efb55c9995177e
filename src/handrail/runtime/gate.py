"""The gate model: every way a turn pauses for a person is one `Gate` class in one table.

A gate makes its pending ask, checks an answer's extra rules, and turns the answer into what
the model sees. The model's own asks, clarify, approvals, permission asks, selections and
confirmations are the built-in gates (`handrail.runtime.gates`); a new one is one more class:

    class Review(Gate):
        origin = "review"

        async def resolve(self, runner, run, pending, answer):
            call = runner.held_call(run, pending)
            await runner.tool_result(run, call, {"reviewed": answer.envelope}, is_error=False)

    register_gate(Review())

and a tool raises `GateRequired` (``origin="review"``) to pause on it. The step runner looks
gates up with `gate_for`; it never branches on an origin itself.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

from .._util import new_id, now_iso
from ..asks import (
    AskValidationError,
    PendingAsk,
    to_simple_card,
    validate_ask_response,
)
from ..errors import ConfigError
from ..policy import GrantScope
from .messages import FilePart, ToolCall
from .rows import Row, result_row
from .tools import Tool, ToolSignal

if TYPE_CHECKING:
    from .agent import Agent
    from .steps import StepRunner, TurnRun

__all__ = [
    "MODEL_ASK",
    "Answer",
    "Gate",
    "GateRequired",
    "execution_denied",
    "gate_for",
    "gate_key",
    "queued_asks",
    "queued_denials",
    "register_gate",
    "registered_gates",
    "safe_to_run_again",
    "stopped_result",
    "uncertain_confirmation",
    "uncertain_result",
    "unregister_gate",
]

#: The table key of the model's own asks (``ask_<kind>`` calls), which have no origin.
MODEL_ASK: Final = "ask"


def execution_denied(reason: str) -> dict[str, str]:
    """What the model gets as the result of a tool call the person did not allow."""
    return {"type": "execution-denied", "reason": reason}


def stopped_result(tool_name: str, *, safe: bool) -> dict[str, Any]:
    """The result of a call that was running when the person pressed Stop: a read-only or
    idempotent one simply did not finish; any other may or may not have taken effect."""
    if safe:
        return {
            "status": "error",
            "code": "TOOL_STOPPED",
            "message": f"The person pressed Stop while {tool_name} ran; it did not finish.",
        }
    return {
        "status": "error",
        "code": "TOOL_EXECUTION_UNCERTAIN",
        "message": (
            f"The person pressed Stop while {tool_name} ran, so it may or may not have taken "
            "effect. It was not run again. Check whether it took effect before you call it "
            "again, or ask the user."
        ),
    }


def safe_to_run_again(agent: Agent, tool: Tool) -> bool:
    """Whether a held call whose outcome is unknown (taken over after a crash, stopped while it
    ran) may simply run again: its hints say it is read-only or idempotent, and its connection
    is trusted (an untrusted server's hints make nothing looser, so its call is reported
    uncertain instead)."""
    try:
        trusted = agent.connection_of(tool.name).trusted
    except KeyError:
        trusted = False
    return trusted and (tool.hints.read_only is True or tool.hints.idempotent is True)


def uncertain_result(tool_name: str, **extra: Any) -> dict[str, Any]:
    """The result of an approved call whose process stopped before its outcome was recorded:
    it may or may not have run, and it is not run again by itself."""
    return {
        "status": "error",
        "code": "TOOL_EXECUTION_UNCERTAIN",
        "message": (
            f"The approved call of {tool_name} may or may not have run: the server stopped "
            "before it recorded the outcome. It was not run again. Check whether it took "
            "effect before you call it again, or ask the user."
        ),
        **extra,
    }


def uncertain_confirmation(
    confirmation_id: str,
    why: str = "the server stopped between sending it and recording the answer",
) -> dict[str, Any]:
    """The result of a confirmed request that may or may not have been sent."""
    return {
        "status": "error",
        "code": "TOOL_EXECUTION_UNCERTAIN",
        "message": (
            f"The confirmed request may or may not have been carried out: {why}. Check its "
            "status with the API before trying again; it was not resent."
        ),
        "confirmationId": confirmation_id,
    }


@dataclass(frozen=True, kw_only=True)
class Answer:
    """A validated answer to a pending ask: the envelope as stored (file bytes replaced by
    names and sizes), the grant scope it asked for, and the files to show the model."""

    envelope: dict[str, Any]
    scope: GrantScope = "once"
    parts: tuple[FilePart, ...] = ()

    @property
    def action(self) -> str:
        return str(self.envelope["action"])


class GateRequired(ToolSignal):
    """Raised by tool code to pause the turn on the gate registered as `origin`: the gate
    holds the call, and its `resolve` decides what the model gets once the person answers.

    `kind` and `input` are the ask (validated as any ask of that kind); `state` is kept on
    the pending ask for the gate (in its ``extra``) and must be JSON.
    """

    def __init__(
        self,
        origin: str,
        *,
        kind: str,
        input: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"the tool call waits on a {origin} gate")
        self.origin = origin
        self.kind = kind
        self.input = dict(input)
        self.state = dict(state or {})


class Gate(abc.ABC):
    """One kind of pause. Subclasses set `origin` (the pending ask's ``origin``; the model's
    asks use `MODEL_ASK`) and override what differs. The defaults fit a gate that holds a tool
    call: the answer is validated as an ask of its kind, a cancelled ask denies the held call.
    """

    origin: ClassVar[str]
    #: Whether the ask holds a tool call of the model (named by ``heldToolCallId``).
    holds_call: ClassVar[bool] = True
    #: Whether it approves the held call: then a tool's approvers and quorum apply to it, and
    #: an approval may carry edited arguments (``content.arguments``).
    approvable: ClassVar[bool] = False
    #: Whether a tool's `GateRequired` that comes while another ask holds the turn's one slot
    #: waits in line for it (kept on the pending ask's ``queued``, becoming the pending ask
    #: once the slot is free) instead of being denied ``one_ask_at_a_time``.
    waits_in_line: ClassVar[bool] = False

    def make(
        self, call: ToolCall, *, tool_name: str, kind: str, input: dict[str, Any], **state: Any
    ) -> PendingAsk:
        """The pending ask that holds `call` (for `GateRequired` and simple gates)."""
        ask_id = f"{self.origin}_{new_id()}"
        return PendingAsk(
            tool_call_id=ask_id,
            kind=kind,
            input=input,
            simple=to_simple_card(kind, input, ask_id),
            created=now_iso(),
            origin=self.origin,
            tool_name=tool_name,
            held_tool_call_id=call.id,
            extra=dict(state),
        )

    def tool_name(self, pending: PendingAsk) -> str:
        """The tool name of the ask's rows."""
        return pending.tool_name or f"ask_{pending.kind}"

    def split_answer(
        self, pending: PendingAsk, envelope: dict[str, Any]
    ) -> tuple[dict[str, Any], GrantScope, list[AskValidationError]]:
        """Take the gate's own answer fields out of `envelope` before the kind's rules see it:
        the rest, the grant scope, and errors in those fields. Default: nothing to take."""
        return envelope, "once", []

    def answer_errors(
        self, pending: PendingAsk, envelope: dict[str, Any], *, max_file_size_bytes: int
    ) -> list[AskValidationError]:
        """Every error of an answer: the gate's own fields, then the kind's rules."""
        rest, _scope, errors = self.split_answer(pending, envelope)
        return errors + validate_ask_response(
            pending.kind, pending.input, rest, max_file_size_bytes=max_file_size_bytes
        )

    def edit_errors(
        self, agent: Agent, pending: PendingAsk, envelope: dict[str, Any]
    ) -> list[AskValidationError]:
        """Errors of what the answer changes in the held call (its edited arguments), checked
        against the agent's tool. Default: a gate takes no edits."""
        return []

    async def before_answer(
        self, runner: StepRunner, pending: PendingAsk, envelope: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Refuse a valid answer that cannot be taken now (raise a `DomainError`), before
        anything is written; or return the answer to record in its place (a cancel, when
        what the ask holds is gone). Default: take it (None)."""
        return None

    @abc.abstractmethod
    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        """Carry out the answer: add what the model sees to `run` (and maybe pause again).
        Every gate says this itself."""

    async def recover(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        """Carry out the answer in a turn taken over from a process that stopped after the
        answer was committed. Default: `resolve` again (the held call, if any, is reported
        uncertain rather than run twice, unless it is safe to run again)."""
        await self.resolve(runner, run, pending, answer)

    async def cancelled(self, runner: StepRunner, pending: PendingAsk, reason: str) -> None:
        """The ask was cancelled (a new message, a failed turn): release what it holds.
        Default: it holds nothing."""
        return

    def held_elsewhere(self, pending: PendingAsk) -> str | None:
        """The key of what the ask holds that lives in one process only, when that process
        is not this one (a legacy MCP call parked in another): its answer is forwarded to
        that process if one still holds it (`handrail.runtime.forwarding`). Default: None
        (any process carries an answer out)."""
        return None

    def holds_here(self, key: str) -> bool:
        """Whether this process holds what `held_elsewhere` named by `key`. Default: no."""
        return False

    def release_here(self, key: str) -> None:
        """Release what this process holds under `key` (its ask was cancelled in another
        process). Default: nothing."""
        return

    def denial_rows(self, pending: PendingAsk, reason: str) -> list[Row]:
        """The rows that tell the model the held call did not run, when the ask is cancelled."""
        if not self.holds_call or not pending.held_tool_call_id:
            return []
        return [
            result_row(
                pending.held_tool_call_id,
                self.tool_name(pending),
                execution_denied(reason),
                is_error=True,
            )
        ]


def queued_asks(pending: PendingAsk | None) -> list[PendingAsk]:
    """The gate asks waiting in line behind `pending` (its ``queued``), in order."""
    if pending is None or not pending.queued:
        return []
    return [PendingAsk.from_json(q) for q in pending.queued]


def queued_denials(queued: list[PendingAsk], reason: str) -> list[Row]:
    """The rows that tell the model the calls held by asks still in line did not finish
    (their asks were dropped with the one they waited behind)."""
    return [row for q in queued for row in gate_for(q).denial_rows(q, reason)]


@dataclass
class _Registry:
    gates: dict[str, Gate] = field(default_factory=dict)


_REGISTRY: Final = _Registry()


def gate_key(pending: PendingAsk) -> str:
    """The table key of a pending ask: its origin, ``clarify`` for clarify, else `MODEL_ASK`."""
    if pending.origin:
        return pending.origin
    return "clarify" if pending.kind == "clarify" else MODEL_ASK


G = TypeVar("G", bound=Gate)


def register_gate(gate: G, *, replace: bool = False) -> G:
    """Add `gate` to the table under its `origin`. A second gate for an origin is a
    `ConfigError` unless `replace`."""
    origin = getattr(type(gate), "origin", None)
    if not isinstance(origin, str) or not origin:
        raise ConfigError(f"{type(gate).__name__} has no origin; set the class attribute.")
    if origin in _REGISTRY.gates and not replace:
        raise ConfigError(f"a gate is already registered for origin {origin!r}")
    _REGISTRY.gates[origin] = gate
    return gate


def unregister_gate(origin: str) -> None:
    """Remove the gate of `origin` (tests that register their own)."""
    _REGISTRY.gates.pop(origin, None)


def registered_gates() -> dict[str, Gate]:
    """The table, by origin."""
    return dict(_REGISTRY.gates)


def gate_for(pending: PendingAsk | str) -> Gate:
    """The gate of a pending ask (or of an origin). An unknown origin is a `ConfigError`:
    a stored ask whose gate is not registered in this process cannot be answered here."""
    key = pending if isinstance(pending, str) else gate_key(pending)
    try:
        return _REGISTRY.gates[key]
    except KeyError:
        raise ConfigError(f"no gate is registered for origin {key!r}") from None
