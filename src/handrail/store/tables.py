"""The tables, as SQLAlchemy Core. The migrations in ``migrations/versions`` create exactly
these (a test compares them); change both together, in a new migration.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)

from handrail.store._types import JSONData, UTCDateTime

__all__ = [
    "activity",
    "answer_links",
    "api_tokens",
    "confirmations",
    "connections",
    "deliveries",
    "delivery_attempts",
    "files",
    "grants",
    "histories",
    "history_rows",
    "metadata",
    "open_gates",
    "outbox_events",
    "permissions",
    "requests",
    "running_turns",
    "settings",
]

#: Constraint names are fixed, so migrations can name them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

ID = 24  # new_id() and new_sorted_id(): 24 lowercase hex characters
NAME = 255

#: Conversations. `version` grows by one with every change (the compare-and-set key);
#: `next_seq` is the `seq` the next appended row gets, so a removed row's seq is never reused.
histories = Table(
    "histories",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("owner_id", String(NAME), nullable=False),
    Column("agent", String(NAME), nullable=False),
    Column("title", Text, nullable=True),
    Column("pending_ask", JSONData, nullable=True),
    Column("pending_created", UTCDateTime, nullable=True),
    Column("version", Integer, nullable=False),
    Column("next_seq", Integer, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("updated", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
    # What a search matches, case-folded (see `handrail.store.search`).
    Column("title_key", Text, nullable=True),
    Column("ask_key", Text, nullable=True),
    # The two lists, each one range of its own partial index (see `store.paging`).
    Index(
        None,
        "owner_id",
        "created",
        "id",
        sqlite_where=text("deleted_at IS NULL"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
    Index(
        None,
        "owner_id",
        "pending_created",
        "id",
        sqlite_where=text("deleted_at IS NULL AND pending_created IS NOT NULL"),
        postgresql_where=text("deleted_at IS NULL AND pending_created IS NOT NULL"),
    ),
)

#: The rows of a history, in `seq` order. `type`, `tool_call_id` and `ask_status` are copied
#: out of `data` to be queried; `ask_status` is the truth for ``data.ask.status``.
history_rows = Table(
    "history_rows",
    metadata,
    # No foreign key to `histories`: a row is only written by a history change, which moves
    # that history's version on first (by compare-and-set) and writes nothing when it is
    # missing, and no history is ever removed (migration 0019 says what the key cost).
    Column("history_id", String(ID), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("type", String(64), nullable=False),
    Column("tool_call_id", String(NAME), nullable=True),
    Column("ask_status", String(16), nullable=True),
    Column("data", JSONData, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    # A message's text, case-folded, for search (see `handrail.store.search`).
    Column("text_key", Text, nullable=True),
    PrimaryKeyConstraint("history_id", "seq"),
    # Only the rows with a call id: an ask's status and an undo's results look one up by it, and
    # a message row then writes no page of this index.
    Index(
        None,
        "history_id",
        "tool_call_id",
        sqlite_where=text("tool_call_id IS NOT NULL"),
        postgresql_where=text("tool_call_id IS NOT NULL"),
    ),
)

#: Uploaded files. The bytes live in the blob store under `blob_key`, never here.
files = Table(
    "files",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("owner_id", String(NAME), nullable=False),
    Column("filename", Text, nullable=False),
    Column("mime_type", String(NAME), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("blob_key", String(NAME), nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=True),
    Index(None, "owner_id"),
    # The sweep of bytes no upload names looks blobs up by their key.
    Index(None, "blob_key"),
)

#: Facts about the database itself, by name: ``database_id``, made once by migration 0017,
#: names the database in the blob folders it registers with (`handrail.store.blob_sweep`).
settings = Table(
    "settings",
    metadata,
    Column("name", String(NAME), primary_key=True),
    Column("value", Text, nullable=False),
)

#: The request log (the spec's ``AIRequest``).
requests = Table(
    "requests",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("history_id", String(ID), nullable=False),
    Column("owner_id", String(NAME), nullable=False),
    Column("request_type", String(64), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("error", Text, nullable=True),
    Column("metadata", JSONData, nullable=False),
    Column("model", String(NAME), nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Index(None, "history_id", "created"),
)

#: A user's permission level for one connection (``ask``, ``read-only``, ``non-consequential``).
#: No row: the user has not chosen yet, and the first call asks.
permissions = Table(
    "permissions",
    metadata,
    Column("user_id", String(NAME), nullable=False),
    Column("connection_id", String(NAME), nullable=False),
    Column("level", String(32), nullable=False),
    Column("updated", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("user_id", "connection_id"),
)

#: A user's standing yes to one tool of one connection: ``always``, or ``conversation`` for the
#: history in `history_id`. A "this call only" answer is never stored. The two partial unique
#: indexes keep one grant per key, so adding the same grant again (even at the same moment,
#: from another process) finds the first one.
grants = Table(
    "grants",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("user_id", String(NAME), nullable=False),
    Column("connection_id", String(NAME), nullable=False),
    Column("tool_name", String(NAME), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("history_id", String(ID), nullable=True),
    Column("created", UTCDateTime, nullable=False),
    CheckConstraint(
        "(scope = 'always' AND history_id IS NULL)"
        " OR (scope = 'conversation' AND history_id IS NOT NULL)",
        name="scope",
    ),
    Index(None, "user_id", "connection_id", "tool_name"),
    Index(
        "uq_grants_always",
        "user_id",
        "connection_id",
        "tool_name",
        unique=True,
        sqlite_where=text("scope = 'always'"),
        postgresql_where=text("scope = 'always'"),
    ),
    Index(
        "uq_grants_conversation",
        "user_id",
        "connection_id",
        "tool_name",
        "history_id",
        unique=True,
        sqlite_where=text("scope = 'conversation'"),
        postgresql_where=text("scope = 'conversation'"),
    ),
)

#: Prepared side-effecting HTTP requests waiting for (or past) the person's confirmation. The
#: `request` is its stored form (never a secret: credentials are added when it is sent); the
#: `digest` binds it to its history, user, tool, arguments, dependency values and preview.
#: `state` moves ``pending`` -> ``consumed`` (a compare-and-set, before sending) ->
#: ``succeeded`` / ``failed``, or ``pending`` -> ``cancelled`` / ``stale``; a ``consumed`` row
#: whose `lease_until` passed with no `outcome` becomes ``uncertain``.
confirmations = Table(
    "confirmations",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("history_id", String(ID), nullable=False),
    Column("user_id", String(NAME), nullable=False),
    Column("connection_id", String(NAME), nullable=False),
    Column("tool_name", String(NAME), nullable=False),
    Column("tool_call_id", String(NAME), nullable=False),
    Column("request", JSONData, nullable=False),
    Column("digest", String(NAME), nullable=False),
    Column("preview", JSONData, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("state", String(16), nullable=False),
    Column("lease_until", UTCDateTime, nullable=True),
    Column("outcome", JSONData, nullable=True),
    Column("created", UTCDateTime, nullable=False),
    Column("updated", UTCDateTime, nullable=False),
    CheckConstraint(
        "state IN ('pending', 'consumed', 'succeeded', 'failed', 'cancelled', 'stale',"
        " 'uncertain')",
        name="state",
    ),
    Index(None, "history_id", "created"),
    Index(None, "state", "lease_until"),
)

#: The turn that has work to do after a committed answer or message: the process that runs it
#: (`owner`) holds it until `until` and renews it with a heartbeat; when `until` passes, any
#: live process may take the turn over. `state` says what the turn was doing (``kind``:
#: ``answer`` or ``prompt``, the answered ask, the answer). Written and removed in the same
#: transaction as the history change that starts and ends the turn.
turn_leases = Table(
    "turn_leases",
    metadata,
    Column("history_id", String(ID), primary_key=True),
    Column("owner", String(NAME), nullable=False),
    Column("until", UTCDateTime, nullable=False),
    Column("state", JSONData, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    # No index on `until`: the table holds only the turns running now (and those of a process
    # that stopped, until they are taken over), so the sweep for lapsed ones reads it whole,
    # and each lease written or removed writes one page fewer.
)

#: The turns running now, in any process, and what each does (its last ``turn.progress``): the
#: history view shows it. The process that runs the turn keeps its row and renews `until`; a
#: row whose `until` passed belongs to a process that stopped, and is read as not running.
running_turns = Table(
    "running_turns",
    metadata,
    Column("history_id", String(ID), primary_key=True),
    Column("turn_id", String(ID), nullable=False),
    Column("owner", String(NAME), nullable=False),
    Column("phase", String(32), nullable=False),
    Column("tool_name", Text, nullable=True),
    Column("tool_call_id", String(NAME), nullable=True),
    Column("since", UTCDateTime, nullable=False),
    Column("until", UTCDateTime, nullable=False),
    Column("tool_title", Text, nullable=True),
    Index(None, "owner"),
)

#: Connections an admin saved while the server runs (MCP servers, HTTP action sets). `app` is a
#: catalog slug or ``custom`` (whose `launch` says how to start or reach it); `settings` are the
#: public values; `secrets` is one Fernet token (ciphertext only: no secret is ever stored
#: plainly) and `secret_keys` names the secrets it holds. `prefix` starts the names the model
#: calls its tools by, so it is unique. `tools` is the last listing, `status` how the last
#: start went. `version` grows with every change an admin makes (processes restart their link
#: when it changes); status and listings leave it as it is. `approvals` names who must approve
#: its tools' calls (an admin's setting, per connection and per tool).
connections = Table(
    "connections",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("app", String(NAME), nullable=False),
    Column("name", String(NAME), nullable=False),
    Column("prefix", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("launch", JSONData, nullable=True),
    Column("protocol", String(16), nullable=False),
    Column("settings", JSONData, nullable=False),
    Column("secrets", Text, nullable=True),
    Column("secret_keys", JSONData, nullable=False),
    Column("trusted", Boolean, nullable=False),
    Column("agents", JSONData, nullable=True),
    Column("overrides", JSONData, nullable=False),
    Column("agent_instructions", JSONData, nullable=True),
    Column("approvals", JSONData, nullable=True),
    Column("status", JSONData, nullable=False),
    Column("tools", JSONData, nullable=False),
    Column("server_instructions", Text, nullable=True),
    Column("call_timeout", Float, nullable=True),
    Column("version", Integer, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("updated", UTCDateTime, nullable=False),
    Index("uq_connections_prefix", "prefix", unique=True),
)

#: What admins changed, newest first: who (`actor`), what (`action`, such as
#: ``connection.created``), on what (`subject`, a connection id) and the changed fields
#: (`changes`, never a secret's value).
activity = Table(
    "activity",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("actor", String(NAME), nullable=False),
    Column("action", String(64), nullable=False),
    Column("subject", String(NAME), nullable=False),
    Column("changes", JSONData, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    # The audit log's gate records: the conversation, its owner and the tool of the gate.
    Column("history_id", String(ID), nullable=True),
    Column("owner_id", String(NAME), nullable=True),
    Column("tool", String(NAME), nullable=True),
    Index(None, "created", "id"),
    Index(None, "owner_id", "created"),
    Index(None, "actor", "created"),
    # A gate's ``gate.asked`` record by its conversation and gate (`AuditRepo.approvers_of`).
    Index(
        "ix_activity_gate_asked",
        "history_id",
        "subject",
        sqlite_where=text("action = 'gate.asked'"),
        postgresql_where=text("action = 'gate.asked'"),
    ),
)

#: The gates that wait with a clock or for other people: one per history (its pending ask),
#: written with the pending ask in the same transaction, gone when the ask is. `expires` and
#: `remind` are when the sweeper cancels it (reason ``expired``) or marks it for a reminder
#: (`reminded`); `approvers` are the user ids (or ``admins``) whose inbox shows it.
open_gates = Table(
    "open_gates",
    metadata,
    Column("history_id", String(ID), primary_key=True),
    Column("ask_id", String(NAME), nullable=False),
    Column("owner_id", String(NAME), nullable=False),
    Column("origin", String(64), nullable=True),
    Column("tool", String(NAME), nullable=True),
    Column("approvers", JSONData, nullable=True),
    Column("expires", UTCDateTime, nullable=True),
    Column("remind", UTCDateTime, nullable=True),
    Column("reminded", UTCDateTime, nullable=True),
    Column("created", UTCDateTime, nullable=False),
    Index(None, "expires"),
    Index(None, "remind"),
)

#: The outbox of webhooks and emails: one row per event and target (a webhook's name, or the
#: user an email goes to), written once (`event_id` with the channel and target is unique, so
#: an event enqueued twice is delivered once). `status` is ``pending`` until an attempt
#: succeeds (``delivered``) or the attempts run out (``failed``); `next_attempt` is when it is
#: due, and a process that claims it moves it on, so two processes never send it at once.
deliveries = Table(
    "deliveries",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("event_id", String(NAME), nullable=False),
    Column("channel", String(16), nullable=False),
    Column("target", String(NAME), nullable=False),
    Column("user_id", String(NAME), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("payload", JSONData, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt", UTCDateTime, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("created", UTCDateTime, nullable=False),
    Column("updated", UTCDateTime, nullable=False),
    Index("uq_deliveries_channel_target_event_id", "channel", "target", "event_id", unique=True),
    Index(None, "status", "next_attempt"),
    Index(None, "user_id", "created", "id"),
)

#: The events a change committed for webhooks and email (ask created, reminded, answered,
#: cancelled), written in the change's own transaction: reach turns each into its deliveries
#: and removes it in one transaction, so a committed change always has its deliveries queued,
#: even when its process stopped before publishing the event. `claimed_until` holds it for
#: the process that took it.
outbox_events = Table(
    "outbox_events",
    metadata,
    Column("id", String(NAME), primary_key=True),
    Column("kind", String(64), nullable=False),
    Column("event", JSONData, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Column("claimed_until", UTCDateTime, nullable=True),
    Index(None, "created"),
)

#: The delivery log: each attempt of a delivery, its HTTP status (webhooks) or its error.
delivery_attempts = Table(
    "delivery_attempts",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column(
        "delivery_id",
        String(ID),
        ForeignKey("deliveries.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("attempt", Integer, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("duration_ms", Integer, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Index(None, "delivery_id", "attempt"),
)

#: The one-time links of an email, one per card button: the link's token carries this id and
#: an HMAC of it, so a guessed id opens nothing. `used` is set, once, by the click that answers.
answer_links = Table(
    "answer_links",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("user_id", String(NAME), nullable=False),
    Column("history_id", String(ID), nullable=False),
    Column("tool_call_id", String(NAME), nullable=False),
    Column("button_id", String(NAME), nullable=False),
    Column("expires", UTCDateTime, nullable=False),
    Column("used", UTCDateTime, nullable=True),
    Column("created", UTCDateTime, nullable=False),
    Index(None, "history_id", "tool_call_id"),
)


#: Short-lived bearer tokens an admin minted for one user (``POST /api/tokens``): only the
#: SHA-256 hex of the token is kept; it names the user it speaks for and when it stops working.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("user_id", String(NAME), nullable=False),
    Column("created_by", String(NAME), nullable=False),
    Column("expires", UTCDateTime, nullable=False),
    Column("created", UTCDateTime, nullable=False),
    Index(None, "expires"),
)
