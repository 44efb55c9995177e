"""The words of the asks the server makes (approval, permission, selection, confirmation):
written for the person, from a tool's human `title` and the values they decide on, never from
text written for the model (a tool's description) or the developer (a JSON path).

`values_phrase` reads values as a sentence tail: a ``date`` as "on 2026-12-04", a ``time`` as
"at 19:00", any other field as ", <its label>: <value>", where the label is the field's JSON
Schema ``title`` or its name with spaces for underscores. ``Book a table`` with the preview
``{date, time, notes}`` reads "Book a table on 2026-12-04 at 19:00, notes: A table for two".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..policy import PERMISSION_DESCRIPTIONS, PERMISSION_LEVELS

__all__ = ["field_label", "level_choice", "values_phrase", "what_is_chosen"]

#: Fields read with a preposition instead of their label.
_PREPOSITIONS: Final[dict[str, str]] = {"date": "on", "day": "on", "time": "at"}


def field_label(name: str, schema: Mapping[str, Any] | None = None) -> str:
    """A field's name in the person's words: its schema ``title``, else its name with spaces
    for underscores (``party_size`` → "party size")."""
    properties = (schema or {}).get("properties")
    if isinstance(properties, Mapping):
        spec = properties.get(name)
        if isinstance(spec, Mapping):
            title = spec.get("title")
            if isinstance(title, str) and title.strip():
                return title.strip()
    return name.replace("_", " ").strip() or name


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def values_phrase(values: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> str:
    """`values` as the tail of a sentence (see the module's docstring). Missing values (None,
    blank text) are left out; nothing to show gives ""."""
    out = ""
    for name, value in values.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        shown = _value_text(value)
        preposition = _PREPOSITIONS.get(name.lower())
        if preposition is not None and isinstance(value, str):
            out += f" {preposition} {shown}"
        else:
            out += f", {field_label(name, schema)}: {shown}"
    return out


def what_is_chosen(names: Iterable[str], schema: Mapping[str, Any] | None = None) -> str:
    """What a selection picks, in the person's words: the labels of the fields its candidates
    decide, joined with "and" ("time", "room and time"); "" when there are none."""
    labels = list(dict.fromkeys(field_label(name, schema) for name in names if name))
    if len(labels) <= 1:
        return "".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def level_choice(title: str, prompt: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """A permission ask's input: one of the permission levels to pick (each with its label of
    `labels` and its description), or decline."""
    return {
        "title": title,
        "prompt": prompt,
        "select": "one",
        "options": [
            {
                "id": level,
                "label": labels[level],
                "description": PERMISSION_DESCRIPTIONS[level],
            }
            for level in PERMISSION_LEVELS
        ],
        "allowDecline": True,
    }
