"""MCP elicitation as a gate: a connection's server asks the person for input during a tool call,
the call pauses on an ask (``origin: "elicitation"``), and the answer goes back to the server.

`call_mcp_tool` runs (or goes on with) one call of a connection's tool: a request for input it
can show becomes `GateRequired` with the ask (`handrail.connections.elicitation.to_ask`) and the
state to go on with, kept on the pending ask: for a 2026-07-28 server the call's rounds and its
``requestState`` (byte-exact), so any process answers it; for a legacy server the id of the call
parked in this process; for a call the server refused with -32042 until pages are opened (a
URL-required round, `handrail.connections.mcp_rounds`) those URLs, each a consent ask in turn,
the call sent again once all are consented to (any process can). A request no ask can show is
declined to the server, and the model reads why.

`ElicitationGate` turns the answer into the server's `ElicitResult` and goes on with the call,
which may ask again (the next question follows the first). A legacy call's answer that reaches
another live process is forwarded to the one holding the call (`handrail.runtime.forwarding`);
when no process holds it any more the ask is cancelled with ``server_restarted``, and the model
reads that it should call the tool again.

Only one ask at a time: a request that comes while another ask holds the turn's one slot (the
model asked something in the same step, another call paused on an approval or another
elicitation) waits in line (`Gate.waits_in_line`): the call stays open (legacy) or its
``input_required`` round is kept (2026-07-28), its timeout stopped, and its ask is stored on
the pending ask's ``queued``. Once the ask before it is answered and the turn goes on, it
becomes the pending ask, before the model is called again. When the ask before it is cancelled
instead (a new message, Stop) or the turn fails, it is dropped with it: the server hears
``cancel`` (legacy) and the model reads that the call did not finish.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .._util import iso, new_id, utc_now
from ..asks import AskValidationError, PendingAsk, to_simple_card
from ..asks.limits import CARD_TEXT_MAX
from ..asks.text import cut_text, utf16_len
from ..connections.elicitation import (
    ELICITATION_ORIGIN,
    ElicitationForm,
    Unshowable,
    elicit_result,
    to_ask,
)
from ..connections.elicitation import answer_errors as form_answer_errors
from ..connections.mcp_client import (
    CallOutcome,
    ElicitationNeeded,
    McpCallFailed,
    McpLink,
    ParkedCallGone,
    parked_here,
    release_parked,
)
from .gate import (
    Answer,
    Gate,
    GateRequired,
    register_gate,
    safe_to_run_again,
    uncertain_result,
)
from .messages import FilePart, ToolCall
from .tools import ToolError, ToolOutput

if TYPE_CHECKING:
    from .steps import StepRunner, TurnRun

__all__ = [
    "ELICITATIONS",
    "SERVER_RESTARTED",
    "ElicitationGate",
    "call_mcp_tool",
    "server_restarted_text",
]

#: The cancel reason of an answer whose legacy call's process is gone.
SERVER_RESTARTED: Final = "server_restarted"
#: How many requests no ask can show one call may make before it is given up.
UNSHOWABLE_MAX: Final = 3


def server_restarted_text(tool: str, server: str) -> str:
    """What the model reads when a legacy call's process is gone before the answer came."""
    return (
        f"The call of {tool} waited for the user's answer to a question from {server}, but the "
        "answer reached a server process that does not hold the call (the one that made it "
        "restarted, or another one took the answer), so the call did not finish and the "
        "question was cancelled. Call the tool again to ask once more."
    )


