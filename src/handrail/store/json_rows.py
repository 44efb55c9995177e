"""A read's rows as one JSON value, so that several reads go in one PostgreSQL statement.

A snapshot of several statements is a transaction: BEGIN, each statement and COMMIT, one round
trip each. On PostgreSQL one statement sees one snapshot by itself, so the reads that must agree
(a history, its rows, its confirmations, its lease) can go in one statement without a
transaction: the main row as it is, and each other read as a `JsonRows` column, its rows
aggregated into one JSON array in the read's order (``json_agg``), sent as text and decoded
back into the values the read itself would give. JSON keeps strings, integers, booleans and
nested JSON (a `JSONData` column) exactly; a `UTCDateTime` comes back from its ISO 8601 text
(microseconds and offset included) as an aware UTC datetime. Any other column type is refused
when the read is built.

    ROWS = JsonRows(select(R.seq, R.data).where(R.history_id == bindparam("history_id")),
                    order_by=("seq",), name="rows")
    GET = Prepared(select(histories, ROWS.column).where(H.id == bindparam("history_id")))
    row = GET.first(connection, {"history_id": history_id})
    rows = ROWS.decode(row["rows"])    # [{"seq": 0, "data": {...}}, ...]
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Integer, String, Text, cast, func, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import Label

from handrail.store._types import UTCDateTime

__all__ = ["JsonRows"]

Decode = Callable[[Any], Any]


def _timestamp(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    return dt.datetime.fromisoformat(value).astimezone(dt.UTC)


def _as_is(value: Any) -> Any:
    return value


def _decoder(type_: Any) -> Decode:
    if isinstance(type_, UTCDateTime):
        return _timestamp
    if isinstance(type_, (JSON, String, Text, Integer, BigInteger, Boolean)):
        return _as_is
    raise TypeError(f"JsonRows cannot bring back a column of type {type_!r} exactly.")


class JsonRows:
    """The rows of `statement` (a SELECT of plain columns, with no ORDER BY of its own) as one
    JSON array column named `name`, ordered by the columns `order_by` names; `decode` turns
    the column's value into the rows, each a dict as `Prepared.all` gives. PostgreSQL only."""

    __slots__ = ("_decoders", "column")

    def __init__(self, statement: Select[Any], *, order_by: Sequence[str], name: str) -> None:
        self._decoders = tuple((c.name, _decoder(c.type)) for c in statement.selected_columns)
        rows = statement.subquery(f"{name}_rows")
        record = rows.table_valued()
        aggregated = (
            func.json_agg(aggregate_order_by(record, *(rows.c[n] for n in order_by)))
            if order_by
            else func.json_agg(record)
        )
        self.column: Label[Any] = cast(select(aggregated).scalar_subquery(), Text).label(name)

    def decode(self, value: str | None) -> list[dict[str, Any]]:
        """The rows of the column's `value` (NULL: none)."""
        if value is None:
            return []
        decoders = self._decoders
        items = json.loads(value)
        return [{name: decode(item[name]) for name, decode in decoders} for item in items]
