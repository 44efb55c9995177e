"""`new_id` and `new_uuid4`: random ids in their wire forms, taken from batches of random
bytes, never the same twice, in threads and in a forked child too; `new_sorted_id`, in
`new_id`'s form, sorts by when it was made, and is what the rows that are only appended take."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from handrail import _util
from handrail._util import new_id, new_sorted_id, new_uuid4
from handrail.store import Store
from handrail.store.audit import audit_record
from handrail.store.requests import request_record


def test_ids_are_hex_and_uuids_are_canonical_version_4() -> None:
    ids = [new_id() for _ in range(3 * _util._BATCH + 1)]
    assert all(re.fullmatch("[0-9a-f]{24}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    uuids = [new_uuid4() for _ in range(3 * _util._BATCH + 1)]
    for text in uuids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
    assert len(set(uuids)) == len(uuids)
    # Every variant digit occurs: its two low bits are random.
    assert {text[19] for text in uuids} == set("89ab")


def _taken_in_threads(*makers: Callable[[], str]) -> list[str]:
    """What four threads made at once, each calling every one of `makers` five batches' worth
    of times."""
    taken: list[list[str]] = [[] for _ in range(4)]

    def take(into: list[str]) -> None:
        for _ in range(5 * _util._BATCH):
            into.extend(make() for make in makers)

    threads = [threading.Thread(target=take, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [i for into in taken for i in into]


def test_threads_taking_ids_at_once_never_get_the_same_one() -> None:
    every = _taken_in_threads(new_id, new_uuid4, new_sorted_id)
    assert len(set(every)) == len(every) == 4 * 15 * _util._BATCH


@pytest.mark.skipif(
    not hasattr(os, "fork"),
    reason="os.fork does not exist on this platform (Windows), so no child can inherit the "
    "id batches; the fork hook (_util._forget_ids) is only registered where it does",
)
def test_a_forked_child_never_gives_the_ids_its_parent_holds() -> None:
    # From empty pools: one the earlier tests left with a single id would be empty again.
    _util._forget_ids()
    new_id()
    new_uuid4()  # both batches made, most of them not given yet
    assert _util._IDS
    assert _util._UUIDS
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, f"{new_id()} {new_uuid4()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_id, child_uuid = pipe.read().split()
    os.waitpid(pid, 0)
    parent_ids = set(_util._IDS) | set(_util._UUIDS)
    assert child_id not in parent_ids
    assert child_uuid not in parent_ids
    assert new_id() != child_id
    assert new_uuid4() != child_uuid


def test_sorted_ids_sort_by_when_they_were_made() -> None:
    before = time.time_ns() // 1_000_000
    made: list[str] = []
    for _ in range(5):
        made.extend(new_sorted_id() for _ in range(_util._BATCH))
        time.sleep(0.002)
    after = time.time_ns() // 1_000_000
    assert all(re.fullmatch("[0-9a-f]{24}", i) for i in made)
    assert len(set(made)) == len(made)
    # The first half is the millisecond it was made; the second half is random.
    assert all(before <= int(i[:12], 16) <= after for i in made)
    assert len({i[12:] for i in made}) == len(made)
    # Ids made in different milliseconds are in the order they were made.
    by_ms = [made[k * _util._BATCH] for k in range(5)]
    assert by_ms == sorted(by_ms)
    assert len({i[:12] for i in by_ms}) == 5


async def test_appended_rows_take_sorted_ids(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite:///{tmp_path / 'ids.db'}", blob_dir=tmp_path / "files")
    try:
        ids = []
        for _ in range(3):
            ids.append((await store.histories.create("alice", agent="assistant")).id)
            time.sleep(0.002)
    finally:
        await store.close()
    assert ids == sorted(ids)
    assert len({i[:12] for i in ids}) == 3
    records = []
    for _ in range(3):
        records.append(
            (
                audit_record(actor="alice", action="grant.created", subject="s", changes={}).id,
                request_record(
                    history_id=ids[0], owner_id="alice", prompt="p", response="r", model="m"
                ).id,
            )
        )
        time.sleep(0.002)
    for column in zip(*records, strict=True):
        assert list(column) == sorted(column)
        assert len({i[:12] for i in column}) == 3
