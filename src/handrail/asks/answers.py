"""`validate_ask_response`: an answer envelope against the ask it answers."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, Final

from .checks import (
    Errors,
    add,
    as_int,
    check_bool,
    check_list,
    check_object,
    check_text,
    duplicate_id,
    invalid_enum,
    missing,
    too_long,
    too_short,
    unknown_keys,
    wrong_type,
)
from .errors import AskValidationError, join_path, sort_errors
from .fields import check_field_value, is_blank_value
from .files import (
    accepted_file_mime_types,
    clean_filename,
    normalize_mime_type,
    parse_ask_data_url,
)
from .helpers import (
    ask_allows_decline,
    choice_selection_bounds,
    files_count_bounds,
    markdown_length_bounds,
)
from .limits import (
    ASK_KINDS,
    CANCEL_REASON_MAX,
    DEFAULT_MAX_FILE_SIZE,
    FILENAME_MAX,
    MARKDOWN_MAX,
    OPTIONS_MAX,
    OTHER_MAX,
)
from .text import describe, js_trim, utf16_len

ANSWER_ACTIONS: Final = ("accept", "decline", "cancel")
_ENVELOPE_KEYS: Final = {
    "accept": frozenset({"action", "content"}),
    "decline": frozenset({"action"}),
    "cancel": frozenset({"action", "reason"}),
}
FILE_REF_KEYS: Final = frozenset({"fileId", "url", "filename", "mimeType", "size"})
_FILE_ID = re.compile(r"^[0-9a-f]{24}$")


def _input(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _choice(errors: Errors, ask: dict[str, Any], content: dict[str, Any], _cap: int) -> None:
    unknown_keys(errors, content, ("selected", "other"), "content")
    selected = check_list(
        errors, content, "selected", "content", required=True, what="the ids of the chosen options"
    )
    options = ask.get("options")
    offered = {
        o["id"]
        for o in (options if isinstance(options, list) else ())
        if isinstance(o, dict) and isinstance(o.get("id"), str)
    }
    count = 0
    if selected is not None:
        if len(selected) > OPTIONS_MAX:
            add(
                errors,
                "content.selected",
                "TOO_MANY",
                f"content.selected holds {len(selected)} ids, more than the {OPTIONS_MAX} allowed.",
                f"Select at most {OPTIONS_MAX} options.",
            )
        seen: set[str] = set()
        for index, item in enumerate(selected):
            path = join_path("content.selected", index)
            if not isinstance(item, str):
                wrong_type(errors, path, item, "an option id")
            elif item not in offered:
                choices = ", ".join(f'"{i}"' for i in sorted(offered))
                add(
                    errors,
                    path,
                    "OPTION_NOT_OFFERED",
                    f"{describe(item)} is not one of the offered options.",
                    f"Use the id of one of the ask's options: {choices}.",
                )
            elif item in seen:
                duplicate_id(errors, path, item)
            else:
                seen.add(item)
        count = len(selected)
    if "other" in content:
        if ask.get("allowOther") is not True:
            add(
                errors,
                "content.other",
                "OTHER_NOT_ALLOWED",
                "The ask does not allow an Other answer.",
                "Remove content.other and pick from the offered options.",
            )
        elif check_text(errors, content, "other", "content", max_length=OTHER_MAX) is not None:
            count += 1
    if selected is not None:
        low, high = choice_selection_bounds(ask)
        if not low <= count <= high:
            wanted = f"exactly {low}" if low == high else f"{low} to {high}"
            add(
                errors,
                "content.selected",
                "SELECTION_COUNT",
                f"The answer holds {count} choices; the ask takes {wanted}.",
                f"Select {wanted} choices (an Other answer counts as one).",
            )


def _confirm(errors: Errors, _ask: dict[str, Any], content: dict[str, Any], _cap: int) -> None:
    unknown_keys(errors, content, ("confirmed",), "content")
    if "confirmed" not in content:
        missing(errors, "content.confirmed", "true to approve or false to deny")
    else:
        check_bool(errors, content, "confirmed", "content")


def _markdown(errors: Errors, ask: dict[str, Any], content: dict[str, Any], _cap: int) -> None:
    unknown_keys(errors, content, ("markdown", "changed"), "content")
    markdown: str | None = None
    if "markdown" not in content:
        missing(errors, "content.markdown", "the edited markdown text")
    elif not isinstance(content["markdown"], str):
        wrong_type(errors, "content.markdown", content["markdown"], "a string")
    else:
        markdown = content["markdown"]
        low, high = markdown_length_bounds(ask)
        high = min(high, MARKDOWN_MAX)
        length = utf16_len(markdown)
        if length > high:
            too_long(errors, "content.markdown", length, high)
        if utf16_len(js_trim(markdown)) < low:
            too_short(errors, "content.markdown", low)
    if "changed" not in content:
        missing(errors, "content.changed", "true when the text differs from the draft")
        return
    changed = check_bool(errors, content, "changed", "content")
    if changed is None or markdown is None:
        return
    initial = ask.get("initial")
    differs = markdown != (initial if isinstance(initial, str) else "")
    if changed != differs:
        add(
            errors,
            "content.changed",
            "CHANGED_MISMATCH",
            f"changed is {str(changed).lower()}, but the text "
            f"{'differs from' if differs else 'is the same as'} the draft.",
            f"Send changed: {str(differs).lower()}.",
        )


def _form(errors: Errors, ask: dict[str, Any], content: dict[str, Any], _cap: int) -> None:
    unknown_keys(errors, content, ("values",), "content")
    values = check_object(
        errors, content, "values", "content", required=True, what="the values keyed by field id"
    )
    if values is None:
        return
    fields = [
        f
        for f in (ask.get("fields") if isinstance(ask.get("fields"), list) else ())  # type: ignore[union-attr]
        if isinstance(f, dict) and isinstance(f.get("id"), str)
    ]
    unknown_keys(errors, values, {f["id"] for f in fields}, "content.values")
    for field in fields:
        path = "content.values." + field["id"]
        value = values.get(field["id"])
        if field["id"] not in values or is_blank_value(value):
            if field.get("required") is True:
                add(
                    errors,
                    path,
                    "REQUIRED_FIELD",
                    f"{describe(field.get('label', field['id']))} is required.",
                    f"Fill in {describe(field.get('label', field['id']))}.",
                )
            continue
        before = len(errors)
        check_field_value(errors, field, value, path, default=False)
        _name_the_field(errors, before, describe(field.get("label", field["id"])))


def _name_the_field(errors: Errors, start: int, label: str) -> None:
    """Errors from `start` on are about one form field: each message names it by its label
    (what the person reads), never only by its path."""
    for index in range(start, len(errors)):
        error = errors[index]
        if label not in error.message:
            errors[index] = dataclasses.replace(error, message=f"{label}: {error.message}")


def _files(errors: Errors, ask: dict[str, Any], content: dict[str, Any], cap: int) -> None:
    unknown_keys(errors, content, ("files",), "content")
    files = check_list(errors, content, "files", "content", required=True, what="the picked files")
    if files is None:
        return
    low, high = files_count_bounds(ask)
    if not low <= len(files) <= high:
        wanted = f"exactly {low}" if low == high else f"{low} to {high}"
        add(
            errors,
            "content.files",
            "FILE_COUNT",
            f"The answer holds {len(files)} files; the ask takes {wanted}.",
            f"Send {wanted} files.",
        )
    accept = ask.get("accept")
    allowed = accepted_file_mime_types(accept if isinstance(accept, list) else [])
    for index, ref in enumerate(files):
        _file_ref(errors, ref, join_path("content.files", index), allowed, cap)


def _file_ref(errors: Errors, ref: Any, path: str, allowed: list[str], cap: int) -> None:
    if not isinstance(ref, dict):
        wrong_type(errors, path, ref, "an object with fileId or url, filename, mimeType and size")
        return
    unknown_keys(errors, ref, FILE_REF_KEYS, path)
    filename = check_text(
        errors, ref, "filename", path, max_length=FILENAME_MAX, required=True, what="the file name"
    )
    if filename is not None and not clean_filename(filename):
        add(
            errors,
            join_path(path, "filename"),
            "INVALID_FORMAT",
            f"{describe(filename)} names no file: it is a folder or has nothing printable.",
            "Send the file's own name, such as receipt.png.",
        )
    mime_path = join_path(path, "mimeType")
    mime_type: str | None = None
    if "mimeType" not in ref:
        missing(errors, mime_path, "the file's MIME type, such as image/png")
    elif not isinstance(ref["mimeType"], str):
        wrong_type(errors, mime_path, ref["mimeType"], "a string")
    else:
        mime_type = normalize_mime_type(ref["mimeType"])
        if mime_type not in allowed:
            add(
                errors,
                mime_path,
                "FILE_TYPE_NOT_ACCEPTED",
                f"{describe(ref['mimeType'])} is not a type this ask accepts.",
                f"Send a file of one of these types: {', '.join(allowed)}.",
            )
            mime_type = None
    size_path = join_path(path, "size")
    if "size" not in ref:
        missing(errors, size_path, "the file's size in bytes")
    else:
        size = as_int(ref["size"])
        if size is None or size < 0:
            wrong_type(errors, size_path, ref["size"], "a whole number of bytes")
        elif size > cap:
            _too_large(errors, size_path, size, cap)
    has_id, has_url = "fileId" in ref, "url" in ref
    if has_id == has_url:
        if has_id:
            add(
                errors,
                join_path(path, "url"),
                "INVALID_FORMAT",
                "A file names its bytes with fileId or with url, not both.",
                "Send fileId for an upload, or url for a data URL, not both.",
            )
        else:
            missing(errors, join_path(path, "fileId"), "the upload's fileId, or a data URL in url")
        return
    if has_id:
        file_id = ref["fileId"]
        if not isinstance(file_id, str):
            wrong_type(errors, join_path(path, "fileId"), file_id, "a string")
        elif _FILE_ID.fullmatch(file_id) is None:
            add(
                errors,
                join_path(path, "fileId"),
                "INVALID_FORMAT",
                f"{describe(file_id)} is not a file id.",
                "Use the id that POST /api/files/upload returned.",
            )
        return
    url = ref["url"]
    parsed = parse_ask_data_url(url)
    url_path = join_path(path, "url")
    if parsed is None:
        add(
            errors,
            url_path,
            "INVALID_FORMAT",
            "url is not a base64 data: URL; the server never fetches a remote URL.",
            "Send the file as data:<type>;base64,<bytes>, or upload it and send its fileId.",
        )
        return
    if mime_type is not None and normalize_mime_type(parsed.mime_type) != mime_type:
        add(
            errors,
            mime_path,
            "MIME_MISMATCH",
            f"The data URL holds {describe(parsed.mime_type)}, but the file is declared as "
            f"{describe(mime_type)}.",
            "Declare the data URL's media type as mimeType, or send the right file.",
        )
    if len(parsed.data) > cap and not any(e.path == size_path for e in errors):
        _too_large(errors, size_path, len(parsed.data), cap)


def _too_large(errors: Errors, path: str, size: int, cap: int) -> None:
    add(
        errors,
        path,
        "FILE_TOO_LARGE",
        f"The file is {size} bytes, more than the {cap} bytes allowed.",
        f"Send a file of at most {cap} bytes.",
    )


_ANSWERS: Final[dict[str, Callable[[Errors, dict[str, Any], dict[str, Any], int], None]]] = {
    "choice": _choice,
    "confirm": _confirm,
    "markdown": _markdown,
    "form": _form,
    "files": _files,
}


def validate_ask_response(
    kind: Any, input: Any, response: Any, *, max_file_size_bytes: int | None = None
) -> list[AskValidationError]:
    """Check an answer envelope (``accept`` / ``decline`` / ``cancel``) against the ask.

    `input` is the (valid) ask being answered. Returns every error, sorted by path then code;
    an empty list means the answer is valid. Never raises on any JSON value. For `files`,
    `max_file_size_bytes` caps each file (default 10 MB).
    """
    errors: Errors = []
    answer = _ANSWERS.get(kind) if isinstance(kind, str) else None
    if answer is None:
        invalid_enum(errors, "kind", kind, ASK_KINDS)
        return errors
    if not isinstance(response, dict):
        wrong_type(errors, "", response, "an answer object with action")
        return errors
    if "action" not in response:
        missing(errors, "action", '"accept", "decline" or "cancel"')
        return sort_errors(errors)
    action = response["action"]
    if not isinstance(action, str) or action not in ANSWER_ACTIONS:
        invalid_enum(errors, "action", action, ANSWER_ACTIONS)
        return errors
    unknown_keys(errors, response, _ENVELOPE_KEYS[action], "")
    ask = _input(input)
    if action == "decline":
        if not ask_allows_decline(kind, ask):
            add(
                errors,
                "action",
                "DECLINE_NOT_ALLOWED",
                "This ask cannot be skipped.",
                "Answer the ask with action accept"
                + (" (confirmed: false denies)." if kind == "confirm" else "."),
            )
    elif action == "cancel":
        reason = response.get("reason")
        if "reason" in response:
            if not isinstance(reason, str):
                wrong_type(errors, "reason", reason, "a string")
            elif not reason:
                too_short(errors, "reason", 1)
            elif utf16_len(reason) > CANCEL_REASON_MAX:
                too_long(errors, "reason", utf16_len(reason), CANCEL_REASON_MAX)
    else:
        content = check_object(
            errors, response, "content", "", required=True, what="the kind's answer"
        )
        if content is not None:
            cap = DEFAULT_MAX_FILE_SIZE if max_file_size_bytes is None else max_file_size_bytes
            answer(errors, ask, content, cap)
    if len(errors) > 1:
        return sort_errors(errors)
    return errors
