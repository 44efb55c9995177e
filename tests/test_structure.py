"""The structure keeps itself true: the layers of DESIGN.md, and the public names.

- No module imports a higher layer (imports inside ``if TYPE_CHECKING:`` count too: a type is a
  dependency). `asks` imports the standard library only.
- ``handrail.__all__`` and each subpackage's ``__all__`` are pinned here, sorted the way ruff's
  RUF022 sorts them (constants, then classes, then functions), and every name in them exists.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Final

import pytest

SRC: Final = Path(__file__).resolve().parents[1] / "src" / "handrail"

#: Which packages each layer may import (besides the shared modules below). `demo` and the
#: command line may import anything.
LAYERS: Final[dict[str, frozenset[str]]] = {
    "asks": frozenset(),
    "policy": frozenset({"asks"}),
    "actions": frozenset({"asks", "policy"}),
    "connections": frozenset({"asks", "policy", "actions"}),
    "store": frozenset({"asks"}),
    "runtime": frozenset({"asks", "policy", "actions", "connections", "store"}),
    "server": frozenset({"asks", "policy", "actions", "connections", "store", "runtime"}),
}
#: Modules every layer may import: the error root, the small utilities, the schema checker.
SHARED: Final = frozenset({"errors", "_util", "_frozen", "_jsonschema", "_version"})
#: Third-party packages `asks` could reach for by mistake: it is stdlib only.
STDLIB: Final = frozenset(sys.stdlib_module_names)


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "web" not in p.relative_to(SRC).parts[:1])


def _imports(rel: Path, source: str) -> list[tuple[str, int]]:
    """The modules a module (at `rel` under ``src/handrail``) imports, absolute, with lines."""
    tree = ast.parse(source)
    package = ["handrail", *rel.parts[:-1]]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
                if node.module is None:
                    found.extend((f"{name}.{alias.name}", node.lineno) for alias in node.names)
                    continue
            found.append((name, node.lineno))
    return found


def _problems(rel: Path, source: str) -> list[str]:
    """Each import of the module at `rel` that its layer does not allow."""
    layer = rel.parts[0] if len(rel.parts) > 1 else rel.parts[0].removesuffix(".py")
    allowed = LAYERS.get(layer)
    problems: list[str] = []
    for name, line in _imports(rel, source):
        parts = name.split(".")
        if parts[0] != "handrail":
            if layer == "asks" and parts[0] not in STDLIB and parts[0] != "__future__":
                problems.append(f"{rel}:{line} imports {name} (asks is stdlib only)")
            continue
        target = parts[1] if len(parts) > 1 else "handrail"
        if (layer in SHARED and target not in SHARED) or (
            allowed is not None and target not in {layer, *allowed, *SHARED}
        ):
            problems.append(f"{rel}:{line} imports {name}")
    return problems


def test_no_module_imports_a_higher_layer() -> None:
    problems: list[str] = []
    for path in _modules():
        problems.extend(_problems(path.relative_to(SRC), path.read_text(encoding="utf-8")))
    assert problems == []


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("store/fake.py", "from ..runtime.runtime import Runtime\n", 1),
        ("store/fake.py", "from handrail.server import create_app\n", 1),
        ("asks/fake.py", "import httpx\n", 1),
        ("policy/fake.py", "from ..asks import ASK_KINDS\n", 0),
        ("errors.py", "from .runtime import Runtime\n", 1),
        ("runtime/fake.py", "from ..store import Store\nfrom ..server import app\n", 1),
    ],
)
def test_the_layer_check_can_fail(rel: str, source: str, expected: int) -> None:
    assert len(_problems(Path(rel), source)) == expected


def _ruff_order(names: list[str]) -> list[str]:
    """RUF022's isort-style order: SCREAMING_CASE, then CamelCase, then the rest."""

    def key(name: str) -> tuple[int, str]:
        if name.isupper() or (name.upper() == name and "_" in name):
            return (0, name)
        if name[:1].isupper():
            return (1, name)
        return (2, name)

    return sorted(names, key=key)


PINNED: Final[dict[str, list[str]]] = {
    "handrail": [
        "Agent",
        "AsksOptions",
        "ConfigError",
        "DomainError",
        "Gate",
        "GateRequired",
        "HandrailError",
        "PendingAsk",
        "Principal",
        "ProblemError",
        "Runtime",
        "Store",
        "Tool",
        "ToolError",
        "ToolSet",
        "Turn",
        "TurnResult",
        "__version__",
    ],
    "handrail.runtime": [
        "Agent",
        "Answer",
        "ApprovalGate",
        "AsksOptions",
        "ClarifyGate",
        "ConfirmationGate",
        "ElicitationGate",
        "Gate",
        "GateRequired",
        "InvalidArguments",
        "ModelAskGate",
        "PermissionGate",
        "Principal",
        "Runtime",
        "SelectionGate",
        "StepRunner",
        "Tool",
        "ToolError",
        "ToolSet",
        "ToolSignal",
        "Turn",
        "TurnResult",
        "TurnRun",
        "compare_and_set",
        "execution_denied",
        "gate_for",
        "register_gate",
        "registered_gates",
        "tool",
        "unregister_gate",
    ],
    "handrail.errors": [
        "AlreadyApproved",
        "AnswerIdMissing",
        "AnswerNotObject",
        "BadRequest",
        "ConfigError",
        "ConfirmationExpired",
        "Conflict",
        "DatabaseUnavailable",
        "DomainError",
        "FileNotFound",
        "Forbidden",
        "HandrailError",
        "HistoryNotFound",
        "InvalidAnswer",
        "InvalidRequest",
        "NotApprover",
        "NotFound",
        "NotOwner",
        "NotPending",
        "PayloadTooLarge",
        "ProblemError",
        "PromptRequired",
        "Unauthorized",
        "UnknownAgent",
        "UnknownButton",
        "UnknownSurface",
    ],
}

#: Every subpackage whose ``__all__`` must be sorted and resolvable.
PACKAGES: Final = (
    "handrail",
    "handrail.asks",
    "handrail.policy",
    "handrail.actions",
    "handrail.connections",
    "handrail.store",
    "handrail.runtime",
    "handrail.runtime.models",
    "handrail.server",
    "handrail.demo",
    "handrail.errors",
)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_public_names(name: str) -> None:
    assert list(importlib.import_module(name).__all__) == PINNED[name]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == _ruff_order(exported)
    assert len(set(exported)) == len(exported)
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == []
