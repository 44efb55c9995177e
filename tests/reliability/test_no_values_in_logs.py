"""No log ever holds what people wrote: a canary in a prompt, an answer and a prepared request's
sensitive field never shows up in a log line, a logged traceback or the process's output, on
either database, whatever fails (a constraint, a closed connection, a lost compare-and-set, a
turn).

SQLAlchemy would print a failed statement's bound parameters in its error message and log
every statement's parameters (and, at DEBUG, every row it read); PostgreSQL's own error
details name the values of a failing row. handrail's engines hide parameters, drop the row
lines and strip those details.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import secrets
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from server_helpers import Api, command, start_api
from sqlalchemy import Connection, insert, text

from _pg import end_other_sessions
from handrail._util import new_id, utc_now
from handrail.errors import HandrailError
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.store import HistoryChange, LocalBlobStore, Store
from handrail.store.db import Database
from handrail.store.prepared import Prepared
from handrail.store.tables import history_rows, requests

#: Made at run time, so no source line a traceback quotes can hold it.
CANARY = "canary-" + secrets.token_hex(8)

MARKDOWN = {"prompt": "Write it.", "initial": "Draft"}


class Captured:
    """Everything logged (at DEBUG for ``sqlalchemy`` and ``handrail``) and printed."""

    def __init__(self, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]):
        self.caplog = caplog
        self.capfd = capfd
        self.printed: list[str] = []

    def text(self) -> str:
        out, err = self.capfd.readouterr()
        self.printed += [out, err]
        lines = [*self.printed, self.caplog.text]
        for record in self.caplog.records:
            lines.append(record.getMessage())
            if record.exc_info and record.exc_info[1] is not None:
                lines.extend(traceback.format_exception(record.exc_info[1]))
        return "\n".join(lines)

    def assert_clean(self, *errors: BaseException) -> None:
        """No canary in the logs, the output, or the tracebacks of `errors` (what a server
        logs when they reach it)."""
        logged = self.text()
        for error in errors:
            logged += "".join(traceback.format_exception(error))
        assert self.caplog.records or errors, "nothing was logged: is logging captured?"
        assert CANARY not in logged, _around(logged)


def _around(logged: str) -> str:
    at = logged.index(CANARY)
    return logged[max(0, at - 600) : at + 200]


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> Captured:
    caplog.set_level(logging.DEBUG, logger="sqlalchemy")
    caplog.set_level(logging.DEBUG, logger="handrail")
    return Captured(caplog, capfd)


@pytest.fixture(params=[False, True], ids=["plain", "echo"])
async def store(
    captured: Captured, database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """A store on each backend, without and with ``echo``.

    ``echo`` adds a handler on the test's captured stdout to SQLAlchemy's loggers; it is taken
    off afterwards, so that a later test does not log to a closed stream."""
    before = {name: list(logging.getLogger(name).handlers) for name in _sqlalchemy_loggers()}
    db = Database(database_url, echo=request.param)
    await db.migrate()
    s = Store(db, LocalBlobStore(tmp_path / "blobs"))
    yield s
    await s.close()
    for name in _sqlalchemy_loggers():
        logger = logging.getLogger(name)
        for handler in logger.handlers[:]:
            if handler not in before.get(name, []):
                logger.removeHandler(handler)


def _sqlalchemy_loggers() -> list[str]:
    """The names of the SQLAlchemy loggers made so far."""
    known = logging.Logger.manager.loggerDict
    return [name for name in known if name == "sqlalchemy" or name.startswith("sqlalchemy.")]


async def _failure(awaitable: Any) -> BaseException:
    try:
        await awaitable
    except Exception as exc:
        return exc
    raise AssertionError("it did not fail")


def _request_values(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": new_id(),
        "history_id": new_id(),
        "owner_id": "alice",
        "request_type": "prompt",
        "prompt": f"Book it, {CANARY}",
        "response": f"Booked, {CANARY}",
        "error": None,
        "metadata": {"note": CANARY},
        "model": "scripted",
        "created": utc_now(),
        "duration_ms": 1,
    }
    values.update(changes)
    return values


_INSERT_REQUEST = Prepared(insert(requests))
_INSERT_ROW = Prepared(insert(history_rows))


def _insert_request(connection: Connection, values: dict[str, Any]) -> None:
    connection.execute(insert(requests), values)


# --- constraint violations --------------------------------------------------------------------


async def test_a_constraint_violation(store: Store, captured: Captured) -> None:
    errors = [
        # NOT NULL: PostgreSQL's detail would list the failing row's values.
        await _failure(store.db.write(_INSERT_REQUEST.run, _request_values(response=None))),
        await _failure(store.db.write(_insert_request, _request_values(response=None))),
    ]
    history = await store.histories.create("alice", agent="helper", title="Plans")
    row = {
        "history_id": history.id,
        "seq": 0,
        "type": "user",
        "tool_call_id": None,
        "ask_status": None,
        "data": {"type": "user", "text": CANARY},
        "text_key": None,
        "created": utc_now(),
    }
    await store.db.write(_INSERT_ROW.run, row)
    errors.append(await _failure(store.db.write(_INSERT_ROW.run, row)))  # the primary key
    # A prepared request whose sensitive field holds the canary, stored twice under one id.
    with mock.patch("handrail.store.confirmations.new_id", return_value="c" * 24):
        await _confirmation(store, history.id)
        errors.append(await _failure(_confirmation(store, history.id)))
    captured.assert_clean(*errors)


async def _confirmation(store: Store, history_id: str) -> Any:
    return await store.confirmations.create(
        history_id=history_id,
        user_id="alice",
        connection_id="booking",
        tool_name="book_slot",
        tool_call_id="call_1",
        request={"method": "POST", "path": "/bookings", "body": {"slot_token": CANARY}},
        digest="d" * 64,
        preview={"Notes": CANARY},
        expires_at=dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5),
    )


# --- a closed database ------------------------------------------------------------------------


def _close_own_connection(connection: Connection) -> None:
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.close()  # type: ignore[attr-defined]
    connection.execute(insert(requests), _request_values())


async def test_a_closed_database(store: Store, captured: Captured) -> None:
    errors: list[BaseException] = []
    if store.db.backend == "sqlite":
        errors.append(await _failure(store.db.write(_close_own_connection)))
    else:
        # Another process ends every session of the database (a restart, a failover).
        async with Database(store.db.url) as other:
            await store.db.read(lambda c: c.execute(text("SELECT 1")).scalar())
            await other.write(end_other_sessions)
        errors.append(await _failure(store.db.write(_insert_request, _request_values())))
    await store.db.close()
    if store.db.backend == "sqlite":  # PostgreSQL's engine would open a new connection
        errors.append(await _failure(store.db.write(_INSERT_REQUEST.run, _request_values())))
    captured.assert_clean(*errors)


# --- a lost compare-and-set -------------------------------------------------------------------


async def test_a_conflicting_compare_and_set(store: Store, captured: Captured) -> None:
    history = await store.histories.create("alice", agent="helper")
    change = HistoryChange(append=[{"type": "user", "text": CANARY}], title=CANARY)
    await store.histories.apply(history.id, change, expected_version=history.version)
    error = await _failure(
        store.histories.apply(history.id, change, expected_version=history.version)
    )
    assert isinstance(error, HandrailError)
    captured.assert_clean(error)


async def test_racing_answers_through_the_server(
    captured: Captured, database_url: str, tmp_path: Path
) -> None:
    async with start_api(database_url, tmp_path, raise_app_exceptions=False) as api:
        stream = await api.say(command("ask_markdown", MARKDOWN) + "\n")
        history_id, call_id = stream.history_id, stream.ask["toolCallId"]
        answer = {"action": "accept", "content": {"markdown": CANARY, "changed": True}}
        first, second = await asyncio.gather(
            api.answer(history_id, call_id, answer), api.answer(history_id, call_id, answer)
        )
        assert sorted([first.status, second.status]) == [200, 409]
        await api.history(history_id)
    captured.assert_clean()


# --- failed turns -----------------------------------------------------------------------------


async def test_failed_turns_through_the_server(
    captured: Captured, database_url: str, tmp_path: Path
) -> None:
    async with start_api(database_url, tmp_path, raise_app_exceptions=False) as api:
        failed = await api.say(f"call nothing {json.dumps({'q': CANARY})}\nfail")
        assert any("error" in event for event in failed.events)
        stream = await api.say(command("ask_markdown", MARKDOWN))
        answer = {"action": "accept", "content": {"markdown": CANARY, "changed": True}}
        await api.answer(stream.history_id, stream.ask["toolCallId"], answer)
        await api.history(failed.history_id)
        await _refused_turn(api)
    captured.assert_clean()


async def _refused_turn(api: Api) -> None:
    """A prompt the database cannot store (when nothing refuses it first)."""
    body = json.dumps({"prompt": f"{CANARY} \x00 \ud800"}).encode()  # escaped: valid JSON
    headers = {"Content-Type": "application/json"}
    response = await api.request("POST", "/prompt", content=body, headers=headers)
    assert response.status_code in (200, 400, 500)


async def test_a_turn_the_database_refuses(store: Store, captured: Captured) -> None:
    """In process, a prompt the database cannot store fails the turn: the log says so, without
    the prompt."""
    runtime = Runtime(store=store, agents=Agent("helper"), model=ScriptedModel())
    try:
        turn = await runtime.start_prompt(Principal(user_id="alice"), f"{CANARY} \x00 \ud800")
    except HandrailError as exc:  # refused before it reached the database
        captured.assert_clean(exc)
        return
    events = [event async for event in turn.stream()]
    assert any("error" in event for event in events) or store.db.backend == "sqlite"
    await runtime.aclose()
    captured.assert_clean()
