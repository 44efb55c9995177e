"""The environment of a program handrail starts: a stdio MCP server, a ``process`` adapter.

Neither gets the server's own environment, which holds secrets it did not ask for
(``HANDRAIL_SECRET_KEY``, provider API keys, the SMTP password...): only the few variables the
MCP SDK deems safe to inherit (`mcp.client.stdio.get_default_environment`: ``HOME``, ``PATH``,
``USER``, ``SHELL``, ``TERM``, ``LOGNAME`` on POSIX), then the program's own configured ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.client.stdio import get_default_environment

__all__ = ["child_environment"]


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The MCP SDK's default environment, then `env` (which wins)."""
    return get_default_environment() | dict(env or {})
