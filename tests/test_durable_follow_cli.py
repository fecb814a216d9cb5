"""``toolcall-tracker replay --follow JOURNAL TURN`` started mid-turn in another process,
on SQLite and on a real Redis server: it prints every record in order, live, and stops at
the turn's end (or the runner's ``run_end`` when calls await a decision elsewhere).

The follower is a real subprocess (``python -m toolcall_tracker``); the turn waits until
the follower has printed the turn's first call, so the follower is attached mid-turn.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from anyio.streams.text import TextReceiveStream

from _ui_turn import Shared, make_runner, serve_turn, shared, turn_events
from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker
from toolcall_tracker.cli import main

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    return shared(request, tmp_path)


async def test_a_follower_started_mid_turn_in_another_process_prints_it_all(
    anyio_backend: str, backend: Shared, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str] = []
    with anyio.fail_after(DEADLINE * 2):
        half, attached = anyio.Event(), anyio.Event()
        events = turn_events()

        async def model(tracker: ToolCallTracker) -> None:
            for index, event in enumerate(events):
                if index == 6:
                    half.set()
                    await attached.wait()  # the follower printed the first call: go on
                tracker.apply(event)
                await anyio.lowlevel.checkpoint()

        async def follower() -> None:
            await half.wait()
            command = [sys.executable, "-m", "toolcall_tracker", "replay", "--follow"]
            command += [backend.location, "turn-1", *backend.options, "--timeout", str(DEADLINE)]
            async with await anyio.open_process(command) as process:
                assert process.stdout is not None
                buffer = ""
                async for text in TextReceiveStream(process.stdout):
                    buffer += text
                    *done, buffer = buffer.split("\n")
                    lines.extend(done)
                    if any(" start c1 lookup" in line for line in done):
                        attached.set()
                assert await process.wait() == 1  # the turn ended, c2 failed
                lines.append(buffer)

        ran: list[str] = []
        with backend.journal() as journal, backend.store() as store:
            async with anyio.create_task_group() as tg:
                tg.start_soon(follower)
                await serve_turn(journal, store, "turn-1", make_runner(ran), model)
    # what the follower printed, live, is what a replay of the finished turn prints
    replay = ["replay", backend.location, "turn-1", *backend.options]
    assert await anyio.to_thread.run_sync(main, replay) == 1  # c2's tool failed
    assert lines == capsys.readouterr().out.split("\n")
    text = "\n".join(lines)
    for expected in ("start c1 lookup", "outcome c1", "error c2", "run_end", "end ok (tool_calls)"):
        assert expected in text
    assert lines[-1] == ""  # the output ends with a newline
    assert lines[-5] == "3 calls, turn ok (tool_calls)"
    assert lines[-2].startswith("  c3 delete_file running")  # awaiting a decision elsewhere


async def test_follow_reads_a_finished_turn_and_stops_at_once(
    anyio_backend: str, backend: Shared, capsys: pytest.CaptureFixture[str]
) -> None:
    async def at_once(tracker: ToolCallTracker) -> None:
        for event in turn_events():
            tracker.apply(event)

    with anyio.fail_after(DEADLINE):
        with backend.journal() as journal, backend.store() as store:
            await serve_turn(journal, store, "turn-1", make_runner([]), at_once)
    replay = ["replay", backend.location, "turn-1", "--follow", "--timeout", "60"]
    replay += backend.options
    assert await anyio.to_thread.run_sync(main, replay) == 1
    assert "3 calls, turn ok (tool_calls)" in capsys.readouterr().out


def test_a_redis_journal_without_redis_py_or_a_server_is_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
    for follow in ([], ["--follow", "--timeout", "5"]):
        assert main(["replay", *follow, url, "turn-1"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("toolcall-tracker: error: ")
        assert "failed on the Redis server" in err
    assert main(["replay", "redis://127.0.0.1:notaport/0", "turn-1"]) == 2
    assert "not a usable Redis URL" in capsys.readouterr().err
    script = (
        "import sys; sys.modules['redis'] = None\n"  # as if redis-py were not installed
        "from toolcall_tracker.cli import main\n"
        f"sys.exit(main(['replay', '--follow', {url!r}, 'turn-1']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "pip install 'toolcall-tracker[redis]'" in done.stderr
    assert "Traceback" not in done.stderr
