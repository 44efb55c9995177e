"""Doc parity: the docs say what the code does.

- The Limits table of ``docs/reference/asks.md`` lists exactly the keys of `flat_ask_limits()`,
  each with its value (numbers compared as ints, the option id pattern as a string).
- Its Error codes table lists exactly the codes of `ASK_ERROR_CODES`, each with its meaning.
- The README starts with the two set-up commands (the demo, then the tests), and CI runs the
  README's test command.

A failure names every key or code that differs, so the fix is to edit the table (or the code).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from handrail.asks.errors import ASK_ERROR_CODES
from handrail.asks.limits import flat_ask_limits

ROOT = Path(__file__).resolve().parents[1]
ASKS_REFERENCE = ROOT / "docs" / "reference" / "asks.md"
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
MAKEFILE = ROOT / "Makefile"

#: The README's set-up block, in order: run the demo, run the tests.
SETUP_COMMANDS = ["make demo", "make test"]

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_FENCE = re.compile(r"^(```|~~~)")


# --- reading markdown ---------------------------------------------------------------------------


def section(text: str, heading: str) -> str:
    """The body of the ``## <heading>`` section of `text`, up to the next heading of level 1-2."""
    match = re.search(rf"^## {re.escape(heading)}[ \t]*$", text, flags=re.MULTILINE)
    if match is None:
        pytest.fail(f"{ASKS_REFERENCE.relative_to(ROOT)} has no '## {heading}' section.")
    rest = text[match.end() :]
    end = re.search(r"^#{1,2} ", rest, flags=re.MULTILINE)
    return rest if end is None else rest[: end.start()]


