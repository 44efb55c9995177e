"""Dependencies: the read-only tools a call runs first, their results cached for their TTL,
and one candidate picked from each with ``select``.

`resolve_dependencies` gives `Resolved` when every dependency has a value, `NeedsSelection`
when several candidates fit (the runtime pauses on a choice, then calls again with
``choices``), or an `ActionResult` when a dependency failed or nothing fits (``needs_input``,
naming what exists). Sensitive fields never reach a label, a fact or a candidate shown.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import random
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from .._util import utc_now
from .inputs import check_input as check_schema
from .model import ActionSet, ActionTool, Dependency, Select, canonical_json
from .refs import MISSING, Scope, drop_path, get_path, render, resolve
from .results import ActionResult, Candidate, NeedsSelection, Resolved
from .transport import Sleep, call

__all__ = [
    "MAX_CANDIDATES",
    "CacheEntry",
    "forget_dependency",
    "resolve_dependencies",
]

#: The most candidates one selection offers (a ``choice`` ask's ``optionsMax``).
MAX_CANDIDATES: Final = 50
#: The longest label a candidate gets (a choice option's label limit).
LABEL_MAX: Final = 120


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheEntry:
    """A dependency tool's result, and when it was fetched."""

    data: Any
    fetched_at: dt.datetime


def _cache_key(action_set: ActionSet, tool: str, input: Mapping[str, Any]) -> str:
    return f"{action_set.id}\x00{tool}\x00{canonical_json(input)}"


def forget_dependency(
    cache: MutableMapping[str, Any], action_set: ActionSet, tool: ActionTool | str, dependency: str
) -> int:
    """Drop every cached result of the tool that `dependency` (of `tool`) runs, so the next
    resolution fetches it again (``recovery``). Returns how many entries were dropped."""
    action = tool if isinstance(tool, ActionTool) else action_set.tool(tool)
    dep = action.dependencies[dependency]
    prefix = f"{action_set.id}\x00{dep.tool}\x00"
    stale = [key for key in cache if isinstance(key, str) and key.startswith(prefix)]
    for key in stale:
        del cache[key]
    return len(stale)


