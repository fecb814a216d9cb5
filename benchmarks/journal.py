"""Benchmark of the SQLite journal: CPU per event per durability level, restore, follower.

Usage (from the repository root)::

    .venv/bin/python benchmarks/journal.py            # full run
    .venv/bin/python benchmarks/journal.py --quick    # small sizes, seconds (CI)

Reports, in one run:

- per durability level (every event; batched every 5 ms), the process CPU time per event
  (``time.process_time``: every thread, the journal's writer included) of one turn of the
  8 calls x 2 KB workload (seed events applied to a tracker) recorded through a
  ``DurableTurn``, minus the same turn with no journal; the turns run one after the other
  in one event loop (after a warm-up turn); the median of the repeats;
- the wall time of ``restore`` of a turn of 100,000 events, with each call's deltas in a
  row (the journal joins them into one item) and interleaved round-robin (it cannot);
- a polling follower's latency: how long after ``append_event`` a reader polling the file
  every 10 ms (``SQLiteJournal.read_file``) sees the event, at the batched level.

Targets (issue 19): batched adds at most 2 us per event; 100,000 events restore in < 1 s.
The journal is a file in a temporary directory (``synchronous=FULL``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import streams

from toolcall_tracker import ToolCallTracker
from toolcall_tracker.durable import DurableTurn, SQLiteJournal, SQLiteOutcomeStore, restore

LEVELS: list[tuple[str, float | None]] = [("every event", None), ("batched 5 ms", 5.0)]


def workload() -> list[dict[str, Any]]:
    spec = streams.WorkloadSpec("8x2KB", "8 calls x 2 KB args", 8, 2048)
    items = list(streams.build_workload(spec, {"seed-dicts"}, []).families["seed-dicts"].items)
    return [*items, {"type": "end"}]


async def one_turn(
    items: list[dict[str, Any]],
    journal: SQLiteJournal | None,
    store: SQLiteOutcomeStore | None,
    turn: str,
) -> None:
    tracker = ToolCallTracker()
    if journal is None or store is None:
        for item in items:
            tracker.apply(item)
        return
    async with DurableTurn(journal, turn, tracker, store=store):
        for item in items:
            tracker.apply(item)


def cpu_per_event(
    items: list[dict[str, Any]], directory: Path, batch_ms: float | None, repeats: int, label: str
) -> list[float]:
    """CPU seconds per event of each of ``repeats`` turns run one after the other in one
    event loop, as a server would (``label`` "none": no journal). Each turn's time includes
    its final commit; the writer thread's work lands in the turn it runs in."""
    journal = store = None
    if label != "none":
        journal = SQLiteJournal(directory / f"{label}.db", batch_ms=batch_ms)
        store = SQLiteOutcomeStore(journal.path)

    async def turns() -> list[float]:
        await one_turn(items, journal, store, "warm-up")  # threads, caches, the schema
        samples = []
        for number in range(repeats):
            start = time.process_time()
            await one_turn(items, journal, store, f"turn-{number}")
            samples.append((time.process_time() - start) / len(items))
        return samples

    try:
        return anyio.run(turns)
    finally:
        if journal is not None and store is not None:
            store.close()
            journal.close()


def restore_time(directory: Path, events: int, interleaved: bool) -> tuple[float, int]:
    """Seconds to restore a turn of about ``events`` events (and the exact count); the
    deltas of its calls consecutive (joined in the journal), or interleaved round-robin
    (every delta its own journal item)."""
    calls = max(1, events // 1000)
    ids = [f"call_{k:05d}" for k in range(calls)]
    items: list[dict[str, Any]] = []
    items.extend({"type": "start", "id": call_id, "name": "search"} for call_id in ids)
    text = ['{"q": "', *["abcdefgh"] * 996, '"}']
    if interleaved:
        for part in text:
            items.extend({"type": "delta", "id": call_id, "argsTextDelta": part} for call_id in ids)
    else:
        for call_id in ids:
            items.extend({"type": "delta", "id": call_id, "argsTextDelta": part} for part in text)
    items.extend({"type": "ready", "id": call_id} for call_id in ids)
    items.append({"type": "end"})
    path = directory / f"restore-{interleaved}.db"
    with SQLiteJournal(path, batch_ms=50.0) as journal, SQLiteOutcomeStore(path) as store:
        anyio.run(one_turn, items, journal, store, "big")

        async def go() -> float:
            start = time.perf_counter()
            restored = await restore(journal, "big")
            elapsed = time.perf_counter() - start
            assert len(restored.tracker.list()) == calls
            return elapsed

        return anyio.run(go), len(items)


def follower_latency(directory: Path, count: int) -> list[float]:
    """Seconds from ``append_event`` to a 10 ms polling reader seeing each event."""
    path = directory / "follow.db"
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = threading.Event()
    with SQLiteJournal(path, batch_ms=5.0) as journal:
        journal.append("t", "limits", {"limits": {}})
        anyio.run(journal.commit)

        def follow() -> None:
            after = 0
            give_up = time.monotonic() + 30
            while (not done.is_set() or len(seen) < count) and time.monotonic() < give_up:
                for record in SQLiteJournal.read_file(path, "t", after):
                    now = time.perf_counter()
                    after = record.seq
                    if record.kind == "events":
                        for item in record.data:
                            seen.setdefault(item[1], now)
                time.sleep(0.01)

        reader = threading.Thread(target=follow)
        reader.start()
        for number in range(count):
            key = f"e{number}"
            sent[key] = time.perf_counter()
            journal.append_event("t", ["r", key])  # one event each (deltas would be joined)
            time.sleep(0.02)
        done.set()
        reader.join()
    return [seen[key] - sent[key] for key in sent if key in seen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    events = 10_000 if args.quick else 100_000
    items = workload()
    print(f"workload: 8 calls x 2 KB args, {len(items)} events per turn; {repeats} turns each")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        base = statistics.median(cpu_per_event(items, directory, None, repeats, "none"))
        print(f"  no journal            {base * 1e6:8.2f} us CPU per event")
        for name, batch_ms in LEVELS:
            label = "every" if batch_ms is None else "batched"
            cpu = statistics.median(cpu_per_event(items, directory, batch_ms, repeats, label))
            print(
                f"  {name:<20}  {cpu * 1e6:8.2f} us CPU per event  "
                f"(+{(cpu - base) * 1e6:.2f} us, x{cpu / base:.2f})"
            )
        for interleaved in (False, True):
            seconds, count = restore_time(directory, events, interleaved)
            shape = "interleaved round-robin" if interleaved else "each call's deltas in a row"
            print(
                f"restore: {count:,} events ({shape}) in {seconds:.3f} s "
                f"({seconds / count * 1e6:.2f} us/event)"
            )
        latencies = sorted(follower_latency(directory, 10 if args.quick else 100))
        print(
            f"follower (batched 5 ms, polling every 10 ms): median "
            f"{statistics.median(latencies) * 1e3:.1f} ms, max {latencies[-1] * 1e3:.1f} ms "
            f"over {len(latencies)} events"
        )


if __name__ == "__main__":
    main()
