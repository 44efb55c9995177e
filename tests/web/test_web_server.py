"""The web UI's server side, in process (no browser): the shell and static files with their
content types and cache headers, ``GET /api/info``, the demo's ``GET /api/demo``, the package
data, and the demo playbook (every prompt leads to its kind of ask)."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from handrail.cli import _has_display, build_parser
from handrail.demo import PLAYBOOK, create_demo_app
from handrail.server import ServerConfig, UserConfig, create_app
from handrail.server.config import default_config
from handrail.server.web import CONTENT_SECURITY_POLICY

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "src" / "handrail" / "web"
ALICE = {"Authorization": "Bearer demo-alice"}


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://handrail") as client:
            yield client


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(create_demo_app(tmp_path / "demo" / "handrail.db")) as client:
        yield client


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    config, _ = default_config(
        env={"HANDRAIL_TOKEN": "t0ken", "HANDRAIL_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    )
    async with serving(create_app(config)) as client:
        yield client


@pytest.mark.parametrize(
    "path", ["/", "/inbox", "/watch", "/grants", "/connections", "/c/" + "a" * 24]
)
async def test_the_shell_answers_every_page_path(plain: httpx.AsyncClient, path: str) -> None:
    response = await plain.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert '<meta name="handrail-api-prefix" content="/api">' in response.text
    assert '<script type="module" src="/static/app.js"></script>' in response.text
    again = await plain.get(path, headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/static/app.js", "text/javascript; charset=utf-8"),
        ("/static/cards/form.js", "text/javascript; charset=utf-8"),
        ("/static/style.css", "text/css; charset=utf-8"),
        ("/static/icon.svg", "image/svg+xml"),
    ],
)
async def test_static_files_have_their_type_and_revalidate(
    plain: httpx.AsyncClient, path: str, content_type: str
) -> None:
    response = await plain.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["cache-control"] == "no-cache"
    assert re.fullmatch(r'"[0-9a-f]{32}"', response.headers["etag"])
    assert response.content == (WEB / path.removeprefix("/")).read_bytes()
    head = await plain.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(response.content))


async def test_the_favicon_is_the_uis_icon(plain: httpx.AsyncClient) -> None:
    response = await plain.get("/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.content == (WEB / "static" / "icon.svg").read_bytes()
    again = await plain.get("/favicon.ico", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304


@pytest.mark.parametrize(
    "path", ["/static/nope.js", "/static/../server/app.py", "/static/", "/index.html", "/c/xyz"]
)
async def test_nothing_else_is_served(plain: httpx.AsyncClient, path: str) -> None:
    response = await plain.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_the_shell_names_another_api_prefix(tmp_path: Path) -> None:
    config = ServerConfig(
        users=[UserConfig(id="a", token="t0ken")],
        agents=default_config(env={"HANDRAIL_TOKEN": "x"})[0].agents,
        database_url=f"sqlite:///{tmp_path}/x.db",
        api_prefix="/v1",
    )
    async with serving(create_app(config)) as client:
        shell = await client.get("/")
        assert '<meta name="handrail-api-prefix" content="/v1">' in shell.text
        info = await client.get("/v1/info", headers={"Authorization": "Bearer t0ken"})
        assert info.json()["data"]["user"] == {"id": "a", "isAdmin": False}


async def test_info_needs_a_token_and_says_which_model(plain: httpx.AsyncClient) -> None:
    assert (await plain.get("/api/info")).status_code == 401
    response = await plain.get("/api/info", headers={"Authorization": "Bearer t0ken"})
    assert response.status_code == 200
    assert response.json()["data"] == {
        "user": {"id": "demo", "isAdmin": False},
        "model": "scripted",
        "modelIsAI": False,
        "agents": [
            {
                "name": "assistant",
                "model": "scripted",
                "askKinds": ["choice", "confirm", "markdown", "form", "files"],
                "clarify": False,
            }
        ],
        "playbook": [],
        "playbookNotes": {},
        "maxUploadBytes": 10 * 1024 * 1024,
    }
    assert (await plain.get("/api/demo")).status_code == 404


async def test_the_demo_lists_its_users_and_playbook(demo: httpx.AsyncClient) -> None:
    users = (await demo.get("/api/demo")).json()["data"]["users"]
    assert users == [
        {"id": "alice", "token": "demo-alice", "isAdmin": False},
        {"id": "bob", "token": "demo-bob", "isAdmin": False},
        {"id": "admin", "token": "demo-admin", "isAdmin": True},
    ]
    info = (await demo.get("/api/info", headers={"Authorization": "Bearer demo-admin"})).json()
    assert info["data"]["user"] == {"id": "admin", "isAdmin": True}
    assert info["data"]["playbook"] == list(PLAYBOOK)
    assert info["data"]["agents"][0]["clarify"] is True
    assert "Book a table" in info["data"]["playbookNotes"]


EXPECTED_ASKS = {
    "Set up billing for my team": ("choice", None),
    "Delete the old draft": ("choice", "permission"),
    "Book a table": ("choice", "permission"),
    "Draft an announcement": ("markdown", None),
    "Fill in invoice details": ("form", None),
    "Upload a receipt": ("files", None),
    "Create a database": ("clarify", None),
    "List my notes": ("choice", "permission"),
}


async def test_every_playbook_prompt_leads_to_its_ask(demo: httpx.AsyncClient) -> None:
    assert set(EXPECTED_ASKS) == set(PLAYBOOK)
    for prompt, (kind, origin) in EXPECTED_ASKS.items():
        created = await demo.post("/api/histories", json={}, headers=ALICE)
        history_id = created.json()["data"]["id"]
        turn = await demo.post(
            f"/api/histories/{history_id}/turn", json={"prompt": prompt}, headers=ALICE
        )
        assert turn.status_code == 200, turn.text
        history = (await demo.get(f"/api/histories/{history_id}", headers=ALICE)).json()["data"]
        pending = history["pendingAsk"]
        assert pending is not None, prompt
        assert (pending["kind"], pending.get("origin")) == (kind, origin), prompt


def test_package_data_ships_every_web_file() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["handrail"]
    for path in WEB.rglob("*"):
        if path.is_file():
            relative = path.relative_to(ROOT / "src" / "handrail").as_posix()
            assert any(fnmatch.fnmatch(relative, g) for g in globs), relative


IMPORT = re.compile(r"""^\s*import\s[^'"]*?from\s+["'](\.{1,2}/[^"']+)["']""", re.M)


def test_every_module_import_resolves() -> None:
    """A module that imports a file that is not there breaks the page: no build step checks it."""
    for module in (WEB / "static").rglob("*.js"):
        for target in IMPORT.findall(module.read_text()):
            assert (module.parent / target).resolve().is_file(), (module.name, target)


def test_demo_command_options() -> None:
    args = build_parser().parse_args(["demo", "--no-browser", "--port", "8123"])
    assert (args.browser, args.port, args.database) == (
        False,
        8123,
        Path("handrail-demo") / "handrail.db",
    )
    args = build_parser().parse_args(["demo", "--database", "x/y.db"])
    assert (args.browser, args.port, args.database) == (True, 8000, Path("x/y.db"))


def test_has_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not _has_display()
    monkeypatch.setenv("DISPLAY", ":0")
    assert _has_display()
