"""The rules of a tool's or action's gate: who must approve it and how many, and how long it
may wait (`expires_after`) before it is cancelled with reason ``expired``, and after how long a
reminder is due (`remind_after`), in seconds. An agent may set the clocks for all its gates; a
tool's own value wins. Pure data, checked once at configuration.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ADMINS", "MAX_WAIT_S", "GateRules", "rules_problems"]

#: The approver that names every admin.
ADMINS: Final = "admins"
#: The longest a gate may wait: 30 days.
MAX_WAIT_S: Final = 30 * 24 * 3600


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


def rules_problems(
    *,
    approvers: Iterable[Any] | None = None,
    quorum: Any = 1,
    expires_after: Any = None,
    remind_after: Any = None,
) -> list[str]:
    """What is wrong with the rules as given (empty when they are fine)."""
    problems: list[str] = []
    names = list(approvers or ())
    if any(not isinstance(n, str) or not n.strip() or len(n) > 255 for n in names):
        problems.append("approvers are user ids (1-255 characters) or 'admins'")
    elif len(set(names)) != len(names):
        problems.append("approvers are listed once each")
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        problems.append(f"quorum is a whole number of at least 1, not {quorum!r}")
    elif names and ADMINS not in names and quorum > len(names):
        problems.append(f"quorum {quorum} is more than the {len(names)} approvers named")
    elif not names and quorum != 1:
        problems.append("a quorum needs approvers: name them with approvers")
    for name, value in (("expires_after", expires_after), ("remind_after", remind_after)):
        problem = _seconds(name, value)
        if problem:
            problems.append(problem)
    if (
        not problems
        and expires_after is not None
        and remind_after is not None
        and remind_after >= expires_after
    ):
        problems.append("remind_after comes before expires_after")
    return problems
