"""The synchronous machine: the reducer applied per id, the stream's phase, and the change feed.

This is the core contract: ``tool_call_streaming_state_machine()`` returns a
:class:`ToolCallStateMachine` with ``apply(event)``, ``get(id)`` and ``list()``. It does no
I/O and never waits, and it is complete on its own: it knows nothing of closing, waiting or
timelines. Layers above it read it through its public reads and its change feed
(:mod:`toolcall_tracker.changes`); adapters write into it through the
:class:`~toolcall_tracker.sink.EventSink` methods (``write_start``, ``write_delta``, ...).
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from ._decode import decode, reported, wire
from ._reducer import (
    _STEPS,
    FORGOTTEN,
    STREAM,
    IgnoreReason,
    StreamAction,
    StreamPhase,
    _CallRecord,
    reduce,
)
from ._support import bounded_repr, construct
from .calls import Status, ToolCall
from .changes import ChangeListener
from .errors import InvalidEvent
from .events import Delta, End, EventInput, parse_event
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["IgnoredHook", "ToolCallStateMachine", "tool_call_streaming_state_machine"]

logger: Final = logging.getLogger("toolcall_tracker")

IgnoredHook: TypeAlias = Callable[[Any, IgnoreReason], None]
"""``on_ignored(event, reason)``: called for every ignored event.

