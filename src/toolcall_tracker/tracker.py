"""The async tracker: the synchronous machine plus waiting, on anyio (asyncio and trio).

The tracker adds no transition of its own. It keeps one lazily created ``anyio.Event`` per
id that somebody waits for, and one for the stream (new ready calls, the end, closing);
after each status change it sets the matching event and forgets it, and every waiter
re-checks the state in a loop. So a waiter can never miss a change, and a wake-up that
changes nothing costs one extra check.

Every blocking point has a way out:

- ``wait_ready`` / ``wait_done``: the call reaches the awaited state, or fails
  (:class:`ToolCallFailed`), or the turn ends without the id ever starting
  (:class:`UnknownToolCall`), or the tracker closes (:class:`TrackerClosed`). Wrap them in
  ``anyio.fail_after`` / ``move_on_after`` for a deadline; cancellation is always honoured.
- ``ready_calls()``: ends once the turn has ended (or the tracker closed) and every ready
  call was yielded.
- ``consume``: returns when the source is exhausted; if the source raises or the task is
  cancelled, the turn ends not ok first (pending calls fail, waiters wake) and the
  exception propagates.
"""

from __future__ import annotations

import inspect
import time
import weakref
from collections import deque
from collections.abc import AsyncIterable
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel

from .errors import (
    InvalidArguments,
    InvalidEvent,
    ToolCallFailed,
    TrackerClosed,
    UnknownToolCall,
)
from .events import End, EventInput, Status, ToolCall
from .limits import Limits
from .machine import IgnoredHook, ToolCallStateMachine, logger
from .reducer import IgnoreReason, _CallRecord

__all__ = ["CallTimeline", "ToolCallTracker"]

_PENDING, _RUNNING, _DONE, _ERROR = Status.PENDING, Status.RUNNING, Status.DONE, Status.ERROR
_ARGS_PARSED = frozenset({_RUNNING, _DONE})
_DONE_ONLY = frozenset({_DONE})


@dataclass(slots=True)
class CallTimeline:
    """When things happened to one call, in seconds of ``time.monotonic()``.

    ``started``: its ``start`` was applied. ``ready``: its arguments completed (it became
    ``running``, or failed to parse). ``tool_started`` / ``tool_finished``: set by a tool
    runner around the tool itself (``None`` if no runner recorded them). ``finished``: it
    became ``done`` or ``error``. A field is ``None`` until that moment comes.
    """

    started: float | None = None
    ready: float | None = None
    tool_started: float | None = None
    tool_finished: float | None = None
    finished: float | None = None


