"""handrail: put a person in the loop of an AI agent's tool calls.

The core nouns are here; specialist pieces stay in their subpackages (`handrail.asks` for the
ask protocol, `handrail.store`, `handrail.runtime.models`, `handrail.server`).
"""

from ._version import __version__
from .asks import PendingAsk
from .errors import ConfigError, DomainError, HandrailError, ProblemError
from .runtime import (
    Agent,
    AsksOptions,
    Gate,
    GateRequired,
    Principal,
    Runtime,
    Tool,
    ToolError,
    ToolSet,
    Turn,
    TurnResult,
)
from .store import Store

__all__ = [
    "Agent",
    "AsksOptions",
    "ConfigError",
    "DomainError",
    "Gate",
    "GateRequired",
    "HandrailError",
    "PendingAsk",
    "Principal",
    "ProblemError",
    "Runtime",
    "Store",
    "Tool",
    "ToolError",
    "ToolSet",
    "Turn",
    "TurnResult",
    "__version__",
]
