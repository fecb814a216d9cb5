"""The human-readable output: the ``replay`` report (and its timeline), ``validate`` lines.

The reports are :class:`~._replay.Observer` objects: they render each timeline row and
ignored event as the replay produces it, into a :class:`~._spool.Spool` (the report's
header and calls come first but are known only at the end), and write everything out at
the end with :meth:`TextReport.write` / :meth:`ValidateReport.write`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, Any, Final

from ..calls import Status
from ..reducer import IgnoreReason
from ._replay import Replay
from ._spool import Spool
from ._text import call_summary, clean, count, describe, end_text, truncate, where, write
from ._timeline import Step

_ID_WIDTH: Final = 32
_NAME_WIDTH: Final = 24
_SUMMARY_WIDTH: Final = 72
_EVENT_WIDTH: Final = 46


class TextReport:
    """The ``replay`` report: header, timeline (``--events``), calls, turn, ignored, result."""

    def __init__(self) -> None:
        self._ignored = Spool()
        self._rows = Spool()  # item, event text, cells: tab-separated (the text is escaped)
        self._item_width = 4
        self._text_width = 5
        self._before: tuple[Status | None, ...] = ()
        self._columns: tuple[str, ...] = ()
        self._index: dict[str, int] = {}

    def ignored(self, item: int | None, event: Any, reason: IgnoreReason) -> None:
        """Note an ignored event, for the ``ignored`` section."""
        self._ignored.add(f"  {where(item):<10} {reason.value:<17} {describe(event, {})}")

    def step(self, step: Step) -> None:
        """Render one timeline row."""
        if step.columns is not self._columns:
            self._columns = step.columns
            self._index = {call_id: index for index, call_id in enumerate(step.columns)}
        text = truncate(describe(step.event, self._index), _EVENT_WIDTH)
        if step.ignored is not None:
            text += f"  (ignored: {step.ignored.value})"
        target = getattr(step.event, "id", None)
        cells = []
        for index, status in enumerate(step.cells):
            prior = self._before[index] if index < len(self._before) else None
            cells.append(_cell(status, prior, step.columns[index] == target))
        self._before = step.cells
        item = "eof" if step.item is None else str(step.item)
        self._item_width = max(self._item_width, len(item))
        self._text_width = max(self._text_width, len(text))
        self._rows.add("\t".join([item, text, *cells]))

    def write(self, replay: Replay, stream: IO[str], *, events: bool) -> None:
        """Write the whole report (``events``: with the timeline)."""
        for line in self._lines(replay, events=events):
            write(stream, line + "\n")

    def close(self) -> None:
        """Release the spooled rows."""
        self._ignored.close()
        self._rows.close()

    def _lines(self, replay: Replay, *, events: bool) -> Iterator[str]:
        """The report's lines."""
        how = "detected" if replay.detected else "given"
        yield (
            f"{clean(replay.path)}: {replay.format} ({how}), {count(replay.items, 'item')} "
            f"({replay.container}), {count(replay.events, 'tracker event')}"
        )
        yield ""
        if events:
            yield from self._timeline(replay)
            yield ""
        yield from _calls(replay)
        yield ""
        yield f"turn: {end_text(replay.end)}"
        yield ""
        if self._ignored.count:
            yield f"ignored ({self._ignored.count}):"
            yield from self._ignored
        else:
            yield "ignored: none"
        failed = len(replay.failed)
        verdict = "ok" if replay.ok else "FAILED"
        reasons = []
        if failed:
            reasons.append(f"{count(failed, 'call')} failed")
        if not replay.end.ok:
            reasons.append("the turn did not end ok")
        yield ""
        yield f"result: {verdict}" + (f" ({', '.join(reasons)})" if reasons else "")

    def _timeline(self, replay: Replay) -> Iterator[str]:
        """The ``--events`` section: a legend of the calls, then one line per tracker event."""
        yield "timeline: one line per tracker event, numbered by the stream item it came from"
        yield (
            "(eof: the end of the stream); a column per call, [status]: the call the event is about"
        )
        calls = {call.id: call for call in replay.calls}
        ids = [truncate(clean(call_id), _ID_WIDTH) for call_id in replay.columns]
        id_width = max((len(text) for text in ids), default=0)
        for index, call_id in enumerate(replay.columns):
            name = calls[call_id].name if call_id in calls else "?"
            label = f"#{index + 1}"
            yield f"  {label:<4} {ids[index]:<{id_width}}  {truncate(clean(name), _NAME_WIDTH)}"
        hidden = len(calls) - len(replay.columns)
        if hidden > 0:
            yield f"  (+{hidden} more calls without a column; they are named by id)"
        if not self._rows.count:
            yield "  (no tracker events)"
            return
        item_width, text_width = self._item_width, self._text_width
        header = ["#" + str(index + 1) for index in range(len(replay.columns))]
        yield ""
        yield _join_row(f"{'item':>{item_width}}", f"{'event':<{text_width}}", header)
        for row in self._rows:
            item, text, *cells = row.split("\t")
            yield _join_row(f"{item:>{item_width}}", f"{text:<{text_width}}", cells)


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
    line = f"  {item}  {text}  " + "".join(f"{cell:<10}" for cell in cells)
    return line.rstrip()


def _calls(replay: Replay) -> list[str]:
    """The calls table."""
    calls = replay.calls
    if not calls:
        return ["calls: none"]
    rows = [
        (
            truncate(clean(call.id), _ID_WIDTH),
            truncate(clean(call.name), _NAME_WIDTH),
            call.status.value,
            truncate(call_summary(call), _SUMMARY_WIDTH),
        )
        for call in calls
    ]
    header = ("id", "name", "status", "args / error")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(3)]
    lines = [f"calls ({len(calls)}):"]
    for row in [header, *rows]:
        lines.append(
            "  "
            + "  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[3]
        )
    return lines


class ValidateReport:
    """One ``validate`` verdict: ``ok   FILE: ...``, or ``FAIL FILE: ...`` and the problems."""

    def __init__(self) -> None:
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
            f"{truncate(call_summary(call), _SUMMARY_WIDTH)}"
            for call in replay.failed
        ]
        if not replay.end.ok:
            problems.append(f"the turn did not end ok: {end_text(replay.end)}")
        total = len(problems) + self._ignored.count
        path = clean(replay.path)
        if not total:
            summary = f"{replay.format}, {count(len(replay.calls), 'call')}, turn ended ok"
            write(stream, f"ok   {path}: {summary}\n")
            return False
        write(stream, f"FAIL {path}: {replay.format}, {count(total, 'problem')}\n")
        for problem in problems:
            write(stream, f"  {problem}\n")
        for problem in self._ignored:
            write(stream, f"  {problem}\n")
        return True

    def close(self) -> None:
        """Release the spooled problems."""
        self._ignored.close()
