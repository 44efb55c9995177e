"""The records the store reads and writes, and the one change a history accepts.

Every change to a history goes through `HistoryChange`, applied with a compare-and-set on the
history's ``(id, version)``: the rows it appends, the ask statuses it sets, the answer rows it
removes (an undo), the ``pendingAsk`` and the title it writes all land in one transaction, or
none of them do and the caller gets `handrail.errors.Conflict`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal, NotRequired, TypedDict

from handrail._util import iso

AskStatus = Literal["pending", "answered", "cancelled"]

#: A user's permission level for a connection (the same values as ``handrail.policy``'s).
PermissionLevel = Literal["ask", "read-only", "non-consequential"]
PERMISSION_LEVELS: Final[tuple[PermissionLevel, ...]] = ("ask", "read-only", "non-consequential")

#: How far an approval reaches (the same values as ``handrail.policy``'s). ``once`` covers the
#: one call and is never stored.
GrantScope = Literal["once", "conversation", "always"]
#: The scopes a stored `Grant` can have.
StoredGrantScope = Literal["conversation", "always"]
STORED_GRANT_SCOPES: Final[tuple[StoredGrantScope, ...]] = ("conversation", "always")


class _Unset(Enum):
    UNSET = "UNSET"


#: "Leave this as it is" in a `HistoryChange`.
UNSET: Final = _Unset.UNSET


@dataclass(frozen=True, kw_only=True, slots=True)
class History:
    """A conversation. `pending_ask` is the full stored ask (with ``promptIndex`` and
    ``responseMessages``), or None. `version` grows by one with every change."""

    id: str
    owner_id: str
    agent: str
    title: str | None
    pending_ask: dict[str, Any] | None
    version: int
    created: dt.datetime
    updated: dt.datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRow:
    """One row of a history, in order. `data` is the row's JSON as the spec's "Stored state"
    describes it (``type``, ``toolName``, ``toolCallId``, ``args``, ``result``, ``ask``...), with
    ``ask.status`` as it is now."""

    seq: int
    data: dict[str, Any]
    created: dt.datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryChange:
    """One atomic change to a history.

    - `append`: new rows, in order, after every row already there.
    - `ask_status`: ``toolCallId -> status`` for ``tool-call`` rows that carry an ``ask``.
    - `remove_results`: ``toolCallId``s whose ``tool-result`` rows are removed (undoing an
      answer).
    - `pending_ask`: the new ``pendingAsk`` (a dict, or None to clear it); `UNSET` keeps it.
    - `title`: the new title; `UNSET` keeps it.
    """

    append: Sequence[dict[str, Any]] = ()
    ask_status: Mapping[str, AskStatus] = field(default_factory=dict)
    remove_results: Sequence[str] = ()
    pending_ask: dict[str, Any] | _Unset | None = UNSET
    title: str | _Unset | None = UNSET


@dataclass(frozen=True, kw_only=True, slots=True)
class FileRecord:
    """An uploaded file. Its bytes live in the blob store under `blob_key`, never in a row."""

    id: str
    owner_id: str
    filename: str
    mime_type: str
    size: int
    blob_key: str
    created: dt.datetime
    deleted: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestRecord:
    """One entry of the request log (the spec's ``AIRequest``): what a turn sent and got, and
    its ask metadata (``ask``, ``nextAsk`` with their phases)."""

    id: str
    history_id: str
    owner_id: str
    request_type: str
    prompt: str
    response: str
    error: str | None
    metadata: dict[str, Any]
    model: str
    created: dt.datetime
    duration_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class PermissionRecord:
    """A user's saved permission level for one connection."""

    user_id: str
    connection_id: str
    level: PermissionLevel
    updated: dt.datetime


class GrantJSON(TypedDict):
    """A grant on the wire (``GET /api/grants``)."""

    id: str
    connectionId: str
    toolName: str
    scope: StoredGrantScope
    historyId: NotRequired[str]
    created: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Grant:
    """A user's standing yes to one tool of one connection: ``always``, or ``conversation``
    for the history `history_id` (None for ``always``)."""

    id: str
    user_id: str
    connection_id: str
    tool_name: str
    scope: StoredGrantScope
    history_id: str | None
    created: dt.datetime

    def to_json(self) -> GrantJSON:
        """The wire form: ``{id, connectionId, toolName, scope, historyId?, created}``."""
        if self.history_id is None:
            return {
                "id": self.id,
                "connectionId": self.connection_id,
                "toolName": self.tool_name,
                "scope": self.scope,
                "created": iso(self.created),
            }
        return {
            "id": self.id,
            "connectionId": self.connection_id,
            "toolName": self.tool_name,
            "scope": self.scope,
            "historyId": self.history_id,
            "created": iso(self.created),
        }
