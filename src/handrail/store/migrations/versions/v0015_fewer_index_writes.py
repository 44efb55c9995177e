"""Fewer index pages written per turn: the rows' tool-call index holds only the rows that have
a ``toolCallId`` (its two readers, an ask's status and an undo's results, look one up by it),
and the turn leases lose their index on ``until`` (the sweep for lapsed leases reads a table
that holds only the turns running now). Each index an insert touches is one more page of the
commit's write-ahead log.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TOOL_CALL_INDEX = "ix_history_rows_history_id_tool_call_id"
WITH_CALL = "tool_call_id IS NOT NULL"


def upgrade() -> None:
    op.drop_index(TOOL_CALL_INDEX, table_name="history_rows")
    op.create_index(
        TOOL_CALL_INDEX,
        "history_rows",
        ["history_id", "tool_call_id"],
        sqlite_where=sa.text(WITH_CALL),
        postgresql_where=sa.text(WITH_CALL),
    )
    op.drop_index("ix_turn_leases_until", table_name="turn_leases")


def downgrade() -> None:
    op.create_index("ix_turn_leases_until", "turn_leases", ["until"])
    op.drop_index(TOOL_CALL_INDEX, table_name="history_rows")
    op.create_index(TOOL_CALL_INDEX, "history_rows", ["history_id", "tool_call_id"])
