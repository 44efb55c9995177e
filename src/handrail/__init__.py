"""handrail: put a person in the loop of an AI agent's tool calls.

The core nouns are here; specialist pieces stay in their subpackages (`handrail.asks` for the
ask protocol, `handrail.store`, `handrail.runtime.models`, `handrail.server`).
"""

from .errors import ConfigError, HandrailError, ProblemError
from .runtime.agent import Agent, AsksOptions, Tool, ToolError
from .runtime.runtime import Runtime
from .runtime.turn import Principal, Turn, TurnResult
from .store import Store

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AsksOptions",
    "ConfigError",
    "HandrailError",
    "Principal",
    "ProblemError",
    "Runtime",
    "Store",
    "Tool",
    "ToolError",
    "Turn",
    "TurnResult",
    "__version__",
]
