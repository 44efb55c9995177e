"""An agent's ``adapter`` in the configuration: the agent is run by a program of the user's
own instead of a model (`handrail.runtime.models.adapters`).

    agents:
      - name: outside
        instructions: You help with releases.
        adapter: {type: process, command: python, args: [agent.py], timeout_s: 60,
                  env: {LEVEL: "2", OPENAI_API_KEY: {secret_env: OPENAI_API_KEY}}}
      - name: remote
        adapter:
          type: http
          url: http://127.0.0.1:9000/step
          headers: {Authorization: {secret_env: REMOTE_TOKEN, prefix: "Bearer "}}
          payload_template: {model: small}
          timeout_s: 30

A header's value, and a value in a process's ``env``, is text, or ``{secret_env: NAME,
prefix?}``: the value of the server's environment variable ``NAME`` (required to be set), after
`prefix`. The process gets no other variable of the server's environment but the few that are
safe (``HOME``, ``PATH``...; `handrail.connections.child_env`), so a secret it needs is named
here. ``HANDRAIL_CONNECTION_INSTRUCTIONS_FILE`` in ``env`` is refused: the server sets it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..actions.prepare import unsendable_in_header
from ..errors import ConfigError
from ..runtime.models.adapters import (
    ADAPTER_TYPES,
    DEFAULT_ADAPTER_TIMEOUT,
    INSTRUCTIONS_FILE_ENV,
    HttpAdapter,
    ProcessAdapter,
)
from ..runtime.models.base import Model

__all__ = ["adapter_from_config"]

_PROCESS_KEYS: Final = ("type", "command", "args", "env", "timeout_s")
_HTTP_KEYS: Final = ("type", "url", "headers", "payload_template", "timeout_s")
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_EXAMPLE: Final = "{type: process, command: python, args: [agent.py]} or {type: http, url: ...}"


def adapter_from_config(value: Any, path: str, agent: str, env: Mapping[str, str]) -> Model:
    """The adapter an agent's ``adapter`` setting describes; `ConfigError` naming the path."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be a mapping such as {_EXAMPLE}")
    kind = value.get("type")
    if kind not in ADAPTER_TYPES:
        raise ConfigError(f"{path}.type: must be one of {', '.join(ADAPTER_TYPES)}")
    timeout = _timeout(value.get("timeout_s", DEFAULT_ADAPTER_TIMEOUT), f"{path}.timeout_s")
    if kind == "process":
        _known(value, _PROCESS_KEYS, path)
        command = value.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{path}.command: required; the program to run, such as python")
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"{path}.args: must be a list of strings, such as [agent.py]")
        variables = value.get("env", {})
        if not isinstance(variables, Mapping):
            raise ConfigError(f"{path}.env: must be a mapping of names to text")
        checked: dict[str, str] = {}
        for name, one in variables.items():
            where = f"{path}.env.{name}"
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise ConfigError(f"{where}: not an environment variable name")
            if name == INSTRUCTIONS_FILE_ENV:
                raise ConfigError(
                    f"{where}: the server sets {INSTRUCTIONS_FILE_ENV} for every step; drop it"
                )
            if not isinstance(one, str | Mapping):
                raise ConfigError(
                    f'{where}: must be text (quote it, such as "1") or {{secret_env: NAME}}'
                )
            checked[name] = _text_or_secret(one, where, env)
        return ProcessAdapter(
            agent=agent, command=command.strip(), args=args, env=checked, timeout_s=timeout
        )
    _known(value, _HTTP_KEYS, path)
    url = value.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{path}.url: required; the http(s) URL to POST each step to")
    headers = value.get("headers", {})
    if not isinstance(headers, Mapping):
        raise ConfigError(f"{path}.headers: must be a mapping of header names to values")
    sent: dict[str, str] = {}
    for name, one in headers.items():
        where = f"{path}.headers.{name}"
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise ConfigError(f"{where}: not a header name")
        sent[name] = _text_or_secret(one, where, env)
        # A value HTTP can carry (`unsendable_in_header`, as a prepared action's), with no
        # spaces at either end: those are not part of a header's value.
        text = sent[name]
        if unsendable_in_header(text) is not None or text != text.strip(" \t"):
            # Never the value itself: it may be a secret.
            source = (
                f"the environment variable {one['secret_env']}"
                if isinstance(one, Mapping)
                else "the value"
            )
            raise ConfigError(
                f"{where}: {source} is not a value an HTTP header can carry: it must be ASCII "
                "text without line breaks, and without spaces at either end (a secret read "
                "from a file often ends in a line break)"
            )
    template = value.get("payload_template", {})
    if not isinstance(template, Mapping):
        raise ConfigError(f"{path}.payload_template: must be a mapping (a JSON object)")
    return HttpAdapter(
        agent=agent,
        url=url,
        headers=sent,
        payload_template=dict(template),
        timeout_s=timeout,
    )


def _known(value: Mapping[Any, Any], keys: tuple[str, ...], path: str) -> None:
    for key in value:
        if key not in keys:
            raise ConfigError(
                f"{path}.{key}: unknown setting; the settings here are {', '.join(keys)}"
            )


def _timeout(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise ConfigError(f"{path}: must be a number of seconds above 0, at most 3600")
    return float(value)


def _text_or_secret(value: Any, path: str, env: Mapping[str, str]) -> str:
    """A header's or a process variable's value: text, or ``{secret_env: NAME, prefix?}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "secret_env" in value:
        extra = sorted(set(value) - {"secret_env", "prefix"})
        if extra:
            raise ConfigError(f"{path}: unknown keys {extra}; the keys are secret_env, prefix")
        name = value["secret_env"]
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ConfigError(f"{path}.secret_env: must be an environment variable name")
        secret = env.get(name)
        if not secret:
            raise ConfigError(
                f"{path}.secret_env: the environment variable {name} is not set; set it to "
                "the secret"
            )
        prefix = value.get("prefix", "")
        if not isinstance(prefix, str):
            raise ConfigError(f'{path}.prefix: must be text, such as "Bearer "')
        return prefix + secret
    raise ConfigError(f'{path}: must be text or {{secret_env: NAME, prefix: "Bearer "}}')
