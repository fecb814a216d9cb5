"""The async tracker's listener: ready calls, waiters and timelines (private).

:class:`Waiting` subscribes to a machine's change feed and keeps what a
:class:`~toolcall_tracker.ToolCallTracker` needs to let tasks wait: one lazily created
``anyio.Event`` per id that somebody waits for, one for the stream (new ready calls, the
end, closing), the snapshots of the calls that became ready (for ``ready_calls()``
iterators) and each call's :class:`~toolcall_tracker.timeline.CallTimeline`. When the feed reports a
change it sets the matching event and forgets it; every waiter re-checks the state in a
loop, so a waiter can never miss a change.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from array import array
from collections import deque
from typing import Any, Final

import anyio
import anyio.lowlevel

from ._reducer import as_running
from .calls import Status, ToolCall
from .changes import ChangeListener
from .errors import ToolCallFailed, TrackerClosed, UnknownToolCall
from .events import End
from .failures import InvalidArguments
from .machine import ToolCallStateMachine
from .timeline import CallTimeline

_PENDING, _RUNNING, _ERROR = Status.PENDING, Status.RUNNING, Status.ERROR
ARGS_PARSED: Final = frozenset({_RUNNING, Status.DONE})
DONE_ONLY: Final = frozenset({Status.DONE})

READY_CHECKPOINTS: Final = 3
"""How many times ``consume`` yields to the event loop after an item that woke a waiting
task (``ready_calls()``, ``wait_ready``...); after an item that makes a call ready while
nobody waits, :data:`IDLE_READY_CHECKPOINTS` times (at most once per
:data:`IDLE_READY_INTERVAL`); after any other item, never.

