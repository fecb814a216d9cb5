"""The cost of argument previews, as ratios in one run.

    .venv/bin/python benchmarks/previews.py [--size BYTES] [--repeats N]

One call of ``--size`` bytes of JSON arguments (default 1 MB) in 8-byte fragments, applied
with ``ToolCallStateMachine.write_delta``: without previews, with
:class:`~toolcall_tracker.previews.ArgsPreviews` (growth 0.5; a clock that never advances,
so only growth triggers parses, then the real clock with the default 0.25 s interval), and,
for scale, a naive preview that re-parses the whole prefix after every fragment (run on a
prefix only, extrapolated: it is quadratic). Prints the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from pydantic_core import from_json

from toolcall_tracker import ToolCallStateMachine
from toolcall_tracker.previews import ArgsPreviews


def fragments(size: int) -> list[str]:
    text = json.dumps({"path": "big.txt", "content": "x" * max(0, size - 32)})
    return [text[i : i + 8] for i in range(0, len(text), 8)]


def best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    parts = fragments(options.size)
    parses: list[int] = []

    def plain() -> None:
        machine = ToolCallStateMachine()
        machine.write_start("c", "write_file")
        for part in parts:
            machine.write_delta("c", part)

    def previewed(clock: Callable[[], float] | None) -> Callable[[], None]:
        def run() -> None:
            machine = ToolCallStateMachine()
            previews = (
                ArgsPreviews(machine) if clock is None else ArgsPreviews(machine, clock=clock)
            )
            machine.write_start("c", "write_file")
            for part in parts:
                machine.write_delta("c", part)
            parses.append(previews.parses("c"))

        return run

    prefix = parts[: min(len(parts), 2_000)]

    def naive() -> None:
        text = ""
        for part in prefix:
            text += part
            from_json(text, allow_partial=True)

    base = best(plain, options.repeats)
    still = best(previewed(lambda: 0.0), options.repeats)
    still_parses = parses[-1]
    real = best(previewed(None), options.repeats)
    real_parses = parses[-1]
    naive_prefix = best(naive, options.repeats)
    # quadratic: scale the prefix's time by (n / k) ** 2
    naive_all = naive_prefix * (len(parts) / len(prefix)) ** 2
    print(f"{len(parts)} fragments, {options.size} bytes; machine alone {base * 1e3:.1f} ms")
    print(f"with previews (growth only): x{still / base:.2f}  ({still_parses} parses)")
    print(f"with previews (0.25 s interval): x{real / base:.2f}  ({real_parses} parses)")
    print(f"naive re-parse per fragment (extrapolated): x{naive_all / base:.0f}")


if __name__ == "__main__":
    main()
