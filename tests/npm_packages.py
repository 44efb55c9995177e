"""The npm packages the tests use, where `scripts/ensure-npm-packages.sh` installs them
(``make test`` runs it). A test takes a package's file through `installed`, which fails the
test with that way forward when the file is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

MODULES: Final = Path(__file__).resolve().parents[1] / ".npm-packages" / "node_modules"
#: The reference MCP server `@modelcontextprotocol/server-everything` (run over stdio).
EVERYTHING: Final = MODULES / ".bin" / "mcp-server-everything"
#: axe-core's script, run inside a page (`tests/web/test_web_accessibility.py`).
AXE: Final = MODULES / "axe-core" / "axe.min.js"


def installed(path: Path) -> Path:
    """`path`, or the test fails saying how to install it."""
    if not path.exists():
        pytest.fail(
            f"{path} is missing: run scripts/ensure-npm-packages.sh (make test runs it).",
            pytrace=False,
        )
    return path
