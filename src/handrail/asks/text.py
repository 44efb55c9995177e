"""Text measures of the protocol.

Lengths are UTF-16 code units, the ``length`` of a JavaScript string, so that a limit means the
same in every client: most emoji count as 2. "Spaces at either end" are JavaScript's ``trim()``
whitespace. Cuts never split an emoji or a surrogate pair.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Final

#: The characters JavaScript's ``String.prototype.trim`` removes.
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
ELLIPSIS: Final = "\u2026"

_ZWJ: Final = "\u200d"


def utf16_len(text: str) -> int:
    """The length of `text` in UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_trim(text: str) -> str:
    """`text` without JavaScript whitespace at either end."""
    return text.strip(JS_WHITESPACE)


def is_blank(text: str) -> bool:
    """True when `text` holds no visible character."""
    return not js_trim(text)


def _joins_previous(char: str, previous: str) -> bool:
    if previous == _ZWJ:
        return True
    code = ord(char)
    if char == _ZWJ or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F or code == 0x20E3:
        return True
    if previous == "\r" and char == "\n":
        return True
    return unicodedata.category(char) in ("Mn", "Me", "Mc")


def _is_regional_indicator(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def graphemes(text: str) -> list[str]:
    """Split `text` into user-perceived characters, close enough for cutting safely: emoji
    sequences (ZWJ, skin tones, flags, keycaps, tags) and combining marks stay whole."""
    clusters: list[str] = []
    previous = ""
    pending_flag = False
    for char in text:
        if clusters and (
            _joins_previous(char, previous) or (pending_flag and _is_regional_indicator(char))
        ):
            clusters[-1] += char
            pending_flag = False
        else:
            clusters.append(char)
            pending_flag = _is_regional_indicator(char)
        previous = char
    return clusters


def _cluster_head(text: str, budget: int) -> str:
    """The longest run of whole clusters from the start of `text` within `budget` units."""
    kept: list[str] = []
    used = 0
    # Only the head can be kept: a cluster cut off by this slice is longer than the budget.
    for cluster in graphemes(text[: budget + 1]):
        size = utf16_len(cluster)
        if used + size > budget:
            break
        kept.append(cluster)
        used += size
    return "".join(kept)


def _ascii_head(text: str, budget: int) -> str:
    """`_cluster_head` for ASCII `text`, where a character is one unit and only CR LF is a
    cluster of two."""
    cut = min(budget, len(text))
    if 0 < cut < len(text) and text[cut - 1] == "\r" and text[cut] == "\n":
        cut -= 1
    return text[:cut]


def cut_text(text: str, max_length: int) -> str:
    """`text` cut to at most `max_length` UTF-16 code units, ending in "…" when cut.

    The cut falls on a word boundary when one is in the second half of the kept text, and never
    splits an emoji or a surrogate pair.
    """
    if utf16_len(text) <= max_length:
        return text
    budget = max_length - utf16_len(ELLIPSIS)
    head = _ascii_head(text, budget) if text.isascii() else _cluster_head(text, budget)
    # A cut right before a space already falls on a word boundary; otherwise step back to the
    # last space when that keeps at least half of the room (measured, like all limits, in
    # UTF-16 code units).
    if text[len(head)] not in JS_WHITESPACE:
        boundary = max(head.rfind(space) for space in JS_WHITESPACE)
        if boundary > 0 and utf16_len(head[:boundary]) >= max_length // 2:
            head = head[:boundary]
    return head.rstrip(JS_WHITESPACE) + ELLIPSIS


def describe(value: Any) -> str:
    """A short, safe rendering of a JSON value for an error message: never the whole of a long
    string, never a deep structure."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = json.dumps(value) if isinstance(value, int) or value == value else "NaN"
        return text if len(text) <= 40 else text[:39] + ELLIPSIS
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + ELLIPSIS
        return json.dumps(shown, ensure_ascii=False)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a value of an unknown type"


def json_type_name(value: Any) -> str:
    """The JSON type of `value`, with an article, for messages: "a string", "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a value of an unknown type"
