"""The recovery sweeper of a live process removes what a process that stopped in an upload left
in the blob folder (bytes no row names, a put's temporary file), at its first round, while the
folder holds one database's uploads; the bytes of live uploads stay."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from doubles import stops_in
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.store import LocalBlobStore, Store
from handrail.store.blobs import REGISTERED_PREFIX, TEMP_PREFIX


def blob_names(store: Store) -> set[str]:
    assert isinstance(store.blobs, LocalBlobStore)
    return {p.name for p in store.blobs.root.iterdir() if not p.name.startswith(REGISTERED_PREFIX)}


async def test_the_sweeper_removes_what_a_stopped_upload_left(
    store: Store, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = await store.files.create("alice", "kept.txt", "text/plain", b"kept")
    # This process stops after putting an upload's bytes, before its row.
    inserting = stops_in(monkeypatch, store.db, "write")
    creating = asyncio.ensure_future(
        store.files.create("alice", "lost.txt", "text/plain", b"lost", file_id="a" * 24)
    )
    await inserting.wait()
    assert isinstance(store.blobs, LocalBlobStore)
    temp = store.blobs.root / f"{TEMP_PREFIX}stopped"
    temp.write_bytes(b"a put that stopped while writing")
    assert blob_names(store) == {live.id, "a" * 24, temp.name}
    # Another process on the same database and folder sweeps.
    other = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    other.files.blob_sweep.orphan_age = dt.timedelta(0)
    runtime = Runtime(store=other, agents=Agent("ops"), model=ScriptedModel(), lease_s=0.2)
    runtime.recovery.start()
    try:
        async with asyncio.timeout(10):
            while blob_names(store) != {live.id}:
                await asyncio.sleep(0.05)
    finally:
        await runtime.aclose()
        await other.close()
        creating.cancel()
        await asyncio.gather(creating, return_exceptions=True)
    assert await store.files.read(live) == b"kept"
