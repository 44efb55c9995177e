"""A throwaway PostgreSQL cluster for tests.

The session fixture `postgres_cluster` finds the server's programs (Debian's
``/usr/lib/postgresql/<version>/bin``, else ``initdb`` on PATH), creates a cluster in a fresh
temporary folder, starts it listening only on a unix socket in that folder (no TCP), and stops
it (``pg_ctl stop -m immediate``) and removes the folder at the end. As root, the cluster runs as
the ``postgres`` system user, since ``initdb`` refuses to run as root.

`PostgresCluster.new_database_url()` creates an empty database and returns its
``postgresql+asyncpg://postgres@/<name>?host=<folder>&port=<port>`` URL.

When no server is installed or it does not start, the tests that need it fail (never skip) and
say to run ``scripts/ensure-postgres.sh``.
"""

from __future__ import annotations

import os
import pwd
import random
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import Connection, text

__all__ = ["PostgresCluster", "find_postgres_bindir", "postgres_cluster", "start_cluster"]

ENSURE = "scripts/ensure-postgres.sh"
SUPERUSER = "postgres"
PROGRAMS = ("initdb", "pg_ctl", "postgres", "createdb")


def _fail(message: str) -> pytest.fail.Exception:
    return pytest.fail.Exception(
        f"{message}\nRun `{ENSURE}` (it installs PostgreSQL when missing) and try again.",
        pytrace=False,
    )


