"""A sync tool abandoned on its timeout never keeps the interpreter alive."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

PROGRAM = textwrap.dedent(
    """
    import threading, sys
    import anyio
    from toolcall_tracker import ToolCallTracker, ToolRunner, tool

    release = threading.Event()

    def stuck() -> str:
        release.wait(60)  # never released: abandoned on the call timeout
        return "late"

    async def main() -> None:
        with anyio.fail_after(10):
            tracker = ToolCallTracker()
            for event in (
                {"type": "start", "id": "s", "name": "stuck"},
                {"type": "delta", "id": "s", "argsTextDelta": "{}"},
                {"type": "ready", "id": "s"},
                {"type": "end"},
            ):
                tracker.apply(event)
            await ToolRunner([tool(stuck, eager=True, timeout=0.05)]).run(tracker)
            print(tracker.get("s").error.kind)

    anyio.run(main, backend=sys.argv[1])
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_abandoned_sync_tool_does_not_block_exit(backend: str) -> None:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, backend],
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "timeout"
    assert time.monotonic() - began < 30  # the stuck thread waits 60 s: exit did not wait
