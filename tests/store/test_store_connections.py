"""Saved connections and the activity log, on both backends: add, the compare-and-set update,
the unique prefix, status writes that leave the version alone (and lose to a newer version's),
secrets changed as they are stored when the write runs, delete, and activity pages."""

from __future__ import annotations

import asyncio

import pytest

from handrail._util import new_id
from handrail.store import Store
from handrail.store.connections import (
    ActivityRepo,
    ConnectionConflict,
    ConnectionNotFound,
    ConnectionRecord,
    ConnectionRepo,
    PrefixTaken,
)


def record(prefix: str = "notes", **extra: object) -> ConnectionRecord:
    return ConnectionRecord(
        id=new_id(),
        app="notes",
        name=prefix.title(),
        prefix=prefix,
        kind="mcp-stdio",
        secrets="gAAAA-ciphertext",
        secret_keys=("token",),
        agents=("helper",),
        overrides={"delete_note": "consequential"},
        **extra,  # type: ignore[arg-type]
    )


async def test_add_get_list_and_the_unique_prefix(store: Store) -> None:
    repo = ConnectionRepo(store.db)
    saved = await repo.add(record(call_timeout=2.5))
    got = await repo.get(saved.id)
    assert got is not None
    assert got.agents == ("helper",)
    assert got.secret_keys == ("token",)
    assert got.secrets == "gAAAA-ciphertext"
    assert got.call_timeout == 2.5
    assert got.created == saved.created
    assert [r.id for r in await repo.list()] == [saved.id]
    with pytest.raises(PrefixTaken):
        await repo.add(record())
    assert await repo.versions() == {saved.id: 1}


async def test_update_is_a_compare_and_set(store: Store) -> None:
    repo = ConnectionRepo(store.db)
    saved = await repo.add(record())
    changed = await repo.update(saved.id, 1, {"trusted": True, "agents": None})
    assert (changed.version, changed.trusted, changed.agents) == (2, True, None)
    with pytest.raises(ConnectionConflict):
        await repo.update(saved.id, 1, {"trusted": False})
    with pytest.raises(ConnectionNotFound):
        await repo.update(new_id(), 1, {"trusted": False})
    other = await repo.add(record("jots"))
    with pytest.raises(PrefixTaken):
        await repo.update(other.id, 1, {"prefix": "notes", "name": "Notes"})
    with pytest.raises(ValueError, match="cannot be changed"):
        await repo.update(saved.id, 2, {"id": "x"})
    assert await repo.set_status(saved.id, {"state": "connected"}, tools=[{"name": "a"}])
    after = await repo.get(saved.id)
    assert after is not None
    assert (after.version, after.status, after.tools) == (
        2,
        {"state": "connected"},
        [{"name": "a"}],
    )
    # A link started for an older version writes no status over the newer one's.
    assert not await repo.set_status(saved.id, {"state": "error"}, tools=[], version=1)
    assert await repo.set_status(saved.id, {"state": "starting"}, version=2)
    after = await repo.get(saved.id)
    assert after is not None
    assert (after.status, after.tools) == ({"state": "starting"}, [{"name": "a"}])
    assert await repo.delete(saved.id)
    assert not await repo.delete(saved.id)
    assert await repo.get(saved.id) is None


async def test_secrets_change_as_they_are_stored_when_the_write_runs(store: Store) -> None:
    """A sign-in's tokens are a change of the secrets stored when they are written, and so is
    an admin's change: neither undoes what the other wrote after the row was read (the sealed
    text stands for a token here: the store never opens it)."""
    repo = ConnectionRepo(store.db)
    saved = await repo.add(record())
    seen: list[str | None] = []

    def add_token(stored: str | None) -> str:
        seen.append(stored)
        return f"{stored}+token"

    assert await repo.change_secrets(saved.id, add_token) == "gAAAA-ciphertext+token"
    # An admin's change from the row read before that write keeps the token written since.
    changed = await repo.update(saved.id, 1, {"secrets": lambda stored: f"rotated|{stored}"})
    assert changed.secrets == "rotated|gAAAA-ciphertext+token"
    assert changed.version == 2
    # And a token saved after the admin's change keeps the admin's secrets; the version stays.
    assert await repo.change_secrets(saved.id, add_token) == "rotated|gAAAA-ciphertext+token+token"
    assert seen == ["gAAAA-ciphertext", "rotated|gAAAA-ciphertext+token"]
    after = await repo.get(saved.id)
    assert after is not None
    assert (after.version, after.secrets) == (2, "rotated|gAAAA-ciphertext+token+token")
    # A conflicting update changes nothing, secrets included.
    with pytest.raises(ConnectionConflict):
        await repo.update(saved.id, 1, {"secrets": lambda stored: "lost"})
    assert (await repo.get(saved.id)).secrets == after.secrets  # type: ignore[union-attr]
    assert await repo.delete(saved.id)
    with pytest.raises(ConnectionNotFound):
        await repo.change_secrets(saved.id, add_token)
    with pytest.raises(ConnectionNotFound):
        await repo.update(saved.id, 2, {"secrets": lambda stored: "lost"})


async def test_concurrent_secrets_changes_each_see_the_one_before(store: Store) -> None:
    """On PostgreSQL the row is locked from the read on (``FOR UPDATE``): changes at the same
    time queue up, none is lost."""
    repo = ConnectionRepo(store.db)
    saved = await repo.add(record())
    await asyncio.gather(
        *(repo.change_secrets(saved.id, lambda s, n=n: f"{s},{n}") for n in range(12))
    )
    after = await repo.get(saved.id)
    assert after is not None
    assert after.secrets is not None
    assert sorted(after.secrets.split(",")[1:], key=int) == [str(n) for n in range(12)]


async def test_activity_pages_newest_first(store: Store) -> None:
    log = ActivityRepo(store.db)
    for index in range(5):
        await log.add(actor="root", action="connection.updated", subject="c", changes={"n": index})
    first = await log.list_page(limit=2)
    assert [r.changes["n"] for r in first.items] == [4, 3]
    assert first.next is not None
    second = await log.list_page(limit=2, after=first.next)
    assert [r.changes["n"] for r in second.items] == [2, 1]
    last = await log.list_page(limit=2, after=second.next)
    assert [r.changes["n"] for r in last.items] == [0]
    assert last.next is None
    assert first.items[0].to_json()["created"].endswith("Z")
