"""Small shared helpers every layer may use: ids and timestamps in the wire format, text made
storable, and what a background task says while its work fails (`Failing`)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import orjson

T = TypeVar("T")


def new_id() -> str:
    """A new id: 24 lowercase hex characters, 12 bytes from `os.urandom` (as
    `secrets.token_hex(12)`), taken from a batch made with one `os.urandom` call (see
    `_take`)."""
    try:
        return _IDS.pop()
    except IndexError:
        return _take(_IDS, _new_ids)


def new_sorted_id() -> str:
    """A new id that sorts by when it was made, in `new_id`'s form (24 lowercase hex
    characters): the first 12 the milliseconds since the epoch (48 bits, as a UUID version 7
    begins), the last 12 random (48 bits, half of a `new_id`).

    For the keys of rows that are only appended (conversations, the activity and request
    logs): a new key then goes at the end of each index it is in, the primary key's and every
    one that begins with it, where the previous insert left the page in the cache, not on a
    random page of an index that grows with the table (`bench/sqlite_writes.py`: with random
    keys a write took 2.7 times the CPU once the tables held 57,600 conversations). It tells
    when the row was made, which those rows show anyway; never for a secret or a token."""
    return f"{time.time_ns() // 1_000_000:012x}{new_id()[:12]}"


def new_uuid4() -> str:
    """A random UUID (version 4) in its canonical form, as ``str(uuid.uuid4())`` gives it
    (without building a `uuid.UUID`, which costs several times as much), from a batch like
    `new_id`'s."""
    try:
        return _UUIDS.pop()
    except IndexError:
        return _take(_UUIDS, _new_uuids)


#: How many ids one `os.urandom` call makes. A call of its own for each id released the GIL
#: for the system call, which on a busy server handed the GIL to another thread about twenty
#: times a cycle.
_BATCH: Final = 128
#: Ids made and not given yet, taken from the end (`list.pop` and `list.extend` are atomic,
#: so threads may share them: no id is given twice).
_IDS: list[str] = []
_UUIDS: list[str] = []


def _new_ids() -> list[str]:
    h = os.urandom(12 * _BATCH).hex()
    return [h[i : i + 24] for i in range(0, 24 * _BATCH, 24)]


def _new_uuids() -> list[str]:
    h = os.urandom(16 * _BATCH).hex()
    # The version's hex digit (the 13th) is 4; the variant's (the 17th) keeps its two low
    # bits under ``10`` (8, 9, a or b): the bits `uuid.uuid4` sets, the others random.
    return [
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-"
        f"{_VARIANT[h[i + 16]]}{h[i + 17 : i + 20]}-{h[i + 20 : i + 32]}"
        for i in range(0, 32 * _BATCH, 32)
    ]


_VARIANT: Final = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def _take(pool: list[str], make: Callable[[], list[str]]) -> str:
    """One of a new batch from `make`, the rest kept in `pool` (threads that find it empty at
    once each make a batch of their own)."""
    batch = make()
    first = batch.pop()
    pool.extend(batch)
    return first


def _forget_ids() -> None:
    """In a forked child: drop the ids made before the fork (the parent gives them too)."""
    _IDS.clear()
    _UUIDS.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_ids)


def utc_now() -> dt.datetime:
    """Now, in UTC, to the millisecond (cut, not rounded)."""
    # The same clock as `datetime.now`, a third of its cost with the `replace`: a whole
    # number of milliseconds over 1000 is within a tenth of a microsecond of itself as a
    # float, and `fromtimestamp` rounds to the microsecond. A cycle asks for the time about
    # twenty times, mostly within one millisecond: the last one's value is given again (a
    # datetime is immutable; the pair is replaced in one assignment, so threads may share it).
    ms = time.time_ns() // 1_000_000
    last = _LAST_NOW
    if last[0] == ms:
        return last[1]
    return _remember_now(ms)


