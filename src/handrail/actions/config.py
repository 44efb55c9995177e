"""Compiling an action-set file: `load_action_set` reads the YAML, checks every part and
returns an `ActionSet`, or raises `ActionConfigError` listing every problem found, each with its
``CONFIG_*`` code, its path in the file (``tools[1].behavior.confirmation.preview.token``) and
its line.

The structure is read by `handrail.actions.parse`; the checks across parts are in
`handrail.actions.checks`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError
from .checks import check_tools
from .drafts import Problems, mapping
from .model import ActionSet
from .parse import parse_root
from .problems import ActionConfigError, ConfigProblem
from .yamlfile import read_yaml

__all__ = ["compile_action_set", "load_action_set"]


def load_action_set(
    path_or_text: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> ActionSet:
    """Compile an action set from a file (a path, or a string without a line break) or from
    YAML text (a string with a line break). Secrets are looked up in `env` (default: the
    process environment) to report the missing ones; their values are never kept.

    Raises `ActionConfigError` with every problem found, or `ConfigError` when the file cannot
    be read."""
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        source, content = "<text>", path_or_text
    else:
        file = Path(path_or_text)
        source = str(file)
        try:
            content = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"cannot read the action set {source}: {reason}") from None
    return compile_action_set(content, source=source, env=os.environ if env is None else env)


def compile_action_set(text: str, *, source: str = "<text>", env: Mapping[str, str]) -> ActionSet:
    """Compile YAML `text`; `source` names it in the result and in errors."""
    document = read_yaml(text)
    if document.error is not None:
        problem = ConfigProblem(
            code="CONFIG_SCHEMA_INVALID", path="", message=document.error, line=document.error_line
        )
        raise ActionConfigError([problem], source=source)
    p = Problems()
    for where, key in document.repeated:
        p.add("CONFIG_SCHEMA_INVALID", where, f"the key {key!r} appears more than once")
    root = mapping(p, "", document.data, "a mapping with id, name, base_url and tools")
    built: ActionSet | None = None
    if root is not None:
        draft = parse_root(p, root, env)
        tools = check_tools(p, draft.tools, env)
        if (
            not len(p)
            and draft.id is not None
            and draft.name is not None
            and draft.base_url is not None
            and draft.auth is not None
        ):
            built = ActionSet(
                id=draft.id,
                name=draft.name,
                base_url=draft.base_url,
                trusted=draft.trusted,
                instructions=draft.instructions,
                auth=draft.auth,
                tools=tools,
                source=source,
            )
    if built is None:
        problems = [
            ConfigProblem(
                code=x.code, path=x.path, message=x.message, line=document.line_of(x.path)
            )
            for x in p.items
        ]
        raise ActionConfigError(problems, source=source)
    return built
