"""Per-call cancellation through the run's handle: a running async tool, a running sync tool,
a call waiting for a slot, one waiting at the gate, one waiting for approval. The other
calls are untouched every time.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import anyio
import anyio.from_thread
import pytest

from _runner_helpers import call_events
from conftest import DEADLINE
from toolcall_tracker import CallCancelled, RunControl, Status, ToolCallTracker, ToolRunner, tool

pytestmark = pytest.mark.anyio


class Scene:
    """``victim`` (configurable) and ``bystander`` (eager, waits for ``release``)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.ran: list[str] = []
        self.release = anyio.Event()
        self.victim_started = anyio.Event()
        self.victim_cleaned_up = False
        self.thread_release = threading.Event()
        self.tracker = ToolCallTracker()
        self.control = RunControl()

        async def bystander() -> str:
            self.ran.append("bystander")
            await self.release.wait()
            return "fine"

        async def victim_async() -> str:
            self.ran.append("victim")
            self.victim_started.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.victim_cleaned_up = True
            return "never"  # pragma: no cover

        def victim_sync() -> str:
            self.ran.append("victim")
            anyio.from_thread.run_sync(self.victim_started.set)
            self.thread_release.wait(DEADLINE)
            return "discarded"

        victim = victim_sync if where == "sync" else victim_async
        self.runner = ToolRunner(
            [
                tool(bystander, eager=True),
                tool(
                    victim,
                    name="victim",
                    eager=where != "gate",
                    needs_approval=where == "approval",
                ),
            ],
            max_concurrency=1 if where == "slot" else None,
        )
        self.send, self.receive = anyio.create_memory_object_stream[Any](100)

    async def feed(self, events: list[Any]) -> None:
        for event in events:
            await self.send.send(event)
        await anyio.wait_all_tasks_blocked()


@pytest.mark.parametrize("where", ["async", "sync", "slot", "gate", "approval"])
async def test_cancelling_one_call_leaves_the_others_alone(anyio_backend: str, where: str) -> None:
    scene = Scene(where)
    tracker, control = scene.tracker, scene.control
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, scene.receive)
            tg.start_soon(partial(scene.runner.run, tracker, control=control))
            await scene.feed(call_events("by", "bystander"))  # holds the slot if there is one
            await scene.feed(call_events("v", "victim"))
            started = where in ("async", "sync")
            if started:
                await scene.victim_started.wait()
            assert scene.ran == (["bystander", "victim"] if started else ["bystander"])
            assert control.cancel("v", reason="user pressed stop")
            assert not control.cancel("v")  # finished already
            victim = tracker.get("v")
            assert victim is not None
            assert victim.status is Status.ERROR
            error = victim.error
            assert isinstance(error, CallCancelled)
            assert error.tool_started is started
            assert error.reason == "user pressed stop"
            assert "user pressed stop" in error.message
            await anyio.wait_all_tasks_blocked()
            assert tracker.status("by") is Status.RUNNING  # untouched
            await scene.feed([{"type": "end"}])
            scene.release.set()
            await scene.send.aclose()
    scene.thread_release.set()
    assert tracker.get("by").result == "fine"  # type: ignore[union-attr]
    assert tracker.get("v").error == error  # type: ignore[union-attr]
    assert "victim" not in scene.ran or started  # a waiting call never started
    if where == "async":
        assert scene.victim_cleaned_up  # its tool was really cancelled
    timeline = tracker.timeline("v")
    assert timeline is not None
    assert (timeline.tool_started is not None) is started
    assert (timeline.tool_finished is not None) is started


async def test_a_cancelled_slot_goes_to_the_next_call(anyio_backend: str) -> None:
    order: list[str] = []
    gate = anyio.Event()

    async def work(n: str) -> str:
        order.append(n)
        await gate.wait()
        return n

    runner = ToolRunner([tool(work, eager=True)], max_concurrency=1)
    control = RunControl()
    tracker = ToolCallTracker()
    send, receive = anyio.create_memory_object_stream[Any](100)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, receive)
            tg.start_soon(partial(runner.run, tracker, control=control))
            for call_id in ("a", "b", "c"):
                for event in call_events(call_id, "work", {"n": call_id}):
                    await send.send(event)
            await anyio.wait_all_tasks_blocked()
            assert order == ["a"]
            assert control.cancel("a")  # the running one: its slot goes to b, in order
            await anyio.wait_all_tasks_blocked()
            assert order == ["a", "b"]
            gate.set()
            await send.aclose()
    assert [c.status.value for c in tracker.list()] == ["error", "done", "done"]


async def test_cancel_outside_a_run_is_refused(anyio_backend: str) -> None:
    control = RunControl()
    assert not control.cancel("x")
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        tracker.write_end()
        await ToolRunner([]).run(tracker, control=control)
        assert not control.cancel("x")
        with pytest.raises(RuntimeError, match="one run"):
            await ToolRunner([]).run(tracker, control=control)