def _remember_now(ms: int) -> dt.datetime:
    global _LAST_NOW
    moment = _FROM_TIMESTAMP(ms / 1000, dt.UTC)
    _LAST_NOW = (ms, moment)
    return moment


def _text_of(ms: int) -> str:
    """The ISO text of `ms` (since the epoch), as `iso` gives it, made from its second's text
    (once a second) and the milliseconds, without a datetime; remembered as the last one."""
    global _LAST_TEXT, _LAST_SECOND
    second, milli = divmod(ms, 1000)
    last = _LAST_SECOND
    if last[0] != second:
        # ``2026-11-30T07:08:38``: the text up to the second, once a second.
        last = (second, _FROM_TIMESTAMP(second, dt.UTC).isoformat()[:-6])
        _LAST_SECOND = last
    # The same text as `isoformat(timespec="milliseconds")`, at a fifth of its cost.
    text = f"{last[1]}.{milli:03d}Z"
    _LAST_TEXT = (ms, text)
    return text


_FROM_TIMESTAMP: Final = dt.datetime.fromtimestamp
#: The last `utc_now`: its milliseconds since the epoch and its value (one tuple, replaced in
#: one assignment, so that threads may share it).
_LAST_NOW: tuple[int, dt.datetime] = (-1, dt.datetime(1970, 1, 1, tzinfo=dt.UTC))
#: The last text `now_iso` or `iso` made from the clock, and its milliseconds.
_LAST_TEXT: tuple[int, str] = (-1, "")
#: The last clock text's whole second (since the epoch) and its ISO text up to the second.
_LAST_SECOND: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """``iso(utc_now())`` in one call (ten events a cycle are timed with it), without making
    the datetime."""
    ms = time.time_ns() // 1_000_000
    last = _LAST_TEXT
    if last[0] == ms:
        return last[1]
    return _text_of(ms)


def iso(moment: dt.datetime) -> str:
    """``2026-11-30T07:08:38.123Z``: ISO 8601 in UTC with ``Z``."""
    now = _LAST_NOW
    if moment is now[1]:  # the last `utc_now` (by identity): its milliseconds' text
        last = _LAST_TEXT
        return last[1] if last[0] == now[0] else _text_of(now[0])
    if moment.tzinfo is not dt.UTC:
        moment = moment.astimezone(dt.UTC)
    # ``...:38.123+00:00``; `isoformat` costs a third of `strftime`.
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"


# --- JSON text ----------------------------------------------------------------------------------

_MAKE_ENCODER: Final[Any] = getattr(json.encoder, "c_make_encoder", None)

#: What orjson leaves to the fallback encoder rather than writing in a form of its own.
_ORJSON_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def json_encoder(
    *,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] = (", ", ": "),
) -> Callable[[Any], str]:
    """``json.JSONEncoder(...).encode`` with these options, built once: the same text, in one
    call of the C encoder (`JSONEncoder.encode` goes through two Python calls and builds a C
    encoder at each call, which costs more than encoding a small value). Without the circular
    check (a value that holds itself raises `RecursionError`, not `ValueError`): the C
    encoder's record of the objects it is in keeps an entry after an error, which would wrongly
    refuse a later value. Where the C encoder is missing, the plain encoder's `encode`.

    Compact, unsorted text with its non-ASCII characters kept (``separators=(",", ":")``,
    ``ensure_ascii=False``, no `sort_keys`) is orjson's, several times faster on the writes and
    responses of every turn; see `compact_json_bytes` for what differs."""
    slow = _standard_encoder(ensure_ascii, allow_nan, sort_keys, separators)
    if separators != (",", ":") or ensure_ascii or sort_keys:
        return slow
    return orjson_first(slow)


