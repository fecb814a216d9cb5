"""The human-readable output: the ``replay`` report (and its timeline), ``validate`` lines.

The reports are :class:`~._replay.Observer` objects: they render each timeline row and
ignored event as the replay produces it, into a :class:`~._spool.Spool` (the report's
header and calls come first but are known only at the end), and write everything out at
the end with :meth:`TextReport.write` / :meth:`ValidateReport.write`.

Every line fits the output's width (``COLUMNS``, or the terminal's): long text is wrapped
at words, errors are shown whole (up to :data:`~._text.MAX_ERROR_CHARS`), and only
previews of values (arguments, results, timeline fragments) are cut, with ``...``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, Any, Final

from ..calls import Status, ToolCall
from ..reducer import IgnoreReason
from ._replay import Replay
from ._spool import Spool
from ._text import (
    bounded,
    clean,
    count,
    describe,
    end_text,
    error_lines,
    error_summary,
    summary_text,
    terminal_width,
    truncate,
    where,
    wrap,
    write,
)
from ._timeline import Step

_ID_WIDTH: Final = 32
_NAME_WIDTH: Final = 24
_EVENT_WIDTH: Final = 46
_CELL_WIDTH: Final = 10
_MIN_EVENT_WIDTH: Final = 16
_MIN_SUMMARY_WIDTH: Final = 40


class TextReport:
    """The ``replay`` report: header, timeline (``--events``), calls, turn, ignored, result."""

    def __init__(self, width: int | None = None) -> None:
        self.width = terminal_width() if width is None else width
        self._ignored = Spool()
        self._rows = Spool()  # item, event text, ignored, cells: tab-separated (escaped)
        self._item_width = 4
        self._text_width = 5
        self._before: tuple[Status | None, ...] = ()
        self._columns: tuple[str, ...] = ()
        self._index: dict[str, int] = {}

    def ignored(self, item: int | None, event: Any, reason: IgnoreReason) -> None:
        """Note an ignored event, for the ``ignored`` section."""
        self._ignored.add(f"{where(item):<10} {reason.value:<17} {describe(event, {})}")

    def step(self, step: Step) -> None:
        """Render one timeline row."""
        if step.columns is not self._columns:
            self._columns = step.columns
            self._index = {call_id: index for index, call_id in enumerate(step.columns)}
        text = truncate(describe(step.event, self._index), _EVENT_WIDTH)
        ignored = "" if step.ignored is None else f"  (ignored: {step.ignored.value})"
        target = getattr(step.event, "id", None)
        cells = []
        for index, status in enumerate(step.cells):
            prior = self._before[index] if index < len(self._before) else None
            cells.append(_cell(status, prior, step.columns[index] == target))
        self._before = step.cells
        item = "eof" if step.item is None else str(step.item)
        self._item_width = max(self._item_width, len(item))
        self._text_width = max(self._text_width, len(text) + len(ignored))
        self._rows.add("\t".join([item, text, ignored, *cells]))

    def write(self, replay: Replay, stream: IO[str], *, events: bool) -> None:
        """Write the whole report (``events``: with the timeline)."""
        for line in self.lines(replay, events=events):
            write(stream, line + "\n")

    def close(self) -> None:
        """Release the spooled rows."""
        self._ignored.close()
        self._rows.close()

    def lines(self, replay: Replay, *, events: bool) -> Iterator[str]:
        """The report's lines."""
        yield from self.head(replay, events=events)
        yield from calls_table(replay.calls, self.width)
        yield ""
        yield from self.tail(replay)

    def head(self, replay: Replay, *, events: bool) -> Iterator[str]:
        """What comes before the calls: the file's line and (``events``) the timeline."""
        how = "detected" if replay.detected else "given"
        yield from wrap(
            f"{clean(replay.path)}: {replay.format} ({how}), {count(replay.items, 'item')} "
            f"({replay.container}), {count(replay.events, 'tracker event')}",
            self.width,
            "",
            "  ",
        )
        yield ""
        if events:
            yield from self._timeline(replay)
            yield ""

    def tail(self, replay: Replay) -> Iterator[str]:
        """What comes after the calls: the turn, the ignored events, the verdict."""
        width = self.width
        yield from wrap(f"turn: {end_text(replay.end)}", width, "", "  ")
        yield ""
        if self._ignored.count:
            yield f"ignored ({self._ignored.count}):"
            for line in self._ignored:
                yield from wrap(line, width, "  ", "    ")
        else:
            yield "ignored: none"
        yield ""
        yield from wrap(verdict(replay), width, "", "  ")

    def _timeline(self, replay: Replay) -> Iterator[str]:
        """The ``--events`` section: a legend of the calls, then one line per tracker event."""
        width = self.width
        yield from wrap(
            "timeline: one line per tracker event, numbered by the stream item it came from "
            "(eof: the end of the stream); a column per call, [status]: the call the event "
            "is about",
            width,
        )
        calls = {call.id: call for call in replay.calls}
        ids = [truncate(clean(call_id), _ID_WIDTH) for call_id in replay.columns]
        id_width = max((len(text) for text in ids), default=0)
        for index, call_id in enumerate(replay.columns):
            name = calls[call_id].name if call_id in calls else "?"
            label = f"#{index + 1}"
            line = f"  {label:<4} {ids[index]:<{id_width}}  {truncate(clean(name), _NAME_WIDTH)}"
            yield truncate(line, width)
        hidden = len(calls) - len(replay.columns)
        if hidden > 0:
            yield from wrap(
                f"(+{hidden} more calls without a column; they are named by id)",
                width,
                "  ",
                "    ",
            )
        if not self._rows.count:
            yield "  (no tracker events)"
            return
        item_width = self._item_width
        fixed = 2 + item_width + 2 + 2
        shown = len(replay.columns)
        while shown and fixed + _MIN_EVENT_WIDTH + _CELL_WIDTH * shown > width:
            shown -= 1
        if shown < len(replay.columns):
            calls_left = (
                f"the column of call #{shown + 1} does"
                if shown + 1 == len(replay.columns)
                else f"the columns of calls #{shown + 1} to #{len(replay.columns)} do"
            )
            yield from wrap(
                f"({calls_left} not fit in {width} columns)",
                width,
                "  ",
                "    ",
            )
        text_width = min(self._text_width, width - fixed - _CELL_WIDTH * shown)
        header = ["#" + str(index + 1) for index in range(shown)]
        yield ""
        yield _join_row(f"{'item':>{item_width}}", f"{'event':<{text_width}}", header)
        for row in self._rows:
            item, text, ignored, *cells = row.split("\t")
            text = truncate(text, max(text_width - len(ignored), 8)) + ignored
            text = truncate(text, text_width)
            yield _join_row(f"{item:>{item_width}}", f"{text:<{text_width}}", cells[:shown])


