"""An MCP server's tools as handrail keeps them: `ListedTool`, with the annotations (and the
WebMCP hints a server states in the tool's ``_meta`` under `HINTS_META_KEY`) as declared, never
defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp.client import Client

from .._util import storable

__all__ = [
    "HINTS_META_KEY",
    "LIST_PAGES_MAX",
    "TITLE_MAX",
    "ListedTool",
    "list_tools",
    "listed_tool",
]

#: The ``_meta`` key under which a server may state a tool's WebMCP hints.
HINTS_META_KEY: Final = "handrail/hints"
_META_HINTS: Final = ("consequentialHint", "untrustedContentHint", "skill")
_ANNOTATIONS: Final = (
    ("read_only_hint", "readOnlyHint"),
    ("destructive_hint", "destructiveHint"),
    ("idempotent_hint", "idempotentHint"),
    ("open_world_hint", "openWorldHint"),
)
LIST_PAGES_MAX: Final = 20
#: The longest human title of a tool (as a Python tool's ``title``).
TITLE_MAX: Final = 80


@dataclass(frozen=True, kw_only=True, slots=True)
class ListedTool:
    """A tool as its server lists it."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any]
    title: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
            "annotations": dict(self.annotations),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ListedTool:
        return cls(
            name=str(data["name"]),
            title=data.get("title"),
            description=data.get("description"),
            input_schema=dict(data.get("inputSchema") or {"type": "object"}),
            annotations=dict(data.get("annotations") or {}),
        )


async def list_tools(client: Client) -> list[ListedTool]:
    """Every tool the server lists (at most `LIST_PAGES_MAX` pages)."""
    tools: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES_MAX):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(listed_tool(t) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def listed_tool(tool: Any) -> ListedTool:
    """An SDK `Tool` as handrail keeps it: its annotations and hints as declared, its texts
    storable, its schema an object's."""
    annotations: dict[str, Any] = {}
    if tool.annotations is not None:
        for attribute, wire in _ANNOTATIONS:
            value = getattr(tool.annotations, attribute, None)
            if isinstance(value, bool):
                annotations[wire] = value
    meta = tool.meta.get(HINTS_META_KEY) if isinstance(tool.meta, dict) else None
    if isinstance(meta, dict):
        for wire in _META_HINTS:
            if isinstance(meta.get(wire), bool):
                annotations[wire] = meta[wire]
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if schema.get("type") != "object":
        schema = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
    title = getattr(tool, "title", None)
    if not (isinstance(title, str) and title.strip()) and tool.annotations is not None:
        title = getattr(tool.annotations, "title", None)
    cleaned, _ = storable(
        {
            "description": tool.description,
            "title": _title(title),
            "schema": schema,
        }
    )
    return ListedTool(
        name=tool.name,
        title=cleaned["title"],
        description=cleaned["description"],
        input_schema=cleaned["schema"],
        annotations=annotations,
    )


def _title(value: Any) -> str | None:
    """A tool's human title (its ``title``, else ``annotations.title``) on one line, cut to
    `TITLE_MAX` characters; None when it has none."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text:
        return None
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1].rstrip() + "…"
