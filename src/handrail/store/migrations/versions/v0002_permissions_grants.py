"""Permission levels per user and connection, and grants.

Revision ID: 0002
Revises: 0001
Create Date: 2026-01-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "permissions",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("connection_id", sa.String(255), nullable=False),
        sa.Column("level", sa.String(32), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "connection_id", name="pk_permissions"),
    )

    op.create_table(
        "grants",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("connection_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("history_id", sa.String(24), nullable=True),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "(scope = 'always' AND history_id IS NULL)"
            " OR (scope = 'conversation' AND history_id IS NOT NULL)",
            name=op.f("ck_grants_scope"),
        ),
        sa.PrimaryKeyConstraint("id", name="pk_grants"),
    )
    op.create_index(
        "ix_grants_user_id_connection_id_tool_name",
        "grants",
        ["user_id", "connection_id", "tool_name"],
    )
    op.create_index(
        "uq_grants_always",
        "grants",
        ["user_id", "connection_id", "tool_name"],
        unique=True,
        sqlite_where=sa.text("scope = 'always'"),
        postgresql_where=sa.text("scope = 'always'"),
    )
    op.create_index(
        "uq_grants_conversation",
        "grants",
        ["user_id", "connection_id", "tool_name", "history_id"],
        unique=True,
        sqlite_where=sa.text("scope = 'conversation'"),
        postgresql_where=sa.text("scope = 'conversation'"),
    )


def downgrade() -> None:
    op.drop_table("grants")
    op.drop_table("permissions")
