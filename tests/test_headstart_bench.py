"""benchmarks/headstart.py runs end to end and reports on every format (structure only).

The smallest configuration ("smoke": a fast token rate, tiny turns, millisecond tools) is
run on both backends. Nothing here judges a timing: a loaded CI machine must not fail it.
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import headstart  # noqa: E402
from _headstart_streams import FORMATS  # noqa: E402

# Differences of two measurements, which noise may make negative.
SIGNED = {"sooner_s", "sooner_pct", "cpu_added_us_per_item"}


def numbers(value: Any, key: str = "") -> list[tuple[str, float]]:
    """Every number in the report, with the key it is under."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [(key, float(value))]
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in numbers(v, str(k))]
    if isinstance(value, list):
        return [pair for v in value for pair in numbers(v, key)]
    return []


def test_smallest_configuration(tmp_path: Path) -> None:
    cfg = headstart.config("smoke")
    out = io.StringIO()
    data = headstart.run_all(cfg, out)
    assert "== 1." in out.getvalue()
    assert "== targets" in out.getvalue()

    assert set(data["single"]) == {"asyncio", "trio"}
    for formats in data["single"].values():
        assert set(formats) == set(headstart.SINGLE_FORMATS)
        for row in formats.values():
            assert row["latency"]["n"] == cfg.calls * cfg.single_turns  # every tool ran
            assert row["not_run"] == 0
            assert row["turn"]["turns"] == cfg.single_turns

    for rows in data["load"].values():
        assert [row["turns"] for row in rows] == list(cfg.load_levels)
        assert set(rows[-1]["per_format"]) == set(FORMATS)
        assert all(row["items"] > 0 for row in rows)

    if data.get("recorded_skipped"):
        assert not data["recorded"]
    else:
        for formats in data["recorded"].values():
            assert set(formats) == set(FORMATS)

    statuses = {row["status"] for row in data["targets"]}
    assert statuses <= {"ok", "MISS", "n/a"}
    assert len(data["targets"]) == 3 * len(cfg.backends) * len(FORMATS)

    found = numbers({k: v for k, v in data.items() if k != "meta"})
    assert found
    for key, value in found:
        assert math.isfinite(value), key
        if key not in SIGNED:
            assert value >= 0, (key, value)

    path = tmp_path / "headstart.json"
    headstart.write_json(data, path)
    loaded = json.loads(path.read_text())
    assert set(loaded) >= {"meta", "single", "load", "recorded", "targets"}
    assert loaded["meta"]["config"]["mode"] == "smoke"
