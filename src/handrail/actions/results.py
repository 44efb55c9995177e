"""What running an action gives back: `ActionResult` (the API's answer or an error the model
can act on), and from resolving dependencies `Resolved` or `NeedsSelection`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._util import iso
from .problems import RuntimeCode

ResultStatus = Literal["completed", "needs_input", "error"]


def parse_time(text: Any) -> dt.datetime:
    """A time written by `handrail._util.iso` (ISO 8601, UTC, ``Z``)."""
    if not isinstance(text, str):
        raise ValueError(f"expected an ISO 8601 time, got {text!r}")
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


@dataclass(frozen=True, kw_only=True, slots=True)
class ActionResult:
    """The outcome of a call. ``completed``: the API answered 2xx, `data` is its body (parsed
    JSON, else text; None when empty). ``needs_input``: nothing was sent, `message` says what
    the model should give instead. ``error``: `code` is a runtime code (``TOOL_TIMEOUT``...),
    `http_status` the last status received (so the runtime can apply ``recovery.statuses``),
    `data` the API's error body when there was one. `attempts` counts the HTTP attempts made."""

    kind: Literal["actionResult"] = "actionResult"
    status: ResultStatus
    http_status: int | None = None
    data: Any = None
    code: RuntimeCode | None = None
    message: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def to_tool_result(self) -> dict[str, Any]:
        """What the model gets, as JSON: ``{status, httpStatus?, data?, code?, message?}``."""
        out: dict[str, Any] = {"status": self.status}
        if self.http_status is not None:
            out["httpStatus"] = self.http_status
        if self.code is not None:
            out["code"] = self.code
        if self.message is not None:
            out["message"] = self.message
        if self.data is not None:
            out["data"] = self.data
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "status": self.status,
            "httpStatus": self.http_status,
            "data": self.data,
            "code": self.code,
            "message": self.message,
            "attempts": self.attempts,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ActionResult:
        if data.get("kind") != "actionResult":
            raise ValueError("not an action result")
        return cls(
            status=data["status"],
            http_status=data.get("httpStatus"),
            data=data.get("data"),
            code=data.get("code"),
            message=data.get("message"),
            attempts=int(data.get("attempts", 0)),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolved:
    """Every dependency of a call resolved: `values` (dependency → its chosen candidate, or its
    whole result without ``select``; these may hold sensitive values, keep them server-side),
    `facts` (display-only selection facts, never sensitive), `filled` (input fields the
    dependencies filled) and `expires_at`, the earliest expiry of the values used (None when
    no dependency ran)."""

    kind: Literal["resolved"] = "resolved"
    values: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)
    filled: Mapping[str, Any] = field(default_factory=dict)
    expires_at: dt.datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """As JSON (camelCase). `values` may hold sensitive values: keep it server-side."""
        return {
            "kind": self.kind,
            "values": dict(self.values),
            "facts": dict(self.facts),
            "filled": dict(self.filled),
            "expiresAt": None if self.expires_at is None else iso(self.expires_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Resolved:
        if data.get("kind") != "resolved":
            raise ValueError("not resolved dependencies")
        expires = data.get("expiresAt")
        return cls(
            values=dict(data.get("values") or {}),
            facts=dict(data.get("facts") or {}),
            filled=dict(data.get("filled") or {}),
            expires_at=None if expires is None else parse_time(expires),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One option of a selection as the model and the person see it: a stable `id` (derived
    from the candidate, so a re-fetch of the same data gives the same id), its `label` and its
    `facts`. Sensitive fields are never in either."""

    id: str
    label: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "facts": dict(self.facts)}


@dataclass(frozen=True, kw_only=True, slots=True)
class NeedsSelection:
    """Several candidates fit: the runtime pauses on a choice among `candidates` and, once the
    person picked one, calls `resolve_dependencies` again with ``choices={dependency: id}``.
    `full_candidates` are the raw candidates in the same order, sensitive fields included:
    never show or store them where a client can read them. `truncated` is true when there were
    more candidates than `candidates` holds."""

    kind: Literal["needsSelection"] = "needsSelection"
    dependency: str
    tool: str
    candidates: Sequence[Candidate]
    full_candidates: Sequence[Any]
    expires_at: dt.datetime
    truncated: bool = False

    def to_tool_result(self) -> dict[str, Any]:
        """What the model gets while the person chooses: the candidates, no sensitive field."""
        return {
            "status": "needs_selection",
            "dependency": self.dependency,
            "candidates": [c.to_json() for c in self.candidates],
        }

    def choice_options(self) -> list[dict[str, Any]]:
        """The candidates as the ``options`` of a ``choice`` ask (id, label, description from
        the facts)."""
        out: list[dict[str, Any]] = []
        for c in self.candidates:
            option: dict[str, Any] = {"id": c.id, "label": c.label}
            if c.facts:
                text = ", ".join(f"{k}: {v}" for k, v in c.facts.items())
                option["description"] = text if len(text) <= 280 else text[:279] + "…"
            out.append(option)
        return out
