"""The docs' Python examples run, and print what they say they print.

Every ```python block of the README and of ``docs/`` runs, the blocks of one file in order in
one namespace (a later block may use what an earlier one made), in a fresh folder as the
current directory. A top-level expression, or a top-level ``print(...)``, followed by a comment
(on its own line, or the lines right under it) is checked like a doctest: the comment is the
value's ``repr`` (or what was printed), whitespace ignored, ``...`` standing for any text.

A block that cannot run on its own is listed in `NOT_RUN`, with why; a failure names the file
and the block's line.
"""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from doc_snippets import fenced_blocks, matches

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The docs with Python examples.
WITH_PYTHON = [p for p in DOCS if fenced_blocks(p.read_text(encoding="utf-8"), "python")]

#: (file, a line of the block) -> why the block is not run.
NOT_RUN = {
    ("docs/demo.md", "uvicorn.run(create_demo_app("): "it serves until stopped",
    ("docs/reference/runtime.md", "row = await store.db.read("): (
        "a fragment of the reader's own async code, with its open `store`"
    ),
}


def _not_run(name: str, code: str) -> str | None:
    left_out = (why for (file, line), why in NOT_RUN.items() if file == name and line in code)
    return next(left_out, None)


def _expected(lines: list[str], node: ast.stmt) -> str | None:
    """The comment that says what `node` gives: on its last line, or the comment lines under it."""
    assert node.end_lineno is not None
    last = lines[node.end_lineno - 1]
    inline = last.find("  # ")
    if inline >= 0:
        return last[inline + 4 :]
    under = []
    for line in lines[node.end_lineno :]:
        if not line.startswith("#"):
            break
        under.append(line[1:])
    return "\n".join(under) if under else None


def _is_print(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    )


def _run(code: str, where: str, namespace: dict[str, Any]) -> list[str]:
    """Run `code` a statement at a time in `namespace`; the checks that failed."""
    lines = code.splitlines()
    failures = []
    for node in ast.parse(code).body:
        expected = _expected(lines, node) if isinstance(node, ast.Expr) else None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if isinstance(node, ast.Expr) and not _is_print(node):
                value = eval(compile(ast.Expression(node.value), where, "eval"), namespace)
                actual = repr(value)
            else:
                exec(compile(ast.Module([node], type_ignores=[]), where, "exec"), namespace)
                actual = out.getvalue()
        if expected is not None and not matches(expected, actual):
            failures.append(
                f"{where}, line {node.lineno}: {ast.get_source_segment(code, node)}\n"
                f"  the docs say: {expected.strip()}\n  it gives:     {actual.strip()}"
            )
    return failures


@pytest.mark.parametrize("path", WITH_PYTHON, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_examples_run_as_written(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = str(path.relative_to(ROOT))
    blocks = fenced_blocks(path.read_text(encoding="utf-8"), "python")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    failures = []
    for line, code in blocks:
        if _not_run(name, code) is None:
            failures += _run(code, f"{name}:{line}", namespace)
    assert not failures, "\n".join(failures)


def test_every_block_left_out_is_still_in_the_docs() -> None:
    # A block listed in NOT_RUN that the docs no longer have would leave a hole unnoticed.
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in DOCS}
    for (file, line), why in NOT_RUN.items():
        assert line in texts.get(file, ""), f"{file} no longer has `{line}` ({why})"


def test_the_checks_can_fail() -> None:
    namespace: dict[str, Any] = {}
    assert _run("[1, 2]  # [1, 2]\nprint('a b')\n# a b\n", "ok", namespace) == []
    assert _run("{'a': 'long text'}  # {'a': 'long ...'}", "ellipsis", namespace) == []
    (failure,) = _run("x = 2\nx + 1\n# 4", "wrong", namespace)
    assert "wrong, line 2: x + 1" in failure
    assert "it gives:     3" in failure
