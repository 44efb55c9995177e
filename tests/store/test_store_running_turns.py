"""The running turns (`handrail.store.running`): written many at once, renewed by their
process in one statement, read as nothing once they lapse, on both backends; the tool's title
is kept (migration 0018), and a row without one reads with a title made from the name."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from alembic import command
from sqlalchemy import Connection, MetaData, Table, insert

from handrail._util import utc_now
from handrail.store import Database, Store
from handrail.store.db import alembic_config
from handrail.store.running import RunningTurn

MINUTE = dt.timedelta(minutes=1)


def running(
    history_id: str, owner: str, *, until: dt.datetime, phase: str = "thinking"
) -> RunningTurn:
    return RunningTurn(
        history_id=history_id,
        turn_id=history_id[::-1],
        owner=owner,
        phase=phase,
        since=utc_now(),
        until=until,
    )


async def test_flush_renew_and_lapse(store: Store) -> None:
    now = utc_now()
    a, b, c = ("a" * 24, "b" * 24, "c" * 24)
    await store.running.flush("one", [running(a, "one", until=now + MINUTE)], [])
    await store.running.flush(
        "two", [running(b, "two", until=now - MINUTE), running(c, "two", until=now + MINUTE)], []
    )
    first = await store.running.get(a, now=now)
    assert first is not None
    assert (first.owner, first.phase, first.tool_name) == ("one", "thinking", None)
    assert await store.running.get(b, now=now) is None  # lapsed: its process stopped
    # A change replaces the conversation's row, whoever held it.
    tool = RunningTurn(
        history_id=c,
        turn_id="d" * 24,
        owner="one",
        phase="tool",
        since=now,
        until=now + MINUTE,
        tool_name="lookup",
        tool_call_id="call_1",
        tool_title="Look up a customer",
    )
    await store.running.flush("one", [tool], [])
    assert await store.running.get(c, now=now) == tool
    assert tool.to_json()["tool"] == {
        "toolName": "lookup",
        "toolTitle": "Look up a customer",
        "toolCallId": "call_1",
    }
    # Dropping removes only the dropper's own rows.
    await store.running.flush("two", [], [a, c])
    assert await store.running.get(a, now=now) is not None
    # One statement renews every row of a process; lapsed rows of others go.
    later = now + 2 * MINUTE
    assert await store.running.renew("one", until=later + MINUTE, now=later) == 2
    renewed = await store.running.get(a, now=later)
    assert renewed is not None
    assert renewed.until == later + MINUTE
    assert await store.running.renew("two", until=later, now=later) == 0
    await store.running.flush("one", [], [a, c])
    assert await store.running.get(a, now=now) is None
    assert await store.running.get(c, now=now) is None


async def test_a_row_from_before_0018_reads_with_a_title_made_from_its_name(
    database_url: str, tmp_path: Path
) -> None:
    """A row written before the ``tool_title`` column (migration 0018) existed: after the
    upgrade, the view says "Create invoice", never the name written for the model."""
    now = utc_now()
    history_id = "e" * 24

    def old_row(connection: Connection) -> None:
        command.upgrade(alembic_config(connection), "0017")
        # The table as the database has it at 0017: no title column.
        table = Table("running_turns", MetaData(), autoload_with=connection)
        connection.execute(
            insert(table).values(
                history_id=history_id,
                turn_id="f" * 24,
                owner="one",
                phase="tool",
                tool_name="create_invoice",
                tool_call_id="call_9",
                since=now,
                until=now + MINUTE,
            )
        )
        command.upgrade(alembic_config(connection), "head")

    async with Database(database_url) as db:
        await db.write(old_row)
    store = await Store.open(database_url, blob_dir=tmp_path / "blobs")
    try:
        found = await store.running.get(history_id, now=now)
        assert found is not None
        assert found.tool_title is None
        assert found.to_json()["tool"] == {
            "toolName": "create_invoice",
            "toolTitle": "Create invoice",
            "toolCallId": "call_9",
        }
    finally:
        await store.close()
