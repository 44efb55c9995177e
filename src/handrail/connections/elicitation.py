"""MCP elicitation as asks: a server's request for input becomes the ask a person answers, and
the answer becomes the server's `ElicitResult`. Pure functions on JSON, no I/O.

- A form request (`requestedSchema`, flat) becomes a ``form`` ask: string → ``text`` (or
  ``textarea`` past the text cap), ``format`` email / uri / date / date-time → ``email`` /
  ``url`` / ``date`` / ``datetime``; number and integer → ``number``; boolean → ``boolean``;
  single-select (``enum``, ``oneOf: [{const, title}]``, legacy ``enumNames``) → ``select``;
  multi-select (``type: array`` with ``items.enum`` or ``items.anyOf``) → ``multiselect``.
  ``required`` → required fields, titles → labels, descriptions → helper text, defaults kept
  when the field accepts them. A property name or a value that breaks the id pattern is given
  a valid id, mapped back in the answer (`ElicitationForm`).
- An empty schema becomes a ``confirm``; so does a URL request (consent only: the URL is shown,
  never fetched).
- A schema of more fields than one form holds is shown as consecutive forms ("1 of 2"), each
  answered in turn and sent to the server as one content; more than `FORM_PAGES_MAX` forms'
  worth, nesting or an unknown type is `Unshowable`: the server is declined and the model told
  why.

`elicit_result` turns a validated answer back: ``accept`` with content keyed by the server's
property names (unanswered optional fields left out, never ``null``; an integer as an integer;
a ``date-time`` in RFC 3339's full form, seconds and a ``+hh:mm`` offset included, whatever
shorter form the field took), ``decline`` or ``cancel``. `answer_errors` checks what a field
does not hold itself: a multi-select's ``minItems`` / ``maxItems`` and a formatted string's
``minLength`` / ``maxLength``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..asks import AskValidationError, validate_ask_input
from ..asks.checks import add, is_number
from ..asks.fields import check_field_value, is_blank_value
from ..asks.limits import (
    FORM_FIELDS_MAX,
    FORM_HELPER_MAX,
    FORM_LABEL_MAX,
    FORM_TEXT_MAX,
    FORM_TEXTAREA_MAX,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    OPTIONS_MIN,
    PROMPT_MAX,
)
from ..asks.text import cut_text

__all__ = [
    "ELICITATION_ORIGIN",
    "ElicitationAsk",
    "ElicitationForm",
    "ElicitationRequest",
    "FormField",
    "Unshowable",
    "answer_errors",
    "elicit_result",
    "to_ask",
    "valid_id",
]

ELICITATION_ORIGIN: Final = "elicitation"
ID_MAX: Final = 64
#: The most consecutive forms one request is shown as.
FORM_PAGES_MAX: Final = 4
_ID: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_STRING_FORMATS: Final[dict[str, str]] = {
    "email": "email",
    "uri": "url",
    "date": "date",
    "date-time": "datetime",
}
#: An answer of a ``datetime`` field: date, hours and minutes, seconds, offset.
_DATETIME: Final = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)$"
)
Mode = Literal["form", "url"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ElicitationRequest:
    """What a server asked: a form (`requested_schema`) or a URL to open (`url`)."""

    mode: Mode
    message: str
    server: str
    requested_schema: Mapping[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class FormField:
    """How one ask field maps back to a server property."""

    name: str
    type: str
    options: Mapping[str, Any] = field(default_factory=dict)
    min_items: int | None = None
    max_items: int | None = None
    #: A string's ``format`` (``date-time`` answers are sent in RFC 3339's full form).
    format: str | None = None
    #: A formatted string's ``minLength`` / ``maxLength``, which its field does not hold.
    min_length: int | None = None
    max_length: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.options:
            out["options"] = dict(self.options)
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.format is not None:
            out["format"] = self.format
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FormField:
        return cls(
            name=str(data["name"]),
            type=str(data["type"]),
            options=dict(data.get("options") or {}),
            min_items=data.get("minItems"),
            max_items=data.get("maxItems"),
            format=data.get("format"),
            min_length=data.get("minLength"),
            max_length=data.get("maxLength"),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ElicitationForm:
    """The way back from an ask's answer to the server's content: the request's mode and, for
    a form, each field id's property (kept with the pending ask, never shown)."""

    mode: Mode
    kind: str
    fields: Mapping[str, FormField] = field(default_factory=dict)
    #: The forms still to show after this one: ``{input, fields}`` each.
    later: tuple[Mapping[str, Any], ...] = ()
    #: What the forms before this one were answered with (the server's property names).
    collected: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "kind": self.kind,
            "fields": {k: f.to_json() for k, f in self.fields.items()},
        }
        if self.later:
            out["later"] = [dict(page) for page in self.later]
        if self.collected:
            out["collected"] = dict(self.collected)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ElicitationForm:
        mode: Mode = "url" if data.get("mode") == "url" else "form"
        return cls(
            mode=mode,
            kind=str(data.get("kind") or "form"),
            fields={k: FormField.from_json(v) for k, v in (data.get("fields") or {}).items()},
            later=tuple(data.get("later") or ()),
            collected=dict(data.get("collected") or {}),
        )

    def next_form(self, content: Mapping[str, Any]) -> tuple[dict[str, Any], ElicitationForm]:
        """The next form's input and way back, once this one was answered with `content`."""
        page = self.later[0]
        fields = {k: FormField.from_json(v) for k, v in page["fields"].items()}
        return dict(page["input"]), ElicitationForm(
            mode=self.mode,
            kind="form",
            fields=fields,
            later=self.later[1:],
            collected={**self.collected, **content},
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ElicitationAsk:
    """The ask of a request: its kind and input, the public ``elicitation`` of the pending ask
    and the way back."""

    kind: str
    input: dict[str, Any]
    public: dict[str, Any]
    form: ElicitationForm


@dataclass(frozen=True, kw_only=True, slots=True)
class Unshowable:
    """A request no ask can show; `reason` completes "The form cannot be shown: ..."."""

    reason: str


def valid_id(name: str, taken: set[str]) -> str:
    """An id of the form field id pattern for `name`: `name` itself when it fits, else a
    lowercase form of it (other characters as ``_``), unique among `taken` (which it joins)."""
    if _ID.fullmatch(name) and name not in taken:
        taken.add(name)
        return name
    base = re.sub(r"[^a-z0-9_-]+", "_", name.lower())
    base = re.sub(r"^[^a-z0-9]+", "", base)[:ID_MAX] or "field"
    candidate = base
    number = 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate = base[: ID_MAX - len(suffix)] + suffix
        number += 1
    taken.add(candidate)
    return candidate


def _label(name: str, title: Any) -> str:
    if isinstance(title, str) and title.strip():
        return cut_text(title.strip(), FORM_LABEL_MAX)
    words = re.sub(r"[_\-]+", " ", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)).strip()
    return cut_text(words[:1].upper() + words[1:].lower() if words else name, FORM_LABEL_MAX)


