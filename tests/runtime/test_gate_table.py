"""The gate table: every origin is one registered class, and a new gate is one more class.

A test gate (``review``) is registered here and answered end to end, through the same runtime,
store and answer path as the built-in gates, without touching ``steps.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from handrail.asks import PendingAsk
from handrail.asks.checks import add
from handrail.errors import ConfigError, InvalidAnswer
from handrail.runtime import gates as builtin
from handrail.runtime.agent import Agent
from handrail.runtime.gate import (
    MODEL_ASK,
    Answer,
    Gate,
    GateRequired,
    gate_for,
    register_gate,
    registered_gates,
    unregister_gate,
)
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.steps import StepRunner, TurnRun
from handrail.runtime.turn import Principal
from handrail.store import Store

ALICE = Principal(user_id="alice")


class ReviewGate(Gate):
    """A gate a tool asks for: the person reviews a draft; the model gets the verdict."""

    origin = "review"

    def answer_errors(
        self, pending: PendingAsk, envelope: dict[str, Any], *, max_file_size_bytes: int
    ) -> list[Any]:
        errors = super().answer_errors(pending, envelope, max_file_size_bytes=max_file_size_bytes)
        if envelope.get("action") == "cancel" and not envelope.get("reason"):
            add(errors, "reason", "MISSING_REQUIRED", "A dropped review says why.", "Add a reason.")
        return errors

    async def resolve(
        self, runner: StepRunner, run: TurnRun, pending: PendingAsk, answer: Answer
    ) -> None:
        held = runner.held(run, pending)
        assert held is not None
        call, _tool = held
        verdict = "approved" if answer.envelope.get("content", {}).get("confirmed") else "rejected"
        await runner.tool_result(
            run, call, {"verdict": verdict, "draft": pending.extra["draft"]}, is_error=False
        )


@pytest.fixture
def review_gate() -> Iterator[ReviewGate]:
    gate = register_gate(ReviewGate())
    yield gate
    unregister_gate("review")


def publisher() -> Agent:
    agent = Agent("publisher", instructions="Publish drafts.")

    @agent.tool(read_only=True)
    def publish(draft: str) -> str:
        """Publish a draft after a review."""
        raise GateRequired(
            "review",
            kind="confirm",
            input={"prompt": f"Publish {draft!r}?", "confirmLabel": "Publish"},
            state={"draft": draft},
        )

    return agent


def test_every_origin_has_one_gate_class() -> None:
    table = registered_gates()
    assert {origin: type(gate).__name__ for origin, gate in table.items()} == {
        MODEL_ASK: "ModelAskGate",
        "clarify": "ClarifyGate",
        "approval": "ApprovalGate",
        "permission": "PermissionGate",
        "selection": "SelectionGate",
        "confirmation": "ConfirmationGate",
        "page-tool": "PageToolGate",
        "elicitation": "ElicitationGate",
    }
    assert gate_for("approval") is builtin.APPROVALS
    with pytest.raises(ConfigError, match="already registered"):
        register_gate(builtin.ApprovalGate())
    with pytest.raises(ConfigError, match="no gate is registered"):
        gate_for("nothing-here")


def test_pending_ask_json_round_trips_unknown_keys() -> None:
    stored = {
        "toolCallId": "review_1",
        "kind": "confirm",
        "input": {"prompt": "Go?"},
        "simple": {"kind": "confirm"},
        "origin": "review",
        "heldToolCallId": "call_1",
        "draft": "Hello",
        "promptIndex": 3,
    }
    pending = PendingAsk.from_json(stored)
    assert pending.to_json() == stored
    assert pending.extra == {"draft": "Hello"}
    assert "draft" not in pending.public("view")
    assert "promptIndex" not in pending.public("event")
    assert pending.public("turn") == {
        "toolCallId": "review_1",
        "kind": "confirm",
        "simple": {"kind": "confirm"},
    }


async def test_a_registered_gate_is_asked_and_answered_end_to_end(
    store: Store, review_gate: ReviewGate
) -> None:
    await store.permissions.set(ALICE.user_id, "local:publisher", "read-only")
    runtime = Runtime(store=store, agents=publisher(), model=ScriptedModel())
    command = "call publish " + json.dumps({"draft": "Spring notes"})
    turn = await runtime.start_prompt(ALICE, command)
    events = [e async for e in turn.stream()]
    ask = next(e["ask"] for e in events if "ask" in e)
    assert ask["origin"] == "review"
    assert ask["toolName"] == "publish"
    assert ask["input"]["prompt"] == "Publish 'Spring notes'?"
    held = next(e["toolCall"]["toolCallId"] for e in events if "toolCall" in e)
    assert ask["heldToolCallId"] == held
    history = await store.histories.get(turn.history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert history.pending_ask.extra == {"draft": "Spring notes"}

    # The gate's own rule: a cancel without a reason is refused, and the ask stays pending.
    with pytest.raises(InvalidAnswer) as caught:
        await runtime.start_answer(
            ALICE, turn.history_id, {"toolCallId": ask["toolCallId"], "action": "cancel"}
        )
    assert [f["code"] for f in caught.value.fields or []] == ["MISSING_REQUIRED"]
    still = await store.histories.get(turn.history_id)
    assert still is not None
    assert still.pending_ask == history.pending_ask

    answered = await runtime.start_answer(
        ALICE,
        turn.history_id,
        {"toolCallId": ask["toolCallId"], "action": "accept", "content": {"confirmed": True}},
    )
    result = await answered.result()
    assert result.text == 'publish returned: {"verdict":"approved","draft":"Spring notes"}'
    history = await store.histories.get(turn.history_id)
    assert history is not None
    assert history.pending_ask is None
    # A gate registered from outside is audited like every built-in one, with no special case.
    audit = await store.audit.for_history(turn.history_id)
    assert [(r.action, r.actor, r.tool) for r in audit] == [
        ("gate.asked", "agent:publisher", "publish"),
        ("gate.approved", "alice", "publish"),
        ("gate.outcome", "agent:publisher", "publish"),
    ]
    assert audit[0].changes["origin"] == "review"
    assert audit[1].changes["via"] == "headless"
    assert audit[2].changes["status"] == "succeeded"
    await runtime.aclose()


async def test_a_new_message_cancels_the_gate_and_denies_the_held_call(
    store: Store, review_gate: ReviewGate
) -> None:
    await store.permissions.set(ALICE.user_id, "local:publisher", "read-only")
    runtime = Runtime(store=store, agents=publisher(), model=ScriptedModel())
    turn = await runtime.start_prompt(ALICE, "call publish " + json.dumps({"draft": "A"}))
    await turn.result()
    again = await runtime.start_prompt(ALICE, "never mind", history_id=turn.history_id)
    events = [e async for e in again.stream()]
    assert events[0] == {
        "askResolved": {"toolCallId": events[0]["askResolved"]["toolCallId"], "action": "cancel"}
    }
    rows = [r.data for r in await store.histories.rows(turn.history_id)]
    denied = [r for r in rows if r.get("type") == "tool-result" and r.get("isError")]
    assert denied[0]["result"] == {"type": "execution-denied", "reason": "user_sent_message"}
    await runtime.aclose()
