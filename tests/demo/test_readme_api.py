"""The README's "Try the API" walkthrough runs as written: its ```sh block goes to bash, with
curl, against ``handrail demo`` on a free port (for the README's ``localhost:8000``), and each
``# ->`` comment is what the command above it printed (whitespace ignored, ``...`` for any
text)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from demo_server import DemoServer
from doc_snippets import fenced_blocks, matches

README = Path(__file__).resolve().parents[2] / "README.md"
MARK = "@@printed-above@@"


def _walkthrough() -> str:
    section = README.read_text(encoding="utf-8").split("\n## Try the API\n", 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.MULTILINE)[0]
    [(_, block)] = fenced_blocks(section, "sh")
    return block


def _with_marks(block: str) -> tuple[str, list[str]]:
    """`block` with a mark printed before each ``# ->`` comment, and those comments' texts."""
    lines, said = [], []
    comment: list[str] | None = None
    for line in block.splitlines():
        if line.startswith("# -> "):
            lines.append(f"echo {MARK}")
            comment = [line[5:]]
            said.append("")
        elif comment is not None and line.startswith("#     "):
            comment.append(line[6:])
        else:
            if comment is not None:
                said[-1] = "\n".join(comment)
                comment = None
            lines.append(line)
    if comment is not None:
        said[-1] = "\n".join(comment)
    return "\n".join(lines), said


def test_the_readmes_api_walkthrough_runs_as_written(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.fail("curl is missing: install it (apt-get install curl) to run this test")
    script, said = _with_marks(_walkthrough())
    assert len(said) == 2, said  # the turn that asks, and the answer
    with DemoServer.running(tmp_path) as server:
        port = server.url.rsplit(":", 1)[1]
        # Each curl's output ends its line, so that the line above a mark is what it printed.
        prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; echo; }\n'
        run = subprocess.run(
            ["bash", "-c", prelude + script.replace("localhost:8000", f"127.0.0.1:{port}")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert run.returncode == 0, run.stdout + run.stderr
    chunks = run.stdout.split(MARK + "\n")
    assert len(chunks) == len(said) + 1, run.stdout
    for chunk, expected in zip(chunks, said, strict=False):
        printed = chunk.strip().splitlines()[-1]
        assert matches(expected, printed), f"the README says:\n{expected}\nit printed:\n{printed}"
    # The last command streams the turn's events: an ask, then done with that ask pending.
    events = [json.loads(line[6:]) for line in chunks[-1].splitlines() if line.startswith("data: ")]
    assert [next(iter(event)) for event in events] == ["ask", "done"]
    assert events[0]["ask"]["kind"] == "confirm"
    assert events[1]["pendingAsk"]["toolCallId"] == events[0]["ask"]["toolCallId"]
