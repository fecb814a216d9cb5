"""``toolcall-tracker demo``: a simulated model turn, run through the public API, shown live.

The "model" streams four tool calls whose argument fragments interleave, at about the
rate a model writes them. The :class:`~toolcall_tracker.ToolRunner` starts each eager tool
the moment its call is ready, while later calls still stream; one call's arguments are
not valid JSON (the failure), and one tool is gated: it runs only once the turn ended
normally. A :class:`~._calllog.CallLog` on the tracker's change feed follows every call,
for the live table (rich), the plain lines and the SVG. ``fast`` runs it 50 times faster.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import IO, Any, Final

import anyio

from .. import Status, ToolCall, ToolCallTracker, ToolRunner, tool
from ..changes import ChangeListener
from ._calllog import CallLog
from ._render import calls_table
from ._text import clean, count, end_text, write

_FAST: Final = 0.02  # --fast: every delay times this
_CHUNK: Final = 7  # characters per streamed fragment
_GAP: Final = 0.045  # seconds between two fragments

_CALLS: Final = (
    ("call_1", "search_docs", '{"query": "streaming tool calls", "limit": 5}', 0.0),
    ("call_2", "get_weather", '{"city": "Lisbon", "days": 3}', 0.15),
    ("call_3", "calculate", '{"expression": "2 * (3 + 4)", "precision": 2,}', 0.35),
    (
        "call_4",
        "send_summary",
        '{"to": "team@example.com", "subject": "Findings", '
        '"body": "Docs found, weather fetched, sum pending."}',
        0.5,
    ),
)
"""Each call: id, tool, argument text (call_3's is not valid JSON), when it is announced."""


@dataclass
class DemoResult:
    """What the demo produced: the call log (for the SVG), a title, the calls."""

    log: CallLog
    title: str
    calls: list[ToolCall]


def _tools(scale: float) -> ToolRunner:
    """The demo's tools: three eager (read-only) ones and a gated one."""

    @tool(eager=True)
    async def search_docs(query: str, limit: int = 3) -> list[str]:
        """Search the documentation."""
        await anyio.sleep(0.55 * scale)
        return [f"{query} ({index})" for index in range(1, min(limit, 3) + 1)]

    @tool(eager=True)
    async def get_weather(city: str, days: int = 1) -> dict[str, Any]:
        """Get the weather forecast."""
        await anyio.sleep(0.35 * scale)
        return {"city": city, "days": days, "summary": "sunny, 24 C"}

    @tool(eager=True)
    def calculate(expression: str, precision: int = 2) -> float:
        """Evaluate an arithmetic expression (never reached: its arguments are invalid)."""
        return round(float(len(expression)), precision)

    async def send_summary(to: str, subject: str, body: str) -> str:
        """Send a summary (a side effect: gated, runs after a normal end of the turn)."""
        await anyio.sleep(0.25 * scale)
        return f"sent {subject!r} to {to}"

    return ToolRunner([search_docs, get_weather, calculate, send_summary], max_concurrency=4)


async def _model(scale: float) -> AsyncIterator[dict[str, Any]]:
    """The model's stream: the calls' fragments interleaved, at a steady rate."""
    fragments = {
        call_id: [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)]
        for call_id, _, text, _ in _CALLS
    }
    begin = time.monotonic()
    announced: set[str] = set()
    while fragments:
        now = (time.monotonic() - begin) / scale
        for call_id, name, _, at in _CALLS:
            if call_id in fragments and call_id not in announced and at <= now:
                announced.add(call_id)
                yield {"type": "start", "id": call_id, "name": name}
        for call_id in [call_id for call_id in fragments if call_id in announced]:
            yield {"type": "delta", "id": call_id, "argsTextDelta": fragments[call_id].pop(0)}
            if not fragments[call_id]:
                del fragments[call_id]
                yield {"type": "ready", "id": call_id}
            await anyio.sleep(_GAP * scale)
        if not announced & set(fragments):
            await anyio.sleep(_GAP * scale)
    yield {"type": "end", "ok": True, "reason": "tool_calls"}


