"""The sweep of bytes no upload names.

A file's bytes are put before its row is inserted, and its row is marked deleted before its
bytes are removed, so a row never names missing bytes; a process that stops between the two
leaves bytes that no live row names, and one that stops while writing them leaves a temporary
file. `BlobSweep.sweep` (run by the recovery sweeper at its first round and hourly after)
removes them from a blob store that registers and lists (`SweptBlobStore`, as the local
folder does):

- temporary files written more than `ORPHAN_BLOB_AGE` ago, always: no row names one;
- bytes that no live row names, only while the folder has exactly one database registered,
  this one. Each database registers before its first put (once a process) and at every sweep,
  so a folder two databases share (on PostgreSQL the default ``handrail-files`` in the working
  folder, whatever the database) is never swept, and the sweep logs once why and the way
  forward. A registration names the database's id (``settings.database_id``) and where it is
  (the SQLite file; the PostgreSQL cluster and database), so a copy of a database is another;
- of those, only bytes written more than `ORPHAN_BLOB_AGE` ago (far longer than any upload
  takes from its put to its row's commit, so an upload in flight is never removed) and after
  the database registered in the folder (bytes from before, perhaps another database's, stay);
- at most `SWEEP_BLOBS` blobs looked at a run, each run going on where the last one stopped.

Every removal is logged.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
from typing import Final

from sqlalchemy import Connection, select, text

from handrail._util import utc_now
from handrail.store.blobs import BlobStore, Registered, SweptBlobStore
from handrail.store.db import Database
from handrail.store.tables import files, settings

__all__ = ["ORPHAN_BLOB_AGE", "SWEEP_BLOBS", "BlobSweep"]

log = logging.getLogger("handrail.store")

#: How long ago bytes no live upload names (or a put's temporary file) must have been written
#: before the sweep removes them.
ORPHAN_BLOB_AGE: Final = dt.timedelta(days=1)
#: How many blobs (and temporary files) one sweep looks at, at most.
SWEEP_BLOBS: Final = 1000

F = files.c


class BlobSweep:
    """The registration of a database in its blob folder, and the sweep of that folder."""

    def __init__(self, db: Database, blobs: BlobStore) -> None:
        self._db = db
        self._blobs = blobs
        #: How old the bytes the sweep removes must be (`ORPHAN_BLOB_AGE`; shorter in tests).
        self.orphan_age = ORPHAN_BLOB_AGE
        self._identity: tuple[str, str] | None = None
        self._registered = False
        self._after = ""  # the last key the sweep looked at ("" : from the start)
        self._off: tuple[str, ...] | None = None  # the registrations the sweep was off for

    async def before_put(self) -> None:
        """Register this database in the blob folder, once a process, before its first put."""
        if not self._registered and isinstance(self._blobs, SweptBlobStore):
            await self._register(self._blobs)

    async def _register(
        self, blobs: SweptBlobStore, *, make: bool = True
    ) -> tuple[str, Registered]:
        if self._identity is None:
            self._identity = await _identity(self._db)
        name, about = self._identity
        registered = await blobs.register(name, about, make=make)
        self._registered = self._registered or bool(registered.names)
        return name, registered

    async def sweep(self, now: dt.datetime | None = None) -> list[str]:
        """Remove what a stopped put or delete left in the blob folder (see the module); the
        names removed. Nothing when the blob store does not register and list."""
        blobs = self._blobs
        if not isinstance(blobs, SweptBlobStore):
            return []
        before = ((now or utc_now()) - self.orphan_age).timestamp()
        removed = await blobs.drop_temp_files(before, SWEEP_BLOBS)
        for temp in removed:
            log.warning("removed %s from %r: the temporary file of a put that stopped", temp, blobs)
        # Again at every sweep, in case its file was removed; no folder is made for it.
        name, registered = await self._register(blobs, make=False)
        if not registered.names:
            return removed  # no folder: nothing in it
        if registered.names != (name,):
            if self._off != registered.names:
                self._off = registered.names
                log.warning(
                    "the sweep of bytes no upload names is off for %r: %d databases keep "
                    "their uploads there (%s), and the bytes of one are not named by the "
                    "others' rows. Give each database its own folder (blob_dir in the "
                    "configuration, or HANDRAIL_BLOB_DIR), then remove from this one the "
                    ".database-<name> file of each database that no longer uses it",
                    blobs,
                    len(registered.names),
                    ", ".join(registered.names),
                )
            return removed
        self._off = None
        listed = await blobs.listed(self._after, SWEEP_BLOBS)
        self._after = listed[-1].key if len(listed) == SWEEP_BLOBS else ""
        old = [e for e in listed if registered.since <= e.written < before]
        named = await self._db.read(_named, [e.key for e in old]) if old else set()
        for entry in old:
            if entry.key not in named and await blobs.drop(entry.key, before):
                log.warning(
                    "removed blob %s (%d bytes, written %s) from %r: no upload names it",
                    entry.key,
                    entry.size,
                    dt.datetime.fromtimestamp(entry.written, dt.UTC).isoformat(),
                    blobs,
                )
                removed.append(entry.key)
        return removed


def _named(connection: Connection, keys: list[str]) -> set[str]:
    """Those of `keys` that a live upload names (by its index on the blob key)."""
    query = select(F.blob_key).where(F.blob_key.in_(keys), F.deleted_at.is_(None))
    return {row.blob_key for row in connection.execute(query)}


async def _identity(db: Database) -> tuple[str, str]:
    """The name this database registers under in a blob folder, and what it says of where the
    database is: its id and a digest of where it is (a copy of a database has another)."""
    database_id, about = await db.read(_where)
    if db.backend == "postgresql":
        try:
            system = await db.read(_system_identifier)
        except Exception:  # a role that may not read it: another name than one that may
            log.info("could not read the PostgreSQL cluster's system identifier", exc_info=True)
            system = "unknown"
        about = f"{about} in cluster {system}"
    digest = hashlib.sha256(about.encode()).hexdigest()[:16]
    return f"{database_id}-{digest}", about


def _where(connection: Connection) -> tuple[str, str]:
    database_id = connection.execute(
        select(settings.c.value).where(settings.c.name == "database_id")
    ).scalar_one()
    if connection.dialect.name == "sqlite":
        files_of = {row[1]: row[2] for row in connection.execute(text("PRAGMA database_list"))}
        main = files_of.get("main") or ""
        return str(database_id), f"sqlite {os.path.realpath(main) if main else ':memory:'}"
    row = connection.execute(
        text("SELECT current_database(), oid FROM pg_database WHERE datname = current_database()")
    ).one()
    return str(database_id), f"postgresql database {row[0]} (oid {row[1]})"


def _system_identifier(connection: Connection) -> str:
    return str(
        connection.execute(text("SELECT system_identifier FROM pg_control_system()")).scalar_one()
    )
