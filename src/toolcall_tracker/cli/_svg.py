"""``--svg FILE``: a timeline picture of the calls, hand-written SVG (no dependency).

Each call is a group (``<g class="call">``) holding a bar through its states: a segment
(``<rect class="state pending">``, ``running``) per state it was in, in order along the
x-axis, and a mark where it finished (``done`` or ``error``). Where a tool ran (the demo)
a ``<rect class="tool">`` shows it, and a ``<line class="headstart">`` how long before
the end of the stream it started. A band (``<rect class="stream">``) shows the stream's
span. The x-axis is time in seconds when the replay has timestamps (the demo, a timed
recording), the stream item's number otherwise; it spans the turn (from the first item to
the last thing that happened, the end of the stream or of the last tool), whatever its
length. An ignored event is a mark (``<g class="ignored">``, its reason and event in its
``<title>``) on the row of the call it names, or on a last row ``ignored`` when it names
none that has a row. The title is wrapped, never cut. Text from the stream is escaped.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from ..calls import Status
from ._calllog import FINISHED, CallLog, CallRecord, IgnoredMark
from ._text import clean, describe, end_text, truncate

_LEFT: Final = 230  # the labels' column
_PLOT: Final = 640  # the plot's width
_RIGHT: Final = 30
_TOP: Final = 58
_ROW: Final = 26
_BAR: Final = 12
_MARK: Final = 4  # the width of a finished mark
_TITLE_CHARS: Final = 100  # characters of the title a line holds
_TITLE_LINE: Final = 18
_SMALL_CHAR: Final = 6.2  # the width of a character of the small text, about
_MARGIN: Final = 0.03  # of the turn's span, after its last moment
_COLOURS: Final = {
    Status.PENDING: "#e9b949",
    Status.RUNNING: "#4a90d9",
    Status.DONE: "#3aa655",
    Status.ERROR: "#d64541",
}
_X = Callable[[float], float]  # a position to pixels

_STYLE: Final = """
text { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; fill: #222; }
.title { font-size: 14px; font-weight: bold; }
.axis line, .tick { stroke: #999; stroke-width: 1; }
.stream { fill: #4a90d9; fill-opacity: 0.07; stroke: #4a90d9; stroke-opacity: 0.3; }
.streamend { stroke: #555; stroke-dasharray: 4 3; }
.tool { fill: #333; fill-opacity: 0.75; }
.headstart { stroke: #3aa655; stroke-width: 2; stroke-dasharray: 2 2; }
.small { font-size: 10px; fill: #555; }
.ignored path { fill: #8e44ad; stroke: white; stroke-width: 1; }
"""


def svg(log: CallLog, title: str) -> str:
    """The SVG document of ``log``'s calls (see the module documentation)."""
    records = list(log.calls.values())
    rows = {record.id: index for index, record in enumerate(records)}
    loose = [mark for mark in log.ignored if mark.call_id not in rows]
    lines = textwrap.wrap(clean(title), _TITLE_CHARS, break_on_hyphens=False) or [""]
    top = _TOP + _TITLE_LINE * (len(lines) - 1)
    start = 0.0 if log.timed else float(log.first or 1) - 1.0
    last = max(
        [log.now, log.end or 0.0]
        + [record.tool[1] or log.now for record in records if record.tool is not None]
    )
    span = max(last - start, 1e-3 if log.timed else 1.0)  # the turn, however short
    stop = start + span * (1 + _MARGIN)
    scale = _PLOT / (stop - start)

    def x(at: float) -> float:
        return round(_LEFT + (at - start) * scale, 2)

    count = max(len(records), 1) + (1 if loose else 0)
    bottom = top + _ROW * count
    height = bottom + 70
    width = _LEFT + _PLOT + _RIGHT
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" data-axis="{"seconds" if log.timed else "items"}">',
        f"<title>{_text(title)}</title>",
        f"<style>{_STYLE}</style>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for number, line in enumerate(lines):
        out.append(
            f'<text class="title" x="10" y="{20 + _TITLE_LINE * number}">{escape(line)}</text>'
        )
    out.extend(_stream(log, x, top, bottom))
    out.extend(_axis(log, start, stop, x, bottom))
    for index, record in enumerate(records):
        marks = [mark for mark in log.ignored if mark.call_id == record.id]
        out.extend(_call(record, log, x, top + _ROW * index, marks))
    if not records:
        out.append(f'<text x="{_LEFT}" y="{top + 16}">no calls</text>')
    if loose:
        out.extend(_loose(loose, log, x, top + _ROW * (count - 1)))
    if log.ignored_count > len(log.ignored):
        more = log.ignored_count - len(log.ignored)
        out.append(
            f'<text class="small" x="{_LEFT}" y="{bottom + 34}">(and {more} more ignored '
            "events, not drawn)</text>"
        )
    out.extend(_legend(bottom + 50, tools=any(record.tool for record in records)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _ignored(mark: IgnoredMark, log: CallLog, x: _X, y: int) -> str:
    """One ignored event: a small diamond at its position, what and why in its title."""
    left = x(mark.at)
    what = describe(mark.event, {})
    return (
        f'<g class="ignored" data-at="{mark.at}" data-reason="{mark.reason.value}">'
        f'<path d="M{left} {y - 5} l5 5 l-5 5 l-5 -5 z"/>'
        f"<title>ignored ({mark.reason.value}) at {_text(log.unit(mark.at))}: "
        f"{_text(what)}</title></g>"
    )


def _loose(marks: list[IgnoredMark], log: CallLog, x: _X, top: int) -> list[str]:
    """The last row: ignored events that name no call with a row (an unknown id, an end)."""
    y = top + _ROW // 2
    out = ['<g class="ignored-row">', f'<text x="10" y="{y + 4}">ignored</text>']
    out.extend(_ignored(mark, log, x, y) for mark in marks)
    out.append("</g>")
    return out


def _text(value: str) -> str:
    """Text from anywhere, escaped for the terminal's sake and for XML."""
    return escape(clean(value))


def _stream(log: CallLog, x: _X, top: int, bottom: int) -> list[str]:
    """The stream's span: a band from its first item to the end of the turn."""
    if log.first is None:
        return []
    end = log.now if log.end is None else log.end
    left, right = x(log.first), x(end)
    out = [
        f'<rect class="stream" x="{left}" y="{top - 8}" width="{round(right - left, 2)}" '
        f'height="{bottom - top + 8}" data-from="{log.first}" data-to="{end}">'
        "<title>the stream</title></rect>",
        f'<text class="small" x="{left + 3}" y="{top - 12}">stream</text>',
    ]
    if log.end is not None:
        ended = "end" + ("" if log.end_event is None else f": {end_text(log.end_event)}")
        label = _text(truncate(ended, 64))
        out.append(
            f'<line class="streamend" x1="{right}" y1="{top - 8}" x2="{right}" y2="{bottom}"/>'
        )
        # Right-aligned at the end of the stream, unless it would run into "stream" (or
        # out of the picture): then on the line above.
        room = right - left - 10 - len("stream") * _SMALL_CHAR
        y = top - 12 if len(ended) * _SMALL_CHAR <= room else top - 24
        out.append(f'<text class="small" x="{right - 3}" y="{y}" text-anchor="end">{label}</text>')
    return out


def _call(
    record: CallRecord, log: CallLog, x: _X, top: int, ignored: list[IgnoredMark]
) -> list[str]:
    """One call's group: its label, its state segments, its tool run and head start, and
    the ignored events that named it."""
    y = top + (_ROW - _BAR) // 2
    label = f"{truncate(clean(record.id), 18)}  {truncate(clean(record.name), 12)}"
    out = [
        f'<g class="call" data-id={quoteattr(clean(record.id))} '
        f'data-name={quoteattr(clean(record.name))} data-status="{record.status.value}">',
        f'<text x="10" y="{y + _BAR - 2}">{escape(label)}</text>',
    ]
    for status, begin, end in record.spans(log.now):
        left = x(begin)
        if status in FINISHED:
            tip = f"{status.value} at {log.unit(begin)}"
            out.append(
                f'<rect class="state {status.value}" x="{left}" y="{y - 2}" width="{_MARK}" '
                f'height="{_BAR + 4}" fill="{_COLOURS[status]}" data-from="{begin}" '
                f'data-to="{begin}"><title>{tip}</title></rect>'
            )
            continue
        tip = f"{status.value} for {log.unit(end - begin)}"
        out.append(
            f'<rect class="state {status.value}" x="{left}" y="{y}" '
            f'width="{round(x(end) - left, 2)}" height="{_BAR}" fill="{_COLOURS[status]}" '
            f'data-from="{begin}" data-to="{end}"><title>{tip}</title></rect>'
        )
    if record.tool is not None:
        began, ended = record.tool
        ended = log.now if ended is None else ended
        out.append(
            f'<rect class="tool" x="{x(began)}" y="{y + 3}" '
            f'width="{round(x(ended) - x(began), 2)}" '
            f'height="{_BAR - 6}" data-from="{began}" data-to="{ended}">'
            f"<title>the tool ran for {log.unit(ended - began)}</title></rect>"
        )
        if log.end is not None and began < log.end:
            ahead = log.unit(log.end - began)
            out.append(
                f'<line class="headstart" x1="{x(began)}" y1="{y + _BAR + 3}" '
                f'x2="{x(log.end)}" y2="{y + _BAR + 3}" data-from="{began}" '
                f'data-to="{log.end}"><title>head start: the tool started {ahead} before '
                "the stream ended</title></line>"
            )
    out.extend(_ignored(mark, log, x, y + _BAR // 2) for mark in ignored)
    out.append("</g>")
    return out


def _axis(log: CallLog, start: float, stop: float, x: _X, bottom: int) -> list[str]:
    """The x-axis: ticks at round steps, in seconds or items."""
    step = _step((stop - start) / 8)
    out = [
        '<g class="axis">',
        f'<line x1="{_LEFT}" y1="{bottom + 4}" x2="{_LEFT + _PLOT}" y2="{bottom + 4}"/>',
    ]
    tick = math.ceil(start / step) * step
    while tick <= stop + 1e-9:
        at = x(tick)
        label = f"{tick:g} s" if log.timed else f"{tick:g}"
        out.append(f'<line class="tick" x1="{at}" y1="{bottom + 4}" x2="{at}" y2="{bottom + 9}"/>')
        out.append(
            f'<text class="small" x="{at}" y="{bottom + 21}" text-anchor="middle">{label}</text>'
        )
        tick += step
    name = "time (seconds)" if log.timed else "stream item"
    out.append(f'<text class="small" x="10" y="{bottom + 21}">{name}</text>')
    out.append("</g>")
    return out


def _step(raw: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) near ``raw``."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)


def _legend(y: int, *, tools: bool) -> list[str]:
    """What the colours mean."""
    out = ['<g class="legend">']
    left = 10
    for status, colour in _COLOURS.items():
        out.append(f'<rect x="{left}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{left + 16}" y="{y}">{status.value}</text>')
        left += 100
    out.append(f'<g class="ignored"><path d="M{left + 6} {y - 10} l5 5 l-5 5 l-5 -5 z"/></g>')
    out.append(f'<text x="{left + 16}" y="{y}">ignored event</text>')
    left += 130
    if not tools:
        out.append("</g>")
        return out
    out.append(f'<rect class="tool" x="{left}" y="{y - 7}" width="16" height="6"/>')
    out.append(f'<text x="{left + 20}" y="{y}">tool ran</text>')
    left += 100
    out.append(f'<line class="headstart" x1="{left}" y1="{y - 4}" x2="{left + 16}" y2="{y - 4}"/>')
    out.append(f'<text x="{left + 20}" y="{y}">head start before the end</text>')
    out.append("</g>")
    return out
