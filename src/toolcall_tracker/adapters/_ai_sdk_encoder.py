"""The writing direction of the AI SDK UI message stream (private; public names are
re-exported by :mod:`toolcall_tracker.adapters.ai_sdk`): :class:`AISDKEncoder`,
:class:`AISDKListener`, :func:`encode_ai_sdk`, :func:`to_sse`, and the text buffer both
directions share.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from .._json import _ArgumentsError, parse_json
from .._jsonout import _json_text
from ..calls import Status
from ..changes import ChangeListener
from ..errors import ArgumentsTooLarge, IncompleteArguments
from ..events import Delta, End, Error, EventInput, Ready, Result, Start, parse_event
from ..limits import DEFAULT_LIMITS, Limits
from ._common import _short

if TYPE_CHECKING:
    from ..calls import ToolCall

__all__ = [
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "AISDKEncoder",
    "AISDKListener",
    "encode_ai_sdk",
    "to_sse",
]

UI_MESSAGE_STREAM_HEADERS: Final[Mapping[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The HTTP response headers of a UI message stream (as the AI SDK's own server sends)."""

SSE_DONE: Final = "data: [DONE]\n\n"
"""The line that ends a UI message stream."""

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


def _json(value: Any) -> str:
    """Compact JSON text of a part or an error value: the one place parts become JSON.

    It follows the library's output rules (see README, Reliability): strict JSON that a
    browser's ``JSON.parse`` accepts, NaN and infinities as ``null``, lone surrogates as
    ``\\uXXXX`` escapes; values pydantic can serialise (models, dataclasses, dates...) as
    it writes them, any other object as its text. It never raises.
    """
    return _json_text(value)


def to_sse(part: Mapping[str, Any]) -> str:
    """Frame one part as a server-sent event: ``data: {json}`` and a blank line.

    The JSON is compact; values pydantic can serialise (models, dataclasses, dates...)
    are accepted in ``input`` and ``output``.
    """
    return "data: " + _json(part) + "\n\n"


def _error_text(error: Any) -> str:
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    if isinstance(error, str):
        return error
    try:
        return _json(error)
    except Exception:
        return _short(error, 500)


def _start_part(call_id: str, name: str) -> dict[str, Any]:
    return {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}


def _delta_part(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}


def _available_part(call_id: str, name: str, value: Any) -> dict[str, Any]:
    return {"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": value}


def _input_error_part(call_id: str, name: str, text: str, error: str) -> dict[str, Any]:
    return {
        "type": "tool-input-error",
        "toolCallId": call_id,
        "toolName": name,
        "input": text,
        "errorText": error,
    }


def _output_part(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "tool-output-available", "toolCallId": call_id, "output": value}


def _preliminary_part(call_id: str, value: Any) -> dict[str, Any]:
    return {**_output_part(call_id, value), "preliminary": True}


class ProgressLike(Protocol):
    """What the encoder reads of a progress update (a runner's ``ProgressUpdate``)."""

    @property
    def call_id(self) -> str: ...

    @property
    def value(self) -> Any: ...


def _output_error_part(call_id: str, error: str) -> dict[str, Any]:
    return {"type": "tool-output-error", "toolCallId": call_id, "errorText": error}


def _end_parts(end: End) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if not end.ok:
        parts.append({"type": "error", "errorText": end.reason or "the turn ended abnormally"})
    parts.append({"type": "finish"})
    return parts


def _abandoned_text(reason: str | None) -> str:
    why = f" ({reason})" if reason else ""
    return f"the turn ended{why} before the arguments were complete"


class _Encoded:
    __slots__ = ("name", "state", "text")

    def __init__(self, name: str) -> None:
        self.name = name
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

    __slots__ = ("_calls", "_ended", "_limits")

    def __init__(self, *, limits: Limits | None = None) -> None:
        self._calls: dict[str, _Encoded] = {}
        self._ended = False
        self._limits = DEFAULT_LIMITS if limits is None else limits

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
            self._calls[model.id] = _Encoded(model.name)
            return [_start_part(model.id, model.name)]
        if isinstance(model, Ready):
            return self._ready(model.id)
        if isinstance(model, Result):
            call = self._calls.get(model.id)
            if call is None or call.state != _READY:
                return []
            call.state = _FINISHED
            return [_output_part(model.id, model.result)]
        if isinstance(model, Error):
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
        return [_preliminary_part(update.call_id, update.value)]

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
            return [_input_error_part(call_id, call.name, "", failure.message)]
        return [_delta_part(call_id, text)]

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
            return [_input_error_part(call_id, call.name, text, exc.value.message)]
        call.state = _READY
        call.text = _Text()
        return [_available_part(call_id, call.name, value)]

    def _error(self, call_id: str, text: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state == _FINISHED:
            return []
        streaming = call.state == _STREAMING
        call.state = _FINISHED
        if streaming:
            args = call.text.text()
            call.text = _Text()
            return [_input_error_part(call_id, call.name, args, text)]
        return [_output_error_part(call_id, text)]

    def _end(self, end: End) -> list[dict[str, Any]]:
        if self._ended:
            return []
        self._ended = True
        parts: list[dict[str, Any]] = []
        for call_id, call in self._calls.items():
            if call.state == _STREAMING:
                call.state = _FINISHED
                args = call.text.text()
                call.text = _Text()
                parts.append(
                    _input_error_part(call_id, call.name, args, _abandoned_text(end.reason))
                )
        return parts + _end_parts(end)


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
            elif after is Status.ERROR:
                self._emit(_output_error_part(call_id, _error_text(call.error)))

    def progress(self, update: ProgressLike) -> None:
        """Emit a preliminary ``tool-output-available`` for a runner's progress update.

        Pass updates from ``RunControl(on_progress=listener.progress)``; as
        :meth:`AISDKEncoder.progress`, only while the call is running.
        """
        if self._calls.status(update.call_id) is Status.RUNNING:
            self._emit(_preliminary_part(update.call_id, update.value))

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
