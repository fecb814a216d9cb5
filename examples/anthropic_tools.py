"""Run tools while Claude is still streaming, with toolcall-tracker's AnthropicAdapter.

With ANTHROPIC_API_KEY set, this asks the real Messages API. Without it, the official
``anthropic`` client is pointed at a bundled transcript (an SSE body served by an in-process
HTTP transport), so the example always runs offline:

    python examples/anthropic_tools.py [--backend asyncio|trio]

Each tool starts as soon as its ``content_block_stop`` arrives, while the model may still
be writing the next call; the tracker records the results.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx2

from toolcall_tracker import Error, Result, ToolCall, ToolCallTracker
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.anthropic import AnthropicAdapter

TRANSCRIPT = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "fixtures"
    / "anthropic"
    / "parallel_calls.sse"
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
    {
        "name": "get_time",
        "description": "Current time in an IANA timezone.",
        "input_schema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
]


async def get_weather(location: str) -> dict[str, Any]:
    await anyio.sleep(0.05)  # pretend to call a weather service
    return {"location": location, "tempC": 18, "sky": "clear"}


async def get_time(timezone: str) -> str:
    await anyio.sleep(0.01)
    return f"12:00 in {timezone}"


IMPLEMENTATIONS = {"get_weather": get_weather, "get_time": get_time}


def make_client() -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    body = TRANSCRIPT.read_bytes()

    def serve(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = httpx2.MockTransport(serve)
    return anthropic.AsyncAnthropic(
        api_key="offline", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
    )


async def run_tool(tracker: ToolCallTracker, call: ToolCall) -> None:
    tool = IMPLEMENTATIONS.get(call.name)
    if tool is None:
        tracker.apply(Error(id=call.id, error=f"no tool named {call.name!r}"))
        return
    try:
        result = await tool(**call.args)
    except Exception as exc:
        tracker.apply(Error(id=call.id, error=f"{type(exc).__name__}: {exc}"))
    else:
        tracker.apply(Result(id=call.id, result=result))
    print(f"  finished {call.name}({json.dumps(call.args)})")


async def main() -> None:
    client = make_client()
    async with client:
        async with (
            ToolCallTracker() as tracker,
            client.messages.stream(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                tools=TOOLS,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": "Weather in SF and Tokyo, time in Tokyo?"}],
            ) as stream,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, adapt(stream, AnthropicAdapter()))
            async for call in tracker.ready_calls():
                print(f"ready: {call.name} {call.args}")
                tg.start_soon(run_tool, tracker, call)
        end = tracker.end
        print(f"turn: {'ok' if end and end.ok else 'not ok'} ({end.reason if end else 'open'})")
        for call in tracker.list():
            print(f"{call.id} {call.name}: {call.status} -> {call.result or call.error}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--trio", action="store_true", help=argparse.SUPPRESS)  # the old flag
    options = parser.parse_args()
    backend = "trio" if options.trio else options.backend
    anyio.run(main, backend=backend)
