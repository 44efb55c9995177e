"""Confirmations: prepared side-effecting HTTP requests held for the person's confirmation.

Revision ID: 0003
Revises: 0002
Create Date: 2026-01-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("history_id", sa.String(24), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("connection_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("request", JSONData, nullable=False),
        sa.Column("digest", sa.String(255), nullable=False),
        sa.Column("preview", JSONData, nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("outcome", JSONData, nullable=True),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "state IN ('pending', 'consumed', 'succeeded', 'failed', 'cancelled', 'stale',"
            " 'uncertain')",
            name=op.f("ck_confirmations_state"),
        ),
        sa.PrimaryKeyConstraint("id", name="pk_confirmations"),
    )
    op.create_index(
        "ix_confirmations_history_id_created", "confirmations", ["history_id", "created"]
    )
    op.create_index("ix_confirmations_state_lease_until", "confirmations", ["state", "lease_until"])


def downgrade() -> None:
    op.drop_table("confirmations")
