"""``GET /api/events``: each user's stream over a real loopback server (uvicorn with
handrail's protocol): what a turn publishes, whose events a caller hears, replay by
``Last-Event-ID``, ``reload``, heartbeats, and streams that end cleanly at shutdown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from event_stream import open_events, serving
from server_helpers import CONFIRM, TOKENS, Api, command, sqlite_url, start_api


def _auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[user]}"}


async def test_a_turn_and_its_answer_reach_the_owner_only(api: Api) -> None:
    async with (
        serving(api.app) as (base, _server),
        httpx.AsyncClient(timeout=10) as client,
        open_events(client, base + "/api/events", _auth("alice")) as alice,
        open_events(client, base + "/api/events", _auth("bob")) as bob,
    ):
        stream = await api.say(command("ask_confirm", CONFIRM))
        history_id = stream.history_id
        created = await alice.until("history.created")
        assert created["historyId"] == history_id
        assert created["userId"] == "alice"
        assert await alice.kinds(2) == ["turn.started", "turn.progress"]
        ask = await alice.until("ask.created")
        assert ask["data"]["ask"]["toolCallId"] == stream.ask["toolCallId"]
        assert ask["data"]["ask"]["input"]["title"] == CONFIRM["title"]
        assert "promptIndex" not in ask["data"]["ask"]
        assert "responseMessages" not in ask["data"]["ask"]
        finished = await alice.until("turn.finished")
        assert finished["data"]["pendingToolCallId"] == stream.ask["toolCallId"]

        answered = await api.answer(
            history_id,
            stream.ask["toolCallId"],
            {"action": "accept", "content": {"confirmed": True}},
        )
        assert answered.status == 200
        event = await alice.until("ask.answered")
        assert event["data"] == {
            "toolCallId": stream.ask["toolCallId"],
            "action": "accept",
            "kind": "confirm",
        }
        await alice.until("turn.finished")
        await bob.nothing()

        renamed = await api.request("PATCH", f"/histories/{history_id}", json={"title": "Cleanup"})
        assert renamed.status_code == 200
        assert (await alice.until("history.renamed"))["data"] == {"title": "Cleanup"}
        deleted = await api.request("DELETE", f"/histories/{history_id}")
        assert deleted.status_code == 200
        assert (await alice.until("history.deleted"))["historyId"] == history_id
        await bob.nothing(0.1)


async def test_a_new_message_cancelling_the_ask_is_an_event(api: Api) -> None:
    async with serving(api.app) as (base, _server), httpx.AsyncClient(timeout=10) as client:
        stream = await api.say(command("ask_confirm", CONFIRM))
        async with open_events(client, base + "/api/events", _auth("alice")) as alice:
            await api.say("never mind", stream.history_id)
            cancelled = await alice.until("ask.cancelled")
            assert cancelled["data"]["reason"] == "user_sent_message"
            assert cancelled["data"]["toolCallId"] == stream.ask["toolCallId"]


async def test_a_failed_turn_is_an_event_in_the_persons_words(api: Api) -> None:
    async with (
        serving(api.app) as (base, _server),
        httpx.AsyncClient(timeout=10) as client,
        open_events(client, base + "/api/events", _auth("alice")) as alice,
    ):
        stream = await api.say("fail")
        started = await alice.until("turn.started")
        assert started["historyId"] == stream.history_id
        failed = await alice.until("turn.failed")
        assert failed["historyId"] == stream.history_id
        assert failed["data"] == {
            "turnId": started["data"]["turnId"],
            "error": "The model call failed. Try again in a moment.",
        }
        # A failed turn does not also say it finished.
        await alice.nothing(0.2)


async def test_last_event_id_replays_what_was_missed_or_says_reload(api: Api) -> None:
    async with serving(api.app) as (base, _server), httpx.AsyncClient(timeout=10) as client:
        async with open_events(client, base + "/api/events", _auth("alice")) as alice:
            created = await api.post("/histories", {})
            assert created.status_code == 201
            block = await alice.block()
            assert block.data is not None
            assert block.data["kind"] == "history.created"
            assert block.id == block.data["id"]
            last = block.id
        # Disconnected: two changes happen meanwhile.
        history_id = created.json()["data"]["id"]
        for title in ("One", "Two"):
            response = await api.request("PATCH", f"/histories/{history_id}", json={"title": title})
            assert response.status_code == 200
        headers = {**_auth("alice"), "Last-Event-ID": last}
        async with open_events(client, base + "/api/events", headers) as again:
            titles = [(await again.event())["data"]["title"] for _ in range(2)]
            assert titles == ["One", "Two"]
            await again.nothing(0.1)
        async with open_events(
            client, base + f"/api/events?lastEventId={last}", _auth("alice")
        ) as by_query:
            assert (await by_query.event())["data"]["title"] == "One"
        headers = {**_auth("alice"), "Last-Event-ID": "f" * 24}
        async with open_events(client, base + "/api/events", headers) as unknown:
            block = await unknown.block()
            assert block.data is not None
            assert block.data["kind"] == "reload"
            assert block.id is None  # the client keeps its last real id


async def test_only_admins_hear_another_users_events(api: Api) -> None:
    async with serving(api.app) as (base, _server), httpx.AsyncClient(timeout=10) as client:
        refused = await client.get(base + "/api/events?userId=alice", headers=_auth("bob"))
        assert refused.status_code == 403
        assert refused.headers["content-type"] == "application/problem+json"
        assert "only admins" in refused.json()["detail"]
        unsigned = await client.get(base + "/api/events")
        assert unsigned.status_code == 401
        too_long = await client.get(
            base + "/api/events?lastEventId=" + "a" * 65, headers=_auth("bob")
        )
        assert too_long.status_code == 400
        async with open_events(client, base + "/api/events?userId=bob", _auth("bob")) as own:
            await own.nothing(0.05)
        async with open_events(client, base + "/api/events?userId=alice", _auth("root")) as root:
            await api.post("/histories", {})
            heard = await root.until("history.created")
            assert heard["userId"] == "alice"


async def test_heartbeats_and_a_clean_end_at_shutdown(tmp_path: Path) -> None:
    async with start_api(sqlite_url(tmp_path), tmp_path) as api:
        api.app.state.event_heartbeat_s = 0.05
        before = api.store.events.subscribers  # the runtime's own (Stop requests)
        async with (
            serving(api.app) as (base, server),
            httpx.AsyncClient(timeout=10) as client,
            open_events(client, base + "/api/events", _auth("alice")) as alice,
        ):
            block = await alice.block()
            assert block.comments == ["heartbeat"]
            assert api.store.events.subscribers == before + 1
            # The server stops: the stream ends as a finished response, at once.
            server.should_exit = True
            loop = asyncio.get_running_loop()
            start = loop.time()
            ended = False
            try:
                while True:
                    await alice.block(timeout=5)
            except EOFError:
                ended = True
            assert ended
            assert loop.time() - start < 5
        assert api.store.events.subscribers == before


async def test_a_client_that_leaves_ends_its_subscription(api: Api) -> None:
    before = api.store.events.subscribers
    async with serving(api.app) as (base, _server), httpx.AsyncClient(timeout=10) as client:
        async with open_events(client, base + "/api/events", _auth("alice")):
            assert api.store.events.subscribers == before + 1
        for _ in range(100):
            if api.store.events.subscribers == before:
                break
            await asyncio.sleep(0.02)
        assert api.store.events.subscribers == before
