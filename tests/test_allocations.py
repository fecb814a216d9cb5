"""Allocation guards: counts of live memory blocks, never times (CPython 3.11 only).

``sys.getallocatedblocks()`` counts the interpreter's live small-object blocks. Inputs are
built before counting and the garbage collector is paused while counting, so the figures
are the library's own and exact to within a block or two:

- a fragment costs no block beyond its own text, whatever the size of its call (joined
  blocks of the coalescing are amortised: well under one block per 10 fragments);
- a finished call costs at most a fixed number of blocks in the machine and in the async
  tracker (the figures measured when these guards were written, plus 10%).

Other interpreters (and other CPython versions, whose object layouts differ) skip.
"""

from __future__ import annotations

import gc
import platform
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from toolcall_tracker import ToolCallTracker, tool_call_streaming_state_machine

pytestmark = pytest.mark.skipif(
    platform.python_implementation() != "CPython" or sys.version_info[:2] != (3, 11),
    reason="block counts are those of CPython 3.11",
)

BLOCKS_PER_FRAGMENT = 0.05
"""Live blocks per fragment, whatever the call's size (measured: 0.02 at 1,000 fragments,
under 0.001 at 100,000)."""

MACHINE_BLOCKS_PER_CALL = 5 * 1.1
"""A finished call in the machine (measured: 5.0 blocks: the record, its list, the joined
argument text and the parsed arguments; a call that left pending holds no room count)."""

TRACKER_BLOCKS_PER_CALL = 7 * 1.1
"""A finished call in the async tracker (measured: 7.0 blocks: the machine's and its
timeline, one array of times written in place; 10.0 before the snapshot of a ready call
was built only when somebody reads it)."""


class Counted:
    blocks = 0


@contextmanager
def counting() -> Iterator[Counted]:
    """Count the live blocks a block of code leaves behind, the collector paused."""
    counted = Counted()
    gc.collect()
    gc.disable()
    try:
        before = sys.getallocatedblocks()
        yield counted
        counted.blocks = sys.getallocatedblocks() - before
    finally:
        gc.enable()


@pytest.mark.parametrize("fragments", [1_000, 10_000, 100_000])
def test_a_fragment_costs_no_block_beyond_its_text(fragments: int) -> None:
    machine = tool_call_streaming_state_machine()
    machine.write_start("a", "f")
    texts = [f"{index % 10_000_000:08d}" for index in range(fragments)]  # built beforehand
    with counting() as counted:
        for text in texts:
            machine.write_delta("a", text)
    assert counted.blocks / fragments <= BLOCKS_PER_FRAGMENT, counted.blocks
    call = machine.get("a")
    assert call is not None
    assert call.args_text == "".join(texts)


@pytest.mark.parametrize("fragments", [1_000, 100_000])
def test_a_fragment_applied_as_a_mapping_costs_no_block_either(fragments: int) -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "a", "name": "f"})
    events = [
        {"type": "delta", "id": "a", "argsTextDelta": f"{index % 10_000_000:08d}"}
        for index in range(fragments)
    ]
    with counting() as counted:
        for event in events:
            machine.apply(event)
    assert counted.blocks / fragments <= BLOCKS_PER_FRAGMENT, counted.blocks


def _calls(count: int) -> list[tuple[str, str, Any]]:
    steps: list[tuple[str, str, Any]] = []
    for index in range(count):
        call_id = f"call-{index}"
        steps += [
            ("start", call_id, "lookup"),
            ("delta", call_id, '{"key":'),
            ("delta", call_id, ' "value"}'),
            ("ready", call_id, None),
            ("result", call_id, "found"),
        ]
    return steps


def _write(sink: Any, steps: list[tuple[str, str, Any]]) -> None:
    for kind, call_id, payload in steps:
        if kind == "start":
            sink.write_start(call_id, payload)
        elif kind == "delta":
            sink.write_delta(call_id, payload)
        elif kind == "ready":
            sink.write_ready(call_id)
        else:
            sink.write_result(call_id, payload)


@pytest.mark.parametrize("calls", [100, 2_000])
@pytest.mark.parametrize(
    ("make", "ceiling"),
    [
        (tool_call_streaming_state_machine, MACHINE_BLOCKS_PER_CALL),
        (ToolCallTracker, TRACKER_BLOCKS_PER_CALL),
    ],
    ids=["machine", "tracker"],
)
def test_a_call_costs_at_most_its_ceiling(calls: int, make: Any, ceiling: float) -> None:
    sink = make()
    steps = _calls(calls)
    with counting() as counted:
        _write(sink, steps)
    assert counted.blocks / calls <= ceiling, counted.blocks / calls
    assert len(sink.list()) == calls


@pytest.mark.anyio
async def test_a_finished_turn_leaves_no_reference_cycle(anyio_backend: str) -> None:
    # A turn (tracker, consume, the runner, its tools) is freed by reference counting, not
    # left for the collector: no cyclic garbage, so no collector pauses that grow with the
    # number of turns. (Counted on both backends; collections paused meanwhile.)
    from _runner_helpers import call_events
    from conftest import DEADLINE
    from toolcall_tracker.runner import ToolRunner
    from toolcall_tracker.tools import tool

    async def lookup(key: str) -> str:
        return key

    runner = ToolRunner([tool(lookup, eager=True)])

    async def source(turn: int) -> Any:
        for index in range(3):
            for event in call_events(f"t{turn}-{index}", "lookup", {"key": "k"}):
                yield event

    async def turns(count: int) -> None:
        for turn in range(count):
            async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, source(turn))
                calls = await runner.run(tracker)
            assert [call.result for call in calls] == ["k", "k", "k"]

    with anyio.fail_after(DEADLINE):
        await turns(3)  # warm up: imports, the tool's argument model
        gc.collect()
        gc.disable()
        try:
            await turns(20)
            found = gc.collect()
        finally:
            gc.enable()
    assert found == 0
