"""Pages of a list, newest first, by keyset.

A list is ordered by a time and then the id (both descending), and a page is the next `limit`
items strictly after a `Position`: the sort key of the last item of the page before. Such a
page costs the same however long the list is (an index range scan from the position, never an
offset to count past), and an item added, changed or removed between two pages moves no other
item across the boundary: none is repeated or skipped.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = ["MAX_LIMIT", "Page", "Position", "checked_limit"]

#: The most items one page may hold.
MAX_LIMIT: Final = 200

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class Position:
    """The sort key of an item of a list ordered by ``(at desc, id desc)``: a page after it
    starts with the next older item."""

    at: dt.datetime
    id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Page(Generic[T]):
    """At most `limit` items of a list, and where the next page starts: the position of the
    last item when more follow, else None."""

    items: list[T]
    next: Position | None


def checked_limit(limit: int) -> int:
    """`limit` when it is from 1 to `MAX_LIMIT`, else `ValueError`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"A page holds 1 to {MAX_LIMIT} items, not {limit!r}.")
    return limit