class ToolCallTracker(ToolCallStateMachine):
    """Tracks the calls of one model turn and lets tool code wait for them.

    Use one tracker per model turn::

        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, model_events)
            async for call in tracker.ready_calls():
                tg.start_soon(run_tool, tracker, call)

    ``apply``, ``get`` and ``list`` are synchronous and must be called on the event loop's
    thread; from a worker thread use ``anyio.from_thread.run_sync(tracker.apply, event)``.

    Args:
        on_ignored: called as ``on_ignored(event, reason)`` for every ignored event.
        skip_invalid: if true, ``consume`` reports a malformed event from its source to
            ``on_ignored`` with reason ``invalid_event`` (and the log) and goes on, instead
            of ending the turn and raising :class:`InvalidEvent`.
        limits: the :class:`~toolcall_tracker.Limits` to enforce (generous defaults).
        keep_finished: keep at most this many finished calls, forgetting older ones
            automatically (see :meth:`forget`); ``None`` keeps every call.
    """

    def __init__(
        self,
        *,
        on_ignored: IgnoredHook | None = None,
        skip_invalid: bool = False,
        limits: Limits | None = None,
        keep_finished: int | None = None,
    ) -> None:
        super().__init__(on_ignored=on_ignored, limits=limits, keep_finished=keep_finished)
        self._skip_invalid = skip_invalid
        self._closed = False
        # Snapshots of the tracked calls that became ready, in that order (a forgotten
        # call's is dropped), and the live ready_calls() iterators, each with its own queue
        # of snapshots it has not yielded yet: memory follows what is tracked or unread.
        self._ready: dict[str, ToolCall] = {}
        self._iterators: list[weakref.ref[_ReadyCalls]] = []
        self._woke = False  # a call became ready or a waiter woke since consume yielded
        self._waiters: dict[str, _Waiter] = {}
        self._stream_event: anyio.Event | None = None
        self._consumers: set[anyio.CancelScope] = set()

    # -- feeding ----------------------------------------------------------------------
    # apply(), get() and list() are the machine's; a closed tracker's phase refuses events.

    async def consume(self, source: AsyncIterable[EventInput]) -> None:
        """Apply every event of ``source`` (an async iterable of models or mappings).

        Returns when the source is exhausted; that ends the turn normally (``End(ok=True,
        reason="source exhausted")``) unless the source sent its own ``end``. After each
        event that makes a call ready or wakes a waiting task, it yields to the event loop
        once, so tool tasks start while the stream goes on even if the source never
        blocks.

        If the source raises, a malformed event arrives (without ``skip_invalid``) or the
        task is cancelled, the turn ends not ok (pending calls fail, every waiter wakes)
        and the exception propagates. If the tracker is closed meanwhile, ``consume`` stops
        waiting for the source and returns. In every early stop the source is closed
        (its ``aclose()``, shielded, at most 5 s).

        Raises:
            InvalidEvent: the source produced a malformed event.
            TrackerClosed: the tracker was already closed.
        """
        if self._closed:
            raise TrackerClosed("cannot consume: the tracker is closed")
        apply = self.apply
        scope = anyio.CancelScope()  # aclose() cancels it: a closed tracker reads no more
        self._consumers.add(scope)
        # An adapted stream (adapters.adapt) may hand plain fragments straight to the
        # machine instead of building a Delta model for each: same table, same order.
        fast_lane = getattr(source, "_toolcall_fast_lane", None)
        if fast_lane is not None:
            fast_lane(self._fast_delta)
        try:
            with scope:
                try:
                    async for event in source:
                        try:
                            apply(event)
                        except InvalidEvent:
                            if not self._skip_invalid:
                                raise
                            self._ignore(event, IgnoreReason.INVALID_EVENT)
                            continue
                        if self._woke:  # a waiting task can run now: let it start
                            self._woke = False
                            await anyio.lowlevel.checkpoint()
                except BaseException as exc:
                    if self._end is None and not self._closed:
                        self._end_turn(End(ok=False, reason=_why(exc)))
                    await _close_source(source)
                    raise
        finally:
            self._consumers.discard(scope)
            if fast_lane is not None:
                fast_lane(None)
        if self._end is None and not self._closed:
            self._end_turn(End(ok=True, reason="source exhausted"))

    # -- waiting ----------------------------------------------------------------------

    async def wait_ready(self, call_id: str) -> ToolCall:
        """Wait until call ``call_id`` has parsed arguments (``running`` or later).

        The call need not have started yet.

        A call whose arguments parsed and which failed later (its tool failed) is returned
        too, with status ``error``: its arguments were ready.

        Raises:
            ToolCallFailed: the call ended in ``error`` before its arguments parsed.
            UnknownToolCall: the turn ended and no call ``call_id`` ever started, or it
                was forgotten.
            TrackerClosed: the tracker closed first.
        """
        return await self._wait_for(call_id, _ARGS_PARSED, after_parse_ok=True)

    async def wait_done(self, call_id: str) -> ToolCall:
        """Wait until call ``call_id`` is ``done`` and return its snapshot.

        Raises:
            ToolCallFailed: the call ended in ``error``.
            UnknownToolCall: the turn ended and no call ``call_id`` ever started, or it
                was forgotten.
            TrackerClosed: the tracker closed first.
        """
        return await self._wait_for(call_id, _DONE_ONLY)

    async def wait_end(self) -> End:
        """Wait until the turn has ended and return its ``End`` (check ``.ok``).

        Returns at once if it already ended. Closing the tracker ends the turn.
        """
        while self._end is None:
            await self._stream_wakeup().wait()
        return self._end

    def ready_calls(self) -> _ReadyCalls:
        """Iterate over calls as they become ready: ``async for call in ...``.

        Yields every call once, in the order the calls became ``running``, as a snapshot
        taken at that moment, including calls that became ready before the iteration
        began (except calls already forgotten when the iterator is created). Ends once
        the turn has ended and every ready call was yielded. Each iterator is independent
        and sees every call; a call forgotten after it became ready is still yielded by the
        iterators that existed then.
        """
        return _ReadyCalls(self)

    def timeline(self, call_id: str) -> CallTimeline | None:
        """A copy of call ``call_id``'s :class:`CallTimeline`, or ``None`` if unknown."""
        record = self._calls.get(call_id)
        return None if record is None else replace(record.timeline)

    def mark_tool_started(self, call_id: str) -> None:
        """Record, for the timeline, that the tool of call ``call_id`` starts now.

        Tool runners call this (and :meth:`mark_tool_finished`); unknown ids are ignored.
        """
        record = self._calls.get(call_id)
        if record is not None:
            record.timeline.tool_started = time.monotonic()

    def mark_tool_finished(self, call_id: str) -> None:
        """Record, for the timeline, that the tool of call ``call_id`` finished now."""
        record = self._calls.get(call_id)
        if record is not None:
            record.timeline.tool_finished = time.monotonic()

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    # -- closing ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the tracker: end the turn (not ok) if it is open and release waiters.

        Afterwards every waiter that was not satisfied raises (:class:`TrackerClosed`, or
        :class:`ToolCallFailed` for calls whose arguments never completed), ``ready_calls``
        iterators finish, a running ``consume`` stops reading and returns, and ``apply``
        raises :class:`TrackerClosed`. ``get`` and
        ``list`` still work. Closing twice is harmless.
        """
        if self._closed:
            return
        if self._end is None:
            self._end_turn(End(ok=False, reason="tracker closed"))
        self._closed = True
        self._set_phase("closed")
        self._wake_all()
        for scope in self._consumers:
            scope.cancel()

    async def __aenter__(self) -> ToolCallTracker:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- internals --------------------------------------------------------------------

    async def _wait_for(
        self, call_id: str, wanted: frozenset[Status], *, after_parse_ok: bool = False
    ) -> ToolCall:
        record = self._calls.get(call_id)
        while True:
            if record is not None:
                status = record.status
                if status in wanted:
                    return record.to_call()
                if status is _ERROR:
                    if after_parse_ok and record.parsed:
                        return record.to_call()
                    raise ToolCallFailed(record.to_call())
            elif call_id in self._forgotten:
                raise UnknownToolCall(call_id, "it finished and was forgotten")
            if self._closed:
                raise TrackerClosed(f"the tracker closed while waiting for call {call_id!r}")
            if record is None and self._end is not None:
                raise UnknownToolCall(
                    call_id, f"the turn ended ({self._end.reason or 'end'}) without it"
                )
            waiter = self._waiters.get(call_id)
            if waiter is None:
                waiter = self._waiters[call_id] = _Waiter()
            waiter.count += 1
            try:
                await waiter.event.wait()
            finally:
                waiter.count -= 1
                if not waiter.count and self._waiters.get(call_id) is waiter:
                    del self._waiters[call_id]  # the last waiter left (cancelled)
            # The record as it was when we were woken: it stays valid even if the call
            # was forgotten (retention) before this task ran again.
            record = waiter.record or self._calls.get(call_id)

    def _stream_wakeup(self) -> anyio.Event:
        if self._stream_event is None:
            self._stream_event = anyio.Event()
        return self._stream_event

    def _changed(self, record: _CallRecord) -> None:
        status = record.status
        now = time.monotonic()
        if status is _PENDING:
            record.timeline = CallTimeline(started=now)
        elif status is _RUNNING:
            record.timeline.ready = now
            snapshot = self._ready[record.id] = record.to_call()
            if self._iterators:
                self._deliver(snapshot)
            self._wake_stream()
            # consume yields after every newly ready call, even if nobody waits yet: a
            # runner task started just before consume must get to run while the stream
            # goes on, whatever the source does.
            self._woke = True
        else:
            timeline = record.timeline
            if timeline.ready is None and isinstance(record.error, InvalidArguments):
                timeline.ready = now  # the arguments completed but did not parse
            timeline.finished = now
        if self._waiters:
            waiter = self._waiters.pop(record.id, None)
            if waiter is not None:
                waiter.record = record
                waiter.event.set()
                self._woke = True
        super()._changed(record)  # retention last: waiters already hold the record

    def _deliver(self, snapshot: ToolCall) -> None:
        """Queue a newly ready call for every live ready_calls() iterator."""
        dead = False
        for ref in self._iterators:
            iterator = ref()
            if iterator is None:
                dead = True  # abandoned without finishing: garbage collected
            else:
                iterator._queue.append(snapshot)
        if dead:
            self._iterators = [ref for ref in self._iterators if ref() is not None]

    def _drop(self, record: _CallRecord) -> None:
        super()._drop(record)
        self._ready.pop(record.id, None)

    def _turn_ended(self) -> None:
        self._wake_all()

    def _wake_stream(self) -> None:
        event = self._stream_event
        if event is not None:
            self._stream_event = None
            event.set()
            self._woke = True

    def _wake_all(self) -> None:
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            waiter.event.set()
        self._wake_stream()


class _Waiter:
    """The tasks waiting for one id: an event, and the record at the moment it was set."""

    __slots__ = ("count", "event", "record")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.record: _CallRecord | None = None
        self.count = 0  # tasks waiting on it; the last one to give up removes it


class _ReadyCalls:
    """The async iterator returned by :meth:`ToolCallTracker.ready_calls`.

    It starts with the tracked calls that are already ready, and the tracker appends each
    call that becomes ready later to every live iterator's queue.
    """

    __slots__ = ("__weakref__", "_queue", "_tracker")

    def __init__(self, tracker: ToolCallTracker) -> None:
        self._tracker = tracker
        self._queue: deque[ToolCall] = deque(tracker._ready.values())
        tracker._iterators.append(weakref.ref(self))

    def __aiter__(self) -> _ReadyCalls:
        return self

    async def __anext__(self) -> ToolCall:
        tracker = self._tracker
        queue = self._queue
        while True:
            if queue:
                return queue.popleft()
            if tracker._end is not None or tracker._closed:
                tracker._iterators = [
                    ref for ref in tracker._iterators if ref() not in (self, None)
                ]
                raise StopAsyncIteration
            await tracker._stream_wakeup().wait()


async def _close_source(source: object) -> None:
    """Close a source we stopped reading early (an async generator, an SDK stream).

    Uses its ``aclose()`` (or a ``close()``, awaited if it returns an awaitable). Runs
    shielded from cancellation but bounded, so a stubborn source cannot hang us; a failure
    to close is logged, since the exception that stopped us matters more.
    """
    closer: Any = getattr(source, "aclose", None) or getattr(source, "close", None)
    if closer is None:
        return
    with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
        try:
            result = closer()
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.debug("closing the event source failed", exc_info=True)


_CLOSE_TIMEOUT = 5.0


def _why(exc: BaseException) -> str:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    if isinstance(exc, InvalidEvent):
        return f"invalid event: {exc}"
    return f"source raised {type(exc).__name__}: {exc}"
