"""Reading request bodies: JSON a database can hold, within a size cap, and the dependencies
routes share.

Routes read their JSON themselves (rather than through FastAPI models) so that each mistake
gets the exact status, title and code of the spec. `read_json` checks three things before a
route sees the body:

- **Size.** At most the app's JSON cap (``max_json_bytes``, 1 MiB by default): a declared
  ``Content-Length`` over it is refused before a byte is read, and the bytes are counted as
  they stream in, so nothing past the cap is ever read (413). Only the answer to a pending
  `files` ask may be larger, up to the files-answer cap: see `FilesAnswer`.
- **Depth.** Arrays and objects nest at most `MAX_JSON_DEPTH` levels (400, as the route words a
  body that is not JSON).
- **Text.** No string, value or key, holds NUL (U+0000) or a lone surrogate (half of a UTF-16
  pair, as ``JSON.stringify`` writes a cut emoji: ``"\\ud83d"``). Neither SQLite nor PostgreSQL
  can store them, so the body is refused with 400 ``Validation failed``, code
  ``INVALID_FORMAT``, and ``fields`` naming each such text, before anything is stored.

The size is checked on the bytes; depth and text in one walk over the parsed value, which is
skipped when the bytes show it cannot find anything (few brackets, no escape, no surrogate or
NUL byte). `url_text_problems` holds the URL to the same text rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from fastapi import Request
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from ..asks.errors import join_path
from ..errors import BadRequest, PayloadTooLarge, ProblemError
from ..runtime.runtime import Runtime
from ..store import Store
from ..store.records import History
from .auth import header

__all__ = [
    "MAX_JSON_DEPTH",
    "NO_BODY",
    "FilesAnswer",
    "read_json",
    "runtime_of",
    "storable_text_problems",
    "store_of",
    "unstorable_text",
    "url_text_problems",
]

#: What `read_json` returns for an empty body.
NO_BODY: Final = object()

#: The whitespace JSON allows around a value (RFC 8259): a body of only these is empty.
JSON_WHITESPACE: Final = b" \t\r\n"

#: How deep arrays and objects may nest in a request body (the body itself is level 1).
MAX_JSON_DEPTH: Final = 64

#: At most this many texts are named in ``fields``; the walk stops there.
MAX_TEXT_PROBLEMS: Final = 20

#: NUL and the UTF-16 surrogates. A string parsed from JSON holds a surrogate only when it was
#: sent alone: an escaped pair (``\\ud83d\\ude00``) becomes one character.
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")
#: Bytes without which no parsed string can hold NUL or a surrogate: an escape, the first byte
#: of a UTF-8-encoded surrogate (json reads bytes with ``surrogatepass``), a NUL byte (UTF-16
#: or UTF-32 bodies).
_TEXT_MARKERS: Final = (b"\\u", b"\xed", b"\x00")

TEXT_CODE: Final = "INVALID_FORMAT"


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


class FilesAnswer:
    """Who may send a body over the JSON cap: the caller answering a pending `files` ask, whose
    base64 data URLs may need up to the files-answer cap (``max_files_answer_bytes``).

    Nothing is looked up for a body within the JSON cap. Once one passes it (or declares a
    larger ``Content-Length``), `waits` asks the store: with `history_id` (``POST
    /histories/{id}/turn``, whose path names the history) whether that history is the
    caller's and waits on a `files` ask; without it (``POST /prompt``, whose body names the
    history) whether any history of the caller does. When a larger body has been read,
    `answers` checks that it is what the larger cap is for: an ``askResponse`` with
    ``content.files``, for a history of the caller that waits on a `files` ask. Anything else
    is refused with 413 as if the larger cap never applied. The answer itself is then
    validated as any other (the count of files, their names, types and sizes).
    """

    def __init__(self, user_id: str, history_id: str | None = None) -> None:
        self.user_id = user_id
        self.history_id = history_id

    async def waits(self, store: Store) -> bool:
        """Whether a `files` ask of the caller is pending where this body may answer it."""
        if self.history_id is not None:
            return await self._waits_in(store, self.history_id)
        return any(_waits_on_files(h) for h in await store.histories.pending(self.user_id))

    async def answers(self, store: Store, data: Any) -> bool:
        """Whether `data`, a body over the JSON cap, answers such an ask with files."""
        if not isinstance(data, dict):
            return False
        answer = data.get("askResponse")
        content = answer.get("content") if isinstance(answer, dict) else None
        if not isinstance(content, dict) or "files" not in content:
            return False
        history_id = self.history_id if self.history_id is not None else data.get("historyId")
        return isinstance(history_id, str) and await self._waits_in(store, history_id)

    async def _waits_in(self, store: Store, history_id: str) -> bool:
        history = await store.histories.get(history_id)
        return history is not None and history.owner_id == self.user_id and _waits_on_files(history)


def _waits_on_files(history: History) -> bool:
    return history.pending_ask is not None and history.pending_ask.kind == "files"


async def read_json(
    request: Request,
    *,
    invalid: Callable[[str], ProblemError] | None = None,
    files_answer: FilesAnswer | None = None,
) -> Any:
    """The body parsed as JSON, or `NO_BODY` when it is empty.

    The body is refused with 413 once it passes the app's JSON cap (``app.state
    .max_json_bytes``); with `files_answer`, the answer to a pending `files` ask may go on to
    the files-answer cap (see `FilesAnswer`). A body that is not JSON, or nests deeper than
    `MAX_JSON_DEPTH`, raises ``invalid(message)`` (default: 400 ``Invalid JSON``). Text that
    cannot be stored is 400 ``Validation failed`` with code ``INVALID_FORMAT`` (see
    `storable_text_problems`).
    """
    state = request.app.state
    cap: int = state.max_json_bytes
    larger: int = state.max_files_answer_bytes
    widened = False

    async def widen() -> bool:
        nonlocal cap, widened
        if files_answer is None or widened or larger <= cap:
            return False
        widened = True
        if await files_answer.waits(store_of(request)):
            cap = larger
            return True
        return False

    declared = _declared_length(request)
    if declared is not None and declared > cap:
        await widen()
        if declared > cap:
            raise _too_large(cap, files_answer, larger, state.api_prefix)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap and not (await widen() and size <= cap):
                raise _too_large(cap, files_answer, larger, state.api_prefix)
            chunks.append(chunk)
    except ClientDisconnect:
        raise BadRequest(
            "Request body incomplete",
            "The connection closed before the body ended. Send the whole body again.",
        ) from None
    raw = b"".join(chunks)
    if not raw.strip(JSON_WHITESPACE):
        return NO_BODY
    try:
        data = _loads(raw)
    except RecursionError:
        raise _invalid(invalid, _too_deep_message()) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid(invalid, f"The body is not valid JSON: {exc}.") from None
    check_depth = raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH
    escape, surrogate, nul = _TEXT_MARKERS  # three scans, without a generator
    check_text = escape in raw or surrogate in raw or nul in raw
    if check_depth or check_text:
        try:
            problems = storable_text_problems(data, text=check_text)
        except _TooDeep:
            raise _invalid(invalid, _too_deep_message()) from None
        if problems:
            raise unstorable_text(problems)
    if size > state.max_json_bytes and (
        files_answer is None or not await files_answer.answers(store_of(request), data)
    ):
        raise _too_large(state.max_json_bytes, files_answer, larger, state.api_prefix)
    return data


#: `json.loads`'s own decoder (the default options).
_DECODE: Final = json.JSONDecoder().decode


def _loads(raw: bytes) -> Any:
    """``json.loads(raw)``: the same value and the same errors, without its two Python calls
    when the first two bytes say UTF-8 (`json.detect_encoding` says UTF-8 for any body that
    starts with two bytes other than NUL and a byte order mark's first)."""
    if len(raw) >= 2 and raw[0] not in _NOT_PLAIN_UTF8 and raw[1] != 0:
        return _DECODE(raw.decode("utf-8", "surrogatepass"))
    return json.loads(raw)


#: A first byte after which `json.detect_encoding` may not say plain UTF-8: NUL (UTF-16 or
#: UTF-32) and the first bytes of the byte order marks (UTF-8's ``EF BB BF``, UTF-16's ``FF FE``
#: and ``FE FF``).
_NOT_PLAIN_UTF8: Final = frozenset({0x00, 0xEF, 0xFE, 0xFF})


def _declared_length(request: Request) -> int | None:
    """The ``Content-Length`` the client declared, when it is a plain number (one too long to
    convert counts as larger than any cap)."""
    declared = (header(request, b"content-length") or "").strip()
    if not (declared.isascii() and declared.isdigit()):
        return None
    return int(declared) if len(declared) <= 18 else 10**18


def _invalid(invalid: Callable[[str], ProblemError] | None, message: str) -> ProblemError:
    if invalid is not None:
        return invalid(message)
    return BadRequest("Invalid JSON", message)


def _too_deep_message() -> str:
    return (
        f"The body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep; send at "
        f"most {MAX_JSON_DEPTH}."
    )


def _too_large(
    cap: int, files_answer: FilesAnswer | None, larger: int, prefix: str
) -> PayloadTooLarge:
    detail = f"The body is larger than {cap} bytes."
    if files_answer is None:
        detail += " Send a smaller body."
    else:
        if larger > cap:
            detail += (
                f" Only the answer to a pending files ask may be larger (up to {larger} bytes, "
                "for its data URLs)."
            )
        detail += (
            f" Upload large files with POST {prefix}/files/upload and answer with their fileId."
        )
    return PayloadTooLarge("Request body too large", detail)


# --- text a database can hold ----------------------------------------------------------------


class _TooDeep(Exception):
    pass


def storable_text_problems(value: Any, *, text: bool = True) -> list[dict[str, str]]:
    """The texts of a parsed JSON value that no database can store, as ``fields`` entries
    ``{path, code, message, fix}`` sorted by path (at most `MAX_TEXT_PROBLEMS`): every string,
    value or key, that holds NUL or a lone surrogate. Paths are as in answer errors
    (``askResponse.content.values.note``, ``files[0].filename``); a character that cannot be
    stored is written in a path as ``\\uXXXX``.

    Raises `_TooDeep` when arrays and objects nest deeper than `MAX_JSON_DEPTH`. With
    ``text=False`` only the depth is checked.
    """
    problems: list[dict[str, str]] = []
    # Each entry: a value, its depth, and its trail (parent trail, key), so that a path is
    # only spelled out for a text that has a problem.
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 0, None)]
    while stack and len(problems) < MAX_TEXT_PROBLEMS:
        item, level, trail = stack.pop()
        if isinstance(item, str):
            if text and _unstorable(item):
                problems.append(_text_problem(_path(trail), item, key=False))
            continue
        level += 1
        if level > MAX_JSON_DEPTH:
            raise _TooDeep
        if isinstance(item, dict):
            for key, child in item.items():
                if text and _unstorable(key):
                    problems.append(_text_problem(_path((trail, key)), key, key=True))
                if isinstance(child, (dict, list)) or (text and isinstance(child, str)):
                    stack.append((child, level, (trail, key)))
        else:  # a list: json gives nothing else that holds values
            for index, child in enumerate(item):
                if isinstance(child, (dict, list)) or (text and isinstance(child, str)):
                    stack.append((child, level, (trail, index)))
    return sorted(problems[:MAX_TEXT_PROBLEMS], key=lambda p: p["path"])


