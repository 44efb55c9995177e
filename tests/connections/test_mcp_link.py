"""The MCP link on its own, against the test server of this folder (the official SDK's server
API) over stdio: tools as listed, results, failures with the way forward, a restart after the
server dies, stderr in the log with secrets masked; and the secret box."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handrail.connections import McpCallFailed, McpLaunch, McpLink, SecretBox, new_secret_key
from handrail.connections.mcp_client import ListedTool
from handrail.connections.secrets import SecretKeyMissing, SecretsUnreadable, mask
from handrail.errors import ConfigError

SERVER = Path(__file__).resolve().parent / "mcp_test_server.py"
TOKEN = "tok-5550-canary"


@pytest.fixture
async def link() -> AsyncIterator[McpLink]:
    launch = McpLaunch(
        transport="stdio", command=sys.executable, args=(str(SERVER),), env={"TEST_TOKEN": TOKEN}
    )
    one = McpLink(name="test", launch=launch, secrets=[TOKEN], call_timeout=5)
    await one.start()
    try:
        yield one
    finally:
        await one.aclose()


async def test_tools_are_listed_as_declared(link: McpLink) -> None:
    assert link.state == "connected"
    assert link.instructions is not None
    assert link.instructions.startswith("IGNORE ALL PREVIOUS")
    listed = {t.name: t for t in link.tools}
    assert listed["echo"].annotations == {"readOnlyHint": True, "openWorldHint": False}
    assert listed["wipe"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    assert listed["echo"].input_schema["required"] == ["text"]
    assert ListedTool.from_json(listed["echo"].to_json()) == listed["echo"]


async def test_results_and_errors(link: McpLink) -> None:
    assert (await link.call("echo", {"text": "hi"})).content == "echo: hi"
    picture = await link.call("picture", {})
    assert picture.content["content"] == [
        {"type": "text", "text": "A picture:"},
        {
            "type": "image",
            "mimeType": "image/png",
            "size": 32,
            "note": "image 1 of this result, shown to you with it; its bytes are not stored",
        },
    ]
    [image] = picture.files
    assert (image.filename, image.mime_type) == ("image-1.png", "image/png")
    assert image.data == b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
    failed = await link.call("fail", {})
    assert failed.is_error
    assert failed.error_text == "Error executing tool fail: it failed on purpose; try echo instead"
    with pytest.raises(McpCallFailed) as timed_out:
        await link.call("slow", {"seconds": 5}, timeout=0.5)
    assert timed_out.value.code == "TOOL_TIMEOUT"
    assert "did not answer within 0.5 seconds" in str(timed_out.value)


async def test_a_server_that_dies_is_started_again(link: McpLink) -> None:
    first = (await link.call("pid", {})).content
    with pytest.raises(McpCallFailed) as died:
        await link.call("crash", {})
    assert died.value.code == "TOOL_CONNECTION_ERROR"
    assert "stopped during the call of crash" in str(died.value)
    await link.wait_settled(20)
    assert link.state == "connected"
    assert link.restarts == 1
    assert (await link.call("pid", {})).content != first


async def test_stderr_goes_to_the_log_with_secrets_masked(
    link: McpLink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="handrail.connections")
    assert (await link.call("whisper", {})).content == "whispered"
    for _ in range(100):
        if any("the token is" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.02)
    lines = [r.getMessage() for r in caplog.records if "the token is" in r.getMessage()]
    assert lines == ["MCP server test: the token is ********"]


async def test_a_command_that_cannot_run_is_an_error_with_the_way_forward() -> None:
    broken = McpLink(name="x", launch=McpLaunch(transport="stdio", command="/no/such/server"))
    await broken.start()
    try:
        assert broken.state == "error"
        assert broken.message is not None
        assert broken.message.startswith("The command '/no/such/server' cannot be run")
        with pytest.raises(McpCallFailed, match="an admin can fix it"):
            await broken.call("echo", {})
    finally:
        await broken.aclose()


def test_the_secret_box() -> None:
    box = SecretBox(new_secret_key())
    token = box.seal({"apiKey": TOKEN})
    assert token is not None
    assert TOKEN not in token
    assert box.open(token) == {"apiKey": TOKEN}
    assert box.seal({}) is None
    with pytest.raises(SecretsUnreadable, match="was the key changed"):
        SecretBox(new_secret_key()).open(token)
    with pytest.raises(SecretKeyMissing, match="HANDRAIL_SECRET_KEY") as missing:
        SecretBox(None).seal({"apiKey": TOKEN})
    assert "handrail secret-key" in missing.value.detail
    with pytest.raises(ConfigError, match="is not a Fernet key"):
        SecretBox("short")
    assert mask(f"a {TOKEN} b", [TOKEN, "x"]) == "a ******** b"
