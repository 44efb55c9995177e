"""The sweep of bytes no upload names, on the real folder and both databases: what a process
that stopped between an upload's put and its row (or between a delete's row and its bytes)
left goes once it is older than the grace period, while the folder holds one database's
uploads only; a folder two databases share is never swept of them; a put's temporary file
goes whatever the folder holds; bytes a live row names stay."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, insert, inspect, select

from _pg import PostgresCluster
from doubles import stops_in
from handrail.store import Database, LocalBlobStore, Store
from handrail.store import blob_sweep as blob_sweep_module
from handrail.store.blob_sweep import ORPHAN_BLOB_AGE
from handrail.store.blobs import REGISTERED_PREFIX, TEMP_PREFIX
from handrail.store.db import all_rows
from handrail.store.tables import files, settings

PAYLOAD = b"%PDF-1.7 bytes of a person's invoice"
LATER = ORPHAN_BLOB_AGE + dt.timedelta(minutes=1)


def later() -> dt.datetime:
    """A moment past the grace period of anything written until now."""
    return dt.datetime.now(dt.UTC) + LATER


def folder(store: Store) -> Path:
    assert isinstance(store.blobs, LocalBlobStore)
    return store.blobs.root


def blob_names(store: Store) -> set[str]:
    return {p.name for p in folder(store).iterdir() if not p.name.startswith(REGISTERED_PREFIX)}


def registrations(store: Store) -> set[str]:
    return {p.name for p in folder(store).iterdir() if p.name.startswith(REGISTERED_PREFIX)}


async def stopped_create(
    store: Store, monkeypatch: pytest.MonkeyPatch, file_id: str
) -> asyncio.Future[Any]:
    """An upload whose process stopped after its bytes were put, before its row's insert."""
    inserting = stops_in(monkeypatch, store.db, "write")
    creating = asyncio.ensure_future(
        store.files.create("u1", "a.pdf", "application/pdf", PAYLOAD, file_id=file_id)
    )
    await inserting.wait()
    monkeypatch.undo()
    return creating


