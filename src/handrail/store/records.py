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
from urllib.parse import urlsplit

from handrail._frozen import slot_init
from handrail._util import iso
from handrail.asks.pending import PendingAsk

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


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class History:
    """A conversation. `pending_ask` is the ask it waits on (with what the paused turn
    replays), or None. `version` grows by one with every change."""

    id: str
    owner_id: str
    agent: str
    title: str | None
    pending_ask: PendingAsk | None
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


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryChange:
    """One atomic change to a history.

    - `append`: new rows, in order, after every row already there.
    - `ask_status`: ``toolCallId -> status`` for ``tool-call`` rows that carry an ``ask``.
    - `remove_results`: ``toolCallId``s whose ``tool-result`` rows are removed (undoing an
      answer).
    - `pending_ask`: the new `PendingAsk` (None clears it); `UNSET` keeps it.
    - `title`: the new title; `UNSET` keeps it.
    - `audit`: the audit records of what the change does to the history's gate.
    - `events`: the `UserEvent`s the change makes, published by `HistoryRepo.apply` (on
      PostgreSQL to the other processes by its transaction, here once it committed); those
      webhooks and email send are also written to the event outbox in its transaction
      (`handrail.store.outbox`).
    - `lease`: the turn lease to hold from this change on (a `TurnLease`); `ReleaseLease`
      to end the lease its owner holds (the change fails with `LeaseLost` when another
      process took it over); None to drop any lease; `UNSET` leaves it as it is.
    - `synced`: False for a change that holds nothing a person gave and whose loss would be
      made good, so that its commit need not wait for the disk
      (`handrail.store.db.unsynced`): a turn's last change that ends the lease its committed
      input took, which the lease would redo (`TurnEnd.commit`). A change whose events the
      event outbox keeps waits for the disk whatever this says.
    """

    append: Sequence[dict[str, Any]] = ()
    ask_status: Mapping[str, AskStatus] = field(default_factory=dict)
    remove_results: Sequence[str] = ()
    pending_ask: PendingAsk | _Unset | None = UNSET
    title: str | _Unset | None = UNSET
    lease: TurnLease | ReleaseLease | _Unset | None = UNSET
    #: Audit log records (`handrail.store.audit`) written in the same transaction.
    audit: Sequence[Any] = ()
    #: The `UserEvent`s the change makes (see above).
    events: Sequence[Any] = ()
    #: Whether the change's commit waits for the disk (see above).
    synced: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseLease:
    """End the turn lease `owner` holds, in the same change as the turn's last rows."""

    owner: str


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class TurnLease:
    """A turn that has work to do after a committed answer or message, held by `owner` (a
    process) until `until`. `state` is what the turn was doing, for whoever takes it over."""

    history_id: str
    owner: str
    until: dt.datetime
    state: dict[str, Any]
    created: dt.datetime


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


@slot_init
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


#: Where a confirmation is: ``pending`` (waiting for the person), ``consumed`` (confirmed and
#: being sent), ``succeeded`` / ``failed`` (sent; the outcome is recorded), ``cancelled``
#: (refused, or replaced by a new message), ``stale`` (expired or its context changed before it
#: was confirmed), ``uncertain`` (consumed, but no outcome was recorded before its lease ended).
ConfirmationState = Literal[
    "pending", "consumed", "succeeded", "failed", "cancelled", "stale", "uncertain"
]
CONFIRMATION_STATES: Final[tuple[ConfirmationState, ...]] = (
    "pending",
    "consumed",
    "succeeded",
    "failed",
    "cancelled",
    "stale",
    "uncertain",
)


class ConfirmationRequestJSON(TypedDict):
    """What the wire shows of a prepared request: its method and URL path, never its query,
    headers or body."""

    method: str
    path: str


class ConfirmationJSON(TypedDict):
    """A confirmation on the wire (``GET /api/confirmations/{id}``)."""

    id: str
    historyId: str
    toolCallId: str
    connectionId: str
    toolName: str
    state: ConfirmationState
    request: ConfirmationRequestJSON
    preview: dict[str, Any]
    expiresAt: str
    outcome: NotRequired[dict[str, Any]]
    created: str
    updated: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfirmationRecord:
    """A prepared side-effecting HTTP request and where it is in its life (`state`).

    `request` is the prepared request's stored form (never a secret: credentials are added when
    it is sent); `digest` binds it to its history, user, tool, arguments, dependency values and
    preview; `lease_until` is set when it is consumed: past it, with no `outcome`, it becomes
    ``uncertain``. `outcome` is the API's answer or error once sent, or why it never was.
    """

    id: str
    history_id: str
    user_id: str
    connection_id: str
    tool_name: str
    tool_call_id: str
    request: dict[str, Any]
    digest: str
    preview: dict[str, Any]
    expires_at: dt.datetime
    state: ConfirmationState
    lease_until: dt.datetime | None
    outcome: dict[str, Any] | None
    created: dt.datetime
    updated: dt.datetime

    def to_json(self) -> ConfirmationJSON:
        """The wire form: ``{id, historyId, toolCallId, connectionId, toolName, state,
        request: {method, path}, preview, expiresAt, outcome?, created, updated}``. Of the
        request only the method and the URL's path are shown: its query, headers and body (an
        idempotency key, a dependency's token) never leave the server."""
        body: ConfirmationJSON = {
            "id": self.id,
            "historyId": self.history_id,
            "toolCallId": self.tool_call_id,
            "connectionId": self.connection_id,
            "toolName": self.tool_name,
            "state": self.state,
            "request": _request_summary(self.request),
            "preview": self.preview,
            "expiresAt": iso(self.expires_at),
            "created": iso(self.created),
            "updated": iso(self.updated),
        }
        if self.outcome is not None:
            body["outcome"] = self.outcome
        return body


def _request_summary(request: Mapping[str, Any]) -> ConfirmationRequestJSON:
    """``{method, path}`` of a stored request: its ``method``, and the path of its ``url`` (or
    its ``path``), without query or fragment."""
    method = request.get("method")
    url = request.get("url")
    if not isinstance(url, str):
        url = request.get("path")
    path = (urlsplit(url).path or "/") if isinstance(url, str) else ""
    return {"method": method.upper() if isinstance(method, str) else "", "path": path}
