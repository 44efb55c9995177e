"""The running turns keep the title of the tool a turn runs (``tool_title``), so the history
view of a conversation opened mid-turn says what runs in the person's words ("Running Create
invoice…"), never the name written for the model. A row without it (written before) reads with
a title made from the tool's name.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("running_turns", sa.Column("tool_title", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("running_turns") as batch:
        batch.drop_column("tool_title")
