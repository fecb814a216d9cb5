"""The rich terminal output: the live table while a stream plays, and the final summary.

This module imports :mod:`rich` (the ``[cli]`` extra) and is itself imported only when rich
is wanted and importable (see :func:`rich_available`); without rich the command line prints
plain text. Every piece of text from the stream is escaped (:func:`~._text.clean`) and
handed to rich as :class:`~rich.text.Text`, never as markup, so a stream cannot style or
drive the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import IO, Final

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ..calls import Status, ToolCall
from ._calllog import FINISHED, CallLog, CallRecord
from ._render import calls_table, name_widths
from ._text import clean, error_lines, summary_text, truncate

PROGRESS_BYTES = 256 * 1024
"""Inputs at least this long (regular files) get a progress bar."""
REFRESH: Final = 1 / 12
"""Seconds between two redraws of the live table, at least."""
MAX_ROWS: Final = 40
"""Calls shown in the live table (the latest ones; the summary lists them all)."""
WIDE: Final = 100
"""Columns from which the summary is a table with durations; narrower, it is the plain
report's calls table (each call's arguments, result or error on the lines below it)."""
ARGS_COLUMN: Final = 70
"""Columns from which the live table shows each call's argument bytes."""

_STYLES: Final = {
    Status.PENDING: "yellow",
    Status.RUNNING: "cyan",
    Status.DONE: "green",
    Status.ERROR: "bold red",
}


def console(stream: IO[str], width: int, *, force: bool) -> Console:
    """A rich console on ``stream``, ``width`` wide (``force``: as a terminal)."""
    return Console(
        file=stream,
        width=width,
        force_terminal=True if force else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
    )


