"""The event outbox: the events a change committed for webhooks and email, written in the
change's own transaction, so none is lost when a process stops before publishing it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData, UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox_events",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("event", JSONData, nullable=False),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("claimed_until", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_outbox_events_created", "outbox_events", ["created"])


def downgrade() -> None:
    op.drop_index("ix_outbox_events_created", table_name="outbox_events")
    op.drop_table("outbox_events")
