"""The value checks of the configuration file: each raises `ConfigError` whose message starts
with the setting's path and says what to write instead."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigError

__all__ = [
    "boolean",
    "no_unknown_keys",
    "port",
    "positive_int",
    "required_list",
    "seconds",
    "string",
    "where",
]


def where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def no_unknown_keys(data: Mapping[Any, Any], known: Iterable[str], path: str) -> None:
    known = tuple(known)
    for key in data:
        if key not in known:
            raise ConfigError(
                f"{where(path, str(key))}: unknown setting; the settings here are "
                f"{', '.join(known)}"
            )


def string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: must be a non-empty string")
    return value.strip()


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: must be true or false")
    return value


def positive_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{path}: must be a positive whole number")
    return value


def seconds(value: Any, path: str, *, zero: bool = False) -> float:
    """A positive number of seconds (a whole number or a decimal, also as a string); with
    `zero`, 0 too."""
    what = "a number of seconds, 0 or more," if zero else "a positive number of seconds,"
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ConfigError(f"{path}: must be {what} such as 10") from None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (value >= 0 if zero else value > 0)
        or value == float("inf")
    ):
        raise ConfigError(f"{path}: must be {what} such as 10")
    return float(value)


def port(value: Any, path: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ConfigError(f"{path}: must be a whole number from 1 to 65535, not {value!r}")
    return value


def required_list(value: Any, path: str, example: str) -> list[Any]:
    if value is None:
        raise ConfigError(f"{path}: required; add a list such as {example}")
    if not isinstance(value, list):
        raise ConfigError(f"{path}: must be a list, such as {example}")
    return value
