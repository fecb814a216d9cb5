"""SIGSTOP: a writer frozen past its lease while a restore in another process finished its
turn, then woken (SIGCONT), is fenced: it runs no tool after the restore, and the restored
turn's calls are final. On an SQLite file and on the real Redis server.

The writer (``tests/_fence_child.py writer``) runs an eager ``charge`` and two gated
``notify`` calls, pausing at exact points (it prints ``M <point>`` and waits for a line on
stdin); the parent freezes it there with SIGSTOP, runs ``finish`` in another process,
wakes the writer with SIGCONT and lets it go on. Tools append to a side file each time
they really run.

- frozen at ``streamed`` (the charge done, ``n1`` streamed, the stream not ended): the
  restore ends the turn cut (``n1`` not executed); the woken writer streams ``n2`` and an
  ``ok`` end, and must run neither notify.
- frozen at ``charged`` (inside the charge, after its side effect): past the lease, the
  restore reports the charge in doubt (it ran: it is not run again) and ``n1`` not
  executed; the woken writer's charge returns, and it still runs no notify.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = str(Path(__file__).with_name("_fence_child.py"))
WAIT = 60.0


def read_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], WAIT)
    assert ready, "the child said nothing for a minute"
    return child.stdout.readline()


def args(mode: str, location: str, side: Path, prefix: str) -> list[str]:
    return [sys.executable, CHILD, mode, location, str(side), prefix]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
@pytest.mark.parametrize("point", ["streamed", "charged"])
def test_a_frozen_writer_woken_after_a_restore_is_fenced(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, point: str
) -> None:
    if backend == "redis":
        location = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
    else:
        location, prefix = str(tmp_path / "turns.db"), ""
    side = tmp_path / "side.txt"
    side.touch()
    writer = subprocess.Popen(
        args("writer", location, side, prefix),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None
    try:
        while (line := read_line(writer)) != f"M {point}\n":
            assert line.startswith("M "), line
            writer.stdin.write("go\n")
            writer.stdin.flush()
        writer.send_signal(signal.SIGSTOP)  # frozen: its 0.5 s leases run out while the
        # restore waits on them (at most twice the lease), as no renewal comes
        finished = subprocess.run(
            args("finish", location, side, prefix), capture_output=True, text=True, timeout=WAIT
        )
        assert finished.returncode == 0, finished.stderr
        restored = json.loads(finished.stdout.strip().splitlines()[-1])
        writer.send_signal(signal.SIGCONT)
        while True:
            writer.stdin.write("go\n")
            writer.stdin.flush()
            line = read_line(writer)
            if line.startswith("R "):
                break
        assert line == "R superseded\n"
        assert writer.wait(WAIT) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(WAIT)
    ran = side.read_text().splitlines()
    assert ran == ["charge A"]  # the charge once; no notify, neither restored nor woken
    assert restored["n1"] == ["error", "not_executed"]
    if point == "streamed":
        assert restored["c1"] == ["done", "charged A"]
    else:
        assert restored["c1"] == ["error", "in_doubt"]
    again = subprocess.run(
        args("finish", location, side, prefix), capture_output=True, text=True, timeout=WAIT
    )
    assert json.loads(again.stdout.strip().splitlines()[-1]) == restored  # final
    assert side.read_text().splitlines() == ["charge A"]
