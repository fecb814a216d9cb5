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
from collections.abc import Mapping
from typing import Any, Final, Literal

from .._json import _ArgumentsError, parse_json
from ..errors import CallFailure
from ..limits import Limits
from ._ai_sdk_encoder import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AISDKEncoder,
    AISDKListener,
    encode_ai_sdk,
    to_sse,
)
from ._base import SinkAdapter
from ._calls import RULES, CallTable, Record
from ._common import (
    _get,
    _short,
    _usable_id,
    logger,
)

__all__ = [
    "AISDKAdapter",
    "AISDKEncoder",
    "AISDKListener",
    "AISDKInputMismatch",
    "AISDKMalformedPart",
    "AISDKToolError",
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "encode_ai_sdk",
    "to_sse",
]

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


_MISSING: Any = object()


def _decode_text(item: str | bytes) -> Any:
    """A part from a ``data:`` line or a JSON text; ``None`` for ``[DONE]`` and blanks."""
    text = item.decode() if isinstance(item, bytes) else item
    text = text.strip()
    if text.startswith("data:"):
        text = text[5:].strip()
    if not text or text == "[DONE]":
        return None
    return json.loads(text)


class AISDKAdapter(SinkAdapter):
    """Translate AI SDK UI message stream parts into tracker events (see the module doc).

    An item is a part as a dict, or a ``data: {...}`` line / JSON text of one. One adapter
    per stream (a multi-step stream is one turn: it ends at ``finish``).

    Limits (those of the sink written into): a ``toolCallId`` longer than
    ``Limits.max_id_chars`` routes nothing (its parts are ignored and logged), a
    ``toolName`` longer than ``max_name_chars`` is cut to a name no tool can have
    (``...(cut)``). The ``tool-input-available`` check reads the streamed text back from
    the machine or tracker written into; only through ``feed`` / ``end`` does the adapter
    keep a copy, up to ``max_args_chars`` characters (past that the sink has failed the
    call, ``ArgumentsTooLarge``, and the copy is released).

    Args:
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
    """

    def __init__(self, *, limits: Limits | None = None) -> None:
        super().__init__(limits=limits)
        self._table = self._calls = CallTable(RULES["ai_sdk"], _failure, self._sink)

    def _translate(self, item: Any) -> None:
        """Write the events one part implies (possibly none). Only what the sink raises
        propagates; a part that cannot be read is logged and ignored."""
        calls = self._calls
        try:
            if type(item) is dict:
                kind = item.get("type")
                if kind == "tool-input-delta":
                    if not calls.more(item.get("toolCallId"), item.get("inputTextDelta")):
                        self._on_delta(item)
                    return
            else:
                if isinstance(item, str | bytes):
                    item = _decode_text(item)
                kind = _get(item, "type")
                if kind == "tool-input-delta":
                    self._on_delta(item)
                    return
            if not isinstance(kind, str) or not kind.startswith(
                ("tool-", "finish", "error", "abort")
            ):
                return
            if kind.startswith("tool-output-"):
                self._on_output(item, kind)
                return
            if calls.ended:
                return
            if kind == "tool-input-start":
                self._on_start(item)
            elif kind == "tool-input-available":
                self._on_available(item)
            elif kind == "tool-input-error":
                self._on_input_error(item)
            elif kind == "finish":
                reason = _get(item, "finishReason")
                if isinstance(reason, str):
                    calls.end(reason in _OK_FINISH_REASONS, reason)
                else:
                    calls.end(True, "finish")
            elif kind == "error":
                text = _get(item, "errorText")
                calls.end(False, text if isinstance(text, str) and text else "error")
            elif kind == "abort":
                calls.end(False, "abort")
        except Exception:
            logger.debug(
                "ai_sdk: ignored a part that could not be read: %.200r", item, exc_info=True
            )

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless a finish/error/abort part came."""
        if not self._calls.ended:
            self._calls.end(False, "stream ended without a finish part")

    # -- handlers ---------------------------------------------------------------------

    def _on_delta(self, item: Any) -> None:
        call_id = _get(item, "toolCallId")
        record = self._calls.records.get(call_id) if isinstance(call_id, str) else None
        if record is not None:  # no call there: ignored (parts always start a call first)
            self._calls.append(record, _get(item, "inputTextDelta"), "tool-input-delta")

    def _record(self, item: Any, part_type: str, *, start: bool = True) -> Record | None:
        """The record of the part's call; started by ``part_type`` if ``start`` and new."""
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id, self._limits.max_id_chars):
            logger.debug("ai_sdk: ignored a %s without a usable toolCallId", part_type)
            return None
        calls = self._calls
        record = calls.records.get(call_id)
        if record is None and start:
            record = calls.start(call_id, call_id, _get(item, "toolName"), part_type)
        return record

    def _on_start(self, item: Any) -> None:
        if _get(item, "toolCallId") not in self._calls.records:
            self._record(item, "tool-input-start")

    def _on_available(self, item: Any) -> None:
        calls = self._calls
        record = self._record(item, "tool-input-available")
        if record is None or not record.open:
            return
        given = item.get("input", _MISSING) if isinstance(item, Mapping) else _MISSING
        if record.empty:
            record.initial = None if given is _MISSING else given
        elif given is not _MISSING:
            streamed = calls.text(record)
            if streamed is not None and not _same_json(streamed, given):
                mismatch = AISDKInputMismatch(
                    message=f"call {record.call_id!r} ({record.name}): tool-input-available "
                    f"has an input ({_short(given)}) the streamed text does not parse to",
                    input=given,
                )
                calls.fail(record, "", "tool-input-available", mismatch)
                return
        calls.close(record.call_id, "tool-input-available")

    def _on_input_error(self, item: Any) -> None:
        record = self._record(item, "tool-input-error")
        if record is not None and not record.finished:
            self._calls.finish(record, _tool_error(item, "tool-input-error"))

    def _on_output(self, item: Any, kind: str) -> None:
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id, self._limits.max_id_chars):
            return
        calls = self._calls
        record = calls.records.get(call_id)
        if record is not None and record.finished:
            return
        if kind == "tool-output-available":
            if _get(item, "preliminary") is True:
                return
            if record is not None:
                record.finished = True
            calls.result(call_id, _get(item, "output"))
        elif kind in ("tool-output-error", "tool-output-denied"):
            if record is not None:
                calls.finish(record, _tool_error(item, kind))
            else:
                calls.error(call_id, _tool_error(item, kind))


def _failure(record: Record, why: str, part_type: str) -> AISDKMalformedPart:
    return AISDKMalformedPart(
        message=f"call {record.call_id!r} ({record.name}): malformed {part_type}: {why}",
        part_type=part_type,
    )


def _same_json(text: str, value: Any) -> bool:
    """Whether ``text`` parses to ``value``, compared as JSON values (see :func:`_json_equal`)."""
    try:
        parsed = parse_json(text)
    except _ArgumentsError:
        return False
    try:
        return _json_equal(parsed, value)
    except RecursionError:
        return False


def _json_equal(a: Any, b: Any) -> bool:
    """JSON-typed equality: a boolean never equals a number (``true != 1``), numbers compare
    by value (``1 == 1.0``), objects by keys and values, arrays (lists or tuples) item by
    item, in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        return all(key in b and _json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, list | tuple):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            return False
        return all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _tool_error(item: Any, kind: str) -> AISDKToolError:
    text = _get(item, "errorText")
    if not isinstance(text, str) or not text:
        text = "the tool call was denied" if kind == "tool-output-denied" else f"{kind}"
    return AISDKToolError(message=text, part_type=kind, input=_get(item, "input"))
