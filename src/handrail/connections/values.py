"""Filling a definition's ``${config.<key>}`` and ``${secret.<key>}`` placeholders from a
connection's settings and secrets, and the names the model calls a connection's tools by.

A tool's model name is the connection's prefix (a short form of its name), ``_``, and the
tool's own name, made to match ``^[A-Za-z0-9_-]{1,64}$`` (what the model APIs accept).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final

from ..errors import ConfigError
from .catalog import TEMPLATE, TEMPLATE_REF, AppDefinition, McpLaunch

__all__ = [
    "MODEL_NAME_MAX",
    "PREFIX_MAX",
    "MissingValue",
    "fill",
    "fill_launch",
    "missing_required",
    "model_name",
    "tool_prefix",
]

PREFIX_MAX: Final = 24
MODEL_NAME_MAX: Final = 64
_NOT_NAME: Final = re.compile(r"[^a-z0-9]+")
_NOT_TOOL: Final = re.compile(r"[^A-Za-z0-9_-]+")


class MissingValue(ConfigError):
    """A placeholder names a setting or secret the connection does not have."""


def fill(value: str, settings: Mapping[str, str], secrets: Mapping[str, str]) -> str:
    """`value` with its placeholders replaced (``${python}`` is this Python's executable)."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        if inner == "python":
            return sys.executable
        ref = TEMPLATE_REF.match(inner)
        if ref is None:
            raise MissingValue(f"${{{inner}}} is not a placeholder")
        source, key = ref.group(1), ref.group(2)
        found = (settings if source == "config" else secrets).get(key)
        if found is None or found == "":
            what = "setting" if source == "config" else "secret"
            raise MissingValue(
                f"the {what} {key!r} is not set; set it on the connection (PATCH its "
                f"{'settings' if source == 'config' else 'secrets'})"
            )
        return found

    return TEMPLATE.sub(one, value)


def fill_launch(
    launch: McpLaunch, settings: Mapping[str, str], secrets: Mapping[str, str]
) -> McpLaunch:
    """The launch with every placeholder filled (`MissingValue` for one that cannot be)."""
    return replace(
        launch,
        command=fill(launch.command, settings, secrets) if launch.command else None,
        args=tuple(fill(a, settings, secrets) for a in launch.args),
        env={k: fill(v, settings, secrets) for k, v in launch.env.items()},
        url=fill(launch.url, settings, secrets) if launch.url else None,
        headers={k: fill(v, settings, secrets) for k, v in launch.headers.items()},
    )


def missing_required(
    definition: AppDefinition, settings: Mapping[str, str], secret_keys: Iterable[str]
) -> list[str]:
    """The keys of the definition's required fields that have no value."""
    have = {k for k, v in settings.items() if v != ""} | set(secret_keys)
    return [f.key for f in definition.config if f.required and f.key not in have]


def tool_prefix(name: str) -> str:
    """The short form of a connection's name that prefixes its tools: lowercase letters and
    digits, runs of anything else as one ``_``, at most `PREFIX_MAX` characters."""
    short = _NOT_NAME.sub("_", name.lower()).strip("_")[:PREFIX_MAX].strip("_")
    return short or "connection"


def model_name(prefix: str, tool: str) -> str:
    """The name the model calls `tool` of the connection with `prefix` by."""
    cleaned = _NOT_TOOL.sub("_", tool).strip("_") or "tool"
    return f"{prefix}_{cleaned}"[:MODEL_NAME_MAX]
