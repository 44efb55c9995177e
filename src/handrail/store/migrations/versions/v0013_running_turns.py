"""Running turns: what each turn running now does, for a history opened mid-turn in any
process.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "running_turns",
        sa.Column("history_id", sa.String(24), primary_key=True),
        sa.Column("turn_id", sa.String(24), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("phase", sa.String(32), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=True),
        sa.Column("tool_call_id", sa.String(255), nullable=True),
        sa.Column("since", UTCDateTime(), nullable=False),
        sa.Column("until", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_running_turns_owner", "running_turns", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_running_turns_owner", table_name="running_turns")
    op.drop_table("running_turns")
