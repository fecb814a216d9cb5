"""A stateful model of the tool runner, with fault injection, on asyncio and trio.

One blocking portal per backend runs the event loop; hypothesis drives a turn from the
test's thread: calls stream and become ready (or are cut off), a human approves (with or
without edited arguments) or denies, calls are cancelled, the run's deadline passes, the
tracker closes, tools end, raise or hang (a hanging sync tool blocks on a
``threading.Event`` the model releases; cancelling it abandons its thread), and the
runner's listener may raise. The deadline is injected: the model fires it through the
turn's own expiry step, the one the clock's cancel scope takes, instead of waiting for a
real clock.

After every step, from what the tools themselves recorded when they started:

- nothing ran unapproved, after the turn ended not ok (gated), twice, beyond its tool's
  cap (abandoned threads included), after the tracker closed, or with arguments other than
  the model's final ones or the approved edit;
- ``notes()`` speak only of calls whose tool really started with edited arguments;
- the runner's own tables hold no more than the calls it is still handling.

At the end every call has ended, with a reason for each error, and ``run`` returned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from typing import Any, ClassVar

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

from conftest import DEADLINE
from toolcall_tracker import (
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    TrackerClosed,
    tool,
)
from toolcall_tracker.runner import RunnerEvent, RunnerListener, RunnerState
from toolcall_tracker.runner._control import link_of

IDS = [f"c{i}" for i in range(6)]


class Lab:
    """What the tools saw, written from their own threads and tasks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: list[tuple[str, str, int, bool]] = []  # (id, tool, n, turn ok then)
        self.live: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.gates: dict[str, threading.Event] = {}
        self.faults: set[str] = set()
        self.left: dict[str, threading.Event] = {}  # set when the tool returned
        self.tracker: ToolCallTracker | None = None
        self.released = False  # every tool returns at once from now on

    def enter(self, call_id: str, name: str, n: int) -> threading.Event:
        tracker = self.tracker
        assert tracker is not None
        end = tracker.end
        with self.lock:
            self.starts.append((call_id, name, n, end is not None and end.ok))
            self.live[name] = self.live.get(name, 0) + 1
            self.peak[name] = max(self.peak.get(name, 0), self.live[name])
            gate = self.gates.setdefault(call_id, threading.Event())
            if self.released:
                gate.set()
            return gate

    def leave(self, call_id: str, name: str) -> None:
        with self.lock:
            self.live[name] -= 1
            self.left.setdefault(call_id, threading.Event()).set()


class Listener(RunnerListener):
    def __init__(self) -> None:
        self.faulty = False
        self.seen = 0

    def transition(
        self, call_id: str, before: RunnerState, after: RunnerState, event: RunnerEvent
    ) -> None:
        self.seen += 1
        if self.faulty:
            raise RuntimeError("the journal is broken")


def make_runner(lab: Lab) -> ToolRunner:
    def make(name: str) -> Any:
        def work(call_id: str, n: int) -> int:
            gate = lab.enter(call_id, name, n)
            try:
                gate.wait(DEADLINE)
                if call_id in lab.faults:
                    raise ValueError("the tool failed")
                return n
            finally:
                lab.leave(call_id, name)

        work.__name__ = name
        return work

    gated, eager = make("gated"), make("eager")  # sync; gated needs approval, sequential
    return ToolRunner(
        [
            tool(gated, needs_approval=True, sequential=True),
            tool(eager, eager=True, max_concurrency=2),
        ],
        max_threads=3,
    )