class LiveView:
    """The live table of the calls, redrawn at most every :data:`REFRESH` seconds.

    Args:
        out: the console to draw on.
        title: the table's title.
        tools: whether to show a column for the tools' runs (the demo).
        clock: the monotonic clock.
    """

    def __init__(
        self,
        out: Console,
        title: str,
        *,
        tools: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out
        self._title = title
        self._tools = tools
        self._clock = clock
        self._live = Live(console=out, auto_refresh=False, transient=True)
        self._next = 0.0
        self._version = -1
        self.frames = 0
        """How many times the table was drawn."""

    def __enter__(self) -> LiveView:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def draw(self, log: CallLog, done: int = 0, total: int | None = None) -> None:
        """Redraw if :data:`REFRESH` has passed (and something changed, or time moved on)."""
        now = self._clock()
        if now < self._next:
            return
        self._next = now + REFRESH
        self._version = log.version
        self.frames += 1
        self._live.update(self.render(log, done, total), refresh=True)

    def render(self, log: CallLog, done: int = 0, total: int | None = None) -> RenderableType:
        """The table (and the progress bar, for a long file)."""
        width = self._out.width
        table = Table(expand=False, box=None)
        _name_columns(table, width)
        table.add_column("status", no_wrap=True)
        args = width >= ARGS_COLUMN
        if args:
            table.add_column("args", justify="right", no_wrap=True)
        table.add_column("pending", justify="right", no_wrap=True)
        table.add_column("running", justify="right", no_wrap=True)
        if self._tools:
            table.add_column("tool ran", justify="right", no_wrap=True)
        records = list(log.calls.values())
        for record in records[-MAX_ROWS:]:
            table.add_row(*_row(record, log, tools=self._tools, args=args))
        title = _one_line(self._title, "italic")  # a long path is shortened, not wrapped
        parts: list[RenderableType] = [title, table]
        if len(records) > MAX_ROWS:
            parts.append(Text(f"(and {len(records) - MAX_ROWS} earlier calls)", style="dim"))
        position = log.unit(log.now) if log.timed else f"item {round(log.now)}"
        parts.append(Text(f"at {position}", style="dim"))
        if total is not None and total >= PROGRESS_BYTES:
            parts.append(ProgressBar(total=total, completed=min(done, total), width=40))
            parts.append(Text(f"{done / 1048576:.1f} of {total / 1048576:.1f} MiB read"))
        return Group(*parts)


def _name_columns(table: Table, width: int) -> None:
    """The id and tool columns: shortened with an ellipsis to fit, never broken."""
    id_width, name_width = name_widths(width)
    table.add_column("id", no_wrap=True, overflow="ellipsis", max_width=id_width)
    table.add_column("tool", no_wrap=True, overflow="ellipsis", max_width=name_width)


def _one_line(text: str, style: str = "") -> Text:
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _row(record: CallRecord, log: CallLog, *, tools: bool, args: bool) -> list[RenderableType]:
    """One live row: id, tool, status, argument bytes, time pending and running."""
    spans = {status: (start, stop) for status, start, stop in record.spans(log.now)}
    status = record.status
    cells: list[RenderableType] = [
        _one_line(clean(record.id)),
        _one_line(clean(record.name)),
        Text(status.value, style=_STYLES[status]),
    ]
    if args:
        cells.append(Text(f"{record.arg_bytes:,} B"))
    for state in (Status.PENDING, Status.RUNNING):
        span = spans.get(state)
        cells.append(Text("" if span is None else log.unit(span[1] - span[0])))
    if tools:
        if record.tool is None:
            cells.append(Text("waiting" if status == Status.RUNNING else ""))
        else:
            start, stop = record.tool
            cells.append(Text(log.unit((log.now if stop is None else stop) - start)))
    return cells


def summary(
    out: Console, calls: Iterable[ToolCall], log: CallLog | None, lines: Iterable[str]
) -> None:
    """Print the final summary: a table of every call, parse errors at their position,
    then ``lines`` (the plain report's turn, ignored events and verdict)."""
    width = out.width
    calls = list(calls)
    if not calls:
        out.print(Text("calls: none"))
    elif width < WIDE:
        for line in calls_table(calls, width):
            out.print(Text(line))
    else:
        table = Table(title=f"calls ({len(calls)})", title_justify="left", box=None)
        _name_columns(table, width)
        table.add_column("status", no_wrap=True)
        if log is not None:
            table.add_column("args", justify="right")
            table.add_column("pending", justify="right")
            table.add_column("running", justify="right")
        table.add_column("args / result / error", ratio=1)
        for call in calls:
            row: list[RenderableType] = [
                _one_line(clean(call.id)),
                _one_line(clean(call.name)),
                Text(call.status.value, style=_STYLES[call.status]),
            ]
            record = None if log is None else log.calls.get(call.id)
            if log is not None:
                row.extend(_durations(record, log))
            text = summary_text(call, width)
            # An error is shown whole, wrapped at words; a preview stays on one line.
            row.append(Text(text) if call.status == Status.ERROR else _one_line(text))
            table.add_row(*row)
        out.print(table)
        for call in calls:
            shown = error_lines(call, width, "    ")
            if shown:
                head = f"  {truncate(clean(call.id), 40)} ({truncate(clean(call.name), 24)}):"
                out.print(Text(head, style="bold red"))
                for line in shown:
                    out.print(Text(line), overflow="fold")
    out.print()
    for line in lines:
        style = "bold red" if line.startswith("result: FAILED") else None
        style = "bold green" if line == "result: ok" else style
        out.print(Text(line, style=style or ""), overflow="fold")


def _durations(record: CallRecord | None, log: CallLog) -> list[RenderableType]:
    """Argument bytes, time pending and time running, for the summary."""
    if record is None:
        return [Text(""), Text(""), Text("")]
    spans = {status: (start, stop) for status, start, stop in record.spans(log.now)}
    cells: list[RenderableType] = [Text(f"{record.arg_bytes:,} B")]
    for state in (Status.PENDING, Status.RUNNING):
        span = spans.get(state)
        open_ended = state == record.status and record.status not in FINISHED
        text = "" if span is None else log.unit(span[1] - span[0])
        cells.append(Text(text + ("+" if open_ended and text else "")))
    return cells
