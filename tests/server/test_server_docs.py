"""Doc parity for the server: the HTTP API reference lists every route and every title of the
spec's two error tables, the configuration reference every setting and environment variable,
and the example configuration loads."""

from __future__ import annotations

import re
from pathlib import Path

from server_helpers import Api

from handrail.server.agent_config import AGENT_KEYS, ASKS_KEYS
from handrail.server.config import (
    _TOP_KEYS,
    _USER_KEYS,
    ENV_VARS,
    load_config,
)
from handrail.server.reach_config import EMAIL_KEYS, REACH_ENV_VARS, WEBHOOK_KEYS

ROOT = Path(__file__).resolve().parents[2]
HTTP_API = (ROOT / "docs" / "reference" / "http-api.md").read_text()
CONFIGURATION = (ROOT / "docs" / "reference" / "configuration.md").read_text()
SPEC = ROOT.parent / "shared" / "spec" / "agent-ui-asks.md"


def _spec_titles() -> set[str]:
    """The `title`s of the spec's "Error responses" and headless error tables."""
    text = SPEC.read_text()
    titles: set[str] = set()
    for heading in ("## Error responses", "## Headless endpoints"):
        body = text.split(heading, 1)[1].split("\n## ", 1)[0]
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[0].isdigit():
                titles.add(cells[1].strip("`"))
    return titles


async def test_every_route_is_in_the_http_reference(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    for path, item in document["paths"].items():
        for method in item:
            assert f"`{method.upper()} {path}`" in HTTP_API, (method, path)


def test_every_spec_error_title_is_in_the_http_reference() -> None:
    titles = _spec_titles()
    assert len(titles) >= 14
    for title in titles:
        assert f"`{title}`" in HTTP_API, title
    for code in ("action-body-validation-failed", "UNKNOWN_BUTTON", "action-access-denied"):
        assert f"`{code}`" in HTTP_API


def test_every_setting_is_in_the_configuration_reference() -> None:
    keys = (*_TOP_KEYS, *_USER_KEYS, *AGENT_KEYS, *ASKS_KEYS, *WEBHOOK_KEYS, *EMAIL_KEYS)
    for key in (*keys, "import"):
        assert re.search(rf"\| `{re.escape(key)}` \|", CONFIGURATION), key
    for var in (*ENV_VARS.values(), *REACH_ENV_VARS.values(), "HANDRAIL_TOKEN"):
        assert f"`{var}`" in CONFIGURATION, var


def test_the_example_configuration_loads() -> None:
    config = load_config(
        ROOT / "examples" / "handrail.yaml", env={"ALICE_TOKEN": "a" * 20, "BOB_TOKEN": "b" * 20}
    )
    assert [a.name for a in config.agents] == ["helper", "watch"]
    assert [u.id for u in config.users] == ["alice", "bob"]
    config.check_models()
