"""Following a replay as it goes: the call log, the pace, and the live view's redraws.

:class:`ReplayWatch` is the replay's :class:`~._replay.Watch`. It keeps a
:class:`~._calllog.CallLog` (for the live view, the summary and the SVG), moves its
position along the stream (the item's number, or its recorded time), and, when a live view
is shown, replays a timed recording at its recorded speed (``speed`` times faster).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

from ..machine import ToolCallStateMachine
from ._calllog import CallLog
from ._input import Item, TextReader

MAX_WAIT: Final = 0.1
"""Longest sleep between two redraws while a timed replay waits for its next item."""


class View(Protocol):
    """What shows the calls while they change (the rich live view)."""

    def draw(self, log: CallLog, done: int, total: int | None) -> None:
        """Redraw, if it is time to (``done`` of ``total`` input bytes read)."""


class ReplayWatch:
    """A replay's :class:`~._replay.Watch`: a call log, paced and drawn when live.

    Args:
        view: the live view, or ``None`` (then nothing is paced).
        speed: how many times faster than recorded a timed replay runs (``0``: as fast as
            it can).
        clock: the monotonic clock; ``sleep``: how to wait (for tests).
    """

    def __init__(
        self,
        view: View | None = None,
        *,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._view = view
        self._speed = speed
        self._clock = clock
        self._sleep = sleep
        self._reader: TextReader | None = None
        self._zero: float | None = None  # the first item's recorded time
        self._wall: float = 0.0  # the clock when the first item was applied
        self._log: CallLog | None = None

    @property
    def log(self) -> CallLog:
        """The call log (after the replay started)."""
        assert self._log is not None, "the replay has not started"
        return self._log

    def attach(self, machine: ToolCallStateMachine, reader: TextReader) -> None:
        """The replay starts: listen to ``machine``'s change feed."""
        self._log = CallLog(machine, timed=False)
        self._reader = reader

    def item(self, item: Item) -> None:
        """Move the log to ``item`` (waiting for its time, when paced); redraw."""
        log = self.log
        if log.first is None:
            log.timed = item.time is not None
            self._zero = item.time
            self._wall = self._clock()
            log.begin(0.0 if log.timed else float(item.number))
        if log.timed:
            at = log.now if item.time is None or self._zero is None else item.time - self._zero
            at = max(at, log.now)
            self._wait_until(at)
        else:
            at = float(item.number)
        log.now = at
        self._draw()

    def ending(self) -> None:
        """The stream is exhausted: its end is one item past the last (untimed)."""
        log = self.log
        if not log.timed:
            log.now += 1.0
        self._draw()

    def _wait_until(self, at: float) -> None:
        """Paced: sleep until ``at`` seconds after the first item, redrawing meanwhile."""
        if self._view is None or self._speed <= 0:
            return
        due = self._wall + at / self._speed
        log = self.log
        while (left := due - self._clock()) > 0:
            log.now = max(log.now, at - left * self._speed)  # open states grow meanwhile
            self._draw()
            self._sleep(min(left, MAX_WAIT))

    def _draw(self) -> None:
        """Tell the view (it redraws only when it is time to)."""
        if self._view is not None and self._reader is not None:
            self._view.draw(self.log, self._reader.bytes_read, self._reader.size)
