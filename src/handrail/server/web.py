"""The web UI: the single-page shell at ``/``, ``/c/<historyId>``, ``/inbox``, ``/watch`` and
``/grants``, its static files at ``/static/...``, and its icon at ``/favicon.ico`` too.

The files are the package's ``handrail/web`` folder (ES modules, CSS, no build step, no CDN),
read once and kept in memory. Only the files found there are served, so no path can reach
anything else. Each response carries its content type, an ``ETag`` and ``Cache-Control:
no-cache``: the browser keeps the file and revalidates it, and an unchanged file costs a 304.
The shell also carries a Content-Security-Policy that allows only this origin's scripts, styles
and connections.

These routes are plain Starlette routes, not part of the API: they are not in the OpenAPI
document and need no token (the page signs in with the API itself).
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .problems import not_found

__all__ = ["FAVICON_PATH", "SHELL_PATHS", "STATIC_PREFIX", "WebFiles", "add_web_routes"]

STATIC_PREFIX: Final = "/static"
#: Where browsers look for a page's icon when it names none: the UI's ``icon.svg``.
FAVICON_PATH: Final = "/favicon.ico"
#: The paths that answer with the page's shell; the page routes itself from the URL.
SHELL_PATHS: Final = (
    "/",
    "/inbox",
    "/watch",
    "/grants",
    "/connections",
    "/agents",
    "/deliveries",
    "/audit",
    "/c/{historyId}",
)
PREFIX_MARKER: Final = "__HANDRAIL_API_PREFIX__"
HISTORY_ID: Final = re.compile(r"[0-9a-f]{24}")

CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
}

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
COMMON_HEADERS: Final = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}
SHELL_HEADERS: Final = {
    **COMMON_HEADERS,
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@dataclass(frozen=True, kw_only=True)
class _File:
    body: bytes
    content_type: str
    etag: str


def _file(body: bytes, name: str) -> _File:
    suffix = name[name.rfind(".") :] if "." in name else ""
    content_type = CONTENT_TYPES.get(suffix, "application/octet-stream")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    return _File(body=body, content_type=content_type, etag=etag)


def _walk(folder: Traversable, base: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in folder.iterdir():
        name = f"{base}/{entry.name}" if base else entry.name
        if entry.is_dir():
            found.update(_walk(entry, name))
        elif entry.is_file() and not entry.name.startswith("."):
            found[name] = entry.read_bytes()
    return found


class WebFiles:
    """The web UI's files, read from the package once: the shell (with the API prefix filled
    in) and the static files by their path under ``static/``."""

    def __init__(self, api_prefix: str, folder: Traversable | None = None) -> None:
        root = folder if folder is not None else resources.files("handrail").joinpath("web")
        files = _walk(root, "")
        shell = files.pop("index.html").decode("utf-8")
        shell = shell.replace(PREFIX_MARKER, html.escape(api_prefix, quote=True))
        self.shell = _file(shell.encode("utf-8"), "index.html")
        self.static = {
            name.removeprefix("static/"): _file(body, name)
            for name, body in files.items()
            if name.startswith("static/")
        }


def _respond(request: Request, file: _File, headers: dict[str, str]) -> Response:
    out = {**headers, "ETag": file.etag}
    if file.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=out)
    body = b"" if request.method == "HEAD" else file.body
    response = Response(body, media_type=file.content_type, headers=out)
    if request.method == "HEAD":
        response.headers["Content-Length"] = str(len(file.body))
    return response


def _etags(header: str) -> set[str]:
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}


def add_web_routes(router: APIRouter, prefix: str) -> None:
    """Add the page's shell paths and ``/static/{path}``. `prefix` is the API's, which the
    shell tells the page."""
    files: WebFiles | None = None

    def loaded() -> WebFiles:
        nonlocal files
        if files is None:
            files = WebFiles(prefix)
        return files

    async def shell(request: Request) -> Response:
        history_id = request.path_params.get("historyId")
        if history_id is not None and not HISTORY_ID.fullmatch(str(history_id)):
            raise not_found("Not Found", "A conversation's page is /c/ and its 24-character id.")
        return _respond(request, loaded().shell, SHELL_HEADERS)

    async def static(request: Request) -> Response:
        path = str(request.path_params["path"])
        file = loaded().static.get(path)
        if file is None:
            raise not_found("Not Found", f"The web UI has no file {path!r}.")
        return _respond(request, file, COMMON_HEADERS)

    async def favicon(request: Request) -> Response:
        # What a browser asks for on a page without an icon link (the pages the server writes
        # itself, a page that embeds the chat): the UI's icon, not a 404 in every log.
        return _respond(request, loaded().static["icon.svg"], COMMON_HEADERS)

    for path in SHELL_PATHS:
        router.add_route(path, shell, methods=["GET", "HEAD"], include_in_schema=False)
    router.add_route(FAVICON_PATH, favicon, methods=["GET", "HEAD"], include_in_schema=False)
    router.add_route(
        STATIC_PREFIX + "/{path:path}", static, methods=["GET", "HEAD"], include_in_schema=False
    )
