"""The async tracker: a synchronous machine plus waiting, on anyio (asyncio and trio).

The tracker holds a :class:`~toolcall_tracker.ToolCallStateMachine` and adds no transition of
its own: it is one listener of the machine's change feed. It keeps one lazily created
``anyio.Event`` per id that somebody waits for, and one for the stream (new ready calls, the
end, closing); when the feed reports a change it sets the matching event and forgets it,
and every waiter re-checks the state in a loop. So a waiter can never miss a change, and a
wake-up that changes nothing costs one extra check. Closing and the per-call timeline are
the tracker's; the machine knows nothing of them.

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

import time
from collections.abc import AsyncIterable, Callable, Coroutine
from types import TracebackType
from typing import Any, TypeGuard, cast

import anyio
import anyio.lowlevel

from ._consume_misuse import check_source
from ._reducer import IgnoreReason
from ._sources import close_source, why_stopped
from ._waiting import (
    ARGS_PARSED,
    DONE_ONLY,
    READY_CHECKPOINTS,
    TOOL_FINISHED,
    TOOL_STARTED,
    ReadyCalls,
    Relay,
    Waiting,
    checkpoints_to_skip,
    timeline_of,
)
from .calls import Status, ToolCall
from .changes import ChangeListener
from .errors import InvalidEvent, TrackerClosed
from .events import End, EventInput
from .limits import Limits
from .machine import IgnoredHook, ToolCallStateMachine, logger
from .sink import ItemSource
from .timeline import CallTimeline

__all__ = ["READY_CHECKPOINTS", "CallTimeline", "ToolCallTracker"]


class ToolCallTracker:
    """Tracks the calls of one model turn and lets tool code wait for them.

    Use one tracker per model turn::

        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, model_events)
            async for call in tracker.ready_calls():
                tg.start_soon(run_tool, tracker, call)

    The tracker holds a :class:`~toolcall_tracker.ToolCallStateMachine` (:attr:`machine`)
    and offers its reads (``get``, ``status``, ``list``, ``end``, ``limits``), its writes
    (``apply`` and the :class:`~toolcall_tracker.sink.EventSink` methods ``write_start``, ...),
    ``forget`` and its change feed (``subscribe``), all refusing events once the tracker is
    closed. They are synchronous and must be called on the event loop's thread; from a
    worker thread use ``anyio.from_thread.run_sync(tracker.apply, event)``.

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
        self._machine = machine = ToolCallStateMachine(
            on_ignored=on_ignored, limits=limits, keep_finished=keep_finished
        )
        self._waiting = waiting = Waiting(machine)
        # First: waiters learn of a change before anybody else. (Through a relay holding
        # it weakly: no reference cycle, so a finished turn is freed without the collector.)
        machine.subscribe(Relay(waiting))
        self._skip_invalid = skip_invalid
        self._consumers: set[anyio.CancelScope] = set()
        self._on_close: dict[int, Callable[[], object]] = {}
        self._next_key = 0

    # -- the machine ------------------------------------------------------------------

    @property
    def machine(self) -> ToolCallStateMachine:
        """The machine this tracker holds (read it freely; write through the tracker, which
        refuses events once closed)."""
        return self._machine

    def open_machine(self) -> ToolCallStateMachine | None:
        """The machine to write this tracker's events into directly, while it is open.

        A tracker adds only its closed check to its machine's writes, so a loop that
        nothing can close meanwhile (the synchronous
        :func:`~toolcall_tracker.adapters.apply_stream`) may write into the machine itself.
        Any sink may offer this method (a machine returns itself); a sink without it is
        written through its own methods.

        Returns:
            The machine, or ``None`` once the tracker is closed (its writes then raise
            :class:`~toolcall_tracker.errors.TrackerClosed`), and always ``None`` for a
            subclass, which may override the writes.
        """
        if type(self) is not ToolCallTracker or self._waiting.closed:
            return None
        return self._machine

    def args_text(self, call_id: str) -> str | None:
        """The argument text call ``call_id`` holds so far; see
        :meth:`ToolCallStateMachine.args_text`."""
        return self._machine.args_text(call_id)

    def apply(self, event: EventInput) -> None:
        """Apply one event; see :meth:`ToolCallStateMachine.apply`.

        Raises:
            InvalidEvent: the event is malformed; nothing changed.
            TrackerClosed: the tracker was closed.
        """
        if self._waiting.closed:
            self._refuse()
        self._machine.apply(event)

    def write_start(self, call_id: str, name: str) -> None:
        """Apply ``start`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_start(call_id, name)

    def write_delta(self, call_id: str, text: str) -> None:
        """Apply ``delta`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_delta(call_id, text)

    def write_ready(self, call_id: str) -> None:
        """Apply ``ready`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_ready(call_id)

    def write_result(self, call_id: str, result: Any) -> None:
        """Apply ``result`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_result(call_id, result)

    def write_error(self, call_id: str, error: Any) -> None:
        """Apply ``error`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_error(call_id, error)

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        """Apply ``end`` (see :class:`~toolcall_tracker.sink.EventSink`); refused once closed."""
        if self._waiting.closed:
            self._refuse()
        self._machine.write_end(ok, reason)

    def get(self, call_id: str) -> ToolCall | None:
        """The snapshot of call ``call_id``, or ``None``; see :meth:`ToolCallStateMachine.get`."""
        return self._machine.get(call_id)

    def status(self, call_id: str) -> Status | None:
        """The status of call ``call_id``, or ``None``; no snapshot is built."""
        return self._machine.status(call_id)

    def list(self) -> list[ToolCall]:
        """Snapshots of every tracked call, in start order."""
        return self._machine.list()

    def forget(self, call_id: str) -> ToolCall | None:
        """Drop a finished call; see :meth:`ToolCallStateMachine.forget`."""
        return self._machine.forget(call_id)

    def subscribe(self, listener: ChangeListener, *, fragments: bool = False) -> None:
        """Subscribe to the machine's change feed; see :meth:`ToolCallStateMachine.subscribe`."""
        self._machine.subscribe(listener, fragments=fragments)

    def unsubscribe(self, listener: ChangeListener) -> None:
        """Stop telling ``listener``."""
        self._machine.unsubscribe(listener)

    @property
    def limits(self) -> Limits:
        """The limits this tracker's machine enforces."""
        return self._machine.limits

    @property
    def keep_finished(self) -> int | None:
        """How many finished calls this tracker keeps (``None``: every call)."""
        return self._machine.keep_finished

    @property
    def end(self) -> End | None:
        """How the turn ended (the ``End`` event), or ``None`` while it is still open."""
        return self._machine.end

    # -- feeding ----------------------------------------------------------------------

    def consume(self, source: AsyncIterable[EventInput] | ItemSource) -> Coroutine[Any, Any, None]:
        """Apply every event of ``source`` (an async iterable of models or mappings).

        ``source`` may also be an :class:`~toolcall_tracker.sink.ItemSource` (what
        ``adapters.adapt(stream, adapter)`` returns): then each provider item is written
        straight into the machine, without building an event model per fragment.

        Returns when the source is exhausted; that ends the turn normally (``End(ok=True,
        reason="source exhausted")``) unless the source sent its own ``end``. After each
        item that wakes a waiting task it yields to the event loop :data:`READY_CHECKPOINTS`
        (3) times, after one that makes a call ready while nobody waits twice (at most once
        a millisecond: the first such item always), one time fewer each on asyncio (which
        runs ready tasks in order), and after no other item: enough for
        a tool started through ``ready_calls()`` + ``start_soon`` or by
        :class:`~toolcall_tracker.runner.ToolRunner` to run its first line before the next
        item is read, on asyncio and trio, even if the source never blocks (a burst of
        events from one socket read).

        If the source raises, a malformed event arrives (without ``skip_invalid``) or the
        task is cancelled, the turn ends not ok (pending calls fail, every waiter wakes)
        and the exception propagates. If the tracker is closed meanwhile, ``consume`` stops
        reading (even with an item already in hand) and returns. In every early stop the
        source is closed (its ``aclose()``, shielded, at most 5 s).

        ``source`` is checked when ``consume`` is called, before its coroutine starts: a
        sync iterable, an un-awaited coroutine, an adapter (class or instance) or an async
        context manager passed where a stream belongs raises ``TypeError`` right there,
        naming the fix. (Started with ``tg.start_soon(tracker.consume, source)``, the error
        still leaves the task group inside an ``ExceptionGroup``; ``run_turn`` raises it
        as it is.)

        Raises:
            TypeError: ``source`` is not an async iterable (at the call, see above).
            InvalidEvent: the source produced a malformed event.
            TrackerClosed: the tracker was already closed.
        """
        check_source(source)
        return self._consume(source)

    async def _consume(self, source: AsyncIterable[EventInput] | ItemSource) -> None:
        if self._waiting.closed:
            raise TrackerClosed("cannot consume: the tracker is closed")
        machine = self._machine
        scope = anyio.CancelScope()  # aclose() cancels it: a closed tracker reads no more
        self._consumers.add(scope)
        try:
            with scope:
                try:
                    if _is_item_source(source):
                        finished = await self._pump(source)
                    else:
                        finished = await self._drain(cast(AsyncIterable[EventInput], source))
                except BaseException as exc:
                    if machine.end is None and not self._waiting.closed:
                        self._end_quietly(why_stopped(exc))
                    await close_source(source)
                    raise
                if not finished:  # closed with an item in hand
                    await close_source(source)
        finally:
            self._consumers.discard(scope)
        if machine.end is None and not self._waiting.closed:
            machine.write_end(True, "source exhausted")

    async def _drain(self, source: AsyncIterable[EventInput]) -> bool:
        """Apply a source of events; ``False`` if the tracker closed first."""
        apply = self._machine.apply
        waiting = self._waiting
        skip = checkpoints_to_skip()  # (one fewer yield on asyncio)
        async for event in source:
            if waiting.closed:
                return False
            try:
                apply(event)
            except InvalidEvent as exc:
                if not self._skip_invalid:
                    hinted = _with_hint(exc, event)
                    if hinted is exc:
                        raise
                    raise hinted from exc
                self._machine.ignore(event, IgnoreReason.INVALID_EVENT)
                continue
            if waiting.woke:  # a task can run now: let it start (see READY_CHECKPOINTS)
                times, waiting.woke = waiting.woke - skip, 0
                for _ in range(times):
                    await anyio.lowlevel.checkpoint()
        return not self._waiting.closed

    async def _pump(self, source: ItemSource) -> bool:
        """Write a source of provider items into the machine; ``False`` if closed first."""
        machine = self._machine
        waiting = self._waiting
        receive, write = source.receive, source.write
        skip = checkpoints_to_skip()  # (one fewer yield on asyncio)
        while True:
            try:
                item = await receive()
            except StopAsyncIteration:
                break
            if waiting.closed:
                return False
            try:
                write(item, machine)
            except InvalidEvent as exc:
                if not self._skip_invalid:
                    raise
                machine.ignore(exc.event, IgnoreReason.INVALID_EVENT)
                continue
            if waiting.woke:  # a task can run now: let it start (see READY_CHECKPOINTS)
                times, waiting.woke = waiting.woke - skip, 0
                for _ in range(times):
                    await anyio.lowlevel.checkpoint()
        if self._waiting.closed:
            return False
        source.finish(machine)
        return True

    def _end_quietly(self, reason: str) -> None:
        """End the turn not ok while another exception propagates (a listener's is logged)."""
        try:
            self._machine.write_end(False, reason)
        except Exception:
            logger.exception("a change listener raised while the turn was ended (%s)", reason)

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
        return await self._waiting.wait_for(call_id, ARGS_PARSED, after_parse_ok=True)

    async def wait_done(self, call_id: str) -> ToolCall:
        """Wait until call ``call_id`` is ``done`` and return its snapshot.

        Raises:
            ToolCallFailed: the call ended in ``error``.
            UnknownToolCall: the turn ended and no call ``call_id`` ever started, or it
                was forgotten.
            TrackerClosed: the tracker closed first.
        """
        return await self._waiting.wait_for(call_id, DONE_ONLY)

    async def wait_end(self) -> End:
        """Wait until the turn has ended and return its ``End`` (check ``.ok``).

        Returns at once (after a checkpoint) if it already ended. Closing the tracker ends
        the turn.
        """
        return await self._waiting.wait_end()

    def ready_calls(self) -> ReadyCalls:
        """Iterate over calls as they become ready: ``async for call in ...``.

        Yields every call once, in the order the calls became ``running``, as a snapshot
        taken at that moment, including calls that became ready before the iteration
        began (except calls already forgotten when the iterator is created). Ends once
        the turn has ended and every ready call was yielded. Each iterator is independent
        and sees every call; a call forgotten after it became ready is still yielded by the
        iterators that existed then. The snapshot may be stale by the time you act on it:
        read ``tracker.status(call.id)`` before doing anything irreversible.
        """
        return self._waiting.ready_calls()

    def timeline(self, call_id: str) -> CallTimeline | None:
        """A copy of call ``call_id``'s :class:`CallTimeline`, or ``None`` if unknown."""
        times = self._waiting.timelines.get(call_id)
        return None if times is None else timeline_of(times)

    def mark_tool_started(self, call_id: str) -> None:
        """Record, for the timeline, that the tool of call ``call_id`` starts now.

        Tool runners call this (and :meth:`mark_tool_finished`); unknown ids are ignored.
        """
        times = self._waiting.timelines.get(call_id)
        if times is not None:
            times[TOOL_STARTED] = time.monotonic()

    def mark_tool_finished(self, call_id: str) -> None:
        """Record, for the timeline, that the tool of call ``call_id`` finished now."""
        times = self._waiting.timelines.get(call_id)
        if times is not None:
            times[TOOL_FINISHED] = time.monotonic()

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._waiting.closed

    async def wait_closed(self) -> None:
        """Wait until the tracker is closed (:meth:`aclose`); return at once if it is.

        To react without a task parked here, see :meth:`on_close` (the tool runner's way
        of ending the calls that wait for an approval or a slot).
        """
        await self._waiting.wait_closed()

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Have ``callback()`` called once, synchronously, when :meth:`aclose` closes the
        tracker (right away if it is closed already); returns a function that unregisters it.

        For layers that hold waits of their own and must end them when the tracker closes,
        without a task parked in :meth:`wait_closed` (the tool runner ends the calls it
        holds this way). It runs after every waiter was woken and the events were refused;
        an exception it raises is logged (``toolcall_tracker`` logger) and the others still
        run.
        """
        key = self._next_key
        self._next_key = key + 1
        if self._waiting.closed:
            callback()
        else:
            self._on_close[key] = callback
        return lambda: self._on_close.pop(key, None) and None

    # -- closing ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the tracker: end the turn (not ok) if it is open and release waiters.

        Afterwards every waiter that was not satisfied raises (:class:`TrackerClosed`, or
        :class:`ToolCallFailed` for calls whose arguments never completed), ``ready_calls``
        iterators finish, a running ``consume`` stops reading and returns, and ``apply``
        (and every ``write_*``) raises :class:`TrackerClosed`. ``get`` and ``list`` still
        work. Closing twice is harmless.
        """
        if self._waiting.closed:
            return
        try:
            if self._machine.end is None:
                self._machine.write_end(False, "tracker closed")
        finally:
            self._waiting.closed = True
            self._waiting.wake_all()
            for scope in self._consumers:
                scope.cancel()
            callbacks, self._on_close = self._on_close, {}
            for callback in callbacks.values():
                try:
                    callback()
                except Exception:
                    logger.exception("a close callback raised")

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

    @staticmethod
    def _refuse() -> None:
        raise TrackerClosed(
            "this tracker is closed and accepts no more events; use a new tracker for the next turn"
        )


def _is_item_source(source: object) -> TypeGuard[ItemSource]:
    """``isinstance(source, ItemSource)`` without the cost of a runtime protocol check (a
    quarter of a short turn's set-up): the same test, that each of its methods exists."""
    return (
        hasattr(source, "receive")
        and hasattr(source, "write")
        and hasattr(source, "finish")
        and hasattr(source, "aclose")
    )


def _with_hint(exc: InvalidEvent, event: object) -> InvalidEvent:
    """``exc``, or, for a provider item passed without ``adapt()``, the same naming the fix."""
    from ._recognise import raw_item_hint  # only on this error path: no cost per event

    hint = raw_item_hint(event)
    if hint is None:
        return exc
    return InvalidEvent(f"{exc}; {hint}", event)
