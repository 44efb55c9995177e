"""Clarify (``appwrite.clarify/v1``): the model's batched follow-up questions as pure functions.

The model calls the ``clarify`` tool with ``prompts`` (a JSON string of an array or of one
prompt, an object, or an array) and an optional ``title``. `validate_clarify_prompts` turns a
valid call into the canonical envelope, defaults filled in, which is both the tool output and
the input of the pending ask of kind ``clarify``; an invalid call gets its errors, and
`clarify_error_text` the tool result the model reads. The person answers with an answer
envelope whose ``accept`` content is a ``ClarifyAnswers`` object, checked by
`validate_clarify_response`; `clarify_simple_card` is the ask's small-screen form.

Like the rest of `handrail.asks`: stdlib only, no I/O, the error codes of `ASK_ERROR_CODES`,
lengths in UTF-16 code units, and no function raises on any JSON value.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from .answers import ANSWER_ACTIONS
from .checks import (
    Errors,
    add,
    check_bool,
    check_enum,
    check_list,
    check_object,
    check_text,
    duplicate_id,
    invalid_enum,
    list_size,
    missing,
    too_long,
    too_short,
    unknown_keys,
    wrong_type,
)
from .errors import AskValidationError, join_path, sort_errors
from .helpers import DEFAULT_CONFIRM_LABEL, DEFAULT_DENY_LABEL
from .limits import CANCEL_REASON_MAX, CARD_BUTTONS_MAX, CARD_TEXT_MAX, CARD_TITLE_MAX
from .text import cut_text, describe, is_blank, js_trim, utf16_len

__all__ = [
    "CLARIFY_ERROR_PREFIX",
    "CLARIFY_KINDS",
    "CLARIFY_LIMITS",
    "CLARIFY_PROTOCOL",
    "CLARIFY_TOOL_NAME",
    "ClarifyKind",
    "ClarifyResult",
    "clarify_answer_summary",
    "clarify_error_text",
    "clarify_simple_card",
    "validate_clarify_answers",
    "validate_clarify_prompts",
    "validate_clarify_response",
]

ClarifyKind = Literal["choice", "confirm", "text"]

#: The wire protocol id; an envelope or a ``ClarifyAnswers`` with another one is not clarify.
CLARIFY_PROTOCOL: Final = "appwrite.clarify/v1"
#: The name of the tool the model calls.
CLARIFY_TOOL_NAME: Final = "clarify"
#: The start of the tool result of an invalid call (with an em dash).
CLARIFY_ERROR_PREFIX: Final = "Error: invalid clarify prompts \u2014 "
CLARIFY_KINDS: Final[tuple[ClarifyKind, ...]] = ("choice", "confirm", "text")

CLARIFY_ID_PATTERN: Final = "^[a-z][a-z0-9_.-]{0,63}$"

#: Every limit of clarify, nested like `ASK_LIMITS`: ``CLARIFY_LIMITS["choice"]["optionsMax"]``.
#: Lengths are UTF-16 code units. ``text.valueMaxLength`` and ``text.multilineValueMaxLength``
#: bound a text answer; they are handrail's (the protocol sets none), the same as a form's
#: ``text`` and ``textarea`` fields.
CLARIFY_LIMITS: Final[MappingProxyType[str, Any]] = MappingProxyType(
    {
        "choice": MappingProxyType(
            {
                "optionDescriptionMaxLength": 300,
                "optionLabelMaxLength": 120,
                "optionsMax": 12,
                "optionsMin": 2,
            }
        ),
        "confirm": MappingProxyType({"labelMaxLength": 120}),
        "hintMaxLength": 500,
        "idPattern": CLARIFY_ID_PATTERN,
        "promptsMax": 5,
        "promptsMin": 1,
        "questionMaxLength": 500,
        "text": MappingProxyType(
            {
                "defaultValueMaxLength": 2000,
                "multilineValueMaxLength": 10_000,
                "placeholderMaxLength": 200,
                "valueMaxLength": 2000,
            }
        ),
        "titleMaxLength": 120,
    }
)

_PROMPTS_MIN: Final[int] = CLARIFY_LIMITS["promptsMin"]
_PROMPTS_MAX: Final[int] = CLARIFY_LIMITS["promptsMax"]
_QUESTION_MAX: Final[int] = CLARIFY_LIMITS["questionMaxLength"]
_HINT_MAX: Final[int] = CLARIFY_LIMITS["hintMaxLength"]
_TITLE_MAX: Final[int] = CLARIFY_LIMITS["titleMaxLength"]
_OPTIONS_MIN: Final[int] = CLARIFY_LIMITS["choice"]["optionsMin"]
_OPTIONS_MAX: Final[int] = CLARIFY_LIMITS["choice"]["optionsMax"]
_OPTION_LABEL_MAX: Final[int] = CLARIFY_LIMITS["choice"]["optionLabelMaxLength"]
_OPTION_DESCRIPTION_MAX: Final[int] = CLARIFY_LIMITS["choice"]["optionDescriptionMaxLength"]
_CONFIRM_LABEL_MAX: Final[int] = CLARIFY_LIMITS["confirm"]["labelMaxLength"]
_PLACEHOLDER_MAX: Final[int] = CLARIFY_LIMITS["text"]["placeholderMaxLength"]
_DEFAULT_VALUE_MAX: Final[int] = CLARIFY_LIMITS["text"]["defaultValueMaxLength"]
_VALUE_MAX: Final[int] = CLARIFY_LIMITS["text"]["valueMaxLength"]
_MULTILINE_VALUE_MAX: Final[int] = CLARIFY_LIMITS["text"]["multilineValueMaxLength"]

_ID: Final = re.compile(CLARIFY_ID_PATTERN)
_ABSENT: Any = object()

_COMMON_KEYS: Final = frozenset({"id", "kind", "question", "hint", "required"})
_PROMPT_KEYS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        "choice": _COMMON_KEYS | {"options", "allowMultiple"},
        "confirm": _COMMON_KEYS | {"confirmLabel", "cancelLabel", "danger"},
        "text": _COMMON_KEYS | {"placeholder", "defaultValue", "multiline"},
    }
)
_OPTION_KEYS: Final = frozenset({"id", "label", "description"})
_ANSWERS_KEYS: Final = frozenset({"protocol", "answers"})
#: The key holding each kind's answer value in a ``ClarifyAnswers`` entry.
_VALUE_KEYS: Final[Mapping[str, str]] = MappingProxyType(
    {"choice": "values", "confirm": "confirmed", "text": "value"}
)
_ANY_ANSWER_KEYS: Final = frozenset({"id", "kind", *_VALUE_KEYS.values()})
_ENVELOPE_KEYS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        "accept": frozenset({"action", "content"}),
        "decline": frozenset({"action"}),
        "cancel": frozenset({"action", "reason"}),
    }
)

#: At most this many problems are spelled out in `clarify_error_text`.
_ERROR_TEXT_MAX_PROBLEMS: Final = 20
_CARD_FALLBACK_TEXT: Final = "Answer in the app."


# --- the prompts -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClarifyResult:
    """The outcome of `validate_clarify_prompts`: exactly one of `envelope` (the canonical
    envelope of a valid call) and `errors` (every problem of an invalid one, sorted by path
    then code) is set."""

    envelope: dict[str, Any] | None
    errors: list[AskValidationError]

    def __post_init__(self) -> None:
        if (self.envelope is None) == (not self.errors):
            raise ValueError("A ClarifyResult holds exactly one of an envelope or errors.")

    @property
    def ok(self) -> bool:
        """Whether the call was valid."""
        return self.envelope is not None

    def tool_result(self) -> str:
        """What the ``clarify`` tool returns to the model: the envelope as compact JSON, or
        `clarify_error_text` of the errors."""
        if self.envelope is None:
            return clarify_error_text(self.errors)
        return json.dumps(self.envelope, ensure_ascii=False, separators=(",", ":"))


def validate_clarify_prompts(prompts: Any, title: Any = None) -> ClarifyResult:
    """Check the arguments of a ``clarify`` call and build its canonical envelope.

    `prompts` is a JSON string (of an array of prompts or of one prompt object), an object or
    an array; one object counts as a list of one, so paths read ``prompts[0].question`` either
    way. `title` is optional: ``None`` or ``""`` means no title. The envelope is
    ``{"protocol", "title"?, "prompts"}`` with every default filled in (``required``,
    ``allowMultiple``, ``multiline``, ``danger``, ``confirmLabel``, ``cancelLabel``), so a
    client needs no knowledge of them. Never raises on any JSON value.
    """
    errors: Errors = []
    items = _prompt_list(errors, prompts)
    envelope: dict[str, Any] = {"protocol": CLARIFY_PROTOCOL}
    if title is not None and title != "":
        checked_title = check_text(
            errors, {"title": title}, "title", "", max_length=_TITLE_MAX, what="a short title"
        )
        if checked_title is not None:
            envelope["title"] = checked_title
    if items is not None:
        list_size(errors, "prompts", items, _PROMPTS_MIN, _PROMPTS_MAX, "prompts")
        seen: set[str] = set()
        envelope["prompts"] = [
            _prompt(errors, raw, f"prompts[{index}]", seen) for index, raw in enumerate(items)
        ]
    if errors:
        return ClarifyResult(envelope=None, errors=sort_errors(errors))
    return ClarifyResult(envelope=envelope, errors=[])


def clarify_error_text(errors: list[AskValidationError]) -> str:
    """The tool result of an invalid ``clarify`` call: ``Error: invalid clarify prompts — ``
    then each problem as ``path: message fix``, joined with ``; ``. At most 20 problems are
    spelled out; the text then says how many more there are."""
    shown = errors[:_ERROR_TEXT_MAX_PROBLEMS]
    problems = [
        f"{e.path}: {e.message} {e.fix}" if e.path else f"{e.message} {e.fix}" for e in shown
    ]
    if len(errors) > len(shown):
        more = len(errors) - len(shown)
        problems.append(f"and {more} more problem{'s' if more > 1 else ''}")
    if not problems:
        problems.append("the prompts could not be read. Check them against the clarify protocol.")
    return CLARIFY_ERROR_PREFIX + "; ".join(problems)


def _prompt_list(errors: Errors, prompts: Any) -> list[Any] | None:
    """The prompts as a list: parsed from a JSON string, one object wrapped in a list."""
    what = "a JSON array of prompt objects, one prompt object, or a JSON string of either"
    if prompts is None:
        missing(errors, "prompts", what)
        return None
    if isinstance(prompts, str):
        fix = "Send prompts as a JSON array of prompt objects, or as one prompt object."
        if is_blank(prompts):
            add(errors, "prompts", "INVALID_FORMAT", "`prompts` is an empty string.", fix)
            return None
        try:
            prompts = json.loads(prompts)
        except json.JSONDecodeError as exc:
            reason = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
            add(errors, "prompts", "INVALID_FORMAT", f"`prompts` is not valid JSON: {reason}.", fix)
            return None
        except (ValueError, RecursionError):
            message = "`prompts` is nested too deeply or holds a number too long to read."
            add(errors, "prompts", "INVALID_FORMAT", message, fix)
            return None
        if not isinstance(prompts, dict | list):
            wrong_type(errors, "prompts", prompts, "a JSON array or object")
            return None
    if isinstance(prompts, dict):
        return [prompts]
    if isinstance(prompts, list):
        return prompts
    wrong_type(errors, "prompts", prompts, what)
    return None


def _check_id(errors: Errors, obj: dict[str, Any], path: str, noun: str) -> str | None:
    value = obj.get("id", _ABSENT)
    if value.__class__ is str and _ID.fullmatch(value) is not None:
        return value
    id_path = join_path(path, "id")
    if value is _ABSENT:
        missing(errors, id_path, f"the {noun}'s id, matching {CLARIFY_ID_PATTERN}")
    elif not isinstance(value, str):
        wrong_type(errors, id_path, value, "a string")
    else:
        add(
            errors,
            id_path,
            "INVALID_FORMAT",
            f"{describe(value)} is not a valid {noun} id.",
            "Use a lowercase letter, then lowercase letters, digits, '_', '.' or '-', at most "
            f"64 characters ({CLARIFY_ID_PATTERN}).",
        )
    return None


def _prompt(errors: Errors, raw: Any, path: str, seen: set[str]) -> dict[str, Any] | None:
    """One prompt, checked; its canonical form (defaults filled in) when it is valid."""
    if not isinstance(raw, dict):
        wrong_type(errors, path, raw, "a prompt object with id, kind and question")
        return None
    before = len(errors)
    kind = check_enum(errors, raw, "kind", path, CLARIFY_KINDS, required=True)
    if kind is not None:
        unknown_keys(errors, raw, _PROMPT_KEYS[kind], path)
    prompt_id = _check_id(errors, raw, path, "prompt")
    if prompt_id is not None:
        if prompt_id in seen:
            duplicate_id(errors, join_path(path, "id"), prompt_id)
        seen.add(prompt_id)
    question = check_text(
        errors,
        raw,
        "question",
        path,
        max_length=_QUESTION_MAX,
        required=True,
        what=f"the question in plain text, 1 to {_QUESTION_MAX} characters",
    )
    hint = check_text(errors, raw, "hint", path, max_length=_HINT_MAX)
    required = check_bool(errors, raw, "required", path)
    prompt: dict[str, Any] = {"id": prompt_id, "kind": kind, "question": question}
    if hint is not None:
        prompt["hint"] = hint
    prompt["required"] = required is not False
    if kind == "choice":
        prompt["options"] = _options(errors, raw, path)
        prompt["allowMultiple"] = check_bool(errors, raw, "allowMultiple", path) is True
    elif kind == "confirm":
        labels = [
            check_text(errors, raw, key, path, max_length=_CONFIRM_LABEL_MAX)
            for key in ("confirmLabel", "cancelLabel")
        ]
        prompt["confirmLabel"] = labels[0] or DEFAULT_CONFIRM_LABEL
        prompt["cancelLabel"] = labels[1] or DEFAULT_DENY_LABEL
        prompt["danger"] = check_bool(errors, raw, "danger", path) is True
    elif kind == "text":
        for key, limit in (("placeholder", _PLACEHOLDER_MAX), ("defaultValue", _DEFAULT_VALUE_MAX)):
            value = check_text(errors, raw, key, path, max_length=limit)
            if value is not None:
                prompt[key] = value
        prompt["multiline"] = check_bool(errors, raw, "multiline", path) is True
    return prompt if len(errors) == before else None


def _options(errors: Errors, raw: dict[str, Any], path: str) -> list[dict[str, Any]]:
    options = check_list(
        errors,
        raw,
        "options",
        path,
        required=True,
        what=f"{_OPTIONS_MIN} to {_OPTIONS_MAX} options, each with an id and a label",
    )
    if options is None:
        return []
    list_size(errors, join_path(path, "options"), options, _OPTIONS_MIN, _OPTIONS_MAX, "options")
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, option in enumerate(options):
        option_path = f"{path}.options[{index}]"
        if not isinstance(option, dict):
            wrong_type(errors, option_path, option, "an option object with id and label")
            continue
        unknown_keys(errors, option, _OPTION_KEYS, option_path)
        option_id = _check_id(errors, option, option_path, "option")
        if option_id is not None:
            if option_id in seen:
                duplicate_id(errors, join_path(option_path, "id"), option_id)
            seen.add(option_id)
        label = check_text(
            errors,
            option,
            "label",
            option_path,
            max_length=_OPTION_LABEL_MAX,
            required=True,
            what="the text the option shows",
        )
        description = check_text(
            errors, option, "description", option_path, max_length=_OPTION_DESCRIPTION_MAX
        )
        canonical: dict[str, Any] = {"id": option_id, "label": label}
        if description is not None:
            canonical["description"] = description
        out.append(canonical)
    return out


# --- the answers -----------------------------------------------------------------------------


def _envelope_prompts(envelope: Any) -> dict[str, dict[str, Any]]:
    """The envelope's readable prompts keyed by id, in order; the first of a repeated id."""
    raw = envelope.get("prompts") if isinstance(envelope, dict) else None
    prompts: dict[str, dict[str, Any]] = {}
    for prompt in raw if isinstance(raw, list) else ():
        if not isinstance(prompt, dict):
            continue
        prompt_id, kind = prompt.get("id"), prompt.get("kind")
        if isinstance(prompt_id, str) and isinstance(kind, str) and kind in CLARIFY_KINDS:
            prompts.setdefault(prompt_id, prompt)
    return prompts


