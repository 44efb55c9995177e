"""The wire form of the event bus's messages on PostgreSQL (`handrail.store.events`).

A message is one event as JSON, its head first, so that a process can tell what it is before
it parses it (`kind_of`, `id_of`)::

    {"o": ORIGIN, "k": KIND, "r": 1, "u": 1, "e": {"id": ID, "kind": KIND, ...}}

``o`` is the sending process's `EventBus.origin`, ``k`` the event's kind, ``r`` (only on an
event sent again, `AGAIN`: its sender does not know whether it went through before), ``u``
(only on the event of a write that may not have committed, `UNCERTAIN`) and ``e`` the event's
wire form (`UserEvent.to_json`, its id first). A message goes in one notification
(``m|MESSAGE``) or, above PostgreSQL's 8000 byte limit, in several of one statement
(``c|KEY|INDEX|COUNT|PART``), which PostgreSQL delivers together and in order.
"""

from __future__ import annotations

import json
from typing import Any, Final

from sqlalchemy import Connection, text

from handrail._util import json_encoder, new_id
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


#: Every notification of a batch, in order, in one statement.
_NOTIFY = text("SELECT pg_notify(:channel, p) FROM unnest(CAST(:payloads AS text[])) AS p")
#: The same for asyncpg itself, on the listening connection.
NOTIFY_SQL: Final = "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p"


def notify(connection: Connection, payloads: list[str]) -> None:
    connection.execute(_NOTIFY, {"channel": CHANNEL, "payloads": payloads})
