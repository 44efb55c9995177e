"""What an MCP tool's listing and results carry through a turn, with the test server of
``tests/connections`` (the official SDK's server API, over stdio):

- an image in a tool result reaches the model with the result, as the adapters carry files
  (an Anthropic ``image`` block in the ``tool_result``, an OpenAI ``image_url`` part), while the
  stored result keeps the image's content block (type, MIME type, size) and never its bytes;
- a tool's ``title`` (or its annotations' ``title``) is its name in the person's words: the
  permission and approval asks speak of it, and the tools route lists it."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Api, Stream, sqlite_url, start_api

from handrail.connections import new_secret_key
from handrail.runtime.agent import Agent
from handrail.runtime.messages import ToolResultMessage
from handrail.runtime.models.anthropic import anthropic_messages
from handrail.runtime.models.base import ModelRequest
from handrail.runtime.models.openai import openai_messages
from handrail.runtime.models.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = ROOT / "tests" / "connections" / "mcp_test_server.py"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
PNG_BASE64 = base64.b64encode(PNG).decode()
APPROVE = {"action": "accept", "content": {"confirmed": True}}


class RecordingModel(ScriptedModel):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


@pytest.fixture
def model() -> RecordingModel:
    return RecordingModel()


@pytest.fixture
async def mapi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: RecordingModel
) -> AsyncIterator[Api]:
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", new_secret_key())
    agents = [Agent("helper", instructions="You help people.")]
    async with start_api(sqlite_url(tmp_path), tmp_path, agents=agents, model=model) as api:
        yield api


async def add_test_server(api: Api, *, trusted: bool) -> dict[str, Any]:
    body = {
        "app": "custom",
        "name": "Test",
        "kind": "mcp-stdio",
        "mcp": {"command": sys.executable, "args": [str(TEST_SERVER)]},
        "trusted": trusted,
    }
    response = await api.post("/connections", body, user="root")
    assert response.status_code == 201, response.text
    added = dict(response.json()["data"])
    assert added["status"]["state"] == "connected", added["status"]
    return added


async def set_level(api: Api, connection_id: str, level: str) -> None:
    response = await api.request("PUT", f"/permissions/{connection_id}", json={"level": level})
    assert response.status_code == 200, response.text


def call(name: str) -> str:
    return f"call {name} {{}}"


def results(stream: Stream) -> list[Any]:
    return [e["toolResult"]["result"] for e in stream.events if "toolResult" in e]


STORED_PICTURE = {
    "content": [
        {"type": "text", "text": "A picture:"},
        {
            "type": "image",
            "mimeType": "image/png",
            "size": 32,
            "note": "image 1 of this result, shown to you with it; its bytes are not stored",
        },
    ]
}


async def test_an_image_reaches_the_model_and_the_stored_result_keeps_its_block(
    mapi: Api, model: RecordingModel
) -> None:
    test = await add_test_server(mapi, trusted=True)
    await set_level(mapi, test["id"], "read-only")
    ran = await mapi.say(call("test_picture"))
    assert results(ran) == [STORED_PICTURE]

    # The model's next request has the result with the image itself.
    message = model.requests[-1].messages[-1]
    assert isinstance(message, ToolResultMessage)
    assert message.content == STORED_PICTURE
    [part] = message.parts
    assert (part.filename, part.mime_type, part.data) == ("image-1.png", "image/png", PNG)
    anthropic_user = anthropic_messages(model.requests[-1].messages)[-1]
    [block] = anthropic_user["content"]
    assert block["type"] == "tool_result"
    assert {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64},
    } in block["content"]
    chat = openai_messages("", model.requests[-1].messages)
    assert chat[-1]["role"] == "user"
    assert {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_BASE64}"},
    } in chat[-1]["content"]

    # The stored result keeps the block, not the bytes: the next turn's model reads the
    # block only.
    rows = await mapi.rows(ran.history_id)
    assert [r["result"] for r in rows if "result" in r] == [STORED_PICTURE]
    assert PNG_BASE64 not in json.dumps(rows)
    await mapi.say("thanks", history_id=ran.history_id)
    later = [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert later[-1].content == STORED_PICTURE
    assert later[-1].parts == ()


async def test_a_tools_title_is_what_the_asks_speak_of(mapi: Api) -> None:
    test = await add_test_server(mapi, trusted=True)
    listed = (await mapi.get(f"/connections/{test['id']}/tools")).json()["data"]
    titles = {t["name"]: t["title"] for t in listed}
    assert titles["wipe"] == "Wipe the test data"  # the tool's title
    assert titles["picture"] == "Show a picture"  # its annotations' title
    assert titles["echo"] is None

    # The permission ask on first use names the tool by its title.
    asked = await mapi.say(call("test_picture"))
    ask = asked.ask
    assert ask["origin"] == "permission"
    assert "Test wants to use “Show a picture”." in ask["input"]["prompt"]
    # The approval of a destructive tool does too, never the tool's description.
    await set_level(mapi, test["id"], "non-consequential")
    paused = await mapi.say(call("test_wipe"))
    approval = paused.ask
    assert approval["origin"] == "approval"
    assert approval["input"]["prompt"] == "Allow Wipe the test data?"
    assert "cannot be undone" not in json.dumps(approval)
    done = await mapi.answer(paused.history_id, approval["toolCallId"], APPROVE)
    assert results(done) == ["wiped"]
