"""The command line on a terminal of 60, 80 and 120 columns, and in a pipe, against snapshots.

Each command runs in a subprocess: on a pseudo-terminal (Python's ``pty``, its window size
and ``COLUMNS`` set to the width), or with its output piped. The final report is compared
with a text snapshot under ``tests/snapshots/cli/``; the live frames drawn before it vary
with timing, so they are checked for what must hold in every frame: each line fits the
width, and an id or a tool name is shown whole or shortened with an ellipsis, never broken
across lines. ``TOOLCALL_UPDATE_SNAPSHOTS=1`` rewrites the snapshots.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pty = pytest.importorskip("pty")
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "snapshots" / "cli"
LONG = "tests/fixtures/seed/long_names.jsonl"  # long ids and names, a parse error, an ignored event
GOOD = "tests/fixtures/anthropic/one_call.sse"
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ERASE = re.compile(r"\r(?:\x1b\[2K\x1b\[1A)+\x1b\[2K")
WIDTHS = [60, 80, 120]
UPDATE = os.environ.get("TOOLCALL_UPDATE_SNAPSHOTS") == "1"
TIMEOUT = 60


def _env(columns: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return env


def on_terminal(args: list[str], columns: int) -> tuple[int, str]:
    """Run the command line on a pseudo-terminal ``columns`` wide; its exit code and output."""
    import struct

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**_env(columns), "TERM": "xterm-256color", "LINES": "50"}
    command = [sys.executable, "-m", "toolcall_tracker", *args]
    proc = subprocess.Popen(command, cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other end closed (Linux raises EIO)
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=TIMEOUT)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, b"".join(chunks).decode("utf-8", "replace")


def in_a_pipe(args: list[str], columns: int | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "toolcall_tracker", *args],
        cwd=ROOT,
        env=_env(columns),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.stderr == ""
    return done.returncode, done.stdout


def final_report(raw: str) -> str:
    """What stays on the screen: the output after the live view erased its last frame."""
    tail = raw[raw.rfind("\x1b[2K") + len("\x1b[2K") :] if "\x1b[2K" in raw else raw
    return "\n".join(line.rstrip() for line in CSI.sub("", tail).replace("\r", "").split("\n"))


def frames(raw: str) -> list[list[str]]:
    """The live frames: each redraw starts by erasing the last one, line by line, upwards."""
    return [
        [line for line in CSI.sub("", frame).replace("\r", "").split("\n") if line.strip()]
        for frame in ERASE.split(raw)
    ]


def check_snapshot(name: str, text: str) -> None:
    text = text.rstrip("\n") + "\n"
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no snapshot {path.name}: run with TOOLCALL_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path}"


def ids_and_names(path: Path) -> set[str]:
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        event = event.get("item", event)
        if event["type"] == "start":
            found |= {event["id"], event["name"]}
    return found


def assert_never_broken(lines: list[str], words: set[str], columns: int) -> None:
    """Every line fits; each long id or name appears whole or as a prefix ending in an ellipsis."""
    for line in lines:
        assert len(line.rstrip()) <= columns, line
    text = "\n".join(lines)
    for word in (w for w in words if len(w) > 10):
        for match in re.finditer(re.escape(word[:8]), text):
            shown = re.match(r"[^\s():,]*", text[match.start() :])
            assert shown is not None
            token = shown.group(0)
            assert token == word or (
                token.endswith(("…", "...")) and word.startswith(token.rstrip(".…"))
            ), f"{word!r} shown as {token!r}"


# -- replay -----------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_replay_on_a_terminal(columns: int) -> None:
    code, raw = on_terminal(["replay", LONG], columns)
    assert code == 1  # a call failed
    report = final_report(raw)
    check_snapshot(f"replay-{columns}", report)
    assert_never_broken(report.splitlines(), ids_and_names(ROOT / LONG), columns)


def test_replay_in_a_pipe() -> None:
    code, out = in_a_pipe(["replay", LONG])  # no COLUMNS: 80
    assert code == 1
    assert "\x1b" not in out
    check_snapshot("replay-pipe", out)
    assert_never_broken(out.splitlines(), ids_and_names(ROOT / LONG), 80)


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_live_frames_fit_and_never_break_a_name(columns: int, tmp_path: Path) -> None:
    # A timed copy of the recording plays at its recorded pace, so frames with rows are drawn.
    timed = tmp_path / "long_names_timed.jsonl"
    items = [json.loads(line) for line in (ROOT / LONG).read_text().splitlines()]
    lines = [json.dumps({"t": n * 0.03, "item": item}) for n, item in enumerate(items)]
    timed.write_text("\n".join(lines) + "\n")
    code, raw = on_terminal(["replay", str(timed)], columns)
    assert code == 1
    drawn = frames(raw[: raw.rfind("\x1b[?25h")])  # up to where the live view ends
    with_rows = [frame for frame in drawn if any(" pending " in line for line in frame[2:])]
    assert with_rows, drawn
    for frame in drawn:
        assert_never_broken(frame, ids_and_names(ROOT / LONG), columns)


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_demo_fits_the_terminal(columns: int) -> None:
    code, raw = on_terminal(["demo", "--fast"], columns)
    assert code == 0
    for frame in frames(raw):
        for line in frame:
            assert len(line.rstrip()) <= columns, line


# -- validate ---------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_validate_on_a_terminal(columns: int) -> None:
    code, raw = on_terminal(["validate", LONG, GOOD], columns)
    assert code == 1
    out = final_report(raw)
    check_snapshot("validate", out)  # the same at every width: one record a line
    for line in out.splitlines():
        assert line.startswith((f"{LONG}: ", f"{GOOD}: ")), line


def test_validate_in_a_pipe_keeps_the_file_on_every_line() -> None:
    code, out = in_a_pipe(["validate", LONG, GOOD], columns=60)
    assert code == 1
    check_snapshot("validate", out)
    failing = [line for line in out.splitlines() if "FAIL" in line]  # `| grep FAIL`
    assert failing == [f"{LONG}: FAIL events, 2 problems"]
