"""What the routes read of a request without Starlette's general helpers: a body's JSON
(`bodies._loads`: ``json.loads``'s value and errors) and a header (`auth.header`:
``request.headers.get``'s value)."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from handrail.server.auth import header
from handrail.server.bodies import _loads

BODIES: list[bytes] = [
    b'{"prompt": "hi"}',
    b"  [1, 2.5, null]  ",
    b"1",
    b"12",
    b"",
    b"{",
    b'{"a": 1} x',
    b"\xff\xfe",
    b"\xef\xbb\xbf{}",
    codecs.BOM_UTF8 + b'{"a": "\xc3\xa9"}',
    '{"a": "é"}'.encode("utf-16"),
    '{"a": "é"}'.encode("utf-16-le"),
    '{"a": "é"}'.encode("utf-16-be"),
    '{"a": "é"}'.encode("utf-32"),
    '{"a": "é"}'.encode("utf-32-le"),
    b'{"a": "\xc3"}',  # cut UTF-8
    b'{"a": "\xed\xa0\xbd"}',  # a surrogate, as surrogatepass reads it
    b'{"a": "\\ud83d"}',
    "\u00ef\u00bb{}".encode("utf-8"),  # not a byte order mark: the UTF-8 of two letters
]


def _outcome(call: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", call(raw)
    except Exception as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("raw", BODIES)
def test_a_body_reads_as_json_loads_reads_it(raw: bytes) -> None:
    assert _outcome(_loads, raw) == _outcome(json.loads, raw)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=12) | st.text(max_size=12).map(lambda t: t.encode("utf-8")))
def test_any_bytes_read_as_json_loads_reads_them(raw: bytes) -> None:
    assert _outcome(_loads, raw) == _outcome(json.loads, raw)


def _request(headers: list[tuple[bytes, bytes]]) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"authorization", b"Bearer x")],
        [(b"content-length", b"12"), (b"authorization", b"Bearer y")],
        [(b"authorization", b"first"), (b"authorization", b"second")],
        [(b"authorization", b"caf\xe9")],  # latin-1, as Starlette reads it
        [(b"authorizations", b"no")],
    ],
)
def test_a_header_reads_as_starlette_reads_it(headers: list[tuple[bytes, bytes]]) -> None:
    for name in ("authorization", "content-length", "x-handrail-via"):
        assert header(_request(headers), name.encode()) == _request(headers).headers.get(name)
