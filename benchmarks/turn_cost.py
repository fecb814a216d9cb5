"""What a steady-load turn costs, and how much of it the concurrency alone costs.

Usage (from the repository root)::

    .venv/bin/python benchmarks/turn_cost.py                  # both backends, ~40 s
    .venv/bin/python benchmarks/turn_cost.py --backend asyncio --seconds 3
    .venv/bin/python benchmarks/turn_cost.py --quick          # proves it runs (CI)

The turn is the one ``headstart.py --part steady`` runs (3 calls of about 120 bytes in
8-byte fragments, one eager tool that answers at once, the public pattern)::

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, source)
        await runner.run(tracker)

but with no timers: ``--loops`` turn loops run turns back to back, and each source makes
one checkpoint per simulated network read (1 to 6 items, yielded back to back), so the
event loop does what it does under load without sleeping. Three subjects run the same
turns, in one process, each the median of ``--repeats`` runs:

- ``sources``: the sources drained without the library (what the steady load subtracts);
- ``skeleton``: the concurrency the library's guarantees need and nothing else
  (``_headstart_steady.skeleton_turn``): a consuming task in a cancel scope that yields
  after each ready item (the head start), and a runner that starts each ready call's tool
  in a task of its own, inside a cancel scope; nothing tracked, parsed or validated;
- ``library``: the pattern above.

Reported: CPU per turn and per item, and per item over ``sources``: the library's cost
(what the steady load's "library CPU per item" measures at load, where it is higher: the
caches are colder with 1,000 turns) beside the skeleton's, which bounds from below what
any implementation of the same guarantees with a task per call can reach on this machine.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _headstart_steady import SUBJECTS, make_runner, one_turn, reads, skeleton_yields, turn_events


async def _source(events: list[dict[str, Any]], sizes: list[int]) -> AsyncIterator[Any]:
    """The events, one simulated network read at a time: a checkpoint, then the read's
    items back to back."""
    position = 0
    for size in sizes:
        await anyio.lowlevel.checkpoint()
        for event in events[position : position + size]:
            yield event
        position += size


async def _loops(subject: str, loops: int, seconds: float) -> tuple[int, int, float]:
    """Run ``loops`` turn loops of ``subject`` for ``seconds``: (turns, items, CPU s)."""
    runner = make_runner()
    yields = skeleton_yields()
    turns = items = 0
    until = time.monotonic() + seconds
    prepared = [turn_events(turn)[0] for turn in range(64)]

    async def loop(index: int) -> None:
        nonlocal turns, items
        rng = random.Random(index)
        turn = index
        while time.monotonic() < until:
            events = prepared[turn % len(prepared)]
            await one_turn(subject, _source(events, reads(len(events), rng)), runner, yields)
            turns += 1
            items += len(events)
            turn += 1

    cpu = time.process_time()
    async with anyio.create_task_group() as tg:
        for index in range(loops):
            tg.start_soon(loop, index)
    return turns, items, time.process_time() - cpu


def measure(backend: str, loops: int, seconds: float, repeats: int) -> dict[str, Any]:
    """Every subject ``repeats`` times, interleaved, on ``backend`` (recommended GC)."""
    gc.collect()
    gc.freeze()  # the documented setting (docs/performance.md)
    gc.set_threshold(20_000, 10, 10)
    try:
        for subject in SUBJECTS:  # warm-up
            anyio.run(_loops, subject, loops, min(seconds, 0.3), backend=backend)
        runs: dict[str, list[tuple[int, int, float]]] = {subject: [] for subject in SUBJECTS}
        for _ in range(repeats):
            for subject in SUBJECTS:
                runs[subject].append(anyio.run(_loops, subject, loops, seconds, backend=backend))
    finally:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)
    row: dict[str, Any] = {"backend": backend, "loops": loops}
    for subject, results in runs.items():
        turns = sum(r[0] for r in results)
        row[subject] = {
            "turns": turns,
            "items_per_turn": sum(r[1] for r in results) / turns,
            "us_per_turn": statistics.median(r[2] / r[0] * 1e6 for r in results),
            "us_per_item": statistics.median(r[2] / r[1] * 1e6 for r in results),
        }
    base = row["sources"]["us_per_item"]
    for subject in ("skeleton", "library"):
        row[subject]["extra_us_per_item"] = row[subject]["us_per_item"] - base
    return row


def report(row: dict[str, Any]) -> None:
    print(f"{row['backend']}: {row['loops']} turn loops, turns back to back")
    print("  subject      turns  items/turn  us/turn  us/item  us/item over sources")
    for subject in SUBJECTS:
        cell = row[subject]
        extra = cell.get("extra_us_per_item")
        print(
            f"  {subject:<9} {cell['turns']:>8,} {cell['items_per_turn']:>11.0f}"
            f" {cell['us_per_turn']:>8.0f} {cell['us_per_item']:>8.2f}"
            f" {'-' if extra is None else f'{extra:.2f}':>21}"
        )
    lib, skel = row["library"]["extra_us_per_item"], row["skeleton"]["extra_us_per_item"]
    print(
        f"  the skeleton's concurrency alone is {skel / lib:.0%} of the library's cost"
        f" ({skel:.2f} of {lib:.2f} us per item)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    p.add_argument("--loops", type=int, default=50, help="concurrent turn loops")
    p.add_argument("--seconds", type=float, default=2.0, help="per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per subject (median)")
    p.add_argument("--quick", action="store_true", help="a fraction of a second per run (CI)")
    args = p.parse_args(argv)
    seconds, repeats = (0.1, 1) if args.quick else (args.seconds, args.repeats)
    backends = ("asyncio", "trio") if args.backend == "both" else (args.backend,)
    for backend in backends:
        report(measure(backend, args.loops, seconds, repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
