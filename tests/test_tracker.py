"""The async ToolCallTracker, on asyncio and on trio.

Every async test is marked ``anyio`` (the ``anyio_backend`` fixture in conftest runs it on
both backends) and bounded by ``anyio.fail_after(DEADLINE)``. Synchronisation is by
ordering only: ``anyio.Event``, memory streams and ``TaskGroup.start`` (a waiter task reports
``started`` right before it blocks in ``wait_*``, so the waiter is registered by the time
the test goes on). No sleep stands in for synchronisation.
"""

from __future__ import annotations

import math
import threading
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from conftest import DEADLINE
from toolcall_tracker import (
    End,
    IgnoreReason,
    IncompleteArguments,
    InvalidArguments,
    InvalidEvent,
    Start,
    ToolCall,
    ToolCallFailed,
    ToolCallTracker,
    ToolCallTrackerError,
    TrackerClosed,
    UnknownToolCall,
)
from toolcall_tracker.timeline import CallTimeline

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def call_events(call_id: str, text: str = '{"q": 1}', name: str = "tool") -> list[dict[str, Any]]:
    """start, the text in two deltas, ready."""
    half = len(text) // 2
    return [
        {"type": "start", "id": call_id, "name": name},
        {"type": "delta", "id": call_id, "argsTextDelta": text[:half]},
        {"type": "delta", "id": call_id, "argsTextDelta": text[half:]},
        {"type": "ready", "id": call_id},
    ]


def apply_all(tracker: ToolCallTracker, events: Iterable[Any]) -> None:
    for event in events:
        tracker.apply(event)


def channel() -> tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]:
    """A source the test feeds by hand: closing the send side exhausts it."""
    return anyio.create_memory_object_stream[Any](math.inf)


class Outcome:
    """What a waiter task got: a value, or an exception."""

    def __init__(self) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False

    def get(self) -> Any:
        assert self.finished, "the waiter is still waiting"
        assert self.error is None, repr(self.error)
        return self.value


