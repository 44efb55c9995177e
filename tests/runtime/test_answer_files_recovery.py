"""A `files` answer whose process stopped after it was committed: the process that takes the
turn over shows the model the same files, byte for byte, as the answering process would have.
Uploads are read again; a data URL's bytes, which no row may hold, are kept in the blob store
(as an upload of no one) while the answer's turn holds its lease, and removed after. They are
kept once the answer that names them commits, and a process that stops after the turn's last
commit but before removing them leaves them to the recovery sweep: no copy that nothing names
stays."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from doubles import GatedModel, stops_in
from handrail.runtime.agent import Agent
from handrail.runtime.messages import FilePart, ToolResultMessage
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal, Turn
from handrail.store import Store
from handrail.store.blobs import REGISTERED_PREFIX as REGISTERED
from handrail.store.db import all_rows
from handrail.store.tables import files

ALICE = Principal(user_id="alice")
LEASE = 0.4
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)
NOTE = b"Lunch, 2 people\n"
ASK = "ask_files " + json.dumps({"prompt": "Send the receipts.", "accept": ["image", "text"]})


class Recording(GatedModel):
    """The gated scripted model, with what it showed of a files answer."""

    def files_shown(self) -> tuple[object, tuple[FilePart, ...]]:
        """The files answer's tool result of the last request: its JSON and its files."""
        [shown] = [
            (m.content, m.parts)
            for m in self.requests[-1].messages
            if isinstance(m, ToolResultMessage) and m.tool_name == "ask_files"
        ]
        return shown


async def _asked(runtime: Runtime, store: Store) -> tuple[Turn, dict[str, Any]]:
    """Ask for files: the ask's turn and an answer with an upload and a data URL."""
    turn = await runtime.start_prompt(ALICE, ASK)
    events = [e async for e in turn.stream()]
    call_id = next(e["ask"]["toolCallId"] for e in events if "ask" in e)
    upload = await store.files.create("alice", "receipt.png", "image/png", PNG)
    note_url = "data:text/plain;base64," + base64.b64encode(NOTE).decode()
    refs = [
        {"fileId": upload.id, "filename": "receipt.png", "mimeType": "image/png", "size": len(PNG)},
        {"url": note_url, "filename": "note.txt", "mimeType": "text/plain", "size": len(NOTE)},
    ]
    return turn, {"toolCallId": call_id, "action": "accept", "content": {"files": refs}}


async def _answered(
    runtime: Runtime, model: Recording, store: Store
) -> tuple[Turn, dict[str, Any], str]:
    """Ask for files, answer with an upload and a data URL, and wait until the answer is
    committed and the model is about to reply: the answer's turn, the answer, and the id of
    the data URL's kept copy (named by the lease)."""
    turn, answer = await _asked(runtime, store)
    model.armed = True
    answering = await runtime.start_answer(ALICE, turn.history_id, answer)
    await model.waiting.wait()
    lease = await store.leases.get(turn.history_id)
    assert lease is not None
    [kept] = lease.state["keptFiles"]
    # The data URL's bytes are kept outside every row.
    assert NOTE.decode() not in json.dumps(lease.state)
    return answering, answer, kept


def _dead(runtime: Runtime) -> Runtime:
    """`runtime` as a process that stopped would be: its leases are never renewed."""

    async def no_heartbeat(history_id: str, **_: object) -> None:
        await asyncio.Event().wait()

    runtime.recovery.heartbeat = no_heartbeat  # type: ignore[method-assign]
    return runtime


async def test_a_taken_over_files_answer_shows_the_model_the_same_files(store: Store) -> None:
    model_a, model_b = Recording(), Recording()
    a = _dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=model_b, lease_s=LEASE)
    # The answer is committed; A "dies" before the model replies.
    turn_a, answer, kept = await _answered(a, model_a, store)
    expected = model_a.files_shown()
    _, parts = expected
    assert [(p.filename, p.mime_type, p.data) for p in parts] == [
        ("receipt.png", "image/png", PNG),
        ("note.txt", "text/plain", NOTE),
    ]
    await asyncio.sleep(LEASE * 1.5)
    [taken] = await b.recovery.sweep()
    done = (await taken.result()).to_json()
    assert model_b.files_shown() == expected
    assert done["text"].startswith("ask_files returned: ")
    # Once the turn is over, the kept copy is gone; the person's upload stays.
    assert await store.files.get(kept) is None
    [ref, _] = answer["content"]["files"]
    assert await store.files.get(ref["fileId"]) is not None
    model_a.release.set()
    assert "taken over" in (await turn_a.result()).to_json()["error"]
    assert await store.files.get(kept) is None
    await a.aclose()
    await b.aclose()


async def test_the_kept_copy_of_a_data_url_goes_when_the_turn_ends(store: Store) -> None:
    model = Recording()
    runtime = Runtime(store=store, agents=Agent("ops"), model=model, lease_s=LEASE)
    turn, _, kept = await _answered(runtime, model, store)
    record = await store.files.get(kept)
    assert record is not None
    assert await store.files.read(record) == NOTE
    model.release.set()
    await turn.result()
    assert await store.leases.get(turn.history_id) is None
    assert await store.files.get(kept) is None
    await runtime.aclose()