def _unstorable(text: str) -> bool:
    if text.isascii():
        return "\x00" in text
    return _UNSTORABLE.search(text) is not None


def _shown(text: str) -> str:
    """`text` with each character that cannot be stored (nor sent back) written as
    ``\\uXXXX``."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _path(trail: tuple[Any, ...] | None) -> str:
    keys: list[str | int] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    path = ""
    for key in reversed(keys):
        path = join_path(path, key if isinstance(key, int) else _shown(key))
    return path


def _text_problem(path: str, text: str, *, key: bool) -> dict[str, str]:
    found = _UNSTORABLE.search(text)
    assert found is not None
    char = found.group()
    where = f"character {found.start() + 1}"
    what = ("The key " + path) if key else (path or "The body")
    if char == "\x00":
        message = f"{what} holds a NUL character (U+0000, {where}), which cannot be stored."
        fix = "Remove the NUL character (U+0000) from the text."
    else:
        message = (
            f"{what} holds a lone surrogate (U+{ord(char):04X}, {where}): half of a UTF-16 "
            "pair, which is not text and cannot be stored."
        )
        fix = (
            "Send the whole character (both halves of the pair, such as \\ud83d\\ude00), or "
            "remove the half; a text cut in the middle of an emoji has this."
        )
    return {"path": path, "code": TEXT_CODE, "message": message, "fix": fix}


def unstorable_text(problems: list[dict[str, str]]) -> BadRequest:
    """The 400 for texts that cannot be stored: `problems` from `storable_text_problems`."""
    if len(problems) == 1:
        detail = f"{problems[0]['message']} {problems[0]['fix']}"
    else:
        paths = ", ".join(p["path"] or "the body" for p in problems)
        detail = (
            f"{len(problems)} texts hold characters that cannot be stored ({paths}). Remove "
            "each NUL (U+0000) and lone surrogate; see fields."
        )
    return BadRequest("Validation failed", detail, code=TEXT_CODE, fields=problems)


def url_text_problems(scope: Scope) -> list[dict[str, str]]:
    """The URL's share of the text rule, as `storable_text_problems` words a body's: a path or
    a query that holds NUL (``%00``) is refused as a body with such text is (400 ``Validation
    failed``, code ``INVALID_FORMAT``, `fields` naming ``url.path`` or ``url.query``), so no
    id, cursor or connection id with one reaches a database. A lone surrogate cannot get
    there: the path and the query decode bytes that are not UTF-8 as U+FFFD. The app's edge
    (`handrail.server.edge`) checks every request with it."""
    problems = []
    if "\x00" in scope.get("path", ""):
        problems.append(_url_problem("url.path", "path"))
    if b"%00" in scope.get("query_string", b""):
        problems.append(_url_problem("url.query", "query"))
    return problems


def _url_problem(path: str, part: str) -> dict[str, str]:
    return {
        "path": path,
        "code": TEXT_CODE,
        "message": f"The URL's {part} holds a NUL character (%00), which cannot be stored.",
        "fix": f"Remove %00 from the {part}.",
    }
