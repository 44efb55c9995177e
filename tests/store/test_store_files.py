"""Uploaded files: bytes in the blob store, never in a row."""

from __future__ import annotations

import asyncio
import datetime as dt
import stat
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from handrail.errors import ConfigError, NotFound
from handrail.store import BlobMissing, BlobStore, LocalBlobStore, Store
from handrail.store.db import first_row
from handrail.store.tables import files

PAYLOAD = b"%PDF-1.7 secret invoice bytes \x00\xff" * 100


async def test_bytes_round_trip(store: Store) -> None:
    record = await store.files.create("u1", "invoice.pdf", "application/pdf", PAYLOAD)
    assert len(record.id) == 24
    assert (record.owner_id, record.filename, record.mime_type) == (
        "u1",
        "invoice.pdf",
        "application/pdf",
    )
    assert record.size == len(PAYLOAD)
    assert record.deleted is False
    assert record.created.utcoffset() == dt.timedelta(0)
    got = await store.files.get(record.id)
    assert got == record
    assert await store.files.read(got) == PAYLOAD
    assert await store.blobs.get(record.blob_key) == PAYLOAD


async def test_empty_file(store: Store) -> None:
    record = await store.files.create("u1", "empty.txt", "text/plain", b"")
    assert record.size == 0
    assert await store.files.read(record) == b""


async def test_the_row_holds_no_bytes(store: Store) -> None:
    record = await store.files.create("u1", "a.bin", "application/octet-stream", PAYLOAD)
    row = await store.db.read(first_row, select(files).where(files.c.id == record.id))
    assert row is not None
    for value in row:
        assert not isinstance(value, bytes | bytearray | memoryview)
        assert "secret invoice" not in str(value)
    assert set(row._mapping) == {
        "id",
        "owner_id",
        "filename",
        "mime_type",
        "size",
        "blob_key",
        "created",
        "deleted_at",
    }


async def test_deleted_files_are_gone(store: Store) -> None:
    record = await store.files.create("u1", "a.txt", "text/plain", b"hello")
    keep = await store.files.create("u1", "b.txt", "text/plain", b"world")
    await store.files.delete(record.id)
    assert await store.files.get(record.id) is None
    deleted = await store.files.get(record.id, include_deleted=True)
    assert deleted is not None
    assert deleted.deleted is True
    with pytest.raises(NotFound):
        await store.files.read(record)
    with pytest.raises(BlobMissing):
        await store.blobs.get(record.blob_key)
    with pytest.raises(NotFound):
        await store.files.delete(record.id)
    with pytest.raises(NotFound):
        await store.files.delete("0" * 24)
    assert await store.files.get("0" * 24) is None
    assert await store.files.read(keep) == b"world"


# --- the local blob store -----------------------------------------------------------------------


async def test_local_blobs_are_private_files(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    assert isinstance(blobs, BlobStore)
    await blobs.put("abc123", b"one")
    await blobs.put("abc123", b"two")  # replaced whole
    assert await blobs.get("abc123") == b"two"
    path = tmp_path / "blobs" / "abc123"
    assert path.read_bytes() == b"two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "blobs").stat().st_mode) == 0o700
    assert sorted(p.name for p in (tmp_path / "blobs").iterdir()) == ["abc123"]  # no temp files
    await blobs.delete("abc123")
    await blobs.delete("abc123")  # missing is fine
    with pytest.raises(BlobMissing):
        await blobs.get("abc123")


@pytest.mark.parametrize(
    "key",
    [
        "",
        ".",
        "..",
        "../x",
        "a/../../x",
        "/etc/passwd",
        "a/b",
        "a\\b",
        ".hidden",
        "x\x00y",
        "é",
        "a" * 201,
    ],
)
async def test_keys_cannot_leave_the_folder(tmp_path: Path, key: str) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    with pytest.raises(ValueError, match="Invalid blob key"):
        await blobs.put(key, b"x")
    with pytest.raises(ValueError, match="Invalid blob key"):
        await blobs.get(key)
    with pytest.raises(ValueError, match="Invalid blob key"):
        await blobs.delete(key)
    assert list(tmp_path.rglob("*")) == []


# --- an insert that fails -------------------------------------------------------------------


def _write_then(store: Store, monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """The store's writes commit, then raise `error` (a cancel, a link lost after the COMMIT):
    their caller cannot tell that they committed."""
    write = store.db.write

    async def committed_then_raises(*args: Any, **kwargs: Any) -> Any:
        await write(*args, **kwargs)
        raise error

    monkeypatch.setattr(store.db, "write", committed_then_raises)


@pytest.mark.parametrize(
    "error", [asyncio.CancelledError(), ConnectionResetError("lost")], ids=["cancel", "link"]
)
async def test_an_insert_that_may_have_committed_keeps_the_bytes(
    store: Store, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    _write_then(store, monkeypatch, error)
    with pytest.raises(type(error)):
        await store.files.create("u1", "a.pdf", "application/pdf", PAYLOAD, file_id="a" * 24)
    monkeypatch.undo()
    record = await store.files.get("a" * 24)
    assert record is not None
    assert await store.files.read(record) == PAYLOAD


async def test_an_insert_refused_removes_the_bytes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("refused before anything was written")

    monkeypatch.setattr(store.db, "write", refused)
    with pytest.raises(ValueError, match="refused"):
        await store.files.create("u1", "a.pdf", "application/pdf", PAYLOAD, file_id="a" * 24)
    monkeypatch.undo()
    with pytest.raises(BlobMissing):
        await store.blobs.get("a" * 24)


def test_an_upload_folder_is_checked_before_it_is_used(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "files"
    LocalBlobStore(folder).check()
    assert folder.is_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert list(folder.iterdir()) == []  # the write's file is gone
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ConfigError) as raised:
        LocalBlobStore(tmp_path / "a-file" / "files").check()
    assert str(raised.value) == (
        f"The upload folder {tmp_path / 'a-file' / 'files'} cannot be used: Not a directory. "
        "Give a folder this user may create and write in."
    )
