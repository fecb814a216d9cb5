"""Driving replays for ``headstart.py``: the timed source, one turn, many turns, the baseline.

Every turn goes through the public API exactly as a user writes it::

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, adapt(source, SomeAdapter()))
        calls = await runner.run(tracker)

Clocks: the source paces itself on the event loop's clock (``anyio.sleep_until``), so the
token rate is steady; every timestamp taken for the figures is ``time.monotonic()``, the
clock of :class:`toolcall_tracker.CallTimeline` (the runner's ``tool_started`` and
``tool_finished``), so item times and tool times compare directly.
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from _headstart_streams import FORMATS, Replay

from toolcall_tracker import ToolCallTracker, ToolRunner, tool
from toolcall_tracker._registry import get
from toolcall_tracker.adapters import AISDKAdapter, OpenAIChatAdapter, adapt

# The adapters of the formats the head-start streams are rendered in, from the registry.
ADAPTERS: dict[str, Callable[[], Any]] = {
    fmt: get(fmt.replace("_", "-")).load("adapter") for fmt in FORMATS
}
ADAPTERS["openai_chat_eager"] = lambda: OpenAIChatAdapter(eager=True)
# The AI SDK reader makes a step's calls ready at the end of the step by default (an
# approval request or a reset-step may still come); ready="input" is its head start.
ADAPTERS["ai_sdk"] = lambda: AISDKAdapter(ready="input")


def synthetic_tools(latencies: dict[str, float]) -> ToolRunner:
    """Eager tools with typed signatures (validated like real ones) that sleep a known time."""

    def make(name: str, seconds: float) -> Any:
        async def run(query: str, limit: int, items: list[dict[str, Any]], pad: str) -> int:
            await anyio.sleep(seconds)
            return len(items)

        run.__doc__ = f"Simulated read-only tool taking {seconds * 1000:g} ms."
        return tool(run, name=name, eager=True)

    return ToolRunner([make(name, seconds) for name, seconds in latencies.items()])


def recorded_tools(names: set[str], seconds: float) -> ToolRunner:
    """Eager tools named as a recording's calls, taking any arguments."""

    def make(name: str) -> Any:
        async def run(**arguments: Any) -> int:
            await anyio.sleep(seconds)
            return len(arguments)

        return tool(run, name=name, eager=True)

    return ToolRunner([make(name) for name in sorted(names)])


# -- the source ----------------------------------------------------------------------------------


@dataclass
class Played:
    """What the source recorded while one replay was played."""

    begin: float = 0.0  # time.monotonic() when the turn began (before its first item)
    stamps: list[float] = field(default_factory=list)  # per item, right after it was yielded
    lag: list[float] = field(default_factory=list)  # per paced item: loop-clock lateness (s)


async def paced(replay: Replay, rate: float, played: Played) -> AsyncIterator[Any]:
    """The replay's items at ``rate`` token slots per second, on the event loop's clock."""
    start = anyio.current_time()
    slot = 0
    for item, ticks in zip(replay.items, replay.ticks, strict=True):
        if ticks:
            slot += ticks
            deadline = start + slot / rate
            await anyio.sleep_until(deadline)
            played.lag.append(anyio.current_time() - deadline)
        yield item


async def stamped(source: AsyncIterator[Any], played: Played) -> AsyncIterator[Any]:
    """Wraps a source: the time each item is handed over, right after the source yields it."""
    stamps = played.stamps
    async for item in source:
        stamps.append(time.monotonic())
        yield item


# -- one turn ------------------------------------------------------------------------------------


@dataclass
class TurnResult:
    """The figures of one turn (seconds; latencies per call in start order)."""

    fmt: str
    label: str
    items: int
    latencies: list[float]  # completing item -> tool started, per call that ran
    ready_to_start: list[float]  # the tracker's own ready -> tool started
    not_run: int  # completed calls whose tool never started
    measured: float | None = None  # turn begin -> last tool finished
    after_stream: float | None = None  # ... if every tool started when the stream ended
    ideal: float | None = None  # ... if each tool started the instant its call completed
    lag: list[float] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0


async def play_turn(
    replay: Replay, adapter: str, runner: ToolRunner, rate: float, delay: float = 0.0
) -> TurnResult:
    """Play one turn through the tracker and the runner; measure it."""
    if delay:
        await anyio.sleep(delay)
    played = Played(begin=time.monotonic())
    source = stamped(paced(replay, rate, played), played)
    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, adapt(source, ADAPTERS[adapter]()))
        calls = await runner.run(tracker)
        timelines = {call.id: tracker.timeline(call.id) for call in calls}
    return measure(replay, adapter, played, [c.id for c in calls], timelines)