def _version_key(bindir: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", bindir.parent.name)) or (0,)


def find_postgres_bindir() -> Path | None:
    """The folder with initdb, pg_ctl and postgres: the newest Debian install, else PATH."""
    candidates = sorted(
        (path.parent for path in Path("/usr/lib/postgresql").glob("*/bin/initdb")),
        key=_version_key,
        reverse=True,
    )
    on_path = shutil.which("initdb")
    if on_path is not None:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if all((bindir / program).exists() for program in PROGRAMS):
            return bindir
    return None


@dataclass
class PostgresCluster:
    bindir: Path
    base: Path
    port: int
    run_as: list[str] = field(default_factory=list)
    #: The server's options (``pg_ctl start -o``), to start it again after `stop_server`.
    options: str = ""
    _databases: int = 0

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    @property
    def socket_dir(self) -> Path:
        return self.base

    def url(self, database: str) -> str:
        return (
            f"postgresql+asyncpg://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"
        )

    async def connect(self, url: str) -> asyncpg.Connection:
        """An asyncpg connection of the superuser to the database of `url` (one that
        `new_database_url` gave), for a test that inspects it (plans, settings) outside the
        store."""
        database = url.split("@/", 1)[1].split("?", 1)[0]
        return await asyncpg.connect(
            host=str(self.socket_dir), port=self.port, user=SUPERUSER, database=database
        )

    def new_database_url(self) -> str:
        """Create an empty database and return its URL."""
        self._databases += 1
        name = f"test_{os.getpid()}_{self._databases}"
        self._run(
            self.bindir / "createdb",
            "-h",
            str(self.socket_dir),
            "-p",
            str(self.port),
            "-U",
            SUPERUSER,
            name,
            what="create a database",
            as_owner=False,
        )
        return self.url(name)

    def _run(self, *args: object, what: str, as_owner: bool = True) -> None:
        command = [*(self.run_as if as_owner else []), *(str(arg) for arg in args)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
            raise _fail(
                f"PostgreSQL: could not {what} (exit {result.returncode}).\n"
                f"$ {shlex.join(command)}\n{result.stdout}{result.stderr}{log}"
            )

    def stop_server(self) -> None:
        """Stop the server and keep the cluster (``pg_ctl stop -m fast``), as a restart's first
        half: its sessions end, and new connections are refused until `start_server`."""
        self._run(self.bindir / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", what="stop")

    def start_server(self) -> None:
        """Start the server again, with the options it first started with."""
        self._run(
            self.bindir / "pg_ctl",
            "-D",
            self.data,
            "-l",
            self.log,
            "-o",
            self.options,
            "-w",
            "-t",
            "60",
            "start",
            what="start the server (pg_ctl start)",
        )

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                pg_ctl = str(self.bindir / "pg_ctl")
                subprocess.run(
                    [*self.run_as, pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                    capture_output=True,
                    timeout=60,
                    check=False,
                )
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def _run_as_postgres(base: Path) -> list[str]:
    """The command prefix that runs a program as the cluster's owner (``postgres`` as root)."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise _fail(
            "Running as root, but there is no 'postgres' system user to own the cluster."
        ) from None
    os.chown(base, user.pw_uid, user.pw_gid)
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--"]
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]


def start_cluster(*, durable: bool = False, max_connections: int | None = None) -> PostgresCluster:
    """Create and start a cluster, or fail the test with the way forward. Tests run it with
    ``fsync`` and ``synchronous_commit`` off; `durable` keeps PostgreSQL's defaults (every
    commit flushed to disk), as the benchmarks need. `max_connections` raises PostgreSQL's
    limit of 100 sessions (a benchmark running several server processes with full pools)."""
    bindir = find_postgres_bindir()
    if bindir is None:
        raise _fail(
            "PostgreSQL is not installed: no initdb/pg_ctl/postgres under "
            "/usr/lib/postgresql/*/bin or on PATH."
        )
    base = Path(tempfile.mkdtemp(prefix="handrail-pg-"))
    cluster = PostgresCluster(bindir=bindir, base=base, port=random.randint(20000, 60000))
    try:
        cluster.run_as = _run_as_postgres(base)
        cluster._run(
            bindir / "initdb",
            "-D",
            cluster.data,
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
            what="create a cluster (initdb)",
        )
        listen = ["-k", str(cluster.socket_dir), "-h", "", "-p", str(cluster.port)]
        fast = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        limit = [] if max_connections is None else ["-c", f"max_connections={max_connections}"]
        cluster.options = shlex.join([*listen, *([] if durable else fast), *limit])
        cluster.start_server()
    except BaseException:
        cluster.stop()
        raise
    return cluster


_running: PostgresCluster | None = None
_users = 0


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A running throwaway cluster for the whole session. Conftests at several levels may
    import this fixture: they share one cluster, stopped when the last of them finishes."""
    global _running, _users
    if _running is None:
        _running = start_cluster()
    _users += 1
    try:
        yield _running
    finally:
        _users -= 1
        if _users == 0:
            _running.stop()
            _running = None


async def flushing_database_url(cluster: PostgresCluster) -> str:
    """A new database whose commits wait for the WAL's flush, as PostgreSQL's default is (the
    throwaway cluster's own default is not to, unless it was started `durable`); its URL."""
    url = cluster.new_database_url()
    admin = await cluster.connect(url)
    try:
        name = await admin.fetchval("SELECT current_database()")
        await admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit TO on')
    finally:
        await admin.close()
    return url


def commit_level(connection: Connection) -> str:
    """A store work: the transaction's ``synchronous_commit`` (``on`` or ``off``), read
    inside it."""
    return str(connection.execute(text("SHOW synchronous_commit")).scalar_one())


def end_other_sessions(connection: Connection) -> None:
    """A store work (`Database.write`): PostgreSQL ends every other session of the database,
    as a restart or a failover would."""
    connection.execute(
        text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    )


def notifying_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement that sends notifications from now on, as asyncpg runs it (the store's
    writes and the event sender both run on asyncpg itself)."""
    statements: list[str] = []
    execute, fetch = asyncpg.Connection.execute, asyncpg.Connection.fetch

    async def executed(self: asyncpg.Connection, query: str, *args: object, **kw: Any) -> Any:
        if "pg_notify" in query:
            statements.append(query)
        return await execute(self, query, *args, **kw)

    async def fetched(self: asyncpg.Connection, query: str, *args: object, **kw: Any) -> Any:
        if "pg_notify" in query:
            statements.append(query)
        return await fetch(self, query, *args, **kw)

    monkeypatch.setattr(asyncpg.Connection, "execute", executed)
    monkeypatch.setattr(asyncpg.Connection, "fetch", fetched)
    return statements
