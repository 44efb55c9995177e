"""The catalog of app definitions: one YAML file per app that a connection can be made from.

    slug: notes                      # the file's name without .yaml
    name: Notes
    description: Read, add and delete notes.
    docsUrl: https://example.com/notes
    kind: mcp-stdio                  # mcp-stdio, mcp-http or actions
    mcp:                             # mcp-stdio: command, args, env; mcp-http: url, headers
      command: python
      args: [-m, handrail.demo.notes_mcp]
      env: {NOTES_TITLE: "${config.title}"}
      protocol: auto                 # auto, legacy or 2026-07-28
    config:
      - {key: title, label: Title, type: string, required: false, public: true, help: ...}
    agentInstructions: {id: notes.usage, version: 1, text: Read the house style first.}
    managedArguments:                # arguments filled from a config field, never the model
      - {argument: workspace_id, config: workspace}

An ``actions`` app names its action set file instead (``actions: booking.yaml``, relative to
the definition's folder). ``${config.<key>}`` and ``${secret.<key>}`` in the launch values are
filled from a connection's settings and secrets; a secret may only stand in ``env`` or
``headers`` (never in a command line, which other users of the machine can read).

`load_catalog` reads the shipped folder and any others, and raises `CatalogError` listing every
problem of every file, each with the file, the path in it, what is wrong and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ..actions import ActionConfigError, load_action_set
from ..actions.problems import join_path
from ..actions.yamlfile import read_yaml
from ..errors import ConfigError

__all__ = [
    "AGENT_INSTRUCTIONS_ID_MAX",
    "CATALOG_DIR",
    "CONFIG_TYPES",
    "CONNECTION_KINDS",
    "PROTOCOL_MODES",
    "SECRET_TYPES",
    "AgentInstructions",
    "AppDefinition",
    "Catalog",
    "CatalogError",
    "CatalogProblem",
    "ConfigField",
    "ManagedArgument",
    "McpLaunch",
    "check_agent_instructions",
    "load_catalog",
    "load_definition",
    "template_refs",
]

ConnectionKind = Literal["mcp-stdio", "mcp-http", "actions"]
CONNECTION_KINDS: Final[tuple[ConnectionKind, ...]] = ("mcp-stdio", "mcp-http", "actions")
ProtocolMode = Literal["auto", "legacy", "2026-07-28"]
PROTOCOL_MODES: Final[tuple[ProtocolMode, ...]] = ("auto", "legacy", "2026-07-28")
ConfigType = Literal["string", "url", "secret", "password"]
CONFIG_TYPES: Final[tuple[ConfigType, ...]] = ("string", "url", "secret", "password")
#: The config types whose values are secrets: write-only, encrypted, never public.
SECRET_TYPES: Final = frozenset({"secret", "password"})

#: The folder of the shipped definitions.
CATALOG_DIR: Final = Path(__file__).resolve().parent / "catalog"

INSTRUCTIONS_TEXT_MAX: Final = 2000
AGENT_INSTRUCTIONS_ID_MAX: Final = 160
SLUG: Final = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
CONFIG_KEY: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
#: ``${config.key}`` or ``${secret.key}``; any other ``${...}`` is a mistake.
TEMPLATE: Final = re.compile(r"\$\{([^}]*)\}")
TEMPLATE_REF: Final = re.compile(r"^(config|secret)\.([A-Za-z][A-Za-z0-9_]{0,63})$")
ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

_TOP_KEYS: Final = (
    "slug",
    "name",
    "description",
    "docsUrl",
    "kind",
    "mcp",
    "actions",
    "config",
    "agentInstructions",
    "managedArguments",
)
_STDIO_KEYS: Final = ("command", "args", "env", "protocol")
_HTTP_KEYS: Final = ("url", "headers", "protocol")
_FIELD_KEYS: Final = ("key", "label", "type", "required", "public", "help")
_INSTRUCTION_KEYS: Final = ("id", "version", "text")
_MANAGED_KEYS: Final = ("argument", "config")
ARGUMENT_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, kw_only=True, slots=True)
class CatalogProblem:
    """One problem of a definition: its file, the path in it (empty: the file as a whole), what
    is wrong, the fix, and the line when known."""

    file: str
    path: str
    message: str
    fix: str
    line: int | None = None

    def __str__(self) -> str:
        at = f":{self.line}" if self.line is not None else ""
        return f"{self.file}{at}: {self.path or '(file)'}: {self.message}. Fix: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "path": self.path,
            "message": self.message,
            "fix": self.fix,
        }
        if self.line is not None:
            out["line"] = self.line
        return out


class CatalogError(ConfigError):
    """Definitions that cannot be used; `problems` lists every one, ``str()`` one a line."""

    def __init__(self, problems: Iterable[CatalogProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigField:
    """One setting of an app: ``secret`` and ``password`` values are secrets (write-only,
    encrypted at rest); `public` marks a non-secret value that may be shown to every user of
    the connection (and stated in its instructions)."""

    key: str
    label: str
    type: ConfigType = "string"
    required: bool = False
    public: bool = False
    help: str | None = None

    @property
    def is_secret(self) -> bool:
        return self.type in SECRET_TYPES

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "label": self.label,
            "type": self.type,
            "required": self.required,
            "public": self.public,
        }
        if self.help is not None:
            out["help"] = self.help
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentInstructions:
    """An app's reviewed default instructions for agents: `id` (1-160 characters), `version`
    (a positive integer) and `text` (trimmed, 1-2000 characters)."""

    id: str
    version: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "text": self.text}


@dataclass(frozen=True, kw_only=True, slots=True)
class ManagedArgument:
    """A tool argument the connection fills from one of its settings: removed from the schema
    the model sees, and set after the caller's arguments (so the setting wins). A connection
    whose setting is unset keeps the argument visible to the model."""

    argument: str
    config: str

    def to_json(self) -> dict[str, Any]:
        return {"argument": self.argument, "config": self.config}


@dataclass(frozen=True, kw_only=True, slots=True)
class McpLaunch:
    """How to start (stdio) or reach (streamable HTTP) an MCP server, with ``${...}``
    placeholders still in the values."""

    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    protocol: ProtocolMode = "auto"

    def to_json(self) -> dict[str, Any]:
        if self.transport == "stdio":
            return {
                "command": self.command,
                "args": list(self.args),
                "env": dict(self.env),
                "protocol": self.protocol,
            }
        return {"url": self.url, "headers": dict(self.headers), "protocol": self.protocol}


@dataclass(frozen=True, kw_only=True, slots=True)
class AppDefinition:
    """One app of the catalog (see the module's docs for the format)."""

    slug: str
    name: str
    description: str
    kind: ConnectionKind
    docs_url: str | None = None
    mcp: McpLaunch | None = None
    actions: Path | None = None
    config: tuple[ConfigField, ...] = ()
    agent_instructions: AgentInstructions | None = None
    managed_arguments: tuple[ManagedArgument, ...] = ()
    file: str | None = None

    def field(self, key: str) -> ConfigField | None:
        for one in self.config:
            if one.key == key:
                return one
        return None

    def to_json(self) -> dict[str, Any]:
        """The definition as ``GET /catalog`` shows it."""
        out: dict[str, Any] = {
            "slug": self.slug,
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "docsUrl": self.docs_url,
            "config": [f.to_json() for f in self.config],
            "agentInstructions": (
                self.agent_instructions.to_json() if self.agent_instructions else None
            ),
        }
        if self.managed_arguments:
            out["managedArguments"] = [m.to_json() for m in self.managed_arguments]
        if self.mcp is not None:
            out["mcp"] = self.mcp.to_json()
        if self.actions is not None:
            out["actions"] = self.actions.name
        return out


class Catalog:
    """The app definitions by slug."""

    def __init__(self, definitions: Iterable[AppDefinition] = ()) -> None:
        self._apps: dict[str, AppDefinition] = {}
        for definition in definitions:
            self._apps[definition.slug] = definition

    def get(self, slug: str) -> AppDefinition | None:
        return self._apps.get(slug)

    def __contains__(self, slug: object) -> bool:
        return slug in self._apps

    def __iter__(self) -> Any:
        return iter(sorted(self._apps.values(), key=lambda d: d.slug))

    def __len__(self) -> int:
        return len(self._apps)

    @property
    def slugs(self) -> list[str]:
        return sorted(self._apps)


# --- loading ---------------------------------------------------------------------------------


def load_catalog(
    folders: Sequence[Path | str] = (), *, shipped: bool = True, strict: bool = True
) -> Catalog:
    """The definitions of the shipped folder (unless `shipped` is false) and of `folders`, in
    that order; a later definition of a slug replaces an earlier one. With `strict` (the
    default), any problem raises `CatalogError` listing them all."""
    dirs = [CATALOG_DIR] if shipped else []
    dirs.extend(Path(f) for f in folders)
    problems: list[CatalogProblem] = []
    definitions: list[AppDefinition] = []
    for folder in dirs:
        found, wrong = load_folder(folder)
        definitions.extend(found)
        problems.extend(wrong)
    if problems and strict:
        raise CatalogError(problems)
    return Catalog(definitions)


def load_folder(folder: Path) -> tuple[list[AppDefinition], list[CatalogProblem]]:
    """Every definition of one folder (its ``*.yaml`` files), and every problem."""
    if not folder.is_dir():
        problem = CatalogProblem(
            file=str(folder),
            path="",
            message="no such folder",
            fix="name a folder that holds app definitions (<slug>.yaml files)",
        )
        return [], [problem]
    definitions: list[AppDefinition] = []
    problems: list[CatalogProblem] = []
    for file in sorted(folder.glob("*.yaml")):
        definition, wrong = load_definition(file)
        problems.extend(wrong)
        if definition is not None:
            definitions.append(definition)
    return definitions, problems


def load_definition(file: Path) -> tuple[AppDefinition | None, list[CatalogProblem]]:
    """One definition file: the definition (None when it has problems) and its problems."""
    name = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [
            CatalogProblem(
                file=name, path="", message=f"cannot be read ({reason})", fix="make it UTF-8 text"
            )
        ]
    return parse_definition(text, file=name, slug=file.stem, folder=file.parent)


def parse_definition(
    text: str, *, file: str, slug: str | None = None, folder: Path | None = None
) -> tuple[AppDefinition | None, list[CatalogProblem]]:
    """A definition from YAML `text` (`slug`: the file's stem, which the slug must match)."""
    document = read_yaml(text)
    p = _Problems(file, document.line_of)
    if document.error is not None:
        p.problems.append(
            CatalogProblem(
                file=file,
                path="",
                message=document.error,
                fix="write the definition as YAML, such as 'slug: notes' on its own line",
                line=document.error_line,
            )
        )
        return None, p.problems
    for where, key in document.repeated:
        p.add(where, f"the key {key!r} appears more than once", "keep one of them")
    data = document.data
    if not isinstance(data, Mapping):
        p.add("", "the definition is not a mapping", "write keys such as 'slug: notes'")
        return None, p.problems
    p.unknown_keys(data, _TOP_KEYS, "")
    the_slug = p.text(data, "slug", "", "the app's id, such as notes", pattern=SLUG)
    if the_slug is not None and slug is not None and the_slug != slug:
        p.add("slug", f"is {the_slug!r} but the file is {slug}.yaml", f"rename it {the_slug}.yaml")
    app_name = p.text(data, "name", "", "the app's name, such as Notes")
    description = p.text(data, "description", "", "a sentence on what the app does")
    docs_url = p.text(data, "docsUrl", "", "https://...", required=False)
    if docs_url is not None and not docs_url.startswith(("https://", "http://")):
        p.add("docsUrl", "is not an http(s) URL", "give the address of the app's documentation")
    kind = p.choice(data, "kind", "", CONNECTION_KINDS)
    fields = _config_fields(p, data.get("config"))
    keys = {f.key: f for f in fields}
    mcp: McpLaunch | None = None
    actions: Path | None = None
    if kind in ("mcp-stdio", "mcp-http"):
        if "actions" in data:
            p.add("actions", f"a {kind} app has no action set", "drop it, or use kind: actions")
        mcp = _mcp_launch(p, data.get("mcp"), kind, keys)
    elif kind == "actions":
        if "mcp" in data:
            p.add("mcp", "an actions app has no MCP server", "drop it, or use kind: mcp-stdio")
        actions = _actions_file(p, data.get("actions"), folder)
    instructions = None
    if "agentInstructions" in data and data["agentInstructions"] is not None:
        instructions = _agent_instructions(p, data["agentInstructions"])
    managed = _managed_arguments(p, data.get("managedArguments"), keys)
    if p.problems:
        return None, p.problems
    assert the_slug is not None
    assert app_name is not None
    assert description is not None
    assert kind is not None
    return (
        AppDefinition(
            slug=the_slug,
            name=app_name,
            description=description,
            kind=kind,
            docs_url=docs_url,
            mcp=mcp,
            actions=actions,
            config=tuple(fields),
            agent_instructions=instructions,
            managed_arguments=tuple(managed),
            file=file,
        ),
        [],
    )


def check_agent_instructions(value: Any, path: str = "agentInstructions") -> list[str]:
    """What is wrong with an ``agentInstructions`` template ``{id, version, text}``, as
    ``path: message`` sentences; empty when it is right."""
    p = _Problems("<value>", lambda _path: None)
    _agent_instructions(p, value, path)
    return [f"{one.path}: {one.message}; {one.fix}" for one in p.problems]


def template_refs(value: str) -> list[tuple[str, str]]:
    """The ``(config|secret, key)`` references of a launch value (malformed ones left out)."""
    out: list[tuple[str, str]] = []
    for match in TEMPLATE.finditer(value):
        ref = TEMPLATE_REF.match(match.group(1).strip())
        if ref is not None:
            out.append((ref.group(1), ref.group(2)))
    return out


# --- the parts ---------------------------------------------------------------------------------


class _Problems:
    def __init__(self, file: str, line_of: Any) -> None:
        self.file = file
        self.line_of = line_of
        self.problems: list[CatalogProblem] = []

    def add(self, path: str, message: str, fix: str) -> None:
        self.problems.append(
            CatalogProblem(
                file=self.file, path=path, message=message, fix=fix, line=self.line_of(path)
            )
        )

    def unknown_keys(self, data: Mapping[Any, Any], known: Sequence[str], path: str) -> None:
        for key in data:
            if key not in known:
                self.add(
                    join_path(path, str(key)),
                    "is not a key of this part",
                    f"use one of {', '.join(known)}",
                )

    def text(
        self,
        data: Mapping[Any, Any],
        key: str,
        path: str,
        example: str,
        *,
        required: bool = True,
        pattern: re.Pattern[str] | None = None,
        most: int = 2000,
    ) -> str | None:
        where = join_path(path, key)
        if key not in data or data[key] is None:
            if required:
                self.add(where, "is required", f"add {key}: {example}")
            return None
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            self.add(where, "must be non-empty text", f"write {key}: {example}")
            return None
        value = value.strip()
        if len(value) > most:
            self.add(where, f"has {len(value)} characters", f"keep it to {most}")
            return None
        if pattern is not None and not pattern.match(value):
            self.add(where, f"{value!r} is not in the expected form", f"write {key}: {example}")
            return None
        return value

    def choice(
        self, data: Mapping[Any, Any], key: str, path: str, allowed: Sequence[str]
    ) -> Any | None:
        where = join_path(path, key)
        if key not in data:
            self.add(where, "is required", f"add {key}: one of {', '.join(allowed)}")
            return None
        value = data[key]
        if value not in allowed:
            self.add(where, f"{value!r} is not known", f"use one of {', '.join(allowed)}")
            return None
        return value

    def boolean(self, data: Mapping[Any, Any], key: str, path: str) -> bool:
        value = data.get(key, False)
        if not isinstance(value, bool):
            self.add(join_path(path, key), "must be true or false", f"write {key}: true or false")
            return False
        return value


def _config_fields(p: _Problems, value: Any) -> list[ConfigField]:
    if value is None:
        return []
    if not isinstance(value, list):
        p.add("config", "must be a list of fields", "write config: [{key: ..., label: ...}]")
        return []
    fields: list[ConfigField] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        path = join_path("config", index)
        if not isinstance(entry, Mapping):
            p.add(path, "must be a mapping", "write {key: apiKey, label: API key, type: secret}")
            continue
        p.unknown_keys(entry, _FIELD_KEYS, path)
        key = p.text(entry, "key", path, "apiKey", pattern=CONFIG_KEY)
        label = p.text(entry, "label", path, "API key", most=120)
        kind = entry.get("type", "string")
        if kind not in CONFIG_TYPES:
            p.add(join_path(path, "type"), f"{kind!r} is not a type", f"use {CONFIG_TYPES}")
            kind = "string"
        required = p.boolean(entry, "required", path)
        public = p.boolean(entry, "public", path)
        if public and kind in SECRET_TYPES:
            p.add(
                join_path(path, "public"),
                f"a {kind} field cannot be public",
                "drop public: true, or make it a string field",
            )
        help_text = p.text(entry, "help", path, "where to find it", required=False)
        if key is not None:
            if key in seen:
                p.add(join_path(path, "key"), f"{key!r} is used twice", "give each field its own")
            seen.add(key)
        if key is not None and label is not None:
            fields.append(
                ConfigField(
                    key=key,
                    label=label,
                    type=kind,
                    required=required,
                    public=public,
                    help=help_text,
                )
            )
    return fields


def _mcp_launch(
    p: _Problems, value: Any, kind: str, fields: Mapping[str, ConfigField]
) -> McpLaunch | None:
    stdio = kind == "mcp-stdio"
    example = "{command: npx, args: [...]}" if stdio else "{url: https://.../mcp}"
    if not isinstance(value, Mapping):
        p.add("mcp", "is required: how to start or reach the server", f"write mcp: {example}")
        return None
    p.unknown_keys(value, _STDIO_KEYS if stdio else _HTTP_KEYS, "mcp")
    protocol = value.get("protocol", "auto")
    if protocol not in PROTOCOL_MODES:
        p.add("mcp.protocol", f"{protocol!r} is not a mode", f"use {', '.join(PROTOCOL_MODES)}")
        protocol = "auto"
    if stdio:
        command = p.text(value, "command", "mcp", "npx")
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            p.add("mcp.args", "must be a list of strings", "write args: [-y, some-package]")
            args = []
        env = _string_map(p, value.get("env"), "mcp.env", ENV_NAME, "an environment variable")
        if command is not None:
            check_refs(p, "mcp.command", command, fields, secrets_allowed=False)
        for index, arg in enumerate(args):
            check_refs(p, join_path("mcp.args", index), arg, fields, secrets_allowed=False)
        for name, one in env.items():
            check_refs(p, join_path("mcp.env", name), one, fields, secrets_allowed=True)
        return McpLaunch(
            transport="stdio", command=command, args=tuple(args), env=env, protocol=protocol
        )
    url = p.text(value, "url", "mcp", "https://example.com/mcp")
    if url is not None:
        check_refs(p, "mcp.url", url, fields, secrets_allowed=False)
        if not TEMPLATE.sub("x", url).startswith(("https://", "http://")):
            p.add("mcp.url", "is not an http(s) URL", "give the server's streamable HTTP address")
    headers = _string_map(p, value.get("headers"), "mcp.headers", HEADER_NAME, "a header name")
    for name, one in headers.items():
        check_refs(p, join_path("mcp.headers", name), one, fields, secrets_allowed=True)
    return McpLaunch(transport="http", url=url, headers=headers, protocol=protocol)


def _string_map(
    p: _Problems, value: Any, path: str, names: re.Pattern[str], what: str
) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        p.add(path, "must be a mapping of names to text", "write {NAME: value}")
        return {}
    out: dict[str, str] = {}
    for name, one in value.items():
        where = join_path(path, str(name))
        if not isinstance(name, str) or not names.match(name):
            p.add(where, f"{name!r} is not {what}", f"use {what} of letters, digits and _")
            continue
        if not isinstance(one, str):
            p.add(where, "must be text", 'quote it, such as "1"')
            continue
        out[name] = one
    return out


def check_refs(
    p: Any,
    path: str,
    value: str,
    fields: Mapping[str, ConfigField] | None,
    *,
    secrets_allowed: bool,
) -> None:
    """Report each ``${...}`` of `value` that is malformed, names no field of `fields` (None:
    any key goes, as for a custom connection), names a field of the other kind, or is a secret
    where secrets may not stand."""
    for match in TEMPLATE.finditer(value):
        inner = match.group(1).strip()
        if inner == "python" and path == "mcp.command":
            continue
        ref = TEMPLATE_REF.match(inner)
        if ref is None:
            p.add(
                path,
                f"${{{inner}}} is not a placeholder",
                "write ${config.<key>} or ${secret.<key>} (or ${python} as the command)",
            )
            continue
        source, key = ref.group(1), ref.group(2)
        if source == "secret" and not secrets_allowed:
            p.add(
                path,
                f"${{secret.{key}}} would put a secret on the command line or in the URL",
                "pass the secret in env (stdio) or headers (HTTP) instead",
            )
            continue
        if fields is None:
            continue
        found = fields.get(key)
        if found is None:
            known = ", ".join(fields) or "none"
            p.add(
                path, f"${{{source}.{key}}} names no config field", f"add {key} to config ({known})"
            )
        elif source == "secret" and not found.is_secret:
            p.add(path, f"{key} is a {found.type} field", f"write ${{config.{key}}}")
        elif source == "config" and found.is_secret:
            p.add(path, f"{key} is a {found.type} field", f"write ${{secret.{key}}}")


def _actions_file(p: _Problems, value: Any, folder: Path | None) -> Path | None:
    if not isinstance(value, str) or not value.strip():
        p.add("actions", "is required: the action set file", "write actions: booking.yaml")
        return None
    file = Path(value.strip())
    if not file.is_absolute() and folder is not None:
        file = folder / file
    if not file.is_file():
        p.add("actions", f"no action set file at {file}", "name a file beside the definition")
        return None
    try:
        load_action_set(file)
    except ActionConfigError as exc:
        for problem in exc.problems:
            if problem.code == "CONFIG_SECRET_MISSING":
                continue  # set where the server runs, not where the catalog is checked
            p.add("actions", f"{file.name}: {problem}", "fix the action set (handrail check)")
    except ConfigError as exc:
        p.add("actions", str(exc), "make the action set file readable")
    return file.resolve()


def _managed_arguments(
    p: _Problems, value: Any, fields: Mapping[str, ConfigField]
) -> list[ManagedArgument]:
    if value is None:
        return []
    if not isinstance(value, list):
        p.add(
            "managedArguments",
            "must be a list",
            "write managedArguments: [{argument: workspace_id, config: workspace}]",
        )
        return []
    out: list[ManagedArgument] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        path = join_path("managedArguments", index)
        if not isinstance(entry, Mapping):
            p.add(path, "must be a mapping", "write {argument: workspace_id, config: workspace}")
            continue
        p.unknown_keys(entry, _MANAGED_KEYS, path)
        argument = p.text(entry, "argument", path, "workspace_id", pattern=ARGUMENT_NAME)
        config = p.text(entry, "config", path, "workspace", pattern=CONFIG_KEY)
        if config is not None:
            found = fields.get(config)
            if found is None:
                known = ", ".join(fields) or "none"
                p.add(
                    join_path(path, "config"),
                    f"{config!r} names no config field",
                    f"add it to config ({known})",
                )
                continue
            if found.is_secret:
                p.add(
                    join_path(path, "config"),
                    f"{config} is a {found.type} field",
                    "fill arguments from string or url fields only: a secret never goes to a tool "
                    "call the person approves",
                )
                continue
        if argument is not None and argument in seen:
            p.add(join_path(path, "argument"), f"{argument!r} is managed twice", "keep one")
            continue
        if argument is not None and config is not None:
            seen.add(argument)
            out.append(ManagedArgument(argument=argument, config=config))
    return out


def _agent_instructions(
    p: _Problems, value: Any, path: str = "agentInstructions"
) -> AgentInstructions | None:
    if not isinstance(value, Mapping):
        p.add(path, "must be a mapping", "write {id: app.usage, version: 1, text: ...}")
        return None
    p.unknown_keys(value, _INSTRUCTION_KEYS, path)
    ident = value.get("id")
    if not isinstance(ident, str) or not 1 <= len(ident.strip()) <= AGENT_INSTRUCTIONS_ID_MAX:
        p.add(
            join_path(path, "id"),
            "must be text of 1-160 characters",
            "write id: <app>.usage",
        )
        ident = None
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        p.add(join_path(path, "version"), "must be a positive integer", "write version: 1")
        version = None
    text = value.get("text")
    trimmed = text.strip() if isinstance(text, str) else ""
    if not trimmed:
        p.add(join_path(path, "text"), "must be non-empty text", "write the instructions")
    elif len(trimmed) > INSTRUCTIONS_TEXT_MAX:
        p.add(
            join_path(path, "text"),
            f"has {len(trimmed)} characters once trimmed",
            f"keep it to {INSTRUCTIONS_TEXT_MAX}",
        )
        trimmed = ""
    if ident is None or version is None or not trimmed:
        return None
    return AgentInstructions(id=ident.strip(), version=version, text=trimmed)
