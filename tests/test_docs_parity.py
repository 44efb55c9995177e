"""What the docs quote and list, kept equal to the code:

- The unknown-setting error that ``docs/reference/configuration.md`` quotes is the one the
  configuration gives (it once left out ``adapter`` and ``import``).
- ``docs/demo.md``'s playbook table lists exactly the demo's playbook prompts, and the page
  names every connection of the demo agent (it once called the booking a stand-in and left out
  the booking, team and clock tools).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from handrail.demo.agent import PLAYBOOK, demo_agent
from handrail.errors import ConfigError
from handrail.server.config import ServerConfig

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
DEMO = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")


def _quoted_unknown_setting() -> str:
    """The configuration reference's example of an unknown key's error, on one line."""
    match = re.search(r"\(`(agents\[0\]\.instrucions: unknown setting;[^`]*)`\)", CONFIGURATION)
    assert match is not None, "configuration.md no longer quotes the unknown-setting error"
    return " ".join(match.group(1).split())


def test_the_quoted_unknown_setting_error_is_the_real_one() -> None:
    data = {
        "users": [{"id": "alice", "token": "a" * 20}],
        "agents": [{"name": "helper", "instrucions": "Be brief."}],
    }
    with pytest.raises(ConfigError) as raised:
        ServerConfig.from_mapping(data, env={})
    assert str(raised.value) == _quoted_unknown_setting()


def test_the_demo_playbook_table_lists_the_playbook() -> None:
    section = DEMO.split("\n## The playbook\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    prompts = [row.strip("|").split("|")[0].strip() for row in rows[2:]]  # after the header
    assert prompts == list(PLAYBOOK)


def test_the_demo_page_names_every_connection_of_the_demo_agent() -> None:
    agent = demo_agent(booking_url="http://127.0.0.1:8000/demo/booking")
    ids = [connection for connection in agent.connections if connection != f"local:{agent.name}"]
    assert len(ids) == 4, ids  # notes, team, clock and the booking action set
    missing = [connection for connection in ids if f"`{connection}`" not in DEMO]
    assert not missing, f"docs/demo.md does not name these connections: {missing}"
