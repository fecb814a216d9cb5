"""Benchmark of the journals (SQLite, Redis): CPU per event per durability level, restore,
follower.

Usage (from the repository root)::

    .venv/bin/python benchmarks/journal.py            # full run
    .venv/bin/python benchmarks/journal.py --quick    # small sizes, seconds (CI)
    .venv/bin/python benchmarks/journal.py --redis redis://127.0.0.1:6379/0

Reports, in one run, for the SQLite journal (a file in a temporary directory,
``synchronous=FULL``) and then the Redis one:

- per durability level (every event; batched every 5 ms), the process CPU time per event
  (``time.process_time``: every thread, the journal's writer included) of one turn of the
  8 calls x 2 KB workload (seed events applied to a tracker) recorded through a
  ``DurableTurn``, minus the same turn with no journal; the turns run one after the other
  in one event loop (after a warm-up turn); the median of the repeats. On Redis, also the
  server's own CPU per event (``INFO cpu``, warm-up turn included);
- the wall time of ``restore`` of a turn of 100,000 events, with each call's deltas in a
  row (the journal joins them into one item) and interleaved round-robin (it cannot);
- SQLite: a polling follower's latency: how long after ``append_event`` a reader polling
  the file every 10 ms (``SQLiteJournal.read_file``) sees the event, at the batched level;
- Redis: a live follower's latency: how long after ``append_event`` (every-event level) a
  ``RedisJournal.follow`` in another process (asyncio, then trio) sees the event, p50 /
  p99 / max, beside the baseline of redis-py's own ``XADD`` to ``XREAD BLOCK``.

Targets (issue 19): batched adds at most 2 us per event; 100,000 events restore in < 1 s.
Target (issue 20): the Redis follower's p99 under 5 ms on loopback.

The Redis server: ``--redis URL``, else ``$TOOLCALL_TRACKER_REDIS_URL``, else a private
``redis-server`` (AOF, ``appendfsync always``) if one is on ``PATH``, else the Redis rows
are skipped with the reason (``--no-redis`` skips them). Its keys are under a prefix of
the run's own, deleted at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import streams
from _journal_redis import URL_ENV, RedisBench, redis_bench

from toolcall_tracker import ToolCallTracker
from toolcall_tracker.durable import DurableTurn, SQLiteJournal, SQLiteOutcomeStore, restore

LEVELS: list[tuple[str, float | None]] = [("every event", None), ("batched 5 ms", 5.0)]


def workload() -> list[dict[str, Any]]:
    spec = streams.WorkloadSpec("8x2KB", "8 calls x 2 KB args", 8, 2048)
    items = list(streams.build_workload(spec, {"seed-dicts"}, []).families["seed-dicts"].items)
    return [*items, {"type": "end"}]


Opener = Callable[[str, "float | None"], tuple[Any, Any]]
"""``(label, batch_ms)`` -> a journal and an outcome store (not entered) of their own."""


def sqlite_opener(directory: Path) -> Opener:
    """Journals and stores in SQLite files in ``directory``, one file per label."""

    def open_pair(label: str, batch_ms: float | None) -> tuple[Any, Any]:
        journal = SQLiteJournal(directory / f"{label}.db", batch_ms=batch_ms)
        return journal, SQLiteOutcomeStore(journal.path)

    return open_pair


async def one_turn(
    items: list[dict[str, Any]], journal: Any | None, store: Any | None, turn: str
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
    items: list[dict[str, Any]],
    open_pair: Opener | None,
    batch_ms: float | None,
    repeats: int,
    label: str,
) -> list[float]:
    """CPU seconds per event of each of ``repeats`` turns run one after the other in one
    event loop, as a server would (``open_pair`` None: no journal). Each turn's time
    includes its final commit; the writer's work lands in the turn it runs in."""

    async def turns() -> list[float]:
        if open_pair is None:
            return await timed(None, None)
        journal, store = open_pair(label, batch_ms)
        async with journal, store:
            return await timed(journal, store)

    async def timed(journal: Any | None, store: Any | None) -> list[float]:
        await one_turn(items, journal, store, "warm-up")  # threads, caches, the schema
        samples = []
        for number in range(repeats):
            start = time.process_time()
            await one_turn(items, journal, store, f"turn-{number}")
            samples.append((time.process_time() - start) / len(items))
        return samples

    return anyio.run(turns)


