"""The pending ask: the one noun every gate shares, and its JSON forms in one place.

A history waits on at most one `PendingAsk`. The model's asks, clarify, approvals, permission
asks, selections and confirmations are all one: they differ in `origin` and in the gate state
they keep (`held_tool_call_id`, `confirmation_id`, ...). `PendingAsk.to_json` is the stored
form (camelCase, exactly as it has always been stored, so no migration) and
`PendingAsk.from_json` reads it back; keys a later gate adds and this version does not know
are kept in `extra` and written back as they were.

Which keys a client sees is declared once, in `PENDING_ASK_FIELDS`: each field names the
surfaces it appears on (`Surface`): the history view (``view``), the SSE ``{ask}`` event
(``event``), the items of ``GET /histories/pendingAsks`` (``summary``) and the headless ``turn``
result (``turn``). `PendingAsk.public` derives a surface's JSON from it, so nothing added to
the stored form can leak by accident.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .limits import ASK_KINDS

__all__ = [
    "PENDING_ASK_FIELDS",
    "PendingAsk",
    "PendingAskField",
    "Surface",
]

#: Where a pending ask is shown: the history view, the ``{ask}`` event, the ``pendingAsks``
#: items and the headless ``turn`` result.
Surface = Literal["view", "event", "summary", "turn"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingAskField:
    """One key of the stored ``pendingAsk``: its wire name, its attribute, and the surfaces
    that show it."""

    key: str
    attr: str
    surfaces: frozenset[Surface] = frozenset()


def _field(key: str, attr: str, *surfaces: Surface) -> PendingAskField:
    return PendingAskField(key=key, attr=attr, surfaces=frozenset(surfaces))


#: Every key of the stored form, in the order it is written and shown. ``summary`` and
#: ``turn`` keep the published schemas' fields only: a gate shows there as a plain ask.
PENDING_ASK_FIELDS: Final[tuple[PendingAskField, ...]] = (
    _field("toolCallId", "tool_call_id", "view", "event", "summary", "turn"),
    _field("kind", "kind", "view", "event", "summary", "turn"),
    _field("input", "input", "view", "event"),
    _field("simple", "simple", "view", "event", "summary", "turn"),
    _field("created", "created", "view", "summary"),
    _field("origin", "origin", "view", "event"),
    _field("toolName", "tool_name", "view", "event"),
    _field("connectionId", "connection_id", "view", "event"),
    _field("approvalId", "approval_id", "view"),
    _field("heldToolCallId", "held_tool_call_id", "view", "event"),
    _field("preview", "preview", "view", "event"),
    _field("expiresAt", "expires_at", "view", "event"),
    # Who must approve it (user ids or ``admins``), how many, and who did so far.
    _field("approvers", "approvers", "view", "event"),
    _field("quorum", "quorum", "view", "event"),
    _field("approvedBy", "approved_by", "view", "event"),
    _field("remindAt", "remind_at", "view"),
    _field("elicitation", "elicitation", "view", "event"),
    # Gate state, for the server only.
    _field("confirmationId", "confirmation_id"),
    _field("dependency", "dependency"),
    _field("choices", "choices"),
    _field("editedArguments", "edited_arguments"),
    _field("argumentsDigest", "arguments_digest"),
    # The gate asks waiting for the one slot after this one, in order (stored forms).
    _field("queued", "queued"),
    # What the paused turn replays, for the model only.
    _field("promptIndex", "prompt_index"),
    _field("responseMessages", "response_messages"),
    # The connection instructions the paused turn started with ({text, digest}).
    _field("connectionInstructions", "connection_instructions"),
)
_BY_KEY: Final = {f.key: f for f in PENDING_ASK_FIELDS}
_SURFACE_FIELDS: Final[dict[Surface, tuple[PendingAskField, ...]]] = {
    surface: tuple(f for f in PENDING_ASK_FIELDS if surface in f.surfaces)
    for surface in ("view", "event", "summary", "turn")
}


@dataclass(kw_only=True, slots=True)
class PendingAsk:
    """The ask a history waits on, as stored.

    `kind` is an ask kind or ``clarify``; `input` the validated input; `simple` its card.
    `origin` is None for the model's own asks and names the gate otherwise (``approval``,
    ``permission``, ``selection``, ``confirmation``, ...); a gate that holds a tool call names
    it by `held_tool_call_id`. `prompt_index` and `response_messages` are what the paused turn
    replays; they never leave the server.
    """

    tool_call_id: str
    kind: str
    input: dict[str, Any]
    simple: dict[str, Any]
    created: str | None = None
    origin: str | None = None
    tool_name: str | None = None
    connection_id: str | None = None
    approval_id: str | None = None
    held_tool_call_id: str | None = None
    preview: dict[str, Any] | None = None
    expires_at: str | None = None
    approvers: list[str] | None = None
    quorum: int | None = None
    approved_by: list[dict[str, Any]] | None = None
    remind_at: str | None = None
    #: An MCP server's request for input (``origin: "elicitation"``): ``{mode, server}``, and
    #: for URL mode the ``url`` to show (never fetched by the server).
    elicitation: dict[str, Any] | None = None
    confirmation_id: str | None = None
    dependency: str | None = None
    choices: dict[str, str] | None = None
    edited_arguments: dict[str, Any] | None = None
    #: An approval's digest of the arguments the held call would run with (managed ones
    #: included): a different digest when it is approved means the call went stale.
    arguments_digest: str | None = None
    #: The gate asks that wait for the one slot behind this one (an MCP server's request for
    #: input that came while another ask held it), in order, as stored: the first becomes
    #: the pending ask once this one is done and the turn goes on. Never shown.
    queued: list[dict[str, Any]] | None = None
    prompt_index: int | None = None
    response_messages: list[dict[str, Any]] | None = None
    #: The connection instructions snapshot ``{text, digest}`` the paused turn started with
    #: (None: none applied); it resumes with the same one.
    connection_instructions: dict[str, Any] | None = None
    #: Stored keys this version does not know, kept as they are.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def card_kind(self) -> str:
        """The kind a plain client sees: a clarify ask shows as the kind of its card (one
        choice, one confirm, or a form), so the published schemas' five kinds hold."""
        return self.kind if self.kind in ASK_KINDS else str(self.simple["kind"])

    def to_json(self) -> dict[str, Any]:
        """The stored form: every set key, camelCase, in `PENDING_ASK_FIELDS` order."""
        out = _STORED(self)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PendingAsk:
        """Read the stored form back (`to_json`'s inverse)."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            spec = _BY_KEY.get(key)
            if spec is None:
                extra[key] = value
            elif value is not None:
                known[spec.attr] = value
        return cls(**known, extra=extra)

    def public(self, surface: Surface) -> dict[str, Any]:
        """What `surface` shows of this ask: only the keys declared public there. On
        ``summary`` and ``turn`` the kind is `card_kind`."""
        out = _PUBLIC[surface](self)
        if surface in ("summary", "turn"):
            out["kind"] = self.card_kind
        return out

    def replace(self, **changes: Any) -> PendingAsk:
        """A copy with `changes` (attribute names): `dataclasses.replace`'s (the same values,
        shared as it shares them), at a fraction of its cost (it goes through `__init__` with
        every field by name)."""
        if type(self) is not PendingAsk or not changes.keys() <= _ATTRS:
            return dataclasses.replace(self, **changes)
        out = _COPY(self)
        for name, value in changes.items():
            setattr(out, name, value)
        return out


#: `PendingAsk`'s attributes, in field order (`PendingAsk.replace`).
_ATTR_NAMES: Final = tuple(f.name for f in dataclasses.fields(PendingAsk))
_ATTRS: Final = frozenset(_ATTR_NAMES)


def _compiled(name: str, lines: list[str]) -> Callable[[PendingAsk], Any]:
    """A function of `self` made from `lines` (its body), as `dataclasses` makes `__init__`:
    one attribute read per field, without a loop over the fields and a `getattr` call each
    (about half the time of those loops for an ask's 27 fields)."""
    source = f"def {name}(self):\n" + "".join(f"    {line}\n" for line in lines)
    space: dict[str, Any] = {"_NEW": object.__new__, "PendingAsk": PendingAsk}
    exec(source, space)  # the names are `PENDING_ASK_FIELDS`' own, fixed here
    made: Callable[[PendingAsk], Any] = space[name]
    return made


def _picker(
    name: str, fields: tuple[PendingAskField, ...]
) -> Callable[[PendingAsk], dict[str, Any]]:
    """``self`` as a dict of the `fields` that are set (not None), by key, in their order."""
    lines = ["out = {}"]
    for f in fields:
        lines += [f"v = self.{f.attr}", "if v is not None:", f"    out[{f.key!r}] = v"]
    return _compiled(name, [*lines, "return out"])


#: The stored form's keys of an ask (`to_json` adds `extra`), and each surface's (`public`).
_STORED: Final = _picker("_stored", PENDING_ASK_FIELDS)
_PUBLIC: Final = {
    surface: _picker(f"_public_{surface}", fields) for surface, fields in _SURFACE_FIELDS.items()
}
#: A copy of an ask sharing its values (`replace`).
_COPY: Final[Callable[[PendingAsk], PendingAsk]] = _compiled(
    "_copy", ["out = _NEW(PendingAsk)", *(f"out.{n} = self.{n}" for n in _ATTR_NAMES), "return out"]
)
