"""The writing direction of the AI SDK UI message stream (private; public names are
re-exported by :mod:`toolcall_tracker.adapters.ai_sdk`): :class:`AISDKEncoder`,
:class:`AISDKListener`, :func:`encode_ai_sdk`, :func:`to_sse`, and the text buffer both
directions share.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any, Final, Protocol

from .._json import _ArgumentsError, parse_json
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..errors import ArgumentsTooLarge, IncompleteArguments
from ..events import Delta, End, Error, EventInput, Ready, Result, Start, parse_event
from ..limits import DEFAULT_LIMITS, Limits
from ._ai_sdk_parts import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    _abandoned_text,
    _approval_part,
    _available_part,
    _delta_part,
    _end_parts,
    _error_text,
    _input_error_part,
    _output_error_part,
    _output_part,
    _preliminary_part,
    _start_part,
    to_sse,
)
from ._common import _short

__all__ = [
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "AISDKEncoder",
    "AISDKListener",
    "encode_ai_sdk",
    "to_sse",
]

_STREAMING, _READY, _FINISHED = 0, 1, 2
_COLLAPSE: Final = 256


class _Text:
    """A call's argument text, kept only up to a limit (``None`` once it outgrew it).

    Fragments are joined every 256, so that many tiny fragments cost no more than their
    characters.
    """

    __slots__ = ("_chunks", "_parts", "blank", "size")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._parts: list[str] = []
        self.size = 0
        self.blank = True  # no non-whitespace character yet

    def add(self, text: str, limit: int) -> bool:
        """Append ``text``; ``False`` (and the text is released) past ``limit`` characters."""
        self.size += len(text)
        if self.size > limit:
            self._chunks = []
            self._parts = []
            return False
        if self.blank and text.strip(" \t\n\r"):
            self.blank = False
        parts = self._parts
        parts.append(text)
        if len(parts) >= _COLLAPSE:
            self._chunks.append("".join(parts))
            self._parts = []
        return True

    def text(self) -> str:
        if self._parts:
            self._chunks.append("".join(self._parts))
            self._parts = []
        chunks = self._chunks
        if len(chunks) > 1:
            self._chunks = chunks = ["".join(chunks)]
        return chunks[0] if chunks else ""


# -- writing ---------------------------------------------------------------------------


class ProgressLike(Protocol):
    """What the encoder reads of a progress update (a runner's ``ProgressUpdate``)."""

    @property
    def call_id(self) -> str: ...

    @property
    def value(self) -> Any: ...


class _Encoded:
    __slots__ = ("name", "state", "text", "wire")

    def __init__(self, name: str, wire: str) -> None:
        self.name = name
        self.wire = wire  # its toolCallId in the stream
        self.text = _Text()
        self.state = _STREAMING


class AISDKEncoder:
    """Turn tracker events into AI SDK UI message stream parts (see the module doc).

    Keep one encoder per response stream and pass it every event you apply to the
    tracker, in the same order::

        encoder = AISDKEncoder()
        for part in encoder.start():
            yield to_sse(part)
        ...
        tracker.apply(event)
        for part in encoder.encode(event):
            yield to_sse(part)
        ...
        yield SSE_DONE

    To draw the parts from a tracker's change feed instead of passing events, use
    :class:`AISDKListener`. The parts carry only the fields the AI SDK's schema defines,
    so strict clients accept them.

    The encoder keeps a call's text (to parse it at ``Ready``) only up to
    ``limits.max_args_chars`` characters: a call whose text outgrows it ends with a
    ``tool-input-error``, as the tracker fails it (``ArgumentsTooLarge``).

    Args:
        limits: the tracker's limits (default: :data:`~toolcall_tracker.DEFAULT_LIMITS`).
    """

    __slots__ = ("_calls", "_ended", "_limits", "_step", "_used")

    def __init__(self, *, limits: Limits | None = None) -> None:
        self._calls: dict[str, _Encoded] = {}
        self._ended = False
        self._limits = DEFAULT_LIMITS if limits is None else limits
        self._used: set[str] = set()  # the toolCallIds of earlier steps
        self._step = 0

    def next_step(self, end: EventInput) -> list[dict[str, Any]]:
        """End the model's turn ``end`` (an :class:`~toolcall_tracker.End`) as a step, and
        open the next step of the same response: a second turn's calls follow.

        Returns the parts of that end without ``finish`` (a ``tool-input-error`` for each
        call still streaming), then ``finish-step`` and ``start-step``. The next turn's
        events go to :meth:`encode` as before; a call id an earlier step used (a minted
        ``ollama-call-0``, say) is renamed ``<id>~<step>`` in the stream, so that
        ``useChat`` never merges two calls.
        """
        model = parse_event(end)
        if not isinstance(model, End):
            raise TypeError(f"next_step() takes the turn's End event, not {_short(end)}")
        parts = [] if self._ended else self._abandon(model)
        self._used.update(call.wire for call in self._calls.values())
        self._calls = {}
        self._ended = False
        self._step += 1
        return [*parts, {"type": "finish-step"}, {"type": "start-step"}]

    def approval_request(self, call_id: str, approval_id: str) -> list[dict[str, Any]]:
        """A ``tool-approval-request`` for a call whose input is available (from a runner's
        ``RunControl.approval_requests()``): ``useChat`` shows it as awaiting approval, not
        as a browser-side tool. The client's answer comes back in its next request, with
        ``approval_id``."""
        call = self._calls.get(call_id)
        if call is None or call.state != _READY:
            return []
        return [
            {"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call.wire}
        ]

    def denied(self, call_id: str) -> list[dict[str, Any]]:
        """A ``tool-output-denied`` for a call awaiting approval that was denied (an
        ``Error`` event carrying :class:`~toolcall_tracker.ApprovalDenied` writes it too)."""
        call = self._calls.get(call_id)
        if call is None or call.state != _READY:
            return []
        call.state = _FINISHED
        return [{"type": "tool-output-denied", "toolCallId": call.wire}]

    def outcomes(self, calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
        """The outputs of finished calls announced in an earlier response: the calls
        ``runner.resume(...)`` returns, for the response that answers the client's
        approvals. Done: ``tool-output-available``; denied: ``tool-output-denied``; failed:
        ``tool-output-error``; calls not finished give no part."""
        parts: list[dict[str, Any]] = []
        for call in calls:
            if call.status is Status.DONE:
                parts.append(_output_part(call.id, call.result))
            elif call.status is Status.ERROR and _denied(call.error):
                parts.append({"type": "tool-output-denied", "toolCallId": call.id})
            elif call.status is Status.ERROR:
                parts.append(_output_error_part(call.id, _error_text(call.error)))
        return parts

    def _fresh(self, call_id: str) -> str:
        wire = f"{call_id}~{self._step}"
        while wire in self._used:
            wire += "~"
        return wire

    def start(self, message_id: str | None = None) -> list[dict[str, Any]]:
        """The parts that open the assistant message: ``{"type": "start"}``.

        ``message_id``, if given, becomes the message's ``messageId`` in the client.
        """
        part: dict[str, Any] = {"type": "start"}
        if message_id is not None:
            part["messageId"] = message_id
        return [part]

    def encode(self, event: EventInput) -> list[dict[str, Any]]:
        """The parts one tracker event implies (possibly none).

        Raises:
            InvalidEvent: ``event`` is malformed (as ``tracker.apply`` would raise).
        """
        model = parse_event(event)
        if model is None:
            return []
        if isinstance(model, Delta):
            return self._delta(model.id, model.args_text_delta)
        if isinstance(model, Start):
            if model.id in self._calls or self._ended:
                return []
            wire = model.id
            if wire in self._used:  # announced in an earlier step: a name of its own
                wire = self._fresh(wire)
            self._calls[model.id] = _Encoded(model.name, wire)
            return [_start_part(wire, model.name)]
        if isinstance(model, Ready):
            return self._ready(model.id)
        if isinstance(model, Result):
            call = self._calls.get(model.id)
            if call is None or call.state != _READY:
                return []
            call.state = _FINISHED
            return [_output_part(call.wire, model.result)]
        if isinstance(model, Error):
            if _denied(model.error):
                return self.denied(model.id)
            return self._error(model.id, _error_text(model.error))
        return self._end(model)

    def progress(self, update: ProgressLike) -> list[dict[str, Any]]:
        """A preliminary ``tool-output-available`` part for one progress update.

        ``update`` is a runner's :class:`~toolcall_tracker.ProgressUpdate` (anything with
        ``call_id`` and ``value``): pass them from ``RunControl(on_progress=...)``. Parts
        come only for a call whose input is available and whose output is not, so a late
        update never follows the final output::

            {"type": "tool-output-available", "toolCallId": ..., "output": ...,
             "preliminary": true}
        """
        call = self._calls.get(update.call_id)
        if call is None or call.state != _READY:
            return []
        return [_preliminary_part(call.wire, update.value)]

    def encode_sse(self, event: EventInput) -> str:
        """:meth:`encode`, framed: the ``data:`` lines of the parts (``""`` for none)."""
        return "".join(to_sse(part) for part in self.encode(event))

    def _delta(self, call_id: str, text: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state != _STREAMING or self._ended:
            return []
        limit = self._limits.max_args_chars
        if not call.text.add(text, limit):
            call.state = _FINISHED
            failure = ArgumentsTooLarge(
                message=f"the arguments of call {call_id!r} ({call.name}) exceeded "
                f"{limit} characters (Limits.max_args_chars); the text received was discarded",
                limit=limit,
                received=call.text.size,
            )
            call.text = _Text()
            return [_input_error_part(call.wire, call.name, "", failure.message)]
        return [_delta_part(call.wire, text)]

    def _ready(self, call_id: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state != _STREAMING or self._ended:
            return []
        text = call.text.text()
        try:
            value = parse_json(text)
        except _ArgumentsError as exc:
            call.state = _FINISHED
            call.text = _Text()
            return [_input_error_part(call.wire, call.name, text, exc.value.message)]
        call.state = _READY
        call.text = _Text()
        return [_available_part(call.wire, call.name, value)]

    def _error(self, call_id: str, text: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state == _FINISHED:
            return []
        streaming = call.state == _STREAMING
        call.state = _FINISHED
        if streaming:
            args = call.text.text()
            call.text = _Text()
            return [_input_error_part(call.wire, call.name, args, text)]
        return [_output_error_part(call.wire, text)]

    def _end(self, end: End) -> list[dict[str, Any]]:
        if self._ended:
            return []
        return self._abandon(end) + _end_parts(end, steps=self._step > 0)

    def _abandon(self, end: End) -> list[dict[str, Any]]:
        """End the turn: a ``tool-input-error`` for each call still streaming."""
        self._ended = True
        parts: list[dict[str, Any]] = []
        for call in self._calls.values():
            if call.state == _STREAMING:
                call.state = _FINISHED
                args = call.text.text()
                call.text = _Text()
                parts.append(
                    _input_error_part(call.wire, call.name, args, _abandoned_text(end.reason))
                )
        return parts


def _denied(error: Any) -> bool:
    """Whether a call's error is a denied approval (the runner's ``ApprovalDenied``)."""
    return getattr(error, "kind", None) == "approval_denied"


class _CallReader(Protocol):
    """What :class:`AISDKListener` reads calls from: a machine or a tracker."""

    def get(self, call_id: str) -> ToolCall | None: ...

    def status(self, call_id: str) -> Status | None: ...

    @property
    def end(self) -> End | None: ...


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

    Args:
        calls: the machine or tracker the listener is subscribed to.
        on_part: called with each part as it is made, from inside the change; it must not
            apply events to the tracker.
    """

    __slots__ = ("_calls", "_on_part", "_parts")

    def __init__(
        self, calls: _CallReader, on_part: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self._calls = calls
        self._on_part = on_part
        self._parts: list[dict[str, Any]] = []

    def take(self) -> list[dict[str, Any]]:
        """The parts made since the last call (always empty with ``on_part``)."""
        parts = self._parts
        self._parts = []
        return parts

    def _emit(self, part: dict[str, Any]) -> None:
        if self._on_part is None:
            self._parts.append(part)
        else:
            self._on_part(part)

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        """Emit the parts of one transition (see :class:`AISDKEncoder`)."""
        call = self._calls.get(call_id)
        if call is None:
            return
        if before is None:
            self._emit(_start_part(call_id, call.name))
        elif before is Status.PENDING:
            if after is Status.RUNNING:
                self._emit(_available_part(call_id, call.name, call.args))
            elif after is Status.ERROR:
                error = call.error
                end = self._calls.end
                if end is not None and isinstance(error, IncompleteArguments):
                    text = _abandoned_text(end.reason)  # abandoned by the turn's end
                else:
                    text = _error_text(error)
                self._emit(_input_error_part(call_id, call.name, call.args_text, text))
        elif before is Status.RUNNING:
            if after is Status.DONE:
                self._emit(_output_part(call_id, call.result))
            elif after is Status.ERROR and _denied(call.error):
                self._emit({"type": "tool-output-denied", "toolCallId": call_id})
            elif after is Status.ERROR:
                self._emit(_output_error_part(call_id, _error_text(call.error)))

    def progress(self, update: ProgressLike) -> None:
        """Emit a preliminary ``tool-output-available`` for a runner's progress update.

        Pass updates from ``RunControl(on_progress=listener.progress)``; as
        :meth:`AISDKEncoder.progress`, only while the call is running.
        """
        if self._calls.status(update.call_id) is Status.RUNNING:
            self._emit(_preliminary_part(update.call_id, update.value))

    def approval_request(self, call_id: str, approval_id: str) -> None:
        """Emit a ``tool-approval-request`` for a running call (as
        :meth:`AISDKEncoder.approval_request`), e.g. for each call of ``control.pending``
        after a run with ``RunControl(defer_approvals=True)``."""
        if self._calls.status(call_id) is Status.RUNNING:
            self._emit(_approval_part(call_id, approval_id))

    def args_appended(self, call_id: str, text: str) -> None:
        """Emit a ``tool-input-delta``."""
        self._emit(_delta_part(call_id, text))

    def turn_ended(self, end: End) -> None:
        """Emit ``finish`` (after ``error`` when the turn did not end ok)."""
        for part in _end_parts(end):
            self._emit(part)


async def encode_ai_sdk(
    events: AsyncIterable[EventInput], *, message_id: str | None = None
) -> AsyncIterator[str]:
    """Serve an event stream to ``useChat``: yields the SSE text of every part.

    Yields the ``start`` part, the parts of each event (see :class:`AISDKEncoder`), and
    finally ``data: [DONE]``. Return it as the body of a streaming response with
    :data:`UI_MESSAGE_STREAM_HEADERS`. When your tools run while the model streams, feed
    their ``Result``/``Error`` events into the same iterable (or use an
    :class:`AISDKEncoder` directly) so the front end sees the outputs.
    """
    encoder = AISDKEncoder()
    for part in encoder.start(message_id):
        yield to_sse(part)
    async for event in events:
        text = encoder.encode_sse(event)
        if text:
            yield text
    yield SSE_DONE