def _options(
    values: list[Any], labels: list[Any] | None, where: str
) -> tuple[list[dict[str, str]], dict[str, Any]] | Unshowable:
    if not all(isinstance(v, str) for v in values):
        return Unshowable(reason=f"the choices of {where} are not all text")
    if not OPTIONS_MIN <= len(values) <= OPTIONS_MAX:
        return Unshowable(
            reason=(
                f"{where} offers {len(values)} choices; a form offers {OPTIONS_MIN} to "
                f"{OPTIONS_MAX}"
            )
        )
    taken: set[str] = set()
    options: list[dict[str, str]] = []
    back: dict[str, Any] = {}
    for index, value in enumerate(values):
        option_id = valid_id(value, taken)
        label = labels[index] if labels and index < len(labels) else None
        text = label if isinstance(label, str) and label.strip() else value
        options.append(
            {"id": option_id, "label": cut_text(text.strip() or option_id, OPTION_LABEL_MAX)}
        )
        back[option_id] = value
    return options, back


def _choices(spec: Mapping[str, Any]) -> tuple[list[Any], list[Any] | None] | None:
    """The values and labels of a single-select or of a multi-select's items."""
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames")
        return list(spec["enum"]), list(names) if isinstance(names, list) else None
    for key in ("oneOf", "anyOf"):
        entries = spec.get(key)
        if (
            isinstance(entries, list)
            and entries
            and all(isinstance(e, dict) and "const" in e for e in entries)
        ):
            return [e["const"] for e in entries], [e.get("title") for e in entries]
    return None


