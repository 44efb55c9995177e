"""The ``agents`` of the server's configuration: an agent defined in the file (its model,
asks, clarify tool, HTTP action sets, or an adapter that runs it outside handrail) or imported
from Python as ``package.module:attribute``."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..actions import ActionConfigError, ActionSet, load_action_set
from ..errors import ConfigError
from ..runtime.agent import Agent, AsksOptions
from .adapter_config import adapter_from_config
from .config_values import boolean, no_unknown_keys, positive_int, required_list, string

__all__ = ["AGENT_KEYS", "ASKS_KEYS", "agents_from_config"]

#: The keys of an agent defined in the file, and of its ``asks``.
AGENT_KEYS: Final = ("name", "instructions", "model", "asks", "clarify", "actions", "adapter")
ASKS_KEYS: Final = ("kinds", "maxFileSizeBytes")
_IMPORT: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def agents_from_config(
    value: Any, *, base_dir: Path | None = None, env: Mapping[str, str] | None = None
) -> list[Agent]:
    """The ``agents`` of the configuration file: each defined there (with its model, asks,
    clarify, action sets and adapter) or imported as ``package.module:attribute``."""
    entries = required_list(value, "agents", "[{name: helper, instructions: ..., asks: true}]")
    agents: list[Agent] = []
    for index, entry in enumerate(entries):
        path = f"agents[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path}: must be a mapping such as {{name: helper, ...}}")
        if "import" in entry:
            no_unknown_keys(entry, ("import",), path)
            agents.extend(_imported_agents(entry["import"], f"{path}.import"))
            continue
        no_unknown_keys(entry, (*AGENT_KEYS, "import"), path)
        if "name" not in entry:
            raise ConfigError(f"{path}.name: required; the agent's name, such as helper")
        name = string(entry["name"], f"{path}.name")
        instructions = entry.get("instructions", "")
        if not isinstance(instructions, str):
            raise ConfigError(f"{path}.instructions: must be a string")
        model = string(entry["model"], f"{path}.model") if "model" in entry else None
        asks = _asks(entry.get("asks", True), f"{path}.asks")
        clarify = boolean(entry.get("clarify", False), f"{path}.clarify")
        if clarify and asks is None:
            raise ConfigError(
                f"{path}.clarify: clarify pauses the turn on an ask, so it needs asks on; "
                "drop 'asks: false' or 'clarify: true'"
            )
        action_sets = _action_sets(entry.get("actions", []), f"{path}.actions", base_dir, env)
        adapter = None
        if "adapter" in entry:
            if "model" in entry:
                raise ConfigError(
                    f"{path}.model: an agent run by an adapter has no model; drop one of them"
                )
            adapter = adapter_from_config(
                entry["adapter"], f"{path}.adapter", name, os.environ if env is None else env
            )
        try:
            agents.append(
                Agent(
                    name,
                    instructions=instructions,
                    model=model,
                    asks=asks,
                    clarify=clarify,
                    action_sets=action_sets,
                    adapter=adapter,
                )
            )
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return agents


def _action_sets(
    value: Any, path: str, base_dir: Path | None, env: Mapping[str, str] | None
) -> list[ActionSet]:
    """The HTTP action sets an agent uses: YAML files, relative to the config file's folder.
    Every problem of every file is reported (the server does not start with one)."""
    files = required_list(value, path, "[booking.yaml]")
    sets: list[ActionSet] = []
    for index, item in enumerate(files):
        where = f"{path}[{index}]"
        file = Path(string(item, where))
        if not file.is_absolute() and base_dir is not None:
            file = base_dir / file
        if not file.is_file():
            raise ConfigError(f"{where}: no action set file at {file}")
        try:
            sets.append(load_action_set(file, env=env))
        except ActionConfigError as exc:
            raise ConfigError(f"{where}: {file} has problems:\n{exc}") from None
    return sets


def _asks(value: Any, path: str) -> AsksOptions | None:
    if isinstance(value, bool):
        return AsksOptions.coerce(value)
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{path}: must be true, false, or a mapping such as "
            "{kinds: [choice, confirm], maxFileSizeBytes: 5000000}"
        )
    no_unknown_keys(value, ASKS_KEYS, path)
    kinds = value.get("kinds")
    if kinds is not None and (
        not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds)
    ):
        raise ConfigError(f"{path}.kinds: must be a list of kinds, such as [choice, confirm]")
    if "maxFileSizeBytes" in value:
        positive_int(value["maxFileSizeBytes"], f"{path}.maxFileSizeBytes")
    options: dict[str, Any] = {}
    if kinds is not None:
        options["kinds"] = kinds
    if "maxFileSizeBytes" in value:
        options["maxFileSizeBytes"] = value["maxFileSizeBytes"]
    try:
        return AsksOptions.coerce(options)
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("asks.kinds "):
            raise ConfigError(f"{path}.kinds: {message.removeprefix('asks.kinds ')}") from None
        raise ConfigError(f"{path}: {message}") from None


def _imported_agents(value: Any, path: str) -> list[Agent]:
    if not isinstance(value, str) or not _IMPORT.fullmatch(value.strip()):
        raise ConfigError(
            f"{path}: must name an Agent (or a list of them) as 'package.module:attribute'"
        )
    module_name, _, attribute = value.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"{path}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); check the "
            "name and that the package is installed in this environment"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"{path}: {module_name!r} has no attribute {attribute!r}") from None
    if isinstance(target, Agent):
        return [target]
    if isinstance(target, (list, tuple)) and target and all(isinstance(a, Agent) for a in target):
        return list(target)
    raise ConfigError(
        f"{path}: {value.strip()!r} is a {type(target).__name__}, not an Agent or a non-empty "
        "list of Agents"
    )