class RunnerModel(RuleBasedStateMachine):
    portal: ClassVar[BlockingPortal]
    streaming = Bundle("streaming")
    calls = Bundle("calls")

    def __init__(self) -> None:
        super().__init__()
        self.lab = Lab()
        self.tracker = ToolCallTracker()
        self.lab.tracker = self.tracker
        self.control = RunControl()
        self.listener = Listener()
        self.runner = make_runner(self.lab)
        self.started: set[str] = set()  # ids given a start
        self.tool_of: dict[str, str] = {}
        self.n_of: dict[str, int] = {}
        self.approved: dict[str, int | None] = {}  # id -> edited n (None: as sent)
        self.closed_at: int | None = None  # len(lab.starts) when the tracker closed
        self.future: Future[list[ToolCall]] = self.portal.start_task_soon(self._run)
        self._settle()

    async def _run(self) -> list[ToolCall]:
        return await self.runner.run(self.tracker, control=self.control, listener=self.listener)

    def _settle(self) -> None:
        self.portal.call(anyio.wait_all_tasks_blocked)

    def _write(self, method: str, *args: Any) -> None:
        def write() -> None:
            with suppress(TrackerClosed):  # the model may write after closing
                getattr(self.tracker, method)(*args)

        self.portal.call(write)
        self._settle()

    # -- the model's stream --------------------------------------------------------------

    @rule(
        target=streaming,
        call_id=st.sampled_from(IDS),
        name=st.sampled_from(["gated", "eager"]),
        n=st.integers(0, 9),
    )
    def start(self, call_id: str, name: str, n: int) -> str:
        if call_id not in self.started:
            self.started.add(call_id)
            self.tool_of[call_id], self.n_of[call_id] = name, n
            self._write("write_start", call_id, name)
            self._write("write_delta", call_id, f'{{"call_id": "{call_id}", "n": {n}}}')
        return call_id

    @rule(target=calls, call_id=consumes(streaming))
    def ready(self, call_id: str) -> str:
        self._write("write_ready", call_id)
        return call_id

    @rule(ok=st.booleans())
    def end(self, ok: bool) -> None:
        self._write("write_end", ok, None if ok else "length")

    # -- the human and the application --------------------------------------------------

    @rule(call_id=calls, edit=st.none() | st.integers(10, 19))
    def approve(self, call_id: str, edit: int | None) -> None:
        arguments = None if edit is None else {"call_id": call_id, "n": edit}

        def approve() -> bool:
            try:
                return self.control.approve(call_id, arguments)
            except KeyError:
                assert call_id not in self.started or self.tracker.get(call_id) is None
                return False

        if self.portal.call(approve):
            self.approved[call_id] = edit
        self._settle()

    @rule(call_id=calls)
    def deny(self, call_id: str) -> None:
        def deny() -> None:
            with suppress(KeyError):
                self.control.deny(call_id, "no")

        self.portal.call(deny)
        self._settle()

    @rule(call_id=calls | streaming)
    def cancel(self, call_id: str) -> None:
        self.portal.call(self.control.cancel, call_id, "model test")
        self._settle()

    @rule()
    def deadline(self) -> None:
        turn = link_of(self.control).turn
        if turn is not None:
            self.portal.call(turn._expired)  # what the clock's scope does when it passes
            self._settle()

    @precondition(lambda self: self.closed_at is None and len(self.lab.starts) >= 2)
    @rule()
    def close(self) -> None:
        self.closed_at = len(self.lab.starts)
        self.portal.call(self.tracker.aclose)
        self._settle()

    # -- the tools and the listener -----------------------------------------------------

    @rule(call_id=calls, fail=st.booleans())
    def finish_tool(self, call_id: str, fail: bool) -> None:
        with self.lab.lock:
            gate = self.lab.gates.get(call_id)
        if gate is None or gate.is_set():
            return
        if fail:
            self.lab.faults.add(call_id)
        with self._thread_done(call_id):
            gate.set()

    @rule(faulty=st.booleans())
    def listener_fault(self, faulty: bool) -> None:
        self.listener.faulty = faulty

    @contextmanager
    def _thread_done(self, call_id: str) -> Iterator[None]:
        """Release a tool's thread and wait until the tool has returned."""
        with self.lab.lock:
            left = self.lab.left.setdefault(call_id, threading.Event())
        yield
        assert left.wait(DEADLINE)
        self._settle()

    # -- invariants ---------------------------------------------------------------------

    @invariant()
    def nothing_runs_that_must_not(self) -> None:
        with self.lab.lock:
            starts = list(self.lab.starts)
            peak = dict(self.lab.peak)
        ids = [call_id for call_id, *_ in starts]
        assert len(ids) == len(set(ids)), "a tool ran twice"
        assert peak.get("gated", 0) <= 1
        assert peak.get("eager", 0) <= 2
        if self.closed_at is not None:
            assert len(starts) == self.closed_at, "a tool started after the tracker closed"
        for call_id, name, n, ended_ok in starts:
            assert name == self.tool_of[call_id]
            if name == "gated":
                assert call_id in self.approved, "ran unapproved"
                assert ended_ok, "a gated tool ran before the turn ended ok"
                edit = self.approved[call_id]
                assert n == (self.n_of[call_id] if edit is None else edit)
            else:
                assert n == self.n_of[call_id]

    @invariant()
    def notes_agree_with_what_ran(self) -> None:
        ran = {call_id for call_id, *_ in self.lab.starts}
        notes = self.portal.call(self.control.notes)
        assert set(notes) <= ran
        assert set(notes) <= {i for i, edit in self.approved.items() if edit is not None}

    @invariant()
    def the_runners_tables_stay_bounded(self) -> None:
        link = link_of(self.control)
        turn = link.turn
        if turn is None:
            return
        sizes = self.portal.call(turn.sizes)  # type: ignore[attr-defined]
        unfinished = sum(
            1 for call in self.portal.call(self.tracker.list) if call.status is Status.RUNNING
        )
        # an abandoned call stays held until its thread's notice reaches the loop: only
        # calls whose tool started and whose call has ended can be held that way
        ended = {
            call.id for call in self.portal.call(self.tracker.list) if call.status is Status.ERROR
        }
        abandoned = sum(1 for call_id, *_ in self.lab.starts if call_id in ended)
        assert sizes["calls"] <= unfinished + abandoned
        assert sizes["requests"] <= unfinished
        assert link.requests.unread() <= unfinished

    def teardown(self) -> None:
        # End the turn, decide nothing more, release every thread: the run must return,
        # and every call must have ended with a reason.
        self._write("write_end", True)

        def deny_all() -> None:
            turn = link_of(self.control).turn
            if turn is not None:
                for request in turn.awaiting():
                    self.control.deny(request.call_id, "model teardown")

        self.portal.call(deny_all)
        with self.lab.lock:
            self.lab.released = True
            gates = list(self.lab.gates.values())
        for gate in gates:
            gate.set()
        calls = self.future.result(timeout=DEADLINE)
        for call in calls:
            assert call.status in (Status.DONE, Status.ERROR), call
            if call.status is Status.ERROR:
                assert call.error is not None
        self.portal.call(self.tracker.aclose)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_runner_model(backend: str) -> None:
    with start_blocking_portal(backend) as portal:
        RunnerModel.portal = portal
        test = RunnerModel.TestCase
        test.settings = settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        test().runTest()
