"""The threads a SQLite `Database` runs its transactions on: `Workers`, a few threads for
reads (the last idle one first, so its connection's cache is warm), and `Writer`, the one
thread that runs the write transactions, several queued ones in one commit (one fsync for
several turns). Each hands its result back to the caller's event loop as a future."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

T = TypeVar("T")

#: The most calls one group commit takes from the queue.
GROUP_COMMIT_MAX: Final = 64

#: The writer is `Writer.quiet` after this many groups in a row of one write each.
QUIET_GROUPS: Final = 4

#: Queued to stop a thread (compared by identity).
STOP: Final = object()


class Workers:
    """A few threads that run blocking calls for an event loop.

    A call and its answer each cross between the threads once (a queue put, then
    ``call_soon_threadsafe``), with none of `concurrent.futures`' extra future and callbacks in
    between. A call goes to the worker that became idle last: under a light load one thread,
    with its connection's page cache warm, runs everything (SQLite drops a connection's cache
    whenever another connection wrote), and the others join in only when calls overlap.
    """

    def __init__(self, count: int, name: str) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Any]] = []  # a stack: the last idle on top
        self._backlog: collections.deque[Any] = collections.deque()
        self._inboxes: list[queue.SimpleQueue[Any]] = []
        self._threads: list[threading.Thread] = []
        for i in range(count):
            inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
            self._inboxes.append(inbox)
            self._threads.append(
                threading.Thread(target=self._serve, args=(inbox,), name=f"{name}-{i}", daemon=True)
            )
        self._idle.extend(reversed(self._inboxes))  # the first thread on top
        for thread in self._threads:
            thread.start()

    def run(self, function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """`function(*args)` on a worker; a future of the event loop for its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = (loop, future, function, args)
        with self._lock:
            if not self._idle:
                self._backlog.append(job)
                return future
            inbox = self._idle.pop()
        inbox.put(job)
        return future

    def _serve(self, inbox: queue.SimpleQueue[Any]) -> None:
        job = inbox.get()
        while job is not STOP:
            loop, future, function, args = job
            try:
                result = function(*args)
            except BaseException as exc:  # handed to the awaiting task, never lost
                error: BaseException | None = exc
                result = None
            else:
                error = None
            # Idle again (or on to the backlog) before the answer goes out, so that the call
            # the answer leads to finds this thread, and its warm cache, on top.
            with self._lock:
                job = self._backlog.popleft() if self._backlog else None
                if job is None:
                    self._idle.append(inbox)
            # A loop that closed while this ran has nobody waiting (RuntimeError).
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, future, result, error)
            if job is None:
                job = inbox.get()

    def shutdown(self) -> None:
        """Let the queued calls finish, then stop every thread."""
        for inbox in self._inboxes:
            inbox.put(STOP)
        for thread in self._threads:
            thread.join()


class Writer:
    """The one thread that runs a SQLite database's write transactions, several at a time.

    A call waits in a queue; the thread takes every call queued (at most `GROUP_COMMIT_MAX`)
    and gives the writes to `run_group`, which commits them together and returns each one's
    outcome (a result or an error). Every caller is answered after the group's commit. A call
    made `alone` (migrations) gets a transaction of its own. A `read` taken with the group runs
    after its commit (`run_read`, given the read's `read` value, its outcome likewise), so a
    read sent while the thread is busy costs no thread a wake-up (see
    `Database.quick_snapshot`).

    It is not the only connection that writes: while it is `quiet`, an `unsynced` write runs on the
    event loop's own connection instead (`Database._write_here`), under SQLite's write lock
    like any other.
    """

    def __init__(
        self,
        name: str,
        run_group: Callable[[list[tuple[Callable[..., Any], tuple[Any, ...]]]], list[Any]],
        run_read: Callable[[Callable[..., Any], tuple[Any, ...], Any], tuple[Any, Any]],
    ) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._run_group = run_group
        self._run_read = run_read
        # The calls queued (counted by the callers' loop) and those answered (by this thread):
        # each count has one thread that writes it, so neither loses an update.
        self._sent = 0
        self._answered = 0
        # Groups in a row of one write each (written by this thread, read by the loops).
        self._lone = 0
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def run(
        self, function: Callable[..., T], args: tuple[Any, ...], alone: bool, read: Any = None
    ) -> Any:
        """Queue `function(*args)`: a write, or with `read` (anything true, handed to
        `run_read`) a read after the group's commit; a future of the caller's loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._sent += 1
        self._queue.put((loop, future, function, args, alone, read))
        return future

    @property
    def idle(self) -> bool:
        """No call is queued or running (as far as this moment tells)."""
        return self._sent == self._answered

    @property
    def quiet(self) -> bool:
        """`idle`, and its last `QUIET_GROUPS` groups each held one write: the writes come
        one at a time, none would wait for another to share its commit."""
        return self._lone >= QUIET_GROUPS and self._sent == self._answered

    def _serve(self) -> None:
        held: Any = None  # a call taken from the queue that must start the next group
        while True:
            job = held if held is not None else self._queue.get()
            held = None
            if job is STOP:
                return
            group = [job]
            if not job[4]:
                while len(group) < GROUP_COMMIT_MAX:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is STOP or more[4]:
                        held = more
                        break
                    group.append(more)
            reads = [job for job in group if job[5]]
            if reads:
                group = [job for job in group if not job[5]]
            if group:
                self._lone = self._lone + 1 if len(group) == 1 else 0
                try:
                    outcomes = self._run_group([(f, args) for _, _, f, args, *_ in group])
                except BaseException as exc:  # the thread goes on; every caller hears of it
                    outcomes = [(None, exc)] * len(group)
                self._answer(group, outcomes)
            if reads:
                run_read = self._run_read
                self._answer(reads, [run_read(f, args, kind) for _, _, f, args, _, kind in reads])

    def _answer(self, jobs: list[Any], outcomes: list[tuple[Any, Any]]) -> None:
        """Settle the futures of `jobs` with their `outcomes`, in order: one
        ``call_soon_threadsafe`` per event loop for all of them (each is a write to the loop's
        wake-up file descriptor, which costs more than settling a future)."""
        self._answered += len(jobs)
        by_loop: dict[Any, list[tuple[asyncio.Future[Any], Any, Any]]] = {}
        for (loop, future, *_), (result, error) in zip(jobs, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, result, error))
        for loop, settled in by_loop.items():
            # A loop that closed meanwhile has nobody waiting (RuntimeError).
            with contextlib.suppress(RuntimeError):
                if len(settled) == 1:
                    loop.call_soon_threadsafe(settle, *settled[0])
                else:
                    loop.call_soon_threadsafe(settle_all, settled)

    def shutdown(self) -> None:
        """Let the queued calls finish, then stop the thread."""
        self._queue.put(STOP)
        self._thread.join()


def settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def settle_all(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    """`settle` each (future, result, error), in order."""
    for future, result, error in settled:
        settle(future, result, error)
