"""What this process committed last on each history, so that the next turn on it need not read
the history and its rows again.

Two kinds of entry, one per history (the newest commit replaces the older entry):

- a history paused on an ask, as the pausing commit wrote it, with the messages its answer
  replays (those of the rows before the paused turn's prompt, which that turn built already);
- a history that waits on no ask, as `Store` create made it or as a turn's last commit left it,
  with the data of all its rows (`LastCommit.rows`), from which the next prompt's turn draws
  its messages and its row count.

An answer (`answering.py`) tries its entry first: its compare-and-set on the version is the
check that nothing changed since (every change bumps the version, in any process), and the
answer's compare-and-set is the first thing it does: nothing is carried out before it. Whatever
it would refuse on the copy (not pending, not the owner, an invalid answer...) is worked out
again on a fresh read, so a refusal never comes from this copy.

A prompt cannot lean on its first compare-and-set the same way: that comes at the end of its
turn, after the model ran, its events reached the client and maybe read-only or auto-allowed
tools ran, and a lost race there undoes none of it: `Runtime._commit` reads the history again
and appends the turn's rows after what landed meanwhile (its own ask cancelled,
``one_ask_at_a_time``, when another is pending by then). A stale copy would have the turn do
what a fresh read would not: run beside a turn
another process holds a lease on (a fresh read sees the lease and waits for that turn or takes
it over), leave alone an ask another process's turn paused on (a fresh read cancels it,
``user_sent_message``), or show the model a conversation without a turn that another process
committed before this prompt came in. So a prompt's entry is checked first, in one statement
(`Store.turn_unchanged`): the history is live and still at the entry's version, holds no turn
lease, and has no confirmation ``consumed`` or ``uncertain``. That is everything
`Store.load_turn` reads and the start of a turn acts on:

- the history itself (its rows, its pending ask, its title, its owner, whether it was
  deleted): every change of the history or of its rows bumps its version (`HistoryRepo.apply`,
  `update_title`, `delete`), whoever makes it;
- its lease: only a history change writes a new one (bumping the version); a heartbeat, a
  take-over or a release only changes or drops one that is there, so the check reads it anyway;
- its confirmations: a turn reports as uncertain (``TOOL_EXECUTION_UNCERTAIN``) one that was
  consumed and never got an outcome; their changes do not bump the version, so the check
  reads them: with none consumed or uncertain, a fresh read's turn would report nothing.

When the check fails, or the entry is not the caller's, or waits on an ask, the prompt reads
the history as before (`Store.load_turn`) and everything, refusals (not found, not the owner)
included, is worked out on that fresh read. On SQLite the check is one SELECT where the read
is four; on PostgreSQL one round trip either way, with nothing to aggregate or decode.

Only a commit that did not read the history again (a lost race) is kept, and only with every
row's data known to this process from a read or a create. An ask row's ``status`` in the kept
data may be older than the stored one (an answer changes it in place): only the messages and
the row count are drawn from them, and neither depends on it. An entry is used once; the
oldest go first past `LAST_COMMITS`; a paused history whose answer would replay more than
`LAST_COMMIT_MESSAGES` messages is not kept, nor the rows of one with more than
`LAST_COMMIT_ROWS` rows (its next turn reads it), so the memory it takes grows neither with the
histories nor with their length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .._frozen import slot_init
from ..store.records import History
from .messages import Message
from .rows import Row

__all__ = ["LAST_COMMITS", "LAST_COMMIT_MESSAGES", "LAST_COMMIT_ROWS", "LastCommit", "LastCommits"]

#: How many histories keep their last commit here (the oldest are dropped first).
LAST_COMMITS: Final = 256

#: The most messages a kept entry replays: a longer history's answer reads it from the store.
LAST_COMMIT_MESSAGES: Final = 64

#: The most rows an entry keeps: a longer history's next prompt reads it from the store (a
#: row gives at most one message, so its messages are fewer).
LAST_COMMIT_ROWS: Final = 64


@slot_init
@dataclass(frozen=True, slots=True)
class LastCommit:
    """One history as this process's last commit on it left it."""

    history: History
    #: The data of all the history's rows as of `history.version`, in order (None when this
    #: process does not know them all, or they are more than `LAST_COMMIT_ROWS`).
    rows: tuple[Row, ...] | None
    #: For a history paused on an ask: the messages its answer replays (None otherwise).
    replay: tuple[Message, ...] | None


class LastCommits:
    """The last commit of this process on each history it keeps: the history as written, the
    data of its rows, and for a paused one the messages its answer replays."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = LAST_COMMITS) -> None:
        self._entries: dict[str, LastCommit] = {}
        self._size = size

    def keep(
        self,
        history: History,
        replay: Sequence[Message] | None = None,
        rows: Sequence[Row] | None = None,
    ) -> None:
        """Keep `history` (as a commit wrote it), the data of all its rows when known
        (`rows`), and for a paused history the messages its answer replays (`replay`).

        A paused history is kept when its ask names its prompt's row and `replay` has at most
        `LAST_COMMIT_MESSAGES` messages; one that waits on no ask, when its `rows` are known
        and at most `LAST_COMMIT_ROWS`. Any older entry of the history is dropped either
        way."""
        entries = self._entries
        entries.pop(history.id, None)
        kept_rows = tuple(rows) if rows is not None and len(rows) <= LAST_COMMIT_ROWS else None
        pending = history.pending_ask
        if pending is None:
            if kept_rows is None:
                return
            entry = LastCommit(history, kept_rows, None)
        else:
            if pending.prompt_index is None or replay is None:
                return
            if len(replay) > LAST_COMMIT_MESSAGES:
                return
            entry = LastCommit(history, kept_rows, tuple(replay))
        entries[history.id] = entry
        if len(entries) > self._size:
            del entries[next(iter(entries))]

    def created(self, history: History) -> None:
        """Keep a history this process just created: no rows, no ask."""
        self.keep(history, rows=())

    def take(self, history_id: str) -> LastCommit | None:
        """The entry of `history_id`, removed (None when there is none)."""
        return self._entries.pop(history_id, None)

    def drop(self, history_id: str) -> None:
        """Forget `history_id`'s entry, if any."""
        self._entries.pop(history_id, None)

    def __len__(self) -> int:
        return len(self._entries)
