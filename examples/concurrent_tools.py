"""Several interleaved calls streamed with jittered timing; each tool starts when its call is ready.

The timeline printed at the end shows, for every call, when it was announced, when its
arguments became ready, when its tool started and when it finished, relative to the
start of the stream, so you can see tools running while the model is still streaming.

Run: .venv/bin/python examples/concurrent_tools.py [--backend trio] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from toolcall_tracker import ToolCall, ToolCallTracker

CALLS = [
    ("c1", "search", {"query": "streaming tool calls", "limit": 5}),
    ("c2", "weather", {"city": "Lisbon", "unit": "celsius"}),
    ("c3", "calculator", {"expression": "6 * 7"}),
    ("c4", "search", {"query": "anyio structured concurrency", "limit": 3}),
]


async def simulated_model(rng: random.Random) -> AsyncIterator[dict[str, Any]]:
    """Interleave the calls' fragments at random, keeping each call's own order."""
    scripts = []
    for call_id, name, args in CALLS:
        text = json.dumps(args)
        cuts = sorted(rng.sample(range(1, len(text)), k=min(5, len(text) - 1)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        script = [{"type": "start", "id": call_id, "name": name}]
        script += [{"type": "delta", "id": call_id, "argsTextDelta": p} for p in pieces]
        script.append({"type": "ready", "id": call_id})
        scripts.append(script)
    # Calls are announced one after another, then stream interleaved.
    cursor = [0] * len(scripts)
    live = 1
    while any(c < len(s) for c, s in zip(cursor, scripts, strict=True)):
        if live < len(scripts) and rng.random() < 0.25:
            live += 1
        choices = [i for i in range(live) if cursor[i] < len(scripts[i])]
        if not choices:
            live += 1
            continue
        i = rng.choice(choices)
        yield scripts[i][cursor[i]]
        cursor[i] += 1
        await anyio.sleep(rng.uniform(0.005, 0.03))  # network jitter


async def run_tool(tracker: ToolCallTracker, call: ToolCall, rng: random.Random) -> None:
    tracker.mark_tool_started(call.id)
    await anyio.sleep(rng.uniform(0.05, 0.15))  # the tool's own work
    tracker.mark_tool_finished(call.id)
    tracker.apply({"type": "result", "id": call.id, "result": f"{call.name} ok"})


async def main(seed: int) -> None:
    rng = random.Random(seed)
    t0 = time.monotonic()
    async with ToolCallTracker() as tracker:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, simulated_model(rng))
            async for call in tracker.ready_calls():
                print(f"{time.monotonic() - t0:6.3f}s  ready: {call.id} {call.name}{call.args}")
                tg.start_soon(run_tool, tracker, call, rng)
        timelines = {call.id: tracker.timeline(call.id) for call in tracker.list()}
        stream_end = max(tl.ready or 0.0 for tl in timelines.values() if tl is not None)

        print("\ncall  tool        announced   ready   tool start  tool end   status")
        for call in tracker.list():
            tl = timelines[call.id]
            assert tl is not None

            def rel(x: float | None) -> str:
                return f"{x - t0:8.3f}s" if x is not None else "        -"

            print(
                f"{call.id:5} {call.name:11} {rel(tl.started)} {rel(tl.ready)} "
                f"{rel(tl.tool_started)} {rel(tl.tool_finished)}  {call.status}"
            )
        early = [
            call_id
            for call_id, tl in timelines.items()
            if tl is not None and tl.tool_started is not None and tl.tool_started < stream_end
        ]
        print(f"\ntools started while the model was still streaming: {early}")
        end = tracker.end
        print(f"turn: {'ok' if end and end.ok else 'not ok'} ({end.reason if end else 'open'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    anyio.run(main, options.seed, backend=options.backend)
