"""Benchmark suite: toolcall-tracker against bare-loop floors and the official clients.

Usage (from the repository root, after ``pip install -e '.[bench]'``)::

    .venv/bin/python benchmarks/run.py                 # full run (a few minutes)
    .venv/bin/python benchmarks/run.py --quick         # tiny sizes, seconds (CI)
    .venv/bin/python benchmarks/run.py --json out.json # also write the results as JSON
    .venv/bin/python benchmarks/run.py --only machine --workload 8x2KB
    .venv/bin/python benchmarks/run.py --profile machine --workload 8x2KB

Every workload is built once (seeded, deterministic) in every input shape, then every
subject is measured on it in the same process: the median of ``--repeats`` timed runs, with
the garbage collector enabled (collected before each run). Ratios compare a subject with
the bare-loop floor measured on the very same input list in the same run. Competitors that
slow down past a time budget per run are measured on a prefix of the stream ("capped").
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import json
import math
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import streams
import subjects as subj
from streams import WorkloadSpec

FULL = [
    WorkloadSpec("8x2KB", "8 calls x 2 KB args", 8, 2048),
    WorkloadSpec("1x1MB", "1 call x 1 MB args", 1, 1 << 20),
    WorkloadSpec("1x1KB", "1 call x 1 KB args (per-byte reference)", 1, 1024),
    WorkloadSpec("2000x200B", "2,000 calls x 200 B args", 2000, 200),
    WorkloadSpec("1000x2KB-rr", "1,000 calls x 2 KB, interleaved round-robin", 1000, 2048, 8, True),
]
# Quick mode keeps the names (so the summary works) but shrinks every stream.
QUICK = [
    WorkloadSpec("8x2KB", "quick: 4 calls x 512 B args", 4, 512),
    WorkloadSpec("1x1MB", "quick: 1 call x 8 KB args", 1, 8 << 10),
    WorkloadSpec("1x1KB", "1 call x 1 KB args (per-byte reference)", 1, 1024),
    WorkloadSpec("2000x200B", "quick: 20 calls x 200 B args", 20, 200),
    WorkloadSpec("1000x2KB-rr", "quick: 8 calls x 1 KB, round-robin", 8, 1024, 8, True),
]
LARGE, SMALL = "1x1MB", "1x1KB"


@dataclass
class Result:
    workload: str
    subject: str
    input: str
    kind: str
    floor: str
    items_total: int
    items_measured: int
    bytes_measured: int
    median_ns: int
    runs_ns: list[int]
    us_per_event: float
    events_per_s: float
    ns_per_byte: float | None
    ratio_to_floor: float | None = None
    capped: bool = False
    growth_exponent: float | None = None
    est_full_us_per_event: float | None = None
    correct: bool | None = None
    loops: int = 1
    note: str = ""


@dataclass
class Report:
    meta: dict[str, Any]
    results: list[Result] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


# -- measuring ------------------------------------------------------------------------------


def _once(run: subj.RunFn, items: list[Any], complete: bool) -> tuple[int, Any]:
    gc.collect()
    elapsed, out = run(items, complete, 1)
    return elapsed, out() if callable(out) else out


def _same(got: Any, expected: list[Any]) -> bool:
    return isinstance(got, list) and got == expected


@dataclass
class Plan:
    """How one subject is sampled on one workload, decided by a probing phase."""

    subject: subj.Subject
    family: streams.Family
    n: int
    loops: int
    checked: bool | None
    exponent: float | None
    samples: list[int] = field(default_factory=list)

    def sample(self) -> None:
        """One timed sample: ``loops`` back-to-back runs, in ns per run."""
        assert self.subject.run is not None
        items = self.family.items
        prefix = items if self.n == len(items) else items[: self.n]
        gc.collect()
        elapsed, _ = self.subject.run(prefix, self.n == len(items), self.loops)
        self.samples.append(elapsed // self.loops)


def prepare(
    s: subj.Subject, fam: streams.Family, expected: list[Any], budget_s: float, min_s: float
) -> Plan:
    """Warm up, check the result, cap a competitor that is too slow, and pick ``loops``."""
    assert s.run is not None
    items, total = fam.items, len(fam.items)
    budget_ns = budget_s * 1e9
    n, exponent, checked = total, None, None
    if s.cappable:
        # Grow a prefix until the next doubling would overrun the budget per run.
        n = min(total, 256)
        prev: tuple[int, int] | None = None
        while True:
            elapsed, got = _once(s.run, items if n == total else items[:n], n == total)
            if n == total:
                checked = _same(got, expected)
                break
            if prev is not None and elapsed > prev[1] > 0:
                exponent = math.log(elapsed / prev[1]) / math.log(n / prev[0])
            grow = min(total, 2 * n)
            predicted = elapsed * (grow / n) ** max(1.0, min(2.0, exponent or 2.0))
            if predicted > budget_ns:
                break
            prev, n = (n, elapsed), grow
    else:
        elapsed, got = _once(s.run, items, True)  # warm-up and correctness check
        checked = _same(got, expected)
    # Short runs are repeated back to back so that one sample lasts at least min_s.
    loops = max(1, min(100_000, math.ceil(min_s * 1e9 / max(elapsed, 1))))
    return Plan(s, fam, n, loops, checked, exponent if n < total else None)


def result_of(plan: Plan) -> Result:
    s, fam, n = plan.subject, plan.family, plan.n
    total = len(fam.items)
    median = int(statistics.median(plan.samples))
    nbytes = fam.bytes_upto(n)
    r = Result(
        workload="",
        subject=s.name,
        input=s.family,
        kind=s.kind,
        floor=s.floor,
        items_total=total,
        items_measured=n,
        bytes_measured=nbytes,
        median_ns=median,
        runs_ns=plan.samples,
        us_per_event=median / n / 1e3,
        events_per_s=n / (median / 1e9) if median else float("inf"),
        ns_per_byte=median / nbytes if nbytes else None,
        capped=n < total,
        growth_exponent=round(plan.exponent, 2) if plan.exponent is not None else None,
        correct=plan.checked,
        loops=plan.loops,
        note=s.note,
    )
    if r.capped:
        grows = plan.exponent if plan.exponent is not None else 1.0
        r.est_full_us_per_event = r.us_per_event * (total / n) ** max(0.0, grows - 1.0)
    return r


def peak_memory(run: subj.RunFn, items: list[Any]) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        run(items, True, 1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- the run ----------------------------------------------------------------------------------


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, timeout=10,
            cwd=Path(__file__).resolve().parent,
        )  # fmt: skip
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine_meta(args: argparse.Namespace) -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    dirty = _git("status", "--porcelain", "--", "src")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "load_average": _load(),
        "commit": _git("rev-parse", "--short", "HEAD") + (" (src modified)" if dirty else ""),
        "versions": {
            d: _version(d)
            for d in (
                "toolcall-tracker",
                "pydantic",
                "pydantic-core",
                "anyio",
                "trio",
                "openai",
                "anthropic",
                "pydantic-ai-slim",
                "langchain-core",
            )
        },
        "mode": "quick" if args.quick else "full",
        "repeats": args.repeats,
        "budget_s": args.budget,
        "min_sample_s": args.min_sample,
        "clock": args.clock,
        "fragment_bytes": 8,
        "seed": streams.SEED,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def select(args: argparse.Namespace) -> tuple[list[subj.Subject], list[WorkloadSpec]]:
    everything = subj.all_subjects()
    wanted = [o.lower() for o in args.only or ()]
    chosen = [s for s in everything if not wanted or any(o in s.name.lower() for o in wanted)]
    floors = {s.floor for s in chosen if s.floor}
    chosen = [s for s in everything if s in chosen or (s.kind == "floor" and s.family in floors)]
    specs = QUICK if args.quick else FULL
    if args.workload:
        specs = [w for w in specs if w.name in args.workload]
    return chosen, specs


def run_all(args: argparse.Namespace) -> Report:
    report = Report(machine_meta(args))
    chosen, specs = select(args)
    for s in chosen:
        if s.run is None:
            report.skipped.append({"subject": s.name, "input": s.family, "why": s.skip})
    runnable = [s for s in chosen if s.run is not None]
    families = {s.family for s in runnable}
    print_header(report.meta)
    for s in report.skipped:
        print(f"SKIPPED {s['subject']} on {s['input']}: {s['why']}")
    for spec in specs:
        t0 = time.perf_counter()
        notes: list[str] = []
        w = streams.build_workload(spec, families, notes)
        # The official clients parse slowly (~100 us per item): check a prefix only.
        notes += streams.cross_check(w, limit=200 if args.quick else 3000)
        # The inputs live for the whole workload: keep them out of every collection.
        gc.collect()
        gc.freeze()
        built = time.perf_counter() - t0
        for note in notes:
            report.notes.append(f"{spec.name}: {note}")
        plans: list[Plan] = []
        failed: list[str] = []

        for s in runnable:
            fam = w.families.get(s.family)
            if fam is None:
                continue
            try:
                plans.append(prepare(s, fam, w.expected, args.budget, args.min_sample))
            except Exception as exc:  # one broken subject must not sink the run
                _fail(report, failed, s, exc)
        # Samples are taken in rounds, one per subject per round, so that a slow spell of
        # the machine hits every subject alike instead of a few of them.
        for _ in range(args.repeats):
            for plan in list(plans):
                try:
                    plan.sample()
                except Exception as exc:
                    _fail(report, failed, plan.subject, exc)
                    plans.remove(plan)
        rows: list[Result] = []
        for plan in plans:
            r = result_of(plan)
            r.workload = spec.name
            rows.append(r)
        floors = {r.input: r for r in rows if r.kind == "floor"}
        for r in rows:
            ref = floors.get(r.floor or r.input)
            if ref is not None and ref.us_per_event:
                r.ratio_to_floor = r.us_per_event / ref.us_per_event
        report.results.extend(rows)
        print_workload(spec, w, rows, failed + notes, built, time.perf_counter() - t0 - built)
        if spec.name == LARGE:
            report.memory = memory_section(w, runnable)
        del w
        gc.unfreeze()
        gc.collect()
    report.summary = summarize(report)
    print_summary(report)
    return report


def _fail(report: Report, failed: list[str], s: subj.Subject, exc: Exception) -> None:
    why = f"raised {type(exc).__name__}: {str(exc)[:160]}"
    failed.append(f"FAILED {s.name} on {s.family}: {why}")
    report.skipped.append({"subject": s.name, "input": s.family, "why": why})


def memory_section(w: streams.Workload, runnable: list[subj.Subject]) -> list[dict[str, Any]]:
    rows = []
    for s in runnable:
        if s.kind not in ("floor", "library", "adapter") or s.run is None:
            continue
        if s.kind == "floor" and s.family not in ("seed-dicts",):
            continue
        if "consume" in s.name:
            continue
        if s.kind == "adapter" and not s.family.endswith("-objects"):
            continue
        fam = w.families.get(s.family)
        if fam is None:
            continue
        try:
            peak = peak_memory(s.run, fam.items)
        except Exception:
            continue
        rows.append(
            {
                "subject": s.name,
                "input": s.family,
                "peak_bytes": peak,
                "arg_bytes": w.arg_bytes,
                "ratio": peak / w.arg_bytes,
            }
        )
    return rows


# -- reporting ------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def print_header(meta: dict[str, Any]) -> None:
    print("toolcall-tracker benchmarks")
    print(f"date:      {meta['date']}")
    print(f"machine:   {meta['python']} on {meta['platform']}")
    print(
        f"cpu:       {meta['processor']}; {meta['cpu_count']} cpus ({meta['cpus_usable']} "
        f"usable); load average at start {meta['load_average']}"
    )
    print(f"commit:    {meta['commit']}")
    print("versions:  " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    print(
        f"settings:  {meta['mode']} mode; median of {meta['repeats']} samples (taken in rounds "
        f"across subjects) of >= {meta['min_sample_s']} s each"
    )
    clock = "thread CPU time" if meta["clock"] == "cpu" else "wall time"
    print(
        f"           clock: {clock}; GC on, prebuilt inputs frozen (gc.freeze); "
        f"seed {meta['seed']}; competitors capped at {meta['budget_s']} s per run"
    )
    print(f"command:   {meta['command']}")
    print()


COLUMNS = (
    ("subject", 38, "<"),
    ("input", 17, "<"),
    ("events", 15, ">"),
    ("us/event", 9, ">"),
    ("events/s", 11, ">"),
    ("ns/byte", 9, ">"),
    ("x floor", 8, ">"),
)


def _row(values: list[str]) -> str:
    cells = [f"{v:{align}{width}}" for v, (_, width, align) in zip(values, COLUMNS, strict=False)]
    extra = values[len(COLUMNS) :]
    return "  ".join(cells + extra).rstrip()


def print_workload(
    spec: WorkloadSpec,
    w: streams.Workload,
    rows: list[Result],
    notes: list[str],
    built: float,
    took: float,
) -> None:
    print(
        f"== {spec.name}: {spec.title}, {spec.fragment}-byte fragments; "
        f"{w.arg_bytes:,} argument bytes; built in {built:.1f} s, measured in {took:.1f} s"
    )
    print(_row([c[0] for c in COLUMNS] + ["note"]))
    for r in rows:
        events = f"{r.items_measured:,}"
        if r.capped:
            events += "*"
        note = []
        if r.capped:
            pct = 100 * r.items_measured / r.items_total
            note.append(f"capped: first {pct:.1f}% of {r.items_total:,}")
            if r.growth_exponent is not None and r.growth_exponent > 1.3:
                note.append(f"grows ~n^{r.growth_exponent:.1f}")
            if r.est_full_us_per_event is not None and r.est_full_us_per_event > 1.2 * (
                r.us_per_event
            ):
                note.append(f"est. full stream ~{_fmt(r.est_full_us_per_event)} us/event")
        if r.correct is False:
            note.append("WRONG RESULT (args differ from expected)")
        if r.note:
            note.append(r.note)
        print(
            _row(
                [
                    r.subject,
                    r.input,
                    events,
                    _fmt(r.us_per_event, 3),
                    f"{r.events_per_s:,.0f}",
                    _fmt(r.ns_per_byte, 1),
                    _fmt(r.ratio_to_floor, 2),
                    "; ".join(note),
                ]
            )
        )
    for note in notes:
        print(f"note: {note}")
    print()


def _find(report: Report, workload: str, subject: str, family: str) -> Result | None:
    for r in report.results:
        if r.workload == workload and r.subject == subject and r.input == family:
            return r
    return None


def summarize(report: Report) -> dict[str, Any]:
    out: dict[str, Any] = {"linearity": [], "consume_vs_machine": [], "targets": []}
    workloads = list(dict.fromkeys(r.workload for r in report.results))
    pairs = dict.fromkeys((r.subject, r.input) for r in report.results)
    for subject, family in pairs:
        big, small = _find(report, LARGE, subject, family), _find(report, SMALL, subject, family)
        if big and small and big.ns_per_byte and small.ns_per_byte and not big.capped:
            out["linearity"].append(
                {
                    "subject": subject,
                    "input": family,
                    "ns_per_byte_large": big.ns_per_byte,
                    "ns_per_byte_small": small.ns_per_byte,
                    "ratio": big.ns_per_byte / small.ns_per_byte,
                }
            )
    for wl in workloads:
        m = _find(report, wl, "machine", "seed-dicts")
        f = _find(report, wl, "async for + machine", "seed-dicts")
        a = _find(report, wl, "consume/asyncio", "seed-dicts")
        t = _find(report, wl, "consume/trio", "seed-dicts")
        out["consume_vs_machine"].append(
            {
                "workload": wl,
                "asyncio_vs_machine": a.us_per_event / m.us_per_event if a and m else None,
                # what iterating an async source costs by itself, and consume beyond it
                "async_for_vs_machine": f.us_per_event / m.us_per_event if f and m else None,
                "asyncio_vs_async_for": a.us_per_event / f.us_per_event if a and f else None,
                "trio_vs_asyncio": t.us_per_event / a.us_per_event if a and t else None,
            }
        )
    out["targets"] = targets(report, workloads, out)
    return out


def _target(what: str, measured: float | None, limit: float, lower_is_better: bool = True) -> dict:
    if measured is None:
        return {"target": what, "measured": None, "limit": limit, "status": "n/a"}
    ok = measured <= limit if lower_is_better else measured >= limit
    return {"target": what, "measured": measured, "limit": limit, "status": "ok" if ok else "MISS"}


def targets(report: Report, workloads: list[str], out: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for wl in workloads:
        m = _find(report, wl, "machine", "seed-dicts")
        rows.append(
            _target(f"{wl}: machine on seed dicts, x floor <= 4", m and m.ratio_to_floor, 4)
        )
    # Every adapter + tracker row, on every input family it was measured on; the speed-up
    # over the fastest peer only where a Python peer reads the same input.
    adapters = sorted(
        {(r.input, r.subject) for r in report.results if r.subject.endswith(" + tracker")}
    )
    for wl in workloads:
        for family, name in adapters:
            a = _find(report, wl, name, family)
            rows.append(
                _target(f"{wl}: {name} on {family}, x floor <= 4", a and a.ratio_to_floor, 4)
            )
            rivals = [
                r
                for r in report.results
                if r.workload == wl and r.input == family and r.kind == "competitor"
            ]
            best = min(rivals, key=lambda r: r.us_per_event, default=None)
            if best is None:
                continue
            speedup = best.us_per_event / a.us_per_event if a else None
            label = f"{wl}: {name}, speed-up over fastest rival ({best.subject})"
            rows.append(_target(label + " >= 3", speedup, 3, lower_is_better=False))
    lin = {(x["subject"], x["input"]): x["ratio"] for x in out["linearity"]}
    for subject, family in [("machine", "seed-dicts")] + [(n, f) for f, n in adapters]:
        rows.append(
            _target(
                f"{subject} on {family}, ns/byte {LARGE} / {SMALL} <= 1.25",
                lin.get((subject, family)),
                1.25,
            )
        )
    for wl_row in out["consume_vs_machine"]:
        wl = wl_row["workload"]
        rows.append(
            _target(f"{wl}: consume/asyncio vs machine <= 2", wl_row["asyncio_vs_machine"], 2)
        )
        rows.append(
            _target(f"{wl}: consume/trio vs asyncio <= 1.5", wl_row["trio_vs_asyncio"], 1.5)
        )
    for mem in report.memory:
        if mem["subject"] == "machine" and mem["input"] == "seed-dicts":
            rows.append(
                _target(f"{LARGE}: machine peak memory / argument bytes <= 3", mem["ratio"], 3)
            )
    return rows


def print_summary(report: Report) -> None:
    s = report.summary
    if report.memory:
        print(f"== peak memory (tracemalloc), {LARGE} workload, inputs prebuilt")
        for m in report.memory:
            print(
                f"{m['subject'] + ' on ' + m['input']:<52} {m['peak_bytes'] / 1e6:9.2f} MB"
                f"   {m['ratio']:6.2f} x argument bytes ({m['arg_bytes']:,})"
            )
        print()
    if s["linearity"]:
        print(f"== linearity: ns/byte {LARGE} / ns/byte {SMALL} (1.00 = linear)")
        for x in s["linearity"]:
            print(
                f"{x['subject'] + ' on ' + x['input']:<52} {x['ns_per_byte_large']:8.1f} /"
                f" {x['ns_per_byte_small']:8.1f}  = {x['ratio']:5.2f}"
            )
        print()
    print("== consume vs machine (per event, seed dicts; async for: the machine fed by")
    print("   `async for` over the same source on asyncio, no tracker)")
    for x in s["consume_vs_machine"]:
        print(
            f"{x['workload']:<14} consume/asyncio / machine = {_fmt(x['asyncio_vs_machine'])}"
            f" (async for / machine = {_fmt(x['async_for_vs_machine'])},"
            f" consume/asyncio / async for = {_fmt(x['asyncio_vs_async_for'])})"
            f"   consume/trio / consume/asyncio = {_fmt(x['trio_vs_asyncio'])}"
        )
    print()
    print("== targets (issue 6), measured in this run")
    for t in s["targets"]:
        measured = "-" if t["measured"] is None else f"{t['measured']:.2f}"
        print(f"{t['status']:<5} {t['target']:<96} {measured}")


def write_json(report: Report, path: str) -> None:
    data = {
        "meta": report.meta,
        "results": [asdict(r) for r in report.results],
        "skipped": report.skipped,
        "memory": report.memory,
        "summary": report.summary,
        "notes": report.notes,
    }
    Path(path).write_text(json.dumps(data, indent=2) + "\n")
    print(f"\nwrote {path}")


def profile(args: argparse.Namespace) -> None:
    chosen, specs = select(args)
    targets_ = [s for s in chosen if s.run is not None and s.kind != "floor"]
    if args.input:
        targets_ = [s for s in targets_ if s.family == args.input]
    if not targets_:
        sys.exit(f"nothing to profile for {args.profile!r}")
    s = targets_[0]
    assert s.run is not None
    spec = specs[0]
    w = streams.build_workload(spec, {s.family}, [])
    items = w.families[s.family].items
    s.run(items, True, 1)
    print(f"cProfile: {s.name} on {s.family}, workload {spec.name}, {args.repeats} runs")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.repeats):
        s.run(items, True, 1)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds (CI)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument(
        "--only", action="append", metavar="NAME", help="subjects whose name contains NAME"
    )
    p.add_argument("--workload", action="append", metavar="NAME", help="e.g. 8x2KB, 1x1MB")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per cell (median)")
    p.add_argument("--budget", type=float, default=None, help="competitor seconds per run")
    p.add_argument(
        "--clock",
        choices=sorted(subj.CLOCKS),
        default="cpu",
        help="cpu: this thread's CPU time (default; robust on a shared machine); wall",
    )
    p.add_argument("--min-sample", type=float, default=None, help="seconds per timed sample")
    p.add_argument("--profile", metavar="NAME", help="cProfile one subject instead")
    p.add_argument("--input", metavar="FAMILY", help="with --profile: e.g. seed-dicts")
    p.add_argument("--top", type=int, default=20, help="with --profile: rows to print")
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 5
    if args.budget is None:
        args.budget = 0.02 if args.quick else 0.5
    if args.min_sample is None:
        args.min_sample = 0.002 if args.quick else 0.05
    subj.use_clock(args.clock)
    if args.profile:
        args.only = [args.profile]
        args.repeats = max(args.repeats, 20)
        profile(args)
        return 0
    start = time.perf_counter()
    report = run_all(args)
    print(f"\ntotal time: {time.perf_counter() - start:.1f} s; load average at end {_load()}")
    if args.json:
        write_json(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
