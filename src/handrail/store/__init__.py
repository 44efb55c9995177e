"""Storage: histories and their rows, uploaded files, the request log, permission levels,
grants and confirmations, and the per-user event bus (`handrail.store.events`).

SQLAlchemy Core: a SQLite file (WAL) by default, PostgreSQL for several server processes
sharing one database. Each operation is one transaction, run off the event loop (see
`handrail.store.db`). Every change to a history is a compare-and-set on its
version, applied in one transaction. File bytes live in a `BlobStore`, never in a row.

    store = await Store.open("postgresql://app@db/handrail", blob_dir=Path("/srv/files"))
    history = await store.histories.create(user_id, agent="demo")
    ...
    await store.close()
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, bindparam, exists, or_, select
from sqlalchemy.engine import URL

from handrail.store.audit import AuditRepo
from handrail.store.blobs import BlobMissing, BlobStore, LocalBlobStore
from handrail.store.confirmations import (
    CONFIRMATION_STALE,
    CONFIRMATIONS_JSON,
    ConfirmationConflict,
    ConfirmationNotFound,
    ConfirmationNotSending,
    ConfirmationRepo,
    confirmation_records,
    confirmations_of,
)
from handrail.store.db import (
    DEFAULT_URL,
    Database,
    connection_lost,
    database_unreachable,
    driver_url,
    not_up_yet,
    storage_full,
    storage_trouble,
)
from handrail.store.events import EVENT_KINDS, EventBus, EventKind, Subscription, UserEvent
from handrail.store.files import FileRepo
from handrail.store.histories import (
    _LIVE,
    HistoryConflict,
    HistoryRepo,
    load_history,
    read_history_at_once,
)
from handrail.store.leases import LEASE_JSON, LeaseLost, LeaseRepo, lease_from, lease_of
from handrail.store.outbox import EventOutbox
from handrail.store.permissions import GrantConflict, GrantRepo, PermissionRepo
from handrail.store.prepared import Prepared
from handrail.store.records import (
    UNSET,
    AskStatus,
    ConfirmationJSON,
    ConfirmationRecord,
    ConfirmationState,
    FileRecord,
    Grant,
    GrantJSON,
    GrantScope,
    History,
    HistoryChange,
    PermissionLevel,
    PermissionRecord,
    ReleaseLease,
    RequestRecord,
    StoredGrantScope,
    StoredRow,
    TurnLease,
)
from handrail.store.requests import RequestLog, request_record
from handrail.store.running import RunningRepo
from handrail.store.tables import confirmations as _confirmations
from handrail.store.tables import histories as _histories
from handrail.store.tables import turn_leases as _turn_leases
from handrail.store.tokens import TokenRepo

__all__ = [
    "CONFIRMATION_STALE",
    "DEFAULT_URL",
    "EVENT_KINDS",
    "UNSET",
    "AskStatus",
    "BlobMissing",
    "BlobStore",
    "ConfirmationConflict",
    "ConfirmationJSON",
    "ConfirmationNotFound",
    "ConfirmationNotSending",
    "ConfirmationRecord",
    "ConfirmationRepo",
    "ConfirmationState",
    "Database",
    "EventBus",
    "EventKind",
    "FileRecord",
    "FileRepo",
    "Grant",
    "GrantConflict",
    "GrantJSON",
    "GrantRepo",
    "GrantScope",
    "History",
    "HistoryChange",
    "HistoryConflict",
    "HistoryRepo",
    "LeaseLost",
    "LeaseRepo",
    "LocalBlobStore",
    "PermissionLevel",
    "PermissionRecord",
    "PermissionRepo",
    "ReleaseLease",
    "RequestLog",
    "RequestRecord",
    "Store",
    "StoredGrantScope",
    "StoredRow",
    "Subscription",
    "TurnLease",
    "TurnState",
    "UserEvent",
    "connection_lost",
    "database_unreachable",
    "default_blob_dir",
    "local_blobs",
    "not_up_yet",
    "request_record",
    "storage_full",
    "storage_trouble",
]


def default_blob_dir(url: str | URL | None) -> Path:
    """Where uploads go when no folder is given: ``<name>-files`` beside a SQLite file,
    otherwise ``handrail-files`` in the working folder."""
    parsed = driver_url(url)
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and database and database != ":memory:":
        path = Path(database)
        return path.with_name(f"{path.stem}-files")
    return Path("handrail-files")


def local_blobs(url: str | URL | None, blob_dir: Path | None = None) -> LocalBlobStore:
    """The upload folder of the database at `url`: `blob_dir`, or `default_blob_dir`."""
    return LocalBlobStore(blob_dir if blob_dir is not None else default_blob_dir(url))


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnState:
    """What a new turn on a history starts from, read as of one moment."""

    history: History
    rows: list[StoredRow]
    confirmations: list[ConfirmationRecord]
    #: The turn that still has work to do on the history, if any.
    lease: TurnLease | None = None


def _load_turn(connection: Connection, history_id: str) -> TurnState | None:
    loaded = load_history(connection, history_id)
    if loaded is None:
        return None
    history, rows = loaded
    return TurnState(
        history=history,
        rows=rows,
        confirmations=confirmations_of(connection, history_id),
        lease=lease_of(connection, history_id),
    )


async def _load_turn_at_once(db: Database, history_id: str) -> TurnState | None:
    """`_load_turn` in one statement (PostgreSQL): one snapshot without a transaction (a
    long history's rows decoded on a thread, see `read_history_at_once`)."""
    loaded = await read_history_at_once(db, history_id, CONFIRMATIONS_JSON, LEASE_JSON)
    if loaded is None:
        return None
    history, rows, (confirmation_rows, lease_rows) = loaded
    return TurnState(
        history=history,
        rows=rows,
        confirmations=confirmation_records(confirmation_rows),
        lease=lease_from(lease_rows),
    )


#: `Store.turn_unchanged`: one row when the history is live, still at the given version, holds
#: no turn lease and has no confirmation a new turn would report as uncertain.
_UNCHANGED = Prepared(
    select(_histories.c.version).where(
        _histories.c.id == bindparam("history_id"),
        _histories.c.version == bindparam("version"),
        _LIVE,
        ~exists().where(_turn_leases.c.history_id == _histories.c.id),
        ~exists().where(
            _confirmations.c.history_id == _histories.c.id,
            or_(_confirmations.c.state == "consumed", _confirmations.c.state == "uncertain"),
        ),
    )
)


def _turn_unchanged(connection: Connection, history_id: str, version: int) -> bool:
    return _UNCHANGED.first(connection, {"history_id": history_id, "version": version}) is not None


class Store:
    """The database and the blob store, with a repository for each record type."""

    def __init__(self, db: Database, blobs: BlobStore) -> None:
        self.db = db
        self.blobs = blobs
        #: The events webhooks and email send, kept with the changes that make them.
        self.outbox = EventOutbox(db)
        #: The per-user event bus (see `handrail.store.events`).
        self.events = EventBus(db)
        self.histories = HistoryRepo(db, self.outbox, self.events)
        self.files = FileRepo(db, blobs)
        self.requests = RequestLog(db)
        self.permissions = PermissionRepo(db)
        self.grants = GrantRepo(db)
        self.confirmations = ConfirmationRepo(db)
        self.leases = LeaseRepo(db)
        self.running = RunningRepo(db)
        self.tokens = TokenRepo(db)
        self.audit = AuditRepo(db, self.outbox)

    @classmethod
    async def open(
        cls,
        url: str | URL | None = None,
        *,
        blob_dir: Path | None = None,
        blobs: BlobStore | None = None,
        synchronous: str = "FULL",
        migrate: bool = True,
        wait_s: float = 0.0,
    ) -> Store:
        """Connect to `url` (default: `DEFAULT_URL`) and bring its schema up to date.

        Uploads go to `blobs` when given, else to a `LocalBlobStore` in `blob_dir` (default:
        `default_blob_dir`). Several processes sharing a PostgreSQL database need a blob store
        they all reach. `synchronous` is SQLite's ``PRAGMA synchronous``: ``FULL`` (the default:
        a commit is on the disk when it returns) or ``NORMAL`` (faster; in WAL mode a power
        loss or an OS crash may undo the last commits, a crash of the process never does).
        `wait_s` is how long a PostgreSQL server that does not accept connections yet (one
        still starting) is waited for (`Database.migrate`); by default it is not.
        """
        if blobs is None:
            blobs = local_blobs(url, blob_dir)
        db = Database(url, synchronous=synchronous)
        try:
            if migrate:
                await db.migrate(wait_s=wait_s)
        except BaseException:
            await db.close()
            raise
        return cls(db, blobs)

    async def load_turn(self, history_id: str) -> TurnState | None:
        """The history, its rows, its confirmations and its turn lease in one read, or None
        when it does not exist or was deleted."""
        if self.db.backend == "postgresql":
            return await _load_turn_at_once(self.db, history_id)
        return await self.db.quick_snapshot(_load_turn, history_id)

    async def turn_unchanged(self, history_id: str, version: int) -> bool:
        """Whether `load_turn` would give the history at `version` with no lease and no
        confirmation ``consumed`` or ``uncertain``, in one statement (so without a transaction:
        it reads one committed state): the check of a copy of the history this process wrote
        (the runtime's `LastCommits`)."""
        return await self.db.quick_read(_turn_unchanged, history_id, version)

    async def close(self) -> None:
        await self.events.close()
        await self.db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
