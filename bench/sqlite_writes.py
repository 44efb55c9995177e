"""Benchmark: a group commit's writes on handrail's SQLite schema, with random or sorted keys
and with or without a savepoint a write.

A script, not a test. It opens a `Store` on a new SQLite file (so the tables and indexes are
the migrated ones), then, on a plain ``sqlite3`` connection at ``synchronous=OFF`` (the fsync
is the disk's, the same whichever way; this measures the CPU of the statements), runs groups
of ``--group`` writes in one transaction each. A write inserts what a turn that pauses on an
ask inserts: a conversation, its two rows, an activity record and a request record. The
variants run interleaved, ``--rounds`` rounds of ``--groups`` groups each, into the same
tables, which grow as the run goes on:

- keys: `new_id` (random) or `new_sorted_id` (the milliseconds first) for the conversation,
  activity and request ids, which every one of their indexes begins with or holds;
- savepoints: each write in ``SAVEPOINT``/``RELEASE`` (how the writer ran every group before;
  now only the second try of a group one of whose writes failed) or not (how it runs a group
  now).

It prints the median process CPU per write of each variant over the rounds, each round's in
order (so the growth shows), and the ratios:

    .venv/bin/python bench/sqlite_writes.py --rounds 12
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine_line, print_table  # noqa: E402
from handrail._util import new_id, new_sorted_id  # noqa: E402
from handrail.store import Store  # noqa: E402

VARIANTS = {
    "random keys, savepoints": (new_id, True),
    "random keys": (new_id, False),
    "sorted keys, savepoints": (new_sorted_id, True),
    "sorted keys": (new_sorted_id, False),
}

_ASK = json.dumps({"toolCallId": "call_1", "kind": "choice", "input": {"title": "Choose a plan"}})
_ROW = json.dumps({"type": "tool-call", "toolName": "ask_choice", "arguments": {"x": "y" * 200}})


def write(db: sqlite3.Connection, key: Callable[[], str], now: str) -> None:
    """What a prompt turn that pauses on an ask inserts."""
    history = key()
    db.execute(
        "INSERT INTO histories (id, owner_id, agent, title, pending_ask, pending_created,"
        " version, next_seq, created, updated) VALUES (?, 'alice', 'assistant', 'Plan', ?, ?,"
        " 2, 2, ?, ?)",
        (history, _ASK, now, now, now),
    )
    db.executemany(
        "INSERT INTO history_rows (history_id, seq, type, tool_call_id, data, created)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(history, 0, "user", None, _ROW, now), (history, 1, "tool-call", "call_1", _ROW, now)],
    )
    db.execute(
        "INSERT INTO activity (id, actor, action, subject, changes, created, history_id,"
        " owner_id, tool) VALUES (?, 'agent:assistant', 'gate.asked', 'call_1', '{}', ?, ?,"
        " 'alice', 'ask_choice')",
        (key(), now, history),
    )
    db.execute(
        "INSERT INTO requests (id, history_id, owner_id, request_type, prompt, response,"
        " metadata, model, created, duration_ms) VALUES (?, ?, 'alice', 'general', ?, '', '{}',"
        " 'scripted', ?, 1)",
        (key(), history, "ask_choice " + _ASK, now),
    )


def group(db: sqlite3.Connection, size: int, key: Callable[[], str], savepoints: bool) -> None:
    now = time.strftime("%Y-%m-%d %H:%M:%S.000000")
    db.execute("BEGIN IMMEDIATE")
    for _ in range(size):
        if savepoints:
            db.execute("SAVEPOINT w")
        write(db, key, now)
        if savepoints:
            db.execute("RELEASE w")
    db.execute("COMMIT")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12, help="interleaved rounds (12)")
    parser.add_argument("--groups", type=int, default=150, help="groups a variant a round (150)")
    parser.add_argument("--group", type=int, default=8, help="writes a group (8)")
    args = parser.parse_args(argv)
    print("handrail bench: a group commit's writes on the SQLite schema")
    print(machine_line(f"SQLite {sqlite3.sqlite_version}"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.db"
        asyncio.run(_migrate(path))
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA synchronous=OFF")
        per_write: dict[str, list[float]] = {name: [] for name in VARIANTS}
        names = list(VARIANTS)
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order if r % 2 == 0 else reversed(order):
                key, savepoints = VARIANTS[name]
                start = time.process_time()
                for _ in range(args.groups):
                    group(db, args.group, key, savepoints)
                spent = time.process_time() - start
                per_write[name].append(spent / (args.groups * args.group) * 1e6)
        rows = db.execute("SELECT count(*) FROM histories").fetchone()[0]
        db.close()
    print(f"{args.rounds} rounds of {args.groups} groups of {args.group} writes a variant;")
    print(f"the tables end with {rows:,} conversations (5 rows a write)")
    print_table(
        "process CPU per write, µs (median over the rounds; first and last round)",
        ["variant", "median", "first", "last", "× random keys, savepoints"],
        [
            [
                name,
                f"{statistics.median(values):.1f}",
                f"{values[0]:.1f}",
                f"{values[-1]:.1f}",
                f"{statistics.median(values) / statistics.median(per_write[names[0]]):.2f}",
            ]
            for name, values in per_write.items()
        ],
    )
    return 0


async def _migrate(path: Path) -> None:
    store = await Store.open(f"sqlite:///{path}", blob_dir=path.parent / "files")
    await store.close()


if __name__ == "__main__":
    raise SystemExit(main())
