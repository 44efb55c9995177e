"""The audit log (gate records in the activity table) and the gates that wait with a clock or
for other people.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("activity") as batch:
        batch.add_column(sa.Column("history_id", sa.String(24), nullable=True))
        batch.add_column(sa.Column("owner_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("tool", sa.String(255), nullable=True))
    op.create_index("ix_activity_owner_id_created", "activity", ["owner_id", "created"])
    op.create_index("ix_activity_actor_created", "activity", ["actor", "created"])
    op.create_table(
        "open_gates",
        sa.Column("history_id", sa.String(24), nullable=False),
        sa.Column("ask_id", sa.String(255), nullable=False),
        sa.Column("owner_id", sa.String(255), nullable=False),
        sa.Column("origin", sa.String(64), nullable=True),
        sa.Column("tool", sa.String(255), nullable=True),
        sa.Column("approvers", JSONData, nullable=True),
        sa.Column("expires", UTCDateTime(), nullable=True),
        sa.Column("remind", UTCDateTime(), nullable=True),
        sa.Column("reminded", UTCDateTime(), nullable=True),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("history_id", name="pk_open_gates"),
    )
    op.create_index("ix_open_gates_expires", "open_gates", ["expires"])
    op.create_index("ix_open_gates_remind", "open_gates", ["remind"])


def downgrade() -> None:
    op.drop_table("open_gates")
    op.drop_index("ix_activity_actor_created", "activity")
    op.drop_index("ix_activity_owner_id_created", "activity")
    with op.batch_alter_table("activity") as batch:
        batch.drop_column("tool")
        batch.drop_column("owner_id")
        batch.drop_column("history_id")
