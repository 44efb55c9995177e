"""What a turn offers the model: the system prompt and the tools, for one agent and surface."""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import Any, Final

from ..asks import (
    ASKS_SYSTEM_PROMPT,
    COMPACT_SURFACE_SYSTEM_PROMPT,
    AskKind,
    AskSurface,
    ask_input_json_schema,
    ask_kinds_for_surface,
    ask_prompt_section,
)
from ..connections.instructions import Snapshot
from .agent import Agent, Tool
from .models.base import Model, ToolSpec

ASK_TOOL_DESCRIPTIONS: Final[dict[str, str]] = {
    "choice": "Ask the user to pick one option, or several, from a list. Pauses until they answer.",
    "confirm": (
        "Ask the user to approve or deny one action before you take it. Pauses until they answer."
    ),
    "markdown": (
        "Show the user a markdown draft to edit (or write from scratch) and get it back. "
        "Pauses until they answer."
    ),
    "form": "Ask the user to fill in a few typed fields at once. Pauses until they answer.",
    "files": "Ask the user to upload files that you then read. Pauses until they answer.",
}


CLARIFY_TOOL: Final = "clarify"
CLARIFY_DESCRIPTION: Final = (
    "Ask the user several short follow-up questions at once (1 to 5 prompts of kind choice, "
    "confirm or text) when a required detail is missing or a destructive action needs "
    "confirmation. Do not guess ids or proceed with changes in the same step. Pauses until "
    "they answer."
)
CLARIFY_INPUT_SCHEMA: Final[dict[str, object]] = {
    "type": "object",
    "properties": {
        "prompts": {
            "description": (
                "The prompts: an array of prompt objects (or one object, or that JSON as a "
                "string). Each has an id (lowercase, starting with a letter), a kind (choice, "
                "confirm or text), a question, and per kind: options [{id, label, "
                "description?}] and allowMultiple for choice; confirmLabel, cancelLabel and "
                "danger for confirm; placeholder, defaultValue and multiline for text; hint and "
                "required for all."
            ),
            "type": ["array", "object", "string"],
        },
        "title": {"type": "string", "description": "A short heading for the questions."},
    },
    "required": ["prompts"],
    "additionalProperties": False,
}


@dataclass(frozen=True, kw_only=True)
class TurnSetup:
    """Everything a turn offers: the system prompt, the tool specs, and what each name means."""

    system: str
    specs: tuple[ToolSpec, ...]
    ask_tools: dict[str, AskKind]
    host_tools: dict[str, Tool]
    surface: AskSurface
    clarify: bool = False
    #: The connection instructions of the turn (None: none apply), last in `system`.
    instructions: Snapshot | None = None


def ask_tool_name(kind: str) -> str:
    return f"ask_{kind}"


@functools.lru_cache(maxsize=64)
def _ask_part(kinds: tuple[AskKind, ...], surface: AskSurface) -> tuple[str, tuple[ToolSpec, ...]]:
    """The asks prompt text and the ask tools for these kinds on `surface`: pure, so built once
    and shared by every turn (the specs' schemas must not be changed)."""
    if not kinds:
        return "", ()
    section = ASKS_SYSTEM_PROMPT + "\n\n" + ask_prompt_section(list(kinds), surface=surface)
    specs = tuple(
        ToolSpec(
            name=ask_tool_name(kind),
            description=ASK_TOOL_DESCRIPTIONS[kind],
            input_schema=ask_input_json_schema(kind, surface=surface),
        )
        for kind in kinds
    )
    return section, specs


#: The last setup of each agent by surface and tool support, for the turns without connection
#: instructions, with what it was built from (see `build_turn_setup`).
_SETUPS: weakref.WeakKeyDictionary[Agent, dict[tuple[str, bool], tuple[Any, TurnSetup]]] = (
    weakref.WeakKeyDictionary()
)


def build_turn_setup(
    agent: Agent, model: Model, surface: AskSurface, instructions: Snapshot | None = None
) -> TurnSetup:
    """The system prompt and tools of one turn of `agent` on `surface`: the agent's
    instructions, the asks section, the compact line, then the connection `instructions`.

    Asks on: one ``ask_<kind>`` tool per offered kind (only the compact kinds, with narrowed
    schemas, on the compact surface), and the asks prompt text. A compact turn adds the compact
    line even with asks off. A model without tool support gets no ask tools.

    A turn without connection instructions gets the setup the agent's last turn on the same
    surface got when nothing it is made of changed since (its instructions, asks, clarify and
    the very tool objects, in order): it is frozen and shared, like the ask tools' specs.
    """
    if instructions is not None:
        return _build(agent, model, surface, instructions)
    tools = tuple(agent.tools.values())
    made_of = (agent.instructions, agent.asks, agent.clarify, tools)
    key = (surface, model.supports_tools)
    kept = _SETUPS.get(agent)
    if kept is not None:
        last = kept.get(key)
        if last is not None and _same(last[0], made_of):
            return last[1]
    else:
        kept = _SETUPS.setdefault(agent, {})
    setup = _build(agent, model, surface, None)
    kept[key] = (made_of, setup)
    return setup


def _same(was: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """Whether a setup's parts are the very same objects (the instructions' text equal)."""
    return (
        was[0] == now[0]
        and was[1] is now[1]
        and was[2] is now[2]
        and len(was[3]) == len(now[3])
        and all(a is b for a, b in zip(was[3], now[3], strict=True))
    )


def _build(
    agent: Agent, model: Model, surface: AskSurface, instructions: Snapshot | None
) -> TurnSetup:
    kinds: tuple[AskKind, ...] = ()
    if agent.asks is not None and model.supports_tools:
        kinds = tuple(ask_kinds_for_surface(agent.asks.kinds, surface))
    parts = [agent.instructions.strip()] if agent.instructions.strip() else []
    ask_section, ask_specs = _ask_part(kinds, surface)
    parts.append(ask_section)
    if surface == "compact":
        parts.append(COMPACT_SURFACE_SYSTEM_PROMPT)
    if instructions is not None:
        parts.append(instructions.text)
    specs: list[ToolSpec] = list(ask_specs)
    ask_tools: dict[str, AskKind] = {ask_tool_name(kind): kind for kind in kinds}
    clarify = agent.clarify and agent.asks is not None and model.supports_tools
    if clarify:
        specs.append(
            ToolSpec(
                name=CLARIFY_TOOL,
                description=CLARIFY_DESCRIPTION,
                input_schema=dict(CLARIFY_INPUT_SCHEMA),
            )
        )
    host_tools: dict[str, Tool] = {}
    if model.supports_tools:
        for tool in agent.tools.values():
            host_tools[tool.name] = tool
            specs.append(
                ToolSpec(
                    name=tool.name,
                    description=tool.description,
                    input_schema=dict(tool.input_schema),
                )
            )
    return TurnSetup(
        system="\n\n".join(p for p in parts if p),
        specs=tuple(specs),
        ask_tools=ask_tools,
        host_tools=host_tools,
        surface=surface,
        clarify=clarify,
        instructions=instructions,
    )