async def waiter(
    tracker: ToolCallTracker,
    method: str,
    call_id: str | None,
    outcome: Outcome,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Call ``tracker.<method>(call_id)``; report ``started`` just before it blocks."""
    task_status.started()
    try:
        if call_id is None:
            outcome.value = await getattr(tracker, method)()
        else:
            outcome.value = await getattr(tracker, method)(call_id)
    except ToolCallTrackerError as exc:
        outcome.error = exc
    finally:
        outcome.finished = True


async def collect_ready(
    tracker: ToolCallTracker,
    into: list[ToolCall],
    done: Outcome,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    iterator = tracker.ready_calls()
    task_status.started()
    async for call in iterator:
        into.append(call)
    done.finished = True


async def start_waiter(
    tg: anyio.abc.TaskGroup, tracker: ToolCallTracker, method: str, call_id: str | None = None
) -> Outcome:
    outcome = Outcome()
    await tg.start(waiter, tracker, method, call_id, outcome)
    assert not outcome.finished
    return outcome


class Source:
    """An async generator source over ``events`` that records whether it was finalised.

    ``gate_after`` (an index) makes it wait for ``gate`` before yielding that event;
    ``blocked`` is set when it starts waiting. ``raise_at_end`` raises after the events.
    """

    def __init__(
        self,
        events: list[Any],
        *,
        gate_after: int | None = None,
        raise_at_end: BaseException | None = None,
    ) -> None:
        self.events = events
        self.gate_after = gate_after
        self.raise_at_end = raise_at_end
        self.gate = anyio.Event()
        self.blocked = anyio.Event()
        self.yielded = 0
        self.finalised = False

    async def __call__(self) -> AsyncIterator[Any]:
        try:
            for index, event in enumerate(self.events):
                if index == self.gate_after:
                    self.blocked.set()
                    await self.gate.wait()
                self.yielded += 1
                yield event
            if self.gate_after is not None and self.gate_after >= len(self.events):
                self.blocked.set()
                await self.gate.wait()
            if self.raise_at_end is not None:
                raise self.raise_at_end
        finally:
            self.finalised = True


# --------------------------------------------------------------------------------------
# Waiting: before start, after finish, on failure
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_wait_ready_and_wait_done_before_start() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        send, receive = channel()
        async with receive, anyio.create_task_group() as tg:
            ready = await start_waiter(tg, tracker, "wait_ready", "t1")
            done = await start_waiter(tg, tracker, "wait_done", "t1")
            tg.start_soon(tracker.consume, receive)
            for event in call_events("t1", '{"q": "hi"}'):
                await send.send(event)
            # wait_done is still waiting: the call is only running.
            call = await tracker.wait_ready("t1")
            assert call.status == "running"
            assert not done.finished
            tracker.apply({"type": "result", "id": "t1", "result": [1, 2]})
            await send.aclose()
        # wait_ready returns a snapshot taken when the waiter runs: running or later.
        assert ready.get().status in ("running", "done")
        assert ready.get().args == {"q": "hi"}
        assert ready.get().args_text == '{"q": "hi"}'
        assert done.get().status == "done"
        assert done.get().result == [1, 2]
        assert done.get().args == {"q": "hi"}


@pytest.mark.anyio
async def test_waiting_after_finish_returns_at_once() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        apply_all(tracker, call_events("t1"))
        tracker.apply({"type": "result", "id": "t1", "result": "ok"})
        ready = await tracker.wait_ready("t1")
        done = await tracker.wait_done("t1")
        assert ready.status == "done"  # "running or later"
        assert done == ready == tracker.get("t1")
        assert done.result == "ok"


@pytest.mark.anyio
async def test_many_waiters_on_one_id_are_all_released() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            outcomes = [await start_waiter(tg, tracker, "wait_ready", "t1") for _ in range(5)]
            apply_all(tracker, call_events("t1"))
        assert [o.get().status for o in outcomes] == ["running"] * 5


@pytest.mark.anyio
async def test_wait_ready_fails_on_invalid_arguments() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            before = await start_waiter(tg, tracker, "wait_ready", "t1")
            done = await start_waiter(tg, tracker, "wait_done", "t1")
            apply_all(tracker, call_events("t1", '{"q": NaN}'))
        for outcome in (before, done):
            assert isinstance(outcome.error, ToolCallFailed)
            assert outcome.error.call.id == "t1"
            assert outcome.error.call.status == "error"
            assert isinstance(outcome.error.error, InvalidArguments)
            assert outcome.error.error is outcome.error.call.error
            assert "t1" in str(outcome.error)
            assert "NaN" in str(outcome.error)
        # Waiting after the failure raises the same way.
        with pytest.raises(ToolCallFailed) as info:
            await tracker.wait_ready("t1")
        assert isinstance(info.value.error, InvalidArguments)


@pytest.mark.anyio
async def test_wait_fails_on_error_event() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            pending_ready = await start_waiter(tg, tracker, "wait_ready", "p")
            running_done = await start_waiter(tg, tracker, "wait_done", "r")
            tracker.apply({"type": "start", "id": "p", "name": "a"})
            tracker.apply({"type": "error", "id": "p", "error": {"code": 7}})
            apply_all(tracker, call_events("r"))
            assert (await tracker.wait_ready("r")).status == "running"
            tracker.apply({"type": "error", "id": "r", "error": "tool crashed"})
        assert isinstance(pending_ready.error, ToolCallFailed)
        assert pending_ready.error.error == {"code": 7}
        assert pending_ready.error.call.status == "error"
        assert isinstance(running_done.error, ToolCallFailed)
        assert running_done.error.error == "tool crashed"
        assert running_done.error.call.args == {"q": 1}
        # Its arguments did parse before the tool failed, so wait_ready still returns it
        # (the issue: "raises ToolCallFailed if the call failed before its arguments were
        # parsed"); wait_done raises.
        after = await tracker.wait_ready("r")
        assert after.status == "error"
        assert after.args == {"q": 1}
        assert after.error == "tool crashed"
        with pytest.raises(ToolCallFailed, match="tool crashed"):
            await tracker.wait_done("r")


@pytest.mark.anyio
async def test_cancelled_waiter_does_not_disturb_other_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await tracker.wait_ready("t1")
        assert scope.cancelled_caught
        async with anyio.create_task_group() as tg:
            outcome = await start_waiter(tg, tracker, "wait_ready", "t1")
            apply_all(tracker, call_events("t1"))
        assert outcome.get().status == "running"


# --------------------------------------------------------------------------------------
# The end of the source
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_source_end_fails_pending_calls_and_unknown_ids() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source(
            [
                *call_events("running"),
                {"type": "start", "id": "pending", "name": "slow"},
                {"type": "delta", "id": "pending", "argsTextDelta": '{"a":'},
            ],
            gate_after=5,  # hold the source open until the waiters are in place
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            await source.blocked.wait()
            pending_ready = await start_waiter(tg, tracker, "wait_ready", "pending")
            pending_done = await start_waiter(tg, tracker, "wait_done", "pending")
            ghost_ready = await start_waiter(tg, tracker, "wait_ready", "ghost")
            ghost_done = await start_waiter(tg, tracker, "wait_done", "ghost")
            running_done = await start_waiter(tg, tracker, "wait_done", "running")
            end = await start_waiter(tg, tracker, "wait_end")
            source.gate.set()
            await tracker.wait_end()
            # The running call is not affected by the end: its result comes later.
            assert not running_done.finished
            tracker.apply({"type": "result", "id": "running", "result": 42})

        assert end.get() == End(ok=True, reason="source exhausted")
        assert tracker.end == End(ok=True, reason="source exhausted")
        for outcome in (pending_ready, pending_done):
            assert isinstance(outcome.error, ToolCallFailed)
            assert outcome.error.call.id == "pending"
            assert isinstance(outcome.error.error, IncompleteArguments)
            assert outcome.error.call.args_text == '{"a":'
        for outcome in (ghost_ready, ghost_done):
            assert isinstance(outcome.error, UnknownToolCall)
            assert isinstance(outcome.error, LookupError)
            assert outcome.error.id == "ghost"
            assert "'ghost'" in str(outcome.error)
        assert running_done.get().status == "done"
        assert running_done.get().result == 42
        assert source.finalised
        # Waiting after the end behaves the same.
        with pytest.raises(UnknownToolCall, match="'other'") as raised:
            await tracker.wait_done("other")
        # The message says what happened and names the fix.
        assert "before a call with this id started" in str(raised.value)
        assert "tracker.ready_calls()" in str(raised.value)
        with pytest.raises(ToolCallFailed):
            await tracker.wait_ready("pending")


@pytest.mark.anyio
async def test_end_event_from_source_ok_false() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source(
            [
                *call_events("done"),
                {"type": "start", "id": "cut", "name": "x"},
                {"type": "end", "ok": False, "reason": "length"},
                # After the end: the model can say nothing more.
                {"type": "delta", "id": "cut", "argsTextDelta": "{}"},
                {"type": "ready", "id": "cut"},
                {"type": "start", "id": "late", "name": "x"},
                {"type": "end", "ok": True},
            ],
            gate_after=6,  # after the end event, before the late events
        )
        ignored: list[tuple[Any, IgnoreReason]] = []
        tracker = ToolCallTracker(on_ignored=lambda e, r: ignored.append((e, r)))
        async with anyio.create_task_group() as tg:
            end = await start_waiter(tg, tracker, "wait_end")
            cut = await start_waiter(tg, tracker, "wait_ready", "cut")
            tg.start_soon(tracker.consume, source())
            await source.blocked.wait()
            # The end arrived while the source is still open.
            assert tracker.end == End(ok=False, reason="length")
            assert (await tracker.wait_end()).ok is False
            source.gate.set()
        assert end.get() == End(ok=False, reason="length")
        assert tracker.end == End(ok=False, reason="length")  # not replaced at exhaustion
        assert isinstance(cut.error, ToolCallFailed)
        assert isinstance(cut.error.error, IncompleteArguments)
        assert cut.error.error.reason == "length"
        assert tracker.get("late") is None
        assert [r for _, r in ignored] == [IgnoreReason.TURN_ENDED] * 4
        assert (await tracker.wait_ready("done")).status == "running"


@pytest.mark.anyio
async def test_wait_end_returns_at_once_when_ended() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        assert tracker.end is None
        tracker.apply(End(reason="stop"))
        assert await tracker.wait_end() == End(ok=True, reason="stop")


@pytest.mark.anyio
async def test_source_exception_propagates_and_releases_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        boom = RuntimeError("the model connection dropped")
        source = Source(
            [*call_events("ok"), {"type": "start", "id": "p", "name": "x"}], raise_at_end=boom
        )
        async with anyio.create_task_group() as tg:
            p_ready = await start_waiter(tg, tracker, "wait_ready", "p")
            ghost = await start_waiter(tg, tracker, "wait_ready", "ghost")
            end = await start_waiter(tg, tracker, "wait_end")
            with pytest.raises(RuntimeError, match="connection dropped") as info:
                await tracker.consume(source())
            assert info.value is boom
        assert source.finalised
        assert end.get().ok is False
        assert "RuntimeError" in (end.get().reason or "")
        assert "connection dropped" in (end.get().reason or "")
        assert isinstance(p_ready.error, ToolCallFailed)
        assert isinstance(p_ready.error.error, IncompleteArguments)
        assert isinstance(ghost.error, UnknownToolCall)
        assert tracker.get("ok") is not None
        assert tracker.get("ok").status == "running"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_source_exception_before_any_event() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source([], raise_at_end=ValueError("no stream"))
        with pytest.raises(ValueError, match="no stream"):
            await tracker.consume(source())
        assert tracker.end is not None
        assert tracker.end.ok is False
        with pytest.raises(UnknownToolCall):
            await tracker.wait_ready("t1")


@pytest.mark.anyio
async def test_cancelling_consume_ends_the_turn_and_releases_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source(
            [*call_events("r"), {"type": "start", "id": "p", "name": "x"}, *call_events("z")],
            gate_after=5,  # blocks forever: the gate is never set
        )
        async with anyio.create_task_group() as outer:
            p_ready = await start_waiter(outer, tracker, "wait_ready", "p")
            z_ready = await start_waiter(outer, tracker, "wait_ready", "z")
            r_done = await start_waiter(outer, tracker, "wait_done", "r")
            async with anyio.create_task_group() as inner:
                inner.start_soon(tracker.consume, source())
                await source.blocked.wait()
                inner.cancel_scope.cancel()
            assert tracker.end == End(ok=False, reason="cancelled")
            assert not r_done.finished  # running calls are not affected
            tracker.apply({"type": "result", "id": "r", "result": "late but fine"})
        assert source.finalised
        assert source.yielded == 5
        assert isinstance(p_ready.error, ToolCallFailed)
        assert isinstance(p_ready.error.error, IncompleteArguments)
        assert p_ready.error.error.reason == "cancelled"
        assert isinstance(z_ready.error, UnknownToolCall)
        assert r_done.get().result == "late but fine"


@pytest.mark.anyio
async def test_cancelling_consume_with_a_plain_async_iterable() -> None:
    class Plain:
        """An async iterable without aclose/close."""

        def __init__(self) -> None:
            self.blocked = anyio.Event()

        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> Any:
            self.blocked.set()
            await anyio.Event().wait()
            raise AssertionError("unreachable")

    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Plain()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source)
            await source.blocked.wait()
            tg.cancel_scope.cancel()
        assert tracker.end == End(ok=False, reason="cancelled")


# --------------------------------------------------------------------------------------
# Closing
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_close_releases_every_waiter_and_refuses_events() -> None:
    with anyio.fail_after(DEADLINE):
        ready_seen: list[ToolCall] = []
        async with anyio.create_task_group() as tg, ToolCallTracker() as tracker:
            apply_all(tracker, call_events("r"))
            tracker.apply({"type": "start", "id": "p", "name": "x"})
            r_done = await start_waiter(tg, tracker, "wait_done", "r")
            p_ready = await start_waiter(tg, tracker, "wait_ready", "p")
            ghost = await start_waiter(tg, tracker, "wait_ready", "ghost")
            ghost_done = await start_waiter(tg, tracker, "wait_done", "ghost")
            end = await start_waiter(tg, tracker, "wait_end")
            iterating = Outcome()
            await tg.start(collect_ready, tracker, ready_seen, iterating)
            assert not tracker.closed
            # __aexit__ closed the tracker.
        assert tracker.closed
        assert isinstance(r_done.error, TrackerClosed)
        assert isinstance(r_done.error, RuntimeError)
        assert "'r'" in str(r_done.error)
        assert isinstance(ghost.error, TrackerClosed)
        assert isinstance(ghost_done.error, TrackerClosed)
        # A call whose arguments never completed fails like at any end of the turn.
        assert isinstance(p_ready.error, ToolCallFailed)
        assert isinstance(p_ready.error.error, IncompleteArguments)
        assert end.get() == End(ok=False, reason="tracker closed")
        assert iterating.finished
        assert [c.id for c in ready_seen] == ["r"]

        with pytest.raises(TrackerClosed):
            tracker.apply({"type": "result", "id": "r", "result": 1})
        with pytest.raises(TrackerClosed):
            tracker.apply(Start(id="new", name="x"))
        with pytest.raises(TrackerClosed):
            await tracker.consume(Source([*call_events("x")])())
        with pytest.raises(TrackerClosed):
            await tracker.wait_done("r")
        with pytest.raises(TrackerClosed):
            await tracker.wait_ready("ghost")
        assert (await tracker.wait_ready("r")).status == "running"  # already satisfied
        assert [c.id for c in tracker.list()] == ["r", "p"]  # get/list still work
        assert tracker.get("r") is not None
        assert [c async for c in tracker.ready_calls()] == ready_seen
        await tracker.aclose()  # closing twice is harmless
        assert tracker.end == End(ok=False, reason="tracker closed")


@pytest.mark.anyio
async def test_aclose_after_normal_end_keeps_the_end() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        await tracker.consume(Source(call_events("a"))())
        await tracker.aclose()
        assert tracker.end == End(ok=True, reason="source exhausted")
        assert tracker.closed


@pytest.mark.anyio
async def test_close_while_consuming() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source(
            [
                {"type": "start", "id": "a", "name": "x"},
                {"type": "delta", "id": "a", "argsTextDelta": "{}"},
            ],
            gate_after=1,
        )
        consumed = Outcome()

        async def consume() -> None:
            try:
                await tracker.consume(source())
            except TrackerClosed as exc:
                consumed.error = exc
            consumed.finished = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await source.blocked.wait()  # the start was applied, the source is open
            await tracker.aclose()  # stops consume while it waits for the source
        # consume returned without waiting for another event, and closed its source.
        assert consumed.finished
        assert consumed.error is None
        assert not source.gate.is_set()
        assert source.finalised
        call = tracker.get("a")
        assert call is not None
        assert call.status == "error"
        assert isinstance(call.error, IncompleteArguments)
        assert call.args_text == ""


# --------------------------------------------------------------------------------------
# ready_calls
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_ready_calls_yields_each_ready_call_once_in_ready_order() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        # Two calls become ready before iteration begins, in the opposite order of start.
        tracker.apply({"type": "start", "id": "b", "name": "x"})
        apply_all(tracker, call_events("a"))
        apply_all(tracker, [{"type": "delta", "id": "b", "argsTextDelta": "[]"}])
        tracker.apply({"type": "ready", "id": "b"})
        tracker.apply({"type": "result", "id": "a", "result": 1})  # a is done already
        source = Source(
            [
                *call_events("c"),
                *call_events("bad", "{nope"),  # never ready: not yielded
                {"type": "ready", "id": "c"},  # duplicate: not yielded again
                {"type": "start", "id": "d", "name": "x"},  # pending forever
                *call_events("e"),
            ]
        )
        seen: list[ToolCall] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            async for call in tracker.ready_calls():
                seen.append(call)
        assert [c.id for c in seen] == ["a", "b", "c", "e"]
        # Snapshots taken when each became ready.
        assert all(c.status == "running" for c in seen)
        assert seen[0].result is None
        assert seen[1].args == []


@pytest.mark.anyio
async def test_ready_calls_started_late_yields_what_an_early_iterator_did() -> None:
    # The snapshot of a ready call that nobody has read yet is built when first read:
    # whatever the call did since (finished, failed), it is the call as it became ready,
    # as an iterator that was there all along saw it.
    with anyio.fail_after(DEADLINE):
        watched, unwatched = ToolCallTracker(), ToolCallTracker()
        early = watched.ready_calls()
        for tracker in (watched, unwatched):
            for call_id, outcome in [("ok", "result"), ("failed", "error"), ("runs", None)]:
                apply_all(tracker, call_events(call_id, '{"n": [1, 2]}'))
                if outcome is not None:
                    tracker.apply({"type": outcome, "id": call_id, outcome: {"v": call_id}})
            tracker.apply({"type": "end"})
        seen = [call async for call in early]
        late = [call async for call in unwatched.ready_calls()]
        assert late == seen
        assert [(c.id, c.status, c.args, c.result, c.error) for c in late] == [
            (call_id, "running", {"n": [1, 2]}, None, None) for call_id in ("ok", "failed", "runs")
        ]
        assert late[2] is unwatched.get("runs")  # still running: the machine's own snapshot
        assert [call async for call in unwatched.ready_calls()] == late  # built once


@pytest.mark.anyio
async def test_ready_calls_iterator_started_before_consume_sees_everything() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        seen: list[ToolCall] = []
        done = Outcome()
        async with anyio.create_task_group() as tg:
            await tg.start(collect_ready, tracker, seen, done)
            await tracker.consume(Source([*call_events("x"), *call_events("y")])())
        assert done.finished
        assert [c.id for c in seen] == ["x", "y"]


@pytest.mark.anyio
async def test_two_ready_iterators_are_independent() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        send, receive = channel()
        first: list[ToolCall] = []
        second: list[ToolCall] = []
        first_done, second_done = Outcome(), Outcome()
        async with receive, anyio.create_task_group() as tg:
            await tg.start(collect_ready, tracker, first, first_done)
            tg.start_soon(tracker.consume, receive)
            for event in call_events("one"):
                await send.send(event)
            await tracker.wait_ready("one")
            # The second iterator starts late and still sees "one".
            await tg.start(collect_ready, tracker, second, second_done)
            for event in call_events("two"):
                await send.send(event)
            await send.aclose()
        assert [c.id for c in first] == ["one", "two"]
        assert [c.id for c in second] == ["one", "two"]
        assert first == second


@pytest.mark.anyio
async def test_ready_calls_ends_at_end_event_while_source_still_open() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source([*call_events("a"), End(reason="stop")], gate_after=5)
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            seen = [call.id async for call in tracker.ready_calls()]
            assert seen == ["a"]
            assert not source.finalised  # the iteration ended before the source did
            source.gate.set()
        assert source.finalised


@pytest.mark.anyio
async def test_ready_calls_on_an_empty_turn_ends() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, Source([])())
            assert [c async for c in tracker.ready_calls()] == []
        assert tracker.end == End(ok=True, reason="source exhausted")


# --------------------------------------------------------------------------------------
# Tools start while the model is still streaming (proved by ordering)
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tool_starts_before_the_last_event_is_consumed() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        tool_started = anyio.Event()
        # The rest of the stream is held back until the first tool has started: if tools
        # only started after the stream ended, this test could not finish.
        source = Source([*call_events("first"), *call_events("second")], gate_after=4)
        source.gate = tool_started
        seen_at_tool_start: dict[str, Any] = {}

        async def tool(call: ToolCall) -> None:
            tracker.mark_tool_started(call.id)
            if call.id == "first":
                seen_at_tool_start["second"] = tracker.get("second")
                seen_at_tool_start["end"] = tracker.end
                seen_at_tool_start["yielded"] = source.yielded
                tool_started.set()
            tracker.mark_tool_finished(call.id)
            tracker.apply({"type": "result", "id": call.id, "result": call.args})

        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            async for call in tracker.ready_calls():
                tg.start_soon(tool, call)

        assert seen_at_tool_start == {"second": None, "end": None, "yielded": 4}
        assert [c.status for c in tracker.list()] == ["done", "done"]
        first, second = tracker.timeline("first"), tracker.timeline("second")
        assert first is not None
        assert second is not None
        assert first.tool_started is not None
        assert second.started is not None
        assert first.tool_started <= second.started


@pytest.mark.anyio
async def test_waiting_tool_starts_while_stream_continues() -> None:
    """The same with wait_ready: a tool task waiting on an id runs mid-stream."""
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        proceed = anyio.Event()
        source = Source([*call_events("a"), *call_events("b")], gate_after=4)
        source.gate = proceed

        async def tool() -> None:
            call = await tracker.wait_ready("a")
            assert call.status == "running"
            assert tracker.get("b") is None
            proceed.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(tool)
            tg.start_soon(tracker.consume, source())
        assert tracker.get("b") is not None


# --------------------------------------------------------------------------------------
# Malformed events from the source
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_invalid_event_raises_out_of_consume_after_releasing_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        source = Source(
            [
                {"type": "start", "id": "p", "name": "x"},
                {"type": "delta", "id": "p", "argsTextDelta": 5},
                *call_events("never"),
            ]
        )
        async with anyio.create_task_group() as tg:
            p_ready = await start_waiter(tg, tracker, "wait_ready", "p")
            never = await start_waiter(tg, tracker, "wait_ready", "never")
            with pytest.raises(InvalidEvent, match="argsTextDelta") as info:
                await tracker.consume(source())
            assert isinstance(info.value, ValueError)
        assert source.finalised
        assert source.yielded == 2
        assert tracker.end is not None
        assert tracker.end.ok is False
        assert "invalid event" in (tracker.end.reason or "")
        assert isinstance(p_ready.error, ToolCallFailed)
        assert isinstance(never.error, UnknownToolCall)


@pytest.mark.anyio
async def test_skip_invalid_reports_and_continues() -> None:
    with anyio.fail_after(DEADLINE):
        ignored: list[tuple[Any, IgnoreReason]] = []
        tracker = ToolCallTracker(skip_invalid=True, on_ignored=lambda e, r: ignored.append((e, r)))
        bad_fragment = {"type": "delta", "id": "a", "argsTextDelta": 5}
        not_a_mapping = ["garbage"]
        source = Source(
            [
                {"type": "start", "id": "a", "name": "x"},
                bad_fragment,
                not_a_mapping,
                {"type": "delta", "id": "a", "argsTextDelta": "[1]"},
                {"type": "ready", "id": "a"},
                {"type": "delta", "id": "ghost", "argsTextDelta": "x"},
            ]
        )
        await tracker.consume(source())
        assert tracker.end == End(ok=True, reason="source exhausted")
        call = await tracker.wait_ready("a")
        assert call.args == [1]
        assert [r for _, r in ignored] == [
            IgnoreReason.INVALID_EVENT,
            IgnoreReason.INVALID_EVENT,
            IgnoreReason.UNKNOWN_ID,
        ]
        assert ignored[0][0] is bad_fragment  # the raw input, since it cannot be parsed
        assert ignored[1][0] is not_a_mapping


@pytest.mark.anyio
async def test_consume_accepts_models_and_mappings_mixed() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        await tracker.consume(
            Source(
                [
                    Start(id="m", name="x"),
                    {"type": "delta", "id": "m", "args_text_delta": '{"k":'},
                    {"type": "delta", "id": "m", "argsTextDelta": " true}"},
                    {"type": "ready", "id": "m"},
                ]
            )()
        )
        assert (await tracker.wait_ready("m")).args == {"k": True}


# --------------------------------------------------------------------------------------
# No running event loop
# --------------------------------------------------------------------------------------


def feed_without_loop() -> ToolCallTracker:
    tracker = ToolCallTracker()
    apply_all(tracker, call_events("t1"))
    tracker.apply({"type": "start", "id": "t2", "name": "x"})
    tracker.apply({"type": "end", "reason": "stop"})
    return tracker


def test_apply_works_without_a_running_event_loop() -> None:
    with pytest.raises(RuntimeError):
        anyio.get_current_task()  # really no loop here
    tracker = feed_without_loop()
    call = tracker.get("t1")
    assert call is not None
    assert call.status == "running"
    assert [c.status for c in tracker.list()] == ["running", "error"]
    assert tracker.end == End(reason="stop")
    timeline = tracker.timeline("t1")
    assert timeline is not None
    assert timeline.ready is not None


@pytest.mark.anyio
async def test_tracker_fed_in_a_thread_without_loop_then_awaited() -> None:
    with anyio.fail_after(DEADLINE):
        thread_ids: list[int] = []

        def build() -> ToolCallTracker:
            thread_ids.append(threading.get_ident())
            return feed_without_loop()

        tracker = await anyio.to_thread.run_sync(build)
        assert thread_ids[0] != threading.get_ident()
        assert (await tracker.wait_ready("t1")).args == {"q": 1}
        with pytest.raises(ToolCallFailed):
            await tracker.wait_ready("t2")
        assert await tracker.wait_end() == End(reason="stop")
        assert [c.id async for c in tracker.ready_calls()] == ["t1"]


@pytest.mark.anyio
async def test_apply_from_worker_thread_via_from_thread() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()

        def worker() -> None:
            for event in call_events("w"):
                anyio.from_thread.run_sync(tracker.apply, event)

        async with anyio.create_task_group() as tg:
            ready = await start_waiter(tg, tracker, "wait_ready", "w")
            await anyio.to_thread.run_sync(worker)
        assert ready.get().args == {"q": 1}


# --------------------------------------------------------------------------------------
# Timeline
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_timeline_fields_are_ordered() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        assert tracker.timeline("t1") is None
        tracker.mark_tool_started("unknown")  # ignored, no error
        tracker.mark_tool_finished("unknown")

        tracker.apply({"type": "start", "id": "t1", "name": "x"})
        t = tracker.timeline("t1")
        assert t is not None
        assert t.started is not None
        assert (t.ready, t.tool_started, t.tool_finished, t.finished) == (None,) * 4

        tracker.apply({"type": "delta", "id": "t1", "argsTextDelta": "{}"})
        tracker.apply({"type": "ready", "id": "t1"})
        tracker.mark_tool_started("t1")
        await anyio.lowlevel.checkpoint()
        tracker.mark_tool_finished("t1")
        tracker.apply({"type": "result", "id": "t1", "result": None})
        t = tracker.timeline("t1")
        assert isinstance(t, CallTimeline)
        assert t.started is not None
        assert t.ready is not None
        assert t.tool_started is not None
        assert t.tool_finished is not None
        assert t.finished is not None
        assert t.started <= t.ready <= t.tool_started <= t.tool_finished <= t.finished

        # A copy: changing it does not change the tracker's.
        t.started = -1.0
        again = tracker.timeline("t1")
        assert again is not None
        assert again.started != -1.0


def test_timeline_of_failed_calls() -> None:
    if True:
        tracker = ToolCallTracker()
        apply_all(tracker, call_events("bad", "{x"))  # arguments complete but invalid
        tracker.apply({"type": "start", "id": "cut", "name": "x"})
        apply_all(tracker, call_events("failed"))
        tracker.apply({"type": "error", "id": "failed", "error": "no"})
        tracker.apply(End())
        bad, cut, failed = (tracker.timeline(i) for i in ("bad", "cut", "failed"))
        assert bad is not None
        assert bad.started is not None
        assert bad.ready is not None
        assert bad.finished is not None
        assert bad.started <= bad.ready <= bad.finished
        assert cut is not None
        assert cut.ready is None  # its arguments never completed
        assert cut.started is not None
        assert cut.finished is not None
        assert cut.started <= cut.finished
        assert failed is not None
        assert failed.ready is not None
        assert failed.finished is not None
        assert failed.ready <= failed.finished
        assert failed.tool_started is None


@pytest.mark.anyio
async def test_a_runner_started_just_before_consume_runs_while_a_source_never_blocks() -> None:
    # The source never awaits anything, and the runner task has not even started when
    # consume begins: only consume's own yield after each call becomes ready lets it run.
    # (Trio may run the two tasks of a batch in either order, so one yield alone does not
    # promise the runner goes first; thirty make missing every one as likely as 2**-30.)
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        events: list[dict[str, Any]] = []
        for n in range(30):
            events += [
                {"type": "start", "id": f"c{n}", "name": "x"},
                {"type": "delta", "id": f"c{n}", "argsTextDelta": "{}"},
                {"type": "ready", "id": f"c{n}"},
            ]
        pulled: list[int] = []
        seen: dict[str, int] = {}

        async def source() -> AsyncIterator[dict[str, Any]]:
            for index, event in enumerate(events):
                pulled.append(index)
                yield event

        async def runner() -> None:
            async for call in tracker.ready_calls():
                seen[call.id] = len(pulled)

        async with anyio.create_task_group() as tg:
            tg.start_soon(runner)
            await tracker.consume(source())
        assert len(seen) == 30
        assert seen["c0"] < len(events)  # the runner ran while the stream was going on
