"""Bad input generated from the OpenAPI document: the harness of ``test_fuzz_openapi.py`` and
``bench/reliability.py``.

For each operation of the live ``/openapi.json``, `requests_for` is a Hypothesis strategy of
requests: schemathesis's cases (valid ones and ones around the schema: wrong types, missing and
extra fields), then the same with a value swapped for a hostile one (NUL, lone surrogates, deep
nesting, huge and non-finite numbers, wrong types, long text), raw bodies no JSON library writes
(invalid UTF-8, UTF-16, a BOM, ``NaN``, a 5,000-digit number, 100,000 brackets), hostile path
segments and query values, and, for the turn routes, answers to the pending asks of the seeded
conversations and scripted-model commands whose ask inputs and tool arguments are hostile.

`Fuzzer` sends each request to the app in process and checks it: no 5xx, every error problem
JSON, no traceback in the body or the log, and nothing stored (no row of any table, no blob)
by a request that was refused (4xx). Hypothesis draws in a worker thread while the app's event
loop serves the requests, so no failure is raised inside Hypothesis: each is recorded in
`Figures` and the caller asserts on them (a stateful app makes shrinking meaningless anyway).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from reliability_helpers import blobs, db_state
from schemathesis import GenerationMode
from server_helpers import CONFIRM, TOKENS, Api

from handrail.demo.agent import ANNOUNCEMENT, DATABASE, INVOICE_FORM, PLAN_PICKER, RECEIPT
from handrail.server.paging import encode_cursor
from handrail.store.paging import Position

__all__ = [
    "Figures",
    "Fuzzer",
    "LogCapture",
    "Seeded",
    "fuzz_operations",
    "operations_of",
    "requests_for",
    "seed",
]

BASE: Final = "http://handrail"
#: Stands for the current pending ask's toolCallId of the request's history; filled at send.
PENDING: Final = "\x1bpending-tool-call-id"
NOT_SET: Final = object()

# --- hostile values ---------------------------------------------------------------------------

UNSTORABLE: Final = ["\x00", "\ud83d", "\ude00", "\udfff", "\ud800", "a\x00b", "\ude00\ud83d"]
ODD_TEXT: Final = [
    "",
    " ",
    "\t\r\n",
    "😀",
    "\ud83d\ude00",  # a whole pair, which is fine
    "e\u0301",
    "\u202e",
    "\ufeff",
    "\uffff",
    "%00",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "'; DROP TABLE histories; --",
    "\\u0000",
    "null",
    "x" * 5000,
]
#: Mostly text a database can store (so that requests get past the text check and deeper),
#: sometimes text it cannot.
_any_character = st.one_of(st.characters(codec=None), st.sampled_from(UNSTORABLE))
hostile_text = st.one_of(
    st.text(min_size=1, max_size=12),
    st.sampled_from(ODD_TEXT),
    st.sampled_from(UNSTORABLE),
    st.lists(_any_character, max_size=12).map("".join),
)
hostile_number = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True),
)
hostile_scalar = st.one_of(st.none(), st.booleans(), hostile_number, hostile_text)
hostile_json = st.recursive(
    hostile_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=10,
)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for index in range(depth):
        value = [value] if index % 2 else {"a": value}
    return value


hostile_value = st.one_of(
    hostile_text,
    hostile_json,
    st.sampled_from([40, 63, 64, 65, 200]).map(_nested),
    st.just("y" * 200_000),
)

#: Bodies no JSON library writes.
RAW_BODIES: Final[list[bytes]] = [
    b"",
    b" ",
    b"null",
    b"[]",
    b'"text"',
    b"1",
    b"{",
    b'{"prompt": "hi"',
    b'{"prompt": "hi"}}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    b'{"title": 1' + b"0" * 5_000 + b"}",
    b'{"prompt": "x", "historyId": ' + b"9" * 5_000 + b"}",
    b'{"title": NaN}',
    b'{"title": -Infinity}',
    b'{"prompt": 1e999}',
    b'{"prompt": "\xff\xfe"}',
    b'{"prompt": "\xed\xa0\xbd"}',
    b'{"prompt": "\xc0\x80"}',
    b'{"title": "\x00"}',
    b'\xef\xbb\xbf{"prompt": "hi"}',
    '{"prompt": "hi"}'.encode("utf-16"),
    '{"prompt": "hi"}'.encode("utf-32"),
    b'{"prompt": "a", "prompt": "b"}',
    b'{"title": "a", "title": null}',
    b'{"\\u0000": 1}',
    b'{"prompt": "\\ud83d"}',
    b'{"prompt": "\\udc00\\ud800"}',
    b'{"title": "\\u0000"}',
    b"\x00\x00\x00\x00",
]

#: The content types sent with raw bodies.
RAW_TYPES: Final = [
    "application/json",
    "application/json; charset=utf-16",
    None,
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "multipart/form-data; boundary=b",
]
MULTIPART_TYPES: Final = [
    "multipart/form-data; boundary=b",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    'multipart/form-data; boundary="b\x00"',
    "application/json",
    None,
]


def _part(disposition: bytes, content: bytes = b"hello", end: bytes = b"--b--\r\n") -> bytes:
    return (
        b"--b\r\nContent-Disposition: form-data; " + disposition + b"\r\n"
        b"Content-Type: text/plain\r\n\r\n" + content + b"\r\n" + end
    )


#: Multipart bodies (boundary ``b``): cut, nameless, hostile names, two files, odd headers.
RAW_MULTIPART: Final[list[bytes]] = [
    _part(b'name="file"; filename="a.txt"'),
    _part(b'name="file"; filename="a.txt"', end=b""),
    _part(b'name="file"; filename="a.txt"', end=b"--b"),
    _part(b'name="file"'),
    _part(b'name="file"; filename=""'),
    _part(b'name="file"; filename="."'),
    _part(b'name="file"; filename=".."'),
    _part(b'name="file"; filename="../../etc/passwd"'),
    _part(b'name="file"; filename="a\x00b.txt"'),
    _part(b'name="file"; filename="\xed\xa0\xbd.txt"'),
    _part(b'name="file"; filename="\xff\xfe.txt"'),
    _part(b"name=\"file\"; filename*=UTF-8''%F0%9F%98%80.txt"),
    _part(b'name="file"; filename="' + b"n" * 5000 + b'"'),
    _part(b'name="other"; filename="a.txt"'),
    _part(b'name="file"; filename="a.txt"', end=b"") + _part(b'name="file"; filename="b.txt"'),
    _part(b'name="file"; filename="a.txt"', content=b"\x00" * 1000),
    _part(b'name="file"; filename="a.txt"', content=b"--b\r\n"),
    b"--b--\r\n",
    b"",
    b"--b\r\n\r\n\r\n--b--\r\n",
    b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
]

#: Path segments as sent (already percent-encoded where it matters).
HOSTILE_SEGMENTS: Final = [
    "%00",
    "%ED%A0%BD",
    "%FF%FE",
    "%C0%80",
    "..",
    "%2E%2E",
    "%2F",
    "a" * 3000,
    "%F0%9F%98%80",
    "0" * 24,
    "f" * 24,
    "%0D%0A",
    "%u0000",
    "null",
    "-1",
    "1e309",
    "%25",
    "local:notes",
    "local%3Anotes",
    "local:notes/../x",
]
#: Query values as sent.
HOSTILE_QUERY_VALUES: Final = [
    "0",
    "-1",
    "201",
    "1.5",
    "1e309",
    "99999999999999999999999999",
    "NaN",
    "",
    "0x10",
    "%00",
    "%ED%A0%BD",
    "%FF",
    "%EF%BC%91",  # a full-width digit one
    "%D9%A3",  # an Arabic-Indic digit three
    "a" * 3000,
    "eyJ4IjoxfQ",
    "%7B%7D",
]


#: Times a cursor may name: the ends of what Python, SQLite and PostgreSQL hold, and past them.
CURSOR_MICROS: Final = [
    0,
    -1,
    2**31,
    2**53,
    2**63,
    -(2**63),
    10**40,
    253_402_300_799_999_999,  # 9999-12-31T23:59:59.999999Z
    253_402_300_800_000_000,
    -62_135_596_800_000_000,  # 0001-01-01
    -62_135_596_800_000_001,
]


def forged_cursors(path: str) -> st.SearchStrategy[str]:
    """Cursors shaped like the server's own for alice's list at `path` (so they pass its
    checks of list and caller), naming hostile times and ids."""
    list_name = "pendingAsks" if path.endswith("pendingAsks") else path.rsplit("/", 1)[-1]
    real = encode_cursor(list_name, "alice", Position(at=dt.datetime.now(dt.UTC), id="0" * 24))
    payload = json.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))

    def forge(micros: Any, item_id: Any) -> str:
        forged = [*payload[:3], micros, item_id]
        raw = json.dumps(forged).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    return st.builds(
        forge,
        st.one_of(st.sampled_from(CURSOR_MICROS), st.integers(), hostile_scalar),
        st.one_of(st.just("f" * 24), st.sampled_from(["0" * 24, "F" * 24, ""]), hostile_text),
    )


# --- what gets sent ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Planned:
    """One request to send: `url` is the path and query as sent; the body is `json` (a value,
    serialized at send time, `PENDING` filled in), `content` (bytes as they are) or `files`."""

    operation: str
    method: str
    url: str
    user: str | None = "alice"
    authorization: str | None = None
    json: Any = NOT_SET
    content: bytes | None = None
    files: Any = None
    data: Any = None
    content_type: str | None = None
    pending_in: str | None = None

    def describe(self) -> str:
        if self.json is not NOT_SET:
            body = _dumps(self.json)
        elif self.content is not None:
            body = repr(self.content)
        else:
            body = repr(self.files)
        if len(body) > 300:
            body = body[:300] + f"... ({len(body)} characters)"
        who = self.authorization or self.user
        return f"{self.method} {self.url[:200]} as {who}: {body}"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


@dataclass(frozen=True, kw_only=True)
class Seeded:
    """The data the fuzz starts from: alice's conversations (one paused on each kind of ask), a
    grant, a saved level, a confirmation and a file of hers, and bob's paused conversation."""

    histories: tuple[str, ...]
    others: tuple[str, ...]
    ids: tuple[str, ...]
    connections: tuple[str, ...]


