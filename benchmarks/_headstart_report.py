"""Printing ``headstart.py``'s tables and judging its targets (ok / MISS, never failing)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from _headstart_streams import FORMATS

SINGLE_P99_MS = 1.0
LOAD_P99_MS = 2.0
LOAD_TURNS = 100
GAP_PCT = 5.0


def say(text: str, out: Any = None) -> None:
    print(text, file=out, flush=True)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}" if value < 10 else f"{value:,.1f}"


def _num(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None or value != value else format(value, spec)


def header(meta: dict[str, Any], cfg: Any, out: Any = None) -> None:
    tools = ", ".join(f"{name} {seconds * 1000:g} ms" for name, seconds in cfg.tools.items())
    lo, hi = cfg.arg_range
    say("toolcall-tracker head start: completing item -> tool start, and the turn's time", out)
    say(f"date:     {meta['date']}; commit {meta['commit']}; mode {cfg.mode}", out)
    say(
        f"machine:  {meta['python']} on {meta['platform']}, {meta['cpus']} cpus; load "
        f"average at start {meta['load_average']}",
        out,
    )
    say("versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), out)
    say(
        f"turns:    {cfg.calls} calls each, {lo} to {hi} bytes of arguments (log-uniform) in "
        f"{cfg.fragment}-byte fragments; {cfg.rate:g} items/s one turn at a time, "
        f"{cfg.load_rate:g} items/s per turn under load",
        out,
    )
    say(f"tools:    eager, async, typed signatures, each sleeps: {tools}", out)
    say(f"clock:    {meta['clock']}", out)
    say(f"command:  {meta['command']}", out)
    say("", out)


def single(data: dict[str, Any], out: Any = None) -> None:
    say("== 1. completing item -> tool start, one turn at a time (ms)", out)
    say(
        f"{'format':<19} {'backend':<8} {'calls':>5} {'p50':>8} {'p99':>8} {'max':>8}"
        f"   {'ready->start p99':>16}",
        out,
    )
    for backend, formats in data.items():
        for fmt, row in formats.items():
            lat, rts = row["latency"], row["ready_to_start"]
            note = f"   ({row['not_run']} completed calls not run)" if row["not_run"] else ""
            say(
                f"{fmt:<19} {backend:<8} {lat['n']:>5} {_ms(lat['p50_ms']):>8} "
                f"{_ms(lat['p99_ms']):>8} {_ms(lat['max_ms']):>8}   "
                f"{_ms(rts['p99_ms']):>16}{note}",
                out,
            )
    say(
        "openai_chat's completing item is the next call's first chunk (or the finish_reason "
        "chunk); its default adapter makes calls ready only at finish_reason. "
        "openai_chat_eager: OpenAIChatAdapter(eager=True). ready->start: the tracker's own "
        "ready time to the tool's start.",
        out,
    )
    say("", out)


def turns(data: dict[str, Any], cfg: Any, out: Any = None) -> None:
    say("== 2. turn time: turn start -> last tool finished (s, mean over turns)", out)
    say(
        f"{'format':<19} {'backend':<8} {'turns':>5} {'stream':>7} {'after-stream':>12} "
        f"{'tracker':>8} {'ideal':>7} {'sooner':>16} {'gap to ideal':>18}",
        out,
    )
    for backend, formats in data.items():
        for fmt, row in formats.items():
            t = row["turn"]
            if not t.get("turns"):
                continue
            # (+ 0.0 prints a rounded -0 as 0)
            sooner = f"{round(t['sooner_s'], 2) + 0.0:.2f} s ({round(t['sooner_pct']) + 0:d}%)"
            gap = f"{t['gap_to_ideal_pct_mean']:.2f}% / {t['gap_to_ideal_pct_max']:.2f}%"
            say(
                f"{fmt:<19} {backend:<8} {t['turns']:>5} {t['stream_s']:>7.2f} "
                f"{t['after_stream_s']:>12.2f} {t['measured_s']:>8.2f} {t['ideal_s']:>7.2f} "
                f"{sooner:>16} {gap:>18}",
                out,
            )
    say(
        "after-stream: every tool started when the stream ended (OpenAI Agents SDK, "
        "pydantic-ai, LangGraph ToolNode); ideal: each tool started the instant its call "
        "completed; both from the same timestamps and measured tool durations. sooner: "
        "after-stream minus tracker; gap: (tracker - ideal) / ideal, mean / worst turn.",
        out,
    )
    if cfg.single_concurrent:
        say("(quick mode: the formats' turns ran at once, so these are indicative only)", out)
    say("", out)


def load(data: dict[str, Any], cfg: Any, out: Any = None) -> None:
    say(
        f"== 3. under load: concurrent turns in one event loop, the five formats in turn, "
        f"{cfg.load_rate:g} items/s each, arrivals jittered over {cfg.load_window:g} s",
        out,
    )
    say(
        f"{'backend':<8} {'turns':>5} {'items':>8} {'events/s':>9} {'p50':>7} {'p99':>7} "
        f"{'max':>8} {'chat p99':>9} {'lag p99':>8} {'gc max':>7} {'CPU us/item':>12}  saturated",
        out,
    )
    for backend, rows in data.items():
        for row in rows:
            lat = row["latency_except_chat"]
            chat = row["per_format"].get("openai_chat", {}).get("latency", {})
            cpu = f"{row['cpu_added_us_per_item']:.1f}/{row['cpu_total_us_per_item']:.1f}"
            sat = f"yes: {row['saturated_why']}" if row["saturated"] else "no"
            say(
                f"{backend:<8} {row['turns']:>5} {row['items']:>8,} "
                f"{_num(row['events_per_s'], ',.0f'):>9} {_ms(lat['p50_ms']):>7} "
                f"{_ms(lat['p99_ms']):>7} {_ms(lat['max_ms']):>8} "
                f"{_ms(chat.get('p99_ms')):>9} {_ms(row['source_lag']['p99_ms']):>8} "
                f"{_ms(row['gc_pause_max_ms']):>7} {cpu:>12}  {sat}",
                out,
            )
        first = next((r["turns"] for r in rows if r["saturated"]), None)
        where = f"first saturated at {first} turns" if first else "not saturated at any level"
        say(f"{backend}: {where}", out)
    say(
        "latency in ms, completing item -> tool start, calls of every format but openai_chat "
        "(its own p99 beside); lag: how late the sources' sleeps woke (loop overload); gc max: "
        "the longest garbage collection during the run; CPU: "
        "added by the library / whole process, per item (process time minus the same "
        "sources drained without the library; the library's includes the simulated tools).",
        out,
    )
    say("", out)


def recorded(data: dict[str, Any], folder: Path, files: int, cfg: Any, out: Any = None) -> None:
    how = "at once" if cfg.recorded_concurrent else "one at a time"
    say(
        f"== 4. recorded streams: {files} files from {folder}, {how}, one item per slot at "
        f"{cfg.rate:g} items/s; tools {cfg.recorded_tool * 1000:g} ms",
        out,
    )
    say(
        f"{'format':<19} {'backend':<8} {'files':>5} {'calls':>5} {'p50':>8} {'p99':>8} {'max':>8}",
        out,
    )
    for backend, formats in data.items():
        for fmt, row in formats.items():
            lat = row["latency"]
            note = f"   ({row['not_run']} completed calls not run)" if row["not_run"] else ""
            say(
                f"{fmt:<19} {backend:<8} {row['files']:>5} {lat['n']:>5} "
                f"{_ms(lat['p50_ms']):>8} {_ms(lat['p99_ms']):>8} {_ms(lat['max_ms']):>8}{note}",
                out,
            )
    say("", out)


def _target(what: str, measured: float | None, limit: float) -> dict[str, Any]:
    status = "n/a" if measured is None else "ok" if measured <= limit else "MISS"
    return {"target": what, "measured": measured, "limit": limit, "status": status}


def targets(data: dict[str, Any], cfg: Any) -> list[dict[str, Any]]:
    rows = []
    for backend, formats in data["single"].items():
        for fmt in FORMATS:
            p99 = formats.get(fmt, {}).get("latency", {}).get("p99_ms")
            rows.append(_target(f"single turn, {fmt}, {backend}: p99 ms <", p99, SINGLE_P99_MS))
    for backend, levels in data["load"].items():
        fit = [r for r in levels if r["turns"] <= LOAD_TURNS]
        if not fit:
            continue
        row = max(fit, key=lambda r: r["turns"])
        for fmt in FORMATS:
            p99 = row["per_format"].get(fmt, {}).get("latency", {}).get("p99_ms")
            rows.append(
                _target(f"{row['turns']} turns, {fmt}, {backend}: p99 ms <", p99, LOAD_P99_MS)
            )
    for backend, formats in data["single"].items():
        for fmt in FORMATS:
            gap = formats.get(fmt, {}).get("turn", {}).get("gap_to_ideal_pct_max")
            rows.append(
                _target(f"turn time, {fmt}, {backend}: worst gap to ideal % <=", gap, GAP_PCT)
            )
    return rows


def print_targets(rows: list[dict[str, Any]], out: Any = None) -> None:
    say("== targets (reported, never failing the run)", out)
    for row in rows:
        measured = "-" if row["measured"] is None else f"{row['measured']:.3f}"
        say(f"{row['status']:<5} {row['target']:<62} {measured:>9}  (limit {row['limit']:g})", out)


def _clean(value: Any) -> Any:
    """JSON-ready: NaN and infinities become ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_json(data: dict[str, Any], path: str | Path) -> None:
    text = json.dumps(_clean(data), indent=2, allow_nan=False, default=str)
    Path(path).write_text(text + "\n")
