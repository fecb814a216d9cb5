"""Run tools while an OpenAI model is still streaming its tool calls.

With ``OPENAI_API_KEY`` set this asks the real API (Chat Completions; ``--responses`` for
the Responses API). Without it, the same official client is pointed at a bundled recorded
transcript (``tests/fixtures/openai_*/parallel_calls.sse``) served by an in-process
``httpx.MockTransport``, so the example always runs, with no network.

Each call's tool starts the moment the tracker says its arguments are complete
(``tracker.ready_calls()``), in an anyio task group, while the stream goes on. The
``stream`` lines show what the model is streaming: with Chat Completions the first
``get_weather`` starts as soon as the second call begins (its arguments are then complete),
while the later calls are still streaming, not when the turn ends::

    python examples/openai_tools.py                    # Chat Completions
    python examples/openai_tools.py --responses        # Responses API
    python examples/openai_tools.py --wait-for-finish  # Chat: ready only at finish_reason
    python examples/openai_tools.py --backend trio     # the same on trio
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from openai import AsyncOpenAI

from toolcall_tracker import ToolCall, ToolCallFailed, ToolCallTracker
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.openai import OpenAIChatAdapter, OpenAIResponsesAdapter

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
PROMPT = "What is the weather in Paris, Tokyo and New York right now? Use the tools."

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City, country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
}
TIME_PARAMETERS = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "IANA time zone"}},
    "required": ["timezone"],
}
CHAT_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a place.",
            "parameters": WEATHER_PARAMETERS,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a time zone.",
            "parameters": TIME_PARAMETERS,
        },
    },
]
# The Responses API takes the same functions, flattened.
RESPONSES_TOOLS: list[Any] = [
    {"type": "function", **tool["function"], "strict": False} for tool in CHAT_TOOLS
]

_START = time.monotonic()


def say(message: str) -> None:
    print(f"[{time.monotonic() - _START:6.3f}s] {message}", flush=True)


# -- the tools (stand-ins: they just take a little while) ------------------------------


async def get_weather(location: str, unit: str = "celsius") -> dict[str, Any]:
    await anyio.sleep(0.2)
    return {"location": location, "temperature": 21, "unit": unit, "sky": "clear"}


async def get_time(timezone: str) -> dict[str, Any]:
    await anyio.sleep(0.1)
    return {"timezone": timezone, "time": time.strftime("%H:%M")}


TOOLS: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "get_weather": get_weather,
    "get_time": get_time,
}


async def run_tool(tracker: ToolCallTracker, call: ToolCall) -> None:
    """Run one ready call's tool and report its outcome to the tracker."""
    tool = TOOLS.get(call.name)
    say(f"start  {call.name}({json.dumps(call.args)})  [{call.id}]")
    tracker.mark_tool_started(call.id)
    try:
        if tool is None:
            raise LookupError(f"no tool named {call.name!r}")
        result = await tool(**call.args)
    except Exception as exc:  # a tool failure is the call's outcome, not ours
        tracker.mark_tool_finished(call.id)
        tracker.apply({"type": "error", "id": call.id, "error": f"{type(exc).__name__}: {exc}"})
        say(f"failed {call.name}: {exc}")
        return
    tracker.mark_tool_finished(call.id)
    tracker.apply({"type": "result", "id": call.id, "result": result})
    say(f"done   {call.name} -> {json.dumps(result)}")


# -- where the stream comes from -------------------------------------------------------


async def narrated(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The Chat stream, unchanged, saying when each call begins and when the turn ends."""
    async for chunk in chunks:
        for choice in chunk.choices:
            for fragment in choice.delta.tool_calls or ():
                if fragment.function is not None and fragment.function.name:
                    say(f"stream call #{fragment.index + 1} ({fragment.function.name}) begins")
            if choice.finish_reason is not None:
                say(f"stream finish_reason={choice.finish_reason}")
        yield chunk


def make_client(transcript: Path) -> tuple[AsyncOpenAI, str]:
    """The real client if there is a key; else the same client on a recorded transcript."""
    if os.environ.get("OPENAI_API_KEY"):
        return AsyncOpenAI(), "the OpenAI API"
    body = transcript.read_bytes()

    async def trickle() -> AsyncIterator[bytes]:
        # One SSE event at a time, a little apart, as a server would send them.
        for event in body.split(b"\n\n"):
            if event.strip():
                await anyio.sleep(0.01)
                yield event + b"\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=trickle())

    client = AsyncOpenAI(
        api_key="sk-offline-example",
        base_url="http://127.0.0.1:9/v1",  # never contacted: the transport answers
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    return client, f"the recorded transcript {transcript.relative_to(FIXTURES.parent.parent)}"


async def stream_turn(tracker: ToolCallTracker, *, responses: bool, eager: bool) -> None:
    """Stream one model turn into the tracker."""
    folder = "openai_responses" if responses else "openai_chat"
    client, where = make_client(FIXTURES / folder / "parallel_calls.sse")
    say(f"streaming from {where}")
    async with client:
        if responses:
            stream = await client.responses.create(
                model=MODEL, input=PROMPT, tools=RESPONSES_TOOLS, stream=True
            )
            await tracker.consume(adapt(stream, OpenAIResponsesAdapter()))
        else:
            chat = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": PROMPT}],
                tools=CHAT_TOOLS,
                stream=True,
            )
            await tracker.consume(adapt(narrated(chat), OpenAIChatAdapter(eager=eager)))
    end = tracker.end
    say(f"turn: {'ok' if end and end.ok else 'not ok'} ({end.reason if end else 'open'})")


async def main(responses: bool, eager: bool) -> None:
    async with ToolCallTracker() as tracker:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: stream_turn(tracker, responses=responses, eager=eager))
            async for call in tracker.ready_calls():
                say(f"ready  {call.name} [{call.id}]")
                tg.start_soon(run_tool, tracker, call)
        print()
        for call in tracker.list():
            try:
                done = await tracker.wait_done(call.id)
            except ToolCallFailed as exc:
                print(f"{call.id}: {call.name} failed: {exc.error}")
            else:
                print(f"{done.id}: {done.name}({done.args_text}) = {json.dumps(done.result)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", action="store_true", help="use the Responses API")
    parser.add_argument(
        "--wait-for-finish",
        action="store_true",
        help="Chat: every call waits for finish_reason (OpenAIChatAdapter(eager=False))",
    )
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    options = parser.parse_args()
    anyio.run(main, options.responses, not options.wait_for_finish, backend=options.backend)