# --- strategies --------------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return out


def _add_key(value: Any, path: tuple[Any, ...], key: str, new: Any) -> Any:
    out = copy.deepcopy(value)
    target = out
    for step in path:
        target = target[step]
    if isinstance(target, dict):
        target[key] = new
    return out


def mutated(value: Any) -> st.SearchStrategy[Any]:
    """`value` with one part swapped for a hostile value, or a hostile key added."""
    paths = list(_paths(value))
    swapped = st.tuples(st.sampled_from(paths), hostile_value).map(
        lambda pick: _replace(value, *pick)
    )
    objects = [p for p in paths if isinstance(_get(value, p), dict)]
    if not objects:
        return swapped
    added = st.tuples(st.sampled_from(objects), hostile_text, hostile_value).map(
        lambda pick: _add_key(value, *pick)
    )
    return st.one_of(swapped, added)


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


#: The scripted model's commands with a valid input each; the fuzz swaps a part for a hostile
#: value, so the input reaches the ask validators and the tools as the model sent it.
COMMANDS: Final[list[tuple[str, Any]]] = [
    ("ask_choice", dict(PLAN_PICKER)),
    ("ask_confirm", dict(CONFIRM)),
    ("ask_markdown", dict(ANNOUNCEMENT)),
    ("ask_form", copy.deepcopy(dict(INVOICE_FORM))),
    ("ask_files", dict(RECEIPT)),
    ("clarify", copy.deepcopy(dict(DATABASE))),
    ("call add_note", {"title": "Groceries", "body": "Milk"}),
    ("call delete_note", {"title": "Old draft"}),
    ("call list_notes", {}),
]


