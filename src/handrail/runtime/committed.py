"""What this process committed last on each paused history, so that the answer that resumes
it need not read the history and its rows again.

A turn that pauses keeps here the history as its commit wrote it and the messages its answer
replays (those of the rows before the paused turn's prompt, which that turn built already).
The answer tries them first: its compare-and-set on the version is the check that nothing
changed since (every change bumps the version, in any process), and whatever it would refuse
on them (not pending, not the owner, an invalid answer...) is worked out again on a fresh read,
so a refusal never comes from this copy. An entry is used once; the oldest go first past
`LAST_COMMITS`, and a history whose answer would replay more than `LAST_COMMIT_MESSAGES`
messages is not kept (its answer reads it), so the memory it takes grows neither with the
paused histories nor with their length.
"""

from __future__ import annotations

from typing import Final

from ..store.records import History
from .messages import Message

#: How many paused histories keep their last commit here (the oldest are dropped first).
LAST_COMMITS: Final = 256

#: The most messages a kept entry replays: a longer history's answer reads it from the store.
LAST_COMMIT_MESSAGES: Final = 64


class LastCommits:
    """The last commit of this process on each paused history: the history as written and the
    messages its answer replays."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = LAST_COMMITS) -> None:
        self._entries: dict[str, tuple[History, tuple[Message, ...]]] = {}
        self._size = size

    def keep(self, history: History, replay: tuple[Message, ...]) -> None:
        """Keep `history` (as a commit wrote it) and the messages its answer replays; only a
        history paused on an ask that names its prompt's row, with at most
        `LAST_COMMIT_MESSAGES` of them, is kept (any older entry of it is dropped)."""
        entries = self._entries
        pending = history.pending_ask
        if pending is None or pending.prompt_index is None or len(replay) > LAST_COMMIT_MESSAGES:
            entries.pop(history.id, None)
            return
        entries.pop(history.id, None)
        entries[history.id] = (history, replay)
        if len(entries) > self._size:
            del entries[next(iter(entries))]

    def take(self, history_id: str) -> tuple[History, tuple[Message, ...]] | None:
        """The entry of `history_id`, removed (None when there is none)."""
        return self._entries.pop(history_id, None)

    def __len__(self) -> int:
        return len(self._entries)
