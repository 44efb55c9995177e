"""A SQLite store whose connections report each statement they run, to tell which writes
waited for the disk (``synchronous=FULL``) and which did not (``NORMAL``, see
`handrail.store.db.unsynced`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from handrail.store import Store


@dataclass
class Traced:
    """A store on a SQLite file whose connections report each statement they run."""

    store: Store
    path: Path
    #: (connection, statement) of each statement run, in order; an empty statement marks a
    #: connection opened (an id may be a closed one's again).
    traced: list[tuple[int, str]]

    @property
    def statements(self) -> list[str]:
        """Every statement run, in order, on any connection."""
        return [statement for _, statement in self.traced if statement]

    def writes(self, history_id: str) -> list[tuple[str, str]]:
        """(level, first statement) of each write transaction whose first statement names
        `history_id`, in order; the level is that of the connection it ran on (each starts at
        the store's, ``FULL``)."""
        levels: dict[int, str] = {}
        begun: set[int] = set()
        out: list[tuple[str, str]] = []
        for connection, statement in self.traced:
            upper = statement.upper()
            if not statement:  # a new connection, at the store's level
                levels.pop(connection, None)
                begun.discard(connection)
            elif upper.startswith("PRAGMA SYNCHRONOUS="):
                levels[connection] = upper.split("=", 1)[1]
            elif upper.startswith("BEGIN IMMEDIATE"):
                begun.add(connection)
            elif connection in begun:
                begun.discard(connection)
                if history_id in statement:
                    level = levels.get(connection, "FULL")
                    out.append((level, statement.split(" SET ", 1)[0].split(" (", 1)[0]))
        return out


async def open_traced(path: Path) -> Traced:
    traced: list[tuple[int, str]] = []

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        key = id(dbapi_connection)
        traced.append((key, ""))
        dbapi_connection.set_trace_callback(lambda statement: traced.append((key, statement)))

    event.listen(Engine, "connect", on_connect)
    try:
        store = await Store.open(f"sqlite:///{path}", blob_dir=path.parent / "blobs")
    finally:
        event.remove(Engine, "connect", on_connect)
    # The connections the store opens later (the event loop's own, see `Database._write_here`).
    event.listen(store.db.engine, "connect", on_connect)
    assert store.db.synchronous == "FULL"
    return Traced(store, path, traced)