def _pair(replay: Replay, ids: list[str]) -> list[tuple[int, str]]:
    """(completion order, tracker id): by the provider's id, else by start order."""
    pairs: list[tuple[int, str]] = []
    left = list(ids)
    unmatched = []
    for c in replay.completions:
        if c.call_id and c.call_id in left:
            left.remove(c.call_id)
            pairs.append((c.order, c.call_id))
        else:
            unmatched.append(c.order)
    pairs += zip(unmatched, left, strict=False)
    return pairs


def measure(
    replay: Replay, adapter: str, played: Played, ids: list[str], timelines: dict[str, Any]
) -> TurnResult:
    stamps = played.stamps
    result = TurnResult(adapter, replay.label, len(stamps), [], [], 0, lag=played.lag)
    result.first, result.last = played.begin, stamps[-1] if stamps else played.begin
    ends_ideal: list[float] = []
    ends: list[float] = []
    durations: list[float] = []
    for order, call_id in _pair(replay, ids):
        done_at = replay.completions[order].item
        timeline = timelines.get(call_id)
        if done_at is None or done_at >= len(stamps):
            continue  # never completed by the provider: nothing to compare
        started = timeline.tool_started if timeline else None
        if started is None or timeline is None or timeline.tool_finished is None:
            result.not_run += 1
            continue
        completed = stamps[done_at]
        duration = timeline.tool_finished - started
        result.latencies.append(started - completed)
        if timeline.ready is not None:
            result.ready_to_start.append(started - timeline.ready)
        ends.append(timeline.tool_finished)
        ends_ideal.append(completed + duration)
        durations.append(duration)
    if ends:
        begin = played.begin
        result.measured = max(ends) - begin
        result.after_stream = stamps[-1] + max(durations) - begin
        result.ideal = max(ends_ideal) - begin
    return result


# -- many turns ------------------------------------------------------------------------------------


@dataclass
class LoadResult:
    turns: list[TurnResult]  # empty for the baseline
    items: int
    cpu: float  # process CPU seconds for the whole run
    wall: float
    span: float  # first turn's begin -> last item of any turn
    lag: list[float]
    gc_pauses: list[float] = field(default_factory=list)  # seconds, per collection
    gc_full: int = 0  # collections of the oldest generation

    @property
    def events_per_second(self) -> float:
        return self.items / self.span if self.span > 0 else math.nan


async def play_many(
    plan: list[tuple[Replay, str, ToolRunner | None]],
    rate: float,
    window: float,
    seed: str,
) -> LoadResult:
    """Play every turn of ``plan`` in this event loop, arriving at jittered times within
    ``window`` seconds; a turn without a runner is only drained (the baseline)."""
    rng = random.Random(seed)
    delays = [0.0] + [rng.uniform(0, window) for _ in plan[1:]]
    results: list[TurnResult] = []
    drained: list[Played] = []

    async def one(replay: Replay, adapter: str, runner: ToolRunner | None, delay: float) -> None:
        if runner is not None:
            results.append(await play_turn(replay, adapter, runner, rate, delay))
            return
        await anyio.sleep(delay)
        played = Played(begin=time.monotonic())
        async for _ in stamped(paced(replay, rate, played), played):
            pass
        drained.append(played)

    pauses: list[float] = []
    full = 0
    began = 0.0

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        nonlocal began, full
        if phase == "start":
            began = time.perf_counter()
            return
        pauses.append(time.perf_counter() - began)
        full += info.get("generation") == 2

    gc.callbacks.append(on_gc)
    cpu, wall = time.process_time(), time.monotonic()
    try:
        async with anyio.create_task_group() as tg:
            for (replay, adapter, runner), delay in zip(plan, delays, strict=True):
                tg.start_soon(one, replay, adapter, runner, delay)
    finally:
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        gc.callbacks.remove(on_gc)
    spans = [(p.begin, p.stamps[-1] if p.stamps else p.begin) for p in drained]
    spans += [(r.first, r.last) for r in results]
    span = max(e for _, e in spans) - min(b for b, _ in spans) if spans else math.nan
    items = sum(len(p.stamps) for p in drained) + sum(r.items for r in results)
    lag = [x for p in drained for x in p.lag] + [x for r in results for x in r.lag]
    return LoadResult(results, items, cpu, wall, span, lag, pauses, full)