def verdict(replay: Replay) -> str:
    """``result: ok`` or ``result: FAILED (2 calls failed, the turn did not end ok)``."""
    failed = len(replay.failed)
    reasons = []
    if failed:
        reasons.append(f"{count(failed, 'call')} failed")
    if not replay.end.ok:
        reasons.append("the turn did not end ok")
    text = "result: " + ("ok" if replay.ok else "FAILED")
    return text + (f" ({', '.join(reasons)})" if reasons else "")


def _cell(status: Status | None, before: Status | None, target: bool) -> str:
    """One timeline cell: blank before the call, ``.`` once it has finished.

    The call the event is about is in brackets; a status shows in full while the call is
    open and on the row where it finished.
    """
    if status is None:
        return ""
    finished = status in (Status.DONE, Status.ERROR)
    if target:
        return f"[{status.value}]"
    if finished and before == status:
        return " ."
    return f" {status.value}"


def _join_row(item: str, text: str, cells: Sequence[str]) -> str:
    """One timeline line: item, event, then the call cells (each 10 wide)."""
    line = f"  {item}  {text}  " + "".join(f"{cell:<{_CELL_WIDTH}}" for cell in cells)
    return line.rstrip()


def name_widths(width: int) -> tuple[int, int]:
    """The most characters of an id and of a tool name shown at ``width`` columns.

    Longer ones are shortened with ``...``, never broken across lines: at 60 columns an
    id, a name and a status fit on one line.
    """
    if width >= 100:
        return _ID_WIDTH, _NAME_WIDTH
    if width >= 80:
        return 20, 20
    return 14, 12


