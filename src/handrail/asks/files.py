"""Files of a `files` answer: accepted types, data URLs, byte sniffing and the byte check.

Everything here is pure: the server loads a file's bytes (from a data URL or the caller's
upload), then `check_ask_file_bytes` decides whether they are what the answer declares. The two
helpers at the end word a file as the model reads it.

No function here logs or keeps bytes, and `ParsedDataUrl` leaves its payload out of its repr, so
a file never ends up in a log by accident.
"""

from __future__ import annotations

import binascii
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NoReturn

from .errors import AskValidationError, join_path, sort_errors
from .limits import ASK_FILE_ACCEPT_MIME_TYPES, DEFAULT_MAX_FILE_SIZE, FILENAME_MAX, TEXT_MAX_BYTES
from .text import describe

__all__ = [
    "AskFileMimeType",
    "ParsedDataUrl",
    "SniffedFileType",
    "accepted_file_mime_types",
    "check_ask_file_bytes",
    "clean_filename",
    "cut_text_file",
    "file_not_owned_error",
    "file_summary_line",
    "is_text_file_mime_type",
    "normalize_mime_type",
    "parse_ask_data_url",
    "sniff_file_bytes",
]

AskFileMimeType = Literal[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/csv",
    "application/json",
]
#: The types `sniff_file_bytes` recognizes by their first bytes.
SniffedFileType = Literal["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"]

#: The route a client uploads a file to, named in the `FILE_NOT_OWNED` fix.
DEFAULT_UPLOAD_ROUTE: Final = "POST /api/files/upload"

_TEXT_MIME_TYPES: Final = ("text/plain", "text/csv", "application/json")
_KNOWN_MIME_TYPES: Final[tuple[str, ...]] = tuple(
    mime_type for mime_types in ASK_FILE_ACCEPT_MIME_TYPES.values() for mime_type in mime_types
)

#: How a message names each type's content: "as a PNG image", "are plain text".
_TYPE_NAMES: Final = {
    "image/jpeg": "a JPEG image",
    "image/png": "a PNG image",
    "image/gif": "a GIF image",
    "image/webp": "a WebP image",
    "application/pdf": "a PDF document",
    "text/plain": "plain text",
    "text/csv": "CSV text",
    "application/json": "JSON text",
}

# A MIME type as RFC 6838 names it: type "/" subtype, both restricted-name tokens.
_MIME_TYPE_RE: Final = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
_PARAM_NAME_RE: Final = re.compile(r"[A-Za-z0-9!#$&^_.+-]+")

_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE: Final = b"\xff\xd8\xff"
_GIF_SIGNATURES: Final = (b"GIF87a", b"GIF89a")
_PDF_SIGNATURE: Final = b"%PDF-"


def accepted_file_mime_types(accept: Iterable[str]) -> list[str]:
    """The MIME types an ``accept`` list allows, each once, in `ASK_FILE_ACCEPT_MIME_TYPES`
    order. Values that are not accept values are ignored."""
    if isinstance(accept, str):
        accept = [accept]
    wanted = {value for value in accept if isinstance(value, str)}
    return [
        mime_type
        for value, mime_types in ASK_FILE_ACCEPT_MIME_TYPES.items()
        if value in wanted
        for mime_type in mime_types
    ]


def normalize_mime_type(mime_type: str) -> str:
    """`mime_type` in lowercase, without parameters or surrounding spaces:
    ``"Text/CSV; charset=UTF-8"`` is ``"text/csv"``."""
    return mime_type.split(";", 1)[0].strip().lower()


def is_text_file_mime_type(mime_type: str) -> bool:
    """Whether a file of this type reaches the model as text (plain text, CSV and JSON) rather
    than as an image or a document."""
    return isinstance(mime_type, str) and normalize_mime_type(mime_type) in _TEXT_MIME_TYPES


@dataclass(frozen=True, slots=True)
class ParsedDataUrl:
    """The media type (lowercase, without parameters) and the decoded payload of a base64
    ``data:`` URL. The payload stays out of the repr."""

    mime_type: str
    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        """The payload's length in bytes."""
        return len(self.data)


