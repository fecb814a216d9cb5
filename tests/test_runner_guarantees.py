"""What the runner's table guarantees, one behaviour per test, on asyncio and trio.

Each test names the behaviour; most reproduce a defect found between two of the runner's
former pieces (issue 18): a tool that ran when it must not, a call stuck ``running``, a
slot given back while a thread still ran, memory kept for finished calls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import pytest

from _runner_helpers import call_events
from conftest import DEADLINE
from toolcall_tracker import (
    ApprovalDenied,
    CallCancelled,
    CallTimedOut,
    ClaimFailed,
    NotExecuted,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    run_tools,
    tool,
)
from toolcall_tracker.failures import CallFailure
from toolcall_tracker.runner import RunnerEvent, RunnerListener, RunnerSettings, RunnerState
from toolcall_tracker.runner._control import link_of
from toolcall_tracker.runner._guard import GuardOutcome

pytestmark = pytest.mark.anyio

S = RunnerState


def feed(tracker: ToolCallTracker, call_id: str, name: str, args: Any = None) -> None:
    for event in call_events(call_id, name, args):
        tracker.apply(event)


@asynccontextmanager
async def running(
    runner: ToolRunner, tracker: ToolCallTracker, **kwargs: Any
) -> AsyncIterator[list[list[ToolCall]]]:
    """``runner.run`` in a task; yields a list that gets its return value."""
    out: list[list[ToolCall]] = []

    async def go() -> None:
        out.append(await runner.run(tracker, **kwargs))

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await anyio.wait_all_tasks_blocked()
            yield out


def status(tracker: ToolCallTracker, call_id: str) -> Status | None:
    return tracker.status(call_id)


# -- a tool runs that must not ------------------------------------------------------------


async def test_an_async_predicate_answering_after_a_cut_off_never_asks_and_never_runs(
    anyio_backend: str,
) -> None:
    verdict = anyio.Event()
    ran: list[str] = []

    async def needs(call: Any) -> bool:
        await verdict.wait()
        return True

    def send(to: str) -> str:
        ran.append(to)
        return "sent"

    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    async with running(ToolRunner([tool(send, needs_approval=needs)]), tracker, control=control):
        feed(tracker, "m", "send", {"to": "bob"})
        await anyio.wait_all_tasks_blocked()
        tracker.write_end(False, "length")
        await anyio.wait_all_tasks_blocked()
        verdict.set()
    call = tracker.get("m")
    assert call is not None
    assert isinstance(call.error, NotExecuted)
    assert control.pending is None  # nothing for a later resume to run
    assert ran == []


@pytest.mark.parametrize("stage", ["streaming", "just_ready"])
async def test_cancel_before_the_runner_takes_a_call_up_prevents_the_run(
    anyio_backend: str, stage: str
) -> None:
    ran: list[int] = []

    async def work(n: int) -> int:
        ran.append(n)
        return n

    control, tracker = RunControl(), ToolCallTracker()
    async with running(ToolRunner([tool(work, eager=True)]), tracker, control=control):
        events = call_events("c", "work", {"n": 1})
        for event in events[:-1]:
            tracker.apply(event)
        if stage == "just_ready":
            tracker.apply(events[-1])  # ready; the runner has not run since
        assert control.cancel("c", "user stopped it") is True
        tracker.apply(events[-1])  # ignored when streaming: the call has ended
        tracker.write_end(True)
    call = tracker.get("c")
    assert call is not None
    assert isinstance(call.error, CallCancelled)
    assert call.error.reason == "user stopped it"
    assert call.error.tool_started is False
    assert ran == []


@pytest.mark.parametrize("where", ["approval", "slot"])
async def test_after_the_tracker_closes_a_waiting_call_never_runs_and_ends_with_a_reason(
    anyio_backend: str, where: str
) -> None:
    ran: list[str] = []
    hold = anyio.Event()

    async def blocker() -> str:
        await hold.wait()
        return "b"

    async def act(n: str) -> str:
        ran.append(n)
        return n

    tools = [
        tool(blocker, eager=True),
        tool(act, eager=True, needs_approval=where == "approval"),
    ]
    control, tracker = RunControl(), ToolCallTracker()
    runner = ToolRunner(tools, max_concurrency=1 if where == "slot" else None)
    async with running(runner, tracker, control=control):
        feed(tracker, "b", "blocker")
        feed(tracker, "x", "act", {"n": "x"})
        tracker.write_end(True)
        await anyio.wait_all_tasks_blocked()
        expected = S.AWAITING_APPROVAL if where == "approval" else S.WAITING_SLOT
        assert control.state("x") is expected
        await tracker.aclose()
        await anyio.wait_all_tasks_blocked()
        assert control.approve("x") is False  # too late: it ended when the tracker closed
        hold.set()
    call = tracker.get("x")
    assert call is not None
    assert call.status is Status.ERROR
    assert isinstance(call.error, CallCancelled)
    assert call.error.reason == "tracker_closed"
    assert ran == []


async def test_a_sequential_sync_tool_keeps_its_slot_until_its_thread_really_ends(
    anyio_backend: str,
) -> None:
    release = threading.Event()
    live, peak = [0], [0]
    lock = threading.Lock()

    def step(n: int) -> int:
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        try:
            if n == 0:
                release.wait(DEADLINE)  # overruns its timeout: abandoned
            return n
        finally:
            with lock:
                live[0] -= 1

    runner = ToolRunner([tool(step, eager=True, sequential=True, timeout=0.05)])
    control, tracker = RunControl(), ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, _from([*call_events("a", "step", {"n": 0})]))
            done = await runner.run(tracker, control=control)  # returns: never waits for it
    assert {c.id: type(c.error) for c in done} == {"a": CallTimedOut}
    assert control.state("a") is S.ABANDONED  # reported as still running
    # A second turn of the same runner: its call waits for the abandoned thread's slot.
    tracker2, control2 = ToolCallTracker(), RunControl()
    async with running(runner, tracker2, control=control2):
        feed(tracker2, "b", "step", {"n": 1})
        tracker2.write_end(True)
        await anyio.wait_all_tasks_blocked()
        assert control2.state("b") is S.WAITING_SLOT
        release.set()  # the abandoned thread ends; its slot goes to b
    assert status(tracker2, "b") is Status.DONE
    assert peak[0] == 1


async def _from(events: list[Any]) -> AsyncIterator[Any]:
    for event in [*events, {"type": "end"}]:
        yield event


@pytest.mark.parametrize("backend_threads", [3])
async def test_sync_tools_run_on_a_bounded_pool_not_on_anyios_default_limiter(
    anyio_backend: str, backend_threads: int
) -> None:
    release = threading.Event()
    live, peak = [0], [0]
    lock = threading.Lock()
    borrowed: list[float] = []
    all_in = threading.Event()

    def work(n: int) -> int:
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
            if live[0] == backend_threads:
                all_in.set()
        release.wait(DEADLINE)
        with lock:
            live[0] -= 1
        return n

    runner = ToolRunner([tool(work, eager=True)], max_threads=backend_threads)
    tracker = ToolCallTracker()
    async with running(runner, tracker):
        for i in range(12):
            feed(tracker, f"c{i}", "work", {"n": i})
        tracker.write_end(True)
        await anyio.to_thread.run_sync(all_in.wait, DEADLINE)  # the app's own to_thread
        borrowed.append(anyio.to_thread.current_default_thread_limiter().borrowed_tokens)
        release.set()
    assert peak[0] == backend_threads
    assert borrowed == [0]  # the tools' threads borrow nothing from anyio's limiter
    assert all(c.status is Status.DONE for c in tracker.list())


def test_max_threads_has_one_default_and_must_be_positive() -> None:
    assert ToolRunner([]).options.max_threads == RunnerSettings().max_threads == 40
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_threads"):
            ToolRunner([], max_threads=bad)  # type: ignore[arg-type]
    options = ToolRunner([], eager=True, max_concurrency=3).options
    assert (options.eager, options.max_concurrency) == (True, 3)
    with pytest.raises(AttributeError):
        options.eager = False  # type: ignore[misc]


# -- memory and copies --------------------------------------------------------------------


async def test_unread_approval_requests_are_dropped_once_decided(anyio_backend: str) -> None:
    async def act(n: int) -> int:  # async: wait_all_tasks_blocked sees it finish
        return n

    control, tracker = RunControl(), ToolCallTracker()
    runner = ToolRunner([tool(act, eager=True, needs_approval=True)])
    sizes: list[dict[str, int]] = []
    async with running(runner, tracker, control=control):
        feed(tracker, "c0", "act", {"n": 0})
        await anyio.wait_all_tasks_blocked()
        requests = control.approval_requests()
        first = await requests.__anext__()  # subscribed; never reads again
        assert control.approve("c0")
        for i in range(1, 50):
            feed(tracker, f"c{i}", "act", {"n": i})
            await anyio.wait_all_tasks_blocked()
            assert control.approve(f"c{i}")
        await anyio.wait_all_tasks_blocked()
        link = link_of(control)
        sizes.append({"unread": link.requests.unread(), **link.turn.sizes()})  # type: ignore[union-attr]
        tracker.write_end(True)
        await requests.aclose()
    assert first.call_id == "c0"
    assert sizes == [{"unread": 0, "calls": 0, "queue": 0, "requests": 0}]


async def test_progress_of_one_call_is_buffered_for_that_call_only(anyio_backend: str) -> None:
    async def chatty(n: int) -> AsyncIterator[int]:
        for i in range(3000):
            yield i

    async def quiet(n: int) -> AsyncIterator[int]:
        for i in range(3):
            yield i

    control, tracker = RunControl(), ToolCallTracker()
    runner = ToolRunner([tool(chatty, eager=True), tool(quiet, eager=True)])
    got: list[int] = []
    async with running(runner, tracker, control=control):
        updates = control.progress("q")
        reader = updates.__aiter__()

        async def read() -> None:
            async for update in reader:
                got.append(update.value)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            feed(tracker, "q", "quiet", {"n": 1})
            feed(tracker, "c", "chatty", {"n": 1})
            tracker.write_end(True)
    assert got == [0, 1, 2]


async def test_requests_and_tools_get_their_own_copies_of_arguments(anyio_backend: str) -> None:
    seen: list[dict[str, Any]] = []

    def act(meta: dict[str, Any]) -> str:
        meta["secret"] = "mutated by the tool"
        seen.append(meta)
        return "ok"

    control, tracker = RunControl(), ToolCallTracker()
    runner = ToolRunner([tool(act, eager=True, needs_approval=True)])
    async with running(runner, tracker, control=control):
        feed(tracker, "x", "act", {"meta": {"card": "4111"}})
        await anyio.wait_all_tasks_blocked()
        request = link_of(control).turn.awaiting()[0]  # type: ignore[union-attr]
        request.arguments["meta"]["card"] = "redacted by the UI"
        edited = {"meta": {"card": "edited"}}
        assert control.approve("x", edited)
        edited["meta"]["card"] = "changed after approving"
        tracker.write_end(True)
    call = tracker.get("x")
    assert call is not None
    assert call.args == {"meta": {"card": "4111"}}
    assert seen == [{"card": "edited", "secret": "mutated by the tool"}]
    assert control.edited == {"x": {"meta": {"card": "edited"}}}
    assert "edited" in control.notes()["x"]


@pytest.mark.parametrize("fate", ["cut_off", "cancelled"])
async def test_notes_say_it_ran_only_when_it_really_ran(anyio_backend: str, fate: str) -> None:
    def act(n: int) -> int:
        return n

    control, tracker = RunControl(), ToolCallTracker()
    runner = ToolRunner([tool(act, needs_approval=True)])  # gated
    async with running(runner, tracker, control=control):
        feed(tracker, "x", "act", {"n": 1})
        await anyio.wait_all_tasks_blocked()
        assert control.approve("x", {"n": 2})
        assert control.state("x") is S.WAITING_GATE
        if fate == "cancelled":
            assert control.cancel("x")
            tracker.write_end(True)
        else:
            tracker.write_end(False, "length")
    assert control.edited == {"x": {"n": 2}}
    assert control.notes() == {}


async def test_a_deferred_approval_is_not_denied_by_the_runs_timeout(anyio_backend: str) -> None:
    async def slow() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    def act(n: int) -> int:
        return n

    control, tracker = RunControl(defer_approvals=True), ToolCallTracker()
    runner = ToolRunner([tool(slow, eager=True), tool(act, needs_approval=True)], timeout=0.05)
    feed(tracker, "s", "slow")
    feed(tracker, "x", "act", {"n": 1})
    tracker.write_end(True)
    with anyio.fail_after(DEADLINE):
        await runner.run(tracker, control=control)
    assert isinstance(tracker.get("s").error, CallTimedOut)  # type: ignore[union-attr]
    assert status(tracker, "x") is Status.RUNNING
    assert control.pending is not None
    assert [call.call_id for call in control.pending.calls] == ["x"]


# -- the API ------------------------------------------------------------------------------


async def test_approving_an_id_that_was_never_a_call_raises_and_a_lost_race_is_false(
    anyio_backend: str,
) -> None:
    def act(n: int) -> int:
        return n

    control, tracker = RunControl(), ToolCallTracker()
    async with running(ToolRunner([tool(act, needs_approval=True)]), tracker, control=control):
        feed(tracker, "x", "act", {"n": 1})
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(KeyError, match="no call of this run"):
            control.approve("nope")
        request = link_of(control).turn.awaiting()[0]  # type: ignore[union-attr]
        assert control.decide(request.deny("not today")) is True
        assert control.decide(request.approve()) is False  # decided already: a lost race
        tracker.write_end(True)
    error = tracker.get("x").error  # type: ignore[union-attr]
    assert isinstance(error, ApprovalDenied)
    assert error.reason == "not today"


async def test_run_tools_takes_a_control_and_a_deadline(anyio_backend: str) -> None:
    def act(n: int) -> int:
        return n

    control, tracker = RunControl(), ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:

            async def decide() -> None:
                async for request in control.approval_requests():
                    control.decide(request.approve())

            tg.start_soon(decide)
            tg.start_soon(tracker.consume, _from(call_events("x", "act", {"n": 4})))
            calls = await run_tools(
                tracker,
                [tool(act, needs_approval=True)],
                control=control,
                approval_secret="a secret long enough",
                deadline=DEADLINE,
            )
    assert [(c.id, c.result) for c in calls] == [("x", 4)]


async def test_a_deadline_bounds_a_stream_that_never_ends(anyio_backend: str) -> None:
    async def act(n: int) -> int:
        await anyio.sleep_forever()
        return n  # pragma: no cover

    tracker = ToolCallTracker()
    runner = ToolRunner([tool(act, eager=True)])
    with anyio.fail_after(DEADLINE):
        feed(tracker, "x", "act", {"n": 1})
        tracker.write_start("y", "act")  # streams forever; nobody ends the turn
        calls = {c.id: c for c in await runner.run(tracker, deadline=0.05)}
    for call_id in ("x", "y"):
        error = calls[call_id].error
        assert isinstance(error, CallTimedOut), call_id
        assert error.scope == "run"
    assert calls["x"].error.tool_started is True  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="deadline"):
        await runner.run(ToolCallTracker(), deadline=0)


# -- the store guard seam -----------------------------------------------------------------


class Guard:
    def __init__(
        self,
        claim: Callable[[ToolCall], Awaitable[GuardOutcome | None]],
        record_raises: bool = False,
    ) -> None:
        self._claim = claim
        self._record_raises = record_raises
        self.recorded: list[tuple[str, Any, CallFailure | None]] = []

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        return await self._claim(call)

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        if self._record_raises:
            raise OSError("store unreachable")
        self.recorded.append((call.id, result, failure))


class Log(RunnerListener):
    def __init__(self, raises: bool = False) -> None:
        self.seen: list[tuple[str, RunnerState, RunnerState, RunnerEvent]] = []
        self.raises = raises

    def transition(
        self, call_id: str, before: RunnerState, after: RunnerState, event: RunnerEvent
    ) -> None:
        self.seen.append((call_id, before, after, event))
        if self.raises:
            raise RuntimeError("a broken journal")


async def _guarded(guard: Guard, log: Log) -> tuple[ToolCall, list[int]]:
    ran: list[int] = []

    async def act(n: int) -> int:
        ran.append(n)
        return n * 10

    tracker = ToolCallTracker()
    feed(tracker, "x", "act", {"n": 1})
    tracker.write_end(True)
    with anyio.fail_after(DEADLINE):
        await ToolRunner([act]).run(tracker, listener=log, _guard=guard)
    call = tracker.get("x")
    assert call is not None
    return call, ran


async def test_a_claim_that_raises_fails_the_call_and_nothing_runs(anyio_backend: str) -> None:
    async def claim(call: ToolCall) -> GuardOutcome | None:
        raise OSError("store down")

    call, ran = await _guarded(Guard(claim), Log())
    assert isinstance(call.error, ClaimFailed)
    assert call.error.exception == "OSError"
    assert ran == []


async def test_a_claim_with_an_outcome_finishes_the_call_without_running(
    anyio_backend: str,
) -> None:
    async def claim(call: ToolCall) -> GuardOutcome | None:
        return GuardOutcome(result="from an earlier run")

    guard, log = Guard(claim), Log()
    call, ran = await _guarded(guard, log)
    assert (call.status, call.result, ran) == (Status.DONE, "from an earlier run", [])
    assert log.seen[-1][1:] == (S.CLAIMING, S.NOT_EXECUTED, RunnerEvent.CLAIM_REFUSED)
    assert guard.recorded == []


async def test_a_failed_record_keeps_the_real_result_and_reports_the_call_in_doubt(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def claim(call: ToolCall) -> GuardOutcome | None:
        return None

    log = Log(raises=True)  # and a listener that raises changes nothing
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker.runner"):
        call, ran = await _guarded(Guard(claim, record_raises=True), log)
    assert (call.status, call.result, ran) == (Status.DONE, 10, [1])
    assert log.seen[-1][1:] == (S.RECORDING, S.IN_DOUBT, RunnerEvent.RECORD_FAILED)
    assert any("in doubt" in record.getMessage() for record in caplog.records)


async def test_a_recorded_outcome_is_the_tools_own(anyio_backend: str) -> None:
    async def claim(call: ToolCall) -> GuardOutcome | None:
        return None

    guard = Guard(claim)
    call, _ = await _guarded(guard, Log())
    assert guard.recorded == [("x", 10, None)]
    assert call.result == 10
