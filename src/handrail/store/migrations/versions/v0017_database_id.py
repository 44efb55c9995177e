"""The database's own id (``settings.database_id``), by which it registers in the blob folder
its uploads go to, and an index of the uploads by blob key: the sweep of bytes no upload names
runs only while one database is registered in the folder, and looks the keys it lists up by
that index (`handrail.store.blob_sweep`).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    settings = op.create_table(
        "settings",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.bulk_insert(settings, [{"name": "database_id", "value": secrets.token_hex(12)}])
    op.create_index("ix_files_blob_key", "files", ["blob_key"])


def downgrade() -> None:
    op.drop_index("ix_files_blob_key", table_name="files")
    op.drop_table("settings")