def restore_time(open_pair: Opener, events: int, interleaved: bool) -> tuple[float, int]:
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

    async def go() -> float:
        journal, store = open_pair(f"restore-{interleaved}", 50.0)
        async with journal, store:
            await one_turn(items, journal, store, "big")
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
        log = anyio.run(journal.create, "t", {"limits": {}})

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
            log.append_event(["r", key])  # one event each (deltas would be joined)
            time.sleep(0.02)
        done.set()
        reader.join()
    return [seen[key] - sent[key] for key in sent if key in seen]


def journal_rows(
    items: list[dict[str, Any]],
    open_pair: Opener,
    base: float,
    repeats: int,
    events: int,
    server_cpu: Callable[[], float] | None = None,
) -> None:
    """Print the CPU-per-event rows (per durability level) and the restore rows of one
    journal (``base``: CPU per event with no journal; ``server_cpu``: a server's CPU
    seconds so far, to report its share per event too)."""
    for name, batch_ms in LEVELS:
        label = "every" if batch_ms is None else "batched"
        server_before = server_cpu() if server_cpu else 0.0
        cpu = statistics.median(cpu_per_event(items, open_pair, batch_ms, repeats, label))
        server = ""
        if server_cpu is not None:  # the warm-up turn included
            per_event = (server_cpu() - server_before) / ((repeats + 1) * len(items))
            server = f"; the server {per_event * 1e6:.2f} us per event"
        print(
            f"  {name:<20}  {cpu * 1e6:8.2f} us CPU per event  "
            f"(+{(cpu - base) * 1e6:.2f} us, x{cpu / base:.2f}){server}"
        )
    for interleaved in (False, True):
        seconds, count = restore_time(open_pair, events, interleaved)
        shape = "interleaved round-robin" if interleaved else "each call's deltas in a row"
        print(
            f"restore: {count:,} events ({shape}) in {seconds:.3f} s "
            f"({seconds / count * 1e6:.2f} us/event)"
        )


def redis_rows(
    bench: RedisBench, items: list[dict[str, Any]], base: float, repeats: int, events: int
) -> None:
    """The same rows on Redis (with the server's own CPU per event), and the live
    follower's latency (p50 / p99 / max) on each backend."""
    print(f"Redis: {bench.settings()}")
    journal_rows(items, bench.open_pair, base, repeats, events, bench.server_cpu)
    count = 50 if events < 100_000 else 2000
    for backend in (None, "asyncio", "trio"):
        follower = (
            "baseline: redis-py XADD to XREAD BLOCK, no journal"
            if backend is None
            else f"RedisJournal.follow on {backend}, from append_event"
        )
        latencies = sorted(bench.follow_latency(count, 0.002, backend))
        p99 = statistics.quantiles(latencies, n=100, method="inclusive")[98]
        print(
            f"follower in another process ({follower}), one event every 2 ms: "
            f"p50 {statistics.median(latencies) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, "
            f"max {latencies[-1] * 1e3:.2f} ms over {len(latencies)} events"
            + ("" if backend is None else " (target: p99 < 5 ms)")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    parser.add_argument(
        "--redis",
        metavar="URL",
        help=f"the Redis server of the Redis rows (default: ${URL_ENV}, else a private "
        "redis-server if there is one on PATH)",
    )
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis rows")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    events = 10_000 if args.quick else 100_000
    items = workload()
    print(f"workload: 8 calls x 2 KB args, {len(items)} events per turn; {repeats} turns each")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        base = statistics.median(cpu_per_event(items, None, None, repeats, "none"))
        print(f"  no journal            {base * 1e6:8.2f} us CPU per event")
        print("SQLite (a file in a temporary directory, synchronous=FULL)")
        journal_rows(items, sqlite_opener(directory), base, repeats, events)
        latencies = sorted(follower_latency(directory, 10 if args.quick else 100))
        print(
            f"follower (batched 5 ms, polling every 10 ms): median "
            f"{statistics.median(latencies) * 1e3:.1f} ms, max {latencies[-1] * 1e3:.1f} ms "
            f"over {len(latencies)} events"
        )
    if args.no_redis:
        return
    with redis_bench(args.redis, print) as bench:
        if bench is not None:
            redis_rows(bench, items, base, repeats, events)


if __name__ == "__main__":
    main()
