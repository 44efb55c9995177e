"""The example agents of ``examples/adapters/`` over the HTTP API: the http agent
(``http_agent.py``, on loopback) and the process agent (``process_agent.py``, as the example's
``handrail.yaml`` runs it). A reply streams like a model's, a tool call waits on the same
permission ask (or the ask it calls), a failed call is reported as failed, and the connection
instructions an agent gets are the turn's snapshot."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from server_helpers import sqlite_url, start_api

from handrail.runtime.tools import ToolSet, tool
from handrail.server import ServerConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "adapters"
EXAMPLE = EXAMPLES / "http_agent.py"
PERMIT = {"action": "accept", "content": {"selected": ["read-only"]}}


@pytest.fixture
def example_url() -> Iterator[str]:
    spec = importlib.util.spec_from_file_location("http_agent_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.serve(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/step"
    finally:
        server.shutdown()
        server.server_close()


@tool(read_only=True)
def handbook_page(number: int) -> str:
    """A page of the release handbook."""
    return f"page {number}: roll back with care"


async def test_the_example_http_agent_over_the_api(tmp_path: Path, example_url: str) -> None:
    config = ServerConfig.from_mapping(
        {
            "users": [{"id": "alice", "token": "alice-token-0123456789"}],
            "agents": [
                {
                    "name": "remote",
                    "instructions": "You help with releases.",
                    "adapter": {"type": "http", "url": example_url, "timeout_s": 30},
                }
            ],
        },
        env={},
    )
    [agent] = config.agents
    agent.add_tool_set(
        ToolSet("handbook", "Handbook", tools=[handbook_page], instructions="Cite the page.")
    )
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
        said = await api.say("hello")
        history_id = said.history_id
        view = (await api.get(f"/histories/{history_id}/instructions")).json()["data"]
        snapshot = view["snapshot"]
        assert snapshot is not None
        assert "Cite the page." in snapshot["text"]
        expected = len("You help with releases.\n\n" + snapshot["text"])
        assert said.text == f"You said: hello (my prompt has {expected} characters)"
        # Its tool call waits on the permission ask like a model's, then runs.
        paused = await api.say(
            f"call handbook_page {json.dumps({'number': 7})}", history_id=history_id
        )
        ask: dict[str, Any] = paused.ask
        assert ask["origin"] == "permission"
        done = await api.answer(history_id, ask["toolCallId"], PERMIT)
        assert done.status == 200, done.problem
        assert done.text == 'handbook_page returned: "page 7: roll back with care"'
        # A call that fails comes back as an error result, which the example says failed.
        failed = await api.say("call handbook_burn {}", history_id=history_id)
        assert failed.text.startswith('handbook_burn failed: "There is no tool named'), failed.text
        info = (await api.get("/info")).json()["data"]
        assert info["agents"][0]["model"] == f"http:{example_url}"


async def test_the_example_process_agent_as_its_configuration_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = yaml.safe_load((EXAMPLES / "handrail.yaml").read_text(encoding="utf-8"))
    [outside] = [agent for agent in example["agents"] if agent["adapter"]["type"] == "process"]
    # Its command is `python` run from the project's folder; this Python, so that the test
    # does not depend on what `python` is on the machine's PATH.
    outside["adapter"]["command"] = sys.executable
    monkeypatch.chdir(EXAMPLES.parents[1])
    config = ServerConfig.from_mapping({"users": example["users"], "agents": [outside]}, env={})
    [agent] = config.agents
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=[agent]) as api:
        said = await api.say("hello")
        assert said.status == 200, said.problem
        expected = len(outside["instructions"])  # no connection, so no connection instructions
        assert said.text == f"You said: hello (my prompt has {expected} characters)"
        choice = {
            "title": "Roll back?",
            "prompt": "Which release?",
            "select": "one",
            "options": [{"id": "v1", "label": "v1"}, {"id": "v2", "label": "v2"}],
        }
        paused = await api.say(f"call ask_choice {json.dumps(choice)}", history_id=said.history_id)
        assert paused.ask["kind"] == "choice"
        assert paused.ask["input"]["title"] == "Roll back?"
        answer = {"action": "accept", "content": {"selected": ["v2"]}}
        done = await api.answer(said.history_id, paused.ask["toolCallId"], answer)
        assert done.status == 200, done.problem
        assert done.text == f"ask_choice returned: {json.dumps(answer)}"
        failed = await api.say("call release_burn {}", history_id=said.history_id)
        assert failed.text.startswith('release_burn failed: "There is no tool named'), failed.text
