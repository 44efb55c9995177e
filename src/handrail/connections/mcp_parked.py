"""Legacy MCP calls parked in this process: a call whose server asked for input (elicitation)
goes on in a task while its question waits for a person's answer. Only this process can answer
it (`parked_here`); another process forwards the answer here (`runtime/forwarding.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types

from ..errors import HandrailError

if TYPE_CHECKING:
    from .mcp_client import McpLink

__all__ = [
    "PARKED",
    "PARK_MAX",
    "Parked",
    "ParkedCallGone",
    "drop_result",
    "parked_here",
    "release_parked",
]

#: The longest a legacy call waits, parked, for a person's answer before it is cancelled.
PARK_MAX: Final = 24 * 3600.0
#: Every legacy call parked in this process, by id, with its link.
PARKED: Final[dict[str, McpLink]] = {}


def parked_here(resume: Mapping[str, Any]) -> bool:
    """Whether the call of `resume` can go on in this process: a 2026-07-28 call always can;
    a legacy call only while it is parked here, waiting for its answer."""
    if resume.get("protocol") != "legacy":
        return True
    link = PARKED.get(str(resume.get("parked")))
    return link is not None and link.is_parked(resume)


def release_parked(resume: Mapping[str, Any]) -> None:
    """Cancel the question of a legacy call parked here (its ask was cancelled)."""
    link = PARKED.get(str(resume.get("parked")))
    if link is not None:
        link.release(resume)


class ParkedCallGone(HandrailError):
    """The legacy call an answer is for is not parked in this process (it restarted, or the
    server stopped meanwhile)."""


@dataclass(kw_only=True, eq=False)
class Parked:
    """A legacy call whose server asked for input: the SDK call goes on in `task`, its
    elicitation waits on `waiting`, and the call's timeout stops while it waits."""

    id: str
    tool: str
    #: The call's timeout, and what is left of it.
    limit: float
    remaining: float
    task: asyncio.Task[Any] | None = None
    asked: asyncio.Queue[tuple[types.ElicitRequestParams, asyncio.Future[Any]]] = field(
        default_factory=asyncio.Queue
    )
    waiting: asyncio.Future[Any] | None = None
    #: Whether a turn waits for the call now (`McpLink._wait_parked`).
    watched: bool = False
    #: The rounds of the call before this one was sent (URL-required rounds, `mcp_rounds`).
    rounds: int = 0


def drop_result(task: asyncio.Task[Any]) -> None:
    """Read a released call's outcome, so nothing is left unretrieved."""
    if not task.cancelled():
        task.exception()
