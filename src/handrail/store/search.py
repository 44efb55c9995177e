"""Searching the caller's lists: the inbox (pending asks) and the conversations.

A search is a case-insensitive substring match done by the database. Each searchable text is
stored a second time in a *key* column, case-folded in Python (`search_key`) when it is
written: ``histories.title_key`` (the conversation's title), ``histories.ask_key`` (the
pending ask's title and prompt, a clarify ask's title and questions) and
``history_rows.text_key`` (the text of a ``user`` or ``assistant`` message). A query is
folded the same way and matched with ``LIKE '%…%'`` (its ``%``, ``_`` and ``\\`` escaped), so
SQLite and PostgreSQL give the same answer whatever their collation, non-ASCII letters
included ("ÄRGER" finds "ärger").

A search page is the list's own keyset page with the match as one more ``WHERE`` term: the
database walks the owner's list in order and stops at ``limit + 1`` matches, so the event loop
only ever handles one page. A key holds at most `KEY_MAX` characters of its text (a match
further into a very long message is not found), which bounds both the stored copy and the work
per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from handrail.asks.pending import PendingAsk

__all__ = [
    "KEY_MAX",
    "QUERY_MAX",
    "ask_key",
    "like_pattern",
    "search_key",
    "text_key",
]

#: The most characters of one text a key keeps.
KEY_MAX: Final = 10_000

#: The longest search query (in characters, after trimming).
QUERY_MAX: Final = 200

#: The row types whose ``text`` is a message a search looks in.
MESSAGE_TYPES: Final = frozenset({"user", "assistant"})


def search_key(text: str | None) -> str | None:
    """`text` case-folded and cut to `KEY_MAX` characters (None for None or blank)."""
    if text is None or not text.strip():
        return None
    return text.casefold()[:KEY_MAX]


def _joined(parts: Iterable[object]) -> str | None:
    texts = [part for part in parts if isinstance(part, str) and part.strip()]
    return search_key("\n".join(texts)) if texts else None


def ask_key(pending: PendingAsk | None) -> str | None:
    """The key of a pending ask: its title and prompt, or a clarify ask's title and
    questions (None when there is no ask)."""
    if pending is None:
        return None
    data: Mapping[str, Any] = pending.input if isinstance(pending.input, Mapping) else {}
    parts: list[object] = [data.get("title"), data.get("prompt")]
    prompts = data.get("prompts")
    if isinstance(prompts, list):
        parts.extend(p.get("question") for p in prompts if isinstance(p, Mapping))
    return _joined(parts)


def text_key(data: Mapping[str, Any]) -> str | None:
    """The key of a history row: a message's text (None for other rows)."""
    if data.get("type") not in MESSAGE_TYPES:
        return None
    text = data.get("text")
    return search_key(text) if isinstance(text, str) else None


def like_pattern(query: str) -> str:
    """The ``LIKE`` pattern (escape character ``\\``) of a substring search for `query`."""
    folded = query.casefold()
    escaped = folded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
