"""Connection instructions: the saved setting, its blocks and the snapshot a turn gets.

A connection may give authorized agents a short paragraph of guidance. Its setting is
``{enabled, text, template?: {id, version}}`` (text trimmed, 1-2000 characters; ``null`` for
none): `check_setting` reads one from a request, `template_setting` makes the default from an
app's template. Disabling keeps the text.

Per turn, the runtime decides which connections' instructions apply (enabled, usable by the
agent, at least one tool the caller may use under the policy) and builds one `InstructionBlock`
for each; `compose_snapshot` sorts them by connection id and renders the `Snapshot`
``{text, digest}``: a heading, then each block (first its source and public configuration as
JSON data, then its text), with a separator between them. The digest is the SHA-256 hex of the
UTF-8 text, so a changed source or configuration changes it as much as changed text. No blocks
gives None.

This is guidance only: it grants nothing, and every gate stays on every tool call. An MCP
server's own ``instructions`` are never adopted here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .catalog import (
    AGENT_INSTRUCTIONS_ID_MAX,
    INSTRUCTIONS_TEXT_MAX,
    AgentInstructions,
    AppDefinition,
)

__all__ = [
    "INSTRUCTIONS_HEADING",
    "INSTRUCTIONS_SEPARATOR",
    "InstructionBlock",
    "InstructionSource",
    "Snapshot",
    "check_setting",
    "compose_snapshot",
    "saved_source",
    "snapshot_digest",
    "template_setting",
]

INSTRUCTIONS_HEADING: Final = "# Instructions from connections"
INSTRUCTIONS_SEPARATOR: Final = "\n\n---\n\n"
_SETTING_KEYS: Final = frozenset({"enabled", "text", "template"})
_TEMPLATE_KEYS: Final = frozenset({"id", "version"})


def check_setting(
    value: Any, path: str = "agentInstructions"
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """A setting from a request: ``(setting, {})`` when it is right (None for ``null``), else
    ``(None, fields)`` naming each problem by its path."""
    if value is None:
        return None, {}
    fields: dict[str, str] = {}
    if not isinstance(value, Mapping):
        fields[path] = 'must be {"enabled", "text", "template"?} or null'
        return None, fields
    for key in value:
        if key not in _SETTING_KEYS:
            fields[f"{path}.{key}"] = (
                "is not a key of the setting; the keys are enabled, text, template"
            )
    enabled = value.get("enabled")
    if not isinstance(enabled, bool):
        fields[f"{path}.enabled"] = "is required: true or false"
    text = value.get("text")
    trimmed = text.strip() if isinstance(text, str) else ""
    if not trimmed:
        fields[f"{path}.text"] = (
            f"is required: the instructions, 1-{INSTRUCTIONS_TEXT_MAX} characters"
        )
    elif len(trimmed) > INSTRUCTIONS_TEXT_MAX:
        fields[f"{path}.text"] = (
            f"has {len(trimmed)} characters once trimmed; keep it to {INSTRUCTIONS_TEXT_MAX}"
        )
    elif "\x00" in trimmed:
        fields[f"{path}.text"] = "must not hold NUL characters"
    template: dict[str, Any] | None = None
    raw = value.get("template")
    if raw is not None:
        if not isinstance(raw, Mapping):
            fields[f"{path}.template"] = 'must be {"id", "version"} or left out'
        else:
            for key in raw:
                if key not in _TEMPLATE_KEYS:
                    fields[f"{path}.template.{key}"] = "is not a key; the keys are id, version"
            ident = raw.get("id")
            if (
                not isinstance(ident, str)
                or not 1 <= len(ident.strip()) <= AGENT_INSTRUCTIONS_ID_MAX
            ):
                fields[f"{path}.template.id"] = (
                    f"must be text of 1-{AGENT_INSTRUCTIONS_ID_MAX} characters"
                )
            version = raw.get("version")
            if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                fields[f"{path}.template.version"] = "must be a positive integer"
            if not fields:
                template = {"id": str(ident).strip(), "version": version}
    if fields:
        return None, fields
    setting: dict[str, Any] = {"enabled": enabled, "text": trimmed}
    if template is not None:
        setting["template"] = template
    return setting, {}


def template_setting(template: AgentInstructions, *, enabled: bool = True) -> dict[str, Any]:
    """The setting that adopts an app's template as it is now."""
    return {
        "enabled": enabled,
        "text": template.text,
        "template": {"id": template.id, "version": template.version},
    }


