"""`new_id` and `new_uuid4`: random ids in their wire forms, taken from batches of random
bytes, never the same twice, in threads and in a forked child too."""

from __future__ import annotations

import os
import re
import threading
import uuid

import pytest

from handrail import _util
from handrail._util import new_id, new_uuid4


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


def test_threads_taking_ids_at_once_never_get_the_same_one() -> None:
    taken: list[list[str]] = [[] for _ in range(4)]

    def take(into: list[str]) -> None:
        for _ in range(5 * _util._BATCH):
            into.append(new_id())
            into.append(new_uuid4())

    threads = [threading.Thread(target=take, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for into in taken for i in into]
    assert len(set(every)) == len(every) == 4 * 10 * _util._BATCH


@pytest.mark.skipif(
    not hasattr(os, "fork"),
    reason="os.fork does not exist on this platform (Windows), so no child can inherit the "
    "id batches; the fork hook (_util._forget_ids) is only registered where it does",
)
def test_a_forked_child_never_gives_the_ids_its_parent_holds() -> None:
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