def table(text: str, header: list[str]) -> list[list[str]]:
    """The body rows of the first markdown table in `text` whose header row is `header`, as
    lists of stripped cells."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if _cells(line) == header:
            rows: list[list[str]] = []
            for row in lines[start + 2 :]:
                if not row.strip().startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    pytest.fail(f"No table with the header {' | '.join(header)} in {ASKS_REFERENCE.name}.")


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return []
    parts = _CELL_SPLIT.split(stripped.strip("|"))
    return [part.strip().replace("\\|", "|") for part in parts]


def unquote(cell: str) -> str:
    """A cell without the backticks of inline code around it."""
    if len(cell) >= 2 and cell.startswith("`") and cell.endswith("`"):
        return cell[1:-1]
    return cell


def keyed(rows: list[list[str]], width: int, what: str) -> dict[str, list[str]]:
    """Rows keyed by their first cell (backticks removed); fails on a malformed or repeated row."""
    out: dict[str, list[str]] = {}
    repeated: list[str] = []
    for row in rows:
        assert len(row) == width, f"A {what} row does not have {width} cells: {row}"
        key = unquote(row[0])
        if key in out:
            repeated.append(key)
        out[key] = row[1:]
    assert not repeated, f"The {what} table lists these more than once: {sorted(repeated)}"
    return out


def reference_text() -> str:
    assert ASKS_REFERENCE.is_file(), f"{ASKS_REFERENCE} is missing."
    return ASKS_REFERENCE.read_text(encoding="utf-8")


def differences(documented: dict[str, Any], actual: dict[str, Any], what: str) -> list[str]:
    """One line per key that is missing from the docs, only in the docs, or different."""
    lines = [
        f"{key}: in the code but not in the {what} table"
        for key in sorted(actual.keys() - documented.keys())
    ]
    lines += [
        f"{key}: in the {what} table but not in the code"
        for key in sorted(documented.keys() - actual.keys())
    ]
    lines += [
        f"{key}: the table says {documented[key]!r}, the code says {actual[key]!r}"
        for key in sorted(actual.keys() & documented.keys())
        if documented[key] != actual[key]
    ]
    return lines


# --- the tables ---------------------------------------------------------------------------------


def _doc_limit(cell: str, actual: Any) -> Any:
    """A Value cell as the type of the code's value: an int for a number, the text inside the
    backticks for a string. A cell that does not parse stays a string, so it differs."""
    if isinstance(actual, int) and not isinstance(actual, bool):
        try:
            return int(cell)
        except ValueError:
            return cell
    return unquote(cell)


def test_limits_table_matches_ask_limits() -> None:
    rows = table(section(reference_text(), "Limits"), ["Key", "Value", "Applies to"])
    documented = keyed(rows, 3, "Limits")
    actual = flat_ask_limits()
    values = {key: _doc_limit(cells[0], actual.get(key)) for key, cells in documented.items()}
    wrong = differences(values, actual, "Limits")
    assert not wrong, "The Limits table and ASK_LIMITS disagree:\n" + "\n".join(wrong)
    blank = [key for key, cells in documented.items() if not cells[1]]
    assert not blank, f"These limits have no 'Applies to' text: {blank}"


def test_error_codes_table_matches_ask_error_codes() -> None:
    rows = table(section(reference_text(), "Error codes"), ["Code", "Meaning", "Returned by"])
    documented = keyed(rows, 3, "Error codes")
    meanings = {code: cells[0] for code, cells in documented.items()}
    wrong = differences(meanings, dict(ASK_ERROR_CODES), "Error codes")
    assert not wrong, "The Error codes table and ASK_ERROR_CODES disagree:\n" + "\n".join(wrong)
    blank = [code for code, cells in documented.items() if not cells[1]]
    assert not blank, f"These codes have no 'Returned by' text: {blank}"


def test_table_cells_split_on_unescaped_pipes_only() -> None:
    assert _cells("| `a.b` | 5 | x |") == ["`a.b`", "5", "x"]
    assert _cells(r"| `c` | `^p\|q$` | y |") == ["`c`", "`^p|q$`", "y"]
    assert _cells("not a row") == []


def test_differences_names_every_differing_key() -> None:
    lines = differences({"a": 1, "b": 2, "x": 9}, {"a": 1, "b": 3, "y": 4}, "Limits")
    assert lines == [
        "y: in the code but not in the Limits table",
        "x: in the Limits table but not in the code",
        "b: the table says 2, the code says 3",
    ]


def test_doc_limit_compares_numbers_as_ints_and_patterns_as_strings() -> None:
    assert _doc_limit("10485760", 10_485_760) == 10_485_760
    assert _doc_limit("10 MB", 10_485_760) == "10 MB"
    assert _doc_limit("`^[a-z]$`", "^[a-z]$") == "^[a-z]$"


# --- the README and CI --------------------------------------------------------------------------


def _commands(block: list[str]) -> list[str]:
    """The commands of a shell block: its lines without blanks, comments and a ``$`` prompt."""
    commands = []
    for line in block:
        command = line.strip().removeprefix("$ ").strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def test_readme_starts_with_the_demo_and_test_commands() -> None:
    assert README.is_file(), f"{README} is missing."
    lines = README.read_text(encoding="utf-8").splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    assert first is not None, "README.md is empty."
    assert _FENCE.match(lines[first]), (
        f"README.md must start with a fenced block of the set-up commands, not {lines[first]!r}."
    )
    fence = lines[first][:3]
    end = next((i for i in range(first + 1, len(lines)) if lines[i].startswith(fence)), None)
    assert end is not None, "README.md's first fenced block is never closed."
    assert _commands(lines[first + 1 : end]) == SETUP_COMMANDS, (
        f"README.md's first block must hold exactly {SETUP_COMMANDS}, in that order."
    )


def test_ci_runs_the_readme_test_command() -> None:
    assert CI_RUN.is_file(), f"{CI_RUN} is missing."
    commands = _commands(CI_RUN.read_text(encoding="utf-8").splitlines())
    assert SETUP_COMMANDS[1] in commands, f".ci/run must run `{SETUP_COMMANDS[1]}`."


def test_makefile_has_the_readme_targets() -> None:
    targets = re.findall(r"^([A-Za-z0-9_-]+):", MAKEFILE.read_text(encoding="utf-8"), re.MULTILINE)
    missing = [c for c in SETUP_COMMANDS if c.removeprefix("make ") not in targets]
    assert not missing, f"The Makefile has no target for: {missing}"


def _installs(target: str) -> list[str]:
    """The ``pip install`` lines ``make -n <target>`` would run (nothing runs)."""
    done = subprocess.run(
        ["make", "-n", "-B", target, "VENV=/nonexistent-venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [
        line for line in done.stdout.splitlines() if "pip install" in line and "-e" in line.split()
    ]


def test_make_demo_installs_only_the_package_and_make_test_the_test_extras() -> None:
    # `make demo` starts the demo: the package alone, never the test extras.
    assert _installs("demo") == ["/nonexistent-venv/bin/python -m pip install --quiet -e ."]
    assert _installs("test") == ["/nonexistent-venv/bin/python -m pip install --quiet -e '.[test]'"]
