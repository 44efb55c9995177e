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
    statements: list[str]

    def writes(self, history_id: str) -> list[tuple[str, str]]:
        """(level, first statement) of each write transaction whose first statement names
        `history_id`, in order."""
        level, out, begun = "FULL", [], False
        for statement in self.statements:
            upper = statement.upper()
            if upper.startswith("PRAGMA SYNCHRONOUS="):
                level = upper.split("=", 1)[1]
            elif upper.startswith("BEGIN IMMEDIATE"):
                begun = True
            elif begun:
                begun = False
                if history_id in statement:
                    out.append((level, statement.split(" SET ", 1)[0].split(" (", 1)[0]))
        return out


async def open_traced(path: Path) -> Traced:
    statements: list[str] = []

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(statements.append)

    event.listen(Engine, "connect", on_connect)
    try:
        store = await Store.open(f"sqlite:///{path}", blob_dir=path.parent / "blobs")
    finally:
        event.remove(Engine, "connect", on_connect)
    assert store.db.synchronous == "FULL"
    return Traced(store, path, statements)
