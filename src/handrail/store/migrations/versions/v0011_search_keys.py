"""Search keys: the case-folded texts a search of the inbox or the conversations matches.

``histories.title_key`` (the title), ``histories.ask_key`` (the pending ask's title and prompt,
a clarify ask's title and questions) and ``history_rows.text_key`` (a ``user`` or
``assistant`` message's text), each case-folded and cut to 10,000 characters. Existing rows get
theirs here. The folding is written out in this file (a migration is a fixed point in time);
``handrail.store.search`` does the same for new rows.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import sqlalchemy as sa
from alembic import op

from handrail.store._types import JSONData

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY_MAX: Final = 10_000

_histories = sa.table(
    "histories",
    sa.column("id", sa.String(24)),
    sa.column("title", sa.Text),
    sa.column("pending_ask", JSONData),
    sa.column("title_key", sa.Text),
    sa.column("ask_key", sa.Text),
)
_rows = sa.table(
    "history_rows",
    sa.column("history_id", sa.String(24)),
    sa.column("seq", sa.Integer),
    sa.column("type", sa.String(64)),
    sa.column("data", JSONData),
    sa.column("text_key", sa.Text),
)


def _key(parts: Sequence[object]) -> str | None:
    texts = [part for part in parts if isinstance(part, str) and part.strip()]
    return "\n".join(texts).casefold()[:KEY_MAX] if texts else None


def _ask_key(pending: Mapping[str, Any] | None) -> str | None:
    if not isinstance(pending, Mapping):
        return None
    data = pending.get("input")
    if not isinstance(data, Mapping):
        return None
    parts: list[object] = [data.get("title"), data.get("prompt")]
    prompts = data.get("prompts")
    if isinstance(prompts, list):
        parts.extend(p.get("question") for p in prompts if isinstance(p, Mapping))
    return _key(parts)


def upgrade() -> None:
    op.add_column("histories", sa.Column("title_key", sa.Text(), nullable=True))
    op.add_column("histories", sa.Column("ask_key", sa.Text(), nullable=True))
    op.add_column("history_rows", sa.Column("text_key", sa.Text(), nullable=True))
    connection = op.get_bind()
    histories = connection.execute(
        sa.select(_histories.c.id, _histories.c.title, _histories.c.pending_ask)
    ).all()
    for history_id, title, pending in histories:
        title_key, ask_key = _key([title]), _ask_key(pending)
        if title_key is not None or ask_key is not None:
            connection.execute(
                _histories.update()
                .where(_histories.c.id == history_id)
                .values(title_key=title_key, ask_key=ask_key)
            )
    messages = connection.execute(
        sa.select(_rows.c.history_id, _rows.c.seq, _rows.c.data).where(
            _rows.c.type.in_(("user", "assistant"))
        )
    ).all()
    for history_id, seq, data in messages:
        text = data.get("text") if isinstance(data, Mapping) else None
        key = _key([text])
        if key is not None:
            connection.execute(
                _rows.update()
                .where(_rows.c.history_id == history_id, _rows.c.seq == seq)
                .values(text_key=key)
            )


def downgrade() -> None:
    op.drop_column("history_rows", "text_key")
    op.drop_column("histories", "ask_key")
    op.drop_column("histories", "title_key")
