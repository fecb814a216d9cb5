"""Vercel AI SDK UI message streams, both ways: :class:`AISDKAdapter` and :class:`AISDKEncoder`.

The AI SDK's UI message stream (what ``toUIMessageStreamResponse()`` sends and ``useChat``
reads) is a server-sent-event stream of JSON "parts", one per ``data:`` line, ended by
``data: [DONE]``. The tool parts are::

    {"type": "tool-input-start", "toolCallId": "call_1", "toolName": "getWeather"}
    {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": "{\\"city\\":"}
    {"type": "tool-input-available", "toolCallId": "call_1", "toolName": "getWeather",
     "input": {"city": "Paris"}}
    {"type": "tool-input-error", "toolCallId": ..., "toolName": ..., "input": ..., "errorText": ...}
    {"type": "tool-output-available", "toolCallId": "call_1", "output": {...}}
    {"type": "tool-output-error", "toolCallId": "call_1", "errorText": "..."}

Reading (:class:`AISDKAdapter`): parts as dicts (or the ``data:`` lines / JSON texts
themselves) become tracker events:

- ``tool-input-start`` starts a call (id ``toolCallId``, name ``toolName``);
  ``tool-input-delta`` appends ``inputTextDelta``.
- ``tool-input-available`` makes the call ready. A call that streamed no text (tools the
  SDK does not stream, or a part with no prior ``tool-input-start``) gets the JSON of
  ``input`` as its text first (``{}`` when ``input`` is absent). If text was streamed and
  ``input`` is present but differs from what the text parses to (the server repaired the
  call, say), the call fails with :class:`AISDKInputMismatch` instead of running with
  arguments the stream never showed.
- ``tool-input-error``, ``tool-output-error`` and ``tool-output-denied`` fail the call
  with an :class:`AISDKToolError`; ``tool-output-available`` completes it with
  ``output`` (``preliminary`` outputs are skipped: only the final one counts).
- ``finish`` ends the turn: ok, unless it carries a ``finishReason`` other than ``stop``
  or ``tool-calls`` (AI SDK 6). ``error`` ends it not ok with ``errorText`` as the
  reason, ``abort`` with reason ``"abort"``. A stream without any of them ends not ok.
- Every other part (text, reasoning, sources, files, ``data-*``, steps, metadata,
  ``[DONE]``) is ignored, as is anything malformed that names no known call (logged at
  DEBUG on ``toolcall_tracker.adapters``); a malformed part for a known call fails that
  call with an :class:`AISDKMalformedPart`. ``feed`` never raises.

Writing (:class:`AISDKEncoder`, :func:`encode_ai_sdk`): the other direction, so a Python
server can drive a ``useChat`` front end. Pass every tracker event you apply (the model's,
and your tools' ``Result`` / ``Error``) to :meth:`AISDKEncoder.encode`; it returns the
parts that event implies, mirroring the tracker's transitions:

===========================  ==============================================================
event                        parts
===========================  ==============================================================
``Start``                    ``tool-input-start``
``Delta``                    ``tool-input-delta``
``Ready``                    ``tool-input-available`` with the parsed ``input``, or
                             ``tool-input-error`` if the text is not JSON
``Result``                   ``tool-output-available``
``Error``                    ``tool-input-error`` before ``Ready``, ``tool-output-error`` after
``End``                      ``tool-input-error`` for each call still streaming (the tracker
                             abandons them), then ``finish`` (ok) or ``error`` + ``finish``
===========================  ==============================================================

Events the tracker would ignore (a delta for an unknown id, a second result...) produce no
parts. :func:`to_sse` frames a part as a ``data:`` line, :data:`SSE_DONE` ends the stream,
and :data:`UI_MESSAGE_STREAM_HEADERS` are the response headers ``useChat`` expects.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Final, Literal

from pydantic_core import to_json

from .._json import _ArgumentsError, parse_json
from ..errors import CallFailure
from ..events import Delta, End, Error, EventInput, Ready, Result, Start, parse_event
from ._base import AdapterEvent, _FastLane
from ._common import (
    _delta,
    _end,
    _error,
    _get,
    _json_text,
    _ready,
    _result,
    _short,
    _start,
    _usable_id,
    logger,
)

__all__ = [
    "AISDKAdapter",
    "AISDKEncoder",
    "AISDKInputMismatch",
    "AISDKMalformedPart",
    "AISDKToolError",
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
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

_OK_FINISH_REASONS: Final = frozenset({"stop", "tool-calls"})


class AISDKToolError(CallFailure):
    """The stream reported the call failed: ``tool-input-error``, ``tool-output-error``
    or ``tool-output-denied`` (``part_type``). ``message`` is the part's ``errorText``;
    ``input`` the part's ``input``, if it had one.
    """

    kind: Literal["ai_sdk_tool_error"] = "ai_sdk_tool_error"
    part_type: str
    input: Any = None


class AISDKInputMismatch(CallFailure):
    """``tool-input-available`` carried an ``input`` the streamed text does not parse to.

    ``input`` is the part's input; the streamed text is the call's ``args_text``.
    """

    kind: Literal["ai_sdk_input_mismatch"] = "ai_sdk_input_mismatch"
    input: Any = None


class AISDKMalformedPart(CallFailure):
    """A part for this call was malformed (a delta that is not a string, no tool name...)."""

    kind: Literal["ai_sdk_malformed_part"] = "ai_sdk_malformed_part"
    part_type: str


_STREAMING, _READY, _FINISHED = 0, 1, 2
_MISSING: Any = object()


class _Call:
    __slots__ = ("name", "parts", "state")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts: list[str] = []
        self.state = _STREAMING


def _decode_text(item: str | bytes) -> Any:
    """A part from a ``data:`` line or a JSON text; ``None`` for ``[DONE]`` and blanks."""
    text = item.decode() if isinstance(item, bytes) else item
    text = text.strip()
    if text.startswith("data:"):
        text = text[5:].strip()
    if not text or text == "[DONE]":
        return None
    return json.loads(text)


class AISDKAdapter(_FastLane):
    """Translate AI SDK UI message stream parts into tracker events (see the module doc).

    An item is a part as a dict, or a ``data: {...}`` line / JSON text of one. One adapter
    per stream (a multi-step stream is one turn: it ends at ``finish``).
    """

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[str, _Call] = {}
        self._ended = False

    def _feed_events(self, item: Any) -> list[AdapterEvent]:
        """The tracker events one part implies (possibly none). Never raises."""
        try:
            if isinstance(item, str | bytes):
                item = _decode_text(item)
            kind = _get(item, "type")
            if kind == "tool-input-delta":
                return self._on_delta(item)
            if not isinstance(kind, str) or not kind.startswith(
                ("tool-", "finish", "error", "abort")
            ):
                return []
            if kind.startswith("tool-output-"):
                return self._on_output(item, kind)
            if self._ended:
                return []
            if kind == "tool-input-start":
                return self._on_start(item)
            if kind == "tool-input-available":
                return self._on_available(item)
            if kind == "tool-input-error":
                return self._on_input_error(item)
            if kind == "finish":
                reason = _get(item, "finishReason")
                if isinstance(reason, str):
                    return self._finish(reason in _OK_FINISH_REASONS, reason)
                return self._finish(True, "finish")
            if kind == "error":
                text = _get(item, "errorText")
                return self._finish(False, text if isinstance(text, str) and text else "error")
            if kind == "abort":
                return self._finish(False, "abort")
        except Exception:
            logger.debug("ai_sdk: ignored a part that could not be read: %r", item, exc_info=True)
        return []

    def _end_events(self) -> list[AdapterEvent]:
        """The end of the stream: ``End(ok=False)`` unless a finish/error/abort part came."""
        if self._ended:
            return []
        return self._finish(False, "stream ended without a finish part")

    # -- handlers ---------------------------------------------------------------------

    def _on_delta(self, item: Any) -> list[AdapterEvent]:
        call_id = _get(item, "toolCallId")
        call = self._calls.get(call_id) if isinstance(call_id, str) else None
        if call is None or call.state != _STREAMING or self._ended:
            return []
        text = _get(item, "inputTextDelta")
        if not isinstance(text, str):
            why = f"inputTextDelta must be a string, got {_short(text)}"
            return self._fail(call_id, call, "tool-input-delta", why)
        if not text:
            return []
        call.parts.append(text)
        return self._one_delta(call_id, text)

    def _on_start(self, item: Any) -> list[AdapterEvent]:
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id):
            logger.debug("ai_sdk: ignored a tool-input-start without a usable toolCallId")
            return []
        if call_id in self._calls:
            return []
        return self._begin(call_id, _get(item, "toolName"), "tool-input-start")[1]

    def _begin(self, call_id: str, name: Any, part_type: str) -> tuple[_Call, list[AdapterEvent]]:
        call = self._calls[call_id] = _Call(name if isinstance(name, str) else "")
        events: list[AdapterEvent] = [_start(call_id, call.name)]
        if not isinstance(name, str):
            events += self._fail(call_id, call, part_type, f"toolName is {_short(name)}")
        return call, events

    def _on_available(self, item: Any) -> list[AdapterEvent]:
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id):
            logger.debug("ai_sdk: ignored a tool-input-available without a usable toolCallId")
            return []
        events: list[AdapterEvent] = []
        call = self._calls.get(call_id)
        if call is None:
            call, events = self._begin(call_id, _get(item, "toolName"), "tool-input-available")
        if call.state != _STREAMING:
            return events
        given = item.get("input", _MISSING) if isinstance(item, Mapping) else _MISSING
        streamed = "".join(call.parts)
        if streamed.strip(" \t\n\r"):
            if given is not _MISSING and not _same_json(streamed, given):
                call.state = _FINISHED
                failure = AISDKInputMismatch(
                    message=f"call {call_id!r} ({call.name}): tool-input-available has an "
                    f"input ({_short(given)}) the streamed text does not parse to",
                    input=given,
                )
                return [*events, _error(call_id, failure)]
            call.state = _READY
            return [*events, _ready(call_id)]
        text = "{}" if given is _MISSING or given is None else _json_text(given)
        if text is None:
            why = f"input cannot be written as JSON: {_short(given)}"
            return events + self._fail(call_id, call, "tool-input-available", why)
        call.state = _READY
        return [*events, _delta(call_id, text), _ready(call_id)]

    def _on_input_error(self, item: Any) -> list[AdapterEvent]:
        call_id = _get(item, "toolCallId")
        if not isinstance(call_id, str) or not call_id:
            return []
        events: list[AdapterEvent] = []
        call = self._calls.get(call_id)
        if call is None:
            call, events = self._begin(call_id, _get(item, "toolName"), "tool-input-error")
        if call.state == _FINISHED:
            return events
        call.state = _FINISHED
        return [*events, _error(call_id, _tool_error(item, "tool-input-error"))]

    def _on_output(self, item: Any, kind: str) -> list[AdapterEvent]:
        call_id = _get(item, "toolCallId")
        if not isinstance(call_id, str) or not call_id:
            return []
        call = self._calls.get(call_id)
        if call is not None and call.state == _FINISHED:
            return []
        if kind == "tool-output-available":
            if _get(item, "preliminary") is True:
                return []
            if call is not None:
                call.state = _FINISHED
            return [_result(call_id, _get(item, "output"))]
        if kind in ("tool-output-error", "tool-output-denied"):
            if call is not None:
                call.state = _FINISHED
            return [_error(call_id, _tool_error(item, kind))]
        return []

    def _finish(self, ok: bool, reason: str) -> list[AdapterEvent]:
        self._ended = True
        return [_end(ok, reason)]

    def _fail(self, call_id: str, call: _Call, part_type: str, why: str) -> list[AdapterEvent]:
        call.state = _FINISHED
        failure = AISDKMalformedPart(
            message=f"call {call_id!r} ({call.name}): malformed {part_type}: {why}",
            part_type=part_type,
        )
        return [_error(call_id, failure)]


def _same_json(text: str, value: Any) -> bool:
    try:
        parsed = parse_json(text)
    except _ArgumentsError:
        return False
    return bool(parsed == value)


def _tool_error(item: Any, kind: str) -> AISDKToolError:
    text = _get(item, "errorText")
    if not isinstance(text, str) or not text:
        text = "the tool call was denied" if kind == "tool-output-denied" else f"{kind}"
    return AISDKToolError(message=text, part_type=kind, input=_get(item, "input"))


# -- writing ---------------------------------------------------------------------------


def to_sse(part: Mapping[str, Any]) -> str:
    """Frame one part as a server-sent event: ``data: {json}`` and a blank line.

    The JSON is compact; values pydantic can serialise (models, dataclasses, dates...)
    are accepted in ``input`` and ``output``.
    """
    return "data: " + to_json(part).decode() + "\n\n"


class _Encoded:
    __slots__ = ("name", "parts", "state")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts: list[str] = []
        self.state = _STREAMING


def _error_text(error: Any) -> str:
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    if isinstance(error, str):
        return error
    try:
        return to_json(error).decode()
    except Exception:
        return _short(error, 500)


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

    The parts carry only the fields the AI SDK's schema defines, so strict clients accept
    them.
    """

    __slots__ = ("_calls", "_ended")

    def __init__(self) -> None:
        self._calls: dict[str, _Encoded] = {}
        self._ended = False

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
            call = self._calls.get(model.id)
            if call is None or call.state != _STREAMING or self._ended:
                return []
            call.parts.append(model.args_text_delta)
            return [
                {
                    "type": "tool-input-delta",
                    "toolCallId": model.id,
                    "inputTextDelta": model.args_text_delta,
                }
            ]
        if isinstance(model, Start):
            if model.id in self._calls or self._ended:
                return []
            self._calls[model.id] = _Encoded(model.name)
            return [{"type": "tool-input-start", "toolCallId": model.id, "toolName": model.name}]
        if isinstance(model, Ready):
            return self._ready(model.id)
        if isinstance(model, Result):
            call = self._calls.get(model.id)
            if call is None or call.state != _READY:
                return []
            call.state = _FINISHED
            return [
                {"type": "tool-output-available", "toolCallId": model.id, "output": model.result}
            ]
        if isinstance(model, Error):
            return self._error(model.id, _error_text(model.error))
        return self._end(model)

    def encode_sse(self, event: EventInput) -> str:
        """:meth:`encode`, framed: the ``data:`` lines of the parts (``""`` for none)."""
        return "".join(to_sse(part) for part in self.encode(event))

    def _ready(self, call_id: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state != _STREAMING or self._ended:
            return []
        text = "".join(call.parts)
        try:
            value = parse_json(text)
        except _ArgumentsError as exc:
            call.state = _FINISHED
            return [self._input_error(call_id, call, exc.value.message)]
        call.state = _READY
        return [
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": call.name,
                "input": value,
            }
        ]

    def _error(self, call_id: str, text: str) -> list[dict[str, Any]]:
        call = self._calls.get(call_id)
        if call is None or call.state == _FINISHED:
            return []
        streaming = call.state == _STREAMING
        call.state = _FINISHED
        if streaming:
            return [self._input_error(call_id, call, text)]
        return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": text}]

    def _input_error(self, call_id: str, call: _Encoded, text: str) -> dict[str, Any]:
        return {
            "type": "tool-input-error",
            "toolCallId": call_id,
            "toolName": call.name,
            "input": "".join(call.parts),
            "errorText": text,
        }

    def _end(self, end: End) -> list[dict[str, Any]]:
        if self._ended:
            return []
        self._ended = True
        parts: list[dict[str, Any]] = []
        why = f" ({end.reason})" if end.reason else ""
        for call_id, call in self._calls.items():
            if call.state == _STREAMING:
                call.state = _FINISHED
                text = f"the turn ended{why} before the arguments were complete"
                parts.append(self._input_error(call_id, call, text))
        if not end.ok:
            parts.append({"type": "error", "errorText": end.reason or "the turn ended abnormally"})
        parts.append({"type": "finish"})
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
