"""The tracker used the way a pytest-asyncio user would: plain asyncio tasks and cancellation.

These tests use ``@pytest.mark.asyncio`` (pytest-asyncio, strict mode) rather than anyio's
plugin, and asyncio primitives (``asyncio.TaskGroup``, ``Task.cancel``) where a user would.
They are still bounded by ``anyio.fail_after``, which works on any asyncio loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import (
    End,
    IncompleteArguments,
    ToolCall,
    ToolCallFailed,
    ToolCallTracker,
    TrackerClosed,
    UnknownToolCall,
)


def call_events(call_id: str, text: str) -> list[dict[str, Any]]:
    return [
        {"type": "start", "id": call_id, "name": "search"},
        {"type": "delta", "id": call_id, "argsTextDelta": text[:3]},
        {"type": "delta", "id": call_id, "argsTextDelta": text[3:]},
        {"type": "ready", "id": call_id},
    ]


@pytest.mark.asyncio
async def test_seed_stream_with_asyncio_tasks() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        async def source() -> AsyncIterator[dict[str, Any]]:
            while (event := await queue.get()) is not None:
                yield event

        async with asyncio.TaskGroup() as tg:
            waiting = tg.create_task(tracker.wait_done("t1"))
            tg.create_task(tracker.consume(source()))
            for event in call_events("t1", '{"q":"hi"}'):
                queue.put_nowait(event)
            call = await tracker.wait_ready("t1")
            assert call.args == {"q": "hi"}
            assert not waiting.done()
            tracker.apply({"type": "result", "id": "t1", "result": ["hit"]})
            queue.put_nowait(None)
        done = waiting.result()
        assert done.status == "done"
        assert done.result == ["hit"]
        assert tracker.end == End(ok=True, reason="source exhausted")


@pytest.mark.asyncio
async def test_runner_starts_tools_as_calls_become_ready() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        first_tool_ran = asyncio.Event()
        order: list[str] = []

        async def source() -> AsyncIterator[dict[str, Any]]:
            for event in call_events("a", '{"n": 1}'):
                yield event
            order.append("stream waits for the tool")
            await first_tool_ran.wait()  # cannot go on unless the tool started mid-stream
            for event in call_events("b", '{"n": 2}'):
                yield event
            order.append("stream finished")

        async def tool(call: ToolCall) -> None:
            order.append(f"tool {call.id}")
            first_tool_ran.set()
            tracker.apply({"type": "result", "id": call.id, "result": call.args["n"] * 10})

        async with asyncio.TaskGroup() as tg:
            tg.create_task(tracker.consume(source()))
            async for call in tracker.ready_calls():
                tg.create_task(tool(call))
        assert order.index("tool a") < order.index("stream finished")
        # consume lets the woken iterator and the tool's task run before it reads on
        # (READY_CHECKPOINTS): the tool starts before the source is even asked again.
        assert order[:2] == ["tool a", "stream waits for the tool"]
        assert [(c.id, c.result) for c in tracker.list()] == [("a", 10), ("b", 20)]


@pytest.mark.asyncio
async def test_task_cancel_of_consume_releases_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        blocked = asyncio.Event()
        finalised: list[bool] = []

        async def source() -> AsyncIterator[dict[str, Any]]:
            try:
                yield {"type": "start", "id": "p", "name": "x"}
                blocked.set()
                await asyncio.Event().wait()  # never set
                yield {"type": "ready", "id": "p"}
            finally:
                finalised.append(True)

        p_waiter = asyncio.create_task(tracker.wait_ready("p"))
        ghost_waiter = asyncio.create_task(tracker.wait_done("ghost"))
        consumer = asyncio.create_task(tracker.consume(source()))
        await blocked.wait()
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        with pytest.raises(ToolCallFailed) as failed:
            await p_waiter
        assert isinstance(failed.value.error, IncompleteArguments)
        assert failed.value.error.reason == "cancelled"
        with pytest.raises(UnknownToolCall, match="'ghost'"):
            await ghost_waiter
        assert tracker.end == End(ok=False, reason="cancelled")
        assert finalised == [True]


@pytest.mark.asyncio
async def test_async_with_closes_and_releases_waiters() -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            tracker.apply({"type": "start", "id": "r", "name": "x"})
            tracker.apply({"type": "delta", "id": "r", "argsTextDelta": "{}"})
            tracker.apply({"type": "ready", "id": "r"})
            done_waiter = asyncio.create_task(tracker.wait_done("r"))
            ghost_waiter = asyncio.create_task(tracker.wait_ready("ghost"))
            await asyncio.sleep(0)  # a plain checkpoint; they raise TrackerClosed either way
            assert not done_waiter.done()
        with pytest.raises(TrackerClosed):
            await done_waiter
        with pytest.raises(TrackerClosed):
            await ghost_waiter
        with pytest.raises(TrackerClosed):
            tracker.apply({"type": "result", "id": "r", "result": 1})
        assert tracker.closed
