"""The steady load of ``headstart.py`` (part ``steady``): many turn loops in one process.

Each of ``turns`` loops runs model turns back to back for ``seconds``: a turn is 3 calls of
about 120 bytes of arguments in 8-byte fragments (seed events: the tracker's own input, so
the figures are the tracker's and the runner's, not an adapter's), for one eager tool that
returns at once, through the public API::

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        calls = await runner.run(tracker)

Items arrive at ``rate`` per second per turn, with jitter, and a source wakes once per
simulated network read: each read delivers 1 to 6 items (at most 4 KB), yielded back to
back without blocking, as an SSE client does with one socket read. The sources-only
baseline runs the same loops with the same reads and drains them without the library, and
the skeleton runs them through the concurrency the library's guarantees need and nothing
else (:func:`skeleton_turn`): what it costs over the baseline bounds from below the CPU per
item of any implementation with a task per call.

Reported: completing item (the ``ready``, stamped right after the source yields it) to tool
start (``tracker.timeline(id).tool_started``) p50/p99/max over the steady state (turns that
began after the first second), the library's CPU per item over the baseline's, the longest
garbage-collection pause and event-loop lag, and (from a separate run under tracemalloc)
memory per idle turn and per pending call. Each level runs with the recommended setting
(:func:`recommended_gc`; the median of several runs) and with the default collector (one
run); the 1-minute load average is recorded before each level, and the report says where
one process saturates.
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import statistics
import time
import tracemalloc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from toolcall_tracker import ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker._waiting import checkpoints_to_skip
from toolcall_tracker.tracker import READY_CHECKPOINTS

CALLS, ARGS, FRAGMENT, MAX_READ, MAX_READ_BYTES = 3, 120, 8, 6, 4096
WARM_UP = 1.0  # seconds: turns that begin earlier are not counted (a quarter of short runs)
GC_THRESHOLD0 = 20_000
GRACE = 2.0  # seconds after the end: turns still running then are cut off
BASELINE_SECONDS = 6.0  # the sources-only baseline and the skeleton (1 s warm-up, 5 s)
SUBJECTS = ("sources", "skeleton", "library")


def recommended_gc() -> None:
    """The documented setting (docs/performance.md): move everything alive after start-up
    to the permanent generation, and collect generation 0 every 20,000 allocations."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, 10, 10)


def default_gc() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.collect()


def turn_events(turn: int) -> tuple[list[dict[str, Any]], list[int]]:
    """One turn's seed events, and the indexes of its ready items."""
    events: list[dict[str, Any]] = []
    readies: list[int] = []
    for index in range(CALLS):
        call_id = f"t{turn}-c{index}"
        text = json.dumps({"query": "q" * (ARGS - 14)})  # about ARGS bytes
        events.append({"type": "start", "id": call_id, "name": "lookup"})
        events += [
            {"type": "delta", "id": call_id, "argsTextDelta": text[at : at + FRAGMENT]}
            for at in range(0, len(text), FRAGMENT)
        ]
        readies.append(len(events))
        events.append({"type": "ready", "id": call_id})
    return events, readies


def reads(count: int, rng: random.Random) -> list[int]:
    """Split ``count`` items into network reads of 1 to MAX_READ items."""
    sizes: list[int] = []
    while count > 0:
        size = min(count, rng.randint(1, MAX_READ))
        sizes.append(size)
        count -= size
    return sizes


@dataclass
class Loop:
    """What one turn loop recorded."""

    items: int = 0
    latencies: list[float] = field(default_factory=list)
    lag: float = 0.0  # the longest lateness of a read, seconds


async def source(
    events: list[dict[str, Any]], sizes: list[int], rate: float, rng: random.Random, out: Any
) -> AsyncIterator[dict[str, Any]]:
    """The events, one network read at a time: sleep until the read is due, then yield its
    items back to back. ``out`` collects the stamp of each item right after it is yielded."""
    at = anyio.current_time()
    position = 0
    for size in sizes:
        at += size / rate * rng.uniform(0.5, 1.5)  # jittered arrivals, ``rate`` on average
        await anyio.sleep_until(at)
        out.lag = max(out.lag, anyio.current_time() - at)
        for event in events[position : position + size]:
            out.stamps.append(time.monotonic())  # handed over now, with no wait before
            yield event
        position += size


class _Stamps:
    __slots__ = ("lag", "stamps")

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.lag = 0.0


