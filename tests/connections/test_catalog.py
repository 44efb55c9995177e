"""The catalog of app definitions: the shipped ones load, every mistake is a problem with its
file, path, line and fix, and ``handrail catalog check`` prints them and exits 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.cli import main
from handrail.connections import (
    CatalogError,
    check_agent_instructions,
    load_catalog,
    load_definition,
)
from handrail.connections.values import MissingValue, fill_launch, model_name, tool_prefix

GOOD = """\
slug: wiki
name: Wiki
description: Read the team wiki.
docsUrl: https://example.com/wiki
kind: mcp-http
mcp:
  url: https://wiki.example.com/${config.space}/mcp
  headers:
    Authorization: Bearer ${secret.apiKey}
config:
  - {key: space, label: Space, type: string, required: true, public: true}
  - {key: apiKey, label: API key, type: secret, required: true, help: From the wiki's settings.}
agentInstructions: {id: wiki.usage, version: 1, text: "  Cite the page you used.  "}
"""


def write(folder: Path, slug: str, text: str) -> Path:
    file = folder / f"{slug}.yaml"
    file.write_text(text, encoding="utf-8")
    return file


def test_the_shipped_catalog_loads() -> None:
    catalog = load_catalog()
    assert catalog.slugs == ["booking", "everything", "memory", "notes"]
    notes = catalog.get("notes")
    assert notes is not None
    assert notes.kind == "mcp-stdio"
    assert notes.mcp is not None
    assert notes.mcp.args == ("-m", "handrail.demo.notes_mcp")
    memory = catalog.get("memory")
    assert memory is not None
    assert [f.key for f in memory.config] == ["memoryFile"]
    assert memory.agent_instructions is not None
    assert memory.agent_instructions.version == 1
    booking = catalog.get("booking")
    assert booking is not None
    assert booking.actions is not None
    assert booking.actions.name == "booking.yaml"


def test_a_good_definition(tmp_path: Path) -> None:
    definition, problems = load_definition(write(tmp_path, "wiki", GOOD))
    assert problems == []
    assert definition is not None
    assert definition.agent_instructions is not None
    assert definition.agent_instructions.text == "Cite the page you used."
    assert definition.to_json()["config"][1] == {
        "key": "apiKey",
        "label": "API key",
        "type": "secret",
        "required": True,
        "public": False,
        "help": "From the wiki's settings.",
    }
    assert definition.mcp is not None
    filled = fill_launch(definition.mcp, {"space": "eng"}, {"apiKey": "k-123"})
    assert filled.url == "https://wiki.example.com/eng/mcp"
    assert filled.headers == {"Authorization": "Bearer k-123"}
    with pytest.raises(MissingValue, match="the secret 'apiKey' is not set"):
        fill_launch(definition.mcp, {"space": "eng"}, {})


MISTAKES = [
    ("slug: other", "slug", "rename it other.yaml"),
    ("kind: mcp-sse", "kind", "use one of mcp-stdio, mcp-http, actions"),
    ("docsUrl: ftp://x", "docsUrl", "documentation"),
    ("colour: blue", "colour", "use one of slug"),
    ("name: ''", "name", "write name"),
    ("url: wiki.example.com/mcp", "mcp.url", "streamable HTTP address"),
    ("${secret.apiKey}/mcp", "mcp.url", "pass the secret in env"),
    ("${config.nope}", "mcp.url", "add nope to config"),
    ("Bearer ${config.apiKey}", "mcp.headers.Authorization", "write ${secret.apiKey}"),
    ("Bearer ${token}", "mcp.headers.Authorization", "write ${config.<key>}"),
    (
        "type: string, required: true, public: true}\n  - {key: space",
        "config[1].key mcp.url mcp.headers.Authorization",
        "own",
    ),
    ("type: secret, required: true, public: true,", "config[1].public", "drop public"),
    ("type: blob", "config[1].type mcp.headers.Authorization", "use"),
    ("id: ''", "agentInstructions.id", "write id"),
    ("version: 0", "agentInstructions.version", "write version: 1"),
    ('text: "   "', "agentInstructions.text", "write the instructions"),
    ("text: LONG", "agentInstructions.text", "keep it to 2000"),
    ("protocol: v9", "mcp.protocol", "use auto, legacy, 2026-07-28"),
    ("actions: x.yaml", "actions", "drop it"),
]


def _broken(mistake: str) -> str:
    text = GOOD
    if mistake == "slug: other":
        return text.replace("slug: wiki", mistake)
    if mistake.startswith("kind:"):
        return text.replace("kind: mcp-http", mistake)
    if mistake.startswith("docsUrl"):
        return text.replace("docsUrl: https://example.com/wiki", mistake)
    if mistake.startswith(("colour", "actions:")):
        return text + mistake + "\n"
    if mistake.startswith("name:"):
        return text.replace("name: Wiki", mistake)
    if mistake.startswith("url:"):
        return text.replace("url: https://wiki.example.com/${config.space}/mcp", mistake)
    if mistake.startswith("${secret"):
        return text.replace("${config.space}/mcp", mistake)
    if mistake == "${config.nope}":
        return text.replace("${config.space}", mistake)
    if mistake.startswith("Bearer"):
        return text.replace("Bearer ${secret.apiKey}", mistake)
    if mistake.startswith("type: string, required: true, public: true}"):
        return text.replace(
            "{key: apiKey, label: API key, type: secret",
            "{key: space, label: API key, type: secret",
        )
    if mistake.startswith("type: secret, required: true, public"):
        return text.replace("type: secret, required: true,", mistake)
    if mistake == "type: blob":
        return text.replace("type: secret", mistake)
    if mistake.startswith("protocol"):
        return text.replace("  headers:", f"  {mistake}\n  headers:")
    if mistake == "text: LONG":
        return text.replace('text: "  Cite the page you used.  "', f"text: {'x' * 2001}")
    if mistake.startswith(("id:", "version:", "text:")):
        key = mistake.split(":")[0]
        originals = {"id": "id: wiki.usage", "version": "version: 1"}
        original = originals.get(key, 'text: "  Cite the page you used.  "')
        return text.replace(original, mistake)
    raise AssertionError(mistake)


@pytest.mark.parametrize(("mistake", "path", "fix"), MISTAKES)
def test_every_mistake_is_a_problem_with_path_line_and_fix(
    tmp_path: Path, mistake: str, path: str, fix: str
) -> None:
    definition, problems = load_definition(write(tmp_path, "wiki", _broken(mistake)))
    assert definition is None
    # A mistake can leave a second one behind it (a secret field made a string field is then
    # written as a secret in a header): each is listed.
    assert [p.path for p in problems] == path.split(), problems
    assert fix in problems[0].fix
    assert problems[0].file == str(tmp_path / "wiki.yaml")
    assert problems[0].line is not None


def test_yaml_that_does_not_parse_and_repeated_keys(tmp_path: Path) -> None:
    _definition, problems = load_definition(write(tmp_path, "a", "slug: [a\n"))
    assert problems[0].path == ""
    assert "does not parse" in problems[0].message
    _definition, problems = load_definition(write(tmp_path, "wiki", GOOD + "name: Again\n"))
    assert [p.path for p in problems] == ["name"]
    assert "more than once" in problems[0].message


def test_missing_parts_and_an_action_set_that_is_not_there(tmp_path: Path) -> None:
    text = "slug: shop\nname: Shop\ndescription: A shop.\nkind: actions\nactions: nope.yaml\n"
    _definition, problems = load_definition(write(tmp_path, "shop", text))
    assert [p.path for p in problems] == ["actions"]
    assert "no action set file" in problems[0].message
    _definition, problems = load_definition(write(tmp_path, "x", "slug: x\nkind: mcp-stdio\n"))
    assert [p.path for p in problems] == ["name", "description", "mcp"]


def test_secrets_never_on_a_command_line(tmp_path: Path) -> None:
    text = (
        "slug: cli\nname: CLI\ndescription: A tool.\nkind: mcp-stdio\n"
        "mcp: {command: run, args: ['--token=${secret.token}'], env: {TOKEN: '${secret.token}'}}\n"
        "config: [{key: token, label: Token, type: secret}]\n"
    )
    _definition, problems = load_definition(write(tmp_path, "cli", text))
    assert [p.path for p in problems] == ["mcp.args[0]"]
    assert "command line" in problems[0].message


def test_load_catalog_raises_with_every_problem_of_every_file(tmp_path: Path) -> None:
    write(tmp_path, "wiki", GOOD.replace("kind: mcp-http", "kind: nope"))
    write(tmp_path, "other", GOOD)
    with pytest.raises(CatalogError) as raised:
        load_catalog([tmp_path])
    assert [(Path(p.file).name, p.path) for p in raised.value.problems] == [
        ("other.yaml", "slug"),
        ("wiki.yaml", "kind"),
    ]
    assert "Fix:" in str(raised.value)
    with pytest.raises(CatalogError, match="no such folder"):
        load_catalog([tmp_path / "missing"])


def test_agent_instructions_checked_on_their_own() -> None:
    assert check_agent_instructions({"id": "a", "version": 2, "text": "Do it."}) == []
    assert check_agent_instructions({"id": "x" * 161, "version": True, "text": ""}) == [
        "agentInstructions.id: must be text of 1-160 characters; write id: <app>.usage",
        "agentInstructions.version: must be a positive integer; write version: 1",
        "agentInstructions.text: must be non-empty text; write the instructions",
    ]


def test_catalog_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "check"]) == 0
    out = capsys.readouterr().out
    assert out.count("OK ") == 4
    assert "notes (mcp-stdio)" in out
    write(tmp_path, "wiki", _broken("version: 0"))
    write(tmp_path, "fine", GOOD.replace("slug: wiki", "slug: fine"))
    assert main(["catalog", "check", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'wiki.yaml'}:13: agentInstructions.version: ")
    assert lines[0].endswith("Fix: write version: 1")
    assert lines[1] == f"OK {tmp_path / 'fine.yaml'}: fine (mcp-http)"
    # Without its subcommand, the command shows its own help (not the top-level one).
    assert main(["catalog"]) == 2
    assert capsys.readouterr().err.startswith("usage: handrail catalog [-h] <command> ...")


def test_model_names() -> None:
    assert tool_prefix("My Notes!") == "my_notes"
    assert tool_prefix("???") == "connection"
    assert tool_prefix("x" * 40) == "x" * 24
    assert model_name("notes", "list.notes/all") == "notes_list_notes_all"
    assert len(model_name("n" * 24, "t" * 80)) == 64
