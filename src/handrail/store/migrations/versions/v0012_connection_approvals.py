"""Connection approvals: an admin may name who must approve a saved connection's tools' calls,
and their clocks (``connections.approvals``, null: none).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("approvals", JSONData, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("approvals")
