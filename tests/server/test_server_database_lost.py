"""PostgreSQL restarts (or fails over, or ends the server's sessions) under a running server:
a request that meets a lost connection gets 503 ``Database unavailable`` with
``Retry-After``; the next ones work on new connections, and an ask that was pending is still
there and takes its answer."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import (
    TOKENS,
    command,
    config_for,
    sqlite_url,
    start_api,
    start_uvicorn,
    stop_uvicorn,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SATimeoutError
from sqlalchemy.ext.asyncio import create_async_engine

from _pg import PostgresCluster, end_other_sessions, start_cluster
from examples import PLAN
from handrail.runtime.agent import Agent
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn_end import CONNECTION_LOST_TURN, DATABASE_UNREACHABLE_TURN
from handrail.server import create_app
from handrail.store import Database, Store, connection_lost, storage_trouble
from handrail.store import db as store_db


def assert_database_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "1"
    body = response.json()
    assert body["title"] == "Database unavailable"
    assert body["code"] == "database-unavailable"
    assert "again" in body["detail"]
    assert "Traceback" not in response.text


def said_by_events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """What the event bus logged at INFO and above: its level and words."""
    return [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "handrail.events" and r.levelno >= logging.INFO
    ]


async def paused_conversation(c: httpx.AsyncClient) -> tuple[str, str]:
    """A new conversation of the client's user, paused on the plan choice: its id and the
    ask's tool call id."""
    history_id = (await c.post("/api/histories", json={})).json()["data"]["id"]
    prompt = {"prompt": command("ask_choice", PLAN)}
    paused = (await c.post(f"/api/histories/{history_id}/turn", json=prompt)).json()
    return history_id, paused["data"]["pendingAsk"]["toolCallId"]