async def test_a_taken_over_files_answer_whose_upload_is_gone_is_pending_again(
    store: Store,
) -> None:
    model_a = Recording()
    a = _dead(Runtime(store=store, agents=Agent("ops"), model=model_a, lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE)
    turn_a, answer, kept = await _answered(a, model_a, store)
    history_id = turn_a.history_id
    [ref, _] = answer["content"]["files"]
    await store.files.delete(ref["fileId"])
    await asyncio.sleep(LEASE * 1.5)
    [taken] = await b.recovery.sweep()
    done = (await taken.result()).to_json()
    assert done["pendingAsk"]["toolCallId"] == answer["toolCallId"]
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert await store.leases.get(history_id) is None
    assert await store.files.get(kept) is None
    model_a.release.set()
    await turn_a.result()
    await a.aclose()
    await b.aclose()


async def _left(store: Store, blobs: Path) -> tuple[list[str], list[str]]:
    """The live uploads (their ids) and the files in the blob store (their names), but the
    database's registration in it."""
    rows = await store.db.read(all_rows, select(files.c.id).where(files.c.deleted_at.is_(None)))
    names = (p.name for p in blobs.iterdir())
    return sorted(r.id for r in rows), sorted(n for n in names if not n.startswith(REGISTERED))


async def test_a_process_that_stops_before_the_answer_commits_leaves_no_copy(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE)
    turn, answer = await _asked(runtime, store)
    before = await _left(store, tmp_path / "blobs")
    committing = stops_in(monkeypatch, store.histories, "apply")
    answering = asyncio.ensure_future(runtime.start_answer(ALICE, turn.history_id, answer))
    await committing.wait()
    # Were the process to stop now, nothing would ever name a copy of the data URL's bytes:
    # there is none yet (only the person's upload, in a row and in the blob store).
    assert await _left(store, tmp_path / "blobs") == before
    answering.cancel()
    monkeypatch.undo()
    await runtime.aclose()


async def test_a_process_that_stops_before_keeping_the_copy_puts_the_ask_back(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _dead(Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE))
    b = Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE)
    turn, answer = await _asked(a, store)
    before = await _left(store, tmp_path / "blobs")
    # The answer commits (its lease names the copy), then the process stops before the copy.
    keeping = stops_in(monkeypatch, a.store.files, "create")
    answering = asyncio.ensure_future(a.start_answer(ALICE, turn.history_id, answer))
    await keeping.wait()
    monkeypatch.undo()
    lease = await store.leases.get(turn.history_id)
    assert lease is not None
    [kept] = lease.state["keptFiles"]
    await asyncio.sleep(LEASE * 1.5)
    [taken] = await b.recovery.sweep()
    done = (await taken.result()).to_json()
    assert done["pendingAsk"]["toolCallId"] == answer["toolCallId"]
    assert await store.leases.get(turn.history_id) is None
    assert await store.files.get(kept) is None
    assert await _left(store, tmp_path / "blobs") == before
    answering.cancel()
    await a.aclose()
    await b.aclose()


async def test_an_answer_whose_copy_cannot_be_kept_goes_on(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    model = Recording()
    runtime = Runtime(store=store, agents=Agent("ops"), model=model, lease_s=LEASE)
    turn, answer = await _asked(runtime, store)

    async def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.files, "create", full)
    done = (await (await runtime.start_answer(ALICE, turn.history_id, answer)).result()).to_json()
    assert done["text"].startswith("ask_files returned: ")
    _, parts = model.files_shown()
    assert [p.data for p in parts] == [PNG, NOTE]
    assert "could not keep the files of an answer" in caplog.text
    await runtime.aclose()


async def test_a_process_that_stops_before_removing_the_copy_leaves_it_to_the_sweep(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Recording()
    a = Runtime(store=store, agents=Agent("ops"), model=model, lease_s=LEASE)
    b = Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE)
    turn, _, kept = await _answered(a, model, store)
    # The turn's last commit releases the lease; the process stops before removing the copy.
    removing = stops_in(monkeypatch, store.files, "delete")
    model.release.set()
    await removing.wait()
    monkeypatch.undo()
    assert await store.leases.get(turn.history_id) is None
    assert await store.files.get(kept) is not None  # named by nothing now
    await asyncio.sleep(LEASE * 1.5)
    assert await b.recovery.sweep() == []
    assert await store.files.get(kept) is None
    live, blobs = await _left(store, tmp_path / "blobs")
    assert kept not in live
    assert kept not in blobs
    assert len(live) == len(blobs) == 1  # the person's upload stays
    assert turn.task is not None
    turn.task.cancel()
    await a.aclose()
    await b.aclose()


async def test_the_sweep_keeps_a_copy_that_a_lease_names(store: Store, tmp_path: Path) -> None:
    model = Recording()
    a = Runtime(store=store, agents=Agent("ops"), model=model, lease_s=LEASE)
    b = Runtime(store=store, agents=Agent("ops"), model=Recording(), lease_s=LEASE)
    turn, answer, kept = await _answered(a, model, store)
    await asyncio.sleep(LEASE * 1.5)  # the copy is older than a lease; A renews its lease
    assert await b.recovery.sweep() == []
    record = await store.files.get(kept)
    assert record is not None
    assert await store.files.read(record) == NOTE
    [ref, _] = answer["content"]["files"]
    assert await store.files.get(ref["fileId"]) is not None
    model.release.set()
    await turn.result()
    assert await store.files.get(kept) is None
    await a.aclose()
    await b.aclose()
