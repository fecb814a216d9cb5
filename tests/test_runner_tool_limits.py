"""Per-tool limits: ``tool(fn, max_concurrency=N)`` and ``tool(fn, sequential=True)``, next
to the runner-wide cap: peak concurrency and ready order, on both backends, proven by
ordering (each tool waits for its own release event).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import pytest

from _runner_helpers import call_events
from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker, ToolRunner, tool

pytestmark = pytest.mark.anyio


class Lab:
    """Tools that record their start and hold until released, with live/peak counters."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.live: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.gates: dict[str, anyio.Event] = {}

    def make(self, name: str) -> Any:
        async def work(n: str) -> str:
            self.started.append(n)
            self.live[name] = self.live.get(name, 0) + 1
            self.peak[name] = max(self.peak.get(name, 0), self.live[name])
            gate = self.gates.setdefault(n, anyio.Event())
            await gate.wait()
            self.live[name] -= 1
            return n

        work.__name__ = name
        return work

    def release(self, n: str) -> None:
        self.gates.setdefault(n, anyio.Event()).set()


async def drive(
    runner: ToolRunner, calls: list[tuple[str, str]], lab: Lab, steps: list[tuple[str, list[str]]]
) -> ToolCallTracker:
    """Feed every call, then for each step release one call and check who has started."""
    tracker = ToolCallTracker()
    send, receive = anyio.create_memory_object_stream[Any](1000)
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, receive)
        tg.start_soon(partial(runner.run, tracker))
        for call_id, name in calls:
            for event in call_events(call_id, name, {"n": call_id}):
                await send.send(event)
        await send.send({"type": "end"})
        await anyio.wait_all_tasks_blocked()
        for release, expected in steps:
            if release:
                lab.release(release)
                await anyio.wait_all_tasks_blocked()
            assert lab.started == expected, (release, lab.started)
        for call_id, _ in calls:
            lab.release(call_id)
        await send.aclose()
    return tracker


async def test_a_sequential_tool_runs_one_call_at_a_time_in_ready_order(
    anyio_backend: str,
) -> None:
    lab = Lab()
    runner = ToolRunner(
        [tool(lab.make("write"), eager=True, sequential=True), tool(lab.make("read"), eager=True)]
    )
    calls = [("w1", "write"), ("r1", "read"), ("w2", "write"), ("w3", "write"), ("r2", "read")]
    with anyio.fail_after(DEADLINE):
        tracker = await drive(
            runner,
            calls,
            lab,
            [
                ("", ["w1", "r1", "r2"]),  # the reads are not held up by the queued writes
                ("w1", ["w1", "r1", "r2", "w2"]),
                ("r1", ["w1", "r1", "r2", "w2"]),
                ("w2", ["w1", "r1", "r2", "w2", "w3"]),
            ],
        )
    assert lab.peak["write"] == 1
    assert lab.peak["read"] == 2
    assert all(call.status == "done" for call in tracker.list())


async def test_a_tool_cap_and_the_runner_cap_together(anyio_backend: str) -> None:
    lab = Lab()
    runner = ToolRunner(
        [
            tool(lab.make("fetch"), eager=True, max_concurrency=2),
            tool(lab.make("calc"), eager=True),
        ],
        max_concurrency=3,
    )
    calls = [("f1", "fetch"), ("f2", "fetch"), ("f3", "fetch"), ("c1", "calc"), ("c2", "calc")]
    with anyio.fail_after(DEADLINE):
        await drive(
            runner,
            calls,
            lab,
            [
                # 3 slots: f1, f2 (fetch at its cap of 2), then c1 passes f3
                ("", ["f1", "f2", "c1"]),
                # a slot frees from fetch: the oldest call whose tool has room is f3
                ("f1", ["f1", "f2", "c1", "f3"]),
                # a slot frees from calc: fetch is at its cap again, c2 goes
                ("c1", ["f1", "f2", "c1", "f3", "c2"]),
            ],
        )
    assert lab.peak == {"fetch": 2, "calc": 1}


async def test_gated_calls_of_a_sequential_tool_run_in_ready_order(anyio_backend: str) -> None:
    lab = Lab()
    runner = ToolRunner([tool(lab.make("send"), sequential=True)])  # gated (the default)
    calls = [(f"s{i}", "send") for i in range(5)]
    steps: list[tuple[str, list[str]]] = [("", ["s0"])]
    for i in range(1, 5):
        steps.append((f"s{i - 1}", [f"s{j}" for j in range(i + 1)]))
    with anyio.fail_after(DEADLINE):
        await drive(runner, calls, lab, steps)
    assert lab.peak == {"send": 1}


def test_tool_limit_options_are_checked() -> None:
    def f() -> None: ...

    assert tool(f, sequential=True).max_concurrency == 1
    assert tool(f, sequential=True).sequential
    assert tool(f, max_concurrency=3).max_concurrency == 3
    assert tool(tool(f, max_concurrency=3), sequential=True).max_concurrency == 1
    assert tool(tool(f, sequential=True), eager=True).sequential  # kept
    assert tool(tool(f, sequential=True), sequential=False).max_concurrency is None
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_concurrency"):
            tool(f, max_concurrency=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sequential"):
        tool(f, sequential=True, max_concurrency=2)
