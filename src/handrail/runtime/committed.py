"""What this process committed last on each paused history, so that the answer that resumes
it need not read the history and its rows again.

A turn that pauses keeps here the history as its commit wrote it and the messages its answer
replays (those of the rows before the paused turn's prompt, which that turn built already).
The answer tries them first: its compare-and-set on the version is the check that nothing
changed since (every change bumps the version, in any process), and whatever it would refuse
on them (not pending, not the owner, an invalid answer...) is worked out again on a fresh read,
so a refusal never comes from this copy. An entry is used once; the oldest go first past
`LAST_COMMITS`, so the memory it takes does not grow with the paused histories.
"""

from __future__ import annotations

from typing import Final

from ..store.records import History
from .messages import Message

#: How many paused histories keep their last commit here (the oldest are dropped first).
LAST_COMMITS: Final = 256


class LastCommits:
    """The last commit of this process on each paused history: the history as written and the
    messages its answer replays."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = LAST_COMMITS) -> None:
        self._entries: dict[str, tuple[History, tuple[Message, ...]]] = {}
        self._size = size

    def keep(self, history: History, replay: tuple[Message, ...]) -> None:
        """Keep `history` (as a commit wrote it) and the messages its answer replays; only a
        history paused on an ask that names its prompt's row is kept."""
        pending = history.pending_ask
        if pending is None or pending.prompt_index is None:
            return
        entries = self._entries
        entries.pop(history.id, None)
        entries[history.id] = (history, replay)
        if len(entries) > self._size:
            del entries[next(iter(entries))]

    def take(self, history_id: str) -> tuple[History, tuple[Message, ...]] | None:
        """The entry of `history_id`, removed (None when there is none)."""
        return self._entries.pop(history_id, None)

    def __len__(self) -> int:
        return len(self._entries)
