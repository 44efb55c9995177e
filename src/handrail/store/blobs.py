"""Blob stores: where uploaded files' bytes live, by key. Rows only ever hold the key.

`LocalBlobStore` keeps one file per key in a folder. Keys are plain names (letters, digits,
``.``, ``_`` and ``-``, starting with a letter or digit), so no key can reach outside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

from handrail.errors import HandrailError

__all__ = ["BlobMissing", "BlobStore", "LocalBlobStore", "check_blob_key"]

_KEY: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class BlobMissing(HandrailError, LookupError):
    """No blob has this key."""


@runtime_checkable
class BlobStore(Protocol):
    """Bytes by key. `put` replaces a blob atomically; `delete` of a missing key is a no-op;
    `get` of a missing key raises `BlobMissing`."""

    async def put(self, key: str, data: bytes) -> None: ...

    async def get(self, key: str) -> bytes: ...

    async def delete(self, key: str) -> None: ...


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

    def _write(self, path: Path, data: bytes) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkstemp creates the file with mode 0600; names starting with "." are never keys.
        fd, temp_name = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
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
