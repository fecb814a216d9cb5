"""Head start: how much sooner a turn's tools finish when each starts the moment its call is
complete, while the model is still streaming.

Usage (from the repository root)::

    .venv/bin/python benchmarks/headstart.py                  # full run (about 13 minutes)
    .venv/bin/python benchmarks/headstart.py --part steady    # the load table (about 8 min)
    .venv/bin/python benchmarks/headstart.py --quick          # seconds: proves it runs (CI)
    .venv/bin/python benchmarks/headstart.py --json out.json  # also write every figure
    .venv/bin/python benchmarks/headstart.py --part load --levels 100,300 --backend trio

Streams are replayed in real time, for every adapter (OpenAI Chat, OpenAI Responses,
Anthropic, Gemini, Vercel AI SDK UI stream), through the public API as a user writes it:
``tracker.consume(adapt(source, Adapter()))`` and ``ToolRunner([...]).run(tracker)`` in
one task group, on asyncio and on trio, with their real clocks. A source yields the items
of one turn at a steady token rate (it sleeps between items on the event loop's clock);
each turn has several calls with 100 to 2,000 bytes of arguments, for eager tools with
known latencies (printed in the header). Every timestamp is ``time.monotonic()``, the clock
of the tracker's ``CallTimeline``.

It reports:

1. **Latency**: from the item that completes a call (the provider's own signal, found by
   reading the stream: see ``_headstart_streams.py``), stamped by a wrapper right after the
   source yields it, to the call's tool starting (``tracker.timeline(id).tool_started``,
   recorded by the runner just before it awaits the tool): median, p99 and max, one turn
   at a time. ``openai_chat_eager`` is ``OpenAIChatAdapter(eager=True)``, for comparison.
2. **Turn time**: when the turn's last tool finishes, beside two references computed from
   the same timestamps and the same measured tool durations: every tool started when the
   stream ends (what the OpenAI Agents SDK, pydantic-ai and LangGraph's ToolNode do), and
   the ideal, each tool started the instant its call completed.
3. **Under load**: many concurrent turns in one event loop (the five formats in turn),
   arriving at jittered times: latency, events per second, the CPU the library adds per
   item (process CPU time of the run minus that of the same sources drained without the
   library, over the items), and where one process saturates.
4. **Recorded streams**: the real recordings in ``../shared/real-streams/recorded/`` (read
   in place, never copied), re-timed at the token rate, with the same latency report.
5. **Steady load** (``_headstart_steady.py``): turn loops back to back at 100 to 2,000
   turns, sources waking once per simulated network read, recommended GC (median of 3)
   beside the default, with the load average, saturation and memory (``--part steady``:
   about 8 minutes; ``--steady-levels 300,1000`` and ``--backend`` run fewer).

The targets (printed ok/MISS, never failing the run): completing item to tool start p99
under 1 ms for a single turn and under 2 ms with 100 concurrent turns at 50 items/s each,
on both backends, for every format; the turn's tools finish within 5% of the ideal.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _headstart_report as report
import _headstart_run as run
import _headstart_steady as steady
import anyio
from _headstart_streams import FORMATS, Replay, recorded_replays, synthetic_turn

RECORDED = Path(__file__).resolve().parents[1] / ".." / "shared" / "real-streams" / "recorded"
SINGLE_FORMATS = (*FORMATS[:1], "openai_chat_eager", *FORMATS[1:])


@dataclass
class Config:
    mode: str
    rate: float = 75.0  # token slots per second, one turn at a time
    load_rate: float = 50.0  # token slots per second per turn, under load
    fragment: int = 16  # bytes of argument text per fragment
    calls: int = 5  # calls per turn
    arg_range: tuple[int, int] = (100, 2000)
    tools: dict[str, float] = field(
        default_factory=lambda: {"lookup": 0.05, "search": 0.2, "fetch": 1.0}
    )
    single_turns: int = 3  # turns per format and backend
    single_concurrent: bool = False  # quick modes: the formats' turns run at once
    load_levels: tuple[int, ...] = (1, 100, 300, 1000)
    load_window: float = 2.0  # seconds over which arrivals are jittered
    load_variants: int = 4  # distinct turns per format, reused across the load's turns
    recorded_dir: Path | None = RECORDED
    recorded_limit: int | None = None  # recordings per format (None: all)
    recorded_concurrent: bool = False
    recorded_tool: float = 0.05
    backends: tuple[str, ...] = ("asyncio", "trio")
    parts: tuple[str, ...] = ("single", "load", "recorded", "steady")
    steady_levels: tuple[int, ...] = (100, 300, 1000, 2000)  # concurrent turn loops (part 5)
    steady_seconds: float = 11.0  # per run: 1 s of warm-up, then the steady state
    steady_repeats: int = 3  # runs of the recommended GC setting per level (median)
    seed: str = "headstart"


def config(mode: str) -> Config:
    if mode == "full":
        return Config("full")
    quick = Config(
        "quick",
        calls=2,
        arg_range=(100, 300),
        tools={"lookup": 0.02, "search": 0.05, "fetch": 0.1},
        single_turns=1,
        single_concurrent=True,
        load_levels=(1, 20),
        load_window=0.1,
        steady_levels=(20,),
        steady_seconds=1.2,
        steady_repeats=1,
        load_variants=2,
        recorded_limit=2,
        recorded_concurrent=True,
    )
    if mode == "quick":
        return quick
    if mode == "smoke":  # the test's: fast, structure only
        return replace(
            quick,
            mode="smoke",
            rate=2000.0,
            load_rate=2000.0,
            fragment=64,
            arg_range=(100, 150),
            tools={"lookup": 0.001, "search": 0.002, "fetch": 0.003},
            load_levels=(1, 5),
            load_window=0.01,
            steady_levels=(5,),
            steady_seconds=0.4,
            load_variants=1,
            recorded_limit=1,
            recorded_tool=0.001,
        )
    raise ValueError(f"unknown mode {mode!r}")


# -- statistics -------------------------------------------------------------------------------


def stats(values: list[float]) -> dict[str, Any]:
    """n, median, p99 (nearest rank) and max, in milliseconds."""
    if not values:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(values)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return {
        "n": len(ordered),
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": p99 * 1e3,
        "max_ms": ordered[-1] * 1e3,
    }


def turn_summary(turns: list[run.TurnResult]) -> dict[str, Any]:
    # (turn span, after-stream, tracker, ideal) of every turn whose tools ran
    rows = [
        (t.last - t.first, t.after_stream, t.measured, t.ideal)
        for t in turns
        if t.measured is not None and t.after_stream is not None and t.ideal is not None
    ]
    if not rows:
        return {"turns": 0}
    gaps = [100 * (tracker - ideal) / ideal for _, _, tracker, ideal in rows]
    saved = [after - tracker for _, after, tracker, _ in rows]
    return {
        "turns": len(rows),
        "stream_s": statistics.fmean(r[0] for r in rows),
        "after_stream_s": statistics.fmean(r[1] for r in rows),
        "measured_s": statistics.fmean(r[2] for r in rows),
        "ideal_s": statistics.fmean(r[3] for r in rows),
        "sooner_s": statistics.fmean(saved),
        "sooner_pct": statistics.fmean(100 * s / r[1] for s, r in zip(saved, rows, strict=True)),
        "gap_to_ideal_pct_mean": statistics.fmean(gaps),
        "gap_to_ideal_pct_max": max(gaps),
    }


def by_format(turns: list[run.TurnResult]) -> dict[str, list[run.TurnResult]]:
    out: dict[str, list[run.TurnResult]] = {}
    for t in turns:
        out.setdefault(t.fmt, []).append(t)
    return out


def latency_block(turns: list[run.TurnResult]) -> dict[str, Any]:
    return {
        "latency": stats([x for t in turns for x in t.latencies]),
        "ready_to_start": stats([x for t in turns for x in t.ready_to_start]),
        "not_run": sum(t.not_run for t in turns),
        "items": sum(t.items for t in turns),
    }


# -- the phases ----------------------------------------------------------------------------------


def _fresh() -> None:
    gc.collect()


def single_phase(cfg: Config, backend: str) -> dict[str, Any]:
    """1 and 2: one turn at a time per format (quick modes: the formats at once)."""
    runner = run.synthetic_tools(cfg.tools)
    plan = [
        (
            fmt,
            synthetic_turn(
                base, f"{cfg.seed}:single:{k}", cfg.calls, cfg.arg_range, cfg.fragment, cfg.tools
            ),
        )
        for k in range(cfg.single_turns)
        for fmt in SINGLE_FORMATS
        for base in [fmt.removesuffix("_eager")]
    ]
    turns: list[run.TurnResult] = []

    async def main() -> None:
        if cfg.single_concurrent:
            async with anyio.create_task_group() as tg:
                for fmt, replay in plan:
                    tg.start_soon(_append, turns, run.play_turn(replay, fmt, runner, cfg.rate))
            return
        for fmt, replay in plan:
            turns.append(await run.play_turn(replay, fmt, runner, cfg.rate))

    _fresh()
    anyio.run(main, backend=backend)
    return {
        fmt: {**latency_block(group), "turn": turn_summary(group)}
        for fmt, group in by_format(turns).items()
    }


async def _append(out: list[run.TurnResult], coro: Any) -> None:
    out.append(await coro)


def load_pool(cfg: Config) -> list[Replay]:
    """Distinct turns, the formats in turn (Chat last, so that the single turn of the first
    level is not Chat's); the load reuses them (the items are only read)."""
    order = (*FORMATS[1:], FORMATS[0])
    return [
        synthetic_turn(
            fmt, f"{cfg.seed}:load:{v}", cfg.calls, cfg.arg_range, cfg.fragment, cfg.tools
        )
        for v in range(cfg.load_variants)
        for fmt in order
    ]


def load_phase(cfg: Config, backend: str, pool: list[Replay]) -> list[dict[str, Any]]:
    """3: 1, 100, 300, 1,000 concurrent turns (quick: 1, 20), and the same sources drained
    without the library, for the CPU it adds."""
    runner = run.synthetic_tools(cfg.tools)
    rows: list[dict[str, Any]] = []
    for level in cfg.load_levels:
        turns = [pool[i % len(pool)] for i in range(level)]
        seed = f"{cfg.seed}:arrivals:{level}"
        window = cfg.load_window if level > 1 else 0.0
        results: dict[str, run.LoadResult] = {}
        for label, with_library in (("library", True), ("baseline", False)):
            plan = [(r, r.fmt, runner if with_library else None) for r in turns]

            async def main(plan: Any = plan, seed: str = seed, window: float = window) -> Any:
                return await run.play_many(plan, cfg.load_rate, window, seed)

            _fresh()
            results[label] = anyio.run(main, backend=backend)
        lib, base = results["library"], results["baseline"]
        groups = by_format(lib.turns)
        others = [t for t in lib.turns if t.fmt != "openai_chat"]
        rows.append(
            {
                "turns": level,
                "items": lib.items,
                "events_per_s": lib.events_per_second,
                "baseline_events_per_s": base.events_per_second,
                "latency_except_chat": stats([x for t in others for x in t.latencies]),
                "ready_to_start": stats([x for t in lib.turns for x in t.ready_to_start]),
                "per_format": {fmt: latency_block(g) for fmt, g in groups.items()},
                "not_run": sum(t.not_run for t in lib.turns),
                "cpu_library_s": lib.cpu,
                "cpu_baseline_s": base.cpu,
                "cpu_added_us_per_item": (lib.cpu - base.cpu) / lib.items * 1e6,
                "cpu_total_us_per_item": lib.cpu / lib.items * 1e6,
                "source_lag": stats(lib.lag),
                "baseline_source_lag": stats(base.lag),
                "wall_s": lib.wall,
                "gc_collections": len(lib.gc_pauses),
                "gc_full_collections": lib.gc_full,
                "gc_pause_max_ms": max(lib.gc_pauses, default=0.0) * 1e3,
                "gc_pause_total_ms": sum(lib.gc_pauses) * 1e3,
                "baseline_gc_pause_max_ms": max(base.gc_pauses, default=0.0) * 1e3,
            }
        )
    mark_saturation(rows)
    return rows


SATURATION_P99_MS = 5.0


SATURATION_RATE = 0.9


def mark_saturation(rows: list[dict[str, Any]]) -> None:
    """A level is saturated when its p99 (calls of every format but Chat's default adapter,
    whose latency is the adapter's readiness rule) exceeds 5 ms, or when its event rate
    stops keeping up: under 90% of the same sources' rate drained without the library
    (the offered rate: the same turns, arrivals and pacing)."""
    for row in rows:
        why = []
        p99 = row["latency_except_chat"]["p99_ms"]
        if p99 is not None and p99 > SATURATION_P99_MS:
            why.append(f"p99 {p99:.1f} ms > {SATURATION_P99_MS:g} ms")
        kept = row["events_per_s"] / row["baseline_events_per_s"]
        if kept < SATURATION_RATE:
            why.append(f"events/s {100 * kept:.0f}% of the sources' own")
        row["saturated"] = bool(why)
        row["saturated_why"] = "; ".join(why)


def recorded_phase(cfg: Config, backend: str, replays: list[Replay]) -> dict[str, Any]:
    """4: the real recordings, re-timed at the token rate, one at a time (quick: at once)."""
    turns: list[run.TurnResult] = []

    async def main() -> None:
        if cfg.recorded_concurrent:
            async with anyio.create_task_group() as tg:
                for r in replays:
                    runner = run.recorded_tools(r.names, cfg.recorded_tool)
                    tg.start_soon(_append, turns, run.play_turn(r, r.fmt, runner, cfg.rate))
            return
        for r in replays:
            runner = run.recorded_tools(r.names, cfg.recorded_tool)
            turns.append(await run.play_turn(r, r.fmt, runner, cfg.rate))

    _fresh()
    anyio.run(main, backend=backend)
    out = {}
    for fmt, group in by_format(turns).items():
        out[fmt] = {**latency_block(group), "files": len(group)}
    return out


# -- the run -------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
        return done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def meta(cfg: Config) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for dist in ("toolcall-tracker", "anyio", "trio", "pydantic"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "not installed"
    settings = {k: v for k, v in asdict(cfg).items() if k != "recorded_dir"}
    settings["recorded_dir"] = str(cfg.recorded_dir) if cfg.recorded_dir else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": _load(),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "versions": versions,
        "clock": "time.monotonic() for every timestamp (the CallTimeline clock); sources pace "
        "themselves on the event loop's clock",
        "config": settings,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def run_all(cfg: Config, out: Any = None) -> dict[str, Any]:
    """Every phase on every backend; prints as it goes; returns the figures."""
    started = time.monotonic()
    data: dict[str, Any] = {"meta": meta(cfg), "single": {}, "load": {}, "recorded": {}}
    report.header(data["meta"], cfg, out)
    if "single" in cfg.parts:
        for backend in cfg.backends:
            data["single"][backend] = single_phase(cfg, backend)
        report.single(data["single"], out)
        report.turns(data["single"], cfg, out)
    if "load" in cfg.parts:
        pool = load_pool(cfg)
        gc.freeze()  # the prebuilt items are not the library's: keep them out of collections
        for backend in cfg.backends:
            data["load"][backend] = load_phase(cfg, backend, pool)
        gc.unfreeze()
        report.load(data["load"], cfg, out)
    folder = cfg.recorded_dir.resolve() if cfg.recorded_dir else None
    if "recorded" not in cfg.parts:
        pass
    elif folder is None or not folder.is_dir():
        data["recorded_skipped"] = f"no recordings at {folder}: part 4 skipped"
        report.say(data["recorded_skipped"], out)
    else:
        replays = recorded_replays(folder, cfg.recorded_limit)
        for backend in cfg.backends:
            data["recorded"][backend] = recorded_phase(cfg, backend, replays)
        report.recorded(data["recorded"], folder, len(replays), cfg, out)
    if "steady" in cfg.parts:
        data["steady"] = [
            row
            for backend in cfg.backends
            for row in steady.steady_phase(
                backend, cfg.steady_levels, cfg.steady_seconds, cfg.load_rate, cfg.steady_repeats
            )
        ]
        steady.report(data["steady"], out)
    data["targets"] = report.targets(data, cfg)
    report.print_targets(data["targets"], out)
    data["meta"]["seconds"] = time.monotonic() - started
    data["meta"]["load_average_at_end"] = _load()
    report.say(
        f"\ntotal time: {data['meta']['seconds']:.1f} s; load average at end "
        f"{data['meta']['load_average_at_end']}",
        out,
    )
    return data


write_json = report.write_json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small turns, a few seconds (CI)")
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    p.add_argument("--backend", action="append", choices=("asyncio", "trio"), help="repeatable")
    p.add_argument("--recorded", metavar="DIR", help=f"recordings (default: {RECORDED})")
    p.add_argument("--no-recorded", action="store_true", help="skip part 4")
    p.add_argument(
        "--part",
        action="append",
        choices=("single", "load", "recorded", "steady"),
        help="run only this part (repeatable): single (1 and 2), load (3), recorded (4), "
        "steady (5: turn loops, default GC beside the recommended one)",
    )
    p.add_argument("--levels", help="concurrent turns under load, e.g. 1,100,300")
    p.add_argument("--steady-levels", help="concurrent turn loops in part 5, e.g. 100,1000")
    p.add_argument("--steady-seconds", type=float, help="seconds per run of part 5 (>= 11)")
    p.add_argument("--steady-repeats", type=int, help="recommended-GC runs per level (3)")
    args = p.parse_args(argv)
    cfg = config("quick" if args.quick else "full")
    if args.backend:
        cfg.backends = tuple(args.backend)
    if args.part:
        cfg.parts = tuple(args.part)
    if args.levels:
        cfg.load_levels = tuple(int(n) for n in args.levels.split(","))
    if args.steady_levels:
        cfg.steady_levels = tuple(int(n) for n in args.steady_levels.split(","))
    cfg.steady_seconds = args.steady_seconds or cfg.steady_seconds
    cfg.steady_repeats = args.steady_repeats or cfg.steady_repeats
    if args.recorded:
        cfg.recorded_dir = Path(args.recorded)
    if args.no_recorded:
        cfg.recorded_dir = None
    data = run_all(cfg)
    if args.json:
        write_json(data, args.json)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