def _standard_encoder(
    ensure_ascii: bool, allow_nan: bool, sort_keys: bool, separators: tuple[str, str]
) -> Callable[[Any], str]:
    """`json_encoder`'s text by the standard library's C encoder."""
    item, key = separators
    fallback = json.JSONEncoder(
        ensure_ascii=ensure_ascii,
        allow_nan=allow_nan,
        sort_keys=sort_keys,
        separators=separators,
        check_circular=False,
    )
    if _MAKE_ENCODER is None:
        return fallback.encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = _MAKE_ENCODER(
        None, fallback.default, quote, None, key, item, sort_keys, False, allow_nan
    )
    join = "".join

    def encoded(value: Any) -> str:
        return join(encode(value, 0))

    return encoded


def orjson_first(fallback: Callable[[Any], str]) -> Callable[[Any], str]:
    """An encoder that gives orjson's compact text (see `compact_json_bytes` for how it
    differs from ``json.dumps``'s), and `fallback`'s text, or its error, for a value orjson
    does not take."""
    dumps = orjson.dumps
    options = _ORJSON_OPTIONS

    def encoded(value: Any) -> str:
        try:
            return dumps(value, option=options).decode()
        except TypeError:  # orjson.JSONEncodeError: the fallback's text, or its error
            return fallback(value)

    return encoded


_COMPACT_SLOW: Final = _standard_encoder(False, False, False, (",", ":"))


def compact_json_bytes(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8 (``json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))`` encoded), made by orjson: the text of a response body, an
    event or a stored JSON column, several times faster than the standard library's.

    The text is the standard library's but for two things. Some floats are written in another
    form of the same number (``1.5e-7`` for ``1.5e-07``, ``0.00001`` for ``1e-05``); NaN and
    the infinities, which JSON does not have, are written as ``null``. What orjson does not
    take (a key that is not a string, an integer past 64 bits, a lone surrogate, a type it
    would write in a form of its own such as a dataclass or a datetime) goes to the standard
    library's encoder, which gives its text or raises its error (`TypeError`, or `ValueError`
    for NaN), and a lone surrogate then fails to encode as UTF-8 (`UnicodeEncodeError`), as
    it always did."""
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:
        return _COMPACT_SLOW(value).encode("utf-8")


# --- storable text ------------------------------------------------------------------------------

#: What replaces a character that cannot be stored: U+FFFD REPLACEMENT CHARACTER.
REPLACEMENT: Final = "\ufffd"

#: A NUL (PostgreSQL's text and JSONB refuse it) or a surrogate code point (not UTF-8).
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")
#: A high surrogate followed by a low one: one character that was split in two.
_SPLIT_PAIR: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _joined(match: re.Match[str]) -> str:
    pair = match.group()
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def storable_text(text: str) -> tuple[str, bool]:
    """`text` as every database and every client can hold it: each NUL and each lone
    surrogate replaced with `REPLACEMENT` (a high and a low surrogate side by side are joined
    into the character they make, silently), and whether anything was replaced. Clean text
    comes back as it is (the same object), found with one scan."""
    if text.isascii():
        if "\x00" not in text:
            return text, False
        return text.replace("\x00", REPLACEMENT), True
    if _UNSTORABLE.search(text) is None:
        return text, False
    joined = _SPLIT_PAIR.sub(_joined, text)
    cleaned = _UNSTORABLE.sub(REPLACEMENT, joined)
    return (cleaned if cleaned != text else text), cleaned != joined


def storable(value: T) -> tuple[T, bool]:
    """`value` with `storable_text` applied to every string in it: a string itself, and the
    keys and values of dicts and the items of lists and tuples at any depth; anything else is
    kept as it is. Returns the value (`value` itself when nothing changed, else a copy of just
    the containers that changed) and whether any character was replaced with `REPLACEMENT`.

    Text from tools, MCP servers, HTTP actions and models goes through it before it is stored,
    so no turn fails on a character its database cannot hold."""
    if isinstance(value, dict | list) and _clean_json(value):
        return value, False
    return _storable(value)


_ENCODER: Final = json_encoder(ensure_ascii=False, separators=(",", ":"))


def _clean_json(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether `value` holds no text to replace, found with one pass of the JSON encoder (in
    C) instead of a walk in Python. The encoder escapes NUL as ``\\u0000`` and leaves
    surrogates as they are; a value it cannot encode, or a text that only looks like the
    escape, is left to the walk."""
    try:
        dumped = _ENCODER(value)
    except (TypeError, ValueError, RecursionError):
        return False
    if "\\u0000" in dumped:
        return False
    return dumped.isascii() or _UNSTORABLE.search(dumped) is None


