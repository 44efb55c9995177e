"""Loading the files of a `files` answer: the bytes are checked, shown to the model once, and
never stored with the answer (the stored answer keeps names, types and real sizes only)."""

from __future__ import annotations

import logging
from typing import Any

from ..asks import (
    AskValidationError,
    check_ask_file_bytes,
    file_not_owned_error,
    normalize_mime_type,
    parse_ask_data_url,
)
from ..asks.errors import sort_errors
from ..asks.files import clean_filename
from ..errors import InvalidAnswer
from ..store import Store
from .messages import FilePart
from .turn import Principal

log = logging.getLogger("handrail.runtime")


def invalid_answer(errors: list[AskValidationError]) -> InvalidAnswer:
    """The error of an answer that fails validation: ``fields`` lists every error."""
    return InvalidAnswer(
        "The answer does not match the ask. See fields.",
        fields=[e.to_dict() for e in sort_errors(errors)],
    )


async def load_answer_files(
    store: Store,
    principal: Principal,
    answer: dict[str, Any],
    *,
    max_file_size_bytes: int,
) -> tuple[dict[str, Any], tuple[FilePart, ...]]:
    """The stored form of a valid `files` answer and the files to show the model.

    Each ``fileId`` must name a live upload of the caller whose bytes the blob store returns
    (`FILE_NOT_OWNED` otherwise; a failed read is logged as a warning); each data URL is
    decoded. Every file's bytes then pass `check_ask_file_bytes`. Raises the 400 with every
    error; the ask stays pending.
    """
    refs = answer["content"]["files"]
    errors: list[AskValidationError] = []
    stored: list[dict[str, Any]] = []
    parts: list[FilePart] = []
    for index, ref in enumerate(refs):
        mime_type = normalize_mime_type(ref["mimeType"])
        data: bytes
        if "fileId" in ref:
            record = await store.files.get(ref["fileId"])
            if record is None or record.owner_id != principal.user_id:
                errors.append(file_not_owned_error(index))
                continue
            try:
                data = await store.files.read(record)
            except Exception:
                log.warning("could not read the bytes of upload %s", record.id, exc_info=True)
                errors.append(file_not_owned_error(index))
                continue
        else:
            parsed = parse_ask_data_url(ref["url"])
            if parsed is None:  # validate_ask_response already refused it
                continue
            data = parsed.data
        errors.extend(
            check_ask_file_bytes(
                data, index=index, mime_type=mime_type, max_file_size_bytes=max_file_size_bytes
            )
        )
        filename = clean_filename(ref["filename"])  # validation refused one that names no file
        entry: dict[str, Any] = {}
        if "fileId" in ref:
            entry["fileId"] = ref["fileId"]
        entry.update(filename=filename, mimeType=mime_type, size=len(data))
        stored.append(entry)
        parts.append(FilePart(filename=filename, mime_type=mime_type, data=data))
    if errors:
        raise invalid_answer(errors)
    return {"action": "accept", "content": {"files": stored}}, tuple(parts)