def _is_required(prompt: Mapping[str, Any]) -> bool:
    return prompt.get("required") is not False


def _offered(prompt: Mapping[str, Any]) -> list[str]:
    options = prompt.get("options")
    return [
        option["id"]
        for option in (options if isinstance(options, list) else ())
        if isinstance(option, dict) and isinstance(option.get("id"), str)
    ]


def _quoted(ids: list[str]) -> str:
    return ", ".join(json.dumps(i, ensure_ascii=False) for i in ids) or "(none)"


def validate_clarify_answers(envelope: Any, answers: Any) -> list[AskValidationError]:
    """Check a ``ClarifyAnswers`` object, the content of an ``accept`` answer, against the
    (valid) envelope it answers. Paths start with ``content.``.

    An answer names a prompt by ``id`` (an unknown id is `INVALID_ENUM`) with that prompt's
    ``kind``, at most once per prompt (`DUPLICATE_ID`); every required prompt has an answer
    (`REQUIRED_FIELD` at ``content.answers``). Returns every error, sorted by path then code;
    never raises on any JSON value.
    """
    errors: Errors = []
    if not isinstance(answers, dict):
        wrong_type(errors, "content", answers, "a ClarifyAnswers object with protocol and answers")
        return errors
    unknown_keys(errors, answers, _ANSWERS_KEYS, "content")
    protocol = answers.get("protocol", _ABSENT)
    if protocol is _ABSENT:
        missing(errors, "content.protocol", f'"{CLARIFY_PROTOCOL}"')
    elif not isinstance(protocol, str):
        wrong_type(errors, "content.protocol", protocol, "a string")
    elif protocol != CLARIFY_PROTOCOL:
        invalid_enum(errors, "content.protocol", protocol, (CLARIFY_PROTOCOL,))
    items = check_list(
        errors,
        answers,
        "answers",
        "content",
        required=True,
        what="one answer per prompt, each {id, kind} with values, confirmed or value",
    )
    if items is None:
        return sort_errors(errors)
    prompts = _envelope_prompts(envelope)
    answered: set[str] = set()
    for index, item in enumerate(items):
        _answer(errors, prompts, item, f"content.answers[{index}]", answered)
    for prompt_id, prompt in prompts.items():
        if prompt_id not in answered and _is_required(prompt):
            add(
                errors,
                "content.answers",
                "REQUIRED_FIELD",
                f"The prompt {describe(prompt_id)} is required but has no answer.",
                f"Add an answer with id {describe(prompt_id)}.",
            )
    return sort_errors(errors)


