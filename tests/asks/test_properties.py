"""Properties of the validators, with Hypothesis.

- They never raise, on any JSON value, for every kind and surface.
- Their errors are sorted by (path, code), use only codes of `ASK_ERROR_CODES`, and each has a
  message and a fix.
- Generated valid asks of every kind validate, and every button of their simple card sends an
  answer that validates.
- Every ask valid on the compact surface is valid on the full one.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.asks import (
    ASK_ERROR_CODES,
    ASK_FILE_ACCEPT,
    ASK_KINDS,
    ASK_SURFACES,
    FORM_FIELD_TYPES,
    AskValidationError,
    to_simple_card,
    validate_ask_input,
    validate_ask_response,
)
from handrail.asks.errors import path_order

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- Helpers ----------------------------------------------------------------------------------

# JavaScript's trim() whitespace, spelled out here so the tests do not lean on the code under
# test.
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# The "Returned by" column of the spec's Error codes table.
BOTH = {
    "DUPLICATE_ID",
    "FIELD_TYPE_MISMATCH",
    "INVALID_DATE",
    "INVALID_ENUM",
    "INVALID_FORMAT",
    "INVALID_TYPE",
    "MISSING_REQUIRED",
    "OTHER_NOT_ALLOWED",
    "OUT_OF_RANGE",
    "SELECTION_COUNT",
    "TOO_LONG",
    "TOO_MANY",
    "TOO_SHORT",
    "UNKNOWN_KEY",
}
INPUT_CODES = BOTH | {"DEFAULT_NOT_IN_OPTIONS", "DUPLICATE_LABEL", "RANGE_INVALID", "TOO_FEW"}
RESPONSE_CODES = BOTH | {
    "CHANGED_MISMATCH",
    "DECLINE_NOT_ALLOWED",
    "FILE_COUNT",
    "FILE_TOO_LARGE",
    "FILE_TYPE_NOT_ACCEPTED",
    "MIME_MISMATCH",
    "OPTION_NOT_OFFERED",
    "REQUIRED_FIELD",
}


def check_errors(errors: list[AskValidationError], allowed: set[str]) -> None:
    keys = [(path_order(e.path), e.code) for e in errors]
    assert keys == sorted(keys)  # by path segment by segment (indexes as numbers), then code
    for error in errors:
        assert error.code in allowed, error
        assert isinstance(error, AskValidationError)
        assert error.code in ASK_ERROR_CODES
        assert isinstance(error.path, str)
        assert error.message.strip()
        assert error.fix.strip()


def pairs(errors: list[AskValidationError]) -> list[tuple[str, str]]:
    return [(e.path, e.code) for e in errors]


# --- Arbitrary JSON ---------------------------------------------------------------------------

# Every key the validators read, so that generated objects reach deep into the rules.
KEYS = [
    # inputs
    "prompt",
    "title",
    "submitLabel",
    "allowDecline",
    "select",
    "options",
    "default",
    "minSelected",
    "maxSelected",
    "allowOther",
    "otherLabel",
    "id",
    "label",
    "description",
    "confirmLabel",
    "denyLabel",
    "destructive",
    "initial",
    "placeholder",
    "minLength",
    "maxLength",
    "fields",
    "type",
    "helperText",
    "required",
    "min",
    "max",
    "integer",
    "accept",
    "minFiles",
    "maxFiles",
    # answers
    "action",
    "content",
    "reason",
    "selected",
    "other",
    "confirmed",
    "markdown",
    "changed",
    "values",
    "files",
    "fileId",
    "url",
    "filename",
    "mimeType",
    "size",
]
WORDS = [
    *ASK_KINDS,
    *FORM_FIELD_TYPES,
    *ASK_FILE_ACCEPT,
    "one",
    "many",
    "accept",
    "decline",
    "cancel",
    "a",
    "b",
    "us",
    "eu",
    "",
    " ",
    "\u00a0",
    "\U0001f600",
    "image/png",
    "text/csv; charset=utf-8",
    "application/json",
    "66f0c0ffee0000000000000a",
    "data:image/png;base64,iVBORw0KGgo=",
    "data:text/plain;base64,aGk=",
    "data:image/png;base64,@@",
    "https://example.com",
    "2026-10-01",
    "2026-10-01T09:30Z",
    "09:30",
    "+14155552671",
    "name@example.com",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=60)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(WORDS)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=8)
    ),
    max_leaves=40,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A value of `base` with one to three spots replaced by arbitrary JSON, a key dropped, or a
    key added: nearly valid, so the validators run their deeper rules."""
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        if not path:
            if isinstance(value, dict) and draw(st.booleans()):
                value[draw(st.sampled_from(KEYS))] = draw(json_values)
            else:
                value = draw(json_values)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "drop":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(KEYS))] = draw(json_values)
        else:
            parent[path[-1]] = draw(json_values)
    return value


