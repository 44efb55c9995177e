"""The ``gate.asked`` records of the audit log found by their conversation and gate: an
approver who answers a gate that ended meanwhile is told so from the approvers that record
named (`AuditRepo.approvers_of`), which read every record of the log before. The index holds
only those records (one a gate), so the other audit records an insert writes touch no more
index pages than before.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_activity_gate_asked"
GATE_ASKED = "action = 'gate.asked'"


def upgrade() -> None:
    op.create_index(
        INDEX,
        "activity",
        ["history_id", "subject"],
        sqlite_where=sa.text(GATE_ASKED),
        postgresql_where=sa.text(GATE_ASKED),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="activity")
