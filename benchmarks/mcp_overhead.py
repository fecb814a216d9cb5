"""What the runner adds to an MCP tool call: one run, as a ratio.

    .venv/bin/python benchmarks/mcp_overhead.py [--calls 200] [--rounds 5] [--backend trio]

Starts tests/_mcp_server.py over stdio and times, in alternating rounds on the same
session, ``--calls`` sequential ``tools/call`` requests of ``math.add`` made directly with
``session.call_tool`` and the same number of calls run by a ``ToolRunner`` (one turn per
call: tracker, schema check, the call as an async-generator tool, the result written back).
Prints the median wall time per call of each and their ratio. Wall clock: the cost is
mostly the round trip to the server process, which CPU time would not see.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from toolcall_tracker import ToolCallTracker, ToolRunner
from toolcall_tracker.mcp import mcp_tools

SERVER = str(Path(__file__).parents[1] / "tests" / "_mcp_server.py")


def events(i: int) -> list[dict[str, object]]:
    return [
        {"type": "start", "id": f"c{i}", "name": "math_add"},
        {"type": "delta", "id": f"c{i}", "argsTextDelta": f'{{"a": {i}, "b": 1}}'},
        {"type": "ready", "id": f"c{i}"},
        {"type": "end", "reason": "stop"},
    ]


async def main(calls: int, rounds: int) -> None:
    params = StdioServerParameters(command=sys.executable, args=[SERVER, "bench", "stdio"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        runner = ToolRunner(await mcp_tools(session, eager=True))
        direct: list[float] = []
        through: list[float] = []
        for _ in range(rounds):
            start = time.perf_counter()
            for i in range(calls):
                result = await session.call_tool("math.add", {"a": i, "b": 1})
                assert result.structured_content == {"sum": i + 1}
            direct.append((time.perf_counter() - start) / calls)
            start = time.perf_counter()
            for i in range(calls):
                tracker = ToolCallTracker()
                for event in events(i):
                    tracker.apply(event)
                (call,) = await runner.run(tracker)
                assert call.result == {"sum": i + 1}
            through.append((time.perf_counter() - start) / calls)
    d, t = statistics.median(direct), statistics.median(through)
    print(f"direct call_tool : {d * 1e6:8.0f} us per call (median of {rounds} rounds)")
    print(f"through the runner: {t * 1e6:8.0f} us per call")
    print(f"ratio runner/direct: {t / d:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    anyio.run(main, args.calls, args.rounds, backend=args.backend)
