"""Reading an action-set file: YAML with the plain scalars of YAML 1.2, repeated keys found,
and the line of every path kept for error messages.

PyYAML follows YAML 1.1, where ``12:30`` is the number 750, ``2024-05-01`` a date and ``no``
false. An action set holds times, dates and codes as literals, so this loader reads only
``true``/``false`` as booleans, plain decimal numbers as numbers and nothing as a date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import yaml  # type: ignore[import-untyped]  # no stubs in the allowed dependencies

from .problems import join_path

_BOOL: Final = "tag:yaml.org,2002:bool"
_INT: Final = "tag:yaml.org,2002:int"
_FLOAT: Final = "tag:yaml.org,2002:float"
_TIMESTAMP: Final = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # yaml is untyped
    """SafeLoader with YAML 1.2 core booleans and numbers, and no implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in {_BOOL, _INT, _FLOAT, _TIMESTAMP}]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(_INT, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?$"),
    list("-+0123456789."),
)


@dataclass(kw_only=True)
class YamlDocument:
    """A parsed file: its data, the line (1-based) of each path, the paths of repeated keys,
    and the parse error when it did not parse (then `data` is None)."""

    data: Any = None
    lines: dict[str, int] = field(default_factory=dict)
    repeated: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None
    error_line: int | None = None

    def line_of(self, path: str) -> int | None:
        """The line of `path`, or of its nearest ancestor that is in the file."""
        current = path
        while True:
            if current in self.lines:
                return self.lines[current]
            if not current:
                return None
            current = _parent(current)


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[: max(cut, 0)]


def read_yaml(text: str) -> YamlDocument:
    """Parse `text` (one YAML document)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDocument(error="the file is empty", error_line=1)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        line = None if mark is None else mark.line + 1
        return YamlDocument(error=f"the YAML does not parse: {problem}", error_line=line)
    except yaml.YAMLError as exc:
        return YamlDocument(error=f"the YAML does not parse: {exc}")
    finally:
        loader.dispose()
    document = YamlDocument(data=data)
    _walk(node, "", document)
    return document


def _walk(node: Any, path: str, document: YamlDocument) -> None:
    document.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            child = join_path(path, key)
            if key in seen:
                document.repeated.append((child, key))
                document.lines[child] = key_node.start_mark.line + 1
            seen.add(key)
            document.lines.setdefault(child, key_node.start_mark.line + 1)
            _walk(value_node, child, document)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, join_path(path, index), document)
