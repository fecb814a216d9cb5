"""The AI SDK UI message stream drawn from a change feed (private; the public name is
re-exported by :mod:`toolcall_tracker.adapters.ai_sdk`): :class:`AISDKListener`.

A listener reads one machine or tracker: one model turn. A response of several turns
(steps) is a chain of listeners, one per turn, made by :meth:`AISDKListener.next_step`;
they share one :class:`_Response` (where the parts go, the step number, the ids earlier
steps used), so each keeps writing its own turn's late outputs under that turn's ids
while the next turn streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...calls import Status, ToolCall
from ...changes import ChangeListener
from ...events import End
from ...failures import IncompleteArguments
from ._encoder import ProgressLike
from ._ids import AISDKStreamIds, fresh_id
from ._parts import (
    _abandoned_text,
    _approval_part,
    _available_part,
    _delta_part,
    _denied,
    _end_parts,
    _error_text,
    _input_error_part,
    _output_error_part,
    _output_part,
    _preliminary_part,
    _start_part,
)

__all__ = ["AISDKListener"]


class _CallReader(Protocol):
    """What :class:`AISDKListener` reads calls from: a machine or a tracker."""

    def get(self, call_id: str) -> ToolCall | None: ...

    def status(self, call_id: str) -> Status | None: ...

    @property
    def end(self) -> End | None: ...


class _Response:
    """What the listeners of one response share."""

    __slots__ = ("finished", "on_part", "parts", "step", "steps", "used")

    def __init__(
        self, on_part: Callable[[dict[str, Any]], None] | None, steps: bool, used: frozenset[str]
    ) -> None:
        self.on_part = on_part
        self.parts: list[dict[str, Any]] = []
        self.steps = steps
        self.step = 0
        self.used: set[str] = set(used)  # every toolCallId written (or continued)
        self.finished = False

    def emit(self, part: dict[str, Any]) -> None:
        if self.on_part is None:
            self.parts.append(part)
        else:
            self.on_part(part)


class AISDKListener(ChangeListener):
    """:class:`AISDKEncoder`'s parts, drawn from a machine's or tracker's change feed.

    Subscribe it with ``fragments=True`` to the machine or tracker it reads::

        listener = AISDKListener(tracker)
        tracker.subscribe(listener, fragments=True)
        ...  # consume the stream, run tools
        for part in listener.take():
            yield to_sse(part)

    It produces the parts :meth:`AISDKEncoder.encode` produces from the events applied to
    that tracker, in the same order, without keeping any argument text (it reads the
    tracker's calls instead). Parts are kept until :meth:`take`, or passed to
    ``on_part`` as they are made (and then not kept).

    Several model turns in one response (steps): build the first turn's listener with
    ``steps=True``. A turn's end then writes nothing; :meth:`next_step` writes
    ``finish-step`` and ``start-step`` and returns the listener of the next turn's
    tracker (the ids stay distinct across steps, as :meth:`AISDKEncoder.next_step` keeps
    them), and :meth:`finish` ends the response after the last turn's outputs::

        listener = AISDKListener(first, on_part=send, steps=True)
        first.subscribe(listener, fragments=True)
        ...  # the first turn and its tools
        listener = listener.next_step(second)
        second.subscribe(listener, fragments=True)
        ...  # the second turn and its tools
        listener.finish()

    Args:
        calls: the machine or tracker the listener is subscribed to.
        on_part: called with each part as it is made, from inside the change; it must not
            apply events to the tracker.
        steps: the turn's end writes nothing; :meth:`finish` writes the end of the
            response (``finish``, after ``finish-step`` when there were several steps).
            Without it, the turn's end writes ``finish`` at once (after ``error`` when the
            turn did not end ok).
        continues: the ids of an earlier response whose assistant message this one
            continues (as :class:`AISDKEncoder`'s): no call takes one of them.
    """

    __slots__ = ("_calls", "_next", "_response", "_wires")

    def __init__(
        self,
        calls: _CallReader,
        on_part: Callable[[dict[str, Any]], None] | None = None,
        *,
        steps: bool = False,
        continues: AISDKStreamIds | None = None,
    ) -> None:
        self._calls = calls
        used = frozenset() if continues is None else continues.used
        self._response = _Response(on_part, steps, used)
        self._wires: dict[str, str] = {}  # call id -> toolCallId, for this turn's calls
        self._next: AISDKListener | None = None

    @classmethod
    def _following(cls, calls: _CallReader, response: _Response) -> AISDKListener:
        """The listener of a later step of ``response``."""
        follower = cls(calls)
        follower._response = response
        return follower

    def take(self) -> list[dict[str, Any]]:
        """The parts made since the last call (always empty with ``on_part``); the
        listeners of one response's steps share them."""
        response = self._response
        parts = response.parts
        response.parts = []
        return parts

    def next_step(self, calls: _CallReader) -> AISDKListener:
        """Write ``finish-step`` and ``start-step`` after this listener's turn, and return
        the listener for the next turn's machine or tracker ``calls`` (subscribe it with
        ``fragments=True``). A call of the next turn whose id an earlier step used is
        written ``<id>~<step>``, as by :meth:`AISDKEncoder.next_step`. This listener
        keeps writing its own turn's outputs (under its ids) as they come.

        Raises:
            RuntimeError: the listener was not built with ``steps=True``, its turn has
                not ended, or it already has a next step.
        """
        self._check_last("next_step()")
        response = self._response
        response.step += 1
        follower = self._next = AISDKListener._following(calls, response)
        response.emit({"type": "finish-step"})
        response.emit({"type": "start-step"})
        return follower

    def finish(self) -> None:
        """Write the end of the response, after the last turn's outputs: ``finish`` with
        the turn's ``finishReason`` (after ``error`` when it did not end ok), preceded by
        ``finish-step`` when the response had several steps.

        Raises:
            RuntimeError: the listener was not built with ``steps=True``, its turn has
                not ended, it has a next step (finish on the last one), or the response
                was finished already.
        """
        end = self._check_last("finish()")
        response = self._response
        response.finished = True
        for part in _end_parts(end, steps=response.step > 0):
            response.emit(part)

    def stream_ids(self) -> AISDKStreamIds:
        """The ids of this turn's calls (and every id the response used), for a later
        response that continues the assistant message: ``AISDKEncoder(continues=...)``
        (see :meth:`AISDKEncoder.stream_ids`). Take it from the last step's listener."""
        return AISDKStreamIds(calls=dict(self._wires), used=frozenset(self._response.used))

    def _check_last(self, what: str) -> End:
        """The ended turn of the response's last listener, or the misuse named."""
        if not self._response.steps:
            raise RuntimeError(
                f"{what} needs a listener built with AISDKListener(calls, steps=True); "
                "without it, the turn's end writes finish at once"
            )
        if self._next is not None:
            raise RuntimeError(f"{what}: this step has a next step already; use the last one")
        if self._response.finished:
            raise RuntimeError(f"{what}: the response was finished already")
        end = self._calls.end
        if end is None:
            raise RuntimeError(f"{what}: the turn has not ended; apply its End event first")
        return end

    def _wire(self, call_id: str) -> str:
        return self._wires.get(call_id, call_id)

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        """Emit the parts of one transition (see :class:`AISDKEncoder`)."""
        call = self._calls.get(call_id)
        if call is None:
            return
        emit = self._response.emit
        if before is None:
            response = self._response
            wire = self._wires[call_id] = fresh_id(call_id, response.step, response.used)
            response.used.add(wire)
            emit(_start_part(wire, call.name))
            return
        wire = self._wire(call_id)
        if before is Status.PENDING:
            if after is Status.RUNNING:
                emit(_available_part(wire, call.name, call.args))
            elif after is Status.ERROR:
                error = call.error
                end = self._calls.end
                if end is not None and isinstance(error, IncompleteArguments):
                    text = _abandoned_text(end.reason)  # abandoned by the turn's end
                else:
                    text = _error_text(error)
                emit(_input_error_part(wire, call.name, call.args_text, text))
        elif before is Status.RUNNING:
            if after is Status.DONE:
                emit(_output_part(wire, call.result))
            elif after is Status.ERROR and _denied(call.error):
                emit({"type": "tool-output-denied", "toolCallId": wire})
            elif after is Status.ERROR:
                emit(_output_error_part(wire, _error_text(call.error)))

    def progress(self, update: ProgressLike) -> None:
        """Emit a preliminary ``tool-output-available`` for a runner's progress update.

        Pass updates from ``RunControl(on_progress=listener.progress)``; as
        :meth:`AISDKEncoder.progress`, only while the call is running.
        """
        if self._calls.status(update.call_id) is Status.RUNNING:
            self._response.emit(_preliminary_part(self._wire(update.call_id), update.value))

    def approval_request(self, call_id: str, approval_id: str) -> None:
        """Emit a ``tool-approval-request`` for a running call (as
        :meth:`AISDKEncoder.approval_request`), e.g. for each call of ``control.pending``
        after a run with ``RunControl(defer_approvals=True)``."""
        if self._calls.status(call_id) is Status.RUNNING:
            self._response.emit(_approval_part(self._wire(call_id), approval_id))

    def args_appended(self, call_id: str, text: str) -> None:
        """Emit a ``tool-input-delta``."""
        self._response.emit(_delta_part(self._wire(call_id), text))

    def turn_ended(self, end: End) -> None:
        """Emit ``finish`` (after ``error`` when the turn did not end ok); with
        ``steps=True``, nothing (:meth:`next_step` or :meth:`finish` follows)."""
        if not self._response.steps:
            for part in _end_parts(end):
                self._response.emit(part)
