"""What the routes read of a request without Starlette's general helpers: a body's JSON
(`bodies._loads`: ``json.loads``'s value and errors), a header (`auth.header`:
``request.headers.get``'s value) and the app's state (`edge.AppState`: a `State`'s values)."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import State
from starlette.requests import Request

from handrail.runtime.agent import Agent
from handrail.server import ServerConfig, UserConfig, create_app
from handrail.server.auth import header
from handrail.server.bodies import _loads
from handrail.server.edge import AppState

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


def test_the_app_state_reads_as_a_starlette_state() -> None:
    """`AppState` keeps its values as attributes too (no ``__getattr__`` call to read one),
    the same whether set as an attribute or an item, and gone once deleted either way."""
    state = AppState()
    plain = State()
    for target in (state, plain):
        target.store = "a"
        target["runtime"] = "b"
        target.runtime = "c"
        target["store"] = "d"
    assert (state.store, state.runtime) == (plain.store, plain.runtime) == ("d", "c")
    assert vars(state)["store"] == "d"
    assert vars(state)["runtime"] == "c"
    del state.store
    del state["runtime"]
    assert getattr(state, "store", None) is None
    assert getattr(state, "runtime", None) is None
    assert list(state) == []
    with pytest.raises(KeyError):
        del state.store


def test_the_apps_state_is_an_app_state() -> None:
    config = ServerConfig(
        users=[UserConfig(id="alice", token="t" * 32)], agents=[Agent("assistant")]
    )
    app = create_app(config)
    assert isinstance(app.state, AppState)
    assert vars(app.state)["max_json_bytes"] == app.state.max_json_bytes > 0
