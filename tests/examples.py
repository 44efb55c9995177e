"""The spec's example asks, shared by every test that uses them (``agent-ui-asks.md``).

Each name is a fresh deep copy per import site's use (`plan()`, ...) or a constant that tests
must not change (`PLAN`, `PIZZA`); the plan picker is the demo agent's own `PLAN_PICKER`, so the
demo, the benchmarks and the tests ask the same question.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from handrail.demo.agent import PLAN_PICKER

__all__ = ["PIZZA", "PLAN", "plan", "plan_card"]

#: The plan picker of the spec's wire example: a one-choice ask with a default.
PLAN: Final[dict[str, Any]] = copy.deepcopy(dict(PLAN_PICKER))

#: The pizza builder of the spec's choice examples: a many-choice ask with Other.
PIZZA: Final[dict[str, Any]] = {
    "title": "Build your pizza",
    "prompt": "Which toppings should I add? Pick up to three.",
    "select": "many",
    "options": [
        {"id": "cheese", "label": "Extra cheese"},
        {"id": "mushrooms", "label": "Mushrooms"},
        {"id": "olives", "label": "Olives"},
        {"id": "peppers", "label": "Peppers"},
        {"id": "pineapple", "label": "Pineapple"},
    ],
    "default": ["cheese", "mushrooms"],
    "maxSelected": 3,
    "allowOther": True,
    "otherLabel": "Another topping",
    "submitLabel": "Add toppings",
}


def plan() -> dict[str, Any]:
    """A copy of `PLAN` a test may change."""
    return copy.deepcopy(PLAN)


def plan_card(tool_call_id: str | None) -> dict[str, Any]:
    """The simple card of `PLAN` (the default first, then the other options in order)."""
    return {
        "toolCallId": tool_call_id,
        "kind": "choice",
        "title": "Choose a plan",
        "text": "Which plan should I set up?",
        "buttons": [
            {
                "id": f"option:{option}",
                "label": label,
                "style": "primary" if option == "team" else "default",
                "response": {"action": "accept", "content": {"selected": [option]}},
            }
            for option, label in (
                ("team", "Team"),
                ("starter", "Starter"),
                ("enterprise", "Enterprise"),
            )
        ],
        "handoff": False,
    }
