"""A `Prepared` statement on SQLite binds `UTCDateTime` values in one call (`sqlite_utc_text`),
and on SQLite and PostgreSQL `JSONData` values with an encoder built once (`json_text`): the
stored text (on PostgreSQL, the ``jsonb``) is exactly SQLAlchemy's own, and so are the errors
and the values read back."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Integer,
    MetaData,
    Table,
    Text,
    bindparam,
    insert,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from handrail.store import Database
from handrail.store._types import (
    JSONData,
    UTCDateTime,
    json_text,
    sqlite_utc_text,
    stored_json_text,
    utc_value,
)
from handrail.store.prepared import Prepared

metadata = MetaData()
moments = Table(
    "moments",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", UTCDateTime, nullable=True),
    Column("data", JSONData, nullable=True),
)

CEST = dt.timezone(dt.timedelta(hours=2))
VALUES = [
    dt.datetime(2026, 12, 1, 20, 15, 3, 123456, tzinfo=dt.UTC),
    dt.datetime(2026, 12, 1, 20, 15, 3, tzinfo=dt.UTC),  # no microseconds
    dt.datetime(2026, 7, 1, 1, 2, 3, 45, tzinfo=CEST),  # another zone: stored as UTC
    dt.datetime(2026, 7, 1, 1, 2, 3, 45, tzinfo=ZoneInfo("UTC")),  # UTC, not `dt.UTC`
    dt.datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),  # a year of three digits
    dt.datetime.max.replace(tzinfo=dt.UTC),
    None,
]


def _sqlalchemy_bind(value: dt.datetime | None, dialect: Dialect | None = None) -> object:
    """SQLAlchemy's own bind of a `UTCDateTime` (SQLite's text by default)."""
    process = UTCDateTime()._cached_bind_processor(dialect or sqlite.dialect())
    assert process is not None
    return process(value)


def _sqlalchemy_text(value: dt.datetime | None) -> object:
    return _sqlalchemy_bind(value)


@pytest.mark.parametrize("value", VALUES)
def test_the_text_is_sqlalchemys(value: dt.datetime | None) -> None:
    text = sqlite_utc_text(value)
    assert text == _sqlalchemy_text(value)
    assert type(text) is type(_sqlalchemy_text(value))


@pytest.mark.parametrize("value", VALUES)
def test_on_postgresql_the_value_is_sqlalchemys(value: dt.datetime | None) -> None:
    ours = utc_value(value)
    theirs = _sqlalchemy_bind(value, postgresql.asyncpg.dialect())
    assert ours == theirs
    assert (ours is None) is (theirs is None)
    if ours is not None and isinstance(theirs, dt.datetime):
        assert ours.tzinfo is theirs.tzinfo is dt.UTC
        assert ours.isoformat() == theirs.isoformat()


@pytest.mark.parametrize(
    ("ours", "dialect"),
    [(sqlite_utc_text, sqlite.dialect()), (utc_value, postgresql.asyncpg.dialect())],
    ids=["sqlite", "postgresql"],
)
def test_a_naive_timestamp_is_refused_as_before(ours: Any, dialect: Dialect) -> None:
    naive = dt.datetime(2026, 12, 1, 20, 15)
    with pytest.raises(ValueError, match="timezone-aware") as mine:
        ours(naive)
    with pytest.raises(ValueError, match="timezone-aware") as theirs:
        _sqlalchemy_bind(naive, dialect)
    assert str(mine.value) == str(theirs.value)


_INSERT = Prepared(insert(moments))
_READ = Prepared(select(moments).where(moments.c.id == bindparam("id")))


def _create(connection: Connection) -> None:
    metadata.create_all(connection)


def _write(connection: Connection, values: list[dt.datetime | None]) -> None:
    _INSERT.run(
        connection, [{"id": i, "at": value, "data": None} for i, value in enumerate(values)]
    )


def _stored(connection: Connection) -> list[str | None]:
    driver = connection.connection.driver_connection
    assert driver is not None
    return [row[0] for row in driver.execute("SELECT at FROM moments ORDER BY id")]


def _read(connection: Connection, count: int) -> list[object]:
    return [_READ.first(connection, {"id": i}) for i in range(count)]


async def test_a_prepared_statement_stores_and_reads_the_same(tmp_path: Path) -> None:
    async with Database(f"sqlite:///{tmp_path / 't.db'}") as database:
        await database.write(_create)
        await database.write(_write, VALUES)
        assert await database.read(_stored) == [_sqlalchemy_text(v) for v in VALUES]
        rows = await database.read(_read, len(VALUES))
        expected = [None if v is None else v.astimezone(dt.UTC) for v in VALUES]
        assert [row and row["at"] for row in rows] == expected


JSON_VALUES: list[Any] = [
    {"type": "tool-call", "args": {"title": "Plan", "n": [1, 2.5, None, True, False]}},
    {"é": "ü \u2028 \ud83d\ude00", "nested": [{"a": {}}, []], 3: "int key"},
    [1, "two", {"three": 3.0}],
    {"inf": float("inf"), "nan": float("nan")},
    {"é": "ü \u2028 😀"},
    {},
    [],
    "a string",
    7,
    None,
    JSON.NULL,
]


#: The dialects as `Database` makes their engines: JSON written by `stored_json_text`.
DIALECTS: list[Dialect] = [
    sqlite.dialect(json_serializer=stored_json_text),
    postgresql.asyncpg.dialect(json_serializer=stored_json_text),
]


def _sqlalchemy_json(dialect: Dialect) -> Any:
    process = JSONData.dialect_impl(dialect).bind_processor(dialect)
    assert process is not None
    return process


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@pytest.mark.parametrize("value", JSON_VALUES)
def test_the_json_text_is_sqlalchemys(value: Any, dialect: Dialect) -> None:
    theirs = _sqlalchemy_json(dialect)
    ours = json_text(theirs)
    assert ours(value) == theirs(value)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_value_json_cannot_hold_is_refused_as_before(dialect: Dialect) -> None:
    theirs = _sqlalchemy_json(dialect)
    ours = json_text(theirs)
    for value in ({"at": dt.datetime(2026, 1, 1)}, [object()]):
        with pytest.raises(TypeError) as mine:
            ours(value)
        with pytest.raises(TypeError) as original:
            theirs(value)
        assert str(mine.value) == str(original.value)


def _write_json(connection: Connection, values: list[Any]) -> None:
    _INSERT.run(
        connection, [{"id": i, "at": None, "data": value} for i, value in enumerate(values)]
    )


def _write_as_sqlalchemy(connection: Connection, column: str, values: list[Any]) -> None:
    """`values` in `column` (the other column None) through `Connection.execute`, from id 100."""
    connection.execute(
        insert(moments),
        [{"id": 100 + i, "at": None, "data": None, column: v} for i, v in enumerate(values)],
    )


def _stored_pairs(connection: Connection, column: str, count: int) -> list[tuple[Any, Any]]:
    """`column`'s stored text of ids 0 to `count` - 1 (`Prepared`'s), each beside that of the
    id 100 more (SQLAlchemy's)."""
    rows = connection.execute(
        select(moments.c.id, moments.c[column].cast(Text)).order_by(moments.c.id)
    ).all()
    texts = {row[0]: row[1] for row in rows}
    return [(texts[i], texts[100 + i]) for i in range(count)]


async def test_a_prepared_statement_stores_json_as_sqlalchemy_does(database_url: str) -> None:
    """`Prepared` (on sqlite3 or asyncpg itself) and SQLAlchemy's own statements store the
    same text and read back the same values, on each backend."""
    values = [v for v in JSON_VALUES if v is not JSON.NULL]  # NaN is null: jsonb takes it
    async with Database(database_url) as database:
        await database.write(_create)
        await database.write(_write_json, values)
        await database.write(_write_as_sqlalchemy, "data", values)
        pairs = await database.read(_stored_pairs, "data", len(values))
        assert [ours for ours, _ in pairs] == [theirs for _, theirs in pairs]
        assert pairs[values.index(None)] == (None, None)  # SQL NULL, not JSON null
        ours_read = await database.read(_read, len(values))
        theirs_read = [await database.read(_read_one, 100 + i) for i in range(len(values))]
        assert [row and row["data"] for row in ours_read] == [
            row and row["data"] for row in theirs_read
        ]
        assert ours_read[0] is not None
        assert ours_read[0]["data"] == values[0]
        if database.backend == "postgresql":
            return  # jsonb keeps its own text
        # Compact, the non-ASCII characters kept, NaN and the infinities as null; what orjson
        # does not take (a key that is not a string, lone surrogates) compact and ASCII only.
        assert pairs[0][0] == (
            '{"type":"tool-call","args":{"title":"Plan","n":[1,2.5,null,true,false]}}'
        )
        assert pairs[1][0] == json.dumps(values[1], separators=(",", ":"))
        assert "\\ud83d" in pairs[1][0]
        assert pairs[2][0] == '[1,"two",{"three":3.0}]'
        assert pairs[3][0] == '{"inf":null,"nan":null}'
        assert pairs[4][0] == '{"é":"ü \u2028 😀"}'


def _read_one(connection: Connection, at: int) -> object:
    return _READ.first(connection, {"id": at})


def test_the_same_moment_again_and_another_after_it() -> None:
    """The text of the value bound last is kept for the same object; another value, equal or
    not, aware in another zone or naive, is made again (or refused) as the first time."""
    first = dt.datetime(2026, 12, 6, 17, 5, 1, 250000, tzinfo=dt.UTC)
    assert sqlite_utc_text(first) == "2026-12-06 17:05:01.250000"
    assert sqlite_utc_text(first) == "2026-12-06 17:05:01.250000"
    later = first + dt.timedelta(microseconds=1)
    assert sqlite_utc_text(later) == _sqlalchemy_text(later) == "2026-12-06 17:05:01.250001"
    elsewhere = later.astimezone(CEST)
    assert sqlite_utc_text(elsewhere) == "2026-12-06 17:05:01.250001"
    assert sqlite_utc_text(None) is None
    with pytest.raises(ValueError, match="timezone-aware"):
        sqlite_utc_text(later.replace(tzinfo=None))
    assert sqlite_utc_text(first) == "2026-12-06 17:05:01.250000"


async def test_on_postgresql_a_prepared_statement_stores_timestamps_as_sqlalchemy_does(
    postgres_cluster: Any,
) -> None:
    async with Database(postgres_cluster.new_database_url()) as database:
        await database.write(_create)
        await database.write(_write, VALUES)  # `Prepared`, on asyncpg itself
        await database.write(_write_as_sqlalchemy, "at", VALUES)
        pairs = await database.read(_stored_pairs, "at", len(VALUES))
        assert [ours for ours, _ in pairs] == [theirs for _, theirs in pairs]
        assert pairs[0][0] is not None
        assert pairs[-1] == (None, None)
        rows = await database.read(_read, len(VALUES))
        expected = [None if v is None else v.astimezone(dt.UTC) for v in VALUES]
        assert [row and row["at"] for row in rows] == expected
        with pytest.raises(ValueError, match="timezone-aware"):
            await database.write(_write, [dt.datetime(2026, 12, 1, 20, 15)])
