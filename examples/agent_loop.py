"""A full agent turn without network: a simulated model stream, tools run as calls complete.

The "model" streams four tool calls whose argument fragments interleave, the way OpenAI and
Anthropic streams deliver parallel calls:

- ``get_weather`` (async, slow, eager: read-only, so it starts while the model still talks);
- ``convert_currency`` (sync, runs in a worker thread, eager);
- ``get_weather`` again, with invalid arguments (the model gets a validation error back);
- ``book_meeting`` (gated, the default: it has side effects, so it only runs once the turn
  is known to have ended normally).

The runner executes each call the moment it is ready; then the timeline shows the overlap
with the stream, and the follow-up messages are printed in OpenAI Chat format, ready for the
next request. Run it with ``python examples/agent_loop.py`` (add ``--backend trio`` for trio).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from toolcall_tracker import End, ToolCallTracker
from toolcall_tracker.feedback import openai_chat_messages
from toolcall_tracker.runner import ToolRunner
from toolcall_tracker.tools import openai_chat_tools, tool

# -- the tools: plain functions --------------------------------------------------------------


class Forecast(BaseModel):
    city: str
    days: int
    summary: str


@tool(eager=True)
async def get_weather(city: str, days: int = 1) -> Forecast:
    """Get the weather forecast for a city.

    Args:
        city: the city's name.
        days: how many days ahead (1-7).
    """
    await anyio.sleep(0.4)  # a slow upstream API
    return Forecast(city=city, days=days, summary="light rain, 14°C")


@tool(eager=True)
def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """Convert an amount between currencies.

    Args:
        amount: how much.
        source: ISO code of the source currency.
        target: ISO code of the target currency.
    """
    time.sleep(0.2)  # a blocking client library: runs in a worker thread
    return {"amount": round(amount * 11.2, 2), "currency": target}


class Attendee(BaseModel):
    name: str
    email: str


def book_meeting(title: str, attendees: list[Attendee], length: Literal[30, 60] = 30) -> str:
    """Book a meeting (has side effects: gated, runs only after a normal end of turn).

    Args:
        title: the meeting's title.
        attendees: who to invite.
        length: minutes.
    """
    return f"booked {title!r} ({length} min) with {', '.join(a.name for a in attendees)}"


# -- a simulated model stream ------------------------------------------------------------------

CALLS = {
    "call_w1": ("get_weather", '{"city": "Bergen", "days": 2}'),
    "call_fx": ("convert_currency", '{"amount": 120, "source": "EUR", "target": "NOK"}'),
    "call_w2": ("get_weather", '{"city": 42, "days": "many"}'),
    "call_bk": (
        "book_meeting",
        '{"title": "Trip sync", "attendees": [{"name": "Ann", "email": "ann@example.com"}]}',
    ),
}


def _chunks(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


async def model_stream() -> AsyncIterator[Any]:
    """Interleaved fragments of four calls, with a little network latency between chunks."""
    pending = {cid: _chunks(args) for cid, (_, args) in CALLS.items()}
    started: set[str] = set()
    order = list(CALLS)
    while pending:
        for cid in order[: len(started) + 1]:  # a new call joins every round
            if cid not in pending:
                continue
            if cid not in started:
                started.add(cid)
                yield {"type": "start", "id": cid, "name": CALLS[cid][0]}
            yield {"type": "delta", "id": cid, "argsTextDelta": pending[cid].pop(0)}
            if not pending[cid]:
                del pending[cid]
                yield {"type": "ready", "id": cid}
            await anyio.sleep(0.03)
    yield End(ok=True, reason="tool_calls")


# -- the agent turn ------------------------------------------------------------------------------


async def main() -> None:
    """Run one turn and print what happened."""
    runner = ToolRunner([get_weather, convert_currency, book_meeting], max_concurrency=4)
    print(
        "tools sent to the model:", [t["function"]["name"] for t in openai_chat_tools(runner.tools)]
    )

    t0 = time.monotonic()
    async with ToolCallTracker() as tracker:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, model_stream())
                calls = await runner.run(tracker)
        end = tracker.end

    print("\n" + f"turn: {'ok' if end and end.ok else 'not ok'} ({end.reason if end else 'open'})")
    print("\ntimeline (ms since the request; '-' = never happened)")
    header = ("call", "tool", "status", "announced", "ready", "tool start", "tool end", "finished")
    print("  {:<8} {:<17} {:<7} {:>9} {:>6} {:>10} {:>8} {:>9}".format(*header))
    for call in calls:
        line = tracker.timeline(call.id)
        assert line is not None
        stamps = [
            "-" if t is None else f"{(t - t0) * 1000:.0f}"
            for t in (
                line.started,
                line.ready,
                line.tool_started,
                line.tool_finished,
                line.finished,
            )
        ]
        print(
            "  {:<8} {:<17} {:<7} {:>9} {:>6} {:>10} {:>8} {:>9}".format(
                call.id, call.name, call.status.value, *stamps
            )
        )
    stream_end = max(
        (line.ready or 0.0) for c in calls if (line := tracker.timeline(c.id)) is not None
    )
    overlapped = [
        c.id
        for c in calls
        if (line := tracker.timeline(c.id)) is not None
        and line.tool_started is not None
        and line.tool_started < stream_end
    ]
    print(f"\ntools started while the model was still streaming: {overlapped}")

    print("\nfollow-up messages (OpenAI Chat format):")
    print(json.dumps(openai_chat_messages(calls), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--trio", action="store_true", help=argparse.SUPPRESS)  # the old flag
    options = parser.parse_args()
    backend = "trio" if options.trio else options.backend
    anyio.run(main, backend=backend)
