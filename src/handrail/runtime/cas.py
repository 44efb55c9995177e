"""The one compare-and-set loop every writer of the runtime uses.

Read the history, work out the change for the history as it is now, write it with the version
it was made for; on a lost race read again and work it out again, at most `attempts` times.
The write publishes the change's events (`HistoryChange.events`) once it committed (on
PostgreSQL the other processes hear them with the commit, see `HistoryRepo.apply`); those that
webhooks and email send were written to the event outbox with the change, so they are
delivered even when this process stops before publishing them.

    written = await compare_and_set(store, history_id, cancel_pending, current=history)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Final

from ..errors import HistoryNotFound
from ..store import HistoryConflict, Store
from ..store.records import History, HistoryChange, RequestRecord

__all__ = ["CAS_ATTEMPTS", "Change", "compare_and_set"]

#: How many times a change is worked out and tried before the lost race is raised.
CAS_ATTEMPTS: Final = 20

#: Works out the change for the history as it is now; None when there is nothing to write.
Change = Callable[[History], "HistoryChange | Awaitable[HistoryChange | None] | None"]


async def compare_and_set(
    store: Store,
    history_id: str,
    change: Change,
    *,
    current: History | None = None,
    read: Callable[[], Awaitable[History | None]] | None = None,
    log: Callable[[], RequestRecord | None] | None = None,
    attempts: int = CAS_ATTEMPTS,
) -> History:
    """Apply `change` to the history with a compare-and-set, retrying lost races.

    `current` is the history as the caller last saw it (tried first without a read); `read`
    reads it again (default: ``store.histories.get``). `log` gives the request log entry to
    write in the same transaction, once the change is known. Returns the history as written
    (or as read, when `change` gave None). Raises `HistoryNotFound` when the history is gone
    and `HistoryConflict` when every attempt lost.
    """
    reread = read or (lambda: store.histories.get(history_id))
    history = current
    lost: HistoryConflict | None = None
    for _ in range(max(attempts, 1)):
        if history is None:
            history = await reread()
            if history is None:
                raise HistoryNotFound(f"No history {history_id}.")
        made = change(history)
        if inspect.isawaitable(made):
            made = await made
        if made is None:
            return history
        try:
            written = await store.histories.apply(
                history_id,
                made,
                expected_version=history.version,
                log=log() if log is not None else None,
            )
        except HistoryConflict as exc:
            lost = exc
            history = None
            continue
        return written
    assert lost is not None
    raise lost
