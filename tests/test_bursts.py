"""Bursts: an eager tool starts while a source that never blocks goes on.

A real SSE read can hold dozens of events, and SDKs yield them back to back without
blocking. ``consume`` yields to the event loop a few times after an item that makes a call
ready (:data:`toolcall_tracker.tracker.READY_CHECKPOINTS`), so that the eager tool's first
line runs before ``consume`` pulls the next item (the documented bound is zero further
items; the issue asked for at most three). Proven by ordering: the source counts the
items it yielded after the ready one, and the tool records that count when its first line
runs. No clock is read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from _runner_helpers import call_events
from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.anthropic import AnthropicAdapter
from toolcall_tracker.runner import ToolRunner
from toolcall_tracker.tools import tool

pytestmark = pytest.mark.anyio

AFTER = 100
"""Items the source yields without blocking after the ready item."""


class Burst:
    """A source: a call made ready, then ``AFTER`` fragments of another call, never blocking."""

    def __init__(self) -> None:
        self.after_ready = -1  # items yielded after the ready one (-1: not ready yet)
        self.seen_by_tool: int | None = None

    def tool_started(self) -> None:
        if self.seen_by_tool is None:
            self.seen_by_tool = self.after_ready

    def events(self) -> list[dict[str, Any]]:
        tail = [{"type": "start", "id": "b", "name": "other"}]
        tail += [{"type": "delta", "id": "b", "argsTextDelta": " "} for _ in range(AFTER - 2)]
        tail.append({"type": "delta", "id": "b", "argsTextDelta": "{}"})
        return [*call_events("a", "lookup", {"key": "x"}), *tail]

    async def source(self) -> AsyncIterator[dict[str, Any]]:
        for event in self.events():
            if self.after_ready >= 0:
                self.after_ready += 1  # counted as it is yielded
            elif event["type"] == "ready":
                self.after_ready = 0
            yield event

    def anthropic_items(self) -> Any:
        """The same stream as Anthropic Messages events, through ``adapt``."""

        async def events() -> AsyncIterator[dict[str, Any]]:
            async for event in self.source():
                yield _anthropic(event)

        return adapt(events(), AnthropicAdapter())


def _anthropic(event: dict[str, Any]) -> dict[str, Any]:
    kind, index = event["type"], 0 if event.get("id") == "a" else 1
    if kind == "start":
        block = {"type": "tool_use", "id": event["id"], "name": event["name"], "input": {}}
        return {"type": "content_block_start", "index": index, "content_block": block}
    if kind == "delta":
        delta = {"type": "input_json_delta", "partial_json": event["argsTextDelta"]}
        return {"type": "content_block_delta", "index": index, "delta": delta}
    return {"type": "content_block_stop", "index": index}


async def _through_runner(burst: Burst, source: Any) -> None:
    async def lookup(key: str) -> str:
        burst.tool_started()
        return key

    async def other() -> str:
        return "other"

    tracker = ToolCallTracker()
    runner = ToolRunner([tool(lookup, eager=True), tool(other, eager=True)])
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        calls = await runner.run(tracker)
    assert "a" in {call.id for call in calls}


async def _through_ready_calls(burst: Burst, source: Any) -> None:
    async def run_tool(tracker: ToolCallTracker, call_id: str) -> None:
        burst.tool_started()

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        async for call in tracker.ready_calls():
            if call.id == "a":
                tg.start_soon(run_tool, tracker, call.id)


Path = Callable[[Burst, Any], Awaitable[None]]


@pytest.mark.parametrize("path", [_through_runner, _through_ready_calls], ids=["runner", "ready"])
@pytest.mark.parametrize("items", ["events", "adapted"])
async def test_the_eager_tool_starts_within_the_bound_of_a_burst(
    anyio_backend: str, path: Path, items: str
) -> None:
    with anyio.fail_after(DEADLINE):
        burst = Burst()
        await path(burst, burst.source() if items == "events" else burst.anthropic_items())
        assert burst.after_ready == AFTER  # the whole burst was read
        assert burst.seen_by_tool is not None
        assert burst.seen_by_tool == 0, burst.seen_by_tool
