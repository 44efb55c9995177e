"""The database: one `AsyncEngine` from a URL, its connection settings, and migrations.

SQLite (a file, in WAL mode) is the default; PostgreSQL (through asyncpg) is the same code with
another URL. Plain URLs are accepted and moved to the async drivers: ``sqlite:///x.db`` becomes
``sqlite+aiosqlite:///x.db`` and ``postgresql://...`` (or ``postgres://...``) becomes
``postgresql+asyncpg://...``.

Every SQLite connection gets ``journal_mode=WAL``, ``foreign_keys=ON``, a 30 second
``busy_timeout`` and the chosen ``synchronous`` level. Transactions that write start with
``BEGIN IMMEDIATE``, so two writers queue up instead of failing on a lock upgrade.

`Database.migrate` brings the schema to the newest Alembic revision. Several processes may call
it at once: on SQLite the migration runs in an immediate transaction, on PostgreSQL under a
transaction-scoped advisory lock, so one migrates and the others then find nothing to do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from handrail.errors import ConfigError

__all__ = ["DEFAULT_URL", "Database", "alembic_config", "async_url"]

#: The embedded default: a SQLite file in the working folder.
DEFAULT_URL: Final = "sqlite+aiosqlite:///handrail.db"

#: Where the Alembic environment and revisions live (shipped as package data).
MIGRATIONS_DIR: Final = Path(__file__).resolve().parent / "migrations"

#: The PostgreSQL advisory lock key held while migrating ("handrail" as a big-endian int64).
MIGRATION_LOCK_KEY: Final = int.from_bytes(b"handrail", "big", signed=True)

SYNCHRONOUS_LEVELS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")

#: SQLite waits this long for another writer's lock before giving up.
BUSY_TIMEOUT_S: Final = 30

_WRITE_OPTION: Final = "handrail_write"

Backend = Literal["sqlite", "postgresql"]


def async_url(url: str | URL | None) -> URL:
    """`url` with its async driver: ``sqlite+aiosqlite`` or ``postgresql+asyncpg``. None gives
    `DEFAULT_URL`. Any other database raises `ConfigError`."""
    if url is None:
        url = DEFAULT_URL
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"The database URL is not valid: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
        query = dict(parsed.query)
        if "sslmode" in query:  # libpq's name; asyncpg takes the same values as "ssl"
            query.setdefault("ssl", query.pop("sslmode"))
            parsed = parsed.set(query=query)
        return parsed
    raise ConfigError(
        f"Unsupported database {backend!r} in the database URL: use sqlite:///path/to/file.db "
        "or postgresql://user:password@host/dbname."
    )


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic `Config` for handrail's migrations, built in code (no ``alembic.ini``).
    With `connection`, the migration environment runs on it."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _upgrade_to_head(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


class Database:
    """An async engine with handrail's connection settings.

    `read()` and `write()` open a transaction; `write()` takes SQLite's write lock at once.
    Close it with `close()` (or ``async with``).
    """

    def __init__(
        self,
        url: str | URL | None = None,
        *,
        synchronous: str = "NORMAL",
        echo: bool = False,
    ) -> None:
        self.url = async_url(url)
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise ConfigError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS_LEVELS)}, not {synchronous!r}."
            )
        self.synchronous = level
        self.backend: Backend = (
            "sqlite" if self.url.get_backend_name() == "sqlite" else "postgresql"
        )
        connect_args: dict[str, Any] = {}
        if self.backend == "sqlite":
            connect_args["timeout"] = BUSY_TIMEOUT_S
            database = self.url.database
            if database and database != ":memory:" and not database.startswith("file:"):
                # A new SQLite file's folder is made for it, as the file itself would be.
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.engine: AsyncEngine = create_async_engine(
            self.url, connect_args=connect_args, echo=echo
        )
        if self.backend == "sqlite":
            self._install_sqlite_hooks()
        self._writer = self.engine.execution_options(**{_WRITE_OPTION: True})
        self._snapshot = (
            self.engine.execution_options(isolation_level="REPEATABLE READ")
            if self.backend == "postgresql"
            else self.engine
        )

    def _install_sqlite_hooks(self) -> None:
        pragmas = (
            f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}",  # first: the others may wait
            "PRAGMA journal_mode=WAL",
            "PRAGMA foreign_keys=ON",
            f"PRAGMA synchronous={self.synchronous}",
        )

        @event.listens_for(self.engine.sync_engine, "connect")
        def on_connect(dbapi_connection: Any, _record: Any) -> None:
            # The driver's own BEGIN is turned off; `on_begin` emits ours.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                for pragma in pragmas:
                    cursor.execute(pragma)
            finally:
                cursor.close()

        @event.listens_for(self.engine.sync_engine, "begin")
        def on_begin(connection: Connection) -> None:
            writes = connection.get_execution_options().get(_WRITE_OPTION, False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read transaction."""
        async with self.engine.begin() as connection:
            yield connection

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncConnection]:
        """A read transaction whose statements all see the same committed state."""
        async with self._snapshot.begin() as connection:
            yield connection

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed when the block ends, rolled back if it raises. On
        SQLite it holds the database's write lock from its first statement."""
        async with self._writer.begin() as connection:
            yield connection

    async def migrate(self) -> None:
        """Bring the schema to the newest revision. A no-op when it is there already."""
        async with self.write() as connection:
            if self.backend == "postgresql":
                await connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            await connection.run_sync(_upgrade_to_head)

    async def close(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Database({self.url.render_as_string(hide_password=True)!r})"
