"""The rows of a history lose their foreign key to ``histories``. Every row is written by a
history change that first moves its history's version on by compare-and-set (the change fails
as ``HistoryNotFound`` or ``HistoryConflict`` when that history is missing or moved on, and
nothing of it is written), and no history is ever removed (a deletion marks ``deleted_at``), so
the key guarded nothing those changes do not, and its cascade never ran. What it cost: on
PostgreSQL a trigger a row that reads and locks the history the same statement has just
updated (a WAL record a row); on SQLite a lookup a row.

SQLite cannot drop a constraint: the table is copied to one without it (its partial index made
again as it was), once, when a server first starts on the database after the upgrade: about 3 s
for 500,000 rows (a 270 MB database) on the build machine, and the copy needs that much free
disk space while it runs.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FOREIGN_KEY = "fk_history_rows_history_id_histories"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("history_rows", recreate="always") as batch:
            batch.drop_constraint(FOREIGN_KEY, type_="foreignkey")
    else:
        op.drop_constraint(FOREIGN_KEY, "history_rows", type_="foreignkey")


def downgrade() -> None:
    with op.batch_alter_table("history_rows") as batch:
        batch.create_foreign_key(
            FOREIGN_KEY, "histories", ["history_id"], ["id"], ondelete="CASCADE"
        )
