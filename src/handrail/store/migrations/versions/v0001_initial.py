"""The first schema: histories, their rows, files and the request log.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "histories",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("owner_id", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("pending_ask", JSONData, nullable=True),
        sa.Column("pending_created", UTCDateTime(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("next_seq", sa.Integer(), nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("updated", UTCDateTime(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_histories"),
    )
    op.create_index("ix_histories_owner_id_deleted_at", "histories", ["owner_id", "deleted_at"])
    op.create_index(
        "ix_histories_owner_id_pending_created", "histories", ["owner_id", "pending_created"]
    )

    op.create_table(
        "history_rows",
        sa.Column("history_id", sa.String(24), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=True),
        sa.Column("ask_status", sa.String(16), nullable=True),
        sa.Column("data", JSONData, nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["history_id"],
            ["histories.id"],
            name="fk_history_rows_history_id_histories",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("history_id", "seq", name="pk_history_rows"),
    )
    op.create_index(
        "ix_history_rows_history_id_tool_call_id", "history_rows", ["history_id", "tool_call_id"]
    )

    op.create_table(
        "files",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("owner_id", sa.String(255), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("mime_type", sa.String(255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(255), nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_files"),
    )
    op.create_index("ix_files_owner_id", "files", ["owner_id"])

    op.create_table(
        "requests",
        sa.Column("id", sa.String(24), nullable=False),
        sa.Column("history_id", sa.String(24), nullable=False),
        sa.Column("owner_id", sa.String(255), nullable=False),
        sa.Column("request_type", sa.String(64), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("metadata", JSONData, nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_requests"),
    )
    op.create_index("ix_requests_history_id_created", "requests", ["history_id", "created"])


def downgrade() -> None:
    op.drop_table("requests")
    op.drop_table("files")
    op.drop_table("history_rows")
    op.drop_table("histories")
