"""Blob stores: where uploaded files' bytes live, by key. Rows only ever hold the key.

`LocalBlobStore` keeps one file per key in a folder. Keys are plain names (letters, digits,
``.``, ``_`` and ``-``, starting with a letter or digit), so no key can reach outside it.
Names that start with ``.`` are never keys: a put's temporary file (``.tmp-*``) and the
registration of each database whose uploads the folder holds (``.database-*``). It is also a
`SweptBlobStore`: it lists its blobs and registrations for the sweep of bytes no upload names
(`handrail.store.blob_sweep`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import heapq
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

from handrail.errors import ConfigError, HandrailError

__all__ = [
    "BlobEntry",
    "BlobMissing",
    "BlobStore",
    "LocalBlobStore",
    "Registered",
    "SweptBlobStore",
    "check_blob_key",
]

_KEY: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
#: The names the sweep may remove: an upload's key as `FileRepo.create` makes it (`new_id`: 24
#: lowercase hex characters). Anything else in the folder (a database file set beside it, a
#: config, another program's files) is never touched, whatever its age.
_SWEPT_KEY: Final = re.compile(r"[0-9a-f]{24}")
#: The start of a put's temporary file's name, and of a database's registration's.
TEMP_PREFIX: Final = ".tmp-"
REGISTERED_PREFIX: Final = ".database-"


class BlobMissing(HandrailError, LookupError):
    """No blob has this key."""


@runtime_checkable
class BlobStore(Protocol):
    """Bytes by key. `put` replaces a blob atomically; `delete` of a missing key is a no-op;
    `get` of a missing key raises `BlobMissing`."""

    async def put(self, key: str, data: bytes) -> None: ...

    async def get(self, key: str) -> bytes: ...

    async def delete(self, key: str) -> None: ...


@dataclass(frozen=True, slots=True)
class BlobEntry:
    """A blob as the folder lists it: its key, size, and when it was last written (as a Unix
    time: the later of its modification and its status change, so a file restored with an old
    modification time counts as written when it was restored)."""

    key: str
    size: int
    written: float


@dataclass(frozen=True, slots=True)
class Registered:
    """The databases registered in a blob folder, after one registered itself: `since` is
    when that one was first registered there (a Unix time), `names` every registration."""

    since: float
    names: tuple[str, ...]


@runtime_checkable
class SweptBlobStore(BlobStore, Protocol):
    """A blob store that knows which databases keep their uploads in it and lists its blobs,
    for the sweep of bytes no upload names."""

    async def register(self, name: str, about: str, *, make: bool = True) -> Registered:
        """Record (once) that the database `name` (described by `about`) keeps uploads here;
        not `make`: only in a folder that exists (else no names, and nothing is made)."""
        ...

    async def listed(self, after: str, limit: int) -> list[BlobEntry]:
        """The first `limit` blobs whose keys come after `after`, in key order."""
        ...

    async def drop(self, key: str, written_before: float) -> bool:
        """Remove the blob `key` if it was written before `written_before`; whether it did."""
        ...

    async def drop_temp_files(self, written_before: float, limit: int) -> list[str]:
        """Remove up to `limit` temporary files of puts written before `written_before` (left
        by a process that stopped while writing); their names."""
        ...


def check_blob_key(key: str) -> str:
    """`key` when it is a plain name a blob store accepts, else `ValueError`."""
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        raise ValueError(
            f"Invalid blob key {key!r}: use 1-200 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return key


class LocalBlobStore:
    """Blobs as files in `root` (created with mode 0700 when missing). Each file is written to
    a temporary name, flushed to disk and renamed into place, with mode 0600."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        """The file that holds `key`."""
        return self.root / check_blob_key(key)

    def check(self) -> None:
        """Make the folder when missing and write a file in it, so that a folder that cannot
        be used stops a server's start (`ConfigError`, saying why) rather than its uploads."""
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            # A put's temporary name: one a crash leaves is swept like theirs.
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=TEMP_PREFIX):
                pass
        except OSError as exc:
            raise ConfigError(
                f"The upload folder {self.root} cannot be used: {exc.strerror or exc}. Give a "
                "folder this user may create and write in."
            ) from None

    async def put(self, key: str, data: bytes) -> None:
        path = self.path(key)
        await asyncio.to_thread(self._write, path, bytes(data))

    async def get(self, key: str) -> bytes:
        path = self.path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise BlobMissing(f"No blob {key!r} in {self.root}.") from None

    async def delete(self, key: str) -> None:
        path = self.path(key)
        await asyncio.to_thread(path.unlink, missing_ok=True)

    async def register(self, name: str, about: str, *, make: bool = True) -> Registered:
        return await asyncio.to_thread(self._register, name, about, make)

    async def listed(self, after: str, limit: int) -> list[BlobEntry]:
        return await asyncio.to_thread(self._listed, after, limit)

    async def drop(self, key: str, written_before: float) -> bool:
        return await asyncio.to_thread(self._drop, self.path(key), written_before)

    async def drop_temp_files(self, written_before: float, limit: int) -> list[str]:
        return await asyncio.to_thread(self._drop_temp_files, written_before, limit)

    def _register(self, name: str, about: str, make: bool) -> Registered:
        if _KEY.fullmatch(name) is None:
            raise ValueError(f"Invalid database name {name!r} for a blob folder.")
        if not make and not self.root.is_dir():
            return Registered(since=math.inf, names=())
        path = self.root / f"{REGISTERED_PREFIX}{name}"
        status = _status(path)
        if status is None:
            registered = dt.datetime.now(dt.UTC).isoformat()
            record = {"database": name, "about": about, "registered": registered}
            self._write(path, json.dumps(record).encode() + b"\n")
            status = path.lstat()
        names = tuple(
            sorted(
                entry.removeprefix(REGISTERED_PREFIX)
                for entry in _names(self.root)
                if entry.startswith(REGISTERED_PREFIX)
            )
        )
        # The file's own time, by the clock that dates the blobs.
        return Registered(since=_written(status), names=names)

    def _listed(self, after: str, limit: int) -> list[BlobEntry]:
        keys = heapq.nsmallest(
            limit,
            (
                name
                for name in _names(self.root)
                if name > after and _SWEPT_KEY.fullmatch(name) is not None
            ),
        )
        listed: list[BlobEntry] = []
        for key in keys:
            status = _status(self.root / key)
            if status is not None:
                listed.append(BlobEntry(key, status.st_size, _written(status)))
        return listed

    def _drop(self, path: Path, written_before: float) -> bool:
        status = _status(path)
        if status is None or _written(status) >= written_before:
            return False
        path.unlink(missing_ok=True)
        return True

    def _drop_temp_files(self, written_before: float, limit: int) -> list[str]:
        dropped: list[str] = []
        for name in _names(self.root):
            if len(dropped) >= limit:
                break
            if name.startswith(TEMP_PREFIX) and self._drop(self.root / name, written_before):
                dropped.append(name)
        return dropped

    def _write(self, path: Path, data: bytes) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkstemp creates the file with mode 0600; names starting with "." are never keys.
        fd, temp_name = tempfile.mkstemp(dir=self.root, prefix=TEMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as temp:
                temp.write(data)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
            raise
        _fsync_dir(self.root)

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"


def _names(folder: Path) -> Iterator[str]:
    """The names in `folder`, as one listing reads them (none when it does not exist yet)."""
    try:
        entries = os.scandir(folder)
    except FileNotFoundError:
        return
    with entries:
        for entry in entries:
            yield entry.name


def _status(path: Path) -> os.stat_result | None:
    """The status of the plain file at `path`, or None (gone, or not a plain file)."""
    try:
        status = path.lstat()
    except FileNotFoundError:
        return None
    return status if stat.S_ISREG(status.st_mode) else None


def _written(status: os.stat_result) -> float:
    return max(status.st_mtime, status.st_ctime)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (where the platform allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
