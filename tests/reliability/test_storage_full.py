"""A full disk while the server runs: the database's (SQLite's file, PostgreSQL's tables) or the
upload folder's. A request that could not be saved gets 503 ``Storage full`` (code
``storage-full``, ``Retry-After``) and saved nothing; a turn that stopped on it says why; the
log says which disk without a traceback; the pending ask keeps its place, and once space is
freed everything goes on where it was.

The disks are real: a tmpfs of a few megabytes mounted for the test (as root, which the tests
run as on CI) and filled with a file, and a PostgreSQL tablespace on one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import logging.config
import os
import pwd
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_helpers import TOKENS, command, parse_sse, start_api
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from _pg import PostgresCluster
from examples import PLAN
from handrail._util import Failing
from handrail.errors import DatabaseUnavailable
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.runtime.turn_end import STORAGE_FULL_TURN
from handrail.server.serving import log_config
from handrail.store import Database, Store, connection_lost, storage_full
from handrail.store import db as store_db
from handrail.store.blobs import TEMP_PREFIX
from handrail.store.db import may_have_committed

HEADERS = {"Authorization": f"Bearer {TOKENS['alice']}"}
ANSWER = {"action": "accept", "content": {"selected": ["team"]}}
ALICE = Principal(user_id="alice")
LEASE_S = 0.4
CONFIRMED = {"confirmed": True}


@contextlib.contextmanager
def small_disk(where: Path, size: str, owner: str | None = None) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (owned by the system user `owner`, else root's)."""
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0700"
    if owner is not None:
        user = pwd.getpwnam(owner)
        options += f",uid={user.pw_uid},gid={user.pw_gid}"
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.fail(
            "These tests fill a small disk of their own: mounting a tmpfs needs root with "
            f"CAP_SYS_ADMIN, as CI runs them ({mounted.stderr.strip()})."
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Fill `disk` to its last byte with one file, and return that file (unlink it to free)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (4096, 1):  # blocks, then the last bytes of the last block
            with pytest.raises(OSError, match="No space left on device"):
                _write_until_it_fails(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def _write_until_it_fails(fd: int, data: bytes) -> None:
    while os.write(fd, data):
        pass


def _raise_from_a_full_disk() -> None:
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError as exc:
        raise RuntimeError("could not store the upload") from exc


def about_work(record: logging.LogRecord) -> bool:
    """A log line of a request (the edge's) or of a turn, not of a background task."""
    words = record.getMessage()
    return "(request " in words or words.startswith("turn on history")


def assert_storage_full(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "60"
    body = response.json()
    assert body["title"] == "Storage full"
    assert body["code"] == "storage-full"
    assert body["detail"] == (
        "The server's disk is full, so nothing of this was saved. Send it again once the "
        "server's administrator has freed space."
    )
    assert "Traceback" not in response.text
    assert "sqlite" not in response.text.lower()


async def test_a_full_disk_is_503_storage_full_and_the_server_goes_on_once_freed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # 3 MB: the database, its WAL (never 1,000 pages, so never checkpointed and reused: every
    # commit must grow it) and the upload folder all on the small disk.
    with small_disk(tmp_path / "disk", "3m") as disk:
        url = f"sqlite:///{disk / 'handrail.db'}"
        async with start_api(url, disk) as api:
            c = api.client
            history_id = (await c.post("/api/histories", json={}, headers=HEADERS)).json()["data"][
                "id"
            ]
            prompt = {"prompt": command("ask_choice", PLAN)}
            turn = f"/api/histories/{history_id}/turn"
            paused = (await c.post(turn, json=prompt, headers=HEADERS)).json()["data"]
            call_id = paused["pendingAsk"]["toolCallId"]
            other_id = (await c.post("/api/histories", json={}, headers=HEADERS)).json()["data"][
                "id"
            ]

            filler = fill(disk)
            caplog.clear()
            caplog.set_level(logging.INFO, logger="handrail")

            assert_storage_full(await c.post("/api/histories", json={}, headers=HEADERS))
            answer = {"askResponse": {"toolCallId": call_id, **ANSWER}}
            assert_storage_full(await c.post(turn, json=answer, headers=HEADERS))
            upload = await c.post(
                "/api/files/upload",
                files={"file": ("notes.txt", b"some notes\n" * 2000, "text/plain")},
                headers=HEADERS,
            )
            assert_storage_full(upload)
            assert not [p for p in (disk / "blobs").iterdir() if p.name.startswith(TEMP_PREFIX)]

            # A turn of a new message stops and says why, in the headless body and in the
            # chat's stream.
            stopped = await c.post(f"/api/histories/{other_id}/turn", json=prompt, headers=HEADERS)
            assert stopped.status_code == 200, stopped.text
            assert stopped.json()["data"]["error"] == STORAGE_FULL_TURN
            chat = await c.post(
                "/api/prompt", json={"historyId": other_id, **prompt}, headers=HEADERS
            )
            events = parse_sse(chat.text)
            assert {"error": STORAGE_FULL_TURN} in events, events
            assert events[-1] == {"done": True, "historyId": other_id}

            # What the requests and the turns said (a background task that meets the full
            # disk meanwhile says so once, in its own words: `Failing`).
            said = [r for r in caplog.records if r.levelno >= logging.WARNING and about_work(r)]
            assert said, "the full disk was not logged"
            for record in said:
                assert record.levelno == logging.ERROR
                assert record.exc_info is None, record.getMessage()
                assert "a disk is full" in record.getMessage()
                assert "blob_dir" in record.getMessage()
            assert any("No space left on device" in r.getMessage() for r in said)
            assert any("database or disk is full" in r.getMessage() for r in said)

            # Nothing the person gave is lost: the ask still waits, and once space is freed
            # the same answer is taken.
            history = (await c.get(f"/api/histories/{history_id}", headers=HEADERS)).json()
            assert history["data"]["pendingAsk"]["toolCallId"] == call_id
            filler.unlink()
            resumed = await c.post(turn, json=answer, headers=HEADERS)
            assert resumed.status_code == 200, resumed.text
            assert resumed.json()["data"]["text"].startswith("ask_choice returned:")
            again = await c.post(f"/api/histories/{other_id}/turn", json=prompt, headers=HEADERS)
            assert again.json()["data"]["pendingAsk"]["kind"] == "choice"
            uploaded = await c.post(
                "/api/files/upload",
                files={"file": ("notes.txt", b"some notes\n" * 2000, "text/plain")},
                headers=HEADERS,
            )
            assert uploaded.status_code == 201, uploaded.text


#: About 64 kB of text that does not compress (its TOAST table is in the table's tablespace).
_RANDOM_TEXT = (
    "INSERT INTO filler SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 2000)"
)


def _fill_table(connection: Connection) -> None:
    for _ in range(10_000):
        connection.execute(text(_RANDOM_TEXT))


async def test_a_full_postgresql_disk_is_storage_full_and_saves_nothing(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = postgres_cluster.new_database_url()
    connection = await postgres_cluster.connect(url)
    # In the cluster's folder: the server's user cannot reach into the tests' own.
    where = postgres_cluster.base / f"tablespace-{tmp_path.name}"
    with small_disk(where, "1m", owner="postgres") as disk:
        try:
            await connection.execute(f"CREATE TABLESPACE small LOCATION '{disk}'")
            await connection.execute("CREATE TABLE filler (value text) TABLESPACE small")
            async with Database(url) as database:
                with pytest.raises(DBAPIError) as raised:
                    await database.write(_fill_table)
            error = raised.value
            assert getattr(error.orig, "sqlstate", None) == "53100", error
            assert storage_full(error)
            assert not connection_lost(error)
            assert not may_have_committed(error)
            assert await connection.fetchval("SELECT count(*) FROM filler") == 0
        finally:
            await connection.execute("DROP TABLE IF EXISTS filler")
            await connection.execute("DROP TABLESPACE IF EXISTS small")
            await connection.close()


def test_only_a_full_disk_is_storage_full(tmp_path: Path) -> None:
    full = sqlite3.connect(tmp_path / "full.db")
    full.execute("CREATE TABLE t (v TEXT)")
    full.execute("PRAGMA max_page_count = 3")
    with pytest.raises(sqlite3.OperationalError) as sqlite_full:
        full.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    full.close()
    assert storage_full(sqlite_full.value)
    other = sqlite3.connect(":memory:")
    other.execute("CREATE TABLE u (v INTEGER NOT NULL)")
    with pytest.raises(sqlite3.IntegrityError) as constraint:
        other.execute("INSERT INTO u VALUES (NULL)")
    assert not storage_full(constraint.value)
    assert storage_full(OSError(errno.ENOSPC, "No space left on device"))
    assert storage_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not storage_full(OSError(errno.EACCES, "Permission denied"))
    assert not storage_full(ValueError("no"))
    with pytest.raises(RuntimeError) as wrapped:
        _raise_from_a_full_disk()
    assert storage_full(wrapped.value)


async def test_a_turn_that_fills_the_disk_after_an_approval_is_finished_once_space_is_freed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The approval is on the disk before the tool runs; the tool fills the disk, so nothing
    after it can be written. The turn stops saying why and keeps its lease, which lapses: once
    space is freed the runtime takes its own turn over, as after a crash, and finishes it
    without running the approved call again."""
    ran: list[str] = []
    with small_disk(tmp_path / "disk", "3m") as disk:
        agent = Agent("ops", instructions="Run jobs.")

        @agent.tool(destructive=True)
        async def wipe(name: str) -> str:
            """Wipe a disk."""
            ran.append(name)
            fill(disk)
            return f"wiped {name}"

        store = await Store.open(f"sqlite:///{disk / 'handrail.db'}", blob_dir=disk / "blobs")
        runtime = Runtime(store=store, agents=agent, model=ScriptedModel(), lease_s=LEASE_S)
        try:
            await store.permissions.set("alice", "local:ops", "non-consequential")
            turn = await runtime.start_prompt(ALICE, 'call wipe {"name": "disk1"}')
            [approval] = [e["ask"] async for e in turn.stream() if "ask" in e]
            caplog.clear()
            answered = await runtime.start_answer(
                ALICE,
                turn.history_id,
                {"toolCallId": approval["toolCallId"], "action": "accept", "content": CONFIRMED},
            )
            stopped = (await answered.result()).to_json()
            assert stopped["error"] == STORAGE_FULL_TURN
            assert ran == ["disk1"]
            said = [r for r in caplog.records if r.levelno >= logging.WARNING and about_work(r)]
            assert [r.levelno for r in said] == [logging.ERROR], [r.getMessage() for r in said]
            assert said[0].exc_info is None
            assert "a disk is full" in said[0].getMessage()
            lease = await store.leases.get(turn.history_id)
            assert lease is not None, "the turn let its lease go"

            (disk / "filler").unlink()
            await asyncio.sleep(LEASE_S * 1.5)
            [taken] = await runtime.recovery.sweep()
            done = (await taken.result()).to_json()
            assert "TOOL_EXECUTION_UNCERTAIN" in done["text"]
            assert ran == ["disk1"], "the approved call ran again"
            assert await store.leases.get(turn.history_id) is None
            history = await store.histories.get(turn.history_id)
            assert history is not None
            assert history.pending_ask is None
        finally:
            await runtime.aclose()
            await store.close()


def test_the_servers_log_says_a_full_disk_in_one_line(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """`handrail serve`'s log configuration: a background task's error with a traceback is one
    line when the error is a full disk (here a real ENOSPC, from writing to /dev/full); any
    other error keeps its traceback."""
    logging.config.dictConfig(log_config("info"))
    log = logging.getLogger("handrail.runtime")
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError, match="No space left on device") as full:
            os.write(fd, b"x")
    finally:
        os.close(fd)
    try:
        raise RuntimeError("could not renew") from full.value
    except RuntimeError:
        log.warning("could not renew the turn lease of %s", "h1", exc_info=True)
    try:
        raise ValueError("a bug")
    except ValueError:
        log.warning("the sweep failed", exc_info=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        "WARNING:  handrail.runtime: could not renew the turn lease of h1 (a disk is full "
        "(OSError: [Errno 28] No space left on device); free space on the disk of the database "
        "or of the upload folder (blob_dir))"
    )
    assert lines[1] == "WARNING:  handrail.runtime: the sweep failed"
    # Only the server's own lines: the record is as it was for every other handler.
    renewal = next(r for r in caplog.records if "turn lease" in r.getMessage())
    assert renewal.getMessage() == "could not renew the turn lease of h1"
    assert renewal.exc_info is not None
    assert lines[2] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: a bug"


def test_a_background_task_says_its_failures_once_and_when_it_works_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("handrail.runtime")
    sweeps = Failing(log, "the sweep for lapsed turns")
    caplog.set_level(logging.DEBUG, logger="handrail")

    def attempt(fails: bool) -> None:
        try:
            if fails:
                raise ConnectionRefusedError(111, "Connect call failed")
        except ConnectionRefusedError:
            sweeps.failed(again_s=5)
        else:
            sweeps.succeeded()

    for fails in (False, True, True, True, False, False, True):
        attempt(fails)
    said = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert said == [
        (
            "WARNING",
            "the sweep for lapsed turns failed; it is tried again every 5 s, and said again "
            "once it works",
            True,
        ),
        ("DEBUG", "the sweep for lapsed turns failed again", True),
        ("DEBUG", "the sweep for lapsed turns failed again", True),
        ("INFO", "the sweep for lapsed turns works again", False),
        (
            "WARNING",
            "the sweep for lapsed turns failed; it is tried again every 5 s, and said again "
            "once it works",
            True,
        ),
    ]


async def test_a_database_whose_disk_is_full_at_start_says_so(tmp_path: Path) -> None:
    """A new database on a disk too small for its tables: the start stops saying why and what
    to do (the upgrade is one transaction, so a later start begins it again)."""
    with small_disk(tmp_path / "disk", "200k") as disk:
        url = f"sqlite:///{disk / 'handrail.db'}"
        with pytest.raises(DatabaseUnavailable) as raised:
            await Store.open(url, blob_dir=tmp_path / "files")
        assert str(raised.value) == (
            f"Could not bring the database {url} up to date: database or disk is full. Its "
            "disk is full: free space on it, then start again (the upgrade is one transaction: "
            "nothing of it was kept)."
        )


async def test_a_database_another_program_holds_is_503_then_the_server_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another program holds SQLite's write lock past the store's wait (here 1 s instead of
    30): the request that waited gets 503 ``Database unavailable`` saying so, one log line;
    once the lock is let go, the same request works."""
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_S", 1)
    path = tmp_path / "handrail.db"
    async with start_api(f"sqlite:///{path}", tmp_path) as api:
        c = api.client
        assert (await c.post("/api/histories", json={}, headers=HEADERS)).status_code == 201
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # the write lock, held
            caplog.clear()
            busy = await c.post("/api/histories", json={}, headers=HEADERS)
            assert busy.status_code == 503, busy.text
            assert busy.headers["Retry-After"] == "5"
            assert busy.json()["title"] == "Database unavailable"
            assert busy.json()["detail"].startswith("The server's database is busy")
            [said] = [r for r in caplog.records if about_work(r)]
            assert said.exc_info is None
            assert "the database was busy" in said.getMessage()
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert (await c.post("/api/histories", json={}, headers=HEADERS)).status_code == 201