#: The commands that pause a conversation: every kind of ask, and an approval.
PAUSING: Final = [*COMMANDS[:6], COMMANDS[7]]


def _command_prompt(verb: str, value: Any) -> str:
    return f"{verb} {_dumps(value)}"


prompt_text = st.one_of(
    hostile_text,
    st.sampled_from(COMMANDS).flatmap(
        lambda command: mutated(command[1]).map(lambda value: _command_prompt(command[0], value))
    ),
    st.sampled_from(COMMANDS).map(lambda command: _command_prompt(*command)),
)

#: A valid answer's content for each kind of the seeded asks (the form is the demo's invoice,
#: the clarify the demo's database prompts).
VALID_CONTENT: Final[list[dict[str, Any]]] = [
    {"selected": ["team"]},
    {"selected": ["non-consequential"]},
    {"confirmed": True},
    {"confirmed": True, "scope": "once"},
    {"confirmed": True, "scope": "always"},
    {"markdown": "# We're live"},
    {
        "values": {
            "company": "Acme",
            "email": "billing@example.com",
            "seats": 3,
            "start": "2026-10-01",
            "region": "eu",
            "notify": True,
            "notes": "Net 30",
        }
    },
    {"files": [{"dataUrl": "data:text/plain;base64,aGVsbG8=", "filename": "receipt.txt"}]},
    {
        "protocol": "appwrite.clarify/v1",
        "answers": [
            {"id": "name", "kind": "text", "value": "main"},
            {"id": "region", "kind": "choice", "values": ["fra"]},
            {"id": "id_mode", "kind": "choice", "values": ["unique"]},
            {"id": "backups", "kind": "confirm", "value": True},
        ],
    },
]
answer_content = st.one_of(
    st.sampled_from(VALID_CONTENT),
    st.sampled_from(VALID_CONTENT).flatmap(mutated),
    st.sampled_from(VALID_CONTENT).flatmap(mutated),
    hostile_json,
)
answer_envelope = st.fixed_dictionaries(
    {
        "toolCallId": st.one_of(st.just(PENDING), st.just(PENDING), hostile_text),
        "action": st.one_of(
            st.just("accept"), st.sampled_from(["decline", "cancel"]), hostile_scalar
        ),
    },
    optional={"content": answer_content, "reason": hostile_text},
)


