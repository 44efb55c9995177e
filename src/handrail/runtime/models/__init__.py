"""Model adapters: the scripted model, OpenAI (Chat Completions) and Anthropic (Messages).

`model_from_name` builds one from a name such as ``openai:gpt-4.1-mini``; `model_from_env`
reads the name from ``HANDRAIL_MODEL``. The provider SDKs are imported only when their model is
built (or `OpenAIModel` / `AnthropicModel` is looked up), so importing this package stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ...errors import ConfigError
from ._convert import INVALID_ARGUMENTS_KEY
from .base import (
    Model,
    ModelError,
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    ToolSpec,
    storable_stream,
)
from .scripted import ScriptedModel

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .openai import OpenAIModel

__all__ = [
    "DEFAULT_MODEL",
    "INVALID_ARGUMENTS_KEY",
    "MODEL_ENV_VAR",
    "AnthropicModel",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "OpenAIModel",
    "ScriptedModel",
    "StepEnd",
    "TextDelta",
    "ToolCallPart",
    "ToolSpec",
    "model_from_env",
    "model_from_name",
    "storable_stream",
]

MODEL_ENV_VAR: Final = "HANDRAIL_MODEL"
DEFAULT_MODEL: Final = "scripted"

_FORMS: Final = (
    "'scripted' (not AI: follows commands, for tests and the offline demo), "
    "'openai:<model>' (such as openai:gpt-4.1-mini; any OpenAI-compatible server with "
    "OPENAI_BASE_URL) or 'anthropic:<model>' (such as anthropic:claude-sonnet-4-5)"
)


def model_from_name(name: str, **options: Any) -> Model:
    """The model a name stands for: ``scripted``, ``openai:<model>`` or ``anthropic:<model>``.

    `options` go to the model's constructor (``playbook=`` for the scripted model; ``client=``,
    ``base_url=``, ``api_key=`` and request options for OpenAI; ``client=``, ``api_key=``,
    ``max_tokens=`` and request options for Anthropic). Keys come from the environment
    (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``), read by the SDKs.

    Raises `ConfigError` for a name of no accepted form.
    """
    if not isinstance(name, str):
        raise ConfigError(f"A model name must be a string, not {type(name).__name__}.")
    text = name.strip()
    if text == "scripted":
        unknown = sorted(set(options) - {"playbook"})
        if unknown:
            raise ConfigError(
                f"The scripted model takes only the option playbook, not {', '.join(unknown)}."
            )
        return ScriptedModel(**options)
    provider, colon, model = text.partition(":")
    model = model.strip()
    if colon and model and provider == "openai":
        from .openai import OpenAIModel

        return OpenAIModel(model, **options)
    if colon and model and provider == "anthropic":
        from .anthropic import AnthropicModel

        return AnthropicModel(model, **options)
    if provider in ("openai", "anthropic"):
        raise ConfigError(f"Model {name!r} names no model after '{provider}:'. Use {_FORMS}.")
    raise ConfigError(f"Model {name!r} is not known. Use {_FORMS}.")


def model_from_env(env: Mapping[str, str] | None = None, **options: Any) -> Model:
    """The model ``HANDRAIL_MODEL`` names (``scripted`` when unset or blank), from `env` or
    ``os.environ``. Raises `ConfigError` that names the variable."""
    environ = os.environ if env is None else env
    name = environ.get(MODEL_ENV_VAR, "").strip() or DEFAULT_MODEL
    try:
        return model_from_name(name, **options)
    except ConfigError as exc:
        raise ConfigError(f"{MODEL_ENV_VAR}: {exc}") from None


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from .openai import OpenAIModel

        return OpenAIModel
    if name == "AnthropicModel":
        from .anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
