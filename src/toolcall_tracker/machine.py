"""The synchronous machine: the reducer applied per id, plus the stream's phase.

This is the seed contract: ``tool_call_streaming_state_machine()`` returns a
:class:`ToolCallStateMachine` with ``apply(event)``, ``get(id)`` and ``list()``. It does no
I/O and never waits; :class:`~toolcall_tracker.ToolCallTracker` builds waiting on top.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .events import End, EventInput, ToolCall, _decode, parse_event
from .reducer import STREAM, IgnoreReason, StreamAction, _CallRecord, reduce

__all__ = ["IgnoredHook", "ToolCallStateMachine", "tool_call_streaming_state_machine"]

logger: Final = logging.getLogger("toolcall_tracker")

IgnoredHook: TypeAlias = Callable[[Any, IgnoreReason], None]
"""``on_ignored(event, reason)``: called for every ignored event.

``event`` is the event model (for a mapping of unknown ``type``, the mapping itself);
``reason`` is an :class:`~toolcall_tracker.IgnoreReason`.
"""

_PER_CALL: Final = StreamAction.PER_CALL


class ToolCallStateMachine:
    """Tracks every call of one model turn; synchronous and sans-IO.

    Args:
        on_ignored: called as ``on_ignored(event, reason)`` for each ignored event (a
            duplicate ``start``, a ``delta`` for an unknown id, ...). Ignored events are
            also logged at DEBUG on the ``toolcall_tracker`` logger. Nothing is printed.
    """

    def __init__(self, *, on_ignored: IgnoredHook | None = None) -> None:
        self._calls: dict[str, _CallRecord] = {}
        self._phase = "open"
        self._end: End | None = None
        self._on_ignored = on_ignored

    def apply(self, event: EventInput) -> None:
        """Apply one event (a model or a wire-shape mapping).

        Out-of-order, duplicate and unknown-id events are ignored and reported, never
        raised. Invalid JSON at ``ready`` puts that call in ``error``.

        Raises:
            InvalidEvent: the event is malformed; nothing changed.
        """
        decoded = _decode(event)
        if decoded is None:
            self._ignore(event, IgnoreReason.UNKNOWN_TYPE)
            return
        kind, call_id, payload = decoded
        step = STREAM[self._phase][kind]
        if step is _PER_CALL:
            record = self._calls.get(call_id)
            before = None if record is None else record.status
            after = reduce(record, kind, call_id, payload)
            if isinstance(after, IgnoreReason):
                self._ignore(event, after)
            elif record is None:
                self._calls[call_id] = after
                self._changed(after)
            elif after.status is not before:
                self._changed(record)
        elif step is StreamAction.END_TURN:
            self._end_turn(payload)
        else:
            self._ignore(event, step)

    def get(self, call_id: str) -> ToolCall | None:
        """The snapshot of call ``call_id``, or ``None`` if no such call has started."""
        record = self._calls.get(call_id)
        return None if record is None else record.to_call()

    def list(self) -> list[ToolCall]:
        """Snapshots of every call, in the order their ``start`` arrived."""
        return [record.to_call() for record in self._calls.values()]

    @property
    def end(self) -> End | None:
        """How the turn ended (the ``End`` event), or ``None`` while it is still open."""
        return self._end

    # -- internals --------------------------------------------------------------------

    def _end_turn(self, end: End) -> None:
        self._phase = "ended"
        self._end = end
        for record in list(self._calls.values()):
            before = record.status
            reduce(record, "end", record.id, end.reason)
            if record.status is not before:
                self._changed(record)
        self._turn_ended()

    def _ignore(self, event: object, reason: IgnoreReason) -> None:
        if isinstance(event, Mapping) and reason is not IgnoreReason.UNKNOWN_TYPE:
            with contextlib.suppress(Exception):  # INVALID_EVENT: report the raw input
                event = parse_event(event)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("ignored event (%s): %r", reason.value, event)
        if self._on_ignored is not None:
            self._on_ignored(event, reason)

    def _changed(self, record: _CallRecord) -> None:
        """Called after a call is created or changes status. Subclasses wake waiters."""

    def _turn_ended(self) -> None:
        """Called once, after the turn ended and every call saw the end."""


def tool_call_streaming_state_machine(
    *, on_ignored: IgnoredHook | None = None
) -> ToolCallStateMachine:
    """Create the synchronous tool-call machine (the seed contract).

    >>> machine = tool_call_streaming_state_machine()
    >>> machine.apply({"type": "start", "id": "t1", "name": "search"})
    >>> machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '{"q":'})
    >>> machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '"hi"}'})
    >>> machine.apply({"type": "ready", "id": "t1"})
    >>> call = machine.get("t1")
    >>> call.status, call.args
    (<Status.RUNNING: 'running'>, {'q': 'hi'})
    """
    return ToolCallStateMachine(on_ignored=on_ignored)
