"""What the runtime adds to every gate: its rules (approvers, quorum, clocks), the person's
edits of a held call's arguments, and the audit records of each gate asked and ended.

All of it is generic: it reads a pending ask and its gate class's flags, never an origin.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from .._util import iso, json_encoder
from ..asks import AskValidationError, PendingAsk
from ..asks.checks import add
from ..policy.rules import ADMINS, GateRules
from ..store.audit import audit_record
from ..store.connections import ActivityRecord
from .turn import Principal
from .wording import field_label

__all__ = [
    "ANSWER_VIAS",
    "AnswerVia",
    "apply_rules",
    "approves",
    "arguments_digest",
    "edit_errors",
    "edit_note",
    "edited_arguments",
    "is_approver",
    "scrub",
]

#: The surfaces an answer comes from, as the audit log records them: the web app, the watch
#: page, a headless client (``turn`` with ``askResponse``), a card button (``buttonId``), a
#: signed link (email), and the gates' own clock (``expiry``).
AnswerVia = Literal["web", "watch", "headless", "card", "link", "expiry"]
ANSWER_VIAS: Final[tuple[str, ...]] = ("web", "watch", "headless", "card", "link", "expiry")

_DATA_URL: Final = re.compile(r"data:[^\s,;]*(;[^\s,]*)?,\S*", re.IGNORECASE)


def scrub(text: str) -> str:
    """A person's note as the audit log keeps it: no data URL."""
    return _DATA_URL.sub("[data URL]", text)


def arguments_digest(value: Any) -> str:
    """The SHA-256 hex of a JSON value's canonical form (sorted keys, no spaces)."""
    canonical = _CANONICAL(value)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


#: `json.dumps` with these options, built once (it makes an encoder at each call otherwise).
_CANONICAL: Final = json_encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def apply_rules(
    pending: PendingAsk, rules: GateRules, *, approvable: bool, now: dt.datetime
) -> PendingAsk:
    """The pending ask with its rules: ``expiresAt`` (the earlier of its own and the rules'),
    ``remindAt``, and, for a gate that approves a call, its approvers and quorum."""
    changes: dict[str, Any] = {}
    if rules.expires_after is not None:
        due = now + dt.timedelta(seconds=rules.expires_after)
        own = pending.expires_at
        if own is None or iso(due) < own:
            changes["expires_at"] = iso(due)
    if rules.remind_after is not None:
        changes["remind_at"] = iso(now + dt.timedelta(seconds=rules.remind_after))
    if approvable and rules.approvers:
        changes["approvers"] = list(rules.approvers)
        changes["quorum"] = rules.quorum
        changes["approved_by"] = []
    return pending.replace(**changes) if changes else pending


def is_approver(pending: PendingAsk, principal: Principal) -> bool:
    """Whether `principal` is one of the pending ask's approvers (by id, or as an admin)."""
    names = pending.approvers or []
    return principal.user_id in names or (principal.is_admin and ADMINS in names)


def approves(envelope: Mapping[str, Any]) -> bool:
    """Whether an answer approves (accepts a confirm with ``confirmed: true``)."""
    content = envelope.get("content")
    return (
        envelope.get("action") == "accept"
        and isinstance(content, dict)
        and content.get("confirmed") is True
    )


def edited_arguments(envelope: Mapping[str, Any]) -> dict[str, Any] | None:
    """The edited arguments an approval carries (``content.arguments``), if any."""
    content = envelope.get("content")
    if isinstance(content, dict) and isinstance(content.get("arguments"), dict):
        return dict(content["arguments"])
    return None