def _storable(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return _storable_dict(value)
    if isinstance(value, list | tuple):
        replaced = False
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new, hit = _storable(item)
            replaced = replaced or hit
            if items is None and new is not item:
                items = list(value[:index])
            if items is not None:
                items.append(new)
        if items is None:
            return value, replaced
        return (items if isinstance(value, list) else tuple(items)), replaced
    return value, False


def _storable_dict(value: dict[Any, Any]) -> tuple[Any, bool]:
    replaced = False
    pairs: list[tuple[Any, Any]] | None = None
    for index, (key, item) in enumerate(value.items()):
        new_key, key_hit = storable_text(key) if isinstance(key, str) else (key, False)
        new_item, item_hit = _storable(item)
        replaced = replaced or key_hit or item_hit
        if pairs is None and (new_key is not key or new_item is not item):
            pairs = list(value.items())[:index]
        if pairs is not None:
            pairs.append((new_key, new_item))
    return (value if pairs is None else dict(pairs)), replaced


#: Words a tool's name spells that read in capitals (``get_api_key`` → "Get API key").
_CAPITALS: Final = frozenset({"api", "http", "https", "id", "ip", "json", "sms", "url", "uuid"})


def title_from_name(name: str) -> str:
    """A name written for the model (``create_invoice``, ``createInvoice``, ``send-email``)
    as a person reads it ("Create invoice"): words split at ``_``, ``-``, ``.`` and each
    lower-to-upper change, in lower case but the first letter (and the words of
    `_CAPITALS`); a name with no letters or digits stays as it is. The one place a
    person-facing title is made from a name, for a tool that declares no title."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = [w.lower() for w in re.split(r"[\s_.\-]+", spaced) if w]
    if not words:
        return name
    words = [w.upper() if w in _CAPITALS else w for w in words]
    text = " ".join(words)
    return text[0].upper() + text[1:]


# --- a background task's repeated work that may fail for a while ---------------------------


class Failing:
    """What a background task says of its repeated work (a sweep, a renewal, a poll) while the
    work fails, as it may for a while (the database down or restarting, a full disk): the
    first failure with its traceback, the next ones at ``DEBUG`` only, and the first success
    after them that the work goes again. A failure every few seconds does not bury the log,
    and the administrator still reads what failed and when it came back. Call `failed` in the
    ``except`` of a try and `succeeded` after a try that worked."""

    __slots__ = ("_log", "_what", "failing")

    def __init__(self, log: logging.Logger, what: str) -> None:
        self._log = log
        #: The work, as a log line's subject: "the sweep for lapsed turns".
        self._what = what
        self.failing = False

    def failed(self, *, again_s: float | None = None) -> None:
        """The try failed (call it while its exception is handled): said with the traceback
        the first time, at ``DEBUG`` while it goes on failing."""
        if self.failing:
            self._log.debug("%s failed again", self._what, exc_info=True)
            return
        self.failing = True
        every = f" every {again_s:g} s" if again_s is not None else ""
        self._log.warning(
            "%s failed; it is tried again%s, and said again once it works",
            self._what,
            every,
            exc_info=True,
        )

    def succeeded(self) -> None:
        """The try worked: said when the ones before it failed."""
        if self.failing:
            self.failing = False
            self._log.info("%s works again", self._what)
