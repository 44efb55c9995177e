"""Saved connections and the activity log of their changes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "connections",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("app", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("prefix", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("launch", JSONData, nullable=True),
        sa.Column("protocol", sa.String(16), nullable=False),
        sa.Column("settings", JSONData, nullable=False),
        sa.Column("secrets", sa.Text(), nullable=True),
        sa.Column("secret_keys", JSONData, nullable=False),
        sa.Column("trusted", sa.Boolean(), nullable=False),
        sa.Column("agents", JSONData, nullable=True),
        sa.Column("overrides", JSONData, nullable=False),
        sa.Column("agent_instructions", JSONData, nullable=True),
        sa.Column("status", JSONData, nullable=False),
        sa.Column("tools", JSONData, nullable=False),
        sa.Column("server_instructions", sa.Text(), nullable=True),
        sa.Column("call_timeout", sa.Float(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_connections"),
    )
    op.create_index("uq_connections_prefix", "connections", ["prefix"], unique=True)
    op.create_table(
        "activity",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("changes", JSONData, nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_activity"),
    )
    op.create_index("ix_activity_created_id", "activity", ["created", "id"])


def downgrade() -> None:
    op.drop_table("activity")
    op.drop_table("connections")
