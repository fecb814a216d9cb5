"""Soak test: one tracker, a long session, bounded memory, nothing lost.

Not part of the test suite. Run from the repository root::

    .venv/bin/python stress/soak.py                       # 100,000 calls, 5,000,000+ events
    .venv/bin/python stress/soak.py --backend trio
    .venv/bin/python stress/soak.py --quick               # 10,000 calls, a few seconds
    .venv/bin/python stress/soak.py --calls 200000 --concurrency 2000 --no-tracemalloc

What it does: one :class:`ToolCallTracker` with ``keep_finished`` set, fed through
``consume`` by a generator that keeps ``--concurrency`` calls open at once and interleaves
their events at random (seeded): each call is a ``start``, its argument JSON cut into
``--deltas`` fragments, and a ``ready``. One call in 50 has argument text that is not JSON
(it fails at ``ready``). A runner finishes every ready call: the library's
``ToolRunner`` (eager tools) when ``toolcall_tracker.runner`` exists, else a minimal loop
over ``tracker.ready_calls()`` that applies the results (``--runner loop`` forces it); the
tool raises for one call in 97.

A short warm-up turn (``--warmup`` calls, untraced) runs first, so that one-time lazy
imports are not counted as session growth. It reports events/s and peak memory
(tracemalloc and ``getrusage`` max RSS) and asserts:

- every call ended ``done`` or ``error``, each exactly once, with the counts expected by
  construction (done = tool successes; error = invalid JSON + tool exceptions);
- no event was ignored (counted through the ``on_ignored`` hook) and nothing is left
  ``pending`` or ``running``;
- traced memory after the run, once the finished calls are forgotten, is within
  ``--tolerance`` MiB of what it was at the start.

The runner is started first and allowed to reach its first wait (``--no-settle`` skips
that: with a source that never blocks, the runner is then starved until the stream ends,
and the ``Limits.max_calls`` limit is hit).

Finished calls are counted by a listener of the tracker's change feed (``subscribe``).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import itertools
import logging
import random
import resource
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

if importlib.util.find_spec("toolcall_tracker") is None:  # not installed: this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolcall_tracker import IgnoreReason, Status, ToolCallTracker
from toolcall_tracker.changes import ChangeListener

try:
    from toolcall_tracker.runner import ToolRunner
except ImportError:  # the runner is not there yet
    ToolRunner = None  # type: ignore[assignment,misc]

MiB = 1024 * 1024


class FinishCounter(ChangeListener):
    """Counts every call reaching ``done`` or ``error`` (each once), from the change feed."""

    def __init__(self) -> None:
        self.finished: Counter[str] = Counter()
        self.finished_ids: set[str] | None = None  # filled only with --check-ids

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after is Status.DONE or after is Status.ERROR:
            self.finished[after.value] += 1
            if self.finished_ids is not None:
                assert call_id not in self.finished_ids, f"{call_id} finished twice"
                self.finished_ids.add(call_id)


class Plan:
    """What the source will send, decided up front so the expected counts are known."""

    def __init__(self, calls: int, deltas: int, seed: int) -> None:
        self.calls = calls
        self.deltas = deltas
        self.rng = random.Random(seed)
        self.invalid = {i for i in range(calls) if i % 50 == 49}
        self.raises = {i for i in range(calls) if i % 97 == 96 and i not in self.invalid}

    def fragments(self, i: int) -> list[str]:
        pad = "x" * (self.deltas * 3)
        text = f'{{"i": {i}, "pad": "{pad}"}}'
        if i in self.invalid:
            text = text[:-1] + ",}"  # trailing comma: not JSON
        n = self.deltas
        size = len(text)
        cuts = [size * k // n for k in range(n + 1)]
        return [text[a:b] for a, b in itertools.pairwise(cuts)]


async def source(plan: Plan, concurrency: int, stats: dict[str, int]) -> AsyncIterator[dict]:
    """``concurrency`` calls open at once, their events interleaved at random."""
    rng = plan.rng
    next_call = 0
    # open calls: [call id, index, pending events (reversed, so pop() is the next one)]
    open_calls: list[list[Any]] = []

    def open_one() -> None:
        nonlocal next_call
        i = next_call
        next_call += 1
        cid = f"call-{i}"
        events: list[dict[str, Any]] = [{"type": "start", "id": cid, "name": "work"}]
        events += [{"type": "delta", "id": cid, "argsTextDelta": f} for f in plan.fragments(i)]
        events.append({"type": "ready", "id": cid})
        events.reverse()
        open_calls.append([cid, i, events])

    while next_call < plan.calls and len(open_calls) < concurrency:
        open_one()
    sent = 0
    while open_calls:
        slot = rng.randrange(len(open_calls))
        entry = open_calls[slot]
        event = entry[2].pop()
        if not entry[2]:  # that was its ready: replace it with a new call
            open_calls[slot] = open_calls[-1]
            open_calls.pop()
            if next_call < plan.calls:
                open_one()
        sent += 1
        yield event
    stats["sent"] = sent


async def work(i: int, pad: str) -> int:
    if i % 97 == 96:
        raise RuntimeError(f"tool failure for call {i}")
    return i


async def loop_runner(tracker: ToolCallTracker) -> None:
    """The minimal runner: apply each ready call's result (or error) at once."""
    async for call in tracker.ready_calls():
        try:
            value = await work(**call.args)
        except RuntimeError as exc:
            tracker.apply({"type": "error", "id": call.id, "error": str(exc)})
        else:
            tracker.apply({"type": "result", "id": call.id, "result": value})


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0