def calls_table(calls: Sequence[ToolCall], width: int) -> list[str]:
    """The calls table, fitted to ``width``: the last column wraps (or goes below)."""
    if not calls:
        return ["calls: none"]
    id_width, name_width = name_widths(width)
    rows = [
        (
            truncate(clean(call.id), id_width),
            truncate(clean(call.name), name_width),
            call.status.value,
        )
        for call in calls
    ]
    header = ("id", "name", "status")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(3)]
    fixed = 2 + sum(widths) + 2 * 3
    inline = width - fixed >= _MIN_SUMMARY_WIDTH
    lines = [f"calls ({len(calls)}):"]

    def left(row: tuple[str, str, str]) -> str:
        return "  " + "  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True))

    if inline:
        lines.append(left(header) + "  args / error")
    else:
        lines.append(truncate(left(header).rstrip(), width))
    for call, row in zip(calls, rows, strict=True):
        if inline:
            pad = " " * fixed
            text = summary_text(call, width - fixed)
            lines.extend(wrap(text, width, left(row) + "  ", pad))
            lines.extend(error_lines(call, width, pad))
        else:
            lines.extend(wrap(left(row).rstrip(), width, "", "    "))
            text = summary_text(call, width - 6)
            lines.extend(wrap(text, width, "      ", "      "))
            lines.extend(error_lines(call, width, "      "))
    return lines


class ValidateReport:
    """One ``validate`` verdict: ``FILE: ok   ...``, or ``FILE: FAIL ...`` and the problems.

    Every line starts with its file name and is never wrapped, so ``validate ... | grep
    FAIL`` or ``| grep problem`` keeps the file each line is about.
    """

    def __init__(self, width: int | None = None) -> None:
        self.width = terminal_width() if width is None else width
        self._ignored = Spool()

    def ignored(self, item: int | None, event: Any, reason: IgnoreReason) -> None:
        """Note an ignored event: a problem."""
        self._ignored.add(f"{where(item)}: ignored ({reason.value}): {describe(event, {})}")

    def step(self, step: Step) -> None:
        """Nothing: ``validate`` has no timeline."""

    def write(self, replay: Replay, stream: IO[str]) -> bool:
        """Write the verdict and the problems; returns whether there were any."""
        problems = [
            f"call {clean(call.id)} ({clean(call.name)}) failed: "
            f"{bounded(clean(error_summary(call.error)))}"
            for call in replay.failed
        ]
        if not replay.end.ok:
            problems.append(f"the turn did not end ok: {end_text(replay.end)}")
        total = len(problems) + self._ignored.count
        path = clean(replay.path)
        lines: list[str] = []
        if not total:
            summary = f"{replay.format}, {count(len(replay.calls), 'call')}, turn ended ok"
            lines.append(f"{path}: ok   {summary}")
        else:
            lines.append(f"{path}: FAIL {replay.format}, {count(total, 'problem')}")
            lines.extend(f"{path}:   {problem}" for problem in problems)
            lines.extend(f"{path}:   {problem}" for problem in self._ignored)
        for line in lines:
            write(stream, line + "\n")
        return bool(total)

    def close(self) -> None:
        """Release the spooled problems."""
        self._ignored.close()