async def test_a_lost_database_connection_is_503_then_the_server_goes_on(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = postgres_cluster.new_database_url()
    store = await Store.open(url, blob_dir=tmp_path / "blobs")
    config = config_for(url, tmp_path)
    runtime = Runtime(store=store, agents=config.resolved_agents(), model=ScriptedModel())
    running = await start_uvicorn(create_app(config, runtime=runtime, store=store))
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    try:
        async with httpx.AsyncClient(base_url=running.base, headers=headers, timeout=30) as c:
            history_id, call_id = await paused_conversation(c)

            async with Database(url) as other:
                await other.write(end_other_sessions)

            # Requests at once: those that meet a dead connection get a 503 naming the way
            # forward (which of them do depends on when the loop saw each connection close).
            read = f"/api/histories/{history_id}"
            first = await asyncio.gather(*(c.get(read) for _ in range(6)))
            assert {r.status_code for r in first} <= {200, 503}, [r.text for r in first]
            for lost in (r for r in first if r.status_code == 503):
                assert_database_unavailable(lost)
            for _ in range(3):
                again = await asyncio.gather(*(c.get(read) for _ in range(6)))
                assert [r.status_code for r in again] == [200] * 6
            ask = again[0].json()["data"]["pendingAsk"]
            assert ask["toolCallId"] == call_id
            answer = {
                "askResponse": {
                    "toolCallId": call_id,
                    "action": "accept",
                    "content": {"selected": ["team"]},
                }
            }
            replied = await c.post(f"/api/histories/{history_id}/turn", json=answer)
            assert replied.status_code == 200, replied.text
            assert "ask_choice returned" in replied.json()["data"]["text"]
    finally:
        await stop_uvicorn(running)
        await runtime.aclose()
        await store.close()


async def test_a_store_error_of_a_lost_connection_is_a_503(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    """The error the store raised when its connection was lost, through the app's edge."""
    url = postgres_cluster.new_database_url()
    store = await Store.open(url, blob_dir=tmp_path / "blobs")
    try:
        history = await store.histories.create("alice", agent="helper")
        async with Database(url) as other:
            await other.write(end_other_sessions)
        with pytest.raises(DBAPIError) as caught:
            await store.histories.get(history.id)
        assert connection_lost(caught.value)
        assert not connection_lost(RuntimeError("something else"))
    finally:
        await store.close()

    async with start_api(sqlite_url(tmp_path), tmp_path, raise_app_exceptions=False) as api:

        async def lost(*args: Any, **kwargs: Any) -> Any:
            raise caught.value

        api.app.state.store.histories.create = lost
        assert_database_unavailable(await api.post("/histories", {}))


async def test_a_database_that_is_down_is_503_until_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL stopped (a restart's first half, or a crash) under a running server: every
    request gets 503 ``Database unavailable``, logged in one line, while new connections are
    refused; a turn that meets it stops saying why; once it is back, the pending ask takes its
    answer."""
    caplog.set_level(logging.INFO, logger="handrail")
    cluster = start_cluster()
    try:
        url = cluster.new_database_url()
        agent = Agent("ops", instructions="Run jobs.")

        @agent.tool(read_only=True)
        def restart_database() -> str:
            """Stop the database, as a restart would."""
            cluster.stop_server()
            return "stopped"

        store = await Store.open(url, blob_dir=tmp_path / "blobs")
        await store.permissions.set("alice", "local:ops", "read-only")
        config = config_for(url, tmp_path)
        runtime = Runtime(store=store, agents=[agent], model=ScriptedModel())
        running = await start_uvicorn(create_app(config, runtime=runtime, store=store))
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        try:
            async with httpx.AsyncClient(base_url=running.base, headers=headers, timeout=30) as c:
                history_id, call_id = await paused_conversation(c)
                other_id = (await c.post("/api/histories", json={})).json()["data"]["id"]

                # A turn whose tool stops the database cannot save what it did.
                caplog.clear()
                stop = {"prompt": "call restart_database {}"}
                stopped = await c.post(f"/api/histories/{other_id}/turn", json=stop)
                assert stopped.status_code == 200, stopped.text
                assert "error" in stopped.json()["data"], stopped.text
                assert stopped.json()["data"]["error"] in {
                    DATABASE_UNREACHABLE_TURN,
                    CONNECTION_LOST_TURN,
                }
                said = [r for r in caplog.records if r.name == "handrail.runtime"]
                turn_said = [r for r in said if r.getMessage().startswith("turn on history")]
                assert len(turn_said) == 1, [r.getMessage() for r in said]
                assert turn_said[0].exc_info is None
                assert "stopped: the database" in turn_said[0].getMessage()
                # A background task that meets it says so once, not at every try.
                others = [r.getMessage() for r in said if r not in turn_said]
                assert len(others) == len(set(others)), others

                # Every request meanwhile: 503, the way forward, no traceback in the log.
                earlier = said_by_events(caplog)
                caplog.clear()
                answer = {
                    "askResponse": {
                        "toolCallId": call_id,
                        "action": "accept",
                        "content": {"selected": ["team"]},
                    }
                }
                for response in (
                    await c.get(f"/api/histories/{history_id}"),
                    await c.post("/api/histories", json={}),
                    await c.post(f"/api/histories/{history_id}/turn", json=answer),
                    await c.get("/api/histories"),
                ):
                    assert_database_unavailable(response)
                warned = [r for r in caplog.records if "(request " in r.getMessage()]
                assert len(warned) == 4, [r.getMessage() for r in warned]
                assert all(r.exc_info is None for r in warned)
                assert any("the database could not be reached" in r.getMessage() for r in warned)

                cluster.start_server()
                replied = await c.post(f"/api/histories/{history_id}/turn", json=answer)
                assert replied.status_code == 200, replied.text
                assert "ask_choice returned" in replied.json()["data"]["text"]

                # The events' listening connection came back too, said once each way (its
                # tries in between, every 0.2 s growing to 5 s, at debug).
                async with asyncio.timeout(15):
                    while ("INFO", "listening for events again") not in said_by_events(caplog):
                        await asyncio.sleep(0.1)
                heard = earlier + said_by_events(caplog)
                listening = [m for _, m in heard if "listening" in m]
                assert len(listening) == 2, heard
                assert listening[0].startswith("listening for events failed ("), heard
                assert listening[1] == "listening for events again"
                sending = [m for _, m in heard if "other processes" in m]
                assert len(sending) <= 2, heard  # failed once, then back (if it failed)
                if sending:
                    assert sending[0].startswith("could not send"), heard
                    assert sending[1:] in ([], ["events reach other processes again"]), heard
        finally:
            await stop_uvicorn(running)
            await runtime.aclose()
            await store.close()
    finally:
        cluster.stop()


async def test_a_pool_with_no_connection_to_give_is_unreachable(
    postgres_cluster: PostgresCluster,
) -> None:
    """SQLAlchemy's pool that waited its time for a connection (every one busy) raises its
    TimeoutError: the work never reached the database, as when PostgreSQL is down."""
    url = postgres_cluster.new_database_url()
    engine = create_async_engine(url, pool_size=1, max_overflow=0, pool_timeout=0.2)
    try:
        async with engine.connect():
            with pytest.raises(SATimeoutError) as raised:
                await engine.connect()
        trouble = storage_trouble(raised.value)
        assert trouble is not None
        assert trouble[0] == "unreachable"
        assert "QueuePool limit" in trouble[1]
    finally:
        await engine.dispose()


async def test_a_table_another_session_locks_is_503_then_the_server_goes_on(
    postgres_cluster: PostgresCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another program holds a lock on a table past the wait the server gives a lock (its
    ``lock_timeout``; here 1 s instead of 30): 503 ``Database unavailable`` saying the
    database is busy, one log line, nothing saved; the same request works once it is let go."""
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_S", 1)
    url = postgres_cluster.new_database_url()
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    async with start_api(url, tmp_path) as api:
        c = api.client
        assert (await c.post("/api/histories", json={}, headers=headers)).status_code == 201
        locker = await postgres_cluster.connect(url)
        try:
            held = locker.transaction()
            await held.start()
            await locker.execute("LOCK TABLE histories IN ACCESS EXCLUSIVE MODE")
            caplog.clear()
            busy = await c.post("/api/histories", json={}, headers=headers)
            assert busy.status_code == 503, busy.text
            assert busy.headers["Retry-After"] == "5"
            assert busy.json()["detail"].startswith("The server's database is busy")
            [said] = [r for r in caplog.records if "(request " in r.getMessage()]
            assert said.exc_info is None
            assert "the database was busy" in said.getMessage()
            await held.rollback()
        finally:
            await locker.close()
        listed = (await c.get("/api/histories", headers=headers)).json()["data"]
        assert len(listed) == 1  # nothing of the busy request was saved
        assert (await c.post("/api/histories", json={}, headers=headers)).status_code == 201