@dataclass(frozen=True, kw_only=True, slots=True)
class InstructionBlock:
    """One connection's part of a snapshot: where it comes from, and its text.

    `grant` is what makes the connection available to the caller: its permission level (None:
    the person is asked for one at its first use) and the tools they granted. `connector` is
    the app (a catalog slug, ``custom`` or ``config``), `method` how it is reached
    (``mcp-stdio``, ``mcp-http``, ``actions``, ``python``). `config` is its public
    configuration only: never a secret or password field."""

    connection_id: str
    name: str
    text: str
    connector: str
    method: str
    level: str | None = None
    granted_tools: tuple[str, ...] = ()
    template: Mapping[str, Any] | None = None
    config: Mapping[str, str] = field(default_factory=dict)

    def source(self) -> dict[str, Any]:
        """The block's source as JSON data (what its first line states)."""
        return {
            "connection": {"id": self.connection_id, "name": self.name},
            "grant": {"level": self.level, "grantedTools": list(self.granted_tools)},
            "connector": self.connector,
            "method": self.method,
            "template": dict(self.template) if self.template is not None else None,
            "config": dict(sorted(self.config.items())),
        }

    def render(self) -> str:
        data = json.dumps(self.source(), ensure_ascii=False, separators=(",", ":"))
        return f"Source: {data}\n\n{self.text.strip()}"


@dataclass(frozen=True, kw_only=True, slots=True)
class InstructionSource:
    """What a connection could give a turn, before the caller's access is known: its saved
    `setting` (None: no instructions), its public configuration, and the required fields it
    lacks (any one withholds the block)."""

    connection_id: str
    name: str
    connector: str
    method: str
    setting: Mapping[str, Any] | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    docs_url: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.setting and self.setting.get("enabled") and self.setting.get("text"))

    @property
    def deliverable(self) -> bool:
        """Enabled, with every required field set."""
        return self.enabled and not self.missing

    def block(self, *, level: str | None, granted_tools: Iterable[str] = ()) -> InstructionBlock:
        setting = self.setting or {}
        template = setting.get("template")
        return InstructionBlock(
            connection_id=self.connection_id,
            name=self.name,
            text=str(setting.get("text") or ""),
            connector=self.connector,
            method=self.method,
            level=level,
            granted_tools=tuple(sorted(set(granted_tools))),
            template=dict(template) if isinstance(template, Mapping) else None,
            config=dict(self.config),
        )


def saved_source(
    definition: AppDefinition | None,
    *,
    connection_id: str,
    name: str,
    app: str,
    kind: str,
    settings: Mapping[str, str],
    secret_keys: Iterable[str],
    setting: Mapping[str, Any] | None,
) -> InstructionSource:
    """The source of a saved connection: its public configuration is the values of the fields
    its definition marks public (never a secret or password field; a custom connection
    declares none), and a required field (or one a managed argument is filled from) that is
    unset or blank withholds its block."""
    config: dict[str, str] = {}
    missing: list[str] = []
    secrets = set(secret_keys)
    managed = {m.config for m in definition.managed_arguments} if definition is not None else set()
    for one in definition.config if definition is not None else ():
        value = settings.get(one.key, "")
        if one.is_secret:
            if one.required and one.key not in secrets:
                missing.append(one.key)
            continue
        if (one.required or one.key in managed) and not value.strip():
            missing.append(one.key)
        if one.public and value.strip():
            config[one.key] = value
    return InstructionSource(
        connection_id=connection_id,
        name=name,
        connector=app,
        method=kind,
        setting=setting,
        config=config,
        missing=tuple(missing),
        docs_url=definition.docs_url if definition is not None else None,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Snapshot:
    """The instructions one turn gets: ``{text, digest}`` (digest: SHA-256 hex of the UTF-8
    text), and the blocks it was made of (not part of the wire form)."""

    text: str
    digest: str
    blocks: tuple[InstructionBlock, ...] = ()

    def to_json(self) -> dict[str, str]:
        return {"text": self.text, "digest": self.digest}

    @classmethod
    def from_json(cls, data: Any) -> Snapshot | None:
        """A stored snapshot back (None for anything that is not one)."""
        if not isinstance(data, Mapping):
            return None
        text, digest = data.get("text"), data.get("digest")
        if not isinstance(text, str) or not isinstance(digest, str):
            return None
        return cls(text=text, digest=digest)


def snapshot_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compose_snapshot(blocks: Iterable[InstructionBlock]) -> Snapshot | None:
    """The snapshot of `blocks`, sorted by connection id; None when there are none."""
    ordered: Sequence[InstructionBlock] = sorted(blocks, key=lambda b: b.connection_id)
    if not ordered:
        return None
    text = INSTRUCTIONS_HEADING + "\n\n" + INSTRUCTIONS_SEPARATOR.join(b.render() for b in ordered)
    return Snapshot(text=text, digest=snapshot_digest(text), blocks=tuple(ordered))
