"""The codes of HTTP actions, and `ActionConfigError`, which lists every problem of a file.

`CONFIG_ERROR_CODES` are start-up errors: a file with one is refused as a whole. `RUNTIME_CODES`
are the codes a call's result can carry. Both tables are the ones of
``docs/reference/actions.md``, which a test keeps true.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from ..errors import ConfigError

ConfigCode = Literal[
    "CONFIG_SCHEMA_INVALID",
    "CONFIG_TOOL_DUPLICATE",
    "CONFIG_AUTH_INVALID",
    "CONFIG_SECRET_MISSING",
    "CONFIG_URL_INVALID",
    "CONFIG_MAPPING_INVALID",
    "CONFIG_EFFECT_INVALID",
    "CONFIG_CONFIRMATION_INVALID",
    "CONFIG_DEPENDENCY_INVALID",
    "CONFIG_DEPENDENCY_CYCLE",
]

#: Every start-up error code, with when it is reported.
CONFIG_ERROR_CODES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "CONFIG_SCHEMA_INVALID": (
            "The YAML does not parse, a key is unknown or repeated, a value has the wrong "
            "type or is out of range (such as `retry.attempts` outside 1-5), or a required "
            "key is missing."
        ),
        "CONFIG_TOOL_DUPLICATE": "Two tools share a name.",
        "CONFIG_AUTH_INVALID": (
            "An auth type is unknown, misses its header or secret, or has a key of another type."
        ),
        "CONFIG_SECRET_MISSING": "A secret's environment variable is not set (or is empty).",
        "CONFIG_URL_INVALID": (
            "`base_url` is not http(s) (or holds credentials, a query or a fragment), or a "
            "path is not relative (or has a query, `.` or `..`)."
        ),
        "CONFIG_MAPPING_INVALID": (
            "A reference does not resolve: an unknown input field, dependency, source or "
            "root; a secret outside headers; a selection fact or `$.item` where it does not "
            "belong; a `{placeholder}` without its `path_params` entry, or the reverse; a "
            "dependency input its tool does not take; a label or fact that reads a sensitive "
            "field."
        ),
        "CONFIG_EFFECT_INVALID": (
            "A method other than GET or HEAD declared `read-only`, or an unknown effect."
        ),
        "CONFIG_CONFIRMATION_INVALID": (
            "A side effect without `confirmation.required: true`; a confirmation on a "
            "read-only tool; a preview that is empty or reads a secret, a sensitive or "
            "generated value, or an undeclared selection fact; a bad `ttl_ms`."
        ),
        "CONFIG_DEPENDENCY_INVALID": (
            "A dependency names an unknown tool, a tool that is not read-only or has "
            "dependencies of its own, or fills a required field; `when: missing` without "
            "`fills`; two dependencies declare the same fact; a bad `ttl_ms`; `recovery` "
            "names an undeclared dependency."
        ),
        "CONFIG_DEPENDENCY_CYCLE": "Dependencies form a cycle, or a tool depends on itself.",
    }
)

RuntimeCode = Literal[
    "CONFIRMATION_STALE",
    "TOOL_EXECUTION_UNCERTAIN",
    "TOOL_TIMEOUT",
    "TOOL_REDIRECT_BLOCKED",
    "TOOL_SERVER_ERROR",
    "TOOL_CLIENT_ERROR",
    "TOOL_OUTPUT_LIMIT",
    "TOOL_CONNECTION_ERROR",
    "TOOL_SECRET_MISSING",
]

#: Every code a call's result can carry, with when.
RUNTIME_CODES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "CONFIRMATION_STALE": (
            "A confirm arrived late (expired), for a changed context (digest), or for a "
            "confirmation that is no longer pending."
        ),
        "TOOL_EXECUTION_UNCERTAIN": (
            "The confirmation was consumed but the outcome was never recorded (a crash "
            "between sending and recording). It is never resent by itself."
        ),
        "TOOL_TIMEOUT": (
            "No response within `timeout_ms` (after the allowed retries). For a write whose "
            "request may have reached the API (the connection was made), the message tells the "
            "model to check the operation's status with the API before calling again."
        ),
        "TOOL_REDIRECT_BLOCKED": "The API answered with a redirect; redirects are never followed.",
        "TOOL_SERVER_ERROR": "A 5xx answer (after the allowed retries).",
        "TOOL_CLIENT_ERROR": (
            "A 4xx answer, or a 429 after the allowed retries (a status in "
            "`recovery.statuses` starts recovery instead)."
        ),
        "TOOL_OUTPUT_LIMIT": "The response was larger than `max_response_bytes`.",
        "TOOL_CONNECTION_ERROR": (
            "The API could not be reached, or the connection broke before a whole answer "
            "(after the allowed retries); in the second case a write's message says, as for a "
            "timeout, to check its status first."
        ),
        "TOOL_SECRET_MISSING": (
            "A secret was not set, or holds a character no HTTP header can carry, when the "
            "request was to be sent; nothing was sent."
        ),
    }
)

_PLAIN_KEY: Final = re.compile(r"^[A-Za-z0-9_-]+$")


def join_path(base: str, key: str | int) -> str:
    """``tools[1]`` from ``tools`` and 1, ``auth.header`` from ``auth`` and ``header``; keys
    that are not plain names are quoted: ``headers["a.b"]``."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if not _PLAIN_KEY.match(key):
        quoted = key.replace("\\", "\\\\").replace('"', '\\"')
        return f'{base}["{quoted}"]'
    return f"{base}.{key}" if base else key


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigProblem:
    """One problem of an action-set file: its code, where it is (``tools[1].request.path``; an
    empty path is the file as a whole), what is wrong and the way forward, and the line in the
    file when known."""

    code: ConfigCode
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path or "(file)"
        at = f" (line {self.line})" if self.line is not None else ""
        return f"{where}: {self.code}: {self.message}{at}"


class ActionConfigError(ConfigError):
    """An action-set file that cannot be compiled. `problems` holds every problem found, each
    with its code and path; ``str()`` lists them one per line."""

    def __init__(self, problems: Iterable[ConfigProblem], *, source: str = "<text>") -> None:
        self.problems: list[ConfigProblem] = list(problems)
        self.source = source
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def codes(self) -> Sequence[str]:
        """The codes of the problems, in order."""
        return [p.code for p in self.problems]