def parse_ask_data_url(url: Any) -> ParsedDataUrl | None:
    """Split a base64 data URL, ``data:<type>[;<name>=<value>]...;base64,<payload>``, into its
    media type and bytes.

    Returns None for anything else: a value that is not a string, a remote URL, a data URL
    without ``;base64``, a missing or malformed media type, or a payload that is not strict
    base64 (standard alphabet, correct padding, no spaces or line breaks). Never raises.
    """
    if not isinstance(url, str) or url[:5].lower() != "data:":
        return None
    header, comma, payload = url[5:].partition(",")
    if not comma:
        return None
    media_type, *params = header.split(";")
    if not params or params[-1].lower() != "base64":
        return None
    for param in params[:-1]:
        name, equals, _value = param.partition("=")
        if not equals or _PARAM_NAME_RE.fullmatch(name) is None:
            return None
    mime_type = media_type.lower()
    if _MIME_TYPE_RE.fullmatch(mime_type) is None:
        return None
    try:
        data = binascii.a2b_base64(payload.encode("ascii"), strict_mode=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return None
    return ParsedDataUrl(mime_type, data)


def sniff_file_bytes(data: bytes) -> SniffedFileType | None:
    """The type a file's first bytes show: PNG, JPEG, GIF (87a or 89a), WebP (``RIFF`` with
    ``WEBP`` at offset 8) or PDF (``%PDF-``); None for anything else, text included."""
    if data.startswith(_PNG_SIGNATURE):
        return "image/png"
    if data.startswith(_JPEG_SIGNATURE):
        return "image/jpeg"
    if data.startswith(_GIF_SIGNATURES):
        return "image/gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(_PDF_SIGNATURE):
        return "application/pdf"
    return None


def _decode_text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _json_problem(text: str) -> str | None:
    """Why `text` is not a JSON document, or None when it parses.

    Strict JSON: ``NaN`` and ``Infinity`` are refused, a leading byte order mark is allowed, and
    nesting too deep to parse counts as not parsing. Numbers are never converted, so a long
    integer is no problem.
    """
    try:
        json.loads(
            text.removeprefix("\ufeff"),
            parse_int=str,
            parse_float=str,
            parse_constant=_reject_constant,
        )
    except RecursionError:
        return "its JSON is nested too deeply to read"
    except json.JSONDecodeError as exc:
        return f"its text does not parse as JSON (line {exc.lineno}, column {exc.colno})"
    except ValueError:
        return "its text does not parse as JSON"
    return None


def _or_list(items: Iterable[str]) -> str:
    """``"a, b or c"``."""
    *rest, last = items
    return f"{', '.join(rest)} or {last}" if rest else last


def _size_error(path: str, size: int, cap: int) -> AskValidationError:
    return AskValidationError(
        path=join_path(path, "size"),
        code="FILE_TOO_LARGE",
        message=f"The file is {size:,} bytes, more than the limit of {cap:,} bytes.",
        fix=f"Send a smaller file, of at most {cap:,} bytes.",
    )


def _type_not_accepted_error(path: str, mime_type: str, sniffed: str | None) -> AskValidationError:
    if sniffed is not None:
        fix = f"Declare the type its bytes show ({sniffed})."
    else:
        fix = f"Send a file of an accepted type: {_or_list(_KNOWN_MIME_TYPES)}."
    if mime_type:
        message = f"The file's declared type {describe(mime_type)} is not one a files ask accepts."
    else:
        message = "The file declares no type, so it is not one a files ask accepts."
    return AskValidationError(
        path=join_path(path, "mimeType"),
        code="FILE_TYPE_NOT_ACCEPTED",
        message=message,
        fix=fix,
    )


def _mismatch(path: str, message: str, fix: str) -> AskValidationError:
    return AskValidationError(
        path=join_path(path, "mimeType"), code="MIME_MISMATCH", message=message, fix=fix
    )


def _content_error(path: str, declared: str, data: bytes) -> AskValidationError | None:
    """The `MIME_MISMATCH` error for bytes that are not the declared known type, or None."""
    sniffed = sniff_file_bytes(data)
    name = _TYPE_NAMES[declared]
    head = f"The file is declared as {declared}, but"
    if sniffed is not None and sniffed != declared:
        return _mismatch(
            path,
            f"{head} its bytes are {_TYPE_NAMES[sniffed]} ({sniffed}).",
            f"Upload the file again as {name}, or declare the type its bytes show ({sniffed}).",
        )
    if declared not in _TEXT_MIME_TYPES:
        if sniffed == declared:
            return None
        text = _decode_text(data)
        if data and text is not None and "\x00" not in text:
            return _mismatch(
                path,
                f"{head} its bytes are text, not {name}.",
                f"Upload the file again as {name}, or declare it as a text type "
                f"({_or_list(_TEXT_MIME_TYPES)}).",
            )
        return _mismatch(
            path,
            f"{head} its bytes do not start with the signature of {name}.",
            f"Upload the file again as {name}.",
        )
    text = _decode_text(data)
    if text is None:
        return _mismatch(
            path,
            f"{head} its bytes are not valid UTF-8 text.",
            f"Save the file as UTF-8 {name} and upload it again.",
        )
    if "\x00" in text:
        return _mismatch(
            path,
            f"{head} its bytes contain a NUL character, so they are not text.",
            f"Upload the file again as UTF-8 {name} without NUL characters.",
        )
    if declared == "application/json":
        problem = _json_problem(text)
        if problem is not None:
            return _mismatch(
                path,
                f"{head} {problem}.",
                "Upload a file that holds valid JSON, or declare it as text/plain.",
            )
    return None


def check_ask_file_bytes(
    data: bytes,
    *,
    index: int,
    mime_type: str,
    max_file_size_bytes: int | None = None,
) -> list[AskValidationError]:
    """Check the bytes of the file at ``content.files[index]`` of a `files` answer against its
    declared type and the per-file cap; empty when they pass.

    - More bytes than the cap (default ``files.defaultMaxFileSizeBytes``): `FILE_TOO_LARGE` at
      ``content.files[i].size``. The content is then not examined.
    - A declared type that is no accepted type: `FILE_TYPE_NOT_ACCEPTED` at
      ``content.files[i].mimeType``.
    - Images and PDFs must start with their type's signature; plain text, CSV and JSON must be
      UTF-8 without NUL characters and must not start with an image or PDF signature, and JSON
      must parse. Otherwise: `MIME_MISMATCH` at ``content.files[i].mimeType``.

    The declared type is compared after `normalize_mime_type`. Errors are sorted by path, then
    code. Never raises on any bytes or declared type.
    """
    path = join_path(join_path("content", "files"), index)
    cap = DEFAULT_MAX_FILE_SIZE if max_file_size_bytes is None else max_file_size_bytes
    declared = normalize_mime_type(mime_type) if isinstance(mime_type, str) else ""
    errors: list[AskValidationError] = []
    too_large = len(data) > cap
    if too_large:
        errors.append(_size_error(path, len(data), cap))
    if declared not in _TYPE_NAMES:
        errors.append(_type_not_accepted_error(path, declared, sniff_file_bytes(data)))
    elif not too_large:
        error = _content_error(path, declared, data)
        if error is not None:
            errors.append(error)
    return sort_errors(errors)


def file_not_owned_error(
    index: int, *, upload_route: str = DEFAULT_UPLOAD_ROUTE
) -> AskValidationError:
    """The `FILE_NOT_OWNED` error at ``content.files[index].fileId``: the id names no readable
    upload of the caller, or the host keeps no files. `upload_route` names the upload endpoint
    in the fix, for a server mounted under another prefix."""
    return AskValidationError(
        path=join_path(join_path(join_path("content", "files"), index), "fileId"),
        code="FILE_NOT_OWNED",
        message="The fileId does not name an upload of yours that this server can read.",
        fix=(
            f"Upload the file with {upload_route} and send the id it returns, or send the file "
            "as a base64 data URL in url instead."
        ),
    )


_PATH_SEPARATORS: Final = re.compile(r"[\\/]")


def clean_filename(raw: str) -> str:
    """A file's name as handrail stores and shows it, whether it came with an upload or with a
    `files` answer: the last segment of a path (after the last ``/`` or ``\\``), without
    control, format or other unprintable characters (NUL, line breaks, bidirectional
    overrides, lone surrogates), trimmed, and at most `FILENAME_MAX` characters.

    ``""`` means the name names no file: nothing printable is left, or only dots (``.`` and
    ``..`` are folders, not file names). The caller refuses it.
    """
    name = _PATH_SEPARATORS.split(raw)[-1]
    if not name.isascii() or not name.isprintable():
        name = "".join(char for char in name if char.isprintable())
    name = name.strip()[:FILENAME_MAX].strip()
    return "" if not name.strip(".") else name


def _one_line(text: str) -> str:
    """`text` with line breaks and other control characters replaced by spaces, so a filename
    cannot start a line of its own in what the model reads."""
    return "".join(
        " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char for char in text
    )


def file_summary_line(position: int, total: int, filename: str, mime_type: str, size: int) -> str:
    """The line the model reads before a file, such as
    ``File 1 of 2: receipt.png (image/png, 48213 bytes)``. `position` counts from 1."""
    unit = "byte" if size == 1 else "bytes"
    return (
        f"File {position} of {total}: {_one_line(filename)} ({_one_line(mime_type)}, {size} {unit})"
    )


def cut_text_file(data: bytes, max_bytes: int = TEXT_MAX_BYTES) -> str:
    """A text, CSV or JSON file as the model reads it: the UTF-8 text, and when the file is
    longer than `max_bytes`, only its first whole characters within `max_bytes` followed by
    ``\\n[The file is cut to its first N of M bytes.]`` (N kept, M in the file).

    Bytes that are not UTF-8 (the byte check refuses such files) become U+FFFD rather than
    raising.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be 0 or more, not {max_bytes}")
    if len(data) <= max_bytes:
        return data.decode("utf-8", errors="replace")
    kept = max_bytes
    # Step back over continuation bytes (10xxxxxx) to the start of the cut character; a UTF-8
    # character has at most three of them.
    for _ in range(3):
        if kept == 0 or data[kept] & 0xC0 != 0x80:
            break
        kept -= 1
    text = data[:kept].decode("utf-8", errors="replace")
    return f"{text}\n[The file is cut to its first {kept} of {len(data)} bytes.]"
