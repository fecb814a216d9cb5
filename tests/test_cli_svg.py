"""The ``--svg`` pictures: scaled to the turn, whole titles, ignored events marked."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from toolcall_tracker.cli import main

ROOT = Path(__file__).resolve().parents[1]
SEED_INTERLEAVED = ROOT / "tests" / "fixtures" / "seed" / "interleaved.jsonl"
SVG = "{http://www.w3.org/2000/svg}"
PLOT_LEFT, PLOT_WIDTH = 230, 640


def draw(capsys: pytest.CaptureFixture[str], target: Path, *argv: str | Path) -> ET.Element:
    main([str(arg) for arg in argv] + ["--svg", str(target)])
    capsys.readouterr()
    return ET.fromstring(target.read_text(encoding="utf-8"))


def small_texts(root: ET.Element) -> dict[str, float]:
    """The ``stream`` and ``end...`` labels: their y."""
    found = {}
    for text in root.iter(f"{SVG}text"):
        content = text.text or ""
        if content == "stream" or content.startswith("end"):
            found["stream" if content == "stream" else "end"] = float(text.get("y", "0"))
    return found


def test_the_demo_svg_scales_to_a_fast_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = draw(capsys, tmp_path / "demo.svg", "demo", "--fast", "--plain")
    (band,) = [rect for rect in root.iter(f"{SVG}rect") if rect.get("class") == "stream"]
    x, width = float(band.get("x", "0")), float(band.get("width", "0"))
    assert x >= PLOT_LEFT - 0.01
    assert width >= 0.5 * PLOT_WIDTH  # the turn fills the axis (it used to take 7% of it)
    tools = [rect for rect in root.iter(f"{SVG}rect") if rect.get("class") == "tool"]
    assert tools
    for rect in tools:  # every tool's run is inside the plot
        left = float(rect.get("x", "0"))
        assert PLOT_LEFT <= left <= left + float(rect.get("width", "0")) <= PLOT_LEFT + PLOT_WIDTH


def test_a_long_title_is_wrapped_not_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / ("a_rather_long_folder_name_for_recordings_" * 3) / "stream.jsonl"
    deep.parent.mkdir(parents=True)
    deep.write_text(SEED_INTERLEAVED.read_text())
    root = draw(capsys, tmp_path / "t.svg", "replay", deep)
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.text is not None
    assert title.text.startswith(str(deep))
    assert title.text.endswith("turn ok (tool_calls)")
    lines = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "title"]
    assert len(lines) >= 2
    assert "".join(lines).replace(" ", "") == title.text.replace(" ", "")
    ys = [float(t.get("y", "0")) for t in root.iter(f"{SVG}text") if t.get("class") == "title"]
    band = next(r for r in root.iter(f"{SVG}rect") if r.get("class") == "stream")
    assert max(ys) + 10 < float(band.get("y", "0"))  # the plot moved down to make room


def test_ignored_events_are_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["replay", "--json", str(SEED_INTERLEAVED)])
    document = json.loads(capsys.readouterr().out)
    root = draw(capsys, tmp_path / "t.svg", "replay", SEED_INTERLEAVED)
    marks = [
        group
        for group in root.iter(f"{SVG}g")
        if group.get("class") == "ignored" and group.get("data-reason")
    ]
    assert sorted(m.get("data-reason") for m in marks) == sorted(
        entry["reason"] for entry in document["ignored"]
    )
    calls = {g.get("data-id"): g for g in root.iter(f"{SVG}g") if g.get("class") == "call"}
    on_t1 = [g for g in calls["t1"].iter(f"{SVG}g") if g.get("class") == "ignored"]
    assert {g.get("data-reason") for g in on_t1} == {
        "duplicate_start",
        "not_pending",
        "already_finished",
    }
    (row,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "ignored-row"]
    (loose,) = [g for g in row.iter(f"{SVG}g") if g.get("class") == "ignored"]
    assert loose.get("data-reason") == "unknown_id"  # t9 has no row of its own
    tip = loose.find(f"{SVG}title")
    assert tip is not None
    assert "unknown_id" in (tip.text or "")
    assert "t9" in (tip.text or "")


def test_end_label_moves_up_instead_of_overlapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = tmp_path / "short.jsonl"
    events = [
        {"type": "start", "id": "a", "name": "f"},
        {"type": "delta", "id": "a", "argsTextDelta": "{}"},
        {"type": "ready", "id": "a"},
        {"type": "end", "reason": "tool_calls"},
    ]
    stream.write_text("".join(json.dumps(e) + "\n" for e in events))
    wide = small_texts(draw(capsys, tmp_path / "wide.svg", "replay", stream))
    assert wide["end"] == wide["stream"]  # room for both on one line
    late = [{"type": "start", "id": f"late{n}", "name": "f"} for n in range(60)]
    stream.write_text("".join(json.dumps(e) + "\n" for e in events + late))
    narrow = small_texts(draw(capsys, tmp_path / "narrow.svg", "replay", stream))
    assert narrow["end"] < narrow["stream"]  # a short stream on a long axis: above it