async def call_mcp_tool(
    link: McpLink,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    connection_id: str,
    resume: Mapping[str, Any] | None = None,
    answer: Mapping[str, Any] | None = None,
) -> Any:
    """Call `tool` (or go on with it after an answer): its content for the model; a
    `ToolError` the model reads; or `GateRequired` to ask the person."""
    declined: list[str] = []
    try:
        try:
            if resume is None:
                outcome = await link.call(tool, arguments)
            else:
                outcome = await link.resume(tool, arguments, resume, answer or {})
        except ElicitationNeeded as needed:
            outcome = await _asked(link, tool, arguments, needed, declined, connection_id)
    except McpCallFailed as exc:
        raise ToolError(str(exc)) from None
    except ParkedCallGone:
        raise ToolError(server_restarted_text(tool, link.name)) from None
    if declined:
        said = outcome.error_text if outcome.is_error else _text(outcome.content)
        raise ToolError(
            f"{link.name} asked the user for input that handrail cannot show as a form "
            f"({'; '.join(declined)}), so it was declined and the user saw nothing. The tool "
            f"then answered: {said}"
        )
    if outcome.is_error:
        raise ToolError(outcome.error_text)
    if outcome.files:
        # The result's images: shown to the model with it, never stored.
        parts = tuple(
            FilePart(filename=f.filename, mime_type=f.mime_type, data=f.data) for f in outcome.files
        )
        return ToolOutput(content=outcome.content, parts=parts)
    return outcome.content


async def _asked(
    link: McpLink,
    tool: str,
    arguments: Mapping[str, Any],
    needed: ElicitationNeeded,
    declined: list[str],
    connection_id: str,
) -> CallOutcome:
    """A request for input: ask the person (`GateRequired`), or decline one no ask can show
    and go on (bounded: a server that keeps asking so is given up)."""
    while True:
        asked = to_ask(needed.request)
        if not isinstance(asked, Unshowable):
            raise GateRequired(
                ELICITATION_ORIGIN,
                kind=asked.kind,
                input=asked.input,
                state={
                    "connectionId": connection_id,
                    "elicitation": asked.public,
                    "elicitationForm": asked.form.to_json(),
                    "mcp": needed.resume,
                },
            )
        declined.append(asked.reason)
        if len(declined) > UNSHOWABLE_MAX:
            raise ToolError(
                f"{link.name} kept asking the user for input that handrail cannot show as a "
                f"form ({'; '.join(declined)}), so the call was given up. Tell the user."
            )
        try:
            return await link.resume(tool, arguments, needed.resume, {"action": "decline"})
        except ElicitationNeeded as again:
            needed = again


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return CallOutcome(content=content).error_text


def _card(kind: str, input: Any, ask_id: str, public: Any) -> dict[str, Any]:
    """The simple card of an elicitation. A URL request's text is the server's message and the
    whole URL (its title names the server); when the two do not fit the card, the text is cut,
    the card offers only the decline button and hands off: a small screen never consents to a
    page it cannot show."""
    card = to_simple_card(kind, input, ask_id)
    url = public.get("url") if isinstance(public, Mapping) and public.get("mode") == "url" else None
    if not isinstance(url, str) or not url:
        return card
    raw = input.get("prompt") if isinstance(input, Mapping) else None
    prompt = raw if isinstance(raw, str) else ""
    whole = f"{prompt} {url}".strip()
    if utf16_len(whole) <= CARD_TEXT_MAX:
        card["text"] = whole
        return card
    card["text"] = cut_text(prompt, CARD_TEXT_MAX) or "Open it in the app."
    card["buttons"] = [b for b in card["buttons"] if b["id"] == "deny"]
    card["handoff"] = True
    return card


