"""The server's configuration (YAML, environment overrides, errors that name the field) and
``handrail serve``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_helpers import config_for
from sqlalchemy import text

from handrail import __version__
from handrail.cli import main
from handrail.errors import ConfigError
from handrail.runtime.agent import Agent
from handrail.server import create_app
from handrail.server.config import ServerConfig, UserConfig, default_config, load_config

GOOD = """
database_url: sqlite:///x.db
blob_dir: files
api_prefix: /api/
model: scripted
host: 0.0.0.0
port: 9000
max_upload_bytes: 2048
users:
  - {id: alice, token: alice-secret, admin: true}
  - {id: bob, token_env: BOB_TOKEN}
agents:
  - name: helper
    instructions: Be brief.
    asks: {kinds: [choice, confirm], maxFileSizeBytes: 5000}
  - {name: quiet, asks: false, model: "anthropic:claude-sonnet-4-5"}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "handrail.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_full_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD), env={"BOB_TOKEN": "bob-secret"})
    assert config.database_url == "sqlite:///x.db"
    assert config.blob_dir == Path("files")
    assert config.api_prefix == "/api"
    assert config.model == "scripted"
    assert (config.host, config.port) == ("0.0.0.0", 9000)
    assert config.upload_cap == 2048
    assert config.users == (
        UserConfig(id="alice", token="alice-secret", admin=True),
        UserConfig(id="bob", token="bob-secret"),
    )
    helper, quiet = config.agents
    assert helper.name == "helper"
    assert helper.instructions == "Be brief."
    assert helper.asks is not None
    assert helper.asks.kinds == ("choice", "confirm")
    assert helper.asks.max_file_size_bytes == 5000
    assert quiet.asks is None
    assert quiet.model == "anthropic:claude-sonnet-4-5"
    resolved = config.resolved_agents()
    assert [a.model for a in resolved] == ["scripted", "anthropic:claude-sonnet-4-5"]
    assert helper.model is None  # the caller's agent is left as it is
    assert "alice-secret" not in repr(config)


def test_defaults(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, "users: [{id: a, token: t}]\nagents: [{name: x}]\n"), env={}
    )
    assert config.database_url == "sqlite:///handrail.db"
    assert config.blob_dir is None
    assert config.api_prefix == "/api"
    assert config.model == "scripted"
    assert (config.host, config.port) == ("127.0.0.1", 8000)
    assert config.upload_cap == 10 * 1024 * 1024
    assert config.agents[0].asks is not None
    assert config.asks_enabled
    assert config.sqlite_synchronous == "FULL"
    assert config.database_wait == 30


@pytest.mark.parametrize(("value", "expected"), [("''", ""), ("/", ""), ("/v1/", "/v1")])
def test_api_prefix_forms(tmp_path: Path, value: str, expected: str) -> None:
    text = f"users: [{{id: a, token: t}}]\nagents: [{{name: x}}]\napi_prefix: {value}\n"
    assert load_config(write(tmp_path, text), env={}).api_prefix == expected


def test_upload_cap_is_the_largest_agent_cap() -> None:
    config = ServerConfig(
        users=[UserConfig(id="a", token="t")],
        agents=[
            Agent("one", asks={"maxFileSizeBytes": 100}),
            Agent("two", asks={"maxFileSizeBytes": 300}),
            Agent("three", asks=False),
        ],
    )
    assert config.upload_cap == 300