def _field(
    name: str, spec: Mapping[str, Any], field_id: str, required: bool
) -> tuple[dict[str, Any], FormField] | Unshowable:
    where = f"the field {_label(name, spec.get('title'))!r}"
    out: dict[str, Any] = {"id": field_id, "label": _label(name, spec.get("title"))}
    description = spec.get("description")
    if isinstance(description, str) and description.strip():
        out["helperText"] = cut_text(description.strip(), FORM_HELPER_MAX)
    if required:
        out["required"] = True
    kind = spec.get("type")
    back = FormField(name=name, type=str(kind))
    choices = _choices(spec)
    if kind == "string" and choices is not None:
        made = _options(choices[0], choices[1], where)
        if isinstance(made, Unshowable):
            return made
        out["type"] = "select"
        out["options"] = made[0]
        back = FormField(name=name, type="string", options=made[1])
        default = spec.get("default")
        reverse = {v: k for k, v in made[1].items()}
        if default in reverse:
            out["default"] = reverse[default]
        return out, back
    if kind == "array":
        items = spec.get("items")
        picked = _choices(items) if isinstance(items, Mapping) else None
        if picked is None:
            return Unshowable(reason=f"{where} is a list of values, not a choice of options")
        made = _options(picked[0], picked[1], where)
        if isinstance(made, Unshowable):
            return made
        out["type"] = "multiselect"
        out["options"] = made[0]
        low = spec.get("minItems")
        high = spec.get("maxItems")
        low = low if isinstance(low, int) and not isinstance(low, bool) and low > 0 else None
        high = high if isinstance(high, int) and not isinstance(high, bool) and high > 0 else None
        if low is not None and high is not None and low > high:
            return Unshowable(reason=f"{where} asks for at least {low} and at most {high}")
        if low is not None or high is not None:
            pick = _pick_phrase(low, high)
            out["helperText"] = cut_text(
                f"{out['helperText']} ({pick})" if "helperText" in out else pick.capitalize(),
                FORM_HELPER_MAX,
            )
        back = FormField(name=name, type="array", options=made[1], min_items=low, max_items=high)
        reverse = {v: k for k, v in made[1].items()}
        default = spec.get("default")
        if isinstance(default, list) and all(d in reverse for d in default):
            out["default"] = [reverse[d] for d in default]
        return out, back
    if kind == "string":
        fmt = spec.get("format")
        field_type = _STRING_FORMATS.get(fmt, "text") if isinstance(fmt, str) else "text"
        out["type"] = field_type
        low, high = spec.get("minLength"), spec.get("maxLength")
        if field_type != "text":
            # The field takes no length bounds: the answer is checked against them instead.
            shortest = _count(low)
            longest = _count(high)
            if shortest is not None and longest is not None and shortest > longest:
                return Unshowable(
                    reason=f"{where} asks for at least {shortest} and at most {longest} characters"
                )
            back = FormField(
                name=name,
                type="string",
                format=fmt if isinstance(fmt, str) else None,
                min_length=shortest,
                max_length=longest,
            )
        else:
            if isinstance(high, int) and not isinstance(high, bool) and high > 0:
                if high > FORM_TEXTAREA_MAX:
                    high = FORM_TEXTAREA_MAX
                if high > FORM_TEXT_MAX:
                    out["type"] = "textarea"
                out["maxLength"] = high
            if isinstance(low, int) and not isinstance(low, bool) and low > 0:
                out["minLength"] = low
        _default(out, spec.get("default"))
        if "default" in out and not _fits(back, out["default"]):
            del out["default"]
        return out, back
    if kind in ("number", "integer"):
        out["type"] = "number"
        if kind == "integer":
            out["integer"] = True
        for source, target in (("minimum", "min"), ("maximum", "max")):
            if is_number(spec.get(source)):
                out[target] = spec[source]
        _default(out, spec.get("default"))
        return out, back
    if kind == "boolean":
        out["type"] = "boolean"
        _default(out, spec.get("default"))
        return out, back
    if kind == "object" or isinstance(spec.get("properties"), Mapping):
        return Unshowable(reason=f"{where} holds fields of its own, and a form is flat")
    return Unshowable(reason=f"{where} has the type {kind!r}, which a form cannot show")


