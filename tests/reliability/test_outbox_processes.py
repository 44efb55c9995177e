"""At least once, across a crash: a process commits a change that makes an event webhooks send
(an ask created, an ask answered) and is killed (``SIGKILL``) before it publishes the event.
The event was written to the event outbox in the change's own transaction, so the next process
on the same database posts it to a real receiver, once, with the event's id; on both
backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from reach_helpers import WEBHOOK_SECRET, eventually, receiving
from server_helpers import Api, start_api
from standardwebhooks.webhooks import Webhook

from handrail.server.reach_config import webhook_configs
from handrail.store import Store

#: The process that dies: it keeps the webhook events (as a server with webhooks does), runs a
#: turn that pauses on a confirm ask, or answers it, and kills itself when the first event of
#: the kind `DIE_AT` is about to be published here, after its change was committed (on
#: PostgreSQL the other processes heard it with the commit; no process here did).
DYING = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys

    from handrail.runtime import Agent, Runtime
    from handrail.runtime.models import ScriptedModel
    from handrail.runtime.turn import Principal
    from handrail.server.reach_config import WEBHOOK_EVENTS
    from handrail.store import Store

    url, die_at, history_id, answer = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


    async def main() -> None:
        store = await Store.open(url, blob_dir=os.environ["BLOBS"])
        store.outbox.keep(WEBHOOK_EVENTS)
        publish = store.events.publish

        def die_before(event):
            if event.kind == die_at:
                print(json.dumps({"historyId": event.history_id, "eventId": event.id}), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        async def dying(event):
            die_before(event)
            await publish(event)

        store.events.publish = dying
        settle = store.events.settle

        def dying_settle(carried, *, committed):
            # A change's events are published by its write once it committed (`settle`).
            for event in carried.events if committed else ():
                die_before(event)
            settle(carried, committed=committed)

        store.events.settle = dying_settle
        runtime = Runtime(store=store, agents=Agent("helper"), model=ScriptedModel())
        alice = Principal(user_id="alice")
        if answer == "-":
            turn = await runtime.start_prompt(alice, 'ask_confirm {"prompt": "Ship it?"}')
        else:
            turn = await runtime.start_answer(alice, history_id, json.loads(answer))
        await turn.wait()
        print("published without dying", flush=True)


    asyncio.run(main())
    """
)


def die(url: str, tmp_path: Path, kind: str, history_id: str = "-", answer: str = "-") -> Any:
    """Run the dying process; what it printed before it was killed."""
    script = tmp_path / "dying.py"
    script.write_text(DYING, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env["BLOBS"] = str(tmp_path / "blobs")
    done = subprocess.run(
        [sys.executable, str(script), url, kind, history_id, answer],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == -9, (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def hooks(url: str) -> list[Any]:
    settings = {"name": "ops", "url": url, "secret_env": "OPS_SECRET", "backoff": 0.05}
    return webhook_configs([settings], {"OPS_SECRET": WEBHOOK_SECRET})


async def _settled(api: Api, count: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        found = (await api.get("/deliveries", user="root")).json()["data"]
        done = [d for d in found if d["status"] == "delivered"]
        return found if len(done) >= count else None

    return list(await eventually(check))


async def test_an_event_committed_by_a_killed_process_is_posted_by_the_next(
    database_url: str, tmp_path: Path
) -> None:
    plain = database_url.replace("+asyncpg", "", 1)
    asked = die(plain, tmp_path, "ask.created")
    store = await Store.open(plain, blob_dir=tmp_path / "blobs")
    try:
        history = await store.histories.get(asked["historyId"])
        assert history is not None
        assert history.pending_ask is not None  # the change was committed
        assert await store.outbox.count() == 1  # and its event kept with it
        pending = history.pending_ask
    finally:
        await store.close()
    # The answer, committed by another process that dies before publishing it too.
    answer = f'{{"toolCallId": "{pending.tool_call_id}", "action": "accept", '
    answer += '"content": {"confirmed": true}}'
    answered = die(plain, tmp_path, "ask.answered", asked["historyId"], answer)
    with receiving() as receiver:
        async with start_api(database_url, tmp_path, webhooks=hooks(receiver.url)) as api:
            found = await _settled(api, 2)
            assert await api.store.outbox.count() == 0
            for _ in range(3):  # nothing is left to post again
                assert await api.app.state.reach.run_outbox() == 0
                await api.app.state.reach.run_due()
    assert sorted(d["type"] for d in found) == ["ask.answered", "ask.created"]
    bodies = {
        r.headers["webhook-id"]: Webhook(WEBHOOK_SECRET).verify(r.body, r.headers)
        for r in receiver.received
    }
    assert len(receiver.received) == 2
    assert bodies[asked["eventId"]]["type"] == "ask.created"
    assert bodies[asked["eventId"]]["data"]["ask"]["toolCallId"] == pending.tool_call_id
    assert bodies[answered["eventId"]]["type"] == "ask.answered"
    assert bodies[answered["eventId"]]["data"]["action"] == "accept"
