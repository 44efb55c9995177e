"""The Alembic environment.

`handrail.store.db.Database.migrate` passes an open connection (inside its transaction) as
``config.attributes["connection"]``. Without one (the ``alembic`` command line), the URL comes
from the ``sqlalchemy.url`` option or ``HANDRAIL_DATABASE_URL``.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy import Connection

from handrail.store.db import Database, driver_url
from handrail.store.tables import metadata


def run_migrations(connection: Connection) -> None:
    if not connection.in_transaction():
        # On SQLite the store began the transaction on the driver itself (see
        # `handrail.store.db`): SQLAlchemy's joins it, so that Alembic sees one and commits
        # nothing of its own, and every revision lands in the store's one transaction.
        connection.begin()
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def configured_url() -> str | None:
    return context.config.get_main_option("sqlalchemy.url") or os.environ.get(
        "HANDRAIL_DATABASE_URL"
    )


async def run_on_url(url: str | None) -> None:
    database = Database(url)
    try:
        await database.write(run_migrations)
    finally:
        await database.close()


def main() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
    elif context.is_offline_mode():
        context.configure(
            url=driver_url(configured_url()),
            target_metadata=metadata,
            literal_binds=True,
            dialect_opts={"paramstyle": "named"},
        )
        with context.begin_transaction():
            context.run_migrations()
    else:
        asyncio.run(run_on_url(configured_url()))


main()
