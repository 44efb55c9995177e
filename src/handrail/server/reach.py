"""Reaching people off the page: events become webhook posts and emails, through a durable
outbox.

`Reach.handle` takes a user event (an ask created, a reminder, an ask answered or cancelled)
from the store's event bus (`handrail.store.events`: every process hears every user's events)
and writes one delivery per webhook that wants it and, for a new ask or a reminder, one email to
the user (when email is on and the user has an address). An ask of a gate with approvers
reaches each of them the same way (``admins``: every configured admin): a webhook that wants
one of them gets the event (``userId`` is the approver's, ``ownerId`` the conversation's), and
each approver with an address gets the email, whose links answer as that approver. An event's
deliveries are written in one transaction, which also removes the event from the event outbox
(`handrail.store.outbox`). Writing is idempotent per event and target, so an event handled
twice (two processes, a retry) is delivered once, and a webhook that wants both the owner and
an approver gets it once.

The events come two ways. The change that makes one writes it to the event outbox in its own
transaction (reach tells the store which kinds to keep, `EventOutbox.keep`), so a committed
change always has it there; reach takes the events it hears on the store's event bus at once
(every process hears every user's events), and on each look at the outbox claims what is left
there: an event whose process stopped after the commit and before publishing it, or one this
process missed (a ``reload``).

The worker (`start`, `aclose`) sends due deliveries: it claims each (so no other process sends
it meanwhile), makes one attempt, and records it in the delivery log. A failed attempt is
retried after ``backoff * 2 ** (attempt - 1)`` seconds (at most an hour, with up to 10% jitter)
until the configured attempts run out; then the delivery is ``failed``. A delivery claimed by a
process that stopped is due again when its claim lapses, so every event is delivered at least
once; receivers drop repeats by the ``webhook-id`` header, the event's id.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol

import httpx

from .._util import Failing, iso, utc_now
from ..asks import PendingAsk
from ..policy.rules import ADMINS
from ..runtime.approvals import approves, is_approver
from ..runtime.turn import Principal
from ..store import Store
from ..store.outbox import AnswerLink, AnswerLinkRepo, Delivery, DeliveryRepo, new_delivery
from .config import ServerConfig
from .email import email_payload, new_links, render_email, send_email
from .reach_config import EMAIL_EVENTS, WEBHOOK_EVENTS, WebhookConfig
from .webhooks import WEBHOOK_TIMEOUT, post_webhook

__all__ = ["CLAIM_HOLD", "Reach", "ReachEvent", "retry_delay"]

log = logging.getLogger("handrail.reach")

#: How long a claimed delivery is held by the process that claimed it.
CLAIM_HOLD: Final = dt.timedelta(seconds=120)
#: Seconds between two looks at the outbox when nothing woke the worker.
POLL_S: Final = 2.0
_MAX_DELAY_S: Final = 3600.0


class ReachEvent(Protocol):
    """What reach reads of a user event (the event bus's record)."""

    @property
    def kind(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def history_id(self) -> str | None: ...
    @property
    def data(self) -> Mapping[str, Any]: ...


def retry_delay(backoff: float, attempt: int) -> float:
    """Seconds before the attempt after `attempt` (1 for the first): doubling, capped."""
    base: float = min(backoff * 2.0 ** (attempt - 1), _MAX_DELAY_S)
    return base * (1.0 + random.random() * 0.1)


class Reach:
    """Webhooks and email for one server process."""

    def __init__(self, store: Store, config: ServerConfig, *, poll_s: float = POLL_S) -> None:
        self.store = store
        self.deliveries = DeliveryRepo(store.db)
        self.links = AnswerLinkRepo(store.db)
        self.webhooks: dict[str, WebhookConfig] = {h.name: h for h in config.webhooks}
        self.email = config.email
        self.public_url = config.public_url
        self.link_key = config.link_key
        self.addresses = {u.id: u.email for u in config.users if u.email}
        self.admins = tuple(u.id for u in config.users if u.admin)
        self._poll_s = poll_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.webhooks) or self.email is not None

    # ------------------------------------------------------------------------- enqueueing

    async def handle(self, event: ReachEvent) -> int:
        """Queue what `event` sends; returns how many deliveries were new."""
        if not self.enabled:
            return 0
        kind = event.kind
        data = dict(event.data)
        if kind == "ask.created" and _approved_so_far(data):
            # An approval before the quorum announces its ask again, with who approved so far,
            # for the open pages; it is no new ask, so nothing is posted or mailed again.
            return await self.deliveries.enqueue_event(event.id, [], {})
        agent = data.get("agent") if isinstance(data.get("agent"), str) else None
        hooks = [h for h in self.webhooks.values() if kind in h.events]
        if hooks and agent is None and event.history_id and any(h.agents for h in hooks):
            history = await self.store.histories.get(event.history_id)
            agent = history.agent if history is not None else None
        queued: list[Delivery] = []
        links: dict[str, list[AnswerLink]] = {}
        created = getattr(event, "created", None)
        for user_id in self.recipients(event):
            extra = {} if user_id == event.user_id else {"ownerId": event.user_id}
            payload = {
                "type": kind,
                "timestamp": created if isinstance(created, str) else iso(utc_now()),
                "data": {**data, "userId": user_id, "historyId": event.history_id, **extra},
            }
            for hook in hooks:
                if hook.wants(kind, user_id, agent):
                    delivery = new_delivery(
                        event_id=event.id,
                        channel="webhook",
                        target=hook.name,
                        user_id=user_id,
                        kind=kind,
                        payload=payload,
                    )
                    queued.append(delivery)
            if kind in EMAIL_EVENTS and self.email is not None and event.history_id:
                email = await self._email_for(event, data, user_id)
                if email is not None:
                    queued.append(email[0])
                    links[email[0].id] = email[1]
        new = await self.deliveries.enqueue_event(event.id, queued, links)
        if new:
            self._wake.set()
        return new

    def recipients(self, event: ReachEvent) -> list[str]:
        """Who an event reaches: its user, then its approvers (``admins``: every configured
        admin), each once."""
        found = [event.user_id]
        for name in getattr(event, "approvers", ()) or ():
            for user_id in self.admins if name == ADMINS else (name,):
                if user_id not in found:
                    found.append(user_id)
        return found

    async def _email_for(
        self, event: ReachEvent, data: Mapping[str, Any], user_id: str
    ) -> tuple[Delivery, list[AnswerLink]] | None:
        """The email `event` sends `user_id`, with its links (None: none)."""
        address = self.addresses.get(user_id)
        if address is None or self.email is None or event.history_id is None:
            return None
        history = await self.store.histories.get(event.history_id)
        pending = history.pending_ask if history is not None else None
        if pending is None or history is None:
            return None  # answered already: nothing to ask by email
        owner = history.owner_id == user_id
        if not owner and not is_approver(pending, self.principal(user_id)):
            return None  # not this user's to answer
        if any(a.get("userId") == user_id for a in pending.approved_by or ()):
            return None  # approved already (a reminder of a gate waiting for its quorum)
        wanted = _tool_call_id(data)
        if wanted is not None and wanted != pending.tool_call_id:
            return None
        # An owner who is no approver of the call may only deny it: no link approves.
        deny_only = (
            owner and bool(pending.approvers) and not is_approver(pending, self.principal(user_id))
        )
        return self._email(
            event.id,
            event.kind,
            pending,
            user_id,
            address,
            history.id,
            owner_id=None if owner else history.owner_id,
            deny_only=deny_only,
        )

    def principal(self, user_id: str) -> Principal:
        """A configured user as a principal (an admin is one)."""
        return Principal(user_id=user_id, is_admin=user_id in self.admins)

    def _email(
        self,
        event_id: str,
        kind: str,
        pending: PendingAsk,
        user_id: str,
        address: str,
        history_id: str,
        *,
        owner_id: str | None = None,
        deny_only: bool = False,
    ) -> tuple[Delivery, list[AnswerLink]]:
        assert self.email is not None
        links = new_links(pending, user_id=user_id, history_id=history_id, ttl=self.email.link_ttl)
        if deny_only:
            approving = {
                str(b.get("id"))
                for b in pending.simple.get("buttons", [])
                if isinstance(b, Mapping) and approves(b.get("response") or {})
            }
            links = [link for link in links if link.button_id not in approving]
        delivery = new_delivery(
            event_id=event_id,
            channel="email",
            target=user_id,
            user_id=user_id,
            kind=kind,
            payload=email_payload(
                pending,
                links,
                to=address,
                history_id=history_id,
                reminder=kind == "ask.reminder",
                owner_id=owner_id,
            ),
        )
        return delivery, links

    # ------------------------------------------------------------------------- the worker

    async def start(self) -> None:
        """Listen to every user's events on the store's bus and send the outbox. Returns once
        the subscription is in place, so no event published after it is missed."""
        if not self.enabled or self._task is not None:
            return
        # From now on, the changes that make these events keep them in the event outbox.
        self.store.outbox.keep(WEBHOOK_EVENTS)
        self._client = httpx.AsyncClient(
            timeout=WEBHOOK_TIMEOUT, follow_redirects=False, trust_env=False
        )
        self._task = asyncio.create_task(self._run(), name="handrail-reach")
        listening = asyncio.get_running_loop().create_future()
        self._listener = asyncio.create_task(self._listen(listening), name="handrail-reach-bus")
        await listening

    async def _listen(self, listening: asyncio.Future[None]) -> None:
        try:
            async with self.store.events.subscribe(None) as events:
                listening.set_result(None)
                async for event in events:
                    if event.kind == "reload":
                        self._wake.set()  # missed events: what they made waits in the outbox
                        continue
                    if event.kind not in WEBHOOK_EVENTS:
                        continue
                    try:
                        await self.handle(event)
                    except Exception:
                        log.exception("could not queue the %s event %s", event.kind, event.id)
        finally:
            if not listening.done():
                listening.set_result(None)

    async def aclose(self) -> None:
        for task in (self._listener, self._task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._listener = None
        self._task = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _run(self) -> None:
        reads = Failing(log, "reading the outbox")
        while True:
            try:
                await self.run_outbox()
                await self.run_due()
            except Exception:
                reads.failed(again_s=self._poll_s)
            else:
                reads.succeeded()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._poll_s)

    async def run_outbox(self) -> int:
        """Queue the deliveries of the events left in the event outbox (their process stopped
        before publishing them, or this one missed them); returns how many it handled."""
        handled = 0
        while True:
            events = await self.store.outbox.claim(now=utc_now(), hold=CLAIM_HOLD)
            if not events:
                return handled
            for event in events:
                try:
                    await self.handle(event)
                except Exception:
                    log.exception("could not queue the %s event %s", event.kind, event.id)
                    continue
                handled += 1

    async def run_due(self) -> int:
        """Send every delivery due now (in parallel); returns how many were attempted."""
        attempted = 0
        while True:
            due = await self.deliveries.claim_due(now=utc_now(), hold=CLAIM_HOLD)
            if not due:
                return attempted
            await asyncio.gather(*(self._attempt(d) for d in due))
            attempted += len(due)

    async def _attempt(self, delivery: Delivery) -> None:
        started = time.monotonic()
        attempts, backoff = self._retry_policy(delivery)
        try:
            ok, status_code, error = await self._send(delivery)
        except Exception as exc:
            # A fault of this delivery (a message that could not be made) is one failed
            # attempt, logged and retried as any other: never a claim held again and again,
            # unlogged, while the rest of the outbox waits.
            log.exception(
                "%s delivery %s to %s could not be sent",
                delivery.channel,
                delivery.id,
                delivery.target,
            )
            ok, status_code = False, None
            error = f"The delivery could not be made ({type(exc).__name__})."
        duration_ms = int((time.monotonic() - started) * 1000)
        attempt = delivery.attempts + 1
        now = utc_now()
        if ok:
            status, next_attempt = "delivered", now
        elif attempt >= attempts or status_code == -1:
            status, next_attempt = "failed", now
        else:
            delay = retry_delay(backoff, attempt)
            status, next_attempt = "pending", now + dt.timedelta(seconds=delay)
        if status_code == -1:
            status_code = None
        await self.deliveries.finish(
            delivery,
            status=status,  # type: ignore[arg-type]
            next_attempt=next_attempt,
            status_code=status_code,
            error=error,
            duration_ms=duration_ms,
        )
        if status == "pending":
            asyncio.get_running_loop().call_later(
                max(0.0, (next_attempt - utc_now()).total_seconds()), self._wake.set
            )
        elif status == "failed":
            log.warning(
                "%s delivery %s to %s failed after %d attempts: %s",
                delivery.channel,
                delivery.id,
                delivery.target,
                attempt,
                error,
            )

    def _retry_policy(self, delivery: Delivery) -> tuple[int, float]:
        if delivery.channel == "webhook" and delivery.target in self.webhooks:
            hook = self.webhooks[delivery.target]
            return hook.attempts, hook.backoff
        if delivery.channel == "email" and self.email is not None:
            return self.email.attempts, self.email.backoff
        return 1, 1.0

    async def _send(self, delivery: Delivery) -> tuple[bool, int | None, str | None]:
        """One attempt: (delivered, HTTP status or None, the error). A status of -1 means the
        delivery can never succeed here (its webhook or email is no longer configured)."""
        if delivery.channel == "webhook":
            hook = self.webhooks.get(delivery.target)
            if hook is None or self._client is None:
                return False, -1, f"No webhook is named {delivery.target!r} any more."
            outcome = await post_webhook(self._client, hook, delivery.event_id, delivery.payload)
            return outcome.ok, outcome.status_code, outcome.error
        if delivery.channel == "email":
            if self.email is None or self.link_key is None or self.public_url is None:
                return False, -1, "Email is no longer configured."
            message = render_email(
                delivery.payload,
                sender=self.email.sender,
                key=self.link_key,
                public_url=self.public_url,
            )
            try:
                await send_email(self.email, message)
            except (OSError, TimeoutError) as exc:
                return (
                    False,
                    None,
                    f"The SMTP server refused or could not be reached ({type(exc).__name__}).",
                )
            return True, None, None
        return False, -1, f"Unknown channel {delivery.channel!r}."


def _approved_so_far(data: Mapping[str, Any]) -> bool:
    """Whether an ``ask.created`` event's ask has approvals already (a gate waiting for its
    quorum, announced again after one of them): a new ask has none."""
    ask = data.get("ask")
    return isinstance(ask, Mapping) and bool(ask.get("approvedBy"))


def _tool_call_id(data: Mapping[str, Any]) -> str | None:
    ask = data.get("ask")
    if isinstance(ask, Mapping) and isinstance(ask.get("toolCallId"), str):
        return str(ask["toolCallId"])
    value = data.get("toolCallId")
    return value if isinstance(value, str) else None
