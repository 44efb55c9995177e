"""Tool hints and the safety class they give ("Policy" in DESIGN.md).

A tool declares hints as MCP annotations (``readOnlyHint``, ``destructiveHint``,
``idempotentHint``, ``openWorldHint``) and WebMCP ones (``consequentialHint``,
``untrustedContentHint``), plus ``skill``. A hint left out is *undeclared* (None), which is not
the same as false: a tool that declares nothing at all is consequential.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

SafetyClass = Literal["read-only", "mutating", "consequential"]
SAFETY_CLASSES: Final[tuple[SafetyClass, ...]] = ("read-only", "mutating", "consequential")

#: The MCP and WebMCP annotation names of each hint.
HINT_NAMES: Final[dict[str, str]] = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
    "consequential": "consequentialHint",
    "untrusted_content": "untrustedContentHint",
    "skill": "skill",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolHints:
    """What a tool declares about itself; None means the tool did not declare that hint."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    consequential: bool | None = None
    untrusted_content: bool | None = None
    skill: bool | None = None

    @property
    def declared(self) -> bool:
        """Whether the tool declared any hint at all."""
        return any(getattr(self, f.name) is not None for f in fields(self))

    def to_annotations(self) -> dict[str, bool]:
        """The declared hints under their MCP / WebMCP names."""
        out: dict[str, bool] = {}
        for name, wire in HINT_NAMES.items():
            value = getattr(self, name)
            if value is not None:
                out[wire] = value
        return out

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, Any] | None) -> ToolHints:
        """Hints from MCP / WebMCP annotations; non-boolean values count as undeclared."""
        if not annotations:
            return cls()
        values: dict[str, bool] = {}
        for name, wire in HINT_NAMES.items():
            value = annotations.get(wire)
            if isinstance(value, bool):
                values[name] = value
        return cls(**values)


def classify(hints: ToolHints, *, trusted: bool = True) -> SafetyClass:
    """The safety class of a tool from its hints.

    - Nothing declared: consequential.
    - ``consequentialHint: true``: consequential, whatever else it says.
    - ``readOnlyHint: true``, or ``skill`` (a skill is read-only unless it says
      ``readOnlyHint: false``): read-only. Destructive and idempotent mean something only when
      a tool is not read-only.
    - ``destructiveHint: true``: consequential (the stricter claim wins over
      ``consequentialHint: false``).
    - ``consequentialHint: false`` or ``destructiveHint: false``: mutating.
    - Anything else declared: consequential, as MCP's ``destructiveHint`` defaults to true.

    Hints from a connection that is not trusted can only make a tool stricter, never looser:
    every hint that would loosen it is ignored, so its tools are consequential.
    """
    if not hints.declared or not trusted:
        return "consequential"
    if hints.consequential is True:
        return "consequential"
    if hints.read_only is True or (hints.skill is True and hints.read_only is not False):
        return "read-only"
    if hints.destructive is True:
        return "consequential"
    if hints.consequential is False or hints.destructive is False:
        return "mutating"
    return "consequential"


def stricter(a: SafetyClass, b: SafetyClass) -> SafetyClass:
    """The stricter of two classes."""
    return a if SAFETY_CLASSES.index(a) >= SAFETY_CLASSES.index(b) else b
