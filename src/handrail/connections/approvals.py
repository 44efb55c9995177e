"""A saved connection's ``approvals`` setting: who must approve its tools' calls, how many of
them, and how long a call may wait, for the whole connection and per tool.

The wire form (``POST``/``PATCH /connections``, stored as it is)::

    {"approvers": ["bob", "admins"], "quorum": 2, "expiresAfter": 3600, "remindAfter": 600,
     "tools": {"wipe": {"approvers": ["root"]}, "echo": {"approvers": []}}}

Every key is optional. A tool's entry (by the server's name of the tool) goes over the
connection's values, which go over the tool's own (an action set's YAML): the clocks key by
key, the approvers with their quorum (`handrail.policy.rules.layered`); ``approvers: []`` names
none for that tool. The rules are read by `handrail.policy.rules.read_rules`, as a Python tool's
options are, so both give the same `GateRules` and the approval gate treats them alike.
``null`` for the whole setting removes it.

`check_approvals` checks a setting and says what is wrong per field (``approvals.quorum``,
``approvals.tools.wipe.approvers``), naming unknown users; `tool_rules` gives one tool's rules.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from ..policy.rules import ADMINS, GateRules, layered, read_rules, rules_values

__all__ = ["APPROVAL_KEYS", "check_approvals", "tool_rules"]

#: The setting's keys (camelCase, as on the wire) and the rule each one sets.
APPROVAL_KEYS: Final[dict[str, str]] = {
    "approvers": "approvers",
    "quorum": "quorum",
    "expiresAfter": "expires_after",
    "remindAfter": "remind_after",
}
_WIRE: Final = {rule: key for key, rule in APPROVAL_KEYS.items()}
#: The most tools one setting names.
TOOLS_MAX: Final = 500


def _values(part: Mapping[str, Any]) -> dict[str, Any]:
    """The rule values of one part of the setting (snake_case, as `read_rules` reads)."""
    return {rule: part[key] for key, rule in APPROVAL_KEYS.items() if part.get(key) is not None}


def _wire(sentence: str) -> str:
    for rule, key in _WIRE.items():
        sentence = sentence.replace(rule, key)
    return sentence


def _part_problems(
    where: str, part: Any, fields: dict[str, str], users: Collection[str] | None
) -> bool:
    """The problems of one part's own shape (its keys, its approvers' names); True when it
    can be read."""
    if not isinstance(part, Mapping):
        fields[where] = 'must be an object such as {"approvers": ["bob"], "quorum": 1}'
        return False
    allowed = set(APPROVAL_KEYS) | ({"tools"} if where == "approvals" else set())
    for key in part:
        if key not in allowed:
            fields[f"{where}.{key}"] = (
                f"is not an approvals setting; the settings are {', '.join(sorted(allowed))}"
            )
    approvers = part.get("approvers")
    if approvers is None:
        return not any(k.startswith(where + ".") for k in fields)
    if not isinstance(approvers, list) or not all(isinstance(a, str) for a in approvers):
        fields[f"{where}.approvers"] = "must be a list of user ids, or 'admins' for every admin"
        return False
    if users is not None:
        unknown = [a for a in approvers if a != ADMINS and a not in users]
        if unknown:
            fields[f"{where}.approvers"] = (
                f"names no user: {', '.join(unknown)}; the users are "
                f"{', '.join(sorted(users))}, or 'admins' for every admin"
            )
            return False
    return not any(k.startswith(where + ".") for k in fields)


def _rules_problems(where: str, values: Mapping[str, Any], fields: dict[str, str]) -> None:
    _, problems = read_rules(values)
    for rule, sentence in problems:
        fields.setdefault(f"{where}.{_WIRE[rule]}", _wire(sentence))


def check_approvals(
    value: Any,
    *,
    users: Collection[str] | None,
    tools: Collection[str] | None = None,
    unheld: Collection[str] = (),
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The setting as it is stored (None: no setting), and what is wrong with it by field.

    `users` are the user ids an approver may name (None: any id, as when the server takes
    JWTs of users it does not list); `tools` the server's tool names the connection listed
    (None: not listed yet, so any name is taken); `unheld` the tools no gate holds (an action
    set's read-only actions run without a confirmation), which cannot name approvers."""
    fields: dict[str, str] = {}
    if value is None:
        return None, fields
    if not _part_problems("approvals", value, fields, users):
        return None, fields
    base = _values(value)
    _rules_problems("approvals", base, fields)
    named = value.get("tools")
    stored: dict[str, Any] = {k: value[k] for k in APPROVAL_KEYS if value.get(k) is not None}
    if named is not None:
        if not isinstance(named, Mapping):
            fields["approvals.tools"] = (
                "must be an object of the tools' own settings by the server's tool name"
            )
            return None, fields
        if len(named) > TOOLS_MAX:
            fields["approvals.tools"] = f"names more than {TOOLS_MAX} tools"
            return None, fields
        per_tool: dict[str, Any] = {}
        for name, part in named.items():
            where = f"approvals.tools.{name}"
            if tools is not None and name not in tools:
                fields[where] = (
                    f"is not a tool of this connection; its tools are {', '.join(sorted(tools))}"
                    if tools
                    else "is not a tool of this connection"
                )
                continue
            if not _part_problems(where, part, fields, users):
                continue
            if name in unheld and part.get("approvers"):
                fields[f"{where}.approvers"] = (
                    "cannot be set: it is a read-only action, which runs without a "
                    "confirmation; name approvers for the actions that change something"
                )
                continue
            _rules_problems(where, layered(base, _values(part)), fields)
            per_tool[str(name)] = {k: part[k] for k in APPROVAL_KEYS if part.get(k) is not None}
        if per_tool:
            stored["tools"] = per_tool
    if fields:
        return None, fields
    return (stored or None), fields


def tool_rules(
    setting: Mapping[str, Any] | None, tool: str, own: GateRules | None = None
) -> GateRules | None:
    """The gate rules of the connection's tool `tool` (the server's name): the setting's
    entry for it over the connection's values over the tool's `own` rules. A setting that no
    longer fits the tool's own rules (its file changed) gives the setting's rules alone."""
    if not setting:
        return own
    connection = _values(setting)
    tools = setting.get("tools")
    entry = tools.get(tool) if isinstance(tools, Mapping) else None
    mine = _values(entry) if isinstance(entry, Mapping) else {}
    rules, problems = read_rules(layered(rules_values(own), connection, mine))
    if problems:
        rules, _ = read_rules(layered(connection, mine))
    return rules
