"""A hypothesis model of one turn across processes: a writer, restores and resumes of the
signed states handed out, over one journal and one outcome store, with faults injected.

Each process has its own view of the journal (``InMemoryJournal.another()``: its own
queue, as a second process opening the same database) and talks to the shared
``InMemoryOutcomeStore``. Every I/O step of a process (a commit, a create or take-over,
a read, each store operation, and the two halves of every tool around its side effect)
goes through a gate, so a rule can freeze a process anywhere it could really stall (a GC
pause, a stopped container) and wake it later, or kill it there (what it had queued and
not committed is lost, and it does nothing more). Other faults: a store claim whose
acknowledgement is lost (it happened, the caller sees an error), and a duplicate request
(one signed state resumed twice at once).

The turn: ``c1`` an eager ``charge``, ``c2`` a gated ``ship``, ``c3`` an eager ``refund``
that needs a person's approval (deferred: the writer hands out a signed state). None of
the tools is idempotent. After every step, and at the end once every process has woken
and finished:

- no tool ran twice;
- a call reported done (by any process that returned its calls) ran once, with that
  result; a call reported not run (not executed, denied, cancelled before its start,
  claim failed) never ran, then or later;
- so every decision handed to a client was honoured at most once.

It runs on asyncio and trio, each through one blocking portal; ``TOOLCALL_MODEL_EXAMPLES``
(default 100) sets the examples per backend. Checked by mutation: without the journal's
and the store's fencing (the restore's take-over changing nothing), it finds a woken
writer running the gated call that a restore reported not executed, in every run of 100.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from toolcall_tracker import RunControl, Status, ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import DurableError, DurableTurn, InMemoryJournal, resume_turn
from toolcall_tracker.runner import (
    CallOutcome,
    Claim,
    Fence,
    InMemoryOutcomeStore,
    PendingApprovals,
)

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

SECRET = b"a turn model secret (32 bytes!!)"
TURN = "turn-1"
CALLS = (
    ("c1", "charge", {"order": "A"}),
    ("c2", "ship", {"order": "A"}),
    ("c3", "refund", {"order": "B"}),
)
NOT_RUN = frozenset({"not_executed", "denied", "claim_failed", "no_approver"})


class Killed(Exception):
    """A killed process's I/O: it never completes."""


