"""Loading the files of a `files` answer: the bytes are checked, shown to the model once, and
never stored with the answer (the stored answer keeps names, types and real sizes only).

So that a process taking the answer's turn over after a crash shows the model the same files,
the bytes of each data URL are kept as an upload of no one (`KEPT_OWNER`) while the turn holds
its lease (`keep_answer_files`, named in the lease's state, never in a row), read again with
the answer's uploads (`recovered_answer_files`), and removed once the turn no longer needs
them (`after_answer`). The copies' ids (`kept_file_ids`) are in the lease the answer commits,
and the copies are made after that commit: a process that stops before it leaves no copy
that nothing names, one that stops after it leaves copies its lease names (or misses some,
and whoever takes the turn over puts the ask back and removes the others).

A process that stops after the turn's last commit released the lease, but before it removed
the copies, leaves copies that no lease names: the recovery sweep of any process removes them
(`drop_unnamed_copies`). A copy is made after the commit of the lease that names it, and a
lease keeps its ``keptFiles`` until the turn ends, so a copy that no lease names once it
exists is one whose turn is over: the sweep reads the copies first and the leases after.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Awaitable, Sequence
from typing import Any, Final

from .._util import new_id
from ..asks import (
    AskValidationError,
    check_ask_file_bytes,
    file_not_owned_error,
    normalize_mime_type,
    parse_ask_data_url,
)
from ..asks.errors import sort_errors
from ..asks.files import clean_filename
from ..errors import FileNotFound, InvalidAnswer
from ..store import Store
from .messages import FilePart
from .turn import Principal

log = logging.getLogger("handrail.runtime")

#: The owner of the kept copies of a files answer, by which the sweep finds them (the files'
#: owner index). It is no person's upload: a copy's id (random, 96 bits) is shown to no one,
#: only its lease names it, so not even a user with this id could name one in an answer.
KEPT_OWNER: Final = "handrail:kept"


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


def kept_file_ids(stored: dict[str, Any], parts: Sequence[FilePart]) -> list[str]:
    """A new id for the kept copy of each file of the stored answer `stored` that names no
    upload (a data URL), in the answer's order; none when it shows the model no files."""
    if not parts:
        return []
    return [new_id() for entry in stored["content"]["files"] if "fileId" not in entry]


async def keep_answer_files(
    store: Store,
    stored: dict[str, Any],
    parts: Sequence[FilePart],
    kept: Sequence[str],
) -> None:
    """Once the answer and its lease, which names `kept` (`kept_file_ids`), are committed:
    keep the bytes of each file of `stored` that names no upload as an upload of `KEPT_OWNER`
    with the next id of `kept`. A failure is logged: the turn goes on with the bytes it holds,
    and only a process that takes it over would miss them."""
    if not kept:
        return
    ids = iter(kept)
    try:
        for entry, part in zip(stored["content"]["files"], parts, strict=True):
            if "fileId" not in entry:
                await store.files.create(
                    KEPT_OWNER, part.filename, part.mime_type, part.data, file_id=next(ids)
                )
    except Exception:
        log.warning("could not keep the files of an answer for a takeover", exc_info=True)


async def recovered_answer_files(
    store: Store, stored: dict[str, Any], kept: Sequence[str]
) -> tuple[FilePart, ...]:
    """The files of the stored answer `stored` as its answering turn showed them to the model:
    each upload it names, and each kept copy (`keep_answer_files`) in order. Raises
    `FileNotFound` when the bytes of one are gone."""
    copies = iter(kept)
    parts: list[FilePart] = []
    for entry in stored["content"]["files"]:
        file_id = entry["fileId"] if "fileId" in entry else next(copies, None)
        record = None if file_id is None else await store.files.get(file_id)
        if record is None:
            raise FileNotFound(f"The bytes of {entry['filename']!r} are gone.")
        data = await store.files.read(record)
        parts.append(FilePart(filename=entry["filename"], mime_type=entry["mimeType"], data=data))
    return tuple(parts)


async def drop_kept_files(store: Store, kept: Sequence[str]) -> None:
    """Remove the kept copies `kept` (a failure is logged; one gone already is no error)."""
    for file_id in kept:
        try:
            with contextlib.suppress(FileNotFound):
                await store.files.delete(file_id)
        except Exception:
            log.warning("could not remove the kept file %s", file_id, exc_info=True)


async def after_answer(
    store: Store, history_id: str, kept: Sequence[str], work: Awaitable[None]
) -> None:
    """Run the answer's `work`, then remove its kept copies unless a lease on the history still
    names them (the turn did not finish: whoever takes it over reads them). Nothing is removed
    when `work` raises, since its lease then lapses and the turn is taken over; copies this
    leaves behind (the lease could not be read) go with the sweep (`drop_unnamed_copies`).

    The turn's last change may not have waited for the disk (`HistoryChange.synced`), but
    each removal marks its file deleted with a write that does, before its bytes go: that
    write puts the turn's last change on the disk with its own (on either database the WAL is
    written and flushed in order), so no power loss leaves a lease that names bytes gone."""
    await work
    if not kept:
        return
    try:
        lease = await store.leases.get(history_id)
    except Exception:
        log.warning("could not read the turn lease of %s", history_id, exc_info=True)
        return
    if lease is None or lease.state.get("keptFiles") != list(kept):
        await drop_kept_files(store, kept)


async def drop_unnamed_copies(store: Store, before: dt.datetime) -> list[str]:
    """Remove the kept copies made before `before` that no lease names (their turn ended, and
    the process that ran it stopped before it removed them); the ids removed. The copies are
    read before the leases: a copy whose lease is committed is named until its turn ends."""
    copies = await store.files.ids_of(KEPT_OWNER, created_before=before)
    if not copies:
        return []
    named = {
        str(k) for lease in await store.leases.every() for k in lease.state.get("keptFiles", [])
    }
    unnamed = [c for c in copies if c not in named]
    await drop_kept_files(store, unnamed)
    return unnamed
