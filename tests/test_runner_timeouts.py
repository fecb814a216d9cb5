"""Per-call and overall timeouts, on trio's autojumping MockClock and on asyncio.

On trio the clock jumps to the next deadline whenever every task is blocked, so a one-second
timeout expires at once and the outcome cannot depend on the machine's speed. On asyncio the
timeouts are short, and the tools that time out wait for an event that never fires, so they
can only ever end by timing out. Only async tools are used here: a worker thread would let
the mock clock jump past a deadline while the thread is still working.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import End, Status, ToolCallFailed, ToolCallTracker
from toolcall_tracker.failures import CallTimedOut
from toolcall_tracker.runner import ToolRunner
from toolcall_tracker.tools import tool

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    if request.param == "trio":
        from trio.testing import MockClock

        return ("trio", {"clock": MockClock(autojump_threshold=0)})
    return "asyncio"


@pytest.fixture
def short(anyio_backend_name: str) -> float:
    """A timeout that expires at once on the mock clock and quickly on asyncio."""
    return 1.0 if anyio_backend_name == "trio" else 0.05


async def never() -> None:
    await anyio.Event().wait()


async def quick(x: int) -> int:
    return x + 1  # no checkpoint: no timeout can interrupt it


async def test_per_call_timeout(short: float) -> None:
    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([never, quick], eager=True, call_timeout=short)
        tracker = ToolCallTracker()
        events = call_events("n", "never") + call_events("q", "quick", {"x": 1})
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            calls = by_id(await runner.run(tracker))
        assert calls["q"].result == 2
        failure = calls["n"].error
        assert isinstance(failure, CallTimedOut)
        assert (failure.scope, failure.timeout, failure.tool_started) == ("call", short, True)
        assert "per-call timeout" in failure.message


async def test_per_call_timeout_excludes_the_wait_for_the_end(short: float) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        end_now = anyio.Event()

        async def gated() -> str:
            return "ran"

        async def source() -> AsyncIterator[Any]:
            for event in call_events("g", "gated"):
                yield event
            await end_now.wait()
            yield End(ok=True)

        runner = ToolRunner([gated], call_timeout=short)
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            tg.start_soon(runner.run, tracker)
            await anyio.sleep(short * 3)  # waiting for the end longer than the call timeout
            end_now.set()
        assert tracker.get("g") is not None
        assert tracker.get("g").result == "ran"  # type: ignore[union-attr]


async def test_overall_timeout_fails_running_waiting_and_later_calls(short: float) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()

        async def source() -> AsyncIterator[Any]:
            for event in call_events("q", "quick", {"x": 1}) + call_events("n", "never"):
                yield event
            for event in call_events("g", "gated_never"):  # gated: waits for the end
                yield event
            with pytest.raises(ToolCallFailed):
                await tracker.wait_done("n")  # the deadline passed
            for event in call_events("late", "quick", {"x": 2}):
                yield event

        async def gated_never() -> None:
            await never()

        runner = ToolRunner(
            [tool(never, eager=True), tool(quick, eager=True), gated_never], timeout=short
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source())
            calls = by_id(await runner.run(tracker))  # returns normally
        assert calls["q"].result == 2
        for cid, started in (("n", True), ("g", False), ("late", False)):
            failure = calls[cid].error
            assert isinstance(failure, CallTimedOut), cid
            assert (failure.scope, failure.timeout, failure.tool_started) == (
                "run",
                short,
                started,
            ), cid
        assert all(call.status is not Status.RUNNING for call in calls.values())
