"""Minted bearer tokens: short-lived, for one user, stored as their SHA-256 only.

An admin mints one for a user of a host app (``POST /api/tokens``); the token itself is shown
once and never stored: the row holds its digest, the user it speaks for, who minted it and when
it expires. `TokenRepo.find` answers only for a token that has not expired; expired rows are
removed as new ones are minted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from handrail._util import new_id, utc_now
from handrail.store.db import Database, first_row, row_count
from handrail.store.tables import api_tokens

__all__ = ["MintedToken", "TokenRepo", "token_digest"]

T = api_tokens.c


def token_digest(token: str) -> str:
    """The SHA-256 hex of a token: what is stored and looked up."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class MintedToken:
    """A minted token's row (never the token itself)."""

    id: str
    user_id: str
    created_by: str
    expires: dt.datetime
    created: dt.datetime


class TokenRepo:
    """The minted tokens."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self, token: str, *, user_id: str, created_by: str, expires: dt.datetime
    ) -> MintedToken:
        """Keep `token` (as its digest) for `user_id` until `expires`; expired rows go."""
        now = utc_now()
        record = MintedToken(
            id=new_id(), user_id=user_id, created_by=created_by, expires=expires, created=now
        )
        await self._db.write(row_count, delete(api_tokens).where(T.expires <= now))
        await self._db.write(
            row_count,
            insert(api_tokens).values(
                id=record.id,
                token_hash=token_digest(token),
                user_id=user_id,
                created_by=created_by,
                expires=expires,
                created=now,
            ),
        )
        return record

    async def find(self, token: str, now: dt.datetime | None = None) -> MintedToken | None:
        """The row of `token` when it has not expired, else None."""
        moment = now or utc_now()
        query = select(api_tokens).where(T.token_hash == token_digest(token), T.expires > moment)
        row = await self._db.read(first_row, query)
        if row is None:
            return None
        data = row._mapping
        return MintedToken(
            id=data["id"],
            user_id=data["user_id"],
            created_by=data["created_by"],
            expires=data["expires"],
            created=data["created"],
        )
