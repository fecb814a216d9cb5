"""The writing direction of the AI SDK UI message stream, from events (private; public
names are re-exported by :mod:`toolcall_tracker.adapters.ai_sdk`): :class:`AISDKEncoder`,
:func:`encode_ai_sdk`, and the text buffer both directions share. The same parts drawn
from a change feed are :mod:`._ai_sdk_listener`'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, Final, Protocol

from ..._json import _ArgumentsError, parse_json
from ...calls import Status, ToolCall
from ...events import Delta, End, Error, EventInput, Ready, Result, Start, parse_event
from ...failures import ArgumentsTooLarge
from ...limits import DEFAULT_LIMITS, Limits
from .._common import _short
from ._ids import AISDKStreamIds, fresh_id
from ._parts import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
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
    to_sse,
)

__all__ = [
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "AISDKEncoder",
    "ProgressLike",
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
        continues: the ids of an earlier response whose assistant message this one
            continues (:meth:`stream_ids` of that response's writer): :meth:`outcomes`
            writes its calls under those ids, and no new call takes one of them.
    """

    __slots__ = ("_calls", "_continued", "_ended", "_limits", "_step", "_used")

    def __init__(
        self, *, limits: Limits | None = None, continues: AISDKStreamIds | None = None
    ) -> None:
        self._calls: dict[str, _Encoded] = {}
        self._ended = False
        self._limits = DEFAULT_LIMITS if limits is None else limits
        self._used: set[str] = set()  # every toolCallId written (or continued)
        self._continued: dict[str, str] = {}  # an earlier response's last step's ids
        if continues is not None:
            self._used.update(continues.used)
            self._continued.update(continues.calls)
        self._step = 0

    def next_step(self, end: EventInput) -> list[dict[str, Any]]:
        """End the model's turn ``end`` (an :class:`~toolcall_tracker.End`) as a step, and
        open the next step of the same response: a second turn's calls follow.

        Returns the parts of that end without ``finish`` (a ``tool-input-error`` for each
        call still streaming), then ``finish-step`` and ``start-step``. The next turn's
        events go to :meth:`encode` as before; a call id an earlier step used (a minted
        ``ollama-call-0``, say) is renamed ``<id>~<step>`` in the stream, so that
        ``useChat`` never merges two calls. The encoder forgets the ended step's calls:
        encode their outputs before (:class:`AISDKListener` keeps writing a step's late
        outputs).
        """
        model = parse_event(end)
        if not isinstance(model, End):
            raise TypeError(f"next_step() takes the turn's End event, not {_short(end)}")
        parts = [] if self._ended else self._abandon(model)
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
        return [_approval_part(call.wire, approval_id)]

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
        ``tool-output-error``; calls not finished give no part.

        Each call is written under the id the earlier response gave it when this encoder
        was built with ``continues=`` (a call renamed ``<id>~<step>`` there keeps that
        name), else under its own id."""
        parts: list[dict[str, Any]] = []
        for call in calls:
            wire = self._continued.get(call.id, call.id)
            if call.status is Status.DONE:
                parts.append(_output_part(wire, call.result))
            elif call.status is Status.ERROR and _denied(call.error):
                parts.append({"type": "tool-output-denied", "toolCallId": wire})
            elif call.status is Status.ERROR:
                parts.append(_output_error_part(wire, _error_text(call.error)))
        return parts

    def stream_ids(self) -> AISDKStreamIds:
        """The ids of this response's calls, for a later response that continues its
        assistant message: ``AISDKEncoder(continues=encoder.stream_ids())`` (keep it with
        the pending approvals; it is JSON data). Take it after the last step."""
        calls = {call_id: call.wire for call_id, call in self._calls.items()}
        return AISDKStreamIds(calls=calls, used=frozenset(self._used))

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
            wire = fresh_id(model.id, self._step, self._used)  # unused by any other call
            self._used.add(wire)
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
