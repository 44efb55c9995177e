"""``docs/reference/actions.md`` says what the code does: its error tables list exactly the
codes of `CONFIG_ERROR_CODES` and `RUNTIME_CODES`, and its example compiles (see
test_config.py)."""

from __future__ import annotations

import re

from action_helpers import ACTIONS_REFERENCE

from handrail.actions import CONFIG_ERROR_CODES, RUNTIME_CODES


def _codes(heading: str) -> dict[str, str]:
    text = ACTIONS_REFERENCE.read_text(encoding="utf-8")
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#)", text + "\n#", re.S | re.M)
    assert match is not None, f"no '### {heading}' section"
    rows = re.findall(r"^\| `([A-Z_]+)` \| (.*) \|$", match.group(1), flags=re.M)
    assert rows, f"no code table under '### {heading}'"
    return dict(rows)


def test_the_errors_table_lists_every_config_code() -> None:
    documented = _codes("Errors")
    assert list(documented) == list(CONFIG_ERROR_CODES)
    assert documented == dict(CONFIG_ERROR_CODES)


def test_the_runtime_codes_table_lists_every_runtime_code() -> None:
    documented = _codes("Runtime codes")
    assert list(documented) == list(RUNTIME_CODES)
    assert documented == dict(RUNTIME_CODES)
