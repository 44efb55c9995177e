"""Reading the docs' fenced examples, and checking what they say they print.

Shared by the tests that run the docs' examples (`test_docs_examples`, the README's API
walkthrough in `tests/demo/test_readme_api.py`)."""

from __future__ import annotations

import re

__all__ = ["fenced_blocks", "matches"]

_SPACE = re.compile(r"\s+")


def fenced_blocks(text: str, language: str) -> list[tuple[int, str]]:
    """The ```<language> blocks of markdown `text`: (the line of the fence, the code)."""
    fence = re.compile(
        rf"^```{re.escape(language)}[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
    )
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in fence.finditer(text)]


def matches(expected: str, actual: str) -> bool:
    """Whether `actual` is what the docs' `expected` says, whitespace ignored and each ``...``
    of `expected` standing for any text."""
    parts = [re.escape(_SPACE.sub("", part)) for part in expected.split("...")]
    return re.fullmatch(".*?".join(parts), _SPACE.sub("", actual), flags=re.DOTALL) is not None
