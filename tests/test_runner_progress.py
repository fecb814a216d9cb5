"""Progress from async-generator tools: several updates, a generator raising half-way, one
cancelled, and the shape an AI SDK stream carries them in (preliminary outputs).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anyio
import pytest

from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    CallCancelled,
    RunControl,
    Status,
    ToolCallTracker,
    ToolRaised,
    ToolRunner,
    tool,
)
from toolcall_tracker.adapters import AISDKAdapter, AISDKEncoder, AISDKListener
from toolcall_tracker.events import parse_event
from toolcall_tracker.runner import ProgressUpdate

pytestmark = pytest.mark.anyio


async def count(to: int) -> AsyncIterator[dict[str, int]]:
    """Counts, reporting each step."""
    for i in range(1, to + 1):
        await anyio.lowlevel.checkpoint()
        yield {"done": i, "of": to}


async def run_with(runner: ToolRunner, events: list[Any], control: RunControl) -> dict[str, Any]:
    tracker = ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(events))
        return by_id(await runner.run(tracker, control=control))


async def test_every_yield_is_progress_and_the_last_is_the_result(anyio_backend: str) -> None:
    seen: list[ProgressUpdate] = []
    iterated: list[tuple[str, int]] = []
    control = RunControl(on_progress=seen.append)
    runner = ToolRunner([tool(count, eager=True)])
    assert runner.tools["count"].is_generator
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                async for update in control.progress("b"):
                    iterated.append((update.call_id, update.index))

            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()  # the iterator is listening
            events = [*call_events("a", "count", {"to": 3}), *call_events("b", "count", {"to": 2})]
            calls = await run_with(runner, [*events, {"type": "end"}], control)
    assert calls["a"].result == {"done": 3, "of": 3}
    assert calls["b"].result == {"done": 2, "of": 2}
    mine = [(u.index, u.value["done"]) for u in seen if u.call_id == "a"]
    assert mine == [(0, 1), (1, 2), (2, 3)]
    assert {u.tool for u in seen} == {"count"}
    assert iterated == [("b", 0), ("b", 1)]  # one call's updates only, and the run ended it


async def test_a_generator_that_yields_nothing_returns_none(anyio_backend: str) -> None:
    async def quiet() -> AsyncIterator[int]:
        if False:  # pragma: no cover
            yield 1

    with anyio.fail_after(DEADLINE):
        calls = await run_with(
            ToolRunner([tool(quiet, eager=True)]), call_events("q", "quiet"), RunControl()
        )
    assert calls["q"].status is Status.DONE
    assert calls["q"].result is None


async def test_a_generator_raising_half_way_fails_its_call(anyio_backend: str) -> None:
    seen: list[Any] = []
    cleaned: list[bool] = []

    async def flaky() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
            raise ValueError("disk full")
        finally:
            cleaned.append(True)

    with anyio.fail_after(DEADLINE):
        calls = await run_with(
            ToolRunner([tool(flaky, eager=True), tool(count, eager=True)]),
            [*call_events("f", "flaky"), *call_events("c", "count", {"to": 2})],
            RunControl(on_progress=lambda u: seen.append((u.call_id, u.value))),
        )
    error = calls["f"].error
    assert isinstance(error, ToolRaised)
    assert error.exception == "ValueError"
    assert "disk full" in error.message
    assert [v for c, v in seen if c == "f"] == [1, 2]  # what it reported stands
    assert cleaned == [True]
    assert calls["c"].result == {"done": 2, "of": 2}  # the other call is untouched


async def test_a_cancelled_generator_is_closed_and_reports_no_more(anyio_backend: str) -> None:
    seen: list[int] = []
    cleaned: list[bool] = []
    release = anyio.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            i = 0
            while True:
                yield i
                i += 1
                if i == 2:
                    await release.wait()
        finally:
            cleaned.append(True)

    control = RunControl(on_progress=lambda u: seen.append(u.value))
    tracker = ToolCallTracker()
    send, receive = anyio.create_memory_object_stream[Any](100)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, receive)
            tg.start_soon(
                partial(ToolRunner([tool(endless, eager=True)]).run, tracker, control=control)
            )
            for event in call_events("e", "endless"):
                await send.send(event)
            await anyio.wait_all_tasks_blocked()
            assert seen == [0, 1]
            assert control.cancel("e", "enough")
            await anyio.wait_all_tasks_blocked()
            assert cleaned == [True]
            release.set()
            await send.aclose()
    error = tracker.get("e").error  # type: ignore[union-attr]
    assert isinstance(error, CallCancelled)
    assert error.tool_started
    assert seen == [0, 1]


async def test_progress_in_an_ai_sdk_stream_round_trip(anyio_backend: str) -> None:
    """Tool events go through the AI SDK encoder, progress as preliminary outputs in between;
    a reading adapter shows the same final result (preliminary outputs never finish a call)."""
    encoder = AISDKEncoder()
    parts: list[dict[str, Any]] = list(encoder.start())

    class Relay(ToolCallTracker):
        def apply(self, event: Any) -> None:
            super().apply(event)
            parts.extend(encoder.encode(event))

        def write_result(self, call_id: str, result: Any) -> None:
            super().write_result(call_id, result)
            parts.extend(encoder.encode({"type": "result", "id": call_id, "result": result}))

    control = RunControl(on_progress=lambda u: parts.extend(encoder.progress(u)))
    tracker = Relay()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            events = [*call_events("a", "count", {"to": 3}), {"type": "end"}]

            async def feed() -> None:
                for event in events:
                    tracker.apply(parse_event(event))  # type: ignore[arg-type]
                    await anyio.lowlevel.checkpoint()

            tg.start_soon(feed)
            await ToolRunner([tool(count, eager=True)]).run(tracker, control=control)
    kinds = [(p["type"], p.get("preliminary", False)) for p in parts]
    first_output = kinds.index(("tool-output-available", True))
    assert kinds.index(("tool-input-available", False)) < first_output
    assert [p["output"]["done"] for p in parts if p.get("preliminary")] == [1, 2, 3]
    assert kinds[-1] == ("tool-output-available", False) or ("finish", False) in kinds
    reader = AISDKAdapter()
    read = [event for part in parts for event in reader.feed(part)]
    results = [e for e in read if e.type == "result"]
    assert len(results) == 1
    assert results[0].result == {"done": 3, "of": 3}


async def test_progress_through_the_ai_sdk_listener(anyio_backend: str) -> None:
    """The change-feed encoder takes progress from on_progress, between input and output."""
    tracker = ToolCallTracker()
    listener = AISDKListener(tracker)
    tracker.subscribe(listener, fragments=True)
    control = RunControl(on_progress=listener.progress)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            events = [*call_events("a", "count", {"to": 2}), {"type": "end"}]
            tg.start_soon(tracker.consume, from_list(events))
            await ToolRunner([tool(count, eager=True)]).run(tracker, control=control)
    parts = listener.take()
    kinds = [(p["type"], p.get("preliminary", False)) for p in parts]
    available = kinds.index(("tool-input-available", False))
    final = kinds.index(("tool-output-available", False))
    preliminary = [i for i, kind in enumerate(kinds) if kind[1]]
    assert preliminary
    assert all(available < i < final for i in preliminary)
    assert [parts[i]["output"]["done"] for i in preliminary] == [1, 2]


async def test_a_slow_progress_reader_keeps_only_the_latest_updates(anyio_backend: str) -> None:
    """A tool yielding far more than anyone reads does not grow memory without bound."""
    many = 5_000

    @tool(eager=True)
    async def chatty() -> AsyncIterator[int]:
        """Yield many updates."""
        for n in range(many):
            yield n

    control = RunControl()
    release = anyio.Event()
    seen: list[int] = []

    async def slow_reader() -> None:
        async for update in control.progress():
            seen.append(update.value)
            if len(seen) == 1:
                await release.wait()  # reads nothing more until the run is over

    tracker = ToolCallTracker()
    for event in [*call_events("c", "chatty"), {"type": "end"}]:
        tracker.apply(event)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_reader)
            await anyio.wait_all_tasks_blocked()  # subscribed before the tool runs
            await ToolRunner([chatty]).run(tracker, control=control)
            release.set()
    assert tracker.get("c").result == many - 1  # type: ignore[union-attr]
    assert 1 < len(seen) <= 1 + 1_024
    assert seen[-1] == many - 1