def test_environment_overrides(tmp_path: Path) -> None:
    env = {
        "HANDRAIL_DATABASE_URL": "postgresql://app@db/handrail",
        "HANDRAIL_MODEL": "openai:gpt-4.1-mini",
        "HANDRAIL_BLOB_DIR": "/srv/files",
        "HANDRAIL_API_PREFIX": "/v2",
        "HANDRAIL_HOST": "::1",
        "HANDRAIL_PORT": "8123",
        "HANDRAIL_SQLITE_SYNCHRONOUS": "normal",
        "HANDRAIL_DATABASE_WAIT": "0",
        "BOB_TOKEN": "bob-secret",
    }
    config = load_config(write(tmp_path, GOOD), env=env)
    assert config.sqlite_synchronous == "NORMAL"
    assert config.database_wait == 0
    assert config.database_url == "postgresql://app@db/handrail"
    assert config.model == "openai:gpt-4.1-mini"
    assert config.blob_dir == Path("/srv/files")
    assert config.api_prefix == "/v2"
    assert (config.host, config.port) == ("::1", 8123)


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("users: [{id: a, token: t}]\n", {}, "agents: required"),
        ("agents: [{name: x}]\n", {}, "users: required"),
        ("users: []\nagents: [{name: x}]\n", {}, "users: at least one user"),
        ("users: [{id: a, token: t}]\nagents: []\n", {}, "agents: at least one agent"),
        (
            "users: [{id: a, token: t}, {id: b}]\nagents: [{name: x}]\n",
            {},
            "users[1].token: required",
        ),
        ("users: [{token: t}]\nagents: [{name: x}]\n", {}, "users[0].id: required"),
        (
            "users: [{id: a, token: t, tokn: x}]\nagents: [{name: x}]\n",
            {},
            "users[0].tokn: unknown setting",
        ),
        (
            "users: [{id: a, token_env: NOPE}]\nagents: [{name: x}]\n",
            {},
            "users[0].token_env: the environment variable NOPE is not set",
        ),
        (
            "users: [{id: a, token: t, token_env: X}]\nagents: [{name: x}]\n",
            {"X": "y"},
            "users[0]: give token or token_env, not both",
        ),
        (
            "users: [{id: a, token: t}, {id: a, token: u}]\nagents: [{name: x}]\n",
            {},
            "users[1].id: 'a' is used twice",
        ),
        (
            "users: [{id: a, token: t}, {id: b, token: t}]\nagents: [{name: x}]\n",
            {},
            "users[1].token: the same token",
        ),
        ("users: [{id: a, token: t, admin: yes please}]\nagents: [{name: x}]\n", {}, "admin"),
        ("users: [{id: a, token: t}]\nagents: [{instructions: x}]\n", {}, "agents[0].name"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x, asks: {kinds: [poll]}}]\n",
            {},
            "agents[0].asks.kinds: lists unknown kinds ['poll']",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x, asks: {max: 1}}]\n",
            {},
            "agents[0].asks.max: unknown setting",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x, asks: {maxFileSizeBytes: 0}}]\n",
            {},
            "agents[0].asks.maxFileSizeBytes: must be a positive whole number",
        ),
        ("users: [{id: a, token: t}]\nagents: [{name: x, asks: maybe}]\n", {}, "agents[0].asks"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}, {name: x}]\n",
            {},
            "agents[1].name: 'x' is used twice",
        ),
        ("users: [{id: a, token: t}]\nagents: [{name: x}]\nprot: 1\n", {}, "prot: unknown"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\ndatabase_url: mysql://x/y\n",
            {},
            "database_url: Unsupported database 'mysql'",
        ),
        ("users: [{id: a, token: t}]\nagents: [{name: x}]\nport: 70000\n", {}, "port: must"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\n",
            {"HANDRAIL_PORT": "x"},
            "HANDRAIL_PORT",
        ),
        ("users: [{id: a, token: t}]\nagents: [{name: x}]\napi_prefix: api\n", {}, "api_prefix"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\napi_prefix: /a b\n",
            {},
            "api_prefix",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\nmax_upload_bytes: -1\n",
            {},
            "max_upload_bytes: must be a positive whole number",
        ),
        ("- just\n- a list\n", {}, "must be a mapping"),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\nsqlite_synchronous: SOMETIMES\n",
            {},
            "sqlite_synchronous must be one of FULL, NORMAL, EXTRA, not 'SOMETIMES'",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\n",
            {"HANDRAIL_SQLITE_SYNCHRONOUS": "off"},
            "sqlite_synchronous must be one of FULL, NORMAL, EXTRA, not 'off'",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\ndatabase_wait: -1\n",
            {},
            "database_wait: must be a number of seconds, 0 or more, such as 10",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{name: x}]\n",
            {"HANDRAIL_DATABASE_WAIT": "a while"},
            "HANDRAIL_DATABASE_WAIT: must be a number of seconds, 0 or more, such as 10",
        ),
        ("users: [{id: a, token: t}\n", {}, "not valid YAML at line"),
        (
            "users: [{id: a, token: t}]\nagents: [{import: 'no_such_module_x:agent'}]\n",
            {},
            "agents[0].import: cannot import 'no_such_module_x'",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{import: 'not a path'}]\n",
            {},
            "agents[0].import: must name an Agent",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{import: 'os:sep'}]\n",
            {},
            "agents[0].import: 'os:sep' is a str",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{import: 'os:nothing_here'}]\n",
            {},
            "agents[0].import: 'os' has no attribute 'nothing_here'",
        ),
        (
            "users: [{id: a, token: t}]\nagents: [{import: 'os:sep', name: x}]\n",
            {},
            "agents[0].name: unknown setting",
        ),
    ],
)
def test_errors_name_the_field(
    tmp_path: Path, text: str, env: dict[str, str], message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.yaml")


@pytest.fixture
def agents_module() -> Iterator[str]:
    module = types.ModuleType("handrail_test_agents")
    module.one = Agent("one")  # type: ignore[attr-defined]
    module.many = [Agent("two"), Agent("three", asks=False)]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module.__name__
    del sys.modules[module.__name__]


def test_imported_agents(tmp_path: Path, agents_module: str) -> None:
    text = f"""
    users: [{{id: a, token: t}}]
    agents:
      - import: "{agents_module}:one"
      - import: "{agents_module}:many"
    """
    config = load_config(write(tmp_path, text), env={})
    assert [a.name for a in config.agents] == ["one", "two", "three"]


def test_bad_model_is_a_config_error() -> None:
    config = ServerConfig(
        users=[UserConfig(id="a", token="t")],
        agents=[Agent("x"), Agent("y", model="gpt-4")],
    )
    with pytest.raises(ConfigError, match=r"^agents\[1\]\.model: Model 'gpt-4' is not known"):
        config.check_models()
    config = ServerConfig(users=[UserConfig(id="a", token="t")], agents=[Agent("x")], model="nope")
    with pytest.raises(ConfigError, match=r"^model: "):
        config.check_models()


def test_default_config() -> None:
    config, generated = default_config(env={})
    assert generated
    assert config.database_url == "sqlite:///handrail.db"
    assert config.model == "scripted"
    [user] = config.users
    assert user.id == "demo"
    assert len(user.token) >= 24
    assert default_config(env={})[0].users[0].token != user.token
    named, generated = default_config(env={"HANDRAIL_TOKEN": "demo-token", "HANDRAIL_PORT": "9"})
    assert not generated
    assert named.users[0].token == "demo-token"
    assert named.port == 9


class TestServeCommand:
    def test_bad_config_exits_2_without_a_traceback(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, "users: [{id: a, token: t}, {id: b}]\nagents: [{name: x}]\n")
        assert main(["serve", "--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert "users[1].token: required" in err
        assert "Traceback" not in err

    def test_bad_model_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HANDRAIL_MODEL", "mystery")
        path = write(tmp_path, "users: [{id: a, token: t}]\nagents: [{name: x}]\n")
        assert main(["serve", "--config", str(path)]) == 2
        assert "model: Model 'mystery' is not known" in capsys.readouterr().err

    def test_bad_port_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["serve", "--port", "99999"]) == 2

    def test_help_lists_serve(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["--help"]) == 0
        assert "serve" in capsys.readouterr().out

    def test_python_dash_m_handrail_is_the_command(self) -> None:
        run = subprocess.run(
            [sys.executable, "-m", "handrail", "--version"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert (run.returncode, run.stdout, run.stderr) == (0, f"handrail {__version__}\n", "")


@pytest.mark.parametrize(("setting", "expected"), [(None, 2), ("NORMAL", 1)])
async def test_the_server_s_sqlite_commits_are_as_durable_as_configured(
    tmp_path: Path, setting: str | None, expected: int
) -> None:
    """`handrail serve`'s store reads back the level: FULL (2) unless the config says NORMAL."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    extra = {} if setting is None else {"sqlite_synchronous": setting}
    app = create_app(config_for(url, tmp_path, **extra))
    async with app.router.lifespan_context(app):
        store = app.state.store
        level = await store.db.write(lambda c: c.execute(text("PRAGMA synchronous")).scalar())
    assert level == expected


def test_a_process_adapter_whose_command_is_no_program_is_a_config_error(tmp_path: Path) -> None:
    def config(command: str) -> ServerConfig:
        return ServerConfig.from_mapping(
            {
                "users": [{"id": "a", "token": "t"}],
                "agents": [
                    {"name": "helper"},
                    {"name": "outside", "adapter": {"type": "process", "command": command}},
                ],
            },
            env={},
        )

    with pytest.raises(ConfigError) as raised:
        config("no-such-program-here").check_models()
    assert str(raised.value) == (
        "agents[1].adapter.command: 'no-such-program-here' is not a program this server can run "
        "(not on the PATH, or not an executable file). Give its full path, such as "
        "/usr/bin/python3, or install it."
    )
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(ConfigError, match="not a program this server can run"):
        config(str(script)).check_models()  # there, but not executable
    script.chmod(0o755)
    config(str(script)).check_models()
    config(sys.executable).check_models()
    config("sh").check_models()  # found on the PATH
