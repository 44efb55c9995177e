"""List indexes: each paged list of histories is one range of its own partial index.

``GET /histories`` reads ``(owner_id, created, id)`` of the live histories and
``GET /histories/pendingAsks`` ``(owner_id, pending_created, id)`` of the live histories that
wait on an ask, so a page after a cursor costs the same at any list length, and deleted or
answered conversations take no room in them. The two indexes they replace had only a prefix of
those keys (every page sorted all of the owner's rows).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = "deleted_at IS NULL"
WAITING = "deleted_at IS NULL AND pending_created IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_histories_owner_id_created_id",
        "histories",
        ["owner_id", "created", "id"],
        sqlite_where=sa.text(LIVE),
        postgresql_where=sa.text(LIVE),
    )
    op.create_index(
        "ix_histories_owner_id_pending_created_id",
        "histories",
        ["owner_id", "pending_created", "id"],
        sqlite_where=sa.text(WAITING),
        postgresql_where=sa.text(WAITING),
    )
    op.drop_index("ix_histories_owner_id_deleted_at", table_name="histories")
    op.drop_index("ix_histories_owner_id_pending_created", table_name="histories")


def downgrade() -> None:
    op.create_index("ix_histories_owner_id_deleted_at", "histories", ["owner_id", "deleted_at"])
    op.create_index(
        "ix_histories_owner_id_pending_created", "histories", ["owner_id", "pending_created"]
    )
    op.drop_index("ix_histories_owner_id_pending_created_id", table_name="histories")
    op.drop_index("ix_histories_owner_id_created_id", table_name="histories")
