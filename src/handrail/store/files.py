"""Uploaded files: a row with the name, type and size, and the bytes in a `BlobStore`.

A file's bytes are put before its row is inserted, and its row is marked deleted before its
bytes are removed, so a row never names missing bytes. What a process that stops between the
two leaves goes with the sweep of bytes no upload names (`FileRepo.sweep_blobs`, see
`handrail.store.blob_sweep`), for which the database registers in the blob folder before its
first put.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select, update

from handrail._util import new_id, utc_now
from handrail.errors import FileNotFound
from handrail.store.blob_sweep import BlobSweep
from handrail.store.blobs import BlobMissing, BlobStore
from handrail.store.db import Database, all_rows, first_row, may_have_committed, row_count
from handrail.store.records import FileRecord
from handrail.store.tables import files

__all__ = ["FileRepo"]

F = files.c


class FileRepo:
    """Files by id. The bytes are written to the blob store before the row, so a row never
    names missing bytes (they are removed again only when the row's insert surely failed);
    deleting marks the row deleted, then removes the bytes."""

    def __init__(self, db: Database, blobs: BlobStore) -> None:
        self._db = db
        self._blobs = blobs
        #: The database's registration in the blob folder and the folder's sweep.
        self.blob_sweep = BlobSweep(db, blobs)

    async def create(
        self,
        owner_id: str,
        filename: str,
        mime_type: str,
        data: bytes,
        *,
        file_id: str | None = None,
    ) -> FileRecord:
        """A new file of `owner_id` with the bytes `data`, under `file_id` when it is given (an
        id chosen before, from `new_id`), else a new one."""
        file_id = file_id or new_id()
        values: dict[str, Any] = {
            "id": file_id,
            "owner_id": owner_id,
            "filename": filename,
            "mime_type": mime_type,
            "size": len(data),
            "blob_key": file_id,
            "created": utc_now(),
            "deleted_at": None,
        }
        await self.blob_sweep.before_put()
        await self._blobs.put(file_id, bytes(data))
        try:
            await self._db.write(row_count, insert(files).values(values))
        except BaseException as error:
            # A row that may be in keeps its bytes (if it is not, the sweep removes them).
            if not may_have_committed(error):
                with contextlib.suppress(Exception):
                    await self._blobs.delete(file_id)
            raise
        return _record(values)

    async def get(self, file_id: str, *, include_deleted: bool = False) -> FileRecord | None:
        """The file's record, or None (also when it was deleted, unless `include_deleted`)."""
        query = select(files).where(F.id == file_id)
        if not include_deleted:
            query = query.where(F.deleted_at.is_(None))
        row = await self._db.read(first_row, query)
        return None if row is None else _record(row._mapping)

    async def ids_of(self, owner_id: str, *, created_before: dt.datetime) -> list[str]:
        """The ids of the live files of `owner_id` created before `created_before` (a look-up
        on the owner's index)."""
        query = select(F.id).where(
            F.owner_id == owner_id, F.deleted_at.is_(None), F.created < created_before
        )
        return [row.id for row in await self._db.read(all_rows, query)]

    async def read(self, record: FileRecord) -> bytes:
        """The file's bytes. Raises `FileNotFound` when they are gone (the file was deleted)."""
        try:
            return await self._blobs.get(record.blob_key)
        except BlobMissing:
            raise FileNotFound(f"The bytes of file {record.id} are gone.") from None

    async def delete(self, file_id: str) -> None:
        """Mark the file deleted and remove its bytes. `FileNotFound` when there is no such file
        (or it was deleted already)."""
        row = await self._db.write(
            first_row,
            update(files)
            .where(F.id == file_id, F.deleted_at.is_(None))
            .values(deleted_at=utc_now())
            .returning(F.blob_key),
        )
        if row is None:
            raise FileNotFound(f"No file {file_id}.")
        await self._blobs.delete(row.blob_key)

    async def sweep_blobs(self, now: dt.datetime | None = None) -> list[str]:
        """Remove the bytes no live file names and the temporary files of puts that a stopped
        process left in the blob folder, when it is safe (`BlobSweep.sweep`); their names."""
        return await self.blob_sweep.sweep(now)


def _record(row: Mapping[Any, Any]) -> FileRecord:
    return FileRecord(
        id=row["id"],
        owner_id=row["owner_id"],
        filename=row["filename"],
        mime_type=row["mime_type"],
        size=row["size"],
        blob_key=row["blob_key"],
        created=row["created"],
        deleted=row["deleted_at"] is not None,
    )