class ElicitationGate(Gate):
    """An MCP server's request for input during a tool call (see the module's docs)."""

    origin = ELICITATION_ORIGIN
    #: A request that comes while another ask holds the slot waits for it (see the module).
    waits_in_line = True

    def make(
        self, call: ToolCall, *, tool_name: str, kind: str, input: dict[str, Any], **state: Any
    ) -> PendingAsk:
        ask_id = f"{self.origin}_{new_id()}"
        extra = dict(state)
        connection_id = extra.pop("connectionId", None)
        public = extra.pop("elicitation", None)
        return PendingAsk(
            tool_call_id=ask_id,
            kind=kind,
            input=input,
            simple=_card(kind, input, ask_id, public),
            created=iso(utc_now()),
            origin=self.origin,
            tool_name=tool_name,
            connection_id=connection_id,
            held_tool_call_id=call.id,
            elicitation=public,
            extra=extra,
        )

    def answer_errors(
        self, pending: PendingAsk, envelope: dict[str, Any], *, max_file_size_bytes: int
    ) -> list[AskValidationError]:
        errors = super().answer_errors(pending, envelope, max_file_size_bytes=max_file_size_bytes)
        return errors or form_answer_errors(_form(pending), envelope)

    async def before_answer(
        self, runner: StepRunner, pending: PendingAsk, envelope: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A legacy call is parked in the process that made it: when no live process holds it
        (it restarted, or stopped; one that does gets the answer forwarded, see
        `handrail.runtime.forwarding`), the answer cannot reach the server, and the ask is
        cancelled with ``server_restarted`` instead."""
        if parked_here(_resume(pending)):
            return None
        return {"action": "cancel", "reason": SERVER_RESTARTED}

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held(run, pending)
        if held is None:
            return
        call, tool = held
        server = str((pending.elicitation or {}).get("server") or tool.name)
        resume_with = getattr(tool, "resume", None)
        envelope = answer.envelope
        if envelope.get("action") == "cancel" and envelope.get("reason") == SERVER_RESTARTED:
            text = server_restarted_text(tool.name, server)
            await runner.tool_result(run, call, text, is_error=True)
            return
        if resume_with is None:
            await runner.tool_result(
                run, call, server_restarted_text(tool.name, server), is_error=True
            )
            return
        form = _form(pending)
        reply = elicit_result(form, envelope)
        state = _resume(pending)
        if reply["action"] == "accept" and form.later:
            # The next of the consecutive forms of one request: the server hears once all are.
            page, rest = form.next_form(reply.get("content") or {})
            runner.pause(
                run,
                self.make(
                    call,
                    tool_name=tool.name,
                    kind="form",
                    input=page,
                    connectionId=pending.connection_id,
                    elicitation=pending.elicitation,
                    elicitationForm=rest.to_json(),
                    mcp=state,
                ),
            )
            return
        await runner.continue_call(
            run, tool, call, lambda: resume_with(call.arguments, state, reply)
        )

    async def recover(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        """A turn taken over after the answer was committed: a legacy call died with its
        process; a 2026-07-28 or URL-required call is sent again only when the tool is safe
        to run again (its hints say read-only or idempotent, and its connection is trusted:
        an untrusted server's hints never make a call safe), else it is reported
        uncertain."""
        held = runner.held(run, pending)
        if held is None:
            return
        call, tool = held
        server = str((pending.elicitation or {}).get("server") or tool.name)
        if _resume(pending).get("protocol") == "legacy":
            text = server_restarted_text(tool.name, server)
            await runner.tool_result(run, call, text, is_error=True)
            return
        if safe_to_run_again(run.agent, tool):
            await self.resolve(runner, run, pending, answer)
            return
        await runner.tool_result(run, call, uncertain_result(tool.name), is_error=True)

    async def cancelled(self, runner: StepRunner, pending: PendingAsk, reason: str) -> None:
        """The ask was cancelled: a legacy call parked here hears ``cancel``."""
        release_parked(_resume(pending))

    def held_elsewhere(self, pending: PendingAsk) -> str | None:
        """A legacy call not parked in this process: the key of its parked call."""
        state = _resume(pending)
        if state.get("protocol") != "legacy" or not state.get("parked") or parked_here(state):
            return None
        return str(state["parked"])

    def holds_here(self, key: str) -> bool:
        return parked_here({"protocol": "legacy", "parked": key})

    def release_here(self, key: str) -> None:
        release_parked({"protocol": "legacy", "parked": key})


def _form(pending: PendingAsk) -> ElicitationForm:
    return ElicitationForm.from_json(pending.extra.get("elicitationForm") or {})


def _resume(pending: PendingAsk) -> dict[str, Any]:
    state = pending.extra.get("mcp")
    return dict(state) if isinstance(state, Mapping) else {}


ELICITATIONS: Final = register_gate(ElicitationGate())
