"""kill -9: a journaled turn killed with SIGKILL at seeded random points, then restored and
finished in another process.

The child (``tests/_durable_child.py turn``) pauses at every kill point (each stream item,
each tool before and after its side effect, after each claim, before each record, after
each approval) and tells the parent through its stdout pipe; the parent either lets it go
on or kills it right there, so the kill points are exact, with no timing involved. Tools
append to a side file each time they really run.

After the kill, ``finish`` restores the turn in a new process and finishes it. Checked:
nothing recorded is lost, no non-idempotent tool runs twice, calls that ran without a
recorded outcome are reported in doubt (or re-run, if idempotent), and a turn cut before
its end never runs its gated tools.

``TOOLCALL_KILL_POINTS`` (default 50) sets the number of kill points per backend: the
first 36 are every point of one run in turn, the others drawn from seeds starting at
``TOOLCALL_KILL_SEED`` (default: random); every seed and point is printed.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker.durable import SQLiteJournal

CHILD = str(Path(__file__).with_name("_durable_child.py"))
POINTS = int(os.environ.get("TOOLCALL_KILL_POINTS", "50"))
FIRST_SEED = int(os.environ.get("TOOLCALL_KILL_SEED", str(random.randrange(1 << 30))))
MARKERS = 34  # kill points of one full run (the child's turn); later picks let it finish
IDEMPOTENT = {"lookup"}
GATED = {"transfer", "notify"}
TOOL_OF = {"c1": "lookup", "c2": "charge", "c3": "transfer", "c4": "notify"}
WAIT = 60.0  # seconds the parent waits for a child's next line before failing


def read_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], WAIT)
    assert ready, "the child said nothing for a minute"
    return child.stdout.readline()


def run_until(db: Path, side: Path, backend: str, kill_at: int) -> str | None:
    """Run the turn; SIGKILL it at its ``kill_at``-th kill point. The point, or ``None``
    if the turn finished first."""
    child = subprocess.Popen(
        [sys.executable, CHILD, "turn", str(db), str(side), backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    try:
        seen = 0
        while True:
            line = read_line(child)
            if not line.startswith("M "):
                assert line == "E done\n", line
                assert child.wait(WAIT) == 0
                return None
            if seen == kill_at:
                child.kill()  # SIGKILL, at this exact point
                child.wait(WAIT)
                return line[2:].strip()
            seen += 1
            child.stdin.write("go\n")
            child.stdin.flush()
    finally:
        if child.poll() is None:  # pragma: no cover (a failed assertion above)
            child.kill()
            child.wait(WAIT)
        child.stdin.close()
        assert child.stdout is not None
        child.stdout.close()


def finish(db: Path, side: Path, backend: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, CHILD, "finish", str(db), str(side), backend],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def recorded_before(db: Path) -> dict[str, Any]:
    """What the killed process had committed: each call's outcome (by id), and whether
    the stream's end was journaled."""
    outcomes: dict[str, Any] = {}
    ended = False
    if not db.exists():
        return {"outcomes": outcomes, "ended": ended}
    for record in SQLiteJournal.read_file(db, "turn-1"):
        if record.kind == "outcome":
            outcomes[record.data["id"]] = record.data
        elif record.kind == "events":
            for item in record.data:
                if item[0] == "e":
                    ended = True
                elif item[0] in "RE":
                    outcomes.setdefault(item[1], {"event": item})
    return {"outcomes": outcomes, "ended": ended}


def check(point: str | None, before: dict[str, Any], report: dict[str, Any], side: Path) -> None:
    runs = (
        Counter(line.split()[0] for line in side.read_text().splitlines())
        if side.exists()
        else Counter()
    )
    calls = {call["id"]: call for call in report["calls"]}
    # every call ends, and the ends agree with what really ran
    for call_id, name in TOOL_OF.items():
        call = calls.get(call_id)
        if call is None:
            continue  # the stream was cut before this call started
        assert call["status"] in ("done", "error"), (point, call)
        if name not in IDEMPOTENT:
            assert runs[name] <= 1, (point, name, runs)  # never twice
        if call["status"] == "done":
            assert runs[name] >= 1, (point, call)  # a result means it really ran
        elif call["error"]["kind"] == "in_doubt":
            assert name not in IDEMPOTENT, (point, call)
            assert call_id in report["claimed"], (point, call, report["claimed"])
        if runs[name] == 1 and name not in IDEMPOTENT:  # it ran: it is done or in doubt
            assert call["status"] == "done" or call["error"]["kind"] == "in_doubt", (
                point,
                call,
            )
    # nothing recorded is lost
    for call_id, data in before["outcomes"].items():
        call = calls[call_id]
        if "kind" in data:
            if data["kind"] == "result":
                assert call["status"] == "done", (point, call, data)
                assert call["result"] == data["result"], (point, call, data)
            else:
                assert call["error"]["kind"] == data["failure"]["kind"], (point, call, data)
        else:
            assert call["status"] == ("done" if data["event"][0] == "R" else "error")
    # a cut turn never runs its gated tools
    if not before["ended"]:
        assert report["cut"], point
        for name in GATED:
            assert runs[name] == 0, (point, runs)
        for call_id in ("c3", "c4"):
            if call_id in calls:
                kind = calls[call_id]["error"]["kind"]
                assert kind in ("not_executed", "incomplete_arguments"), (point, calls[call_id])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kill_9_at_seeded_points_then_restore_elsewhere(tmp_path: Path, backend: str) -> None:
    points: Counter[str] = Counter()
    for number in range(POINTS):
        seed = FIRST_SEED + number
        # every kill point once (in the child's usual order), then seeded random ones
        kill_at = number if number < MARKERS + 2 else random.Random(seed).randrange(MARKERS + 2)
        case = tmp_path / f"{backend}-{seed}"
        case.mkdir()
        db, side = case / "j.db", case / "side.txt"
        point = run_until(db, side, backend, kill_at)
        print(f"kill -9 {backend} seed {seed}: point {kill_at} ({point or 'finished first'})")
        before = recorded_before(db)
        if not db.exists() or not SQLiteJournal.read_file(db, "turn-1"):
            continue  # killed before the turn's first record: nothing to restore
        report = finish(db, side, backend)
        check(point, before, report, side)
        points[(point or "finished").split()[0]] += 1
    print(f"kill -9 {backend}: {POINTS} points from seed {FIRST_SEED}: {dict(points)}")
