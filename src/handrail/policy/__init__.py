"""The safety policy, pure: tool hints → a safety class; levels and grants → a decision."""

from .decide import (
    GRANT_SCOPES,
    PERMISSION_DESCRIPTIONS,
    PERMISSION_LABELS,
    PERMISSION_LEVELS,
    Decision,
    DecisionAction,
    GrantScope,
    PermissionLevel,
    allowed_without_asking,
    decide,
)
from .hints import HINT_NAMES, SAFETY_CLASSES, SafetyClass, ToolHints, classify, stricter

__all__ = [
    "GRANT_SCOPES",
    "HINT_NAMES",
    "PERMISSION_DESCRIPTIONS",
    "PERMISSION_LABELS",
    "PERMISSION_LEVELS",
    "SAFETY_CLASSES",
    "Decision",
    "DecisionAction",
    "GrantScope",
    "PermissionLevel",
    "SafetyClass",
    "ToolHints",
    "allowed_without_asking",
    "classify",
    "decide",
    "stricter",
]