A woken task needs event-loop iterations of its own before a tool's first line runs: the
``ready_calls()`` iterator resumes, ``start_soon`` schedules the tool's task, and that task
runs (trio may run the tasks of one batch in either order). Three checkpoints (two on asyncio:
:func:`checkpoints_to_skip`) cover the
documented ``ready_calls()`` + ``start_soon`` pattern and
:class:`~toolcall_tracker.runner.ToolRunner` on both backends, so an eager tool starts
before ``consume`` reads the next item even from a source that never blocks
(tests/test_bursts.py proves it by ordering).
"""


def checkpoints_to_skip() -> int:
    """How many of those yields ``consume`` leaves out on the running event loop: one on
    asyncio, which runs the tasks that became ready in the order they did (the woken
    iterator, then the tool's task it started, then ``consume``), so two yields cover
    what three cover on trio; none on trio. Read once per ``consume``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # trio
        return 0
    return 1


IDLE_READY_INTERVAL: Final = 0.001
"""Seconds: while nobody waits, ``consume`` yields after a call becomes ready (the first
one always), so that a task started beside it (a runner about to wait) gets to run even if
the source never blocks, and then at most once per interval: a stream of many small calls
nobody waits for does not pay event-loop iterations for every call."""

IDLE_READY_CHECKPOINTS: Final = 2
"""How many times ``consume`` yields then: two, because trio runs the tasks of one batch in
either order; after two yields of ``consume``, every task that could run at the first has
run (on asyncio, which runs them in order, one would do)."""


STARTED, READY, TOOL_STARTED, TOOL_FINISHED, FINISHED = range(5)
"""The indexes of a call's times (the fields of :class:`CallTimeline`, in order)."""
_NO_TIMES: Final = array("d", [math.nan] * 5)


def timeline_of(times: array[float]) -> CallTimeline:
    """The public :class:`CallTimeline` of a call's times (``None`` for a time not yet)."""
    return CallTimeline(*(None if at != at else at for at in times))


class Waiting(ChangeListener):
    """Waiters, ready calls and timelines of one tracker, kept by the machine's feed."""

    __slots__ = (
        "__weakref__",
        "_closed_event",
        "_iterators",
        "_machine",
        "_next_idle_yield",
        "_stream_event",
        "_waiters",
        "_woken",
        "closed",
        "ready",
        "timelines",
        "woke",
    )

    def __init__(self, machine: ToolCallStateMachine) -> None:
        self._machine = machine
        self.closed = False
        # Snapshots of the tracked calls that became ready, in that order (a forgotten
        # call's is dropped), and the live ready_calls() iterators, each with its own queue
        # of snapshots it has not yielded yet: memory follows what is tracked or unread.
        # A snapshot nobody has read yet is None, built when first read, from the call
        # as it is then (a call's name and arguments do not change once it is ready, and
        # a ready call is not forgotten before it finishes): a turn that nobody iterates
        # builds none (see ready_snapshots).
        self.ready: dict[str, ToolCall | None] = {}
        # Each call's timeline as one array of monotonic times (NaN: not yet), indexed by
        # STARTED... FINISHED: setting a time allocates nothing. ``timeline()`` builds the
        # public CallTimeline from it, only when asked.
        self.timelines: dict[str, array[float]] = {}
        self._iterators: list[weakref.ref[ReadyCalls]] = []
        # How often consume should yield before its next item: READY_CHECKPOINTS once a
        # waiting task was woken, IDLE_READY_CHECKPOINTS once a call became ready while
        # nobody waited (at most once per IDLE_READY_INTERVAL), 0 if neither happened.
        self.woke = 0
        self._next_idle_yield = 0.0  # (monotonic) see IDLE_READY_INTERVAL
        self._waiters: dict[str, Waiter] = {}  # by id: waiting, not woken yet
        # By id: woken, and some of their tasks have not run yet. Each later change of the
        # call updates them, so a task that runs after the call was forgotten still sees
        # how it ended.
        self._woken: dict[str, list[Waiter]] = {}
        self._stream_event: anyio.Event | None = None
        self._closed_event: anyio.Event | None = None  # made by the first wait_closed

    # -- the change feed ----------------------------------------------------------------

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        now = time.monotonic()
        snapshot: ToolCall | None = None
        if after is _PENDING:
            times = self.timelines[call_id] = _NO_TIMES[:]  # one allocation per call
            times[STARTED] = now
        elif after is _RUNNING:
            self.timelines[call_id][READY] = now
            if self._iterators:
                snapshot = self._machine.get(call_id)
                assert snapshot is not None
                self._deliver(snapshot)
            self.ready[call_id] = snapshot
            # consume yields after a newly ready call even if nobody waits yet (at most
            # once per IDLE_READY_INTERVAL): a runner task started just before consume must
            # get to run while the stream goes on, whatever the source does.
            if not self.woke and now >= self._next_idle_yield:
                self.woke = IDLE_READY_CHECKPOINTS
                self._next_idle_yield = now + IDLE_READY_INTERVAL
            self._wake_stream()
        else:
            times = self.timelines[call_id]
            if before is _PENDING and times[READY] != times[READY]:  # (NaN: never ready)
                snapshot = self._machine.get(call_id)
                if snapshot is not None and isinstance(snapshot.error, InvalidArguments):
                    times[READY] = now  # the arguments completed but did not parse
            times[FINISHED] = now
        if self._waiters or self._woken:
            self._wake(call_id, snapshot)

    def _wake(self, call_id: str, snapshot: ToolCall | None) -> None:
        """Wake the waiters of ``call_id``; update those already woken."""
        waiter = self._waiters.pop(call_id, None)
        woken = self._woken.get(call_id)
        if waiter is None and woken is None:
            return
        if snapshot is None:
            snapshot = self._machine.get(call_id)
        parsed = call_id in self.ready
        for each in woken or ():
            each.call, each.parsed = snapshot, parsed
        if waiter is not None:
            waiter.call, waiter.parsed = snapshot, parsed
            waiter.event.set()
            self.woke = READY_CHECKPOINTS
            if woken is None:
                self._woken[call_id] = [waiter]
            else:
                woken.append(waiter)

    def ready_snapshots(self) -> list[ToolCall]:
        """The snapshots of the calls that became ready, in that order, each as it was
        then (one nobody read yet is built now)."""
        ready = self.ready
        machine = self._machine
        snapshots: list[ToolCall] = []
        for call_id, snapshot in ready.items():
            if snapshot is None:
                current = machine.get(call_id)
                assert current is not None
                snapshot = current if current.status is _RUNNING else as_running(current)
                ready[call_id] = snapshot
            snapshots.append(snapshot)
        return snapshots

    def call_forgotten(self, call_id: str) -> None:
        self.ready.pop(call_id, None)
        self.timelines.pop(call_id, None)

    def turn_ended(self, end: End) -> None:
        self.wake_all()

    # -- waiting ----------------------------------------------------------------------

    async def wait_for(
        self, call_id: str, wanted: frozenset[Status], *, after_parse_ok: bool = False
    ) -> ToolCall:
        """Wait until call ``call_id``'s status is in ``wanted`` (see the tracker's docs)."""
        machine = self._machine
        call = machine.get(call_id)
        parsed = call_id in self.ready
        waited = False
        while True:
            if call is not None:
                status = call.status
                if status in wanted or (status is _ERROR and after_parse_ok and parsed):
                    if not waited:
                        await anyio.lowlevel.checkpoint()  # satisfied at once: still one
                    return call
                if status is _ERROR:
                    if not waited:
                        await anyio.lowlevel.checkpoint()
                    raise ToolCallFailed(call)
            elif machine.is_forgotten(call_id):
                raise UnknownToolCall(call_id, "it finished and was forgotten")
            if self.closed:
                raise TrackerClosed(f"the tracker closed while waiting for call {call_id!r}")
            end = machine.end
            if call is None and end is not None:
                raise UnknownToolCall(call_id, _never_started(end))
            waiter = self._waiters.get(call_id)
            if waiter is None:
                waiter = self._waiters[call_id] = Waiter()
            waiter.count += 1
            try:
                await waiter.event.wait()
            finally:
                waiter.count -= 1
                if not waiter.count:  # the last of its tasks: nobody needs it any more
                    self._release(call_id, waiter)
            waited = True
            # The call as it is now; if it was forgotten (retention) before this task ran
            # again, as it was when we were woken.
            call, parsed = machine.get(call_id), call_id in self.ready
            if call is None and waiter.call is not None:
                call, parsed = waiter.call, waiter.parsed

    async def wait_end(self) -> End:
        """Wait until the turn has ended; a checkpoint even if it already has."""
        machine = self._machine
        end = machine.end
        if end is not None:
            await anyio.lowlevel.checkpoint()
            return end
        while end is None:
            await self.stream_wakeup().wait()
            end = machine.end
        return end

    def ready_calls(self) -> ReadyCalls:
        """A new ``ready_calls()`` iterator."""
        iterator = ReadyCalls(self)
        self._iterators.append(weakref.ref(iterator))
        return iterator

    def stream_wakeup(self) -> anyio.Event:
        """The event set at the next stream-level change (a call ready, the end, closing)."""
        if self._stream_event is None:
            self._stream_event = anyio.Event()
        return self._stream_event

    def finished(self) -> bool:
        """Whether the stream can bring no new ready call (ended or closed)."""
        return self.closed or self._machine.end is not None

    def forget_iterator(self, iterator: ReadyCalls) -> None:
        """Stop delivering to a finished iterator."""
        self._iterators = [ref for ref in self._iterators if ref() not in (iterator, None)]

    async def wait_closed(self) -> None:
        """Return once the tracker is closed."""
        if not self.closed:
            if self._closed_event is None:
                self._closed_event = anyio.Event()
            await self._closed_event.wait()

    def wake_all(self) -> None:
        """Wake every waiter and the stream (the turn ended, or the tracker closed)."""
        if self.closed and self._closed_event is not None:
            self._closed_event.set()
        waiters, self._waiters = self._waiters, {}
        for call_id, waiter in waiters.items():
            waiter.event.set()
            self._woken.setdefault(call_id, []).append(waiter)
        self._wake_stream()

    def _release(self, call_id: str, waiter: Waiter) -> None:
        if self._waiters.get(call_id) is waiter:
            del self._waiters[call_id]  # cancelled before it was woken
            return
        woken = self._woken.get(call_id)
        if woken is not None:
            if waiter in woken:
                woken.remove(waiter)
            if not woken:
                del self._woken[call_id]

    def _deliver(self, snapshot: ToolCall) -> None:
        """Queue a newly ready call for every live ready_calls() iterator."""
        dead = False
        for ref in self._iterators:
            iterator = ref()
            if iterator is None:
                dead = True  # abandoned without finishing: garbage collected
            else:
                iterator.queue.append(snapshot)
        if dead:
            self._iterators = [ref for ref in self._iterators if ref() is not None]

    def _wake_stream(self) -> None:
        event = self._stream_event
        if event is not None:
            self._stream_event = None
            event.set()
            self.woke = READY_CHECKPOINTS


class Relay(ChangeListener):
    """What the machine holds instead of the :class:`Waiting` itself: a weak reference
    that forwards its changes. The waiting holds the machine, so holding the waiting back
    would make every turn a reference cycle, left (with all its calls) for the garbage
    collector to find; this way a finished turn is freed by reference counting. Whoever
    can still wait (the tracker, an iterator, a waiting task) keeps the waiting alive."""

    __slots__ = ("_waiting",)

    def __init__(self, waiting: Waiting) -> None:
        self._waiting = weakref.ref(waiting)

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        waiting = self._waiting()
        if waiting is not None:
            waiting.call_changed(call_id, before, after)

    def call_forgotten(self, call_id: str) -> None:
        waiting = self._waiting()
        if waiting is not None:
            waiting.call_forgotten(call_id)

    def turn_ended(self, end: End) -> None:
        waiting = self._waiting()
        if waiting is not None:
            waiting.turn_ended(end)


class Waiter:
    """The tasks waiting for one id: an event, and the call at the moment it was set."""

    __slots__ = ("call", "count", "event", "parsed")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.call: ToolCall | None = None
        self.parsed = False  # the call's arguments had parsed when it was set
        self.count = 0  # tasks waiting on it; the last one to give up removes it


class ReadyCalls:
    """The async iterator returned by :meth:`ToolCallTracker.ready_calls`.

    It starts with the tracked calls that are already ready, and the tracker's listener
    appends each call that becomes ready later to every live iterator's queue.
    """

    __slots__ = ("__weakref__", "_waiting", "queue")

    def __init__(self, waiting: Waiting) -> None:
        self._waiting = waiting
        self.queue: deque[ToolCall] = deque(waiting.ready_snapshots())

    def __aiter__(self) -> ReadyCalls:
        return self

    async def __anext__(self) -> ToolCall:
        waiting = self._waiting
        queue = self.queue
        while True:
            if queue:
                return queue.popleft()
            if waiting.finished():
                waiting.forget_iterator(self)
                raise StopAsyncIteration
            await waiting.stream_wakeup().wait()


def _never_started(end: Any) -> str:
    """Why a waited-for id is unknown once the turn has ended, and what to do instead."""
    how = "normally" if end.ok else "not ok"
    reason = f" ({end.reason})" if end.reason else ""
    return (
        f"the turn ended {how}{reason} before a call with this id started. Check the id "
        "against the calls the model made (tracker.list()), or iterate "
        "tracker.ready_calls() instead of waiting for an id chosen in advance"
    )
