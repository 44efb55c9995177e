"""Small shared helpers every layer may use: ids and timestamps in the wire format."""

from __future__ import annotations

import datetime as dt
import secrets


def new_id() -> str:
    """A new id: 24 lowercase hex characters."""
    return secrets.token_hex(12)


def utc_now() -> dt.datetime:
    """Now, in UTC, to the millisecond."""
    now = dt.datetime.now(dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def iso(moment: dt.datetime) -> str:
    """``2026-11-30T07:08:38.123Z``: ISO 8601 in UTC with ``Z``."""
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