async def skeleton_turn(feed: AsyncIterator[Any], yields: int) -> None:
    """One turn through the concurrency the library's guarantees need, and nothing else.

    A consuming task in a cancel scope (``close()`` must be able to stop it) that yields
    ``yields`` times after each ready item (the head start: ``READY_CHECKPOINTS``, one
    fewer on asyncio, as ``consume`` does), and a runner that waits on an event, then
    starts each ready call's tool in a task of its own task group, inside a cancel scope
    (per-call cancel and timeout). No arguments are kept or parsed, no state is tracked,
    nothing is validated or recorded.
    """
    ready: list[str] = []
    wake = [anyio.Event()]
    ended = False

    async def consume() -> None:
        nonlocal ended
        with anyio.CancelScope():  # what close() cancels
            async for event in feed:
                if event["type"] == "ready":
                    ready.append(event["id"])
                    wake[0].set()
                    for _ in range(yields):
                        await anyio.lowlevel.checkpoint()
        ended = True
        wake[0].set()

    async def run_tool(call_id: str) -> None:
        with anyio.CancelScope():
            await _answer(call_id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        async with anyio.create_task_group() as tools:
            while True:
                while ready:
                    tools.start_soon(run_tool, ready.pop(0))
                if ended:
                    break
                wake[0] = anyio.Event()
                await wake[0].wait()


async def _answer(query: str) -> int:
    """The skeleton's tool: answers at once, as the library run's does."""
    return len(query)


def skeleton_yields() -> int:
    """How often the skeleton yields after a ready item on the running backend: as often
    as ``consume`` does after an item that woke a waiting task (its own rule, read)."""
    return READY_CHECKPOINTS - checkpoints_to_skip()


async def turn_loop(
    index: int,
    subject: str,
    runner: ToolRunner | None,
    rate: float,
    until: float,
    begin: float,
    loop: Loop,
) -> None:
    rng = random.Random(index)
    yields = skeleton_yields()
    warm_up = min(WARM_UP, (until - anyio.current_time()) / 4)
    await anyio.sleep(rng.uniform(0, warm_up))  # jittered start
    turn = 0
    while anyio.current_time() < until:
        events, readies = turn_events(turn)
        sizes = reads(len(events), rng)
        stamps = _Stamps()
        counted = time.monotonic() - begin >= warm_up
        feed = source(events, sizes, rate, rng, stamps)
        try:
            ran = await one_turn(subject, feed, runner, yields)
            if counted and ran is not None:
                tracker, calls = ran
                for call, ready in zip(calls, readies, strict=True):
                    timeline = tracker.timeline(call.id)
                    if timeline is not None and timeline.tool_started is not None:
                        loop.latencies.append(timeline.tool_started - stamps.stamps[ready])
        finally:  # (a turn cut off at the end of a saturated run counts what it read)
            if counted:
                loop.items += len(stamps.stamps)
                loop.lag = max(loop.lag, stamps.lag)
        turn += 1


async def one_turn(
    subject: str, feed: AsyncIterator[Any], runner: ToolRunner | None, yields: int
) -> tuple[ToolCallTracker, list[ToolCall]] | None:
    """One turn of ``subject`` (one of :data:`SUBJECTS`): the library's tracker and calls,
    ``None`` for the others. ``runner``: the library's; ``yields``: the skeleton's."""
    if subject == "sources":
        async for _ in feed:
            pass
        return None
    if subject == "skeleton":
        await skeleton_turn(feed, yields)
        return None
    assert runner is not None
    return await library_turn(runner, feed)


async def library_turn(
    runner: ToolRunner, feed: AsyncIterator[Any]
) -> tuple[ToolCallTracker, list[ToolCall]]:
    """One turn through the public pattern: the tracker and the calls ``run`` returned."""
    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, feed)
        calls = await runner.run(tracker)
    return tracker, calls


def make_runner() -> ToolRunner:
    async def lookup(query: str) -> int:
        """An eager read-only tool that answers at once."""
        return len(query)

    return ToolRunner([tool(lookup, eager=True)])


async def run_level(turns: int, seconds: float, rate: float, subject: str) -> dict[str, Any]:
    """``turns`` turn loops of ``subject`` (one of :data:`SUBJECTS`) for ``seconds``."""
    runner = make_runner() if subject == "library" else None  # one for every turn
    loops = [Loop() for _ in range(turns)]
    pauses: list[float] = []
    began = 0.0

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        nonlocal began
        if phase == "start":
            began = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - began)

    begin = time.monotonic()
    until = anyio.current_time() + seconds
    gc.callbacks.append(on_gc)
    cpu = time.process_time()
    try:
        # A saturated process would take ever longer to finish its turns: GRACE after the
        # end, the turns still running are cut off.
        with anyio.move_on_after(seconds + GRACE):
            async with anyio.create_task_group() as tg:
                for index, loop in enumerate(loops):
                    tg.start_soon(turn_loop, index, subject, runner, rate, until, begin, loop)
    finally:
        cpu = time.process_time() - cpu
        gc.callbacks.remove(on_gc)
    items = sum(loop.items for loop in loops)
    latencies = sorted(x for loop in loops for x in loop.latencies)
    return {
        "items": items,
        "cpu_s": cpu,
        "cpu_us_per_item": cpu / items * 1e6 if items else math.nan,
        "items_per_s": items / (seconds - min(WARM_UP, seconds / 4)),
        "latency": _stats(latencies),
        "max_gc_pause_ms": max(pauses, default=0.0) * 1e3,
        "gc_collections": len(pauses),
        "max_lag_ms": max((loop.lag for loop in loops), default=0.0) * 1e3,
    }