def _answer(
    errors: Errors,
    prompts: dict[str, dict[str, Any]],
    item: Any,
    path: str,
    answered: set[str],
) -> None:
    if not isinstance(item, dict):
        wrong_type(errors, path, item, "an answer object with id, kind and the prompt's value")
        return
    prompt: dict[str, Any] | None = None
    answer_id = item.get("id", _ABSENT)
    id_path = join_path(path, "id")
    if answer_id is _ABSENT:
        missing(errors, id_path, "the id of the prompt this answers")
    elif not isinstance(answer_id, str):
        wrong_type(errors, id_path, answer_id, "a string")
    elif answer_id not in prompts:
        add(
            errors,
            id_path,
            "INVALID_ENUM",
            f"{describe(answer_id)} is not the id of a prompt of this clarify.",
            f"Answer the prompts by their ids: {_quoted(list(prompts))}.",
        )
    else:
        prompt = prompts[answer_id]
        if answer_id in answered:
            duplicate_id(errors, id_path, answer_id)
        answered.add(answer_id)
    kind = item.get("kind", _ABSENT)
    kind_path = join_path(path, "kind")
    if kind is _ABSENT:
        missing(errors, kind_path, "the kind of the prompt this answers")
    elif not isinstance(kind, str):
        wrong_type(errors, kind_path, kind, "a string")
    elif prompt is not None and kind != prompt["kind"]:
        add(
            errors,
            kind_path,
            "INVALID_ENUM",
            f"The prompt {describe(answer_id)} is a {prompt['kind']} prompt, not {describe(kind)}.",
            f'Send kind "{prompt["kind"]}".',
        )
    elif prompt is None and kind not in CLARIFY_KINDS:
        invalid_enum(errors, kind_path, kind, CLARIFY_KINDS)
    if prompt is None:
        # Without its prompt an answer's value cannot be judged; only its keys can.
        keys = _ANY_ANSWER_KEYS
        if isinstance(kind, str) and kind in CLARIFY_KINDS:
            keys = frozenset({"id", "kind", _VALUE_KEYS[kind]})
        unknown_keys(errors, item, keys, path)
        return
    prompt_kind = prompt["kind"]
    unknown_keys(errors, item, frozenset({"id", "kind", _VALUE_KEYS[prompt_kind]}), path)
    if prompt_kind == "choice":
        _choice_answer(errors, prompt, item, path)
    elif prompt_kind == "confirm":
        if "confirmed" not in item:
            missing(errors, join_path(path, "confirmed"), "true to confirm or false to cancel")
        else:
            check_bool(errors, item, "confirmed", path)
    else:
        _text_answer(errors, prompt, item, path)