async def stopped_delete(store: Store, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """A file whose delete stopped after its row was marked deleted, before its bytes went."""
    record = await store.files.create("u1", "gone.pdf", "application/pdf", PAYLOAD)
    removing = stops_in(monkeypatch, store.blobs, "delete")
    deleting = asyncio.ensure_future(store.files.delete(record.id))
    await removing.wait()
    monkeypatch.undo()
    return record.id, deleting


async def gone(*pending: asyncio.Future[Any]) -> None:
    for future in pending:
        future.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def test_bytes_no_upload_names_go_after_the_grace_period(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    live = await store.files.create("u1", "kept.pdf", "application/pdf", PAYLOAD)
    deleted, deleting = await stopped_delete(store, monkeypatch)
    creating = await stopped_create(store, monkeypatch, "a" * 24)
    assert blob_names(store) == {live.id, deleted, "a" * 24}
    assert await store.files.get("a" * 24) is None
    assert await store.files.sweep_blobs() == []  # within the grace period
    assert blob_names(store) == {live.id, deleted, "a" * 24}
    with caplog.at_level(logging.WARNING, logger="handrail.store"):
        assert sorted(await store.files.sweep_blobs(later())) == sorted([deleted, "a" * 24])
    assert blob_names(store) == {live.id}
    assert await store.files.read(live) == PAYLOAD
    logged = [r.getMessage() for r in caplog.records if r.name == "handrail.store"]
    assert sorted(m.split()[2] for m in logged) == sorted([deleted, "a" * 24])
    assert all("no upload names it" in m and str(len(PAYLOAD)) in m for m in logged)
    assert await store.files.sweep_blobs(later()) == []
    await gone(deleting, creating)


async def test_an_upload_in_flight_keeps_its_bytes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes put whose row is not in yet are kept by a sweep within the grace period, and the
    upload ends whole."""
    inserting, go_on = asyncio.Event(), asyncio.Event()
    write = store.db.write

    async def held(*args: Any, **kwargs: Any) -> Any:
        inserting.set()
        await go_on.wait()
        return await write(*args, **kwargs)

    monkeypatch.setattr(store.db, "write", held)
    creating = asyncio.ensure_future(store.files.create("u1", "a.txt", "text/plain", b"on its way"))
    await inserting.wait()
    [key] = blob_names(store)
    soon = dt.datetime.now(dt.UTC) + ORPHAN_BLOB_AGE - dt.timedelta(minutes=1)
    assert await store.files.sweep_blobs(soon) == []
    go_on.set()
    record = await creating
    assert record.blob_key == key
    assert await store.files.read(record) == b"on its way"


async def test_a_file_a_row_names_is_never_removed(store: Store) -> None:
    record = await store.files.create("u1", "kept.pdf", "application/pdf", PAYLOAD)
    # A row whose blob key is not its id: it is the key that names the bytes.
    await store.blobs.put("k" * 24, b"named by key")
    await store.db.write(
        lambda c: c.execute(
            insert(files).values(
                id="f" * 24,
                owner_id="u1",
                filename="k.txt",
                mime_type="text/plain",
                size=12,
                blob_key="k" * 24,
                created=record.created,
                deleted_at=None,
            )
        )
    )
    far = dt.datetime.now(dt.UTC) + dt.timedelta(days=3650)
    assert await store.files.sweep_blobs(far) == []
    assert blob_names(store) == {record.id, "k" * 24}
    assert await store.files.read(record) == PAYLOAD


async def test_bytes_from_before_the_folder_was_registered_stay(store: Store) -> None:
    """Bytes put before this database registered in the folder (perhaps from before the
    registration existed, perhaps another database's) are not swept."""
    await store.blobs.put("b" * 24, b"older than the registration")
    await asyncio.sleep(0.05)
    assert registrations(store) == set()
    assert await store.files.sweep_blobs(later()) == []
    assert len(registrations(store)) == 1
    assert blob_names(store) == {"b" * 24}


async def test_a_sweep_is_bounded_and_goes_on_where_it_stopped(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blob_sweep_module, "SWEEP_BLOBS", 2)
    live = await store.files.create("u1", "kept.pdf", "application/pdf", PAYLOAD)
    await store.files.sweep_blobs()  # registered
    for key in ("c" * 24, "d" * 24, "e" * 24):
        await store.blobs.put(key, b"left behind")
    first = await store.files.sweep_blobs(later())
    assert 1 <= len(first) <= 2
    rest = await store.files.sweep_blobs(later())
    rest += await store.files.sweep_blobs(later())
    assert sorted(first + rest) == ["c" * 24, "d" * 24, "e" * 24]
    assert blob_names(store) == {live.id}


async def test_a_temporary_file_of_a_stopped_put_goes_after_the_grace_period(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put that stops while it writes (before the rename) leaves a temporary file."""
    renaming, go_on = threading.Event(), threading.Event()
    replace = os.replace

    def held(source: str, target: Path) -> None:
        if Path(target).name != "t" * 24:
            return replace(source, target)
        renaming.set()
        go_on.wait(30)
        raise OSError("the process stopped")

    monkeypatch.setattr("handrail.store.blobs.os.replace", held)
    putting = asyncio.ensure_future(store.blobs.put("t" * 24, b"half written"))
    try:
        await asyncio.to_thread(renaming.wait, 30)
        [temp] = blob_names(store)
        assert temp.startswith(TEMP_PREFIX)
        assert await store.files.sweep_blobs() == []
        assert blob_names(store) == {temp}
        assert await store.files.sweep_blobs(later()) == [temp]
        assert blob_names(store) == set()
    finally:
        go_on.set()
        await asyncio.gather(putting, return_exceptions=True)


# --- two databases in one folder -------------------------------------------------------------


@pytest.fixture
async def other(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """A second database (of the same backend) whose uploads go to the same folder as
    `store`'s."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'other.db'}"
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
        url = cluster.new_database_url()
    opened = await Store.open(url, blob_dir=tmp_path / "blobs")
    try:
        yield opened
    finally:
        await opened.close()


def sweep_off(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "sweep of bytes" in r.getMessage()]


async def test_a_folder_two_databases_share_keeps_every_blob(
    store: Store,
    other: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mine = await store.files.create("u1", "mine.pdf", "application/pdf", PAYLOAD)
    theirs = await other.files.create("u2", "theirs.pdf", "application/pdf", PAYLOAD)
    creating = await stopped_create(store, monkeypatch, "a" * 24)
    temp = folder(store) / f"{TEMP_PREFIX}left"
    temp.write_bytes(b"a put that stopped")
    assert len(registrations(store)) == 2
    with caplog.at_level(logging.WARNING, logger="handrail.store"):
        assert await store.files.sweep_blobs(later()) == [temp.name]  # temporary files go
        assert await store.files.sweep_blobs(later()) == []
        assert await other.files.sweep_blobs(later()) == []
    assert blob_names(store) == {mine.id, theirs.id, "a" * 24}
    assert await other.files.read(theirs) == PAYLOAD
    off = sweep_off(caplog)
    assert len(off) == 2  # once for each database, not at every sweep
    assert "2 databases" in off[0]
    assert "blob_dir" in off[0]
    assert "HANDRAIL_BLOB_DIR" in off[0]
    await gone(creating)


async def test_a_database_registered_once_sweeps_at_every_process(
    store: Store, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes on one database register as one: the folder is swept."""
    second = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    try:
        await second.files.create("u1", "x.txt", "text/plain", b"x")
        creating = await stopped_create(store, monkeypatch, "a" * 24)
        assert len(registrations(store)) == 1
        assert await second.files.sweep_blobs(later()) == ["a" * 24]
        await gone(creating)
    finally:
        await second.close()


async def copied(backend: str, url: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A copy of the database at `url` (closed), as another database: its URL."""
    if backend == "sqlite":
        target = tmp_path / "copy.db"
        with sqlite3.connect(url.removeprefix("sqlite:///")) as original:
            with sqlite3.connect(target) as copy:
                original.backup(copy)
            copy.close()
        original.close()
        return f"sqlite:///{target}"
    cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
    name = url.split("@/", 1)[1].split("?", 1)[0]
    connection = await cluster.connect(cluster.url("postgres"))
    try:
        await connection.execute(f'CREATE DATABASE "{name}_copy" TEMPLATE "{name}"')
    finally:
        await connection.close()
    return cluster.url(f"{name}_copy")


async def test_a_copy_of_a_database_is_another_database(
    backend: str, database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A copy keeps the database's id, yet is another database: the folder is not swept."""
    blob_dir = tmp_path / "blobs"
    async with await Store.open(database_url, blob_dir=blob_dir) as store:
        mine = await store.files.create("u1", "mine.pdf", "application/pdf", PAYLOAD)
        database_id = await store.db.read(_database_id)
    copy_url = await copied(backend, database_url, tmp_path, request)
    async with (
        await Store.open(database_url, blob_dir=blob_dir) as store,
        await Store.open(copy_url, blob_dir=blob_dir) as copy,
    ):
        assert await copy.db.read(_database_id) == database_id
        theirs = await copy.files.create("u2", "theirs.pdf", "application/pdf", PAYLOAD)
        assert len(registrations(store)) == 2
        assert await store.files.sweep_blobs(later()) == []
        assert await copy.files.sweep_blobs(later()) == []
        assert blob_names(store) == {mine.id, theirs.id}


# --- the migration ---------------------------------------------------------------------------


def _database_id(connection: Connection) -> str:
    return str(
        connection.execute(
            select(settings.c.value).where(settings.c.name == "database_id")
        ).scalar_one()
    )


def _schema(connection: Connection) -> tuple[set[str], set[str]]:
    inspector = inspect(connection)
    indexes = {str(index["name"]) for index in inspector.get_indexes("files")}
    return set(inspector.get_table_names()), indexes


def _to(revision: str) -> Callable[[Connection], None]:
    from alembic import command

    from handrail.store.db import alembic_config

    def run(connection: Connection) -> None:
        if revision == "head":
            command.upgrade(alembic_config(connection), revision)
        else:
            command.downgrade(alembic_config(connection), revision)

    return run


async def test_migration_0017_gives_the_database_an_id_and_goes_back(database_url: str) -> None:
    async with Database(database_url) as db:
        await db.migrate()
        first = await db.read(_database_id)
        assert len(first) == 24
        assert int(first, 16) >= 0
        assert await db.read(all_rows, select(settings)) == [("database_id", first)]
        tables, indexes = await db.read(_schema)
        assert "settings" in tables
        assert "ix_files_blob_key" in indexes
        await db.write(_to("0016"))
        tables, indexes = await db.read(_schema)
        assert "settings" not in tables
        assert "ix_files_blob_key" not in indexes
        await db.write(_to("head"))
        assert await db.read(_database_id) != first


async def test_a_sweep_makes_no_folder(store: Store) -> None:
    """A server that never stored an upload leaves no blob folder behind."""
    assert await store.files.sweep_blobs(later()) == []
    assert not folder(store).exists()
    await store.files.create("u1", "a.txt", "text/plain", b"a")
    assert len(registrations(store)) == 1


async def test_files_that_are_no_upload_s_bytes_stay(store: Store) -> None:
    """A blob folder set to a folder that holds other files (the database beside it, a config,
    another program's data): the sweep removes only names an upload's key takes, never these,
    however old."""
    await store.files.create("u1", "kept.pdf", "application/pdf", PAYLOAD)  # registers
    others = ["handrail.db", "handrail.yaml", "notes.txt", "A" * 24, "a" * 23, "a" * 25]
    for name in others:
        (folder(store) / name).write_bytes(b"not an upload")
    assert await store.files.sweep_blobs(later()) == []
    assert set(others) <= blob_names(store)
