"""The tool runner: concurrency by ordering, eager/gated, failures, cancellation, timeline.

Every concurrency claim is proven by ordering (events one task sets and another awaits),
never by wall-clock sleeps: if the claimed overlap did not happen, the test deadlocks and
``anyio.fail_after`` fails it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest
from pydantic import BaseModel

from _runner_helpers import by_id, call_events, from_list, snapshot
from conftest import DEADLINE
from toolcall_tracker import End, Status, ToolCallFailed, ToolCallTracker
from toolcall_tracker.failures import (
    CallCancelled,
    CallFailure,
    CallTimedOut,
    FieldError,
    NotExecuted,
    ToolRaised,
    UnknownTool,
    ValidationFailed,
)
from toolcall_tracker.runner import ToolRunner, run_tools
from toolcall_tracker.tools import tool

pytestmark = pytest.mark.anyio


def contains(exc: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is, or is a (nested) exception group holding, a ``kind``."""
    if isinstance(exc, kind):
        return True
    return any(contains(inner, kind) for inner in getattr(exc, "exceptions", ()))


async def run_turn(runner: ToolRunner, source: Any) -> tuple[ToolCallTracker, dict[str, Any]]:
    """Consume ``source`` and run the runner side by side; return the tracker and calls."""
    tracker = ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        calls = await runner.run(tracker)
    return tracker, by_id(calls)


# -- concurrency, proven by ordering --------------------------------------------------------


