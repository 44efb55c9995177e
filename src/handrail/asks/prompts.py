"""System prompt text for asks.

The runtime appends `ASKS_SYSTEM_PROMPT` and then `ask_prompt_section(kinds, surface=...)` when
asks are on, and `COMPACT_SURFACE_SYSTEM_PROMPT` on every compact turn, asks on or off.

Every number in the section is read from `ASK_LIMITS` when the section is built: the templates
hold no digits of their own, so the text cannot drift from the validators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from .helpers import ask_kinds_for_surface
from .limits import ASK_FILE_ACCEPT_MIME_TYPES, ASK_KINDS, ASK_LIMITS, ASK_SURFACES, AskKind

__all__ = ["ASKS_SYSTEM_PROMPT", "COMPACT_SURFACE_SYSTEM_PROMPT", "ask_prompt_section"]

ASKS_SYSTEM_PROMPT: Final = """\
You can ask the user a question with one of the ask tools listed below. The turn pauses \
until the user answers, and the answer comes back as the tool's result.
- Ask only when the answer changes what you do. When a sensible default exists, use it and \
say so instead of asking.
- Ask one question at a time: call at most one ask tool in a step. A second ask in the same \
step is cancelled.
- Put the whole question in the ask's prompt. Text you write in the same step as an ask is \
dropped, so the user sees only the ask.
- Write the prompt in plain text, without markdown or links.
- Before a tool call that deletes data, sends something on the user's behalf, spends money, \
or cannot be undone, ask the user to confirm it (with ask_confirm when you have it) and say \
exactly what will happen. Make the call only after the answer {"confirmed": true}. \
{"confirmed": false} means no: do not make the call.
- An answer with "action": "decline" means the user skipped the question, and \
"action": "cancel" means the question was dropped, for example because the user sent a new \
message. Then do not proceed with what you asked about and do not ask the same question \
again; go on from what the user says.
- An ask that breaks its rules comes back as a tool error that lists each problem and its \
fix. Correct the ask and call it again."""

COMPACT_SURFACE_SYSTEM_PROMPT: Final = (
    "The user is on a small screen, such as a watch. Keep each reply to at most two short "
    "sentences, and ask only yes-or-no questions or questions with up to three short options."
)

_EMOJI_NOTE: Final = "most emoji count as two or more"


def _limits() -> Mapping[str, Any]:
    # Read at call time, so the section always states the current ASK_LIMITS.
    return ASK_LIMITS


def _id_rule(scope: str) -> str:
    id_max = _limits()["choice"]["optionIdMaxLength"]
    return (
        f'- id: at most {id_max} lowercase letters, digits, "_" or "-", starting with a letter '
        f"or digit, and unique within the {scope}."
    )


def _shared_rules(*, compact: bool) -> str:
    limits = _limits()
    card = limits["simpleCard"]
    if compact:
        return "\n".join(
            [
                "Rules for every ask:",
                "- prompt: required. The question in plain text, with no formatting and no "
                f"links, at most {limits['promptMaxLength']} characters. The screen shows only "
                f"its first {card['textMaxLength']} characters, so keep it within that.",
                f"- title: optional, at most {limits['titleMaxLength']} characters. The screen "
                f"shows only its first {card['titleMaxLength']} characters.",
                "- A field that a kind below does not list is refused.",
            ]
        )
    return "\n".join(
        [
            "Rules for every ask:",
            "- prompt: required. The question in plain text, with no markdown and no links, at "
            f"most {limits['promptMaxLength']} characters.",
            f"- title: optional heading, at most {limits['titleMaxLength']} characters.",
            "- A field that a kind below does not list is refused.",
        ]
    )


def _submit_rule() -> str:
    return (
        "- submitLabel: optional label of the submit button, at most "
        f"{_limits()['submitLabelMaxLength']} characters."
    )


def _choice_rules() -> str:
    limits = _limits()
    choice, card = limits["choice"], limits["simpleCard"]
    return "\n".join(
        [
            "ask_choice: the user picks from options you list. Use it when the answer is one "
            "or more of a few known options.",
            '- select: required. "one" for exactly one option, "many" to let the user pick '
            "several.",
            f"- options: {choice['optionsMin']} to {choice['optionsMax']} items in display "
            "order, each {id, label, description?}.",
            _id_rule("ask"),
            f"- label: at most {choice['optionLabelMaxLength']} characters. description: "
            f"optional, at most {choice['optionDescriptionMaxLength']} characters.",
            '- default: optional list of option ids to preselect, each once; with "one" at '
            'most one id, with "many" at most maxSelected ids.',
            '- minSelected, maxSelected: optional whole numbers, "many" only. The answer holds '
            "from minSelected (default one; zero lets the user pick nothing) to maxSelected "
            "(default every choice offered) choices.",
            '- allowOther: optional, "many" only. true adds a field where the user types an '
            f"answer of their own, at most {choice['otherMaxLength']} characters, which counts "
            "as one choice. otherLabel: optional label of that field, at most "
            f"{choice['optionLabelMaxLength']} characters. For one option or Other, use "
            '"many" with maxSelected set to one.',
            _submit_rule(),
            "- allowDecline: optional, default true (the user sees Skip). Set it to false only "
            "when you cannot go on without an answer.",
            f'- Prefer "one" with at most {card["buttonsMax"]} options whose labels have at '
            f"most {card['buttonLabelMaxLength']} characters: small screens show those as "
            "buttons.",
            '- The answer looks like {"action": "accept", "content": {"selected": ["<id>"]}}, '
            'with "other": "<text>" in content when the user typed an answer of their own.',
        ]
    )


def _compact_choice_rules() -> str:
    limits = _limits()
    choice, card = limits["choice"], limits["simpleCard"]
    return "\n".join(
        [
            "ask_choice: the user taps one of a few buttons. Use it when the answer is one of "
            "a few known options.",
            '- select: required, always "one". minSelected, maxSelected, allowOther and '
            "otherLabel are not allowed.",
            f"- options: {choice['optionsMin']} to {card['buttonsMax']} items, each "
            "{id, label, description?}.",
            _id_rule("ask"),
            f"- label: at most {card['buttonLabelMaxLength']} characters ({_EMOJI_NOTE}), and "
            "no two options may share a label.",
            f"- description: optional, at most {choice['optionDescriptionMaxLength']} "
            "characters. The buttons show only the labels, so put what the user needs to "
            "decide in the prompt and the labels.",
            "- default: optional list with at most one option id to preselect.",
            _submit_rule(),
            "- allowDecline: optional, default true (the user sees Skip). Set it to false only "
            "when you cannot go on without an answer.",
            '- The answer looks like {"action": "accept", "content": {"selected": ["<id>"]}}.',
        ]
    )


def _confirm_rules() -> str:
    label_max = _limits()["confirm"]["labelMaxLength"]
    return "\n".join(
        [
            "ask_confirm: the user approves or denies one action you describe in the prompt. "
            "Use it before a tool call that deletes data, sends something on the user's behalf, "
            "spends money or cannot be undone, and say in the prompt exactly what will happen.",
            "- confirmLabel, denyLabel: optional labels of the approve and deny buttons, at "
            f"most {label_max} characters each ({_EMOJI_NOTE}), different from each other. "
            'They default to "Confirm" and "Cancel". Name the action, such as "Delete the '
            'todos" and "Keep them".',
            "- destructive: optional, default false. Set it to true when the action deletes "
            "data or cannot be undone.",
            "- allowDecline: optional, default false, because deny is the negative answer. "
            "true also shows Skip.",
            "- There is no submitLabel.",
            '- The answer looks like {"action": "accept", "content": {"confirmed": true}}. '
            'Make the call only after {"confirmed": true}; {"confirmed": false} means do not.',
        ]
    )


def _markdown_rules() -> str:
    markdown = _limits()["markdown"]
    return "\n".join(
        [
            "ask_markdown: the user edits a markdown draft you write, or writes one, and sends "
            "it back. Use it for a longer text the user should review before you use it, such "
            "as an email or an announcement.",
            f"- initial: optional draft in markdown, at most {markdown['maxLength']} "
            "characters. Put the whole draft here, not in the prompt.",
            "- minLength, maxLength: optional whole numbers. The answer holds at least "
            f"minLength (default zero) and at most maxLength (default and most "
            f"{markdown['maxLength']}) characters; minLength must not be above maxLength.",
            "- placeholder: optional hint shown while the editor is empty, at most "
            f"{markdown['placeholderMaxLength']} characters.",
            _submit_rule(),
            "- allowDecline: optional, default true (the user sees Skip).",
            '- The answer looks like {"action": "accept", "content": {"markdown": "<text>", '
            '"changed": true}}. changed is false when the user sent your draft unchanged, so '
            "you can use it as is.",
        ]
    )


def _form_rules() -> str:
    limits = _limits()
    choice, form = limits["choice"], limits["form"]
    return "\n".join(
        [
            "ask_form: the user fills in a few typed fields and submits them at once. Use it "
            "when you need several details together, such as dates, amounts or contact "
            "details.",
            f"- fields: {form['fieldsMin']} to {form['fieldsMax']} items in display order, "
            "each {id, type, label, helperText?, required?, default?} plus its type's keys. "
            "Fields are flat: no nesting, no conditional fields and no passwords.",
            _id_rule("form") + " It keys the field's value in the answer.",
            f"- label: at most {form['labelMaxLength']} characters. helperText: optional, at "
            f"most {form['helperTextMaxLength']} characters. required: optional, default "
            "false; true means the answer must hold a value that is not blank.",
            '- type "text" (one line) or "textarea" (several lines): optional minLength and '
            f"maxLength; maxLength is at most {form['textMaxLength']} for text and "
            f"{form['textareaMaxLength']} for textarea. The value is a string.",
            '- type "email", "url" (http or https) or "phone" (from '
            f"{form['phoneDigitsMin']} to {form['phoneDigitsMax']} digits, optionally starting "
            "with +): the value is a string.",
            '- type "number": optional min, max and integer (true for whole numbers only). '
            "The value is a number.",
            '- type "date" (YYYY-MM-DD), "time" (HH:mm on a twenty-four-hour clock) or '
            '"datetime" (YYYY-MM-DDTHH:mm, seconds optional, then Z or an offset such as '
            "+HH:mm): the value is a string in that format.",
            '- type "boolean": a switch. The value is true or false.',
            '- type "select" (pick one) or "multiselect" (pick any): options, '
            f"{choice['optionsMin']} to {choice['optionsMax']} items, each {{id, label}}. The "
            "value is an option id, or a list of them.",
            "- default: optional value the field starts with; it must be a value the field "
            "accepts.",
            _submit_rule(),
            "- allowDecline: optional, default true (the user sees Skip).",
            '- The answer looks like {"action": "accept", "content": {"values": {"<field id>": '
            "<value>}}}. Optional fields the user left empty are left out.",
        ]
    )


def _files_rules() -> str:
    files = _limits()["files"]
    accept = ", ".join(
        f'"{value}" ({", ".join(mime_types)})'
        for value, mime_types in ASK_FILE_ACCEPT_MIME_TYPES.items()
    )
    return "\n".join(
        [
            "ask_files: the user picks files and sends them, and you read them in the same "
            "turn. Use it when you need a document, a photo or a data file from the user.",
            f"- accept: required list of the kinds of file you can use, each once: {accept}.",
            f"- minFiles, maxFiles: optional whole numbers from {files['minFiles']} to "
            f"{files['maxFiles']}. minFiles defaults to {files['minFiles']} and maxFiles to "
            f"{files['maxFiles']}; minFiles must not be above maxFiles.",
            "- Images and PDFs reach you as files. Text, CSV and JSON files reach you as text, "
            f"cut to their first {files['textMaxBytes']} bytes with a note when longer.",
            _submit_rule(),
            "- allowDecline: optional, default true (the user sees Skip).",
            '- The answer looks like {"action": "accept", "content": {"files": [{"fileId": '
            '"<id>", "filename": "<name>", "mimeType": "<type>", "size": <bytes>}]}}, followed '
            "by a line naming each file and the file itself.",
        ]
    )


_FULL_RULES: Final[Mapping[AskKind, Callable[[], str]]] = {
    "choice": _choice_rules,
    "confirm": _confirm_rules,
    "markdown": _markdown_rules,
    "form": _form_rules,
    "files": _files_rules,
}
_COMPACT_RULES: Final[Mapping[AskKind, Callable[[], str]]] = {
    "choice": _compact_choice_rules,
    "confirm": _confirm_rules,
}


def ask_prompt_section(kinds: Iterable[str], *, surface: str = "full") -> str:
    """The system prompt section for the ask kinds a turn offers.

    It names each offered tool (``ask_<kind>``), says when to use it and states its limits, in
    protocol order, each kind once. On ``surface="compact"`` only `choice` and `confirm` are
    offered, with the compact limits; other kinds are left out. No kind offered gives ``""``.

    Raises ValueError for a kind that is not one of `ASK_KINDS` or a surface that is not one of
    `ASK_SURFACES`, and TypeError when `kinds` is a single string.
    """
    if isinstance(kinds, str):
        raise TypeError(f"kinds must be a list of kinds, such as [{kinds!r}], not a string")
    if surface not in ASK_SURFACES:
        raise ValueError(
            f"unknown ask surface {surface!r}; the surfaces are {', '.join(ASK_SURFACES)}"
        )
    requested = list(kinds)
    unknown = [kind for kind in requested if kind not in ASK_KINDS]
    if unknown:
        raise ValueError(f"unknown ask kind {unknown[0]!r}; the kinds are {', '.join(ASK_KINDS)}")
    compact = surface == "compact"
    offered = ask_kinds_for_surface(requested, "compact" if compact else "full")
    if not offered:
        return ""
    rules = _COMPACT_RULES if compact else _FULL_RULES
    tools = ", ".join(f"ask_{kind}" for kind in offered)
    blocks = [f"Ask tools you can call: {tools}.", _shared_rules(compact=compact)]
    blocks.extend(rules[kind]() for kind in offered)
    return "\n\n".join(blocks)
