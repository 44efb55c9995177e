"""Running a read-only action tool: dependencies resolved, then prepared and sent at once, with
no confirmation."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import httpx

from .._util import utc_now
from ..errors import HandrailError
from .dependencies import resolve_dependencies
from .model import ActionSet, ActionTool
from .prepare import check_input
from .results import ActionResult, NeedsSelection, Resolved
from .transport import Sleep, call

__all__ = ["run_read_only"]


async def run_read_only(
    action_set: ActionSet,
    tool: ActionTool | str,
    input: Mapping[str, Any],
    *,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None = None,
    cache: MutableMapping[str, Any] | None = None,
    choices: Mapping[str, str] | None = None,
    now: Callable[[], dt.datetime] = utc_now,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> ActionResult | NeedsSelection:
    """Run a read-only tool for the model's `input`: check it (``needs_input`` when it does
    not fit), resolve its dependencies (a tool without any never gives `NeedsSelection`),
    prepare and send. A tool that is not read-only is refused with `HandrailError`: it must be
    prepared and confirmed."""
    action = tool if isinstance(tool, ActionTool) else action_set.tool(tool)
    if action.needs_confirmation:
        raise HandrailError(
            f"{action.name} is a {action.effect}: prepare it and run it only once the person "
            "confirmed"
        )
    problems = check_input(action, input)
    if problems:
        return ActionResult(
            status="needs_input",
            message=f"Invalid arguments for {action.name}: {'; '.join(problems)}. It did not "
            "run; call it again with arguments that match its input schema.",
            data={"problems": problems},
        )
    resolved: Resolved | None = None
    if action.dependencies:
        found = await resolve_dependencies(
            action_set, action, input, client=client, env=env,
            cache={} if cache is None else cache, choices=choices, now=now, sleep=sleep,
            rand=rand,
        )  # fmt: skip
        if not isinstance(found, Resolved):
            return found
        resolved = found
    return await call(
        action_set, action, input, client=client, env=env, resolved=resolved, sleep=sleep,
        rand=rand,
    )  # fmt: skip
