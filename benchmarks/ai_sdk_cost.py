"""Where the AI SDK reader's time goes on small calls, against what the format requires.

Usage (from the repository root)::

    .venv/bin/python benchmarks/ai_sdk_cost.py                       # 2000x200B, ~30 s
    .venv/bin/python benchmarks/ai_sdk_cost.py --workload 1x1KB --rounds 15
    .venv/bin/python benchmarks/ai_sdk_cost.py --quick               # proves it runs (CI)

The input is ``benchmarks/run.py``'s AI SDK rendering of a workload (UI message stream
parts as plain dicts). Four subjects, alternated in one process, each round timing every
subject on the thread's CPU clock with the collector on (collected before each sample);
printed: the median per part and the median of the per-round ratios to the floor:

- ``floor``: ``run.py``'s bare loop (hold the fragments, join and parse once per call);
- ``format``: a hand-written loop that does what the format requires of a tracker and
  nothing more: hold each call's fragments until ``tool-input-available``, write the
  call's start and its text into a tracker's machine, make the step's calls ready at
  ``finish-step``, end the turn;
- ``format+check``: the same loop, also comparing the stated input with the parsed text
  as the reader does (a parse, ``==`` and two ``to_json``) and handing that parse to the
  machine, as the reader does (``_CallRecord.give``);
- ``reader``: ``apply_stream(ToolCallTracker(), items, AISDKAdapter())``, as ``run.py``
  measures it.

The gap between ``format+check`` and ``reader`` is the reader's general structure: the
call table's id and name rules, records and limits, one handler per part type, the
approval and step bookkeeping, and the hostile-input checks the loops skip.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _dict_streams import floor_ai_sdk_dicts
from pydantic_core import to_json
from run import FULL, QUICK
from streams import build_workload

from toolcall_tracker import ToolCallTracker
from toolcall_tracker._json import parse_json
from toolcall_tracker.adapters import AISDKAdapter, apply_stream
from toolcall_tracker.machine import _lanes_of


def format_loop(items: list[Any], check: bool) -> None:
    """What the format requires of a tracker, hand-written (see the module docstring)."""
    machine = ToolCallTracker().machine
    records = _lanes_of(machine)
    assert records is not None
    start, delta, ready = machine.write_start, machine.write_delta, machine.write_ready
    held: dict[str, list[str]] = {}
    step: list[str] = []
    for part in items:
        kind = part["type"]
        if kind == "tool-input-delta":
            held[part["toolCallId"]].append(part["inputTextDelta"])
        elif kind == "tool-input-start":
            held[part["toolCallId"]] = []
            start(part["toolCallId"], part["toolName"])
        elif kind == "tool-input-available":
            call_id = part["toolCallId"]
            text = "".join(held.pop(call_id))
            delta(call_id, text)
            if check:
                stated, parsed = part["input"], parse_json(text)
                if parsed == stated and to_json(parsed) == to_json(stated):
                    records[call_id].give(text, parsed)
            step.append(call_id)
        elif kind == "finish-step":
            for call_id in step:
                ready(call_id)
            step = []
    machine.write_end(True, "finish")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="2000x200B", help="a run.py workload (2000x200B)")
    p.add_argument("--rounds", type=int, default=9, help="rounds (median)")
    p.add_argument("--quick", action="store_true", help="tiny input, one round (CI)")
    args = p.parse_args()
    spec = QUICK[0] if args.quick else next(s for s in FULL if s.name == args.workload)
    items = build_workload(spec, {"ai_sdk-dicts"}, []).families["ai_sdk-dicts"].items
    subjects: dict[str, Callable[[], object]] = {
        "floor": lambda: floor_ai_sdk_dicts(items, True),
        "format": lambda: format_loop(items, False),
        "format+check": lambda: format_loop(items, True),
        "reader": lambda: apply_stream(ToolCallTracker(), items, AISDKAdapter()),
    }
    loops = 1 if args.quick else max(1, 100_000 // len(items))
    rounds = 1 if args.quick else args.rounds
    per_part: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, run in subjects.items():
            gc.collect()
            t0 = time.thread_time_ns()
            for _ in range(loops):
                run()
            per_part[name].append((time.thread_time_ns() - t0) / loops / len(items) / 1000)
    print(f"{spec.name}: {len(items):,} parts, {rounds} rounds of {loops} loops")
    for name, values in per_part.items():
        ratio = statistics.median(v / f for v, f in zip(values, per_part["floor"], strict=True))
        print(f"  {name:13s} {statistics.median(values):.3f} us/part  {ratio:.2f}x the floor")


if __name__ == "__main__":
    main()