def _choice_answer(
    errors: Errors, prompt: Mapping[str, Any], item: dict[str, Any], path: str
) -> None:
    values = check_list(
        errors, item, "values", path, required=True, what="the ids of the chosen options"
    )
    if values is None:
        return
    values_path = join_path(path, "values")
    offered = _offered(prompt)
    if len(values) > _OPTIONS_MAX:
        add(
            errors,
            values_path,
            "TOO_MANY",
            f"`{values_path}` holds {len(values)} ids, more than the {_OPTIONS_MAX} allowed.",
            f"Select at most {_OPTIONS_MAX} options.",
        )
        return
    seen: set[str] = set()
    for index, value in enumerate(values):
        value_path = join_path(values_path, index)
        if not isinstance(value, str):
            wrong_type(errors, value_path, value, "an option id")
        elif value not in offered:
            add(
                errors,
                value_path,
                "OPTION_NOT_OFFERED",
                f"{describe(value)} is not one of the offered options.",
                f"Use the id of one of the prompt's options: {_quoted(offered)}.",
            )
        elif value in seen:
            duplicate_id(errors, value_path, value)
        else:
            seen.add(value)
    low = 1 if _is_required(prompt) else 0
    high = max(len(offered), 1) if prompt.get("allowMultiple") is True else 1
    if not low <= len(values) <= high:
        wanted = f"exactly {low}" if low == high else f"{low} to {high}"
        add(
            errors,
            values_path,
            "SELECTION_COUNT",
            f"The answer selects {len(values)} options; the prompt takes {wanted}.",
            f"Select {wanted} option{'' if high == 1 else 's'}.",
        )


