"""handrail: put a person in the loop of an AI agent's tool calls."""

__version__ = "0.1.0"

__all__ = ["__version__"]
