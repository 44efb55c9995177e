"""``POST /files/upload``: one file in the multipart field ``file``, owned by the caller.

The body is parsed as it streams in (python-multipart), holding at most the per-file cap in
memory: a file over the cap is refused with 413 as soon as it passes it, and a body whose
declared length is already too large is refused before it is read. The bytes go to the blob
store; the row holds the name, the type and the size only.

The MIME type is the part's ``Content-Type``, normalised (lowercase, no parameters); when it is
missing or ``application/octet-stream``, the filename's extension decides. The filename is
cleaned as every file name is (`handrail.asks.files.clean_filename`); one that holds NUL or a
lone surrogate is refused as any such text in a body is, and one that names no file (``..``)
as a missing one. A body that ends before its closing boundary is refused: a file cut short
is never stored.
"""

from __future__ import annotations

import mimetypes
import re
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from python_multipart.multipart import MultipartParser, parse_options_header

from ..asks import normalize_mime_type
from ..asks.files import clean_filename
from ..errors import BadRequest, PayloadTooLarge
from .auth import Caller
from .bodies import storable_text_problems, store_of, unstorable_text
from .openapi import body, json_ok, problems, ref
from .problems import ok
from .views import file_json

__all__ = ["add_upload_routes"]


FIELD: Final = "file"
#: Room for the multipart boundaries and part headers around the file.
OVERHEAD_BYTES: Final = 64 * 1024
#: Small form fields besides the file are read and ignored, up to this size each.
FIELD_MAX_BYTES: Final = 8 * 1024
GENERIC_TYPES: Final = ("", "application/octet-stream")
#: Extensions whose type `mimetypes` may not know on every platform.
EXTENSION_TYPES: Final = {
    ".csv": "text/csv",
    ".json": "application/json",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_TYPE: Final = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")


def _size_text(size: int) -> str:
    """A size as a person reads it: ``512 bytes``, ``3.2 KB``, ``10.5 MB`` (powers of 1000, as
    the web UI shows them)."""
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def _too_large(cap: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        "File too large",
        f"The file is larger than the upload limit of {_size_text(cap)}; send a smaller file.",
        code="FILE_TOO_LARGE",
    )


def _filename_text(raw: bytes) -> str:
    """The part's filename as text: UTF-8, keeping NUL and encoded surrogates for the text
    rule to refuse; a name with other bytes that are not UTF-8 gets U+FFFD for them."""
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def mime_type_for(content_type: str, filename: str) -> str:
    """The normalised type of an upload: the part's type, else the filename's extension."""
    declared = normalize_mime_type(content_type)
    if declared not in GENERIC_TYPES and _TYPE.fullmatch(declared):
        return declared
    suffix = ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""
    guessed = EXTENSION_TYPES.get(suffix) or mimetypes.guess_type(filename, strict=False)[0]
    return normalize_mime_type(guessed) if guessed else "application/octet-stream"


class _Parts:
    """The callbacks of the streaming parser: keeps the ``file`` part, skips the others."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.headers: dict[bytes, bytes] = {}
        self._field = b""
        self._value = b""
        self._name: bytes | None = None
        self._is_file = False
        self._skipped = 0
        self.files = 0
        self.filename: str | None = None
        self.content_type = ""
        self.data = bytearray()
        self.ended = False

    def on_end(self) -> None:
        self.ended = True

    def on_part_begin(self) -> None:
        self.headers = {}
        self._name = None
        self._is_file = False
        self._skipped = 0

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def on_header_end(self) -> None:
        self.headers[self._field.lower().strip()] = self._value.strip()
        self._field = b""
        self._value = b""

    def on_headers_finished(self) -> None:
        _, params = parse_options_header(self.headers.get(b"content-disposition", b""))
        self._name = params.get(b"name")
        if self._name == FIELD.encode():
            self.files += 1
            if self.files > 1:
                raise BadRequest("Send one file per upload", "The body has two `file` fields.")
            self._is_file = True
            raw_name = params.get(b"filename")
            self.filename = _filename_text(raw_name) if raw_name is not None else None
            self.content_type = self.headers.get(b"content-type", b"").decode("latin-1")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        size = end - start
        if self._is_file:
            if len(self.data) + size > self.cap:
                raise _too_large(self.cap)
            self.data += data[start:end]
        else:
            self._skipped += size
            if self._skipped > FIELD_MAX_BYTES:
                raise BadRequest(
                    "Validation failed",
                    "Send only the file.",
                    code="body-validation-failed",
                    fields={(self._name or b"?").decode("latin-1"): "is too large"},
                )


async def upload(request: Request, principal: Caller) -> JSONResponse:
    cap: int = request.app.state.upload_cap
    media, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if media != b"multipart/form-data" or not boundary:
        raise BadRequest(
            "The upload must be multipart/form-data",
            f"Send the file in the multipart field `{FIELD}`.",
        )
    limit = cap + OVERHEAD_BYTES
    declared = request.headers.get("content-length", "").strip()
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise _too_large(cap)
    parts = _Parts(cap)
    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": parts.on_part_begin,
            "on_part_data": parts.on_part_data,
            "on_header_field": parts.on_header_field,
            "on_header_value": parts.on_header_value,
            "on_header_end": parts.on_header_end,
            "on_headers_finished": parts.on_headers_finished,
            "on_end": parts.on_end,
        },
    )
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise _too_large(cap)
            parser.write(chunk)
        parser.finalize()
    except (BadRequest, PayloadTooLarge):
        raise
    except Exception as exc:
        raise BadRequest("The upload is not valid multipart/form-data", str(exc)) from None
    if not parts.ended:
        raise BadRequest(
            "The upload is not valid multipart/form-data",
            "The body ends before its closing boundary: it was cut short, and nothing was "
            "stored. Send the whole body again.",
        )
    if parts.files == 0:
        raise BadRequest(
            "file is required",
            f"Send the file in the multipart field `{FIELD}`.",
            fields={FIELD: "is required"},
        )
    problems = storable_text_problems({FIELD: {"filename": parts.filename or ""}})
    if problems:
        raise unstorable_text(problems)
    filename = clean_filename(parts.filename or "")
    if not filename:
        raise BadRequest(
            "filename is required",
            "Give the file part its own file name (not a folder such as `..`) in its "
            "Content-Disposition header.",
            fields={FIELD: "needs a filename"},
        )
    mime_type = mime_type_for(parts.content_type, filename)
    record = await store_of(request).files.create(
        principal.user_id, filename, mime_type, bytes(parts.data)
    )
    return ok(request, file_json(record), status_code=201)


def add_upload_routes(router: APIRouter, prefix: str) -> None:
    """Add ``POST <prefix>/files/upload``."""
    router.add_api_route(
        prefix + "/files/upload",
        upload,
        methods=["POST"],
        name="uploadFile",
        operation_id="uploadFile",
        tags=["files"],
        summary="Upload a file to answer a files ask with",
        status_code=201,
        responses={
            **json_ok(ref("UploadedFile"), "The stored file.", 201),
            **problems(400, 413, notes={413: "The file is over the per-file upload limit."}),
        },
        openapi_extra=body(
            {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            },
            media="multipart/form-data",
        ),
    )
