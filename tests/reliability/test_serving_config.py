"""The settings of the request limits (YAML, environment, mistakes), that both servers the
command line runs, ``handrail serve`` and ``handrail demo``, get the connection guards, and that
both listen before anything starts: an address in use stops them at once, with the way
forward."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import uvicorn

from demo_server import free_port
from handrail.cli import main
from handrail.errors import ConfigError
from handrail.server.config import ServerConfig
from handrail.server.serving import (
    YOUNG_COLLECTION_AFTER,
    ConnectionLimits,
    GuardedProtocol,
    Server,
    listen,
)

BASE: dict[str, Any] = {
    "users": [{"id": "alice", "token": "alice-token"}],
    "agents": [{"name": "helper"}],
}


def test_the_limits_come_from_the_file_then_the_environment() -> None:
    config = ServerConfig.from_mapping(
        {**BASE, "max_json_bytes": 2048, "header_timeout": 0.5, "max_connections": 9},
        env={
            "HANDRAIL_BODY_TIMEOUT": "2.5",
            "HANDRAIL_MAX_CONNECTIONS": "7",
            "HANDRAIL_MAX_HEADER_BYTES": "9000",
            "HANDRAIL_MAX_JSON_BYTES": " ",  # blank: ignored
        },
    )
    assert config.max_json_bytes == 2048
    assert config.header_timeout == 0.5
    assert config.body_timeout == 2.5
    assert config.max_connections == 7
    assert config.max_header_bytes == 9000
    assert ConnectionLimits.of(config) == ConnectionLimits(
        max_header_bytes=9000, header_timeout=0.5, body_timeout=2.5, max_connections=7
    )


def test_the_defaults() -> None:
    config = ServerConfig.from_mapping(BASE, env={})
    assert (config.max_json_bytes, config.max_header_bytes) == (1024 * 1024, 64 * 1024)
    assert (config.header_timeout, config.body_timeout, config.max_connections) == (10, 30, 1000)
    # Ten files of the 10 MB upload cap as base64, plus 1 MiB.
    assert config.max_files_answer_bytes == 10485760 * 10 * 4 // 3 + 1024 * 1024
    small = ServerConfig.from_mapping(
        {**BASE, "max_upload_bytes": 1, "max_json_bytes": 5 << 20}, env={}
    )
    assert small.max_files_answer_bytes == 5 << 20  # never below the JSON cap


@pytest.mark.parametrize(
    ("data", "env", "message"),
    [
        ({"max_json_bytes": 0}, {}, "max_json_bytes: must be a positive whole number"),
        ({"max_header_bytes": "big"}, {}, "max_header_bytes: must be a positive whole number"),
        ({"max_connections": True}, {}, "max_connections: must be a positive whole number"),
        ({"header_timeout": 0}, {}, "header_timeout: must be a positive number of seconds"),
        ({"body_timeout": "soon"}, {}, "body_timeout: must be a positive number of seconds"),
        ({"body_timeout": float("inf")}, {}, "body_timeout: must be a positive number"),
        ({}, {"HANDRAIL_HEADER_TIMEOUT": "-1"}, "HANDRAIL_HEADER_TIMEOUT: must be a positive"),
        ({}, {"HANDRAIL_MAX_JSON_BYTES": "1MiB"}, "HANDRAIL_MAX_JSON_BYTES: must be a positive"),
    ],
)
def test_a_bad_limit_stops_the_start_up(
    data: dict[str, Any], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        ServerConfig.from_mapping({**BASE, **data}, env=env)
    assert str(caught.value).startswith(message)


def test_a_bad_limit_in_python_is_refused_too() -> None:
    good = ServerConfig.from_mapping(BASE, env={})
    with pytest.raises(ConfigError, match="max_connections: must be a positive whole number"):
        ServerConfig(users=good.users, agents=good.agents, max_connections=0)
    with pytest.raises(ConfigError, match="header_timeout: must be a positive number"):
        ServerConfig(users=good.users, agents=good.agents, header_timeout=-0.5)


class FakeServer:
    """Stands in for the server class (`serving.Server`, a uvicorn.Server): keeps the config
    and the addresses of the sockets it was given, serves nothing."""

    configs: ClassVar[list[Any]] = []
    listened: ClassVar[list[Any]] = []

    def __init__(self, config: Any) -> None:
        self.config = config
        self.started = True
        self.should_exit = False
        FakeServer.configs.append(config)

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        for sock in sockets or []:
            FakeServer.listened.append(sock.getsockname())
            sock.close()


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    FakeServer.configs = []
    FakeServer.listened = []
    monkeypatch.setattr("handrail.server.serving.Server", FakeServer)
    for name in ("HANDRAIL_MODEL", "HANDRAIL_CONFIG", "HANDRAIL_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield FakeServer.configs
    # The commands configure handrail's loggers for the process they run in (this one).
    handrail_log = logging.getLogger("handrail")
    handrail_log.handlers.clear()
    handrail_log.setLevel(logging.NOTSET)


def test_handrail_serve_runs_the_guarded_protocol(
    fake_server: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HANDRAIL_TOKEN", "serve-token-0123456789")
    monkeypatch.setenv("HANDRAIL_HEADER_TIMEOUT", "3")
    monkeypatch.setenv("HANDRAIL_MAX_CONNECTIONS", "12")
    port = free_port()
    assert main(["serve", "--port", str(port)]) == 0
    [config] = fake_server
    assert issubclass(config.http, GuardedProtocol)
    assert config.http.limits.header_timeout == 3
    assert config.http.limits.max_connections == 12
    assert config.ws == "none"
    assert config.port == port
    assert FakeServer.listened == [("127.0.0.1", port)]


def test_handrail_demo_runs_the_guarded_protocol(
    fake_server: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    database = tmp_path / "demo" / "handrail.db"
    port = free_port()
    assert main(["demo", "--no-browser", "--database", str(database), "--port", str(port)]) == 0
    [config] = fake_server
    assert issubclass(config.http, GuardedProtocol)
    assert config.http.limits == ConnectionLimits()
    assert config.port == port
    assert FakeServer.listened == [("127.0.0.1", port)]


@pytest.fixture
def taken_port() -> Any:
    """A port of 127.0.0.1 another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_a_port_in_use_stops_serve_before_it_starts(
    fake_server: list[Any],
    taken_port: int,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HANDRAIL_TOKEN", "serve-token-0123456789")
    assert main(["serve", "--port", str(taken_port)]) == 2
    assert capsys.readouterr().err == (
        f"handrail serve: Cannot listen on 127.0.0.1:{taken_port}: another program listens "
        "there (another handrail, perhaps). Stop it, or choose another port with --port (or "
        "the port setting).\n"
    )
    assert fake_server == []  # nothing was served
    assert list(tmp_path.iterdir()) == []  # nor the database made


def test_a_port_in_use_stops_the_demo_before_it_opens_its_database(
    fake_server: list[Any],
    taken_port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = tmp_path / "demo" / "handrail.db"
    assert (
        main(["demo", "--no-browser", "--database", str(database), "--port", str(taken_port)]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"handrail demo: Cannot listen on 127.0.0.1:{taken_port}: "), err
    assert "choose another port with --port" in err
    assert fake_server == []
    assert not database.exists()


def test_an_address_that_cannot_be_listened_on_says_why() -> None:
    with pytest.raises(ConfigError, match=re.escape("the host 'nosuchhost.invalid' is not known")):
        listen("nosuchhost.invalid", free_port())
    # 192.0.2.1 (TEST-NET-1) is no address of this machine.
    with pytest.raises(ConfigError, match=re.escape("not one of this machine's. Give one of its")):
        listen("192.0.2.1", free_port())
    # Every address of a name that has several (localhost: 127.0.0.1, and ::1 where it is).
    port = free_port()
    sockets = listen("localhost", port)
    try:
        assert sockets
        assert {sock.getsockname()[1] for sock in sockets} == {port}
    finally:
        for sock in sockets:
            sock.close()


async def test_the_server_freezes_the_heap_once_the_app_has_started() -> None:
    """`serving.Server` (what ``handrail serve`` runs) moves what the start-up left alive out
    of the collector's reach once the app's lifespan ran, not before."""
    at_startup: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "lifespan"
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                at_startup.append(gc.get_freeze_count())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    gc.unfreeze()
    thresholds = gc.get_threshold()
    server = Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.01)
        frozen = gc.get_freeze_count()
        young = gc.get_threshold()[0]
        server.should_exit = True
        await task
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert at_startup == [0]
    assert frozen > 0
    assert young == YOUNG_COLLECTION_AFTER


def test_a_database_that_cannot_be_opened_stops_serve_before_it_starts(
    fake_server: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # the upload folder's default is relative: handrail-files
    port = free_port()  # nothing listens there
    config = tmp_path / "handrail.yaml"
    config.write_text(
        "users: [{id: alice, token: alice-token-0123456789}]\n"
        "agents: [{name: helper, asks: true}]\n"
        f"database_url: postgresql://handrail:a-secret-pw@127.0.0.1:{port}/app\n"
        "database_wait: 0.6\n"
    )
    assert main(["serve", "--config", str(config), "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    # Waited for (a server still starting refuses connections too), said once, then refused.
    assert err.startswith(
        f"WARNING:  handrail.store: PostgreSQL at postgresql://handrail:***@127.0.0.1:{port}/app "
        "does not accept connections yet ([Errno 111] Connect call failed"
    ), err
    assert err.count("does not accept connections yet") == 1, err
    refused = err[err.index("handrail serve: ") :]
    assert refused.startswith(
        f"handrail serve: Could not open the database postgresql://handrail:***@127.0.0.1:{port}"
        "/app: [Errno 111] Connect call failed"
    ), err
    assert re.search(r"\(after waiting \d+ s for it to accept connections\)", refused)
    assert err.endswith(
        "(the database must exist: createdb <name>).\n"
        "  (the database is the config's database_url, or HANDRAIL_DATABASE_URL)\n"
    ), err
    assert "a-secret-pw" not in err
    assert "Traceback" not in err
    assert fake_server == []


def test_a_database_a_newer_handrail_made_stops_the_demo(
    fake_server: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "demo" / "handrail.db"
    args = ["demo", "--no-browser", "--database", str(database)]
    assert main([*args, "--port", str(free_port()), "--log-level", "info"]) == 0
    first = capsys.readouterr().err
    # Opening a new database says so, in the server's log format (at the info level).
    assert "INFO:     handrail.store: creating the database's tables (schema revision" in first
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0099'")
    connection.close()
    fake_server.clear()
    assert main([*args, "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"handrail demo: The database sqlite:///{database} has handrail's schema at revision "
        "'0099', which this handrail does not know"
    ), err
    assert "a newer handrail made it" in err
    assert "Traceback" not in err
    assert fake_server == []


def test_a_secret_key_that_is_no_key_stops_serve_before_it_starts(
    fake_server: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HANDRAIL_TOKEN", "serve-token-0123456789")
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", "not-a-key")
    assert main(["serve", "--port", str(free_port())]) == 2
    assert capsys.readouterr().err.startswith(
        "handrail serve: HANDRAIL_SECRET_KEY is not a Fernet key (32 bytes as URL-safe base64). "
        "Set HANDRAIL_SECRET_KEY to a key made with `handrail secret-key`"
    )
    assert fake_server == []
    assert list(tmp_path.iterdir()) == []  # no database made


async def _start_up(app: Any) -> list[dict[str, Any]]:
    """Run `app`'s lifespan start-up as a server does: what it sent back."""
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop()
        await asyncio.Event().wait()  # never a shutdown: the start-up fails first
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    with pytest.raises(Exception):  # noqa: B017, PT011 (re-raised after it is reported)
        await app(scope, receive, send)
    return sent


async def test_a_start_up_that_fails_on_a_config_error_reports_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An app served by another program (or a key that goes bad between check and start):
    # the server's log says the message, which names the way forward, not a traceback.
    from handrail.server.app import create_app

    config = ServerConfig.from_mapping(
        {**BASE, "database_url": f"sqlite:///{tmp_path / 'h.db'}"}, env={}
    )
    monkeypatch.setenv("HANDRAIL_SECRET_KEY", "not-a-key")
    [failed] = await _start_up(create_app(config))
    assert failed["type"] == "lifespan.startup.failed"
    assert failed["message"].startswith("HANDRAIL_SECRET_KEY is not a Fernet key")

    # Any other error keeps its traceback, for whoever has to fix it.
    monkeypatch.delenv("HANDRAIL_SECRET_KEY")

    async def broken(*_args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("handrail.server.app.ConnectionHub.start", broken)
    [failed] = await _start_up(create_app(config))
    assert failed["message"].startswith("Traceback (most recent call last):")
    assert failed["message"].rstrip().endswith("RuntimeError: a bug")


def test_an_upload_folder_that_cannot_be_used_stops_serve_before_it_starts(
    fake_server: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    config = tmp_path / "handrail.yaml"
    config.write_text(
        "users: [{id: alice, token: alice-token-0123456789}]\n"
        "agents: [{name: helper, asks: true}]\n"
        f"database_url: sqlite:///{tmp_path / 'handrail.db'}\n"
        f"blob_dir: {tmp_path / 'a-file' / 'files'}\n"
    )
    assert main(["serve", "--config", str(config), "--port", str(free_port())]) == 2
    assert capsys.readouterr().err == (
        f"handrail serve: The upload folder {tmp_path / 'a-file' / 'files'} cannot be used: Not "
        "a directory. Give a folder this user may create and write in.\n"
        "  (the upload folder is the config's blob_dir, or HANDRAIL_BLOB_DIR)\n"
    )
    assert fake_server == []
