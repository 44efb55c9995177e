"""Turn leases: a turn with work to do after a committed answer or message is held by one
process, renewed by a heartbeat, and taken over by another when it lapses.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "turn_leases",
        sa.Column("history_id", sa.String(24), primary_key=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("until", UTCDateTime(), nullable=False),
        sa.Column("state", JSONData, nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_turn_leases_until", "turn_leases", ["until"])


def downgrade() -> None:
    op.drop_index("ix_turn_leases_until", table_name="turn_leases")
    op.drop_table("turn_leases")
