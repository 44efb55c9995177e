"""``handrail check FILE...``: OK lines, every problem on its own line, and the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest
from action_helpers import ENV, reference_yaml

from handrail.cli import main


@pytest.fixture
def good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    file = tmp_path / "booking.yaml"
    file.write_text(reference_yaml(), encoding="utf-8")
    return file


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    text = reference_yaml().replace("effect: side-effect", "effect: read-only")
    text = text.replace("name: Example booking", "name: Example booking\ncolour: blue")
    file = tmp_path / "bad.yaml"
    file.write_text(text, encoding="utf-8")
    return file


def test_a_good_file_is_ok(good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(good)]) == 0
    assert capsys.readouterr().out == f"OK {good}: 2 tools\n"


def test_every_problem_is_printed_and_the_status_is_1(
    good: Path, bad: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(good), str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"OK {good}: 2 tools"
    assert lines[1].startswith(f"{bad}: colour: CONFIG_SCHEMA_INVALID: unknown key 'colour'")
    assert lines[2].startswith(f"{bad}: tools[1].behavior.effect: CONFIG_EFFECT_INVALID: ")
    assert lines[3].startswith(
        f"{bad}: tools[1].behavior.confirmation: CONFIG_CONFIRMATION_INVALID: "
    )
    assert len(lines) == 4
    assert all("(line " in line for line in lines[1:])


def test_a_missing_secret_is_a_problem(
    good: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BOOKING_API_KEY")
    assert main(["check", str(good)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{good}: auth.secret_env: CONFIG_SECRET_MISSING: ")


def test_an_unreadable_file_is_status_2(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    assert main(["check", str(missing), str(good)]) == 2
    captured = capsys.readouterr()
    assert f"cannot read the action set {missing}" in captured.err
    assert captured.out == f"OK {good}: 2 tools\n"


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "FILE" in capsys.readouterr().err
