"""The outbox of webhooks and emails, its delivery log, and the one-time links of emails.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("event_id", sa.String(255), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("target", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("payload", JSONData, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt", UTCDateTime(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deliveries"),
    )
    op.create_index(
        "uq_deliveries_channel_target_event_id",
        "deliveries",
        ["channel", "target", "event_id"],
        unique=True,
    )
    op.create_index("ix_deliveries_status_next_attempt", "deliveries", ["status", "next_attempt"])
    op.create_index("ix_deliveries_user_id_created_id", "deliveries", ["user_id", "created", "id"])
    op.create_table(
        "delivery_attempts",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("delivery_id", sa.String(24), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["deliveries.id"],
            name="fk_delivery_attempts_delivery_id_deliveries",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_delivery_attempts"),
    )
    op.create_index(
        "ix_delivery_attempts_delivery_id_attempt",
        "delivery_attempts",
        ["delivery_id", "attempt"],
    )
    op.create_table(
        "answer_links",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("history_id", sa.String(24), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("button_id", sa.String(255), nullable=False),
        sa.Column("expires", UTCDateTime(), nullable=False),
        sa.Column("used", UTCDateTime(), nullable=True),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_answer_links"),
    )
    op.create_index(
        "ix_answer_links_history_id_tool_call_id",
        "answer_links",
        ["history_id", "tool_call_id"],
    )


def downgrade() -> None:
    op.drop_table("answer_links")
    op.drop_table("delivery_attempts")
    op.drop_table("deliveries")