async def resolve_dependencies(
    action_set: ActionSet,
    tool: ActionTool | str,
    input: Mapping[str, Any],
    *,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None = None,
    cache: MutableMapping[str, Any],
    choices: Mapping[str, str] | None = None,
    now: Callable[[], dt.datetime] = utc_now,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> Resolved | NeedsSelection | ActionResult:
    """Run the dependencies of `tool` in order for the model's `input`.

    - ``when: missing`` runs only when an input field it ``fills`` is missing.
    - A result fetched less than ``ttl_ms`` ago (in `cache`, keyed by set, tool and input) is
      reused; its expiry counts towards the call's.
    - With ``select``: the candidates at ``items`` that ``match`` the input; the one chosen in
      `choices` (dependency → candidate id) or the only one is taken; several give
      `NeedsSelection`; none gives a ``needs_input`` result that lists what exists.
    - A dependency that fails gives its error result, named after it.
    """
    action = tool if isinstance(tool, ActionTool) else action_set.tool(tool)
    choices = choices or {}
    values: dict[str, Any] = {}
    facts: dict[str, Any] = {}
    filled: dict[str, Any] = {}
    expires: dt.datetime | None = None
    for dep in action.dependencies.values():
        if dep.when == "missing" and all(key in input for key in dep.fills):
            continue
        scope = Scope(input={**filled, **input}, deps=values)
        dep_input = render(dep.input, scope)
        fetched = await _fetch(
            action_set, action, dep, dep_input, client=client, env=env, cache=cache, now=now,
            sleep=sleep, rand=rand,
        )  # fmt: skip
        if isinstance(fetched, ActionResult):
            return fetched
        data, fetched_at = fetched
        until = fetched_at + dt.timedelta(milliseconds=dep.ttl_ms)
        expires = until if expires is None or until < expires else expires
        if dep.select is None:
            chosen = data
        else:
            picked = _select(action, dep, dep.select, data, scope, choices.get(dep.name), until)
            if not isinstance(picked, _Chosen):
                return picked
            chosen = picked.candidate
            facts.update(picked.facts)
        values[dep.name] = chosen
        for key, ref in dep.fills.items():
            if key not in input:
                found = resolve(ref, Scope(item=chosen))
                if found is not MISSING:
                    filled[key] = found
    return Resolved(values=values, facts=facts, filled=filled, expires_at=expires)


async def _fetch(
    action_set: ActionSet,
    action: ActionTool,
    dep: Dependency,
    dep_input: Mapping[str, Any],
    *,
    client: httpx.AsyncClient,
    env: Mapping[str, str] | None,
    cache: MutableMapping[str, Any],
    now: Callable[[], dt.datetime],
    sleep: Sleep,
    rand: Callable[[], float],
) -> tuple[Any, dt.datetime] | ActionResult:
    target = action_set.tool(dep.tool)
    key = _cache_key(action_set, dep.tool, dep_input)
    moment = now()
    entry = cache.get(key)
    if isinstance(entry, CacheEntry) and moment < entry.fetched_at + dt.timedelta(
        milliseconds=dep.ttl_ms
    ):
        return entry.data, entry.fetched_at
    problems = check_schema(target.input_schema, dep_input)
    if problems:
        return ActionResult(
            status="needs_input",
            message=(
                f"{action.name} needs {dep.tool} first, and its input is not complete: "
                f"{'; '.join(problems)}. Call {action.name} again with the fields it needs."
            ),
        )
    result = await call(
        action_set, target, dep_input, client=client, env=env, sleep=sleep, rand=rand
    )
    if not result.ok:
        return ActionResult(
            status=result.status,
            http_status=result.http_status,
            data=result.data,
            code=result.code,
            message=f"{action.name} could not look up {dep.name} with {dep.tool}: {result.message}",
            attempts=result.attempts,
        )
    cache[key] = CacheEntry(data=result.data, fetched_at=moment)
    return result.data, moment


@dataclass(frozen=True, kw_only=True, slots=True)
class _Chosen:
    candidate: Any
    facts: Mapping[str, Any]


def _public(select: Select, candidate: Any) -> Any:
    for path in select.sensitive:
        candidate = drop_path(candidate, path)
    return candidate


def candidate_id(candidate: Any) -> str:
    """A stable id for a candidate: ``c`` and 12 hex characters of its canonical JSON's hash."""
    try:
        text = canonical_json(candidate)
    except (TypeError, ValueError):
        text = json.dumps(repr(candidate))
    return "c" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _label(select: Select, public: Any, index: int) -> str:
    found = MISSING if select.label is None else resolve(select.label, Scope(item=public))
    if found is MISSING or found is None or found == "":
        return f"Option {index + 1}"
    text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    return text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…"


def _facts(select: Select, public: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, ref in select.facts.items():
        found = resolve(ref, Scope(item=public))
        if found is not MISSING:
            out[name] = found
    return out


def _select(
    action: ActionTool,
    dep: Dependency,
    select: Select,
    data: Any,
    scope: Scope,
    choice: str | None,
    expires: dt.datetime,
) -> _Chosen | NeedsSelection | ActionResult:
    items = get_path(data, select.items)
    if not isinstance(items, list):
        return ActionResult(
            status="error",
            message=f"{action.name}: {dep.tool} did not return a list of options where "
            f"{dep.name} looks for them; the API's answer changed shape.",
        )
    criteria = {path: render(value, scope) for path, value in select.match.items()}
    criteria = {path: value for path, value in criteria.items() if value is not MISSING}
    fitting = [
        item
        for item in items
        if all(_same(get_path(item, path), value) for path, value in criteria.items())
    ]
    ids: list[str] = []
    for item in fitting:
        base = candidate_id(item)
        ids.append(base if base not in ids else f"{base}-{len(ids)}")
    if choice is not None and choice in ids:
        chosen = fitting[ids.index(choice)]
        return _Chosen(candidate=chosen, facts=_facts(select, _public(select, chosen)))
    if len(fitting) == 1:
        return _Chosen(candidate=fitting[0], facts=_facts(select, _public(select, fitting[0])))
    if not fitting:
        return _no_match(action, dep, select, items, criteria)
    shown = fitting[:MAX_CANDIDATES]
    candidates = []
    for index, item in enumerate(shown):
        public = _public(select, item)
        candidates.append(
            Candidate(
                id=ids[index], label=_label(select, public, index), facts=_facts(select, public)
            )
        )
    return NeedsSelection(
        dependency=dep.name,
        tool=dep.tool,
        candidates=candidates,
        full_candidates=list(shown),
        expires_at=expires,
        truncated=len(fitting) > len(shown),
    )


def _no_match(
    action: ActionTool,
    dep: Dependency,
    select: Select,
    items: list[Any],
    criteria: Mapping[tuple[str | int, ...], Any],
) -> ActionResult:
    wanted = ", ".join(
        f"{'.'.join(str(s) for s in path)} = {json.dumps(v, ensure_ascii=False)}"
        for path, v in criteria.items()
    )
    publics = [_public(select, item) for item in items[:MAX_CANDIDATES]]
    labels = [_label(select, public, i) for i, public in enumerate(publics)]
    options = [
        {"label": label, "facts": _facts(select, public)}
        for label, public in zip(labels, publics, strict=True)
    ]
    if not options:
        message = f"{dep.tool} found no options for {action.name}, so it cannot be done now."
    else:
        listed = "; ".join(labels)
        message = (
            f"No option of {dep.name} fits {wanted or 'the input'}. The options are: {listed}. "
            f"Call {action.name} again with one of them, or ask the person."
        )
    return ActionResult(
        status="needs_input",
        message=message,
        data={"dependency": dep.name, "options": options},
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)
