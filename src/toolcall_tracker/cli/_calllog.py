"""What happened to each call, and when: the live view's, the summary's and the SVG's source.

:class:`CallLog` is a listener of the machine's change feed: it learns each transition
from the machine itself (never by re-deriving the transition table) and stamps it with
the log's current position :attr:`CallLog.now`, which its owner moves along: the stream
item's number for a replay without timestamps, seconds for a timed replay or the demo.
It keeps a constant amount per call (no more calls than the machine's ``max_calls``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from .._reducer import IgnoreReason
from ..calls import Status
from ..changes import ChangeListener
from ..events import End
from ..machine import ToolCallStateMachine

FINISHED: Final = (Status.DONE, Status.ERROR)
MAX_IGNORED: Final = 1000
"""Ignored events the log keeps (for the SVG's marks); it counts the rest."""


@dataclass(frozen=True)
class IgnoredMark:
    """An ignored event: where it came, the call it names (if any), why, and what it was."""

    at: float
    call_id: str | None
    reason: IgnoreReason
    event: object


@dataclass
class CallRecord:
    """One call: its id and tool, when it entered each status, its argument bytes.

    ``marks`` holds ``(status, at)`` in the order the statuses were entered;
    ``tool`` is when its tool ran (``(started, finished or None)``), if a tool ran.
    """

    id: str
    name: str
    marks: list[tuple[Status, float]] = field(default_factory=list)
    arg_bytes: int = 0
    tool: tuple[float, float | None] | None = None

    @property
    def status(self) -> Status:
        """The call's latest status."""
        return self.marks[-1][0]

    def entered(self, status: Status) -> float | None:
        """When the call entered ``status`` (``None``: it never did)."""
        for mark, at in self.marks:
            if mark == status:
                return at
        return None

    def spans(self, now: float) -> list[tuple[Status, float, float]]:
        """``(status, from, to)`` per status entered; an open one runs to ``now``.

        A finished status (``done``, ``error``) is a point: its ``from`` equals its ``to``.
        """
        out: list[tuple[Status, float, float]] = []
        for index, (status, at) in enumerate(self.marks):
            if status in FINISHED:
                out.append((status, at, at))
                break
            following = self.marks[index + 1][1] if index + 1 < len(self.marks) else now
            out.append((status, at, max(at, following)))
        return out


class CallLog(ChangeListener):
    """Every call's :class:`CallRecord`, in the order the calls started.

    Args:
        machine: the machine to listen to (subscribed with fragments, for the byte
            counts).
        timed: whether :attr:`now` is in seconds (``False``: in stream items).
        clock: if given, :attr:`now` follows it (seconds): every change is stamped with
            its reading (the demo, which runs live).
    """

    def __init__(
        self,
        machine: ToolCallStateMachine,
        *,
        timed: bool,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._machine = machine
        self._clock = clock
        self.timed = timed
        self.calls: dict[str, CallRecord] = {}
        self.now = 0.0
        """The current position: seconds, or the number of the item being applied."""
        self.first: float | None = None
        """Where the stream began (its first item), once it has."""
        self.end: float | None = None
        """Where the turn ended, once it has."""
        self.end_event: End | None = None
        self.ignored: list[IgnoredMark] = []
        """The first :data:`MAX_IGNORED` ignored events."""
        self.ignored_count = 0
        """How many events were ignored in all."""
        self.version = 0
        """Bumped on every change, so a view redraws only when something changed."""
        machine.subscribe(self, fragments=True)

    def tick(self) -> None:
        """Move :attr:`now` to the clock's reading (with a clock)."""
        if self._clock is not None:
            self.now = max(self.now, self._clock())

    def begin(self, at: float) -> None:
        """The stream's first item arrives at ``at``."""
        if self.first is None:
            self.first = at

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        """A call was created or changed status (the machine's change feed)."""
        self.tick()
        record = self.calls.get(call_id)
        if record is None:
            call = self._machine.get(call_id)
            record = CallRecord(call_id, "" if call is None else call.name)
            self.calls[call_id] = record
        record.marks.append((after, self.now))
        self.version += 1

    def args_appended(self, call_id: str, text: str) -> None:
        """Count a fragment's UTF-8 bytes."""
        record = self.calls.get(call_id)
        if record is not None:
            record.arg_bytes += len(text.encode("utf-8", "surrogatepass"))
            self.version += 1

    def event_ignored(self, event: object, reason: IgnoreReason) -> None:
        """Keep the first :data:`MAX_IGNORED` ignored events, and count them all."""
        self.tick()
        self.ignored_count += 1
        if len(self.ignored) < MAX_IGNORED:
            call_id = event.get("id") if isinstance(event, dict) else getattr(event, "id", None)
            named = call_id if isinstance(call_id, str) else None
            self.ignored.append(IgnoredMark(self.now, named, reason, event))
        self.version += 1

    def turn_ended(self, end: End) -> None:
        """Note where the turn ended."""
        self.tick()
        if self.end is None:
            self.end = self.now
            self.end_event = end
            self.version += 1

    def unit(self, amount: float) -> str:
        """``1.25 s`` (timed) or ``3 items``: an amount of the log's position."""
        if self.timed:
            return f"{amount:.2f} s"
        items = round(amount)
        return f"{items} item" if items == 1 else f"{items} items"
