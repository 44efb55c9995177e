"""The wire form of the event bus's messages on PostgreSQL (`handrail.store.events`).

A message is one event as JSON, its head first, so that a process can tell what it is before
it parses it (`kind_of`, `id_of`)::

    {"o": ORIGIN, "k": KIND, "r": 1, "u": 1, "e": {"id": ID, "kind": KIND, ...}}

``o`` is the sending process's `EventBus.origin`, ``k`` the event's kind, ``r`` (only on an
event sent again, `AGAIN`: its sender does not know whether it went through before), ``u``
(only on the event of a write that may not have committed, `UNCERTAIN`) and ``e`` the event's
wire form (`UserEvent.to_json`, its id first). `payloads_of` gives a message's payloads: one
(``m|MESSAGE``) or, for a message too long for one notification (PostgreSQL refuses 8000
bytes), several parts that go in the same statement (``c|KEY|INDEX|COUNT|PART``), which
PostgreSQL delivers together and in order.

A statement sends the payloads of its events as `notifications`: whole messages that follow
each other go together in one notification, ``b|MESSAGE<RS>MESSAGE...`` (RS the ASCII record
separator), as many as stay under PostgreSQL's limit, each part of a long message alone; a
receiver takes them apart with `messages_in`. Neither separator this module uses can be in a
message: JSON escapes every control character, and origins and ids are hex. Each notification
costs PostgreSQL a queue entry and a message to every listening process, and the receiver a
callback (a turn's events come in three or four notifications, not ten). The processes on one
database run one version: a process from before ``b|`` logs such a notification as unreadable
and drops it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from handrail._util import json_encoder, new_id
from handrail.store.prepared import NOTIFICATIONS_SEPARATOR, NOTIFY_SQL, NOTIFY_TEXT
from handrail.store.user_events import UserEvent

__all__ = [
    "AGAIN",
    "CHANNEL",
    "HEAD_CHARS",
    "NOTIFY_SQL",
    "UNCERTAIN",
    "event_of",
    "id_of",
    "kind_of",
    "messages_in",
    "notifications",
    "notify",
    "payloads_of",
]

#: The PostgreSQL channel every handrail process listens on.
CHANNEL: Final = "handrail_events"
#: Characters per notification: at most 4 UTF-8 bytes each, under PostgreSQL's 8000 bytes.
_CHUNK_CHARS: Final = 1800

#: A message's text: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, in one
#: call of an encoder built once (ten events a cycle; `json.dumps` builds one each time).
_message_text: Final = json_encoder(ensure_ascii=False, separators=(",", ":"))


def payloads_of(
    origin: str, event: UserEvent, *, again: bool = False, uncertain: bool = False
) -> list[str]:
    """The notifications of `event` sent by the process `origin`; `again`: marked as sent
    again (`AGAIN`), `uncertain`: as the event of a write that may not have committed
    (`UNCERTAIN`), either with parts of a key of their own."""
    head: dict[str, Any] = {"o": origin, "k": event.kind}
    if again:
        head["r"] = 1
    if uncertain:
        head["u"] = 1
    head["e"] = event.to_json()
    message = _message_text(head)
    return _payloads(new_id() if again or uncertain else event.id, message)


def event_of(message: str, origin: str) -> UserEvent | None:
    """The event of a message, None when `origin` (this process) sent it. Raises ValueError
    (or KeyError, TypeError, AttributeError) for one that is not an event."""
    parsed = json.loads(message)
    if parsed.get("o") == origin:
        return None
    return UserEvent.from_json(parsed["e"])


#: Where the kind starts in a message: after the origin (a new_id, so no quote in it).
_KIND_KEY: Final = ',"k":"'
#: What follows the kind in the message of an event sent again (see `EventBus.settle`).
AGAIN: Final = ',"r":1,'
#: What follows the kind in the message of an event whose write may not have committed (see
#: `EventBus.settle`): its receivers tell their subscribers ``reload``.
UNCERTAIN: Final = ',"u":1,'
#: Where the event's id starts: the first key of the event's wire form.
_ID_KEY: Final = '"e":{"id":"'
#: How far into a message its head (origin, kind, mark, the event's id) may go.
HEAD_CHARS: Final = 160


def kind_of(message: str) -> str | None:
    """The kind a message's head names (``{"o":ORIGIN,"k":KIND,...``), without parsing it;
    None when it names none (a message of an older process: it is parsed)."""
    start = message.find(_KIND_KEY, 0, 80)
    if start < 0:
        return None
    start += len(_KIND_KEY)
    end = message.find('"', start, start + 40)
    return message[start:end] if end > 0 else None


def id_of(message: str) -> str | None:
    """The id of a message's event, read from its head without parsing it; None when it
    names none there."""
    start = message.find(_ID_KEY, 0, HEAD_CHARS)
    if start < 0:
        return None
    start += len(_ID_KEY)
    end = message.find('"', start, start + 80)
    return message[start:end] if end > 0 else None


def _payloads(key: str, message: str) -> list[str]:
    if len(message) <= _CHUNK_CHARS:
        return ["m|" + message]
    chunks = [message[i : i + _CHUNK_CHARS] for i in range(0, len(message), _CHUNK_CHARS)]
    return [f"c|{key}|{i}|{len(chunks)}|{chunk}" for i, chunk in enumerate(chunks)]


#: What separates the messages of one notification (``b|``): the ASCII record separator.
_RECORD: Final = "\x1e"
#: Bytes a notification may hold: under PostgreSQL's limit of 8000 (a whole message holds at
#: most `_CHUNK_CHARS` characters, 7200 bytes, so it always fits alone).
_NOTIFICATION_BYTES: Final = 7900


def notifications(payloads: Sequence[str]) -> str:
    """`payloads` (each from `payloads_of`, in order) as the text one statement sends
    (`handrail.store.prepared.Notify`): whole messages that follow each other packed into one
    notification while it stays under `_NOTIFICATION_BYTES` (one alone keeps its ``m|``, two
    or more go as ``b|``, see the module), each part of a long message alone, the order
    kept."""
    out: list[str] = []
    batch: list[str] = []
    size = 0
    for payload in payloads:
        if not payload.startswith("m|"):
            if batch:
                out.append(_packed(batch))
                batch, size = [], 0
            out.append(payload)
            continue
        message = payload[2:]
        length = len(message) if message.isascii() else len(message.encode())
        if batch and size + 1 + length > _NOTIFICATION_BYTES:
            out.append(_packed(batch))
            batch, size = [], 0
        batch.append(message)
        size += length + 2 if len(batch) == 1 else length + 1
    if batch:
        out.append(_packed(batch))
    return NOTIFICATIONS_SEPARATOR.join(out)


def _packed(messages: list[str]) -> str:
    return "m|" + messages[0] if len(messages) == 1 else "b|" + _RECORD.join(messages)


def messages_in(payload: str) -> list[str] | None:
    """The whole messages of a notification of several (``b|``), in order; None for any
    other (``m|`` or a part, ``c|``: `EventBus` assembles those)."""
    if payload.startswith("b|"):
        return payload[2:].split(_RECORD)
    return None


def notify(connection: Connection, payloads: Sequence[str]) -> None:
    """Send `payloads` (from `payloads_of`, in order) in one statement on `connection`."""
    connection.execute(NOTIFY_TEXT, {"channel": CHANNEL, "payloads": notifications(payloads)})
