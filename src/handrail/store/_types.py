"""Column types that behave the same on SQLite and PostgreSQL.

- `UTCDateTime`: an aware UTC `datetime` in, an aware UTC `datetime` out. PostgreSQL stores it
  as ``timestamp with time zone``; SQLite stores naive UTC text (fixed width, so it sorts).
- `JSONData`: ``JSON`` on SQLite, ``JSONB`` on PostgreSQL; Python None is SQL NULL, never JSON
  ``null``.

Migrations import these by name, so they keep their names and storage forever.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Final

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from handrail._util import json_encoder, orjson_first

__all__ = [
    "JSONData",
    "UTCDateTime",
    "json_text",
    "sqlite_utc_text",
    "stored_json_text",
    "utc_value",
]


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp. Naive datetimes are refused on the way in."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        value = _in_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


#: The last timestamp `sqlite_utc_text` made text of, and that text. A write binds the same
#: moment several times (its `now` is the history's ``updated``, each row's ``created``, the
#: lease's, the audit record's): those after the first cost an identity check. One tuple,
#: replaced whole, so a thread never reads one value's text for another; it holds the value,
#: so no other object can take its identity while it is here.
_LAST_UTC_TEXT: tuple[dt.datetime | None, str] = (None, "")


def sqlite_utc_text(value: dt.datetime | None) -> str | None:
    """What a `UTCDateTime` bind becomes on SQLite, in one call: `process_bind_param` and then
    SQLAlchemy's SQLite ``DATETIME`` storage format (``YYYY-MM-DD HH:MM:SS.ffffff``), the
    same text and the same errors, at a third of the cost (no calls through the two
    processors, no formatting dict, no `astimezone` of a UTC value); the same value object
    as the call before costs an identity check (`_LAST_UTC_TEXT`)."""
    global _LAST_UTC_TEXT
    if value is None:
        return None
    last = _LAST_UTC_TEXT
    if value is last[0]:
        return last[1]
    # The aware value's text ends in "+00:00": cut, not `replace(tzinfo=None)` first.
    text = _in_utc(value).isoformat(" ", "microseconds")[:26]
    _LAST_UTC_TEXT = (value, text)
    return text


def _in_utc(value: dt.datetime) -> dt.datetime:
    """A `UTCDateTime` value in UTC; a naive one is refused. A value in `dt.UTC` already (what
    `utc_now` gives) is itself, as ``astimezone`` would give it, without the checks."""
    if value.tzinfo is dt.UTC:
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"Timestamps must be timezone-aware, got {value!r}.")
    return value.astimezone(dt.UTC)


def utc_value(value: dt.datetime | None) -> dt.datetime | None:
    """What a `UTCDateTime` bind becomes on PostgreSQL (asyncpg's ``timestamptz``), in one
    call: the value in UTC (`_in_utc`), None as None."""
    return None if value is None else _in_utc(value)


#: The text of a value in a JSON column: compact, its non-ASCII characters kept, made by
#: orjson; a value orjson does not take (a key that is not a string, an integer past 64 bits,
#: a lone surrogate) is written by ``json.dumps``'s C encoder, compact and ASCII only, so a
#: surrogate is an escape any database holds. The engines' ``json_serializer`` too
#: (`handrail.store.db`), so SQLAlchemy's own statements store the same text as `Prepared`
#: ones. A row's JSON is read back as JSON, never compared as text.
stored_json_text: Final = orjson_first(json_encoder(separators=(",", ":")))


def json_text(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A `JSONData` bind (on SQLite, and on PostgreSQL before asyncpg's ``jsonb`` codec):
    SQLAlchemy's processor (`process`: the engine's ``json_serializer``, `stored_json_text`;
    None as SQL NULL), with the text of a dict or a list made by `stored_json_text` in one
    call, without the processor's steps for SQL NULL and JSON null."""
    dumps = stored_json_text

    def json_text(value: Any) -> Any:
        kind = value.__class__
        if kind is dict or kind is list:
            return dumps(value)
        return process(value)

    return json_text


def _json() -> TypeEngine[Any]:
    return JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


#: JSON on SQLite, JSONB on PostgreSQL.
JSONData: TypeEngine[Any] = _json()