async def test_two_ready_calls_run_at_the_same_time(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        a_started, b_started = anyio.Event(), anyio.Event()

        async def first() -> str:
            a_started.set()
            await b_started.wait()  # only returns if second runs while first is running
            return "first"

        async def second() -> str:
            b_started.set()
            await a_started.wait()
            return "second"

        runner = ToolRunner([first, second], eager=True)
        events = call_events("a", "first") + call_events("b", "second")
        _, calls = await run_turn(runner, from_list(events))
        assert calls["a"].status is Status.DONE
        assert calls["a"].result == "first"
        assert calls["b"].status is Status.DONE
        assert calls["b"].result == "second"


async def test_a_tool_starts_while_later_calls_are_still_streaming(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        started = anyio.Event()
        streamed_after_start: list[str] = []

        async def lookup(key: str) -> str:
            started.set()
            return key.upper()

        async def source() -> AsyncIterator[Any]:
            for event in call_events("a", "lookup", {"key": "x"}):
                yield event
            await started.wait()  # the stream cannot go on until the first tool has started
            streamed_after_start.append("b")
            for event in call_events("b", "lookup", {"key": "y"}):
                yield event

        tracker, calls = await run_turn(ToolRunner([tool(lookup, eager=True)]), source())
        assert streamed_after_start == ["b"]
        assert calls["a"].result == "X"
        assert calls["b"].result == "Y"
        # The timeline agrees: a's tool started before b was even announced.
        a_line, b_line = tracker.timeline("a"), tracker.timeline("b")
        assert a_line is not None
        assert b_line is not None
        assert a_line.tool_started is not None
        assert b_line.started is not None
        assert a_line.tool_started <= b_line.started


async def test_the_limiter_holds_the_running_count_at_its_bound(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        bound, total = 2, 6
        running = 0
        peak = 0
        starts_send, starts = anyio.create_memory_object_stream[str](total)
        releases = {f"c{i}": anyio.Event() for i in range(total)}

        async def work(name: str) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await starts_send.send(name)
            await releases[name].wait()
            running -= 1
            return name

        runner = ToolRunner([work], eager=True, max_concurrency=bound)
        events = [e for i in range(total) for e in call_events(f"c{i}", "work", {"name": f"c{i}"})]
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            tg.start_soon(runner.run, tracker)
            order = [await starts.receive() for _ in range(bound)]
            for _ in range(total - bound):
                # Every task is now blocked: had the limiter let a third tool in, it
                # would have started by now.
                await anyio.wait_all_tasks_blocked()
                assert running == bound
                releases[order.pop(0)].set()
                order.append(await starts.receive())
            for name in order:
                releases[name].set()
        assert peak == bound
        assert all(call.status is Status.DONE for call in tracker.list())
        assert len(tracker.list()) == total


async def test_a_blocking_sync_tool_does_not_stop_an_async_tool(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        released = threading.Event()
        loop_thread = threading.get_ident()

        def blocker() -> dict[str, Any]:
            # Blocks its thread until the async tool runs; the timeout is only a safety net
            # so that a broken runner (running this on the loop) fails instead of hanging.
            return {"released": released.wait(5), "thread": threading.get_ident()}

        async def freer() -> str:
            await anyio.lowlevel.checkpoint()
            released.set()
            return "freed"

        runner = ToolRunner([blocker, freer], eager=True)
        events = call_events("s", "blocker") + call_events("a", "freer")
        _, calls = await run_turn(runner, from_list(events))
        assert calls["a"].result == "freed"
        assert calls["s"].result["released"] is True
        assert calls["s"].result["thread"] != loop_thread


async def test_results_are_applied_so_waiters_see_them(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        def double(x: int) -> int:
            return 2 * x

        tracker = ToolCallTracker()
        seen: list[Any] = []

        async def waiter() -> None:
            seen.append((await tracker.wait_done("d")).result)

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            tg.start_soon(tracker.consume, from_list(call_events("d", "double", {"x": 21})))
            await run_tools(tracker, [double])
        assert seen == [42]


# -- eager and gated ----------------------------------------------------------------------


async def test_gated_is_the_default_and_waits_for_a_normal_end(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        ended_when_started: dict[str, bool] = {}
        tracker = ToolCallTracker()
        eager_started = anyio.Event()

        async def peek() -> str:
            ended_when_started["peek"] = tracker.end is not None
            eager_started.set()
            return "peeked"

        def write(path: str) -> str:
            return f"wrote {path}"

        async def write_async(path: str) -> str:
            ended_when_started["write_async"] = tracker.end is not None
            return f"wrote {path}"

        async def source() -> AsyncIterator[Any]:
            for event in call_events("w", "write", {"path": "/a"}):
                yield event
            for event in call_events("wa", "write_async", {"path": "/b"}):
                yield event
            for event in call_events("p", "peek"):
                yield event
            await eager_started.wait()
            yield End(ok=True, reason="tool_calls")

        runner = ToolRunner([write, write_async, tool(peek, eager=True)])
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            calls = by_id(await runner.run(tracker))
        assert ended_when_started == {"peek": False, "write_async": True}
        assert calls["w"].result == "wrote /a"
        assert calls["wa"].result == "wrote /b"
        assert calls["p"].result == "peeked"


async def test_gated_calls_are_not_executed_when_the_turn_ends_not_ok(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        executed: list[str] = []

        def send_mail(to: str) -> str:
            executed.append(to)
            return "sent"

        async def read(key: str) -> str:
            executed.append(key)
            return "value"

        events = [
            *call_events("m", "send_mail", {"to": "bob"}),
            *call_events("r", "read", {"key": "k"}),
            {"type": "start", "id": "cut", "name": "send_mail"},
            {"type": "delta", "id": "cut", "argsTextDelta": '{"to": "al'},
            End(ok=False, reason="length"),
        ]
        runner = ToolRunner([send_mail, tool(read, eager=True)])
        _, calls = await run_turn(runner, from_list(events))
        assert executed == ["k"]
        assert calls["r"].status is Status.DONE
        failure = calls["m"].error
        assert isinstance(failure, NotExecuted)
        assert failure == NotExecuted(message=failure.message, tool="send_mail", reason="length")
        assert "length" in failure.message
        assert calls["cut"].error.kind == "incomplete_arguments"  # the core's, untouched


async def test_runner_eager_default_and_per_tool_override(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        executed: list[str] = []

        def fetch() -> str:
            executed.append("fetch")
            return "ok"

        def delete() -> str:
            executed.append("delete")
            return "gone"

        events = [*call_events("f", "fetch"), *call_events("d", "delete"), End(ok=False)]
        runner = ToolRunner([fetch, tool(delete, eager=False)], eager=True)
        _, calls = await run_turn(runner, from_list(events))
        assert executed == ["fetch"]
        assert calls["f"].result == "ok"
        assert calls["d"].error.kind == "not_executed"


# -- failures, each contained to its own call -----------------------------------------------


class Address(BaseModel):
    city: str
    zip: int


async def test_failures_end_in_error_and_other_calls_finish(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(DEADLINE):
        boom_failed = anyio.Event()
        tracker = ToolCallTracker()

        async def ship(to: str, address: Address, express: bool = False) -> str:
            return f"{to}:{address.city}:{address.zip}:{express}"

        async def boom(x: int) -> int:
            raise RuntimeError(f"kaboom {x}")

        def sync_boom() -> None:
            raise KeyError("missing")

        async def patient() -> str:
            # Still running when boom fails; unaffected by it.
            await boom_failed.wait()
            return "finished"

        async def watch() -> None:
            with pytest.raises(ToolCallFailed):
                await tracker.wait_done("boom")
            boom_failed.set()

        events = [
            *call_events("p", "patient"),
            *call_events("ok", "ship", {"to": "ann", "address": {"city": "Oslo", "zip": "123"}}),
            *call_events("bad", "ship", {"to": 5, "address": {"city": "X"}, "extra": 1}),
            *call_events("list", "ship", [1, 2]),
            *call_events("who", "teleport", {"to": "mars"}),
            *call_events("boom", "boom", {"x": 7}),
            *call_events("sboom", "sync_boom"),
        ]
        runner = ToolRunner([ship, boom, sync_boom, patient], eager=True)
        caplog.set_level(logging.INFO, logger="toolcall_tracker")
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            tg.start_soon(tracker.consume, from_list(events))
            calls = by_id(await runner.run(tracker))

        assert calls["p"].result == "finished"
        assert calls["ok"].result == "ann:Oslo:123:False"  # "123" coerced, default applied

        bad = calls["bad"].error
        assert isinstance(bad, ValidationFailed)
        assert bad.tool == "ship"
        assert set(bad.errors) == {
            FieldError(path=("to",), message="Input should be a valid string", type="string_type"),
            FieldError(path=("address", "zip"), message="Field required", type="missing"),
            FieldError(
                path=("extra",), message="Extra inputs are not permitted", type="extra_forbidden"
            ),
        }
        assert "address.zip" in bad.message
        not_object = calls["list"].error
        assert isinstance(not_object, ValidationFailed)
        assert [e.path for e in not_object.errors] == [()]

        assert calls["who"].error == UnknownTool(
            message=calls["who"].error.message,
            tool="teleport",
            available=("boom", "patient", "ship", "sync_boom"),
        )
        assert calls["boom"].error == ToolRaised(
            message="tool 'boom' raised RuntimeError: kaboom 7",
            tool="boom",
            exception="RuntimeError",
        )
        assert calls["sboom"].error.kind == "tool_exception"
        assert calls["sboom"].error.exception == "KeyError"

        # Every error value is JSON-serialisable and a CallFailure.
        for call in calls.values():
            if call.status is Status.ERROR:
                assert isinstance(call.error, CallFailure)
                assert call.model_dump_json()
        # The tracebacks were logged, not lost.
        logged = {
            record.exc_info[1].args[0]
            for record in caplog.records
            if record.name == "toolcall_tracker.runner" and record.exc_info
        }
        assert logged == {"kaboom 7", "missing"}


async def test_a_tool_that_raises_a_base_exception_fails_only_its_call(
    anyio_backend: str,
) -> None:
    with anyio.fail_after(DEADLINE):

        class Stop(BaseException):
            pass

        async def halt() -> None:
            raise Stop

        async def fine() -> str:
            return "fine"

        tracker = ToolCallTracker()
        events = call_events("h", "halt") + call_events("f", "fine")
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            calls = by_id(await ToolRunner([halt, fine], eager=True).run(tracker))
        assert calls["h"].status is Status.ERROR
        assert isinstance(calls["h"].error, ToolRaised)
        assert calls["h"].error.exception == "Stop"
        assert calls["f"].status is Status.DONE
        assert calls["f"].result == "fine"


# -- cancellation -------------------------------------------------------------------------


async def test_cancelling_the_runner_fails_unfinished_calls(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        hang_started = anyio.Event()
        stop_stream = anyio.Event()
        runner_done = anyio.Event()
        thread_release = threading.Event()
        thread_started = anyio.Event()
        thread_done = threading.Event()
        tracker = ToolCallTracker()
        waiter_saw: list[Any] = []

        async def hang() -> None:
            hang_started.set()
            await anyio.sleep_forever()

        def stuck() -> str:
            anyio.from_thread.run_sync(thread_started.set)
            thread_release.wait(5)
            thread_done.set()
            return "late"

        async def quick() -> str:
            return "quick"

        def gated() -> str:
            return "never"

        async def source() -> AsyncIterator[Any]:
            for cid, name in (("q", "quick"), ("h", "hang"), ("s", "stuck"), ("g", "gated")):
                for event in call_events(cid, name):
                    yield event
            await stop_stream.wait()  # the turn is still open when the runner is cancelled

        async def waiter() -> None:
            try:
                await tracker.wait_done("h")
            except ToolCallFailed as exc:
                waiter_saw.append(exc.error)

        runner = ToolRunner(
            [tool(hang, eager=True), tool(stuck, eager=True), tool(quick, eager=True), gated]
        )
        scope = anyio.CancelScope()

        async def run_runner() -> None:
            with scope:
                await runner.run(tracker)
            runner_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            tg.start_soon(waiter)
            tg.start_soon(run_runner)
            await hang_started.wait()
            await thread_started.wait()
            await tracker.wait_done("q")
            scope.cancel()
            await runner_done.wait()
            # Nothing is left running, and the waiter was released.
            calls = by_id(tracker.list())
            assert calls["q"].status is Status.DONE
            for cid, started in (("h", True), ("s", True), ("g", False)):
                failure = calls[cid].error
                assert isinstance(failure, CallCancelled), cid
                assert failure.tool_started is started, cid
            stop_stream.set()
        thread_release.set()
        assert await anyio.to_thread.run_sync(thread_done.wait, 5)
        assert waiter_saw == [calls["h"].error]
        assert tracker.end is not None
        assert tracker.end.ok


async def test_cancelled_before_any_task_ran_still_fails_ready_calls(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        for event in call_events("a", "first") + call_events("b", "second"):
            tracker.apply(event)

        async def first() -> None:
            await anyio.sleep_forever()

        async def second() -> None:
            await anyio.sleep_forever()

        with anyio.CancelScope() as scope:
            scope.cancel()
            await ToolRunner([first, second], eager=True).run(tracker)
        assert scope.cancelled_caught
        for call in tracker.list():
            assert call.status is Status.ERROR
            assert isinstance(call.error, CallCancelled)
            assert call.error.tool_started is False


# -- timeouts (real clock, never-finishing tools: the outcome cannot depend on speed) ---------


async def test_per_call_timeout_fails_only_the_slow_call(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        async def never() -> None:
            await anyio.Event().wait()

        async def fast() -> str:
            return "fast"  # no checkpoint: a timeout cannot interrupt it

        runner = ToolRunner([tool(never, timeout=0.05), fast], eager=True, call_timeout=0.05)
        events = call_events("n", "never") + call_events("f", "fast")
        tracker, calls = await run_turn(runner, from_list(events))
        assert calls["f"].result == "fast"
        assert calls["n"].error == CallTimedOut(
            message=calls["n"].error.message,
            tool="never",
            scope="call",
            timeout=0.05,
            tool_started=True,
        )
        line = tracker.timeline("n")
        assert line is not None
        assert line.tool_finished is not None


async def test_a_sync_tool_that_overruns_is_abandoned(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        release, done = threading.Event(), threading.Event()

        def stuck() -> str:
            release.wait(5)
            done.set()
            return "late"

        runner = ToolRunner([tool(stuck, timeout=0.05, eager=True)])
        try:
            _, calls = await run_turn(runner, from_list(call_events("s", "stuck")))
        finally:
            release.set()
            assert await anyio.to_thread.run_sync(done.wait, 5)
        assert calls["s"].error.kind == "timeout"
        assert calls["s"].error.scope == "call"


# -- timeline -----------------------------------------------------------------------------


async def test_the_timeline_shows_each_step_in_order(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        def echo(text: str) -> str:
            return text

        events = [*call_events("e", "echo", {"text": "hi"}), *call_events("bad", "echo", {})]
        tracker, calls = await run_turn(ToolRunner([echo]), from_list(events))
        line = tracker.timeline("e")
        assert line is not None
        steps = [line.started, line.ready, line.tool_started, line.tool_finished, line.finished]
        assert None not in steps
        assert steps == sorted(steps)
        bad = tracker.timeline("bad")
        assert bad is not None
        assert bad.tool_started is None
        assert bad.tool_finished is None
        assert bad.finished is not None
        assert calls["bad"].error.kind == "validation"


# -- odds and ends ------------------------------------------------------------------------


async def test_run_returns_every_call_even_those_that_never_became_ready(
    anyio_backend: str,
) -> None:
    with anyio.fail_after(DEADLINE):

        def noop() -> None:
            return None

        events = [*call_events("ok", "noop"), *call_events("json", "noop", "{not json")]
        _tracker, calls = await run_turn(ToolRunner([noop]), from_list(events))
        assert list(calls) == ["ok", "json"]
        assert calls["ok"].status is Status.DONE
        assert calls["ok"].result is None
        assert calls["json"].error.kind == "invalid_arguments"


async def test_a_closed_tracker_does_not_break_the_runner(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(DEADLINE):
        started = anyio.Event()
        release = anyio.Event()

        async def slow() -> str:
            started.set()
            await release.wait()
            return "done"

        tracker = ToolCallTracker()
        for event in call_events("s", "slow"):
            tracker.apply(event)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ToolRunner([tool(slow, eager=True)]).run, tracker)
            await started.wait()
            await tracker.aclose()
            release.set()
        # No exception escaped. Today a closed tracker refuses the Result (the call stays
        # running in the snapshot) and the runner logs that the outcome was lost.
        if snapshot(tracker, "s").status is Status.RUNNING:
            assert "tracker closed" in caplog.text


def test_runner_rejects_bad_limits_and_duplicate_names() -> None:
    def a() -> None: ...

    with pytest.raises(ValueError, match="max_concurrency"):
        ToolRunner([a], max_concurrency=0)
    with pytest.raises(ValueError, match="max_concurrency"):
        ToolRunner([a], max_concurrency=True)
    with pytest.raises(ValueError, match="call_timeout"):
        ToolRunner([a], call_timeout=0)
    with pytest.raises(ValueError, match="timeout"):
        ToolRunner([a], timeout=-1)
    with pytest.raises(ValueError, match="two tools"):
        ToolRunner([a, tool(a)])
    assert list(ToolRunner({"x": a, "y": a}).tools) == ["x", "y"]


async def test_a_tool_raising_fail_call_ends_with_its_failure(anyio_backend: str) -> None:
    from toolcall_tracker.errors import FailCall
    from toolcall_tracker.failures import NotExecuted

    chosen = NotExecuted(message="the service is closed today", tool="shop", reason="closed")

    async def shop() -> None:
        raise FailCall(chosen)

    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        for event in [*call_events("s", "shop"), {"type": "end", "reason": "stop"}]:
            tracker.apply(event)
        (call,) = await ToolRunner([tool(shop, eager=True)]).run(tracker)
    assert call.status is Status.ERROR
    assert call.error == chosen