def _domain_bodies(path: str, seeded: Seeded) -> st.SearchStrategy[tuple[Any, str | None]]:
    """Bodies of the turn routes that reach the runtime: (body, the history whose pending
    ask PENDING names)."""
    histories = st.sampled_from(seeded.histories + seeded.others)
    if path.endswith("/prompt"):
        answers = histories.flatmap(
            lambda h: answer_envelope.map(lambda a: ({"historyId": h, "askResponse": a}, h))
        )
        prompts = histories.flatmap(
            lambda h: prompt_text.map(lambda text: ({"historyId": h, "prompt": text}, h))
        )
        return st.one_of(
            answers,
            prompts,
            prompt_text.map(lambda text: ({"prompt": text}, None)),
        )
    return st.one_of(
        answer_envelope.map(lambda answer: ({"askResponse": answer}, None)),
        prompt_text.map(lambda text: ({"prompt": text}, None)),
        st.fixed_dictionaries(
            {
                "toolCallId": st.one_of(st.just(PENDING), hostile_text),
                "buttonId": st.one_of(
                    st.sampled_from(["option:team", "confirm", "deny", "cancel"]), hostile_text
                ),
            }
        ).map(lambda body: (body, None)),
    )


def _segment(value: Any, name: str) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return quote(text, safe=":" if name == "connectionId" else "")


