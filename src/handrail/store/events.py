"""The per-user event bus: every change that concerns a user, published once, heard everywhere.

The events are `UserEvent`s (`handrail.store.user_events`: their kinds, data and wire
form).

The bus is `EventBus`, one per `Store` (``store.events``)::

    await store.events.publish(UserEvent(kind="history.renamed", user_id=u, history_id=h,
                                          data={"title": "Trip"}))

    async with store.events.subscribe(user_id, last_event_id=None) as events:
        async for event in events:            # UserEvent, kind "reload" included
            ...

- `EventBus.publish` never raises for a delivery problem (it logs): the state is in the
  database; an event only tells people to look. It delivers to this process's subscribers at
  once and, on PostgreSQL, to every other process through ``NOTIFY`` on the channel
  `CHANNEL` (payloads above PostgreSQL's 8000 byte limit go in several notifications of one
  statement, which PostgreSQL delivers together and in order; the messages' wire form is
  `handrail.store.event_wire`). One task sends them, in the
  order published, without the publisher waiting: the events published while the last ones
  were on their way go together in one statement (one round trip, no transaction around it),
  on the listening connection (through the pool while not listening), and again while that
  fails, first, after a pause that grows to 5 s (marked as sent again, as `EventBus.settle`
  does; at most `_OUTGOING_MAX` wait, the oldest dropped past it, logged);
  `EventBus.close` sends what is left (see there). On SQLite, events stay in the one process.
- The events a history's write makes (`HistoryChange.events`, ``history.created``) are sent
  by the write itself on PostgreSQL (`EventBus.carry`, then `EventBus.settle`): its one
  statement, or its transaction, runs the ``pg_notify`` too, so the other processes hear
  them when it commits and never when it rolls back, with no statement of their own. It
  also takes the events published here and not sent yet (every history's, ahead of its
  own): a write within the sender's wait spares that statement too. Here they are delivered
  once it committed. For a write that raised where its commit may have taken effect (a
  cancel, a lost connection: `handrail.store.db.may_have_committed`) its subscribers get
  ``reload`` in place of its events, and the events it took are sent again, marked so, for a
  process that heard them with its commit drops them (`EventBus.settle`): none is lost, none
  heard twice (within the `REPLAY_WINDOW` events a process keeps), none tells of a change
  that is not there. The order per history holds (see
  `EventBus.carry`). PostgreSQL commits the transactions that notify one at a time, each
  holding its lock over its WAL flush (on this machine about 300 such commits a second,
  whatever the concurrency, against thousands without): so one write of a process at a time
  carries events, and while one does, the others publish theirs after their commit, through
  the sender, whose transactions do not wait for their flush (``synchronous_commit`` off:
  they only notify).
- `EventBus.subscribe(user_id)` hears the events of one user (``None``: of every user, for
  webhooks and mail); with ``kinds``, only the events of those kinds (a listener for Stop
  is not woken for every other event). With `last_event_id` it first replays what came after
  that id, from the last `REPLAY_WINDOW` events this process saw; an id no longer there gives
  one ``reload`` event instead. A subscriber that falls `QUEUE_SIZE` events behind gets
  ``reload`` and continues from there. Leaving the ``async with`` ends the subscription. A
  long-lived listener that must be in place at once uses ``bus.open(user_id)`` and
  ``bus.discard(sub)``.
- `EventBus.start` begins listening on PostgreSQL (the server's start-up calls it; a first
  subscription starts it too) and `EventBus.close` stops it for good (``Store.close`` calls
  it): it waits a few seconds at most for the sender and for the writes carrying events, and
  then an event is delivered in this process only; it starts no task. A
  dropped listening connection is reconnected, and every subscriber gets ``reload``, as does
  a later replay from an id kept before (the events kept are forgotten: they end at the gap).
- ``publish`` is safe from any task; the constructors `ask_created_event` and
  `ask_resolved_event` build the ask events from a `PendingAsk`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from handrail._frozen import slot_init
from handrail._util import new_id
from handrail.store.db import Database
from handrail.store.event_wire import (
    AGAIN,
    CHANNEL,
    HEAD_CHARS,
    NOTIFY_SQL,
    UNCERTAIN,
    event_of,
    id_of,
    kind_of,
    messages_in,
    notifications,
    notify,
    payloads_of,
)
from handrail.store.subscriptions import Subscription
from handrail.store.user_events import (
    EVENT_KINDS,
    EventKind,
    UserEvent,
    ask_created_event,
    ask_resolved_event,
)

__all__ = [
    "CHANNEL",
    "EVENT_KINDS",
    "QUEUE_SIZE",
    "REPLAY_WINDOW",
    "Carried",
    "EventBus",
    "EventKind",
    "Subscription",
    "UserEvent",
    "ask_created_event",
    "ask_resolved_event",
]

log = logging.getLogger("handrail.events")


#: How many of the latest events a process keeps for ``Last-Event-ID`` replays.
REPLAY_WINDOW: Final = 1000
#: How far a subscriber may fall behind before it gets ``reload``.
QUEUE_SIZE: Final = 500
#: Messages in several notifications that may be half received at once.
#: At most this many events go in one statement.
_SEND_MAX: Final = 100
#: Seconds the sender waits before a statement, for the events published meanwhile to go with
#: it: every process hears every statement's notifications (its own too), so fewer, fuller
#: statements cost each of them less, as they cost PostgreSQL less.
_SEND_GATHER_S: Final = 0.002
_PARTS_KEPT: Final = 64
#: How many writes of a process carry their events at once (see `EventBus.carry`).
_WRITES_CARRYING: Final = 1
_RECONNECT_S: Final = (0.2, 0.5, 1.0, 2.0, 5.0)
#: Seconds before the sender tries a statement that failed again, by how many times it failed
#: in a row (the last one for every later failure).
_RESEND_S: Final = (0.1, 0.5, 1.0, 2.0, 5.0)
#: Events waiting for the sender at most; past it (the database out of reach long) the
#: oldest are dropped, logged: their changes are in the database.
_OUTGOING_MAX: Final = 10_000
#: Seconds `EventBus.close` waits for the sender and for the writes that carry events.
_CLOSE_WAIT_S: Final = 5.0


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Carried:
    """The events a write sends in its own transaction (`EventBus.carry`): `payloads` are
    the notifications, none when it carries nothing (SQLite, a closed bus)."""

    history_id: str
    #: The write's own events, published once it committed (`EventBus.settle`).
    events: tuple[UserEvent, ...]
    #: The history's events published before and not sent yet, which the write took.
    taken: list[tuple[UserEvent, list[str]]] = field(default_factory=list)
    payloads: list[str] = field(default_factory=list)
    #: The histories whose events it carries (the sender holds theirs back meanwhile).
    histories: frozenset[str | None] = frozenset()
    #: Whether the write sends them (PostgreSQL, the bus open).
    carries: bool = False


class EventBus:
    """Publishes `UserEvent`s to this process's subscribers and, on PostgreSQL, to every
    other process's (see the module). `db` None is a bus for one process only."""

    def __init__(
        self,
        db: Database | None = None,
        *,
        window: int = REPLAY_WINDOW,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        self._db = db
        self._remote = db is not None and db.backend == "postgresql"
        # Events, and other processes' messages not parsed yet (see `_heard`).
        self._recent: collections.deque[UserEvent | str] = collections.deque(maxlen=window)
        self._subscribers: set[Subscription] = set()
        # What the subscribers hear: how many hear every kind, and how many hear each kind
        # they name (another process's message of a kind nobody hears is not parsed).
        self._every_kind = 0
        self._kind_counts: collections.Counter[str] = collections.Counter()
        self._queue_size = queue_size
        self.origin = new_id()
        #: How this process's own messages start (`publish` writes the origin first).
        self._own = json.dumps({"o": self.origin}, separators=(",", ":"))[:-1]
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event() if self._remote else None
        self._parts: collections.OrderedDict[str, list[str | None]] = collections.OrderedDict()
        self._closed = False
        # Set once `close` stopped sending: nothing is sent, no task started, from then on.
        self._final = False
        # What `close` waits on while writes carry events (done when the last settled).
        self._settled: asyncio.Future[None] | None = None
        self._outgoing: list[tuple[UserEvent, list[str]]] = []
        self._sender: asyncio.Task[None] | None = None
        # The timer that starts the sender once the first events waited `_SEND_GATHER_S`: a
        # write of their history often takes them first (`carry`), and then no task is made.
        self._gather: asyncio.TimerHandle | None = None
        # The events the sender has on their way (done once `_sent` is), and the histories
        # whose writes carry events now, with how many such writes each (see `carry`).
        self._sending: list[tuple[UserEvent, list[str]]] = []
        self._sent: asyncio.Future[None] | None = None
        self._carrying: collections.Counter[str | None] = collections.Counter()
        self._writing = 0
        #: The listening connection's asyncpg connection while it listens: `publish` sends on
        #: it, one statement at a time (`_driver_lock`, shared with its health check).
        self._driver: Any = None
        self._driver_lock = asyncio.Lock()

    @property
    def crosses_processes(self) -> bool:
        """Whether events reach the other processes (PostgreSQL), not only this one's."""
        return self._remote

    # ------------------------------------------------------------------------ publishing

    async def publish(self, event: UserEvent) -> None:
        """Deliver `event` here and (PostgreSQL) to the other processes. Never raises for a
        failed delivery; it is logged."""
        if event.kind == "reload":
            raise ValueError("reload is made by subscriptions, never published")
        self._publish(event)

    def _publish(self, event: UserEvent) -> None:
        self._deliver(event)
        if not self._remote or self._db is None or self._closed:
            return
        # Sent by one task, in the order published, without waiting here: the events published
        # while the last ones were on their way go together in one statement (one round trip,
        # no transaction around it, all or none), unless a write of their history takes them
        # first (`carry`).
        self._outgoing.append((event, self._payloads_of(event)))
        if len(self._outgoing) > _OUTGOING_MAX:
            self._keep_outgoing_bounded()
        self._start_sender()

    def _payloads_of(self, event: UserEvent, *, again: bool = False) -> list[str]:
        return payloads_of(self.origin, event, again=again)

    def _start_sender(self) -> None:
        """Have what is queued sent: by the sender on its way, else by one started once the
        first events waited `_SEND_GATHER_S` (at once when closing)."""
        if self._final:
            self._drop_outgoing()
            return
        if not self._outgoing or (self._sender is not None and not self._sender.done()):
            return
        if self._closed:
            self._send_now()
        elif self._gather is None:
            self._gather = asyncio.get_running_loop().call_later(_SEND_GATHER_S, self._send_now)

    def _stop_gather(self) -> None:
        """Cancel the gather timer, if one is set."""
        if self._gather is not None:
            self._gather.cancel()
            self._gather = None

    def _send_now(self) -> None:
        """Start the sender for what is still queued (the gather timer's callback)."""
        self._stop_gather()
        if self._final or not self._outgoing:
            return
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_queued(), name="handrail-events-send")

    async def _send_queued(self) -> None:
        assert self._db is not None
        pause: float | None = None  # before the first batch, the gather timer waited
        failures = 0
        while self._outgoing:
            if pause is not None and (failures or not self._closed):
                await asyncio.sleep(pause)
            pause = _SEND_GATHER_S
            batch = self._next_batch()
            if not batch:
                return  # what is left waits for a write of its history (`settle` sends it)
            payloads = [p for _, payloads in batch for p in payloads]
            self._sending = batch
            sent = self._sent = asyncio.get_running_loop().create_future()
            try:
                await self._send(batch, payloads)
                if failures:
                    log.info("events reach other processes again")
                failures = 0
            except Exception as exc:
                # Again, first, after a pause that grows while the database stays out of reach
                # (a lost connection is replaced meanwhile), until `close` gives up on them:
                # marked as sent again, for the statement may have gone through before its
                # link failed (a process that heard them drops them).
                pause = _RESEND_S[min(failures, len(_RESEND_S) - 1)]
                failures += 1
                # Said once an outage: the tries after it fail alike until it is over.
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "could not send %d events to other processes (%s); trying again in %g s",
                    len(batch),
                    type(exc).__name__,
                    pause,
                )
                self._outgoing[0:0] = [(e, self._payloads_of(e, again=True)) for e, _ in batch]
                self._keep_outgoing_bounded()
            finally:
                self._sending = []
                sent.set_result(None)

    def _keep_outgoing_bounded(self) -> None:
        """Drop the oldest events waiting past `_OUTGOING_MAX` (logged)."""
        over = len(self._outgoing) - _OUTGOING_MAX
        if over > 0:
            del self._outgoing[:over]
            log.error(
                "%d events could not reach other processes and were dropped: the database "
                "was out of reach too long (their changes are stored; streams there show them "
                "once they reload)",
                over,
            )

    async def _send(self, batch: list[tuple[UserEvent, list[str]]], payloads: list[str]) -> None:
        """`payloads` (the notifications of `batch`) on the listening connection, else
        through the pool: there marked as sent again when the listening connection failed on
        its way (its statement may have gone through)."""
        assert self._db is not None
        try:
            if await self._notify_on_listener(payloads):
                return
        except Exception as exc:
            log.warning("could not notify on the listening connection (%s)", type(exc).__name__)
            payloads = self._again(batch)
        await self._db.autocommit(notify, payloads)

    def _again(self, batch: list[tuple[UserEvent, list[str]]]) -> list[str]:
        return [p for event, _ in batch for p in self._payloads_of(event, again=True)]

    def _next_batch(self) -> list[tuple[UserEvent, list[str]]]:
        """The next events to send, in order, at most `_SEND_MAX`: those of a history whose
        write carries events now stay, for that write's outcome (`settle`)."""
        if not self._carrying:
            batch = self._outgoing[:_SEND_MAX]
            del self._outgoing[:_SEND_MAX]
            return batch
        batch, kept = [], []
        for item in self._outgoing:
            if len(batch) < _SEND_MAX and item[0].history_id not in self._carrying:
                batch.append(item)
            else:
                kept.append(item)
        self._outgoing = kept
        return batch

    # ------------------------------------------------------------------ events with a write

    async def carry(self, history_id: str, events: Sequence[UserEvent]) -> Carried:
        """What a write of `history_id` whose change makes `events` sends in its own
        transaction (`Carried.payloads`), so that no statement of their own follows: on
        PostgreSQL the notifications of the events published here and not sent yet, which it
        takes from the sender, then those of `events`; nothing elsewhere, or once closed.
        PostgreSQL delivers them to the other processes when the write commits and never
        when it rolls back. The caller passes the result to `settle` once the write ended,
        whatever its outcome.

        The order per history holds: the write waits for the sender's statement on its way
        when that has events of `history_id`; it leaves the events of a history that the
        sender has on their way, or that another write carries now, for after those; it
        carries nothing when one of `history_id`'s own must stay behind (past `_SEND_MAX`);
        and until it settled, the sender holds back the events of the histories it carries."""
        for event in events:
            if event.kind == "reload":
                raise ValueError("reload is made by subscriptions, never published")
        while True:
            if not self._remote or self._closed or self._writing >= _WRITES_CARRYING:
                # Another write of this process carries events now: PostgreSQL commits the
                # transactions that notify one at a time, each holding a lock over its WAL
                # flush, so under load the events go after the commit, gathered by the sender.
                return Carried(history_id=history_id, events=tuple(events))
            if not any(e.history_id == history_id for e, _ in self._sending):
                break
            assert self._sent is not None
            await asyncio.shield(self._sent)
        taken: list[tuple[UserEvent, list[str]]] = []
        if self._outgoing:
            busy = {e.history_id for e, _ in self._sending}
            busy.update(self._carrying)
            left: list[tuple[UserEvent, list[str]]] = []
            for item in self._outgoing:
                key = item[0].history_id
                if key in busy or len(taken) >= _SEND_MAX:
                    busy.add(key)  # what follows of that history stays behind it
                    left.append(item)
                else:
                    taken.append(item)
            if history_id in busy:
                # An event of its own history stays behind (past `_SEND_MAX`): the write's
                # events go after it, after the commit, through the sender.
                return Carried(history_id=history_id, events=tuple(events))
            self._outgoing = left
            if not left:
                self._stop_gather()  # the sender has nothing left to wait for
        histories = {history_id, *(e.history_id for e, _ in taken)}
        self._carrying.update(histories)
        self._writing += 1
        own = [(event, self._payloads_of(event)) for event in events]
        return Carried(
            history_id=history_id,
            events=tuple(events),
            taken=taken,
            payloads=[p for _, payloads in (*taken, *own) for p in payloads],
            histories=frozenset(histories),
            carries=True,
        )

    def settle(self, carried: Carried, *, committed: bool | None) -> None:
        """After the write that `carry` gave `carried` to. Once `committed`, its events are
        published: here (the other processes heard them with the commit), or as `publish`
        does when the write carried nothing. When it did not commit, the events it took go
        back to the sender, first, and its own are not published.

        `committed` None: the outcome is unknown (the write raised where its commit may have
        taken effect: a cancel, a lost connection; see `may_have_committed`). Its events might
        tell of a change that is not there (an ask never made, to a webhook, a mail), or be
        the only word of one that is: in their place, what wants them here gets ``reload``
        (it reads the state again, and finds the change or not; a replay from an id before
        them is ``reload`` too), and so do the other processes' when the write carried
        nothing (its message marked `UNCERTAIN`); when it carried them, they heard them with
        the commit, if there was one. The events it took were other writes' and went with
        its commit, if there was one: they go to the sender again, marked as sent again, and
        a process that heard them already drops them (`_heard`). Never raises."""
        if not carried.carries:
            if committed:
                for event in carried.events:
                    self._publish(event)
            elif committed is None:
                for event in carried.events:
                    self._uncertain(event)
            return
        self._writing -= 1
        self._carrying.subtract(carried.histories)
        for key in carried.histories:
            if self._carrying[key] <= 0:
                del self._carrying[key]
        if committed:
            for event in carried.events:
                self._deliver(event)
        elif committed is None:
            # The other processes heard them with the commit, if there was one.
            for event in carried.events:
                self._missed(event)
            self._outgoing[0:0] = [(e, self._payloads_of(e, again=True)) for e, _ in carried.taken]
        elif not committed:
            self._outgoing[0:0] = carried.taken
        settled = self._settled
        if settled is not None and not self._writing and not settled.done():
            settled.set_result(None)  # `close` waits for it
        self._start_sender()

    async def _notify_on_listener(self, payloads: list[str]) -> bool:
        """Send `payloads` on the listening connection, which waits for notifications and
        nothing else: a fraction of the CPU of a statement through the pool (no checkout, no
        greenlet, no SQLAlchemy). False when not listening; raises when the link failed while
        sending (the statement may have gone through)."""
        driver = self._driver
        if driver is None:
            return False
        async with self._driver_lock:
            if driver is not self._driver:
                return False
            await driver.execute(NOTIFY_SQL, CHANNEL, notifications(payloads))
        return True

    def _uncertain(self, event: UserEvent) -> None:
        """`event` of a write that may have committed, and carried nothing: ``reload`` here
        (`_missed`) and, on PostgreSQL, in the other processes (its message marked so)."""
        self._missed(event)
        if self._remote and not self._closed:
            self._outgoing.append((event, payloads_of(self.origin, event, uncertain=True)))
            self._start_sender()

    def _missed(self, event: UserEvent) -> None:
        """In place of `event`, of a write that may or may not have committed: ``reload`` for
        the subscriptions that want it (they read the state again, and find the change or not),
        and a mark in the kept events, so that a replay from an id before it is ``reload``
        too (`since`)."""
        self._recent.append(
            UserEvent(
                kind="reload",
                user_id=event.user_id,
                history_id=event.history_id,
                approvers=event.approvers,
                data={"reason": "uncertain"},
            )
        )
        for subscription in list(self._subscribers):
            if subscription.wants(event):
                subscription.put(subscription.reload("uncertain"))

    def _deliver(self, event: UserEvent) -> None:
        self._recent.append(event)
        for subscription in list(self._subscribers):
            if subscription.wants(event):
                subscription.put(event)

    # ------------------------------------------------------------------------ subscribing

    @contextlib.asynccontextmanager
    async def subscribe(
        self,
        user_id: str | None,
        *,
        last_event_id: str | None = None,
        is_admin: bool = False,
        kinds: frozenset[str] | None = None,
    ) -> AsyncIterator[Subscription]:
        """A `Subscription` to the events that concern `user_id` (None: everyone's; an admin,
        `is_admin`, hears the gates ``admins`` approve), of `kinds` only when given. With
        `last_event_id`, the events after it come first, or one ``reload`` when it is out of
        the window."""
        if self._remote and self._listener is None:
            await self.start()
        subscription = self.open(
            user_id, last_event_id=last_event_id, is_admin=is_admin, kinds=kinds
        )
        try:
            yield subscription
        finally:
            self.discard(subscription)

    def open(
        self,
        user_id: str | None,
        *,
        last_event_id: str | None = None,
        is_admin: bool = False,
        kinds: frozenset[str] | None = None,
    ) -> Subscription:
        """`subscribe` without the ``async with``, for a long-lived listener that is in place
        at once: hears from now on, until `discard`."""
        subscription = Subscription(user_id, self._queue_size, is_admin=is_admin, kinds=kinds)
        if last_event_id:
            replay = self.since(last_event_id, user_id, is_admin=is_admin)
            if replay is None:
                subscription.put(subscription.reload("missed"))
            else:
                for event in replay:
                    if subscription.wants(event):
                        subscription.put(event)
        if subscription not in self._subscribers:
            self._subscribers.add(subscription)
            if kinds is None:
                self._every_kind += 1
            else:
                self._kind_counts.update(kinds)
        return subscription

    def discard(self, subscription: Subscription) -> None:
        """End a subscription `open` made."""
        if subscription not in self._subscribers:
            return
        self._subscribers.discard(subscription)
        if subscription.kinds is None:
            self._every_kind -= 1
        else:
            self._kind_counts.subtract(subscription.kinds)
            for kind in subscription.kinds:
                if self._kind_counts[kind] <= 0:
                    del self._kind_counts[kind]

    def _heard_by_nobody(self, message: str) -> bool:
        """Whether no subscription here hears another process's `message` (kept unparsed
        then): none at all, or none of its kind (read from the message's head)."""
        if self._every_kind:
            return False
        if not self._kind_counts:
            return True
        kind = kind_of(message)
        return kind is not None and kind not in self._kind_counts

    def since(
        self, event_id: str, user_id: str | None, *, is_admin: bool = False
    ) -> list[UserEvent] | None:
        """The kept events after `event_id` (that concern `user_id`, None: all); None when
        that id is not among them."""
        recent = self._parsed_recent()
        for index in range(len(recent) - 1, -1, -1):
            if recent[index].id == event_id:
                after = [
                    e
                    for e in recent[index + 1 :]
                    if user_id is None or e.concerns(user_id, is_admin=is_admin)
                ]
                # A mark of an event that may or may not have been (`_missed`): reload.
                return None if any(e.kind == "reload" for e in after) else after
        return None

    def _parsed_recent(self) -> list[UserEvent]:
        """The kept events, the ones kept as messages parsed now (in place, once)."""
        if all(isinstance(e, UserEvent) for e in self._recent):
            return cast(list[UserEvent], list(self._recent))
        parsed: list[UserEvent] = []
        for item in self._recent:
            if isinstance(item, UserEvent):
                parsed.append(item)
                continue
            try:
                event = event_of(item, self.origin)
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("an event notification could not be read; it is dropped")
                event = None
            if event is not None:
                parsed.append(event)
        self._recent.clear()
        self._recent.extend(parsed)
        return parsed

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open in this process."""
        return len(self._subscribers)

    # ------------------------------------------------------------------------ PostgreSQL

    async def start(self) -> None:
        """Listen for other processes' events (PostgreSQL; nothing to do on SQLite). Returns
        once listening."""
        if not self._remote or self._closed:
            return
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen(), name="handrail-events-listen")
        assert self._listening is not None
        waiting = asyncio.ensure_future(self._listening.wait())
        done, _ = await asyncio.wait({waiting, self._listener}, return_when="FIRST_COMPLETED")
        if waiting not in done:
            waiting.cancel()

    async def close(self) -> None:
        """Stop, for good: from now on events are delivered here only (`publish`), and a
        write carries none (`carry`). Before it stops listening, it waits (`_CLOSE_WAIT_S` at
        most) for the sender to send what was published and for the writes that carry events
        to settle (what they give the sender goes out too); then it cancels a sender still on
        its way. Events left to send after that, or given by a write that settles later, are
        dropped (logged at debug): their changes are in the database. Starts no task."""
        self._closed = True
        self._send_now()  # what waits for the gather timer goes now
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CLOSE_WAIT_S
        try:
            while (left := deadline - loop.time()) > 0:
                sender = self._sender
                if sender is not None and not sender.done():
                    await asyncio.wait({sender}, timeout=left)
                elif self._writing:
                    settled = self._settled = loop.create_future()
                    await asyncio.wait({settled}, timeout=left)
                else:
                    break
        finally:  # a close that is cancelled stops too
            await self._stop()

    async def _stop(self) -> None:
        self._final = True
        self._stop_gather()
        sender, self._sender = self._sender, None
        if sender is not None and not sender.done():
            sender.cancel()
            await asyncio.wait({sender})
        self._drop_outgoing()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    def _drop_outgoing(self) -> None:
        if self._outgoing:
            log.debug(
                "the event bus is closed: %d events not sent to other processes",
                len(self._outgoing),
            )
            self._outgoing.clear()

    async def _listen(self) -> None:
        attempt = 0  # tries since the link last worked
        first = True
        while not self._closed:
            try:
                await self._listen_once(first, attempt)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                why = type(exc).__name__
            else:
                why = "its connection ended"
            if self._closed:
                return
            if self._listening is not None and self._listening.is_set():
                attempt = 0  # the link worked: its loss is a new outage, tried again soon
            if attempt == 0:
                # Said once an outage: the tries after it fail alike until it is over.
                log.warning("listening for events failed (%s); reconnecting", why)
            else:
                log.debug("listening for events failed again (%s)", why)
            first = False
            if self._listening is not None:
                self._listening.clear()
            delay = _RECONNECT_S[min(attempt, len(_RECONNECT_S) - 1)]
            attempt += 1
            await asyncio.sleep(delay)

    async def _listen_once(self, first: bool, attempt: int = 0) -> None:
        assert self._db is not None
        assert isinstance(self._db.engine, AsyncEngine)
        lost = asyncio.Event()
        connection: AsyncConnection = await self._db.engine.connect()
        try:
            raw = await connection.get_raw_connection()
            driver: Any = raw.driver_connection
            driver.add_termination_listener(lambda _c: lost.set())
            # Its transactions only notify: they need not wait for their WAL flush, which
            # PostgreSQL makes every transaction that notifies wait for in turn (the events'
            # changes were committed before, durably; a notification is never kept anyway).
            await driver.execute("SET synchronous_commit TO off")
            await driver.add_listener(CHANNEL, self._heard)
            self._driver = driver
            assert self._listening is not None
            self._listening.set()
            if attempt > 0:
                log.info("listening for events again")
            if not first:
                # Events may have come while the link was down: the kept ones end before that
                # gap, so a replay from one of them would skip it without a word; a
                # `Last-Event-ID` from before it gets ``reload`` now (`since`).
                self._recent.clear()
                for subscription in list(self._subscribers):
                    subscription.put(subscription.reload("reconnected"))
            while not lost.is_set():
                # A quiet connection is checked now and then: a dead one raises here.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), 15)
                if not lost.is_set():
                    async with self._driver_lock:
                        await driver.execute("SELECT 1")
        finally:
            self._driver = None
            with contextlib.suppress(Exception):
                await connection.invalidate()
            with contextlib.suppress(Exception):
                await connection.close()

    def _heard(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        """A notification (on the event loop, from asyncpg): one message, a part of one, or
        several (see `handrail.store.event_wire`)."""
        messages = messages_in(payload)
        if messages is None:
            try:
                message = self._assemble(payload)
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("an event notification could not be read; it is dropped")
                return
            if message is not None:
                self._heard_message(message)
            return
        for message in messages:
            self._heard_message(message)

    def _heard_message(self, message: str) -> None:
        """A whole message. Every process hears every event, its own too: its own are dropped
        before they are parsed (a message starts with its origin), and another's are parsed
        only when a subscription here may want them (one hears every kind, or the kind the
        message's head names); otherwise they are kept as they came, for `since` to parse if
        a replay asks."""
        try:
            if message.startswith(self._own):
                return  # this process delivered it when it published
            if message.find(AGAIN, 0, HEAD_CHARS) >= 0 and self._heard_already(message):
                return
            if message.find(UNCERTAIN, 0, HEAD_CHARS) >= 0:
                event = event_of(message, self.origin)
                if event is not None:
                    self._missed(event)
                return
            if self._heard_by_nobody(message):
                self._recent.append(message)
                return
            event = event_of(message, self.origin)
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("an event notification could not be read; it is dropped")
            return
        if event is not None:
            self._deliver(event)

    def _heard_already(self, message: str) -> bool:
        """Whether the event of a message sent again (see `settle`) is among those this
        process heard (`REPLAY_WINDOW`): it came with the commit of the write whose outcome
        its sender did not know."""
        event_id = id_of(message)
        if event_id is None:
            return False
        for item in self._recent:
            if (item.id if isinstance(item, UserEvent) else id_of(item)) == event_id:
                return True
        return False

    def _assemble(self, payload: str) -> str | None:
        if payload.startswith("m|"):
            return payload[2:]
        if not payload.startswith("c|"):
            raise ValueError("unknown notification")
        _, key, index, count, part = payload.split("|", 4)
        parts = self._parts.get(key)
        if parts is None:
            parts = [None] * int(count)
            self._parts[key] = parts
            while len(self._parts) > _PARTS_KEPT:
                self._parts.popitem(last=False)
        parts[int(index)] = part
        if any(p is None for p in parts):
            return None
        del self._parts[key]
        return "".join(cast(list[str], parts))
