"""The tool runner's own cost per call: many tiny calls through ``ToolRunner.run``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/runner_calls.py            # both backends, about 20 s
    .venv/bin/python benchmarks/runner_calls.py --quick    # a few turns: proves it runs (CI)
    .venv/bin/python benchmarks/runner_calls.py --profile asyncio   # cProfile, top entries

A turn is ``--calls`` calls of one eager async tool that returns at once, each call a
``start``, one ``delta`` and a ``ready`` (seed dicts from an async generator that never
blocks), run with the public pattern::

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        await runner.run(tracker)

The baseline runs the same turns without the runner (``consume`` only). Per call, in one
process and one run: the CPU time (this process's, median of ``--repeats``) with and
without the runner, their difference (the runner's cost), calls per second through the
runner, and the objects the runner leaves to the garbage collector (cyclic garbage found
by ``gc.collect()`` after the turns ran with the collector paused). ``opentelemetry`` is
imported by the runner when installed; no tracer provider is configured here, which is
the case the runner must not pay for.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from toolcall_tracker import ToolCallTracker, ToolRunner, tool


async def lookup(key: str) -> int:
    """An eager tool that answers at once."""
    return len(key)


def turn_events(turn: int, calls: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for index in range(calls):
        call_id = f"t{turn}-c{index}"
        events.append({"type": "start", "id": call_id, "name": "lookup"})
        events.append({"type": "delta", "id": call_id, "argsTextDelta": '{"key": "k"}'})
        events.append({"type": "ready", "id": call_id})
    return events


async def _source(events: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for event in events:
        yield event


async def _turns(runner: ToolRunner | None, turns: list[list[dict[str, Any]]]) -> None:
    for events in turns:
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, _source(events))
            if runner is not None:
                await runner.run(tracker)


def _cpu(backend: str, runner: ToolRunner | None, turns: list[list[dict[str, Any]]]) -> float:
    gc.collect()
    began = time.process_time()
    anyio.run(_turns, runner, turns, backend=backend)
    return time.process_time() - began


def _garbage(backend: str, runner: ToolRunner | None, turns: list[list[dict[str, Any]]]) -> int:
    """Objects in reference cycles the turns left behind (collected with the GC paused)."""
    gc.collect()
    gc.disable()
    try:
        anyio.run(_turns, runner, turns, backend=backend)
        return gc.collect()
    finally:
        gc.enable()


def measure(backend: str, turns: int, calls: int, repeats: int) -> dict[str, float]:
    runner = ToolRunner([tool(lookup, eager=True)])
    work = [turn_events(turn, calls) for turn in range(turns)]
    _cpu(backend, runner, work[:10])  # warm up: imports, the tool's argument model
    gc.freeze()  # the inputs are not the subject: keep collections off them
    with_runner, without = [], []
    for _ in range(repeats):  # interleaved: a slow spell hits both alike
        with_runner.append(_cpu(backend, runner, work))
        without.append(_cpu(backend, None, work))
    total = turns * calls
    runner_s, base_s = statistics.median(with_runner), statistics.median(without)
    garbage = _garbage(backend, runner, work) - _garbage(backend, None, work)
    gc.unfreeze()
    return {
        "calls": total,
        "us_per_call": runner_s / total * 1e6,
        "baseline_us_per_call": base_s / total * 1e6,
        "runner_us_per_call": (runner_s - base_s) / total * 1e6,
        "calls_per_s": total / runner_s,
        "garbage_per_call": garbage / total,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a few turns: proves it runs (CI)")
    p.add_argument("--backend", action="append", choices=("asyncio", "trio"), help="repeatable")
    p.add_argument("--turns", type=int, default=None, help="turns per run (default 400)")
    p.add_argument("--calls", type=int, default=10, help="calls per turn (default 10)")
    p.add_argument("--repeats", type=int, default=None, help="runs per figure (median; 5)")
    p.add_argument("--profile", choices=("asyncio", "trio"), help="cProfile the runner instead")
    p.add_argument("--top", type=int, default=30, help="with --profile: rows to print")
    args = p.parse_args(argv)
    turns = args.turns or (5 if args.quick else 400)
    repeats = args.repeats or (1 if args.quick else 5)
    if args.profile:
        runner = ToolRunner([tool(lookup, eager=True)])
        work = [turn_events(turn, args.calls) for turn in range(turns)]
        _cpu(args.profile, runner, work[:10])
        profile = cProfile.Profile()
        profile.enable()
        anyio.run(_turns, runner, work, backend=args.profile)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
        return 0
    print(f"{turns} turns x {args.calls} calls, median of {repeats}; load average {_load()}")
    print("backend   us/call  baseline  runner us/call   calls/s  garbage objects/call")
    for backend in args.backend or ["asyncio", "trio"]:
        row = measure(backend, turns, args.calls, repeats)
        print(
            f"{backend:<8} {row['us_per_call']:>8.1f} {row['baseline_us_per_call']:>9.1f}"
            f" {row['runner_us_per_call']:>15.1f} {row['calls_per_s']:>9,.0f}"
            f" {row['garbage_per_call']:>21.1f}"
        )
    return 0


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover (no load average on this platform)
        return "n/a"


if __name__ == "__main__":
    sys.exit(main())