class _Printer(ChangeListener):
    """Plain output: one line per transition, as it happens (the change feed)."""

    def __init__(self, tracker: ToolCallTracker, stream: IO[str], clock: Callable[[], float]):
        self._tracker = tracker
        self._stream = stream
        self._clock = clock

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        call = self._tracker.get(call_id)
        name = "" if call is None else clean(call.name)
        change = "announced" if before is None else f"{before.value} -> {after.value}"
        write(self._stream, f"{self._clock():6.2f} s  {clean(call_id):<8} {name:<13} {change}\n")


def _sync_tools(log: CallLog, tracker: ToolCallTracker, zero: float) -> None:
    """Copy when each tool ran (the runner's marks on the tracker's timeline) to the log."""
    for call_id, record in log.calls.items():
        line = tracker.timeline(call_id)
        if line is not None and line.tool_started is not None:
            stop = None if line.tool_finished is None else line.tool_finished - zero
            record.tool = (line.tool_started - zero, stop)


def demo(*, backend: str, fast: bool, live: bool, force: bool, width: int) -> DemoResult:
    """Run the demo turn on ``backend``, shown live (rich) or as plain lines on stdout.

    Raises:
        ModuleNotFoundError: the backend's package (trio) is not installed.
    """
    import sys

    scale = _FAST if fast else 1.0
    stream = sys.stdout
    result: list[DemoResult] = []

    async def turn() -> None:
        zero = time.monotonic()

        def clock() -> float:
            return time.monotonic() - zero

        runner = _tools(scale)
        async with ToolCallTracker() as tracker:
            log = CallLog(tracker.machine, timed=True, clock=clock)
            log.begin(0.0)
            view: Any = None
            if live:
                from ._live import LiveView, console

                out = console(stream, width, force=force)
                view = LiveView(out, "toolcall-tracker demo", tools=True)
            else:
                tracker.subscribe(_Printer(tracker, stream, clock))
                write(stream, "toolcall-tracker demo: a simulated turn of four calls\n")
            finished = anyio.Event()

            async def redraw() -> None:
                while not finished.is_set():
                    _sync_tools(log, tracker, zero)
                    log.tick()
                    view.draw(log)
                    with anyio.move_on_after(0.05):
                        await finished.wait()

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    if view is not None:
                        view.__enter__()
                        group.start_soon(redraw)
                    group.start_soon(tracker.consume, _model(scale))
                    calls = await runner.run(tracker)
                    finished.set()
            if view is not None:
                view.__exit__(None, None, None)
            _sync_tools(log, tracker, zero)
            log.tick()
            end = tracker.end
            title = (
                f"toolcall-tracker demo ({backend}): {count(len(calls), 'call')}, "
                f"turn {'?' if end is None else end_text(end)}"
            )
            result.append(DemoResult(log, title, calls))
            if live:
                _live_summary(out, calls, log)
            else:
                for line in _plain_summary(calls, log, width):
                    write(stream, line + "\n")

    anyio.run(turn, backend=backend)
    return result[0]


def _head_starts(log: CallLog) -> list[str]:
    """One line per tool that started before the stream ended: by how much."""
    lines = []
    for record in log.calls.values():
        if record.tool is None:
            continue
        began = record.tool[0]
        ahead = "" if log.end is None or began >= log.end else log.unit(log.end - began)
        what = f"{ahead} before the stream ended" if ahead else "after the stream ended"
        lines.append(
            f"  {clean(record.id):<8} {clean(record.name):<13} tool started at "
            f"{log.unit(began)}, {what}"
        )
    return lines


def _plain_summary(calls: list[ToolCall], log: CallLog, width: int) -> list[str]:
    """The plain summary: the calls, when their tools ran, the verdict."""
    end = log.end_event
    lines = ["", *calls_table(calls, width), ""]
    lines.append(f"stream: 0.00 s to {log.unit(log.end or log.now)}")
    lines.extend(_head_starts(log))
    lines.append("")
    lines.append(f"turn: {'?' if end is None else end_text(end)}; all done at {log.unit(log.now)}")
    return lines


def _live_summary(out: Any, calls: list[ToolCall], log: CallLog) -> None:
    """The rich summary: the calls table, head starts, the turn."""
    from ._live import summary

    end = log.end_event
    tail = [f"stream: 0.00 s to {log.unit(log.end or log.now)}", *_head_starts(log), ""]
    tail.append(f"turn: {'?' if end is None else end_text(end)}; all done at {log.unit(log.now)}")
    summary(out, calls, log, tail)