def edit_errors(
    envelope: Mapping[str, Any], schema: Mapping[str, Any], problems_of: Any
) -> list[AskValidationError]:
    """The errors of an answer's edited arguments: they go with an approval only, are an
    object, and fit the tool's input schema (`problems_of(arguments)` gives its sentences,
    such as ``title: required``); each error names the field by its label."""
    content = envelope.get("content")
    if not isinstance(content, dict) or "arguments" not in content:
        return []
    errors: list[AskValidationError] = []
    arguments = content["arguments"]
    if not isinstance(arguments, dict):
        add(
            errors,
            "content.arguments",
            "FIELD_TYPE_MISMATCH",
            "The edited arguments are not an object.",
            "Send the call's arguments as an object, or leave them out.",
        )
        return errors
    if not approves(envelope):
        add(
            errors,
            "content.arguments",
            "UNKNOWN_KEY",
            "Edited arguments go only with an approval.",
            "Send confirmed: true with them, or deny without them.",
        )
        return errors
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    names = set(properties) if isinstance(properties, Mapping) else set()
    for problem in problems_of(arguments):
        name, _, rest = str(problem).partition(": ")
        if name in names or name in arguments:
            label = field_label(name, schema)
            add(
                errors,
                f"content.arguments.{name}",
                "FIELD_TYPE_MISMATCH",
                f"{label[:1].upper()}{label[1:]}: {rest or problem}.",
                f"Correct {label}.",
            )
        else:
            add(
                errors,
                "content.arguments",
                "FIELD_TYPE_MISMATCH",
                f"{problem}.",
                "Correct the edited values.",
            )
    return errors


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The argument names whose values differ (added, removed or changed), sorted."""
    names = set(before) | set(after)
    return sorted(n for n in names if before.get(n, _MISSING) != after.get(n, _MISSING))


_MISSING: Any = object()


def edit_note(before: Mapping[str, Any], after: Mapping[str, Any], result: Any) -> dict[str, Any]:
    """The tool result the model reads for a call the person edited before approving it: that
    they changed it, how (each changed argument from the model's value to theirs), and the
    result of the call as it ran."""
    changes = {
        name: {"from": before.get(name), "to": after.get(name)}
        for name in changed_fields(before, after)
    }
    return {
        "editedByUser": True,
        "note": "The user changed the arguments before approving; the call ran with theirs.",
        "changes": changes,
        "arguments": dict(after),
        "result": result,
    }


# --- audit records --------------------------------------------------------------------------


def _base(pending: PendingAsk) -> dict[str, Any]:
    out: dict[str, Any] = {"askId": pending.tool_call_id, "kind": pending.kind}
    if pending.origin:
        out["origin"] = pending.origin
    if pending.held_tool_call_id:
        out["heldToolCallId"] = pending.held_tool_call_id
    return out


def asked_record(
    pending: PendingAsk,
    *,
    history_id: str,
    owner_id: str,
    agent: str,
    arguments: Mapping[str, Any] | None,
) -> ActivityRecord:
    """``gate.asked``: the gate, a digest of the held call's arguments (or of the ask's input)
    and of its preview, its approvers and clocks."""
    changes = _base(pending)
    if arguments is not None:
        changes["argumentsDigest"] = arguments_digest(dict(arguments))
    else:
        changes["inputDigest"] = arguments_digest(pending.input)
    if pending.preview is not None:
        changes["previewDigest"] = arguments_digest(pending.preview)
    for key, value in (
        ("confirmationId", pending.confirmation_id),
        ("expiresAt", pending.expires_at),
        ("remindAt", pending.remind_at),
        ("approvers", pending.approvers),
        ("quorum", pending.quorum),
    ):
        if value is not None:
            changes[key] = value
    return audit_record(
        actor=f"agent:{agent}",
        action="gate.asked",
        subject=pending.tool_call_id,
        changes=changes,
        history_id=history_id,
        owner_id=owner_id,
        tool=pending.tool_name,
    )


def verdict(pending: PendingAsk, envelope: Mapping[str, Any], *, holds_call: bool) -> str:
    """How an answer ended the gate: ``approved`` or ``denied`` for a gate that holds a call
    and asks a confirm; else ``answered``, ``declined`` or ``cancelled``."""
    action = envelope.get("action")
    if holds_call and pending.kind == "confirm":
        return "approved" if approves(envelope) else "denied"
    return {"accept": "answered", "decline": "declined"}.get(str(action), "cancelled")


def answered_record(
    pending: PendingAsk,
    envelope: Mapping[str, Any],
    *,
    history_id: str,
    owner_id: str,
    actor: str,
    via: str,
    holds_call: bool,
    held_arguments: Mapping[str, Any] | None = None,
    scope: str = "once",
    approvals: int | None = None,
    action: str | None = None,
) -> ActivityRecord:
    """``gate.<verdict>``: who answered, from where, the note or the edit, and (with
    approvers) how many approvals the gate has now."""
    changes = _base(pending)
    changes["via"] = via
    changes["action"] = envelope.get("action")
    reason = envelope.get("reason")
    if isinstance(reason, str) and reason:
        changes["reason"] = scrub(reason)
    if scope != "once":
        changes["scope"] = scope
    edited = edited_arguments(envelope)
    if edited is not None:
        before = dict(held_arguments or {})
        changes["edit"] = {
            "fields": changed_fields(before, edited),
            "argumentsDigest": arguments_digest(edited),
        }
    if approvals is not None:
        changes["approvals"] = approvals
        changes["quorum"] = pending.quorum or 1
    name = action or "gate." + verdict(pending, envelope, holds_call=holds_call)
    return audit_record(
        actor=actor,
        action=name,
        subject=pending.tool_call_id,
        changes=changes,
        history_id=history_id,
        owner_id=owner_id,
        tool=pending.tool_name,
    )


def outcome_record(
    pending: PendingAsk,
    *,
    history_id: str,
    owner_id: str,
    agent: str,
    status: str,
    arguments: Mapping[str, Any] | None = None,
) -> ActivityRecord:
    """``gate.outcome``: what became of the held call (``succeeded``, ``failed``,
    ``denied``, ``uncertain``, or ``waiting`` on another gate), with the digest of the
    arguments it ran with."""
    changes = {**_base(pending), "status": status}
    if arguments is not None:
        changes["argumentsDigest"] = arguments_digest(dict(arguments))
    return audit_record(
        actor=f"agent:{agent}",
        action="gate.outcome",
        subject=pending.tool_call_id,
        changes=changes,
        history_id=history_id,
        owner_id=owner_id,
        tool=pending.tool_name,
    )


def call_status(rows: list[dict[str, Any]], held_id: str) -> tuple[str, Any] | None:
    """The status of the held call from the rows a turn wrote: its result row's, or None."""
    for row in rows:
        if row.get("type") == "tool-result" and row.get("toolCallId") == held_id:
            result = row.get("result")
            if isinstance(result, dict) and result.get("type") == "execution-denied":
                return "denied", result
            if isinstance(result, dict) and result.get("code") == "TOOL_EXECUTION_UNCERTAIN":
                return "uncertain", result
            return ("failed" if row.get("isError") else "succeeded"), result
    return None