# --- Valid asks -------------------------------------------------------------------------------

VISIBLE = st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Po", "Sm", "So"), max_codepoint=0xFFFF)
ANY_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from(["\U0001f600", " "]),
    max_size=12,
)


@st.composite
def visible_text(draw: st.DrawFn, max_units: int, min_visible: int = 1) -> str:
    """Text of at most `max_units` UTF-16 code units whose first `min_visible` characters are
    visible (BMP, so one code unit each): it survives a trim with at least that many left."""
    core = draw(st.text(VISIBLE, min_size=min_visible, max_size=min_visible))
    text = core + draw(ANY_TEXT)
    while utf16(text) > max_units:
        text = text[:-1]
    return text


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Sometimes left out: `None` means "no such key"."""
    return st.none() | strategy


def build(**items: Any) -> dict[str, Any]:
    return {key: value for key, value in items.items() if value is not None}


OPTION_ID = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,63}", fullmatch=True)


@st.composite
def shared(draw: st.DrawFn, *, submit_label: bool = True) -> dict[str, Any]:
    return build(
        prompt=draw(visible_text(500)),
        title=draw(optional(visible_text(80))),
        submitLabel=draw(optional(visible_text(24))) if submit_label else None,
        allowDecline=draw(optional(st.booleans())),
    )


@st.composite
def options_of(draw: st.DrawFn, low: int, high: int, *, description: bool) -> list[dict[str, Any]]:
    ids = draw(st.lists(OPTION_ID, min_size=low, max_size=high, unique=True))
    return [
        build(
            id=option_id,
            label=draw(visible_text(120)),
            description=draw(optional(visible_text(280))) if description else None,
        )
        for option_id in ids
    ]


@st.composite
def choice_one(draw: st.DrawFn) -> dict[str, Any]:
    options = draw(options_of(2, 12, description=True))
    ids = [o["id"] for o in options]
    return build(
        **draw(shared()),
        select="one",
        options=options,
        default=draw(optional(st.lists(st.sampled_from(ids), max_size=1))),
        minSelected=draw(optional(st.just(1))),
        maxSelected=draw(optional(st.just(1))),
        allowOther=draw(optional(st.just(False))),
    )


@st.composite
def choice_many(draw: st.DrawFn) -> dict[str, Any]:
    options = draw(options_of(2, 12, description=True))
    ids = [o["id"] for o in options]
    allow_other = draw(optional(st.booleans()))
    offered = len(options) + (1 if allow_other else 0)
    max_selected = draw(optional(st.integers(1, offered)))
    high = offered if max_selected is None else max_selected
    min_selected = draw(optional(st.integers(0, high)))
    default = draw(optional(st.lists(st.sampled_from(ids), unique=True, max_size=high)))
    return build(
        **draw(shared()),
        select="many",
        options=options,
        default=default,
        minSelected=min_selected,
        maxSelected=max_selected,
        allowOther=allow_other,
        otherLabel=draw(optional(visible_text(120))) if allow_other else None,
    )


@st.composite
def confirm(draw: st.DrawFn) -> dict[str, Any]:
    ask = build(
        **draw(shared(submit_label=False)),
        confirmLabel=draw(optional(visible_text(20))),
        denyLabel=draw(optional(visible_text(20))),
        destructive=draw(optional(st.booleans())),
    )
    approve = ask.get("confirmLabel", "Confirm").strip(JS_SPACE)
    deny = ask.get("denyLabel", "Cancel").strip(JS_SPACE)
    if approve == deny:
        ask["denyLabel"] = "Not " + approve[:16]
    return ask


@st.composite
def markdown(draw: st.DrawFn) -> dict[str, Any]:
    max_length = draw(optional(st.integers(1, 20_000)))
    min_length = draw(optional(st.integers(0, 20_000 if max_length is None else max_length)))
    return build(
        **draw(shared()),
        initial=draw(optional(st.text(max_size=40) | visible_text(40))),
        placeholder=draw(optional(visible_text(120))),
        minLength=min_length,
        maxLength=max_length,
    )


@st.composite
def phone(draw: st.DrawFn) -> str:
    digits = draw(st.text("0123456789", min_size=7, max_size=15))
    out = "+" if draw(st.booleans()) else ""
    for index, digit in enumerate(digits):
        if index:
            out += draw(st.sampled_from(["", "", " ", ".", "-", "(", ")"]))
        out += digit
    return out


@st.composite
def datetime_value(draw: st.DrawFn) -> str:
    day = draw(st.dates()).isoformat()
    clock = draw(st.times())
    text = f"{day}T{clock:%H:%M}"
    if draw(st.booleans()):
        text += f":{clock:%S}"
        if draw(st.booleans()):
            text += "." + draw(st.text("0123456789", min_size=1, max_size=6))
    if draw(st.booleans()):
        return text + "Z"
    sign = draw(st.sampled_from("+-"))
    return text + f"{sign}{draw(st.integers(0, 23)):02d}:{draw(st.integers(0, 59)):02d}"


@st.composite
def text_field(draw: st.DrawFn, cap: int) -> dict[str, Any]:
    max_length = draw(optional(st.integers(1, cap)))
    min_length = draw(optional(st.integers(0, min(8, max_length or cap))))
    limit = max_length or cap
    default = draw(optional(visible_text(min(limit, 60), max(1, min_length or 0))))
    return build(minLength=min_length, maxLength=max_length, default=default)


@st.composite
def number_field(draw: st.DrawFn) -> dict[str, Any]:
    low = draw(optional(st.integers(-1000, 1000)))
    high = draw(optional(st.integers(low if low is not None else -1000, 2000)))
    integer = draw(optional(st.booleans()))
    lo = -10_000 if low is None else low
    hi = 10_000 if high is None else high
    if integer:
        default = draw(optional(st.integers(lo, hi)))
    else:
        default = draw(
            optional(st.integers(lo, hi) | st.floats(lo, hi, allow_nan=False, allow_infinity=False))
        )
    return build(min=low, max=high, integer=integer, default=default)


@st.composite
def options_field(draw: st.DrawFn, many: bool) -> dict[str, Any]:
    options = [
        {"id": o["id"], "label": o["label"]} for o in draw(options_of(2, 6, description=False))
    ]
    ids = [o["id"] for o in options]
    if many:
        default = draw(optional(st.lists(st.sampled_from(ids), unique=True)))
    else:
        default = draw(optional(st.sampled_from(ids)))
    return build(options=options, default=default)


def field_extras(field_type: str) -> st.SearchStrategy[dict[str, Any]]:
    """The extra keys and a valid default (sometimes none) of one field type."""
    simple: dict[str, st.SearchStrategy[Any]] = {
        "email": st.from_regex(
            r"[a-z0-9]{1,10}(\.[a-z0-9]{1,5})?@[a-z0-9]{1,10}\.[a-z]{2,6}", fullmatch=True
        ),
        "url": st.from_regex(
            r"https?://[a-z0-9]{1,10}(\.[a-z]{2,5})?(:[1-9][0-9]{0,3})?(/[a-z0-9]{0,8})?",
            fullmatch=True,
        ),
        "phone": phone(),
        "date": st.dates().map(lambda d: d.isoformat()),
        "time": st.times().map(lambda t: f"{t:%H:%M}"),
        "datetime": datetime_value(),
        "boolean": st.booleans(),
    }
    if field_type in simple:
        return st.builds(lambda d: build(default=d), optional(simple[field_type]))
    if field_type == "text":
        return text_field(2000)
    if field_type == "textarea":
        return text_field(10_000)
    if field_type == "number":
        return number_field()
    return options_field(field_type == "multiselect")


@st.composite
def form(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(OPTION_ID, min_size=1, max_size=8, unique=True))
    fields = []
    for field_id in ids:
        field_type = draw(st.sampled_from(FORM_FIELD_TYPES))
        fields.append(
            build(
                id=field_id,
                type=field_type,
                label=draw(visible_text(120)),
                helperText=draw(optional(visible_text(280))),
                required=draw(optional(st.booleans())),
                **draw(field_extras(field_type)),
            )
        )
    return build(**draw(shared()), fields=fields)


@st.composite
def files(draw: st.DrawFn) -> dict[str, Any]:
    max_files = draw(optional(st.integers(1, 10)))
    min_files = draw(optional(st.integers(1, max_files or 10)))
    return build(
        **draw(shared()),
        accept=draw(
            st.lists(st.sampled_from(ASK_FILE_ACCEPT), min_size=1, max_size=5, unique=True)
        ),
        minFiles=min_files,
        maxFiles=max_files,
    )


VALID_ASKS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "choice": choice_one() | choice_many(),
    "confirm": confirm(),
    "markdown": markdown(),
    "form": form(),
    "files": files(),
}


def _tagged(kind: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    return VALID_ASKS[kind].map(lambda ask: (kind, ask))


valid_asks = st.one_of(*(_tagged(kind) for kind in VALID_ASKS))

# --- (a, b) Never raise; sorted errors with known codes -------------------------------------

kinds = st.sampled_from(ASK_KINDS) | json_values
surfaces = st.sampled_from(ASK_SURFACES) | json_values
caps = st.none() | st.integers(min_value=0, max_value=20_000_000)


@FAST
@given(kind=kinds, input=json_values, surface=surfaces)
def test_validate_ask_input_never_raises_on_any_json(kind: Any, input: Any, surface: Any) -> None:
    check_errors(validate_ask_input(kind, input, surface=surface), INPUT_CODES)


@FAST
@given(kind=kinds, input=json_values, response=json_values, cap=caps)
def test_validate_ask_response_never_raises_on_any_json(
    kind: Any, input: Any, response: Any, cap: int | None
) -> None:
    check_errors(
        validate_ask_response(kind, input, response, max_file_size_bytes=cap), RESPONSE_CODES
    )


@FAST
@given(data=st.data(), surface=st.sampled_from(ASK_SURFACES))
def test_validate_ask_input_on_nearly_valid_asks(data: st.DataObject, surface: str) -> None:
    kind = data.draw(st.sampled_from(ASK_KINDS))
    ask = data.draw(mutated(VALID_ASKS[kind]))
    check_errors(validate_ask_input(kind, ask, surface=surface), INPUT_CODES)


@FAST
@given(data=st.data(), cap=caps)
def test_validate_ask_response_on_nearly_valid_answers(
    data: st.DataObject, cap: int | None
) -> None:
    kind, ask = data.draw(valid_asks)
    card = to_simple_card(kind, ask, "call_1")
    answers = [b["response"] for b in card["buttons"]] or [{"action": "cancel"}]
    answers.extend(_sample_answers(kind, ask))
    response = data.draw(mutated(st.sampled_from(answers)))
    other_ask = data.draw(st.just(ask) | mutated(st.just(ask)))
    errors = validate_ask_response(kind, other_ask, response, max_file_size_bytes=cap)
    check_errors(errors, RESPONSE_CODES)


def _sample_answers(kind: str, ask: dict[str, Any]) -> list[dict[str, Any]]:
    """A few well-formed answers to mutate, so the content rules of every kind run."""
    if kind == "choice":
        ids = [o["id"] for o in ask["options"]]
        return [{"action": "accept", "content": {"selected": ids[:2], "other": "Basil"}}]
    if kind == "confirm":
        return [{"action": "accept", "content": {"confirmed": False}}]
    if kind == "markdown":
        return [{"action": "accept", "content": {"markdown": "# Hi", "changed": True}}]
    if kind == "form":
        values = {f["id"]: f.get("default", "x") for f in ask["fields"]}
        return [{"action": "accept", "content": {"values": values}}]
    return [
        {
            "action": "accept",
            "content": {
                "files": [
                    {
                        "url": "data:image/png;base64,iVBORw0KGgo=",
                        "filename": "a.png",
                        "mimeType": "image/png",
                        "size": 8,
                    },
                    {
                        "fileId": "66f0c0ffee0000000000000a",
                        "filename": "a.csv",
                        "mimeType": "text/csv",
                        "size": 10,
                    },
                ]
            },
        }
    ]


# --- (c) Valid asks validate, and their card buttons send valid answers ----------------------


@FAST
@given(valid_asks)
def test_generated_valid_asks_validate(kind_and_ask: tuple[str, dict[str, Any]]) -> None:
    kind, ask = kind_and_ask
    assert pairs(validate_ask_input(kind, ask)) == []


@FAST
@given(valid_asks)
def test_every_card_button_sends_a_valid_answer(kind_and_ask: tuple[str, dict[str, Any]]) -> None:
    kind, ask = kind_and_ask
    card = to_simple_card(kind, ask, "call_1")
    assert len(card["buttons"]) <= 3
    for button in card["buttons"]:
        assert pairs(validate_ask_response(kind, ask, button["response"])) == [], button


# --- (d) Compact-valid implies full-valid ----------------------------------------------------

SHORT_LABELS = st.sampled_from(["Yes", "No", "Go", "Go ", " Go", "Later", "\U0001f680 Launch"])


@st.composite
def compact_shaped_choice(draw: st.DrawFn) -> dict[str, Any]:
    """A choice meant for a watch, valid on the compact surface about half of the time: 2-4
    options, short labels (some too long, some alike), and now and then a "many" key."""
    count = draw(st.sampled_from([2, 2, 3, 3, 3, 4]))
    ids = draw(st.lists(OPTION_ID, min_size=count, max_size=count, unique=True))
    label = st.one_of(SHORT_LABELS, visible_text(20), visible_text(24))
    if draw(st.integers(0, 4)):
        labels = st.lists(
            label, min_size=count, max_size=count, unique_by=lambda text: text.strip(JS_SPACE)
        )
    else:
        labels = st.lists(label, min_size=count, max_size=count)
    options = [{"id": i, "label": text} for i, text in zip(ids, draw(labels), strict=True)]
    ask = build(
        prompt=draw(visible_text(140)),
        title=draw(optional(visible_text(40))),
        select=draw(st.sampled_from(["one"] * 7 + ["many"])),
        options=options,
        default=draw(optional(st.lists(st.sampled_from(ids), max_size=1))),
        allowDecline=draw(optional(st.booleans())),
    )
    for key, value in (("minSelected", 1), ("maxSelected", 1), ("allowOther", False)):
        if draw(st.integers(0, 19)) == 0:
            ask[key] = value
    return ask


@st.composite
def compact_shaped_confirm(draw: st.DrawFn) -> dict[str, Any]:
    labels = st.one_of(SHORT_LABELS, st.sampled_from(["Confirm", "Cancel"]), visible_text(24))
    return build(
        prompt=draw(visible_text(200)),
        confirmLabel=draw(optional(labels)),
        denyLabel=draw(optional(labels)),
        destructive=draw(optional(st.booleans())),
        allowDecline=draw(optional(st.booleans())),
    )


compact_shaped = st.one_of(
    compact_shaped_choice().map(lambda ask: ("choice", ask)),
    compact_shaped_confirm().map(lambda ask: ("confirm", ask)),
)


@settings(max_examples=200, deadline=None)
@given(compact_shaped)
def test_compact_valid_asks_are_full_valid(kind_and_ask: tuple[str, dict[str, Any]]) -> None:
    kind, ask = kind_and_ask
    compact = validate_ask_input(kind, ask, surface="compact")
    check_errors(compact, INPUT_CODES)
    if not compact:
        assert pairs(validate_ask_input(kind, ask, surface="full")) == []
        # The narrowed schemas accept only asks whose buttons show every option.
        assert to_simple_card(kind, ask, "call_1")["handoff"] is False


@FAST
@given(st.one_of(_tagged("choice"), _tagged("confirm")))
def test_compact_errors_add_to_full_errors(kind_and_ask: tuple[str, dict[str, Any]]) -> None:
    # The compact rules come on top of the full ones: an ask valid on the full surface fails on
    # the compact one only with the compact codes.
    kind, ask = kind_and_ask
    compact = pairs(validate_ask_input(kind, ask, surface="compact"))
    assert {code for _, code in compact} <= {
        "INVALID_ENUM",
        "TOO_MANY",
        "TOO_LONG",
        "DUPLICATE_LABEL",
        "UNKNOWN_KEY",
    }
    if kind == "confirm":
        assert compact == []
