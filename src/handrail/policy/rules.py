"""The rules of a tool's or action's gate: who must approve it and how many, and how long it
may wait (`expires_after`) before it is cancelled with reason ``expired``, and after how long a
reminder is due (`remind_after`), in seconds. An agent may set the clocks for all its gates; a
tool's own value wins. Pure data, checked once at configuration.

`read_rules` is the one reader of rules, wherever they are written: a Python tool's options, an
action set's YAML, and a saved connection's ``approvals`` setting (`layered` puts an admin's
per-connection and per-tool values over a tool's own, so every path gives the same `GateRules`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ADMINS",
    "MAX_WAIT_S",
    "RULE_KEYS",
    "GateRules",
    "layered",
    "read_rules",
    "rule_problems",
    "rules_problems",
    "rules_values",
]

#: The approver that names every admin.
ADMINS: Final = "admins"
#: The longest a gate may wait: 30 days.
MAX_WAIT_S: Final = 30 * 24 * 3600
#: The keys of a tool's gate rules, as options and YAML spell them.
RULE_KEYS: Final = ("approvers", "quorum", "expires_after", "remind_after")


@dataclass(frozen=True, kw_only=True)
class GateRules:
    """`approvers` are user ids or ``admins``; `quorum` approvals end the gate (default 1);
    `expires_after` and `remind_after` are seconds (None: never)."""

    approvers: tuple[str, ...] = ()
    quorum: int = 1
    expires_after: float | None = None
    remind_after: float | None = None

    def over(self, base: GateRules | None) -> GateRules:
        """These rules, with `base`'s clocks where these set none (an agent's defaults)."""
        if base is None:
            return self
        return GateRules(
            approvers=self.approvers,
            quorum=self.quorum,
            expires_after=self.expires_after
            if self.expires_after is not None
            else base.expires_after,
            remind_after=self.remind_after if self.remind_after is not None else base.remind_after,
        )

    @property
    def empty(self) -> bool:
        return not self.approvers and self.expires_after is None and self.remind_after is None


def _seconds(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_WAIT_S
    ):
        return f"{name} is a number of seconds from 1 to {MAX_WAIT_S}, not {value!r}"
    return None


def rule_problems(
    *,
    approvers: Iterable[Any] | None = None,
    quorum: Any = 1,
    expires_after: Any = None,
    remind_after: Any = None,
) -> list[tuple[str, str]]:
    """What is wrong with the rules as given, as ``(key, sentence)`` pairs (the key of
    `RULE_KEYS` each is about); empty when they are fine."""
    problems: list[tuple[str, str]] = []
    names = list(approvers or ())
    if any(not isinstance(n, str) or not n.strip() or len(n) > 255 for n in names):
        problems.append(("approvers", "approvers are user ids (1-255 characters) or 'admins'"))
    elif len(set(names)) != len(names):
        problems.append(("approvers", "approvers are listed once each"))
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        problems.append(("quorum", f"quorum is a whole number of at least 1, not {quorum!r}"))
    elif names and ADMINS not in names and quorum > len(names):
        problems.append(
            ("quorum", f"quorum {quorum} is more than the {len(names)} approvers named")
        )
    elif not names and quorum != 1:
        problems.append(("quorum", "a quorum needs approvers: name them with approvers"))
    for name, value in (("expires_after", expires_after), ("remind_after", remind_after)):
        problem = _seconds(name, value)
        if problem:
            problems.append((name, problem))
    if (
        not problems
        and expires_after is not None
        and remind_after is not None
        and remind_after >= expires_after
    ):
        problems.append(("remind_after", "remind_after comes before expires_after"))
    return problems


def rules_problems(
    *,
    approvers: Iterable[Any] | None = None,
    quorum: Any = 1,
    expires_after: Any = None,
    remind_after: Any = None,
) -> list[str]:
    """What is wrong with the rules as given (empty when they are fine)."""
    return [
        sentence
        for _, sentence in rule_problems(
            approvers=approvers,
            quorum=quorum,
            expires_after=expires_after,
            remind_after=remind_after,
        )
    ]


def read_rules(values: Mapping[str, Any]) -> tuple[GateRules | None, list[tuple[str, str]]]:
    """The gate rules of `values` (any of `RULE_KEYS`; `approvers` may be one id, `quorum`
    defaults to 1): ``(rules, [])``, ``(None, [])`` when they set none, or ``(None,
    problems)`` as `rule_problems` gives them. The one reader of rules: a Python tool's
    options, an action's YAML and a saved connection's setting all go through it."""
    given = {key: values.get(key) for key in RULE_KEYS}
    if all(value is None for value in given.values()):
        return None, []
    approvers = given["approvers"]
    if isinstance(approvers, str):
        approvers = [approvers]
    if approvers is not None and not isinstance(approvers, list | tuple):
        return None, [("approvers", "approvers are a list of user ids or 'admins'")]
    quorum = 1 if given["quorum"] is None else given["quorum"]
    problems = rule_problems(
        approvers=approvers,
        quorum=quorum,
        expires_after=given["expires_after"],
        remind_after=given["remind_after"],
    )
    if problems:
        return None, problems
    return (
        GateRules(
            approvers=tuple(approvers or ()),
            quorum=quorum,
            expires_after=given["expires_after"],
            remind_after=given["remind_after"],
        ),
        [],
    )


def rules_values(rules: GateRules | None) -> dict[str, Any]:
    """`rules` as the values `read_rules` reads (only what they set)."""
    if rules is None:
        return {}
    out: dict[str, Any] = {}
    if rules.approvers:
        out["approvers"] = list(rules.approvers)
        out["quorum"] = rules.quorum
    if rules.expires_after is not None:
        out["expires_after"] = rules.expires_after
    if rules.remind_after is not None:
        out["remind_after"] = rules.remind_after
    return out


def layered(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Rules values with each layer over the ones before it (a tool's own, then an admin's
    for the connection, then an admin's for the tool). The clocks go key by key. The
    approvers and their quorum go together: the last layer that names ``approvers`` gives
    them, with its own ``quorum`` or one set by a later layer (else 1), so a quorum always
    counts the approvers it was set for; a layer with ``approvers: []`` names none."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key in ("expires_after", "remind_after"):
            if layer.get(key) is not None:
                out[key] = layer[key]
        if layer.get("approvers") is not None:
            out["approvers"] = layer["approvers"]
            out["quorum"] = layer.get("quorum")
        elif layer.get("quorum") is not None:
            out["quorum"] = layer["quorum"]
    if not out.get("approvers"):
        out.pop("approvers", None)
        if out.get("quorum") == 1:
            out.pop("quorum")
    return out
