"""Building a model from its name, and from HANDRAIL_MODEL."""

from __future__ import annotations

import subprocess
import sys

import pytest

from handrail.errors import ConfigError
from handrail.runtime import models
from handrail.runtime.models import (
    AnthropicModel,
    OpenAIModel,
    ScriptedModel,
    model_from_env,
    model_from_name,
)


def test_scripted() -> None:
    model = model_from_name("scripted")
    assert isinstance(model, ScriptedModel)
    assert model.name == "scripted"


def test_scripted_with_a_playbook() -> None:
    model = model_from_name(" scripted ", playbook={"hi": "fail"})
    assert isinstance(model, ScriptedModel)
    with pytest.raises(ConfigError, match="takes only the option playbook, not temperature"):
        model_from_name("scripted", temperature=0)


async def test_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    model = model_from_name("openai:gpt-4.1-mini", temperature=0)
    assert isinstance(model, OpenAIModel)
    assert model.name == "openai:gpt-4.1-mini"
    assert str(model.client.base_url) == "http://localhost:11434/v1/"
    await model.aclose()


async def test_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    model = model_from_name("anthropic:claude-sonnet-4-5", max_tokens=100)
    assert isinstance(model, AnthropicModel)
    assert model.name == "anthropic:claude-sonnet-4-5"
    await model.aclose()


@pytest.mark.parametrize(
    "name", ["", "gpt-4.1-mini", "openai", "openai:", "anthropic: ", "scripted:x", "gemini:pro"]
)
def test_unknown_or_malformed_names_are_config_errors(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        model_from_name(name)
    message = str(caught.value)
    assert repr(name) in message
    for form in ("'scripted'", "'openai:<model>'", "'anthropic:<model>'"):
        assert form in message


def test_from_env_defaults_to_scripted() -> None:
    assert isinstance(model_from_env({}), ScriptedModel)
    assert isinstance(model_from_env({"HANDRAIL_MODEL": "  "}), ScriptedModel)


def test_from_env_reads_handrail_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAIL_MODEL", "scripted")
    assert isinstance(model_from_env(), ScriptedModel)
    with pytest.raises(ConfigError, match=r"^HANDRAIL_MODEL: Model 'nope' is not known"):
        model_from_env({"HANDRAIL_MODEL": "nope"})


def test_exports() -> None:
    for name in models.__all__:
        assert getattr(models, name) is not None
    with pytest.raises(AttributeError):
        _ = models.NoSuchModel


def test_importing_the_package_does_not_import_the_sdks() -> None:
    code = (
        "import sys, handrail.runtime.models as m\n"
        "m.model_from_name('scripted')\n"
        "print(sorted(n for n in ('openai', 'anthropic') if n in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
