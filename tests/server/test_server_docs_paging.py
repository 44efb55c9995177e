"""The HTTP reference's "Paged lists" section names every route that takes ``limit`` and
``cursor`` (it once left out ``GET /api/audit``)."""

from __future__ import annotations

from pathlib import Path

from server_helpers import Api

ROOT = Path(__file__).resolve().parents[2]
HTTP_API = (ROOT / "docs" / "reference" / "http-api.md").read_text(encoding="utf-8")


def _paged_lists_section() -> str:
    body = HTTP_API.split("\n## Paged lists\n", 1)[1].split("\n## ", 1)[0]
    return " ".join(body.split())  # a route's name may be cut across two lines


async def test_every_paged_route_is_in_the_paged_lists_section(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    section = _paged_lists_section()
    missing = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            names = {parameter["name"] for parameter in operation.get("parameters", [])}
            if {"limit", "cursor"} <= names and f"`{method.upper()} {path}`" not in section:
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"The Paged lists section does not name: {missing}"