class Proc:
    """One process: its gate (frozen or not, killed or not) and its cancel scope."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.frozen = False
        self.killed = False
        self.lose_ack = False
        self._wake = anyio.Event()
        self.scope: anyio.CancelScope | None = None
        self.done = False
        self.journal: InMemoryJournal | None = None  # its view, once it opened one

    async def io(self) -> None:
        """One step of I/O: waits while frozen; a killed process never gets past."""
        while self.frozen and not self.killed:
            await self._wake.wait()
        if self.killed:
            raise Killed(self.name)
        await anyio.lowlevel.checkpoint()

    def freeze(self) -> None:
        self.frozen = True
        self._wake = anyio.Event()

    def thaw(self) -> None:
        self.frozen = False
        self._wake.set()

    def kill(self) -> None:
        self.killed = True
        self._wake.set()
        if self.scope is not None:
            self.scope.cancel()


class GatedLog:
    def __init__(self, proc: Proc, log: Any) -> None:
        self._proc, self._log = proc, log

    turn_id = property(lambda self: self._log.turn_id)
    epoch = property(lambda self: self._log.epoch)
    superseded = property(lambda self: self._log.superseded)

    def append_event(self, item: list[Any]) -> None:
        if not self._proc.killed:  # a dead process's writes go nowhere
            self._log.append_event(item)

    def append(self, kind: str, data: Any) -> None:
        if not self._proc.killed:
            self._log.append(kind, data)

    async def commit(self) -> None:
        await self._proc.io()
        await self._log.commit()
        await self._proc.io()  # (frozen right after a commit: its answer not yet used)


class GatedJournal:
    def __init__(self, proc: Proc, journal: InMemoryJournal) -> None:
        self._proc, self._journal = proc, journal

    async def create(self, turn_id: str, head: dict[str, Any]) -> GatedLog:
        await self._proc.io()
        return GatedLog(self._proc, await self._journal.create(turn_id, head))

    async def take_over(self, turn_id: str) -> GatedLog:
        await self._proc.io()
        return GatedLog(self._proc, await self._journal.take_over(turn_id))

    async def read(self, turn_id: str, after: int = 0) -> Any:
        await self._proc.io()
        return await self._journal.read(turn_id, after)


class GatedStore:
    def __init__(self, proc: Proc, store: InMemoryOutcomeStore) -> None:
        self._proc, self._store = proc, store

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        await self._proc.io()
        claim = await self._store.claim(key, expires_at=expires_at, fence=fence)
        if self._proc.lose_ack:  # it happened; the answer is lost on the way back
            self._proc.lose_ack = False
            raise ConnectionError("the claim's answer was lost")
        await self._proc.io()
        return claim

    async def record(self, key: str, outcome: CallOutcome) -> None:
        await self._proc.io()
        await self._store.record(key, outcome)

    async def get(self, key: str) -> CallOutcome | None:
        await self._proc.io()
        return await self._store.get(key)

    async def fence(self, scope: str, epoch: int) -> None:
        await self._proc.io()
        await self._store.fence(scope, epoch)


async def quiesce() -> None:
    """Return once every other task of the event loop waits (on something not ready).

    trio's own ``wait_all_tasks_blocked`` is exact; anyio's on asyncio sleeps 0.1 s each
    time a task is still busy, so here asyncio's tasks are looked at after each pass of
    the loop (a pass at a time: everything here is in memory)."""
    try:
        loop_tasks = asyncio.all_tasks()
    except RuntimeError:  # not asyncio: trio
        await anyio.wait_all_tasks_blocked()
        return
    this = asyncio.current_task()
    quiet = 0
    while quiet < 3:  # three passes in a row with every other task waiting
        await asyncio.sleep(0)
        loop_tasks = asyncio.all_tasks()
        busy = any(
            task is not this and (task._fut_waiter is None or task._fut_waiter.done())  # type: ignore[attr-defined]
            for task in loop_tasks
        )
        quiet = 0 if busy else quiet + 1


class TurnModel(RuleBasedStateMachine):
    backend = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal(self.backend)
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self.journal = InMemoryJournal()
        self.store = InMemoryOutcomeStore()
        self.runs: Counter[str] = Counter()  # call id -> real runs of its tool
        self.results: dict[str, str] = {}
        self.reports: list[tuple[str, str, str, Any]] = []  # who, call, done/not_run, value
        self.handed: list[PendingApprovals] = []
        self.procs: list[Proc] = []
        self.futures: list[Any] = []  # each process's task: an unexpected error fails
        self.writer = self.start_writer()

    # -- processes --------------------------------------------------------------------

    def runner(self, proc: Proc) -> ToolRunner:
        def side_effect(call_id: str, what: str) -> Callable[..., Any]:
            async def run(order: str) -> str:
                await proc.io()  # frozen before the side effect
                self.runs[call_id] += 1
                self.results[call_id] = f"{what} {order}"
                await proc.io()  # ... or after it, before returning
                return f"{what} {order}"

            run.__name__ = what
            run.__doc__ = f"{what.capitalize()} an order."
            return run

        return ToolRunner(
            [
                tool(side_effect("c1", "charge"), eager=True),
                tool(side_effect("c2", "ship")),
                tool(side_effect("c3", "refund"), eager=True, needs_approval=True),
            ],
            approval_secret=SECRET,
            outcome_store=GatedStore(proc, self.store),
        )

    def spawn(self, name: str, body: Callable[[Proc], Any]) -> Proc:
        proc = Proc(name)
        self.procs.append(proc)

        async def main() -> None:
            with anyio.CancelScope() as scope:
                proc.scope = scope
                try:
                    await body(proc)
                except (Killed, DurableError):  # killed, fenced (superseded), refused
                    pass
                except BaseExceptionGroup as group:
                    rest = group.split((Killed, DurableError))[1]
                    if rest is not None:
                        raise rest from None
            proc.done = True

        self.futures.append(self.portal.start_task_soon(main))
        self.settle()
        return proc

    def start_writer(self) -> Proc:
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](100)
        self.feed = send
        self.script = [
            item
            for call_id, name, args in CALLS
            for item in (
                {"type": "start", "id": call_id, "name": name},
                {"type": "delta", "id": call_id, "argsTextDelta": json.dumps(args)},
                {"type": "ready", "id": call_id},
            )
        ] + [{"type": "end", "ok": True, "reason": "tool_calls"}]

        async def body(proc: Proc) -> None:
            tracker = ToolCallTracker()
            control = RunControl(defer_approvals=True)
            store = GatedStore(proc, self.store)
            proc.journal = self.journal.another()
            journal = GatedJournal(proc, proc.journal)
            turn = DurableTurn(journal, TURN, tracker, store=store)  # type: ignore[arg-type]
            async with turn, anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, receive)
                calls = await turn.run(self.runner(proc), control=control)
            self.report(proc.name, calls, control)

        return self.spawn("writer", body)

    def report(self, who: str, calls: list[ToolCall], control: RunControl | None) -> None:
        for call in calls:
            if call.status is Status.DONE:
                self.reports.append((who, call.id, "done", call.result))
            elif call.status is Status.ERROR:
                kind = getattr(call.error, "kind", None)
                started = getattr(call.error, "tool_started", None)
                if kind in NOT_RUN or (kind == "cancelled" and started is False):
                    self.reports.append((who, call.id, "not_run", kind))
        if control is not None and control.pending is not None:
            self.handed.append(control.pending)

    def settle(self) -> None:
        self.portal.call(quiesce)
        for future in self.futures:
            if future.done() and not future.cancelled() and future.exception() is not None:
                raise future.exception()

    def live(self) -> list[Proc]:
        return [proc for proc in self.procs if not proc.done and not proc.killed]

    # -- rules ------------------------------------------------------------------------

    @precondition(lambda self: self.script and not self.writer.killed)
    @rule(count=st.integers(1, len(CALLS) * 3 + 1))
    def stream(self, count: int) -> None:
        """The model's next stream items reach the writer (if it still reads); its
        journal's writer commits each at once (the default level), unless it is frozen."""
        for _ in range(min(count, len(self.script))):
            item = self.script.pop(0)
            try:
                self.portal.call(self.feed.send, item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the writer stopped reading (fenced, or done)
            self.settle()
            self.writer_thread(self.writer)
        if not self.script:  # the model's response is over: its stream closes
            self.portal.call(self.feed.aclose)
            self.settle()

    def writer_thread(self, proc: Proc) -> None:
        """A process's journal writer commits what it queued (not while it is frozen)."""
        journal = proc.journal
        if journal is not None and not proc.frozen and not proc.killed:
            self.portal.call(journal.commit)
            self.settle()

    @rule(data=st.data(), fault=st.sampled_from(["freeze", "thaw", "kill", "lose an ack"]))
    def inject(self, data: st.DataObject, fault: str) -> None:
        """A fault in one process: it stalls wherever it is (its next I/O waits), wakes
        (its journal writer catches up), is killed (kill -9: it does nothing more, what it
        had not committed is lost), or the answer to its next store claim is lost (the
        claim happened; it sees an error)."""
        procs = [p for p in self.live() if p.frozen == (fault == "thaw")]
        if not procs:
            return
        proc = data.draw(st.sampled_from(procs))
        if fault == "freeze":
            self.portal.call(proc.freeze)
        elif fault == "thaw":
            self.portal.call(proc.thaw)
            self.settle()
            self.writer_thread(proc)
        elif fault == "kill":
            self.portal.call(proc.kill)
            self.settle()
        else:
            proc.lose_ack = True

    @rule()
    def restore(self) -> None:
        """Another process takes the turn over and finishes it (approvals deferred)."""
        name = f"restore-{len(self.procs)}"

        async def body(proc: Proc) -> None:
            control = RunControl(defer_approvals=True)
            proc.journal = self.journal.another()
            journal = GatedJournal(proc, proc.journal)
            store = GatedStore(proc, self.store)
            calls = await resume_turn(
                journal,  # type: ignore[arg-type]
                TURN,
                self.runner(proc),
                store=store,  # type: ignore[arg-type]
                control=control,
            )
            self.report(proc.name, calls, control)

        self.spawn(name, body)

    @precondition(lambda self: self.handed)
    @rule(data=st.data(), approve=st.booleans(), twice=st.booleans())
    def answer(self, data: st.DataObject, approve: bool, twice: bool) -> None:
        """A client answers a signed state it was handed (twice: a duplicate request)."""
        state = data.draw(st.sampled_from(self.handed))
        for _ in range(2 if twice else 1):
            name = f"resume-{len(self.procs)}"

            async def body(proc: Proc, state: PendingApprovals = state) -> None:
                decision = state.approve("c3") if approve else state.deny("c3", "no")
                calls = await self.runner(proc).resume(state, [decision])
                self.report(proc.name, calls, None)

            self.spawn(name, body)

    # -- what must hold -----------------------------------------------------------------

    @invariant()
    def no_tool_ran_twice(self) -> None:
        assert all(count <= 1 for count in self.runs.values()), self.runs

    @invariant()
    def the_model_is_told_what_happened(self) -> None:
        for who, call_id, what, value in self.reports:
            if what == "done":
                assert self.runs[call_id] == 1, (who, call_id, self.runs)
                assert value == self.results[call_id]
            else:
                assert self.runs[call_id] == 0, (who, call_id, value, self.runs)

    def teardown(self) -> None:
        try:
            for proc in self.live():
                self.portal.call(proc.thaw)
            self.settle()
            self.portal.call(self.feed.aclose)  # the stream ends (cut, if not finished)
            self.settle()
            self.no_tool_ran_twice()
            self.the_model_is_told_what_happened()
        finally:
            for proc in self.procs:
                self.portal.call(proc.kill)
            self._portal_cm.__exit__(None, None, None)


class TrioTurnModel(TurnModel):
    backend = "trio"


MODEL_SETTINGS = settings(
    max_examples=int(os.environ.get("TOOLCALL_MODEL_EXAMPLES", "100")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("machine", [TurnModel, TrioTurnModel], ids=["asyncio", "trio"])
def test_one_turn_across_processes_with_faults(machine: type[TurnModel]) -> None:
    machine.TestCase.settings = MODEL_SETTINGS
    machine.TestCase().runTest()
