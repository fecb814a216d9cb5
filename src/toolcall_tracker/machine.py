"""The synchronous machine: the reducer applied per id, plus the stream's phase.

This is the seed contract: ``tool_call_streaming_state_machine()`` returns a
:class:`ToolCallStateMachine` with ``apply(event)``, ``get(id)`` and ``list()``. It does no
I/O and never waits; :class:`~toolcall_tracker.ToolCallTracker` builds waiting on top.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .errors import InvalidEvent, TrackerClosed
from .events import Delta, End, EventInput, Status, ToolCall, _decode, _short, parse_event
from .limits import DEFAULT_LIMITS, Limits
from .reducer import _STEPS, STREAM, IgnoreReason, StreamAction, _CallRecord, reduce

__all__ = ["IgnoredHook", "ToolCallStateMachine", "tool_call_streaming_state_machine"]

logger: Final = logging.getLogger("toolcall_tracker")

IgnoredHook: TypeAlias = Callable[[Any, IgnoreReason], None]
"""``on_ignored(event, reason)``: called for every ignored event.

``event`` is the event model (for a mapping of unknown ``type``, the mapping itself);
``reason`` is an :class:`~toolcall_tracker.IgnoreReason`.
"""

_PER_CALL: Final = StreamAction.PER_CALL
_MISSING: Final[Any] = object()
_UNKNOWN_TYPE: Final[Any] = object()
_UNKNOWN: Final = ("unknown", None, None)
# STREAM with one more column: a type this library does not know (reported in _decode).
_STREAM_ROWS: Final = {phase: {**row, "unknown": _UNKNOWN_TYPE} for phase, row in STREAM.items()}
_DELTA_STEPS: Final = {state: row["delta"] for state, row in _STEPS.items()}
_FINISHED: Final = (Status.DONE, Status.ERROR)


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
        self._forgotten: OrderedDict[str, None] = OrderedDict()
        self._keep_finished = keep_finished
        self._finished: deque[_CallRecord] = deque()
        self._set_phase("open" if limits.max_calls > 0 else "full")
        self._end: End | None = None
        self._on_ignored = on_ignored

    def apply(self, event: EventInput) -> None:
        """Apply one event (a model or a wire-shape mapping).

        Out-of-order, duplicate and unknown-id events are ignored and reported, never
        raised. Invalid JSON at ``ready`` puts that call in ``error``.

        Raises:
            InvalidEvent: the event is malformed; nothing changed.
            TrackerClosed: (async tracker only) the tracker was closed.
        """
        # The hot path: a well-formed fragment for a pending call, as a plain dict or a
        # Delta model, goes straight to the table's delta step. Anything else, or anything
        # unusual, takes the general path, which validates, decides and reports.
        cls = type(event)
        if cls is dict:
            if event.get("type") == "delta":  # type: ignore[union-attr]
                call_id = event.get("id")  # type: ignore[union-attr]
                payload = event.get("argsTextDelta", _MISSING)  # type: ignore[union-attr]
                if payload is _MISSING:
                    payload = event.get("args_text_delta")  # type: ignore[union-attr]
                if (
                    type(call_id) is str
                    and type(payload) is str
                    and self._fast_delta(call_id, payload)
                ):
                    return
        elif cls is Delta:
            call_id = event.id  # type: ignore[union-attr]
            payload = event.args_text_delta  # type: ignore[union-attr]
            if type(call_id) is str and type(payload) is str and self._fast_delta(call_id, payload):
                return
        kind, call_id, payload = self._decode(event)
        step = self._stream[kind]
        if step is _PER_CALL:
            record = self._calls.get(call_id)
            if record is not None:
                before = record.status
                after = reduce(record, kind, call_id, payload, self._limits)
                if type(after) is IgnoreReason:
                    self._ignore(event, after)
                elif record.status is not before:
                    self._changed(record)
                return
            after = reduce(
                None, kind, call_id, payload, self._limits, forgotten=call_id in self._forgotten
            )
            if type(after) is IgnoreReason:
                self._ignore(event, after)
            else:
                self._calls[call_id] = after  # type: ignore[assignment]
                if len(self._calls) >= self._limits.max_calls and self._phase == "open":
                    self._set_phase("full")
                self._changed(after)  # type: ignore[arg-type]
        elif step is StreamAction.END_TURN:
            self._end_turn(payload)
        elif step is StreamAction.REJECT:
            raise TrackerClosed(
                "this tracker is closed and accepts no more events; use a new tracker "
                "for the next turn"
            )
        elif step is not _UNKNOWN_TYPE:
            self._ignore(event, step)

    def _fast_delta(self, call_id: str, text: str) -> bool:
        """The hot path: apply ``delta(call_id, text)`` if it is the common case.

        Used by :meth:`apply` for a hand-checked dict or ``Delta`` fragment and, as the
        adapters' fast lane (``adapters._base._FastLane``), for fragments an adapter read
        from a provider item, so no ``Delta`` model is built for them. ``text`` must be a
        ``str``. If a call ``call_id`` exists and the table's ``delta`` step for its state
        is an action, that step is applied and it returns ``True``. In every other case (no
        such call, not pending, the turn ended, the tracker closed) it changes nothing and
        returns ``False``, and the caller takes the ordinary path, which decides and
        reports. A record only exists for an id that passed validation at its ``start``.
        """
        record = self._calls.get(call_id)
        if record is None or not self._deltas_route:
            return False
        before = record.status
        do = _DELTA_STEPS[before]
        if type(do) is IgnoreReason:
            return False
        do(record, call_id, text, self._limits)
        if record.status is not before:
            self._changed(record)
        return True

    def _decode(self, event: object) -> tuple[str, Any, Any]:
        """Validate ``event``; ``("unknown", ...)`` for an unknown type (already reported)."""
        decoded = _decode(event)
        if decoded is None:
            self._ignore(event, IgnoreReason.UNKNOWN_TYPE)
            return _UNKNOWN
        kind, call_id, payload = decoded
        if call_id is not None and len(call_id) > self._max_id:
            raise InvalidEvent(
                f"invalid {kind!r} event: the id is {len(call_id)} characters long, more than "
                f"Limits.max_id_chars ({self._max_id})",
                event,
            )
        if kind == "start" and len(payload) > self._max_name:
            raise InvalidEvent(
                f"invalid 'start' event: the tool name is {len(payload)} characters long, "
                f"more than Limits.max_name_chars ({self._max_name})",
                event,
            )
        return decoded

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        self._stream = _STREAM_ROWS[phase]
        self._deltas_route = self._stream["delta"] is _PER_CALL

    def get(self, call_id: str) -> ToolCall | None:
        """The snapshot of call ``call_id``, or ``None`` if no such call has started."""
        record = self._calls.get(call_id)
        return None if record is None else record.to_call()

    def list(self) -> list[ToolCall]:
        """Snapshots of every call, in the order their ``start`` arrived."""
        return [record.to_call() for record in self._calls.values()]

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
        self._drop(record)
        return record.to_call()

    @property
    def limits(self) -> Limits:
        """The limits this machine enforces."""
        return self._limits

    @property
    def end(self) -> End | None:
        """How the turn ended (the ``End`` event), or ``None`` while it is still open."""
        return self._end

    # -- internals --------------------------------------------------------------------

    def _end_turn(self, end: End) -> None:
        self._set_phase("ended")
        self._end = end
        for record in list(self._calls.values()):
            before = record.status
            reduce(record, "end", record.id, end.reason, self._limits)
            if record.status is not before:
                self._changed(record)
        self._turn_ended()

    def _ignore(self, event: object, reason: IgnoreReason) -> None:
        if isinstance(event, Mapping) and reason is not IgnoreReason.UNKNOWN_TYPE:
            with contextlib.suppress(Exception):  # INVALID_EVENT: report the raw input
                event = parse_event(event)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("ignored event (%s): %s", reason.value, _short(event))
        if self._on_ignored is not None:
            self._on_ignored(event, reason)

    def _drop(self, record: _CallRecord) -> None:
        del self._calls[record.id]
        forgotten = self._forgotten
        forgotten[record.id] = None
        if len(forgotten) > self._limits.remember_forgotten:
            forgotten.popitem(last=False)
        if self._phase == "full" and len(self._calls) < self._limits.max_calls:
            self._set_phase("open")

    def _changed(self, record: _CallRecord) -> None:
        """Called after a call is created or changes status. Applies the retention policy.

        Subclasses extend it to wake waiters, and call it last.
        """
        keep = self._keep_finished
        if keep is not None and record.status in _FINISHED:
            finished = self._finished
            finished.append(record)
            while len(finished) > keep:
                oldest = finished.popleft()
                if self._calls.get(oldest.id) is oldest:
                    self._drop(oldest)

    def _turn_ended(self) -> None:
        """Called once, after the turn ended and every call saw the end."""


def tool_call_streaming_state_machine(
    *,
    on_ignored: IgnoredHook | None = None,
    limits: Limits | None = None,
    keep_finished: int | None = None,
) -> ToolCallStateMachine:
    """Create the synchronous tool-call machine (the seed contract).

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