@dataclass(frozen=True)
class _Operation:
    method: str
    path: str
    parameters: tuple[tuple[str, str], ...]  # (name, in)
    has_body: bool
    media: str | None
    schema_op: Any
    fields: tuple[str, ...] = ()  # the properties of a JSON body's schema


def operations_of(document: Mapping[str, Any]) -> list[_Operation]:
    """Every operation of an OpenAPI document, with schemathesis's view of it."""
    schema = schemathesis.openapi.from_dict(dict(document))
    by_key = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        by_key[(operation.method.upper(), operation.path)] = operation
    out: list[_Operation] = []
    for path, item in document["paths"].items():
        for method, op in item.items():
            content = op.get("requestBody", {}).get("content", {})
            body_schema = next(iter(content.values()), {}).get("schema", {})
            out.append(
                _Operation(
                    method=method.upper(),
                    path=path,
                    parameters=tuple((p["name"], p["in"]) for p in op.get("parameters", [])),
                    has_body="requestBody" in op,
                    media=next(iter(content), None),
                    schema_op=by_key[(method.upper(), path)],
                    fields=tuple(_resolve(document, body_schema).get("properties", {})),
                )
            )
    return out


def _resolve(document: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        resolved: Mapping[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return resolved
    return schema


def _from_case(operation: _Operation, case: Any) -> dict[str, Any]:
    kwargs = case.as_transport_kwargs(base_url=BASE)
    out: dict[str, Any] = {
        "path": {name: case.path_parameters.get(name) for name, where in operation.parameters}
        if case.path_parameters
        else {},
        "query": dict(case.query or {}),
    }
    if "json" in kwargs:
        out["json"] = kwargs["json"]
    if kwargs.get("files") is not None:
        out["files"] = kwargs["files"]
        out["data"] = kwargs.get("data")
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        out["content"] = data if isinstance(data, bytes) else str(data).encode()
    content_type = kwargs.get("headers", {}).get("Content-Type")
    if content_type and "files" not in out:
        out["content_type"] = content_type
    return out


def requests_for(operation: _Operation, seeded: Seeded) -> st.SearchStrategy[Planned]:
    """Requests for one operation (see the module docstring)."""
    cases = st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE]).flatmap(
        lambda mode: operation.schema_op.as_strategy(generation_mode=mode)
    )
    path_names = [name for name, where in operation.parameters if where == "path"]
    query_names = [name for name, where in operation.parameters if where == "query"]
    ids = list(seeded.ids) + list(seeded.connections)

    @st.composite
    def planned(draw: st.DrawFn) -> Planned:
        base = _from_case(operation, draw(cases))
        path = operation.path
        for name in path_names:
            choice = draw(st.sampled_from(["case", "id", "id", "hostile"]))
            if choice == "id":
                segment = _segment(draw(st.sampled_from(ids)), name)
            elif choice == "hostile":
                segment = draw(st.sampled_from(HOSTILE_SEGMENTS))
            else:
                segment = _segment(base["path"].get(name, "x"), name)
            path = path.replace("{" + name + "}", segment or "x")
        pairs = [
            f"{quote(str(k), safe='')}={quote(str(v), safe='')}" for k, v in base["query"].items()
        ]
        if query_names and draw(st.booleans()):
            name = draw(st.sampled_from(query_names))
            pairs.append(f"{name}={draw(st.sampled_from(HOSTILE_QUERY_VALUES))}")
        if "cursor" in query_names and draw(st.booleans()):
            pairs.append("cursor=" + draw(forged_cursors(operation.path)))
        url = path + ("?" + "&".join(pairs) if pairs else "")

        body: dict[str, Any] = {
            k: v for k, v in base.items() if k in ("json", "content", "files", "data")
        }
        pending_in: str | None = None
        content_type = base.get("content_type")
        json_body = operation.has_body and operation.media == "application/json"
        kind = draw(
            st.sampled_from(
                ["domain", "mutated", "domain", "raw", "hostile", "case"]
                if json_body
                else ["raw", "case"]
                if operation.has_body
                else ["case", "case", "case", "raw"]
            )
        )
        if kind == "mutated" and "json" in base:
            body = {"json": draw(mutated(base["json"]))}
        elif kind == "hostile":
            body = {"json": draw(hostile_value)}
        elif kind == "raw" and operation.media == "multipart/form-data":
            body = {"content": draw(st.sampled_from(RAW_MULTIPART))}
            content_type = draw(st.sampled_from(MULTIPART_TYPES))
        elif kind == "raw":
            body = {"content": draw(st.sampled_from(RAW_BODIES))}
            content_type = draw(st.sampled_from(RAW_TYPES))
        elif (
            kind == "domain"
            and operation.fields
            and not operation.path.endswith(("/prompt", "/turn"))
        ):
            # Each field of the body's schema with a hostile value.
            fields = st.sampled_from(operation.fields)
            body = {"json": draw(st.dictionaries(fields, hostile_value, min_size=1))}
        elif kind == "domain" and operation.path.endswith(("/prompt", "/turn")):
            value, pending_in = draw(_domain_bodies(operation.path, seeded))
            body = {"json": value}
            if operation.path.endswith("/turn"):
                history = draw(st.sampled_from(seeded.histories + seeded.others))
                path = operation.path.replace("{id}", history)
                url = path
                pending_in = history
        if "json" in body:
            content_type = "application/json"

        who = draw(st.sampled_from(["alice"] * 6 + ["bob", "root", "anonymous", "bad-token"]))
        return Planned(
            operation=f"{operation.method} {operation.path}",
            method=operation.method,
            url=url,
            user=None if who in ("anonymous", "bad-token") else who,
            authorization="Bearer not-a-token" if who == "bad-token" else None,
            json=body.get("json", NOT_SET),
            content=body.get("content"),
            files=body.get("files"),
            data=body.get("data"),
            content_type=content_type,
            pending_in=pending_in,
        )

    return planned()


