"""The runtime: agents and their tools, turns that pause on a person's answer and resume, the
gate table every pause goes through, and the model interface.

The public nouns are re-exported here; the model adapters live in `handrail.runtime.models`.
"""

from .agent import Agent, AsksOptions
from .cas import compare_and_set
from .elicitation import ElicitationGate
from .gate import (
    Answer,
    Gate,
    GateRequired,
    execution_denied,
    gate_for,
    register_gate,
    registered_gates,
    unregister_gate,
)
from .gates import (
    ApprovalGate,
    ClarifyGate,
    ConfirmationGate,
    ModelAskGate,
    PermissionGate,
    SelectionGate,
)
from .runtime import Runtime
from .steps import StepRunner, TurnRun
from .tools import InvalidArguments, Tool, ToolError, ToolSet, ToolSignal, tool
from .turn import Principal, Turn, TurnResult

__all__ = [
    "Agent",
    "Answer",
    "ApprovalGate",
    "AsksOptions",
    "ClarifyGate",
    "ConfirmationGate",
    "ElicitationGate",
    "Gate",
    "GateRequired",
    "InvalidArguments",
    "ModelAskGate",
    "PermissionGate",
    "Principal",
    "Runtime",
    "SelectionGate",
    "StepRunner",
    "Tool",
    "ToolError",
    "ToolSet",
    "ToolSignal",
    "Turn",
    "TurnResult",
    "TurnRun",
    "compare_and_set",
    "execution_denied",
    "gate_for",
    "register_gate",
    "registered_gates",
    "tool",
    "unregister_gate",
]