def _stats(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    p99 = values[max(0, math.ceil(0.99 * len(values)) - 1)]
    return {
        "n": len(values),
        "p50_ms": values[len(values) // 2] * 1e3,
        "p99_ms": p99 * 1e3,
        "max_ms": values[-1] * 1e3,
    }


async def memory(turns: int) -> dict[str, float]:
    """Bytes per idle turn (tracker, consume, runner, waiting for the next read) and per
    pending call (a call started, some fragments in, waiting), under tracemalloc."""
    runner = make_runner()

    async def parked(items: list[dict[str, Any]], release: anyio.Event) -> AsyncIterator[Any]:
        for item in items:
            yield item
        await release.wait()

    async def measure(items: list[dict[str, Any]]) -> float:
        release = anyio.Event()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            async with anyio.create_task_group() as tg:
                for _ in range(turns):
                    tg.start_soon(library_turn, runner, parked(items, release))
                for _ in range(20):  # let every turn reach its wait
                    await anyio.lowlevel.checkpoint()
                held = tracemalloc.get_traced_memory()[0] - before
                release.set()
        finally:
            tracemalloc.stop()
        return held / turns

    events, _ = turn_events(0)
    idle = await measure([])
    pending = await measure(events[: 1 + ARGS // FRAGMENT // 2])  # a start, half its fragments
    return {"idle_turn_bytes": idle, "pending_call_bytes": pending - idle}


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over ``runs`` (latency figures each on their own)."""
    if len(runs) == 1:
        return runs[0]
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            merged[key] = _median([run[key] for run in runs])
        elif value is None or any(run[key] is None for run in runs):
            merged[key] = None
        else:
            merged[key] = statistics.median(run[key] for run in runs)
    return merged


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover (no load average on this platform)
        return None


def steady_phase(
    backend: str, levels: tuple[int, ...], seconds: float, rate: float, repeats: int = 3
) -> list[dict[str, Any]]:
    """Every level: the library with the recommended collector setting (median of
    ``repeats`` runs) and with the default collector (one run), beside the sources-only
    baseline (one shorter run, :data:`BASELINE_SECONDS`, recommended setting: its CPU per
    item is what is subtracted) and the skeleton (one run as long, recommended setting);
    then where one process saturates and the memory per idle turn and per pending call."""
    rows: list[dict[str, Any]] = []
    for level in levels:
        load = load_average()
        recommended_gc()
        base_seconds = min(seconds, BASELINE_SECONDS)
        base = anyio.run(run_level, level, base_seconds, rate, "sources", backend=backend)
        recommended_gc()
        skeleton = anyio.run(run_level, level, base_seconds, rate, "skeleton", backend=backend)
        runs = []
        for _ in range(repeats):
            recommended_gc()
            runs.append(anyio.run(run_level, level, seconds, rate, "library", backend=backend))
        default_gc()
        plain = anyio.run(run_level, level, seconds, rate, "library", backend=backend)
        for setting, lib, count in (("recommended", _median(runs), repeats), ("default", plain, 1)):
            rows.append(
                {
                    "backend": backend,
                    "turns": level,
                    "gc": setting,
                    "runs": count,
                    "load_average": load,
                    "library": lib,
                    "baseline": base,
                    "skeleton": skeleton,
                    "extra_cpu_us_per_item": lib["cpu_us_per_item"] - base["cpu_us_per_item"],
                    "skeleton_cpu_us_per_item": (
                        skeleton["cpu_us_per_item"] - base["cpu_us_per_item"]
                    ),
                    "keeps_up": lib["items_per_s"] >= 0.9 * level * rate,
                }
            )
    default_gc()
    rows.append({"backend": backend, "saturation": saturation(rows, rate)})
    idle = min(max(200, *levels), 1000)  # (at least 200: fewer turns measure noise)
    rows.append({"backend": backend, "memory": anyio.run(memory, idle, backend=backend)})
    return rows


def saturation(rows: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    """Where one process saturates: the largest level that kept up (recommended setting),
    and the estimate of one core's worth of turns from the CPU per item (library and
    sources together) measured at that level (at the smallest level if none kept up)."""
    measured = [row for row in rows if row["gc"] == "recommended"]
    kept = [row for row in measured if row["keeps_up"]]
    if not measured:
        return {"kept_up_to": 0, "estimated_turns": None, "cpu_us_per_item": None}
    row = max(kept, key=lambda row: row["turns"]) if kept else min(measured, key=_turns)
    cpu = row["library"]["cpu_us_per_item"]
    return {
        "kept_up_to": row["turns"] if kept else 0,
        "cpu_us_per_item": cpu,
        "estimated_turns": 1e6 / cpu / rate if cpu > 0 else None,
    }


TARGETS = (("asyncio", 1000, 2.0), ("trio", 300, 4.0))
"""(backend, turns, p99 limit in ms): the issue's latency targets for this workload."""


def targets(rows: list[dict[str, Any]]) -> list[tuple[str, float | None, float]]:
    """``(what, measured, limit)`` for every target a row of the table answers (the
    recommended setting's medians): p99 latency, the longest collector pause (20 ms) and
    the library's CPU per item (5 us) at the levels that kept up."""
    found: list[tuple[str, float | None, float]] = []
    for row in rows:
        if row.get("gc") != "recommended":
            continue
        name, lib = f"{row['backend']} {row['turns']:,} turns", row["library"]
        for backend, turns, limit in TARGETS:
            if (row["backend"], row["turns"]) == (backend, turns):
                found.append((f"{name}: p99 ms <", lib["latency"]["p99_ms"], limit))
        found.append((f"{name}: longest GC pause ms <=", lib["max_gc_pause_ms"], 20.0))
        if row["keeps_up"]:
            found.append((f"{name}: library CPU us per item <=", row["extra_cpu_us_per_item"], 5.0))
    return found


def _turns(row: dict[str, Any]) -> int:
    return int(row["turns"])


def report(rows: list[dict[str, Any]], out: Any) -> None:
    """Print the steady-load table (one row per backend, level and collector setting)."""
    print("\n== steady load: turns back to back, 3 calls x ~120 B in 8-byte fragments,", file=out)
    print("   50 items/s per turn in reads of 1-6 items, one eager tool; recommended GC:", file=out)
    print(
        f"   gc.freeze() + gc.set_threshold({GC_THRESHOLD0}, 10, 10), median of its runs;"
        " default GC: one run; load = 1-min load average before the level",
        file=out,
    )
    print(
        "   +cpu: the library's CPU per item over the sources alone; skeleton: the same for"
        " the concurrency alone (a task per call, its cancel scopes, the head start)",
        file=out,
    )
    head = "backend  turns  gc           runs  load   items/s   p50 ms   p99 ms   max ms"
    print(head + "  +cpu us/item  skeleton  gc pause ms  lag ms  keeps up", file=out)
    for row in rows:
        if "memory" in row:
            mem = row["memory"]
            print(
                f"{row['backend']:<8} memory: {mem['idle_turn_bytes'] / 1024:.1f} KiB per idle"
                f" turn, {mem['pending_call_bytes'] / 1024:.2f} KiB per pending call",
                file=out,
            )
            continue
        if "saturation" in row:
            sat = row["saturation"]
            estimate = sat["estimated_turns"]
            guess = f"about {estimate:,.0f} turns" if estimate else "not estimated"
            print(
                f"{row['backend']:<8} saturation: kept up to {sat['kept_up_to']:,} turns;"
                f" one core's worth at the CPU per item measured there: {guess}",
                file=out,
            )
            continue
        lib, lat = row["library"], row["library"]["latency"]
        cells = [lat[k] for k in ("p50_ms", "p99_ms", "max_ms")]
        shown = " ".join(f"{c:8.2f}" if c is not None else "       -" for c in cells)
        load = row["load_average"]
        print(
            f"{row['backend']:<8} {row['turns']:>5}  {row['gc']:<11} {row['runs']:>5}"
            f" {load if load is not None else math.nan:>5.2f} {lib['items_per_s']:>9,.0f}"
            f" {shown} {row['extra_cpu_us_per_item']:>13.1f}"
            f" {row['skeleton_cpu_us_per_item']:>9.1f} {lib['max_gc_pause_ms']:>12.1f}"
            f" {lib['max_lag_ms']:>7.1f}  {'yes' if row['keeps_up'] else 'NO'}",
            file=out,
        )
    for what, value, limit in targets(rows):
        ok = value is not None and value <= limit
        shown = "-" if value is None else f"{value:.2f}"
        print(f"{'ok  ' if ok else 'MISS'}  {what} {limit:g}: {shown}", file=out)