async def soak(args: argparse.Namespace) -> int:
    plan = Plan(args.calls, args.deltas, args.seed)
    ignored: Counter[str] = Counter()

    def on_ignored(event: Any, reason: IgnoreReason) -> None:
        ignored[str(reason)] += 1

    # The runner logs each tool exception with its traceback; one call in 97 raises here.
    logging.getLogger("toolcall_tracker.runner").setLevel(logging.CRITICAL)
    use_library = ToolRunner is not None and args.runner != "loop"
    if args.warmup:  # a short untraced turn first: lazy imports are not session growth
        warm = ToolCallTracker(keep_finished=args.keep_finished)
        async with anyio.create_task_group() as tg:
            if use_library:
                tg.start_soon(ToolRunner([work], eager=True).run, warm)
            else:
                tg.start_soon(loop_runner, warm)
            await anyio.wait_all_tasks_blocked()
            await warm.consume(source(Plan(args.warmup, args.deltas, 0), 100, {}))
        await warm.aclose()
        del warm
    runner_name = "toolcall_tracker.runner.ToolRunner (eager)" if use_library else "minimal loop"
    if args.tracemalloc:
        tracemalloc.start()
    tracker = ToolCallTracker(on_ignored=on_ignored, keep_finished=args.keep_finished)
    counter = FinishCounter()
    tracker.subscribe(counter)
    if args.check_ids:
        counter.finished_ids = set()
    runner = ToolRunner([work], eager=True) if use_library else None
    stats: dict[str, int] = {}
    start_memory = traced()
    if args.tracemalloc:
        tracemalloc.reset_peak()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    print(
        f"soak: {args.calls:,} calls, {args.concurrency:,} open at once, {args.deltas} deltas "
        f"per call, keep_finished={args.keep_finished}, backend={args.backend}, "
        f"runner={runner_name}, tracemalloc={'on' if args.tracemalloc else 'off'}"
    )
    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        if runner is not None:
            tg.start_soon(runner.run, tracker)
        else:
            tg.start_soon(loop_runner, tracker)
        if args.settle:
            # Let the runner reach its first wait before the stream starts. Without this,
            # a source that never blocks starves it: consume only yields after it woke a
            # waiting task, and a runner that has not started waits for nothing yet
            # (--no-settle shows it).
            await anyio.wait_all_tasks_blocked()
        await tracker.consume(source(plan, args.concurrency, stats))
    elapsed = time.perf_counter() - began

    leftover = [c for c in tracker.list() if c.status not in (Status.DONE, Status.ERROR)]
    await tracker.aclose()
    end_memory = traced()
    if args.tracemalloc and args.top:
        print(f"largest allocations still traced at the end (top {args.top}):")
        for stat in tracemalloc.take_snapshot().statistics("lineno")[: args.top]:
            print(f"  {stat}")
    peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if args.tracemalloc:
        tracemalloc.stop()

    sent = stats["sent"]
    applied = sent + plan.calls - len(plan.invalid)  # + the runner's result/error events
    expected_error = len(plan.invalid) + len(plan.raises)
    expected_done = plan.calls - expected_error
    print(f"events through consume: {sent:,} (+ {applied - sent:,} results/errors from the runner)")
    print(f"elapsed: {elapsed:.1f} s  ->  {sent / elapsed:,.0f} events/s through consume")
    print(
        f"calls finished: done={counter.finished['done']:,} error={counter.finished['error']:,} "
        f"(expected done={expected_done:,} error={expected_error:,}); "
        f"left unfinished: {len(leftover)}; ignored events: {sum(ignored.values())} {dict(ignored)}"
    )
    print(f"calls kept at the end: {len(tracker.list())} (keep_finished={args.keep_finished})")
    if args.tracemalloc:
        growth = (end_memory - start_memory) / MiB
        print(
            f"traced memory: start {start_memory / MiB:.2f} MiB, peak {peak / MiB:.2f} MiB, "
            f"end {end_memory / MiB:.2f} MiB (end - start = {growth:+.2f} MiB)"
        )
    print(f"max RSS: {rss / 1024:.1f} MiB (before the run: {rss_before / 1024:.1f} MiB)")

    failures = []
    if counter.finished["done"] != expected_done or counter.finished["error"] != expected_error:
        failures.append("finished counts differ from the plan")
    if sum(counter.finished.values()) != plan.calls:
        failures.append("not every call finished exactly once")
    if leftover:
        failures.append(f"{len(leftover)} calls left pending/running")
    if ignored:
        failures.append(f"events were ignored: {dict(ignored)}")
    if sent < args.min_events:
        failures.append(f"only {sent:,} events were sent (wanted at least {args.min_events:,})")
    if args.tracemalloc and end_memory - start_memory > args.tolerance * MiB:
        failures.append(
            f"memory did not return near its start: +{(end_memory - start_memory) / MiB:.2f} MiB "
            f"(tolerance {args.tolerance} MiB)"
        )
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print("OK: every call ended done or error, nothing lost, memory back near its start")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=1_000)
    parser.add_argument("--deltas", type=int, default=48, help="argument fragments per call")
    parser.add_argument("--keep-finished", type=int, default=100)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--runner", choices=["auto", "loop"], default="auto")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=float, default=4.0, help="MiB of memory growth")
    parser.add_argument("--no-tracemalloc", dest="tracemalloc", action="store_false")
    parser.add_argument("--check-ids", action="store_true", help="also check ids finish once")
    parser.add_argument("--warmup", type=int, default=1_000, help="calls in an untraced warm-up")
    parser.add_argument("--top", type=int, default=0, help="show the N largest allocations left")
    parser.add_argument(
        "--no-settle",
        dest="settle",
        action="store_false",
        help="start consuming before the runner reached its first wait",
    )
    parser.add_argument("--quick", action="store_true", help="10,000 calls, 100 open at once")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.concurrency = min(args.calls, 10_000), min(args.concurrency, 100)
    args.min_events = 5_000_000 if args.calls >= 100_000 and args.deltas >= 48 else 0
    sys.exit(anyio.run(soak, args, backend=args.backend))


if __name__ == "__main__":
    main()
