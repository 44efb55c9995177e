"""Turns that survive a crash: leases, heartbeats and taking a turn over.

A turn that still has work to do after committed input (an answer, or a message that
cancelled a pending ask) holds a lease on its history, written in the same transaction as that
input (`Runtime.new_lease`). While it runs, `Recovery.heartbeat` renews it every third of
`Runtime.lease_s`; its last change releases it. When a process stops (a crash, ``kill -9``),
its leases lapse, and any live process takes the turn over, at most one per lease:

- the sweeper (`Recovery.start`, run by the server) claims lapsed leases every half lease;
- a prompt on a history whose lease belongs to another process waits for that turn
  (`Recovery.settle`), and takes it over itself once it lapses, so whatever the stopped turn
  did (an uncertain call, a reply) is known before the new turn starts.

Taking over an answer runs its gate's `recover`: a model ask's answer goes to the model again
(a `files` answer with the same files, read again from the blob store: `answer_files.py`);
a held tool call that may have run is reported ``TOOL_EXECUTION_UNCERTAIN`` instead of being
run twice (unless the tool is read-only or idempotent); a confirmation never consumed is sent
once, one consumed is ``uncertain`` at once. When nothing can be done the answer is undone and
the ask is pending again. Taking over a message runs the model on the stored conversation.
The sweep also removes the kept copies of a files answer that no lease names any more (their
process stopped after the turn's last commit, before it removed them), and, at its first round
and hourly after, what a stopped upload or delete left in the blob folder: bytes no upload
names, when only this database uses the folder, and temporary files (`FileRepo.sweep_blobs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from .._util import Failing, utc_now
from ..asks import AskSurface, PendingAsk
from ..store import Store, TurnLease, TurnState
from .answer_files import (
    after_answer,
    drop_kept_files,
    drop_unnamed_copies,
    recovered_answer_files,
)
from .answer_run import answer_run
from .gate import Answer
from .instructions import resolve_instructions
from .prompting import build_turn_setup
from .rows import rows_to_messages
from .steps import TurnRun
from .turn import Principal, Turn

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["DEFAULT_LEASE_S", "Recovery"]

log = logging.getLogger("handrail.runtime")

#: How long a turn's lease lasts without a heartbeat: short enough that a person does not
#: notice a takeover, long enough that a busy process renews it in time.
DEFAULT_LEASE_S: Final = 10.0
#: Seconds between two sweeps of the blob folder (`FileRepo.sweep_blobs`; the first comes with
#: the first sweep for lapsed leases).
BLOB_SWEEP_S: Final = 3600.0


class Recovery:
    """The leases of one runtime: renewing its own, taking over lapsed ones."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def store(self) -> Store:
        return self.runtime.store

    def _until(self) -> dt.datetime:
        return utc_now() + dt.timedelta(seconds=self.runtime.lease_s)

    def keep_alive(self, history_id: str) -> Callable[[], None]:
        """Renew this runtime's lease on `history_id` every third of a lease until the
        returned function is called (or the lease is lost). The task that renews it is made
        when the first renewal is due: most turns end long before."""
        every = self.runtime.lease_s / 3
        task: asyncio.Task[None] | None = None

        def due() -> None:
            nonlocal task
            task = asyncio.create_task(self.heartbeat(history_id, wait_first=False))

        timer = asyncio.get_running_loop().call_later(every, due)

        def stop() -> None:
            timer.cancel()
            if task is not None:
                task.cancel()

        return stop

    async def heartbeat(self, history_id: str, *, wait_first: bool = True) -> None:
        """Renew this runtime's lease on `history_id` every third of a lease (the first time
        at once unless `wait_first`) until cancelled or lost."""
        every = self.runtime.lease_s / 3
        if wait_first:
            await asyncio.sleep(every)
        renewals = Failing(log, f"renewing the turn lease of {history_id}")
        while True:
            try:
                held = await self.store.leases.heartbeat(
                    history_id, self.runtime.owner, self._until()
                )
            except Exception:
                renewals.failed(again_s=every)
                held = True  # tried again at the next beat
            else:
                renewals.succeeded()
            if not held:
                return
            await asyncio.sleep(every)

    def start(self) -> None:
        """Sweep for lapsed leases every half lease, until `stop`."""
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="handrail-recovery")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None

    async def _sweep_forever(self) -> None:
        loop = asyncio.get_running_loop()
        blobs_due = loop.time()  # at the first sweep, then every BLOB_SWEEP_S
        every = self.runtime.lease_s / 2
        sweeps = (
            (Failing(log, "the sweep for lapsed turns"), self._sweep_leases),
            (Failing(log, "the sweep for expired and due asks"), self._sweep_gates),
        )
        blob_sweeps = Failing(log, "the sweep of the blob folder")
        while True:
            await asyncio.sleep(every)
            for failing, sweep in sweeps:
                try:
                    await sweep()
                except Exception:
                    failing.failed(again_s=every)
                else:
                    failing.succeeded()
            if loop.time() >= blobs_due:
                blobs_due = loop.time() + BLOB_SWEEP_S
                try:
                    await self.store.files.sweep_blobs()
                except Exception:
                    blob_sweeps.failed(again_s=BLOB_SWEEP_S)
                else:
                    blob_sweeps.succeeded()

    async def _sweep_leases(self) -> None:
        await self.sweep()

    async def _sweep_gates(self) -> None:
        await self.runtime.sweep_gates()

    async def sweep(self) -> list[Turn]:
        """Take over every lapsed lease this runtime can claim, then remove the kept copies of
        files answers that no lease names, made more than a lease ago (`drop_unnamed_copies`);
        the turns it started."""
        now = utc_now()
        turns: list[Turn] = []
        for lease in await self.store.leases.lapsed(now):
            turn = await self.take_over(lease, now)
            if turn is not None:
                turns.append(turn)
        try:
            await drop_unnamed_copies(self.store, now - dt.timedelta(seconds=self.runtime.lease_s))
        except Exception:
            log.warning("the sweep for kept copies no turn needs failed", exc_info=True)
        return turns

    async def take_over(self, lease: TurnLease, now: dt.datetime | None = None) -> Turn | None:
        """Claim a lapsed lease and run the rest of its turn; None when another process
        claimed it first (or it was renewed or released)."""
        moment = now or utc_now()
        claimed = await self.store.leases.claim(lease, self.runtime.owner, self._until(), moment)
        if claimed is None:
            return None
        log.warning(
            "taking over the turn on history %s from %s (its lease lapsed at %s)",
            lease.history_id,
            lease.owner,
            lease.until.isoformat(),
        )
        return await self.resume(claimed)

    async def settle(self, state: TurnState) -> TurnState | None:
        """Wait until the history's turn lease (of another process) is released, taking the
        turn over once it lapses; then the history as it is. Bounded by a few leases."""
        history_id = state.history.id
        deadline = asyncio.get_running_loop().time() + 3 * self.runtime.lease_s
        current: TurnState | None = state
        while current is not None and current.lease is not None:
            lease = current.lease
            if lease.owner == self.runtime.owner:
                return current  # this process's own turn: it finishes by itself
            if lease.until < utc_now():
                turn = await self.take_over(lease)
                if turn is not None:
                    await turn.wait()
            elif asyncio.get_running_loop().time() > deadline:
                log.warning("the turn on history %s kept its lease; going on", history_id)
                return current
            else:
                await asyncio.sleep(min(0.2, self.runtime.lease_s / 4))
            current = await self.store.load_turn(history_id)
        return current

    async def _answer(
        self,
        run: TurnRun,
        pending: PendingAsk,
        answer: Answer,
        lease: TurnLease,
        *,
        recovering: bool,
    ) -> None:
        """Carry out a taken-over answer, with the files of a `files` answer as its turn
        first showed them (read again from the blob store). When they are gone, the answer is
        undone and the ask is pending again."""
        runtime = self.runtime
        kept = [str(k) for k in lease.state.get("keptFiles", [])]
        if pending.kind == "files" and answer.action == "accept":
            try:
                parts = await recovered_answer_files(self.store, answer.envelope, kept)
            except Exception as exc:
                log.warning(
                    "could not read the files of the answer on history %s again",
                    lease.history_id,
                    exc_info=True,
                )
                if not await runtime._undo_answer(run, pending):
                    await runtime._fail(run, exc)
                await drop_kept_files(self.store, kept)
                return
            answer = dataclasses.replace(answer, parts=parts)
        work = runtime._answer_turn(run, pending, answer, recovering=recovering)
        await after_answer(self.store, lease.history_id, kept, work)

    async def resume(self, lease: TurnLease, *, recovering: bool = True) -> Turn | None:
        """Run the rest of a taken-over turn as a new task of this runtime. `recovering`
        False: the lease was handed over by the process that took the answer (forwarded to
        this one, which holds the call), and the answer is carried out as usual."""
        runtime = self.runtime
        state = await self.store.load_turn(lease.history_id)
        if state is None:  # deleted meanwhile
            await self.store.leases.release(lease.history_id, runtime.owner)
            return None
        history, rows = state.history, state.rows
        agent = runtime.agent_for(history)
        model = runtime.model_for(agent)
        surface = lease.state.get("surface", "full")
        checked: AskSurface = "compact" if surface == "compact" else "full"
        principal = Principal(user_id=history.owner_id)
        turn = Turn(history.id, user_id=history.owner_id)
        if lease.state.get("kind") == "answer":
            pending = PendingAsk.from_json(lease.state["pending"])
            page = runtime.page_tools_of(pending)
            answer = Answer(
                envelope=dict(lease.state["answer"]), scope=lease.state.get("scope", "once")
            )
            run = answer_run(
                turn,
                history,
                rows,
                pending,
                principal=principal,
                agent=runtime.with_page_tools(agent, page),
                model=model,
                surface=checked,
                log_prompt=json.dumps(answer.envelope, ensure_ascii=False),
                metadata={
                    "ask": {
                        "toolCallId": pending.tool_call_id,
                        "phase": "recovered" if recovering else "forwarded",
                    }
                },
                lease_owner=runtime.owner,
                page_tools=page,
            )
            work = self._answer(run, pending, answer, lease, recovering=recovering)
        else:
            resolved = await resolve_instructions(
                self.store, agent, principal, history_id=history.id
            )
            setup = build_turn_setup(agent, model, checked, resolved.snapshot)
            messages = rows_to_messages(r.data for r in rows)
            run = TurnRun(
                turn=turn,
                history=history,
                principal=principal,
                agent=agent,
                model=model,
                setup=setup,
                messages=messages,
                turn_start=len(messages),
                prompt_index=len(rows),
                row_count=len(rows),
                log_prompt=str(lease.state.get("prompt", "")),
                metadata={"phase": "recovered"},
                lease_owner=runtime.owner,
            )
            work = runtime._run_steps(run)
        runtime._spawn(turn, work, leased=True)
        return turn