# --- checking ----------------------------------------------------------------------------------

_TRACEBACK: Final = re.compile(r'Traceback \(most recent call last\)|File "[^"]+", line \d+')


class LogCapture(logging.Handler):
    """Every log record at ERROR or above, or with an exception, while attached."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)

    def __enter__(self) -> LogCapture:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)


@dataclass
class Figures:
    """What a fuzz run found. Every list holds one description per failed request."""

    cases: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    not_problems: list[str] = field(default_factory=list)
    stored_by_refused: list[str] = field(default_factory=list)
    max_latency: float = 0.0
    slowest: str = ""
    unsendable: int = 0

    @property
    def failures(self) -> list[str]:
        return self.server_errors + self.tracebacks + self.not_problems + self.stored_by_refused

    def merge(self, other: Figures) -> None:
        self.cases += other.cases
        self.unsendable += other.unsendable
        self.by_status.update(other.by_status)
        self.by_operation.update(other.by_operation)
        self.server_errors += other.server_errors
        self.tracebacks += other.tracebacks
        self.not_problems += other.not_problems
        self.stored_by_refused += other.stored_by_refused
        if other.max_latency > self.max_latency:
            self.max_latency, self.slowest = other.max_latency, other.slowest

    def report(self, limit: int = 5) -> str:
        lines = [f"{self.cases} cases, statuses {dict(sorted(self.by_status.items()))}"]
        for name in ("server_errors", "tracebacks", "not_problems", "stored_by_refused"):
            found: list[str] = getattr(self, name)
            if found:
                lines.append(f"{name}: {len(found)}")
                lines.extend("  " + item for item in found[:limit])
        return "\n".join(lines)


def _fill(value: Any, tool_call_id: str) -> Any:
    if value == PENDING:
        return tool_call_id
    if isinstance(value, dict):
        return {k: _fill(v, tool_call_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, tool_call_id) for v in value]
    return value


def _diff(before: dict[str, list[str]], after: dict[str, list[str]]) -> str:
    changes = []
    for table in sorted(set(before) | set(after)):
        old, new = set(before.get(table, [])), set(after.get(table, []))
        if old != new:
            added = sorted(new - old)[:2]
            removed = sorted(old - new)[:2]
            changes.append(f"{table}: +{added} -{removed}")
    return "; ".join(changes)[:600]


class Fuzzer:
    """Sends planned requests to the app in process and checks each one."""

    def __init__(self, api: Api, blob_dir: Path, logs: LogCapture) -> None:
        self.api = api
        self.blob_dir = blob_dir
        self.logs = logs
        transport = httpx.ASGITransport(api.app, raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url=BASE, timeout=120)
        self.figures = Figures()
        self._pauses = 0

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _pending(self, history_id: str | None) -> str:
        """The toolCallId of the ask `history_id` waits on; one that waits on none is paused
        again first (by its owner, on the next of the `COMMANDS` that ask), so that answers
        keep meeting live asks."""
        if history_id is None:
            return "call_none"
        history = await self.api.store.histories.get(history_id)
        if history is None:
            return "call_none"
        if history.pending_ask is None:
            verb, value = PAUSING[self._pauses % len(PAUSING)]
            self._pauses += 1
            body = {"historyId": history_id, "prompt": _command_prompt(verb, value)}
            await self.api.prompt(body, user=history.owner_id)
            history = await self.api.store.histories.get(history_id)
            if history is None or history.pending_ask is None:
                return "call_none"
        return history.pending_ask.tool_call_id

    def _request(self, planned: Planned, tool_call_id: str) -> httpx.Request:
        headers: dict[str, str] = {}
        if planned.authorization is not None:
            headers["Authorization"] = planned.authorization
        elif planned.user is not None:
            headers["Authorization"] = f"Bearer {TOKENS[planned.user]}"
        if planned.content_type is not None:
            headers["Content-Type"] = planned.content_type
        content = planned.content
        if planned.json is not NOT_SET:
            content = _dumps(_fill(planned.json, tool_call_id)).encode()
        return self.client.build_request(
            planned.method,
            planned.url,
            headers=headers,
            content=content,
            files=planned.files,
            data=planned.data,
        )

    async def send(self, planned: Planned) -> None:
        figures = self.figures
        tool_call_id = await self._pending(planned.pending_in)
        try:
            request = self._request(planned, tool_call_id)
            request.read()
        except (TypeError, ValueError, AttributeError):
            # A case httpx cannot encode (a number as a multipart field): never sent.
            figures.unsendable += 1
            return
        before = await db_state(self.api)
        stored_before = blobs(self.blob_dir)
        seen_logs = len(self.logs.records)
        started = time.perf_counter()
        try:
            response = await self.client.send(request)
        except Exception as exc:
            figures.cases += 1
            figures.server_errors.append(f"{type(exc).__name__}: {exc} <- {planned.describe()}")
            return
        elapsed = time.perf_counter() - started
        status = response.status_code
        figures.cases += 1
        figures.by_status[status] += 1
        figures.by_operation[planned.operation] += 1
        if elapsed > figures.max_latency:
            figures.max_latency, figures.slowest = elapsed, planned.describe()
        what = f"{status} <- {planned.describe()}"
        if status >= 500:
            figures.server_errors.append(f"{what}: {response.text[:300]}")
        if _TRACEBACK.search(response.text):
            figures.tracebacks.append(f"in the body: {what}")
        for record in self.logs.records[seen_logs:]:
            figures.tracebacks.append(f"logged {record.getMessage()[:200]!r}: {what}")
        if status >= 400 and not _is_problem(response):
            figures.not_problems.append(f"{what}: {response.text[:200]}")
        if 400 <= status < 500:
            after = await db_state(self.api)
            if after != before:
                figures.stored_by_refused.append(f"{what}: {_diff(before, after)}")
            if blobs(self.blob_dir) != stored_before:
                figures.stored_by_refused.append(f"a blob: {what}")


def _is_problem(response: httpx.Response) -> bool:
    if response.headers.get("content-type") != "application/problem+json":
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and body.get("status") == response.status_code
        and isinstance(body.get("title"), str)
        and body.get("requestId") == response.headers.get("x-request-id")
    )


def run_examples(
    strategy: st.SearchStrategy[Planned], examples: int, submit: Callable[[Planned], None]
) -> None:
    """Draw `examples` requests from `strategy` and `submit` each (in this thread)."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def one(planned: Planned) -> None:
        submit(planned)

    one()


