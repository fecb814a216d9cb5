"""The runner acts on live state: a call that fails while its tool waits never runs.

For each way a call can fail while its tool waits (other code applies an ``error``, an
adapter's verdict, a turn that ends not ok, the overall timeout), with the tool waiting at
the gate (gated tool, turn not over) and waiting for a slot (``max_concurrency=1``, the slot
held by another tool), the tool is never executed and the call keeps the outcome the
tracker gave it. Ordering over ``max_concurrency`` is checked here too.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    CallTimedOut,
    NotExecuted,
    Status,
    ToolCallTracker,
    ToolRunner,
    tool,
)
from toolcall_tracker.adapters import OpenAIResponsesAdapter, adapt

pytestmark = pytest.mark.anyio


class Scene:
    """A turn driven step by step: a blocker tool holding the one slot, a victim tool."""

    def __init__(self, waiting: str, timeout: float | None = None) -> None:
        self.waiting = waiting
        self.ran: list[str] = []
        self.release = anyio.Event()
        self.tracker = ToolCallTracker()

        async def blocker() -> str:
            self.ran.append("blocker")
            await self.release.wait()
            return "blocked"

        async def victim() -> str:
            self.ran.append("victim")
            return "ran"

        gated = waiting == "gate"
        self.runner = ToolRunner(
            [tool(blocker, eager=True), tool(victim, eager=not gated)],
            max_concurrency=1,
            timeout=timeout,
        )
        self.send, self.receive = anyio.create_memory_object_stream[Any](100)

    async def open(self, tg: anyio.abc.TaskGroup) -> None:
        tg.start_soon(self.tracker.consume, self.receive)
        tg.start_soon(self.runner.run, self.tracker)
        if self.waiting == "slot":
            await self.feed(call_events("b", "blocker"))
            assert self.ran == ["blocker"]  # it holds the slot

    async def feed(self, events: list[Any]) -> None:
        for event in events:
            await self.send.send(event)
        await anyio.wait_all_tasks_blocked()

    async def finish(self, end: dict[str, Any] | None = None) -> None:
        if end is not None:
            await self.feed([end])
        self.release.set()
        await self.send.aclose()


@pytest.mark.parametrize("waiting", ["gate", "slot"])
async def test_an_error_applied_by_other_code_stops_the_tool(
    anyio_backend: str, waiting: str
) -> None:
    with anyio.fail_after(DEADLINE):
        scene = Scene(waiting)
        async with anyio.create_task_group() as tg:
            await scene.open(tg)
            await scene.feed(call_events("v", "victim"))
            assert "victim" not in scene.ran  # waiting: at the gate, or for the slot
            scene.tracker.apply({"type": "error", "id": "v", "error": "denied by policy"})
            await scene.finish({"type": "end", "ok": True})
        assert "victim" not in scene.ran
        call = scene.tracker.get("v")
        assert call is not None
        assert call.status is Status.ERROR
        assert call.error == "denied by policy"


@pytest.mark.parametrize("waiting", ["gate", "slot"])
async def test_an_adapter_verdict_stops_the_tool(anyio_backend: str, waiting: str) -> None:
    """A Responses call whose final arguments disagree with the streamed ones fails."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "v", "name": "victim"}
    items = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{}"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": '{"to": "attacker"}'},
        },
    ]
    with anyio.fail_after(DEADLINE):
        scene = Scene(waiting)
        ran = scene.ran

        async def victim(to: str = "me") -> str:
            ran.append("victim")
            return to

        others = [spec for name, spec in scene.runner.tools.items() if name != "victim"]
        scene.runner = ToolRunner(
            [tool(victim, eager=waiting == "slot"), *others],
            max_concurrency=1,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(scene.runner.run, scene.tracker)
            if waiting == "slot":  # the blocker holds the one slot first
                for event in call_events("b", "blocker"):
                    scene.tracker.apply(event)
                await anyio.wait_all_tasks_blocked()
            await scene.tracker.consume(adapt(from_list(items), OpenAIResponsesAdapter()))
            scene.release.set()
        assert "victim" not in ran
        call = scene.tracker.get("v")
        assert call is not None
        assert call.status is Status.ERROR
        assert call.error.kind == "arguments_mismatch"


async def test_a_turn_that_ends_not_ok_stops_a_gated_tool(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        scene = Scene("gate")
        async with anyio.create_task_group() as tg:
            await scene.open(tg)
            await scene.feed(call_events("v", "victim"))
            await scene.finish({"type": "end", "ok": False, "reason": "length"})
        assert "victim" not in scene.ran
        call = scene.tracker.get("v")
        assert call is not None
        assert isinstance(call.error, NotExecuted)


@pytest.mark.parametrize("waiting", ["gate", "slot"])
async def test_the_overall_timeout_stops_a_waiting_tool(anyio_backend: str, waiting: str) -> None:
    with anyio.fail_after(DEADLINE):
        scene = Scene(waiting, timeout=0.05)
        async with anyio.create_task_group() as tg:
            await scene.open(tg)
            await scene.feed(call_events("v", "victim"))
            call = await scene.tracker.wait_ready("v")
            with pytest.raises(Exception, match="timeout"):
                await scene.tracker.wait_done(call.id)  # the timeout fails it
            await scene.finish({"type": "end", "ok": True})
        assert "victim" not in scene.ran
        final = scene.tracker.get("v")
        assert final is not None
        assert isinstance(final.error, CallTimedOut)
        assert final.error.tool_started is False


@pytest.mark.parametrize("eager", [True, False])
async def test_tools_start_in_ready_order_over_max_concurrency(
    anyio_backend: str, eager: bool
) -> None:
    with anyio.fail_after(DEADLINE):
        started: list[int] = []

        async def work(n: int) -> int:
            started.append(n)
            await anyio.lowlevel.checkpoint()
            return n

        tracker = ToolCallTracker()
        events = [e for i in range(12) for e in call_events(f"c{i}", "work", {"n": i})]
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            await ToolRunner([tool(work, eager=eager)], max_concurrency=1).run(tracker)
        assert started == list(range(12))


async def test_a_tool_mutating_its_arguments_changes_nobody_elses(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        async def mutate(items: list[int], meta: dict[str, Any]) -> int:
            items.append(99)
            meta["changed"] = True
            return len(items)

        tracker = ToolCallTracker()
        args = {"items": [1], "meta": {"k": 1}}
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(call_events("m", "mutate", args)))
            await ToolRunner([mutate], eager=True).run(tracker)
        call = tracker.get("m")
        assert call is not None
        assert call.result == 2
        assert call.args == args


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "fault",
    [SystemExit(2), GeneratorExit(), Unprintable(), ValueError("bad"), "cancelled"],
    ids=["SystemExit", "GeneratorExit", "unprintable", "ValueError", "raised-cancel"],
)
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_a_tool_fault_fails_only_its_call(anyio_backend: str, fault: Any, sync: bool) -> None:
    if fault == "cancelled":
        if anyio_backend != "asyncio" or sync:
            pytest.skip("only asyncio's CancelledError can be raised by a tool itself")
        import asyncio

        fault = asyncio.CancelledError()
    with anyio.fail_after(DEADLINE):

        def faulty_sync() -> None:
            raise fault

        async def faulty_async() -> None:
            raise fault

        async def healthy() -> str:
            await anyio.lowlevel.checkpoint()
            return "fine"

        faulty = tool(faulty_sync if sync else faulty_async, name="faulty")
        tracker = ToolCallTracker()
        events = call_events("f", "faulty") + call_events("h", "healthy")
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            await ToolRunner([faulty, healthy], eager=True).run(tracker)
        bad, good = tracker.get("f"), tracker.get("h")
        assert bad is not None
        assert good is not None
        assert bad.status is Status.ERROR
        assert bad.error.kind == "tool_exception"
        assert bad.error.exception == type(fault).__name__
        assert good.status is Status.DONE
        assert good.result == "fine"


async def test_consume_returns_when_closed_with_an_event_in_hand(anyio_backend: str) -> None:
    """Closing while the source hands over its next event in the same step: consume
    returns (no TrackerClosed that would cancel the sibling tasks)."""
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        sibling_finished = anyio.Event()

        async def source() -> Any:
            yield {"type": "start", "id": "a", "name": "f"}
            await tracker.aclose()
            yield {"type": "delta", "id": "a", "argsTextDelta": "{}"}  # already in hand
            raise AssertionError("consume read past the close")

        async def sibling() -> None:
            await anyio.lowlevel.checkpoint()
            sibling_finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(sibling)
            tg.start_soon(tracker.consume, source())
        assert sibling_finished.is_set()
        assert tracker.closed
        call = tracker.get("a")
        assert call is not None
        assert call.args_text == ""  # the event in hand was not applied