def _text_answer(
    errors: Errors, prompt: Mapping[str, Any], item: dict[str, Any], path: str
) -> None:
    value_path = join_path(path, "value")
    if "value" not in item:
        missing(errors, value_path, 'the text the person wrote ("" for none)')
        return
    value = item["value"]
    if not isinstance(value, str):
        wrong_type(errors, value_path, value, "a string")
        return
    limit = _MULTILINE_VALUE_MAX if prompt.get("multiline") is True else _VALUE_MAX
    length = utf16_len(value)
    if length > limit:
        too_long(errors, value_path, length, limit)
    if _is_required(prompt) and is_blank(value):
        question = prompt.get("question")
        name = describe(question if isinstance(question, str) else prompt.get("id"))
        add(
            errors,
            value_path,
            "REQUIRED_FIELD",
            f"{name} is required but the answer is blank.",
            f"Write an answer to {name}.",
        )


def validate_clarify_response(envelope: Any, response: Any) -> list[AskValidationError]:
    """Check an answer envelope to a clarify ask: ``accept`` with ``ClarifyAnswers`` as its
    content, ``decline`` (the person skips; always allowed) or ``cancel`` with an optional
    reason of at most 200 characters. Strict keys, as for every ask. Returns every error,
    sorted by path then code; never raises on any JSON value."""
    errors: Errors = []
    if not isinstance(response, dict):
        wrong_type(errors, "", response, "an answer object with action")
        return errors
    if "action" not in response:
        missing(errors, "action", '"accept", "decline" or "cancel"')
        return errors
    action = response["action"]
    if not isinstance(action, str) or action not in ANSWER_ACTIONS:
        invalid_enum(errors, "action", action, ANSWER_ACTIONS)
        return errors
    unknown_keys(errors, response, _ENVELOPE_KEYS[action], "")
    if action == "cancel" and "reason" in response:
        reason = response["reason"]
        if not isinstance(reason, str):
            wrong_type(errors, "reason", reason, "a string")
        elif not reason:
            too_short(errors, "reason", 1)
        elif utf16_len(reason) > CANCEL_REASON_MAX:
            too_long(errors, "reason", utf16_len(reason), CANCEL_REASON_MAX)
    elif action == "accept":
        content = check_object(
            errors, response, "content", "", required=True, what="the ClarifyAnswers object"
        )
        if content is not None:
            errors += validate_clarify_answers(envelope, content)
    return sort_errors(errors)


