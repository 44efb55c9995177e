"""Connection instructions: saved connections of the apps that ship a template get it, enabled.

The apps and templates are those of the shipped catalog when this migration was written (a
migration is a fixed point in time: a later catalog change never rewrites saved settings). A
connection that has instructions already keeps them.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The shipped apps with a template, and the template, as of this migration.
TEMPLATES: Final[dict[str, dict[str, Any]]] = {
    "memory": {
        "id": "memory.usage",
        "version": 1,
        "text": "Before answering, search the memory graph for the people and projects the user "
        "mentions. Record new lasting facts as observations on the right entity; never record "
        "secrets.",
    },
    "notes": {
        "id": "notes.usage",
        "version": 1,
        "text": "Read notes_house_style before adding a note. Say which note you will delete "
        "before you delete it.",
    },
}

_connections = sa.table(
    "connections",
    sa.column("id", sa.String(24)),
    sa.column("app", sa.String(255)),
    sa.column("agent_instructions", JSONData),
)


def upgrade() -> None:
    for app, template in TEMPLATES.items():
        setting = {
            "enabled": True,
            "text": template["text"],
            "template": {"id": template["id"], "version": template["version"]},
        }
        op.execute(
            _connections.update()
            .where(_connections.c.app == app, _connections.c.agent_instructions.is_(None))
            .values(agent_instructions=setting)
        )


def downgrade() -> None:
    """The settings stay: they are the admins' now."""