def _count(value: Any) -> int | None:
    """A positive ``minLength`` / ``maxLength``, or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _fits(spec: FormField, value: Any) -> bool:
    """Whether a formatted string's answer, as sent, holds the server's length bounds."""
    if not isinstance(value, str):
        return True
    length = len(_sent(spec, value))
    if spec.min_length is not None and length < spec.min_length:
        return False
    return spec.max_length is None or length <= spec.max_length


def _sent(spec: FormField, value: Any) -> Any:
    """An answer's value as the server gets it: a ``date-time`` in RFC 3339's full form
    (``2026-10-01T09:30Z`` is sent as ``2026-10-01T09:30:00Z``, ``+0530`` as ``+05:30``)."""
    if spec.format != "date-time" or not isinstance(value, str):
        return value
    match = _DATETIME.fullmatch(value)
    if match is None:
        return value
    day, clock, seconds, offset = match.groups()
    if offset not in ("Z", "z"):
        digits = offset[1:].replace(":", "")
        offset = f"{offset[0]}{digits[:2]}:{digits[2:4] or '00'}"
    else:
        offset = "Z"
    return f"{day}T{clock}{seconds or ':00'}{offset}"


def _pick_phrase(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"pick {low} to {high}" if low != high else f"pick {low}"
    if low is not None:
        return f"pick at least {low}"
    return f"pick at most {high}"


def _default(out: dict[str, Any], default: Any) -> None:
    """Keep a default only when the field accepts it."""
    if default is None:
        return
    errors: list[AskValidationError] = []
    check_field_value(errors, out, default, "default", default=True)
    if not errors:
        out["default"] = default


def _words(request: ElicitationRequest, fallback: str) -> str:
    message = request.message.strip()
    return cut_text(message or fallback, PROMPT_MAX)


def to_ask(request: ElicitationRequest) -> ElicitationAsk | Unshowable:
    """The ask of `request` (see the module's docs), or why none can show it."""
    server = request.server
    title = cut_text(f"{server} asks", 80)
    if request.mode == "url":
        confirm = {
            "title": cut_text(f"{server} asks you to open a page", 80),
            "prompt": _words(request, f"{server} asks you to open a page."),
            "confirmLabel": "Allow",
            "denyLabel": "Decline",
        }
        return ElicitationAsk(
            kind="confirm",
            input=confirm,
            public={"mode": "url", "server": server, "url": request.url or ""},
            form=ElicitationForm(mode="url", kind="confirm"),
        )
    schema = request.requested_schema or {}
    properties = schema.get("properties")
    public = {"mode": "form", "server": server}
    if properties is not None and not isinstance(properties, Mapping):
        return Unshowable(reason="its schema's properties are not an object")
    if not properties:
        confirm = {
            "title": title,
            "prompt": _words(request, f"{server} asks you to confirm."),
            "confirmLabel": "Send",
            "denyLabel": "Decline",
        }
        return ElicitationAsk(
            kind="confirm",
            input=confirm,
            public=public,
            form=ElicitationForm(mode="form", kind="confirm"),
        )
    if len(properties) > FORM_FIELDS_MAX * FORM_PAGES_MAX:
        return Unshowable(
            reason=(
                f"it asks for {len(properties)} fields, more than the "
                f"{FORM_FIELDS_MAX * FORM_PAGES_MAX} handrail shows as {FORM_PAGES_MAX} forms"
            )
        )
    required = schema.get("required")
    needed = {str(r) for r in required} if isinstance(required, list) else set()
    taken: set[str] = set()
    fields: list[tuple[dict[str, Any], FormField]] = []
    for name, spec in properties.items():
        if not isinstance(spec, Mapping):
            return Unshowable(reason=f"the field {name!r} has no schema")
        made = _field(str(name), spec, valid_id(str(name), taken), str(name) in needed)
        if isinstance(made, Unshowable):
            return made
        fields.append(made)
    chunks = [fields[i : i + FORM_FIELDS_MAX] for i in range(0, len(fields), FORM_FIELDS_MAX)]
    pages: list[dict[str, Any]] = []
    for number, chunk in enumerate(chunks, start=1):
        where = f" ({number} of {len(chunks)})" if len(chunks) > 1 else ""
        form = {
            "title": cut_text(f"{server} asks", 80 - len(where)) + where,
            "prompt": _words(request, f"{server} needs a few details."),
            "fields": [f for f, _ in chunk],
            "submitLabel": "Send" if number == len(chunks) else "Next",
            "allowDecline": True,
        }
        errors = validate_ask_input("form", form)
        if errors:
            first = errors[0]
            return Unshowable(reason=f"{first.message} ({first.path})".strip())
        pages.append({"input": form, "fields": {f["id"]: back.to_json() for f, back in chunk}})
    first_page = pages[0]
    return ElicitationAsk(
        kind="form",
        input=first_page["input"],
        public=public,
        form=ElicitationForm(
            mode="form",
            kind="form",
            fields={k: FormField.from_json(v) for k, v in first_page["fields"].items()},
            later=tuple(pages[1:]),
        ),
    )


def answer_errors(form: ElicitationForm, envelope: Mapping[str, Any]) -> list[AskValidationError]:
    """The rules of the server's schema a form field does not hold itself: how many options a
    multi-select takes, and how long a formatted string (email, URL, date) may be."""
    errors: list[AskValidationError] = []
    if form.kind != "form" or envelope.get("action") != "accept":
        return errors
    content = envelope.get("content")
    values = content.get("values") if isinstance(content, Mapping) else None
    if not isinstance(values, Mapping):
        return errors
    for field_id, spec in form.fields.items():
        value = values.get(field_id)
        path = f"content.values.{field_id}"
        if isinstance(value, str) and not is_blank_value(value) and not _fits(spec, value):
            length = len(_sent(spec, value))
            if spec.min_length is not None and length < spec.min_length:
                add(
                    errors,
                    path,
                    "TOO_SHORT",
                    f"{length} characters, fewer than the {spec.min_length} this field needs.",
                    f"Write at least {spec.min_length} characters.",
                )
            else:
                add(
                    errors,
                    path,
                    "TOO_LONG",
                    f"{length} characters, more than the {spec.max_length} this field takes.",
                    f"Write at most {spec.max_length} characters.",
                )
            continue
        if spec.type != "array" or not isinstance(value, list) or not value:
            continue
        if spec.min_items is not None and len(value) < spec.min_items:
            add(
                errors,
                path,
                "TOO_SHORT",
                f"{len(value)} selected, fewer than the {spec.min_items} this field needs.",
                f"Select at least {spec.min_items}.",
            )
        if spec.max_items is not None and len(value) > spec.max_items:
            add(
                errors,
                path,
                "TOO_LONG",
                f"{len(value)} selected, more than the {spec.max_items} this field takes.",
                f"Select at most {spec.max_items}.",
            )
    return errors


def elicit_result(form: ElicitationForm, envelope: Mapping[str, Any]) -> dict[str, Any]:
    """The server's `ElicitResult` (as JSON) for a validated answer."""
    action = envelope.get("action")
    if action == "cancel":
        return {"action": "cancel"}
    if action != "accept":
        return {"action": "decline"}
    content = envelope.get("content")
    if form.kind == "confirm":
        confirmed = isinstance(content, Mapping) and content.get("confirmed") is True
        if not confirmed:
            return {"action": "decline"}
        return {"action": "accept"} if form.mode == "url" else {"action": "accept", "content": {}}
    values = content.get("values") if isinstance(content, Mapping) else None
    out: dict[str, Any] = dict(form.collected)
    for field_id, spec in form.fields.items():
        value = values.get(field_id) if isinstance(values, Mapping) else None
        if value is None or is_blank_value(value):
            continue
        if spec.options:
            if isinstance(value, list):
                out[spec.name] = [spec.options.get(v, v) for v in value]
            else:
                out[spec.name] = spec.options.get(value, value)
        elif spec.type == "integer" and is_number(value):
            out[spec.name] = int(value)
        else:
            out[spec.name] = _sent(spec, value)
    return {"action": "accept", "content": out}