``event`` is the event model (for a mapping of unknown ``type``, the mapping itself);
``reason`` is an :class:`~toolcall_tracker.IgnoreReason`.
"""

_PER_CALL: Final = StreamAction.PER_CALL
_OPEN, _FULL, _ENDED = StreamPhase.OPEN, StreamPhase.FULL, StreamPhase.ENDED
_MISSING: Final[Any] = object()
_UNKNOWN_TYPE: Final[Any] = object()
_UNKNOWN: Final = ("unknown", None, None)
# STREAM with one more column: a type this library does not know (reported in decode).
_STREAM_ROWS: Final = {phase: {**row, "unknown": _UNKNOWN_TYPE} for phase, row in STREAM.items()}
_FINISHED: Final = (Status.DONE, Status.ERROR)
_NONE_FORGOTTEN: Final[Mapping[str, None]] = {}  # (never written: see _drop)


class ToolCallStateMachine:
    """Tracks every call of one model turn; synchronous and sans-IO.

    Args:
        on_ignored: called as ``on_ignored(event, reason)`` for each ignored event (a
            duplicate ``start``, a ``delta`` for an unknown id, ...). Ignored events are
            also logged at DEBUG on the ``toolcall_tracker`` logger. Nothing is printed.
        limits: the :class:`~toolcall_tracker.Limits` to enforce (generous defaults).
        keep_finished: if set, keep at most this many finished (``done``/``error``) calls;
            older finished calls are forgotten automatically, oldest finish first, so a
            long session's memory stays flat. ``None`` (the default) keeps every call.
    """

    __slots__ = (
        "__weakref__",
        "_calls",
        "_end",
        "_finished",
        "_forgotten",
        "_fragment_listeners",
        "_keep_finished",
        "_limits",
        "_listener_error",
        "_listeners",
        "_max_id",
        "_max_name",
        "_on_ignored",
        "_phase",
        "_stream",
    )

    def __init__(
        self,
        *,
        on_ignored: IgnoredHook | None = None,
        limits: Limits | None = None,
        keep_finished: int | None = None,
    ) -> None:
        if keep_finished is not None and keep_finished < 0:
            raise ValueError(f"keep_finished must be None or >= 0, got {keep_finished!r}")
        self._limits = limits = DEFAULT_LIMITS if limits is None else limits
        self._max_id = limits.max_id_chars
        self._max_name = limits.max_name_chars
        self._calls: dict[str, _CallRecord] = {}
        # Made when first needed (a machine is made per turn, and most forget nothing):
        # the forgotten ids, oldest first, and the finished calls kept by keep_finished.
        self._forgotten: Mapping[str, None] = _NONE_FORGOTTEN
        self._keep_finished = keep_finished
        self._finished: deque[_CallRecord] | None = None
        self._phase = phase = _OPEN if limits.max_calls > 0 else _FULL
        self._stream = _STREAM_ROWS[phase]
        self._end: End | None = None
        self._on_ignored = on_ignored
        self._listeners: tuple[ChangeListener, ...] = ()
        self._fragment_listeners: tuple[ChangeListener, ...] = ()
        self._listener_error: BaseException | None = None

    # -- the change feed ----------------------------------------------------------------

    def subscribe(self, listener: ChangeListener, *, fragments: bool = False) -> None:
        """Tell ``listener`` of every change from now on (see :mod:`toolcall_tracker.changes`).

        With ``fragments=True`` it is also told of every fragment appended
        (:meth:`~toolcall_tracker.changes.ChangeListener.args_appended`). Subscribing a listener
        twice changes nothing.
        """
        if listener not in self._listeners:
            self._listeners = (*self._listeners, listener)
        if fragments and listener not in self._fragment_listeners:
            self._fragment_listeners = (*self._fragment_listeners, listener)
            for record in self._calls.values():  # every fragment must now reach _route
                record.close_lane()

    def unsubscribe(self, listener: ChangeListener) -> None:
        """Stop telling ``listener``; unknown listeners are ignored."""
        self._listeners = tuple(item for item in self._listeners if item is not listener)
        self._fragment_listeners = tuple(
            item for item in self._fragment_listeners if item is not listener
        )

    # -- applying -----------------------------------------------------------------------

    def apply(self, event: EventInput) -> None:
        """Apply one event (a model or a wire-shape mapping).

        Out-of-order, duplicate and unknown-id events are ignored and reported, never
        raised. Invalid JSON at ``ready`` puts that call in ``error``.

        Raises:
            InvalidEvent: the event is malformed; nothing changed.
        """
        # The hot path: a well-formed fragment, as a plain dict or a Delta model, that fits
        # in its call's fast lane (only a pending call has one) is appended right here,
        # through _CallRecord.append (the record's own method: only _reducer writes a
        # record); tests/test_machine_hot_path.py checks that every route does the same. Anything
        # else, or anything unusual, takes the general path, which validates, decides and
        # reports.
        cls = type(event)
        if cls is dict:
            try:  # subscripts, not .get(): a missing key (an end, a snake_case delta) is rare
                text = event["argsTextDelta"] if event["type"] == "delta" else None  # type: ignore[index]
                call_id = event["id"]  # type: ignore[index]
            except KeyError:
                text = None
        elif cls is Delta:
            call_id = event.id  # type: ignore[union-attr]
            text = event.args_text_delta  # type: ignore[union-attr]
        else:
            text = None
        if type(text) is str and type(call_id) is str:
            record = self._calls.get(call_id)
            if record is not None and record.append(text):
                return
        decoded = decode(event)
        if decoded is None:
            self._ignore(event, IgnoreReason.UNKNOWN_TYPE)
            self._raise_listener_error()  # raised from the apply that caused it
            return
        kind, call_id, payload = decoded
        self._check_sizes(kind, call_id, payload, event)
        self._route(kind, call_id, payload, event)

    # -- the EventSink methods: what adapters write through --------------------------------

    def write_start(self, call_id: str, name: str) -> None:
        """Apply ``start``: exactly ``apply(Start(id=call_id, name=name))``, without the model."""
        if (
            type(call_id) is str
            and type(name) is str
            and 0 < len(call_id) <= self._max_id
            and len(name) <= self._max_name
        ):
            self._route("start", call_id, name, None)
        else:
            self._write("start", call_id, name)  # validates, or raises InvalidEvent

    def write_delta(self, call_id: str, text: str) -> None:
        """Apply ``delta``: exactly ``apply(Delta(id=call_id, args_text_delta=text))``.

        This is the hot path of every adapter: a fragment that fits in its call's fast
        lane is appended here (``_CallRecord.append``, the record's own method); the
        rest goes to the table's delta step.
        """
        record = self._calls.get(call_id) if type(call_id) is str and type(text) is str else None
        if record is not None and record.append(text):
            return
        self._write("delta", call_id, text)

    def write_ready(self, call_id: str) -> None:
        """Apply ``ready``: exactly ``apply(Ready(id=call_id))``."""
        if type(call_id) is str and 0 < len(call_id) <= self._max_id:
            self._route("ready", call_id, None, None)
        else:
            self._write("ready", call_id, None)  # validates, or raises InvalidEvent

    def write_result(self, call_id: str, result: Any) -> None:
        """Apply ``result``: exactly ``apply(Result(id=call_id, result=result))``."""
        self._write("result", call_id, result)

    def write_error(self, call_id: str, error: Any) -> None:
        """Apply ``error``: exactly ``apply(Error(id=call_id, error=error))``."""
        self._write("error", call_id, error)

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        """Apply ``end``: exactly ``apply(End(ok=ok, reason=reason))``."""
        if type(ok) is not bool or not (reason is None or type(reason) is str):
            self.apply({"type": "end", "ok": ok, "reason": reason})  # validates and raises
            return
        end = _ENDS.get((ok, reason))
        if end is None:
            end = construct(End, {"type": "end", "reason": reason, "ok": ok}, {"ok", "reason"})
            if len(_ENDS) < _MAX_ENDS:  # the common ends are few ("source exhausted"...)
                _ENDS[ok, reason] = end
        self._route("end", None, end, end)

    # -- reading ------------------------------------------------------------------------

    def get(self, call_id: str) -> ToolCall | None:
        """The snapshot of call ``call_id``, or ``None`` if no such call has started."""
        record = self._calls.get(call_id)
        return None if record is None else record.to_call()

    def status(self, call_id: str) -> Status | None:
        """The status of call ``call_id`` (``None`` if there is no such call); no snapshot."""
        record = self._calls.get(call_id)
        return None if record is None else record.status

    def open_machine(self) -> ToolCallStateMachine:
        """The machine that takes this sink's events: the machine itself.

        Part of the sinks' small ``open_machine`` protocol: an adapter's synchronous loop
        (:func:`~toolcall_tracker.adapters.apply_stream`) asks a sink for the open machine
        behind it and writes there directly; see
        :meth:`ToolCallTracker.open_machine <toolcall_tracker.ToolCallTracker.open_machine>`.

        Returns:
            This machine.
        """
        return self

    def args_text(self, call_id: str) -> str | None:
        """The argument text call ``call_id`` holds so far, without a snapshot (``None``: no
        such call; ``""`` once a too-large text was released): adapters check final
        arguments against it instead of keeping a second copy."""
        record = self._calls.get(call_id)
        return None if record is None else record.args_text()

    def list(self) -> list[ToolCall]:
        """Snapshots of every call, in the order their ``start`` arrived."""
        return [record.to_call() for record in self._calls.values()]

    def is_forgotten(self, call_id: str) -> bool:
        """Whether ``call_id`` is a remembered forgotten id (see :meth:`forget`)."""
        return call_id in self._forgotten

    def forget(self, call_id: str) -> ToolCall | None:
        """Drop a finished call to release its memory; returns its last snapshot.

        Returns ``None`` if there is no such call. Afterwards ``get`` returns ``None``,
        ``list`` omits it, and later events for the id are ignored with reason
        ``forgotten`` (for the last ``Limits.remember_forgotten`` forgotten ids).

        Raises:
            ValueError: the call is still ``pending`` or ``running``: finish it first (an
                ``error`` event) so nobody waits for it forever.
        """
        record = self._calls.get(call_id)
        if record is None:
            return None
        if record.status not in _FINISHED:
            raise ValueError(
                f"call {call_id!r} is {record.status.value}; only done or error calls can be "
                "forgotten (apply an error event first)"
            )
        snapshot = record.to_call()
        self._drop(record)
        self._raise_listener_error()
        return snapshot

    @property
    def limits(self) -> Limits:
        """The limits this machine enforces."""
        return self._limits

    @property
    def keep_finished(self) -> int | None:
        """How many finished calls this machine keeps (``None``: every call)."""
        return self._keep_finished

    @property
    def end(self) -> End | None:
        """How the turn ended (the ``End`` event), or ``None`` while it is still open."""
        return self._end

    # -- internals --------------------------------------------------------------------

    def _write(self, kind: str, call_id: Any, payload: Any) -> None:
        """The general path of the ``write_*`` methods: validate, then route."""
        if type(call_id) is not str or not call_id:
            self.apply(wire(kind, call_id, payload))  # validates, raises InvalidEvent
            return
        if kind in _TEXT_KINDS and type(payload) is not str:
            self.apply(wire(kind, call_id, payload))
            return
        self._check_sizes(kind, call_id, payload, None)
        self._route(kind, call_id, payload, None)

    def _check_sizes(self, kind: str, call_id: Any, payload: Any, event: object) -> None:
        if call_id is not None and len(call_id) > self._max_id:
            raise InvalidEvent(
                f"invalid {kind!r} event: the id is {len(call_id)} characters long, more than "
                f"Limits.max_id_chars ({self._max_id})",
                event if event is not None else wire(kind, call_id, payload),
            )
        if kind == "start" and len(payload) > self._max_name:
            raise InvalidEvent(
                f"invalid 'start' event: the tool name is {len(payload)} characters long, "
                f"more than Limits.max_name_chars ({self._max_name})",
                event if event is not None else wire(kind, call_id, payload),
            )

    def _route(self, kind: str, call_id: Any, payload: Any, event: object) -> None:
        """Apply a validated event through the STREAM and TRANSITIONS tables.

        ``event`` is what to report if it is ignored (``None``: build the model then).
        """
        step = self._stream[kind]
        if step is _PER_CALL:
            limits = self._limits
            record = self._calls.get(call_id)
            if record is not None:
                before = record.status
                act = _STEPS[before][kind]  # reduce(record, ...), inlined: a call less
                after = act if type(act) is IgnoreReason else act(record, call_id, payload, limits)
                if type(after) is IgnoreReason:
                    self._ignore(reported(event, kind, call_id, payload), after)
                elif record.status is not before:
                    self._changed(record, before)
                elif kind == "delta" and self._fragment_listeners:
                    self._appended(call_id, payload)
            else:
                act = _STEPS[FORGOTTEN if call_id in self._forgotten else None][kind]
                after = act if type(act) is IgnoreReason else act(None, call_id, payload, limits)
                if type(after) is IgnoreReason:
                    self._ignore(reported(event, kind, call_id, payload), after)
                else:
                    self._calls[call_id] = after  # type: ignore[assignment]
                    if self._fragment_listeners:
                        after.close_lane()  # type: ignore[union-attr]
                    if len(self._calls) >= limits.max_calls and self._phase is _OPEN:
                        self._set_phase(_FULL)
                    self._changed(after, None)  # type: ignore[arg-type]
        elif step is StreamAction.END_TURN:
            self._end_turn(payload)
        else:
            self._ignore(reported(event, kind, call_id, payload), step)
        if self._listener_error is not None:
            self._raise_listener_error()

    def _set_phase(self, phase: StreamPhase) -> None:
        self._phase = phase
        self._stream = _STREAM_ROWS[phase]

    def _end_turn(self, end: End) -> None:
        self._set_phase(_ENDED)
        self._end = end
        for record in list(self._calls.values()):
            before = record.status
            reduce(record, "end", record.id, end.reason, self._limits)
            if record.status is not before:
                self._changed(record, before)
        for listener in self._listeners:
            try:
                listener.turn_ended(end)
            except BaseException as exc:  # told to every listener; re-raised after
                self._listener_failed(exc)

    def ignore(self, event: object, reason: IgnoreReason) -> None:
        """Report ``event`` as ignored for ``reason`` without applying it.

        For layers that skip input before it reaches the machine (a tracker created with
        ``skip_invalid=True`` reports a malformed event this way): it goes to the DEBUG
        log, to ``on_ignored`` and to the listeners, like any ignored event.
        """
        self._ignore(event, reason)
        self._raise_listener_error()

    def _ignore(self, event: object, reason: IgnoreReason) -> None:
        if isinstance(event, Mapping) and reason is not IgnoreReason.UNKNOWN_TYPE:
            with contextlib.suppress(Exception):  # INVALID_EVENT: report the raw input
                event = parse_event(event)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("ignored event (%s): %s", reason.value, bounded_repr(event))
        for listener in self._listeners:
            try:
                listener.event_ignored(event, reason)
            except BaseException as exc:
                self._listener_failed(exc)
        if self._on_ignored is not None:
            self._on_ignored(event, reason)

    def _drop(self, record: _CallRecord) -> None:
        del self._calls[record.id]
        forgotten = self._forgotten
        if not isinstance(forgotten, OrderedDict):
            forgotten = self._forgotten = OrderedDict()
        forgotten[record.id] = None
        if len(forgotten) > self._limits.remember_forgotten:
            forgotten.popitem(last=False)
        if self._phase is _FULL and len(self._calls) < self._limits.max_calls:
            self._set_phase(_OPEN)
        for listener in self._listeners:
            try:
                listener.call_forgotten(record.id)
            except BaseException as exc:
                self._listener_failed(exc)

    def _changed(self, record: _CallRecord, before: Status | None) -> None:
        """After a call is created or changes status: publish it, then apply retention."""
        after = record.status
        for listener in self._listeners:
            try:
                listener.call_changed(record.id, before, after)
            except BaseException as exc:
                self._listener_failed(exc)
        keep = self._keep_finished
        if keep is not None and after in _FINISHED:
            finished = self._finished
            if finished is None:
                finished = self._finished = deque()
            finished.append(record)
            while len(finished) > keep:
                oldest = finished.popleft()
                if self._calls.get(oldest.id) is oldest:
                    self._drop(oldest)

    def _appended(self, call_id: str, text: str) -> None:
        for listener in self._fragment_listeners:
            try:
                listener.args_appended(call_id, text)
            except BaseException as exc:
                self._listener_failed(exc)
        self._raise_listener_error()

    def _listener_failed(self, exc: BaseException) -> None:
        if self._listener_error is None:
            self._listener_error = exc

    def _raise_listener_error(self) -> None:
        """Re-raise the first exception a listener raised during the change just made."""
        error = self._listener_error
        if error is not None:
            self._listener_error = None
            raise error


_ENDS: dict[tuple[bool, str | None], End] = {}
"""``End`` events built by ``write_end``, kept for reuse (they are immutable)."""
_MAX_ENDS: Final = 256

_TEXT_KINDS: Final = frozenset({"start", "delta"})


def tool_call_streaming_state_machine(
    *,
    on_ignored: IgnoredHook | None = None,
    limits: Limits | None = None,
    keep_finished: int | None = None,
) -> ToolCallStateMachine:
    """Create the synchronous tool-call machine (the core contract).

    The keyword arguments are those of :class:`ToolCallStateMachine`.

    >>> machine = tool_call_streaming_state_machine()
    >>> machine.apply({"type": "start", "id": "t1", "name": "search"})
    >>> machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '{"q":'})
    >>> machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '"hi"}'})
    >>> machine.apply({"type": "ready", "id": "t1"})
    >>> call = machine.get("t1")
    >>> call.status, call.args
    (<Status.RUNNING: 'running'>, {'q': 'hi'})
    """
    return ToolCallStateMachine(on_ignored=on_ignored, limits=limits, keep_finished=keep_finished)


def _lanes_of(sink: object) -> Mapping[str, _CallRecord] | None:
    """The records by id of ``sink`` if it is a machine (exactly: a subclass may override
    its writes), for an adapter's call table to append through their fast lanes (see
    ``_CallRecord.append``); ``None`` for any other sink (a tracker, a collector, a sink of
    the user's: their fragments take ``write_delta``)."""
    if type(sink) is ToolCallStateMachine:
        return sink._calls
    return None