# --- the simple card -------------------------------------------------------------------------


def _button(id: str, label: str, style: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"id": id, "label": label, "style": style, "response": response}


def _skip_button() -> dict[str, Any]:
    return _button("skip", "Skip", "cancel", {"action": "decline"})


def _button_label(label: Any, fallback: str = "") -> str:
    """A label as a button shows it: without spaces at either end, cut to fit."""
    if not isinstance(label, str):
        return fallback
    return cut_text(js_trim(label), 20) or fallback


def _accept_one(prompt_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    entry = {"id": prompt_id, **answer}
    return {
        "action": "accept",
        "content": {"protocol": CLARIFY_PROTOCOL, "answers": [copy.deepcopy(entry)]},
    }


def clarify_simple_card(envelope: Any, tool_call_id: str) -> dict[str, Any]:
    """The simple card of a clarify ask: ``{toolCallId, kind, title?, text, buttons,
    handoff}``, valid against the published ``simpleCard`` schema.

    ``kind`` is ``"choice"`` or ``"confirm"`` for an envelope of one such prompt and
    ``"form"`` otherwise. The buttons answer the envelope when it is one single-select
    ``choice`` prompt of at most three options whose cut labels differ (one button per option,
    then Skip when there is room), or one ``confirm`` prompt (approve, destructive when
    ``danger``, and deny); otherwise the card hands off with a Skip button (``decline``).
    ``text`` is the question (the first one, with ``(+N more)`` for several prompts), cut to 140
    UTF-16 code units; ``title`` the envelope's title cut to 40. Never raises on any JSON value.
    """
    env: Mapping[str, Any] = envelope if isinstance(envelope, dict) else {}
    raw = env.get("prompts")
    raw_prompts: list[Any] = raw if isinstance(raw, list) else []
    single = raw_prompts[0] if len(raw_prompts) == 1 and isinstance(raw_prompts[0], dict) else None
    single_kind = single.get("kind") if single is not None else None
    kind = single_kind if single_kind in ("choice", "confirm") else "form"
    card: dict[str, Any] = {"toolCallId": tool_call_id, "kind": kind}
    title = env.get("title")
    if isinstance(title, str) and not is_blank(title):
        card["title"] = cut_text(title, CARD_TITLE_MAX)
    card["text"] = _card_text(raw_prompts, title)
    buttons: list[dict[str, Any]] | None = None
    if single is not None and isinstance(single.get("id"), str):
        if single_kind == "choice":
            buttons = _choice_buttons(single)
        elif single_kind == "confirm":
            buttons = _confirm_buttons(single)
    card["buttons"] = buttons if buttons is not None else [_skip_button()]
    card["handoff"] = buttons is None
    return card


def _card_text(prompts: list[Any], title: Any) -> str:
    first = prompts[0] if prompts and isinstance(prompts[0], dict) else {}
    question = first.get("question")
    if isinstance(question, str) and not is_blank(question):
        if len(prompts) == 1:
            return cut_text(question, CARD_TEXT_MAX)
        suffix = f" (+{len(prompts) - 1} more)"
        return cut_text(question, CARD_TEXT_MAX - len(suffix)) + suffix
    if isinstance(title, str) and not is_blank(title):
        return cut_text(title, CARD_TEXT_MAX)
    return _CARD_FALLBACK_TEXT


def _choice_buttons(prompt: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """One button per option of a single-select prompt, or None when they cannot be buttons."""
    if prompt.get("allowMultiple") is True:
        return None
    options = prompt.get("options")
    if not isinstance(options, list) or not 1 <= len(options) <= CARD_BUTTONS_MAX:
        return None
    buttons: list[dict[str, Any]] = []
    for option in options:
        if not isinstance(option, dict):
            return None
        option_id, label = option.get("id"), _button_label(option.get("label"))
        if not isinstance(option_id, str) or not label:
            return None
        response = _accept_one(prompt["id"], {"kind": "choice", "values": [option_id]})
        buttons.append(_button(f"option:{option_id}", label, "default", response))
    if len({b["id"] for b in buttons}) != len(buttons):
        return None
    if len({b["label"] for b in buttons}) != len(buttons):
        # The buttons could not tell the options apart.
        return None
    if len(buttons) < CARD_BUTTONS_MAX:
        buttons.append(_skip_button())
    return buttons


def _confirm_buttons(prompt: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Approve first, deny last, never Skip: deny is the negative answer. Labels that would
    look the same on the card fall back to ``Confirm`` and ``Cancel``."""
    approve = _button_label(prompt.get("confirmLabel"), DEFAULT_CONFIRM_LABEL)
    deny = _button_label(prompt.get("cancelLabel"), DEFAULT_DENY_LABEL)
    if approve == deny:
        approve, deny = DEFAULT_CONFIRM_LABEL, DEFAULT_DENY_LABEL
    style = "destructive" if prompt.get("danger") is True else "primary"
    prompt_id = prompt["id"]
    return [
        _button("approve", approve, style, _accept_one(prompt_id, _confirmed(True))),
        _button("deny", deny, "cancel", _accept_one(prompt_id, _confirmed(False))),
    ]


def _confirmed(value: bool) -> dict[str, Any]:
    return {"kind": "confirm", "confirmed": value}


# --- the summary -----------------------------------------------------------------------------


def clarify_answer_summary(envelope: Any, answers: Any) -> str:
    """A plain-text summary of ``ClarifyAnswers``: one ``id → value`` line per prompt of the
    envelope, in its order. A choice shows the chosen ids (with the label when it differs from
    the id), a confirm ``yes`` or ``no``, a text its value as a JSON string; a prompt without
    an answer shows ``(no answer)``. Never raises on any JSON value."""
    entries = answers.get("answers") if isinstance(answers, dict) else None
    by_id: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            by_id.setdefault(entry["id"], entry)
    lines = []
    for prompt_id, prompt in _envelope_prompts(envelope).items():
        shown = _summary_value(prompt, by_id.get(prompt_id))
        lines.append(f"{prompt_id} \u2192 {shown}")
    return "\n".join(lines)


def _summary_value(prompt: Mapping[str, Any], entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "(no answer)"
    kind = prompt["kind"]
    if kind == "choice":
        values = entry.get("values")
        if not isinstance(values, list):
            return "(no answer)"
        options = prompt.get("options")
        labels = {
            o["id"]: o.get("label")
            for o in (options if isinstance(options, list) else ())
            if isinstance(o, dict) and isinstance(o.get("id"), str)
        }
        shown = []
        for value in values:
            if not isinstance(value, str):
                continue
            label = labels.get(value)
            if isinstance(label, str) and label != value:
                shown.append(f"{value} ({json.dumps(label, ensure_ascii=False)})")
            else:
                shown.append(value)
        return ", ".join(shown) or "(none)"
    if kind == "confirm":
        confirmed = entry.get("confirmed")
        if not isinstance(confirmed, bool):
            return "(no answer)"
        return "yes" if confirmed else "no"
    value = entry.get("value")
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else "(no answer)"