async def fuzz_operations(
    fuzzer: Fuzzer,
    document: Mapping[str, Any],
    seeded: Seeded,
    examples: int,
    *,
    deadline: float | None = None,
) -> list[str]:
    """`examples` requests for every operation of `document`; returns the operations. Past
    `deadline` (a `time.monotonic` time) nothing more is sent."""
    loop = asyncio.get_running_loop()

    def submit(planned: Planned) -> None:
        if deadline is not None and time.monotonic() > deadline:
            return
        asyncio.run_coroutine_threadsafe(fuzzer.send(planned), loop).result(timeout=300)

    names = []
    # Deletes last, so that the conversations they may delete serve every other operation.
    operations = sorted(operations_of(document), key=lambda o: o.method == "DELETE")
    for operation in operations:
        names.append(f"{operation.method} {operation.path}")
        await asyncio.to_thread(run_examples, requests_for(operation, seeded), examples, submit)
    return names


# --- the data to start from --------------------------------------------------------------------


async def seed(api: Api) -> Seeded:
    """Alice's conversations paused on every kind of ask (and an approval), a grant, a saved
    level, a confirmation and an uploaded file of hers; bob's paused conversation."""
    response = await api.request(
        "PUT", "/permissions/local:notes", json={"level": "non-consequential"}
    )
    assert response.status_code == 200, response.text
    histories = []
    for verb, value in PAUSING:
        stream = await api.say(_command_prompt(verb, value))
        assert stream.done.get("pendingAsk"), (verb, stream.events)
        histories.append(stream.history_id)
    granted = await api.say(_command_prompt("call delete_note", {"title": "Old draft"}))
    answered = await api.answer(
        granted.history_id,
        granted.ask["toolCallId"],
        {"action": "accept", "content": {"confirmed": True, "scope": "conversation"}},
    )
    assert answered.status == 200, answered.problem
    grants = (await api.get("/grants")).json()["data"]
    assert grants, "the approval made no grant"
    upload = await api.request(
        "POST", "/files/upload", files={"file": ("receipt.txt", b"paid", "text/plain")}
    )
    assert upload.status_code in (200, 201), upload.text
    confirmation = await api.store.confirmations.create(
        history_id=histories[0],
        user_id="alice",
        connection_id="http:booking",
        tool_name="book_slot",
        tool_call_id="call_seeded",
        request={"method": "POST", "path": "/bookings"},
        digest="0" * 64,
        preview={"title": "Book a table"},
        expires_at=_in_an_hour(),
    )
    bobs = await api.prompt({"prompt": _command_prompt(*COMMANDS[0])}, user="bob")
    assert bobs.status == 200, bobs.problem
    others = (bobs.history_id,)
    ids = (
        *histories,
        granted.history_id,
        *others,
        grants[0]["id"],
        confirmation.id,
        upload.json()["data"]["id"],
    )
    return Seeded(
        histories=(*histories, granted.history_id),
        others=others,
        ids=ids,
        connections=("local:notes", "local%3Anotes", "http:booking"),
    )


def _in_an_hour() -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
