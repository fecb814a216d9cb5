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

- ``tool-input-start`` starts a call (id ``toolCallId``, name ``toolName``), ``pending``;
  its ``tool-input-delta`` text is held (see ``_ai_sdk_input``), not written yet.
- ``tool-input-available`` states the input that counts (after schema defaults and
  ``repairToolCall``): the call's text is written then, the streamed text if it parses to
  that input (JavaScript number rounding tolerated), else the JSON of the input; a
  text-input tool (``inputEncoding: "text"``) gets the JSON string of its input. A call
  with no input at all gets ``{}``.
- A call becomes ready once its step stands, so that nothing the server may still hold
  or take back looks ``running``. A step stands when ``finish-step`` ended it and then
  the next ``start-step`` came, or the turn ended (``finish``, ``error``, ``abort``, the
  stream's end); ``finish`` and ``error`` also make ready the calls of a stream without
  steps. Not at ``finish-step`` itself: the SDK's ``reset-step`` drops every part since
  the last ``start-step``, and an application that retries a step writes it after the
  failed attempt's ``finish-step``; a text or data part after ``finish-step`` does not
  protect the step either. The cost: one part's delay after ``finish-step`` (the SDK
  writes ``start-step`` or ``finish`` right after it).
- A ``tool-approval-request`` keeps a call ``pending`` (undecided at the turn's end it
  fails with :class:`AISDKApprovalPending`, never having run).
- ``reset-step`` fails every call of the retracted step (since the last ``start-step``)
  that has no outcome yet with :class:`AISDKStepReset`, whatever its state; with the
  default ``ready="step"`` none was ready, so none ran. A call the server already ran
  (its output came) keeps its outcome. A retried call that reuses a retracted call's
  ``toolCallId`` is a new call, tracked as ``<toolCallId>~<n>`` (``n``: the reset-steps
  so far), since the tracker still holds the retracted one under its id; its parts are
  still matched by ``toolCallId``.
- ``tool-input-error``, ``tool-output-error`` and ``tool-output-denied`` fail the call
  with an :class:`AISDKToolError`; ``tool-output-available`` completes it with
  ``output`` (``preliminary`` outputs are skipped: only the final one counts). A server's
  output for a call not yet ready makes it ready first (the server ran it).
- ``finish`` ends the turn: ok, unless it carries a ``finishReason`` other than ``stop``
  or ``tool-calls`` (AI SDK 6). ``error`` ends it not ok with ``errorText`` as the
  reason, ``abort`` with reason ``"abort"``. A stream without any of them ends not ok;
  calls not yet ready are then abandoned.
- Every other part (text, reasoning, sources, files, ``data-*``, metadata, ``[DONE]``)
  is ignored, as is anything malformed that names no known call (logged at DEBUG on
  ``toolcall_tracker.adapters``); a malformed part for a known call fails that call with
  an :class:`AISDKMalformedPart`. ``feed`` never raises.

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
                             (``tool-output-denied`` for an ``ApprovalDenied``)
``End``                      ``tool-input-error`` for each call still streaming (the tracker
                             abandons them), then ``finish`` with the SDK's ``finishReason``
                             (after an ``error`` part when the turn failed, not for a cut-off)
===========================  ==============================================================

Approval parts (:meth:`AISDKEncoder.approval_request`, :meth:`AISDKEncoder.denied`), step
boundaries for several turns in one response (:meth:`AISDKEncoder.next_step`;
:meth:`AISDKListener.next_step` with ``AISDKListener(..., steps=True)``) and the outcomes
of ``runner.resume`` (:meth:`AISDKEncoder.outcomes`, under the ids an earlier response
gave the calls: :class:`AISDKStreamIds`) have methods of their own.

Events the tracker would ignore (a delta for an unknown id, a second result...) produce no
parts. :func:`to_sse` frames a part as a ``data:`` line, :data:`SSE_DONE` ends the stream,
and :data:`UI_MESSAGE_STREAM_HEADERS` are the response headers ``useChat`` expects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

from ...failures import CallFailure
from ...limits import Limits
from .._calls import RULES, AdapterCall, AdapterCallTable
from .._common import READ_ERRORS, _get, _short, _usable_id, logger
from .._protocol import SinkAdapter
from ._encoder import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AISDKEncoder,
    encode_ai_sdk,
    to_sse,
)
from ._errors import (
    AISDKApprovalPending,
    AISDKInputMismatch,
    AISDKMalformedPart,
    AISDKStepReset,
    AISDKToolError,
    approval_pending,
    malformed,
    step_reset,
    tool_error,
)
from ._ids import AISDKStreamIds
from ._input import MISSING, Held, forget, resize, settle
from ._listener import AISDKListener
from ._parts import _decode_text

__all__ = [
    "AISDKAdapter",
    "AISDKApprovalPending",
    "AISDKEncoder",
    "AISDKListener",
    "AISDKInputMismatch",
    "AISDKMalformedPart",
    "AISDKStepReset",
    "AISDKStreamIds",
    "AISDKToolError",
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "encode_ai_sdk",
    "to_sse",
]

_OK_FINISH_REASONS: Final = frozenset({"stop", "tool-calls"})
_Handler = Callable[["AISDKAdapter", Any], None]


class AISDKAdapter(SinkAdapter):
    """Translate AI SDK UI message stream parts into tracker events (see the module doc).

    An item is a part as a dict, or a ``data: {...}`` line / JSON text of one. One adapter
    per stream (a multi-step stream is one turn: it ends at ``finish``).

    Limits (those of the sink written into): a ``toolCallId`` longer than
    ``Limits.max_id_chars`` routes nothing (its parts are ignored and logged), a
    ``toolName`` longer than ``max_name_chars`` is cut to a name no tool can have
    (``...(cut)``). A call's streamed text is held until ``tool-input-available``, up to
    ``max_args_chars`` characters (past that it is written, and the sink fails the call,
    ``ArgumentsTooLarge``).

    Args:
        limits: the limits to honour through ``feed`` / ``end`` (written into a machine
            or tracker, the adapter honours that machine's limits instead).
        ready: when a call whose input is stated becomes ready. ``"step"`` (default):
            once its step stands (the next ``start-step`` after its ``finish-step``, or
            the turn's end), so that neither an approval request nor a ``reset-step``
            can come too late: a retracted call never ran. ``"input"``: as soon as the
            stream moves on past its ``tool-input-available`` (the SDK writes a call's
            approval request right after it), a head start for the step's later calls,
            at a risk: a ``reset-step`` may retract a call already made ready. The
            adapter fails it with :class:`AISDKStepReset` (``was_ready=True``) all the
            same, so a runner that has not started its tool never will (a gated tool
            waits for the turn's ok end, so it never has); but a tool already started
            has begun its side effects: the runner stops it (an async tool is
            cancelled, a sync tool's thread runs on and its result is discarded), and
            what it did is not undone. Use it for tools that are safe to run for a
            retracted step (read-only ones).
    """

    def __init__(
        self, *, limits: Limits | None = None, ready: Literal["step", "input"] = "step"
    ) -> None:
        super().__init__(limits=limits)
        if ready not in ("step", "input"):
            raise ValueError(f'AISDKAdapter(ready=...) is "step" or "input", not {ready!r}')
        self._table = self._calls = AdapterCallTable(RULES["ai_sdk"], malformed, self._sink)
        self._held: dict[str, Held] = {}
        self._streams: dict[str, Held] = {}  # the held calls whose input is not stated yet
        self._step: list[AdapterCall] = []  # the calls since the last start-step (or reset-step)
        self._standing: list[AdapterCall] = []  # those finish-step ended: ready once it stands
        self._retracted: dict[str, None] = {}  # toolCallIds a reset-step failed (oldest first)
        self._resets = 0
        self._eager = ready == "input"
        self._due: AdapterCall | None = None  # with ready="input": ready at the next part

    def _translate(self, item: Any) -> None:
        self._read((item,))

    def _read(self, items: Iterable[Any]) -> None:
        """Write the events each part implies (possibly none). Only what the sink raises
        propagates; a part that cannot be read is logged and ignored."""
        for item in items:
            kind = handler = None
            if type(item) is dict and self._due is None:  # the fast paths (none while one is due)
                try:
                    kind = item["type"]
                    if kind == "tool-input-delta":  # more text for a held call (as _on_delta)
                        held = self._streams[item["toolCallId"]]
                        text = item["inputTextDelta"]
                        if type(text) is str:  # Held.add's lines, inlined: a call per fragment
                            held.parts.append(text)
                            room = held.room = held.room - len(text)
                            if room < 0:
                                self._outgrown(held)
                            continue
                    else:  # a call's start or stated input: its handler at once
                        handler = _QUICK.get(kind)
                except (KeyError, TypeError):  # not such a part: the general route
                    pass
            self._part(item, kind, handler)

    _translate_all = _read

    def _part(self, item: Any, kind: Any, handler: _Handler | None) -> None:
        """Any part but a held call's more text: ``handler`` if the fast path found it."""
        try:
            if handler is None:
                if isinstance(item, str | bytes):
                    item = _decode_text(item)
                kind = _get(item, "type")
                if not isinstance(kind, str):
                    return
                due = self._due
                if due is not None and not (
                    kind == "tool-approval-request" and _get(item, "toolCallId") == due.key
                ):
                    self._due = None  # reset-step and abort take it back instead
                    waiting = self._held.get(due.key)
                    if waiting is not None and waiting.due() and kind not in _TAKE_BACK:
                        self._ready(due)
                handler = self._HANDLERS.get(kind)
            if handler is not None and not (self._calls.ended and kind in _BEFORE_END):
                handler(self, item)
        except READ_ERRORS:
            logger.debug(
                "ai_sdk: ignored a part that could not be read: %.200r", item, exc_info=True
            )

    def _finish_stream(self) -> None:
        """The end of the stream: ``End(ok=False)`` unless a finish/error/abort part came.
        A step that ``finish-step`` ended stands (no ``reset-step`` can come now): its calls
        are made ready first, as they were at its end."""
        if not self._calls.ended:
            self._stand()
            self._end(False, "stream ended without a finish part")

    # -- handlers ---------------------------------------------------------------------

    def _on_delta(self, item: Any) -> None:
        record = self._open(item)
        held = None if record is None else self._streams.get(record.key)
        if record is None or held is None:
            return  # no call there: ignored (parts always start a call first)
        text = _get(item, "inputTextDelta")
        if not isinstance(text, str):
            self._fail(record, f"the argument text must be a string, got {_short(text)}")
        elif not held.add(text):
            self._outgrown(held)

    def _outgrown(self, held: Held) -> None:
        """A held call outgrew ``max_args_chars``: written, the sink fails it (too large)."""
        record = held.record
        del self._held[record.key]
        del self._streams[record.key]
        if record.open and self._calls.records.get(record.key) is record:
            self._calls.append(record, held.text(), "tool-input-delta")

    def _record(self, item: Any, part_type: str) -> AdapterCall | None:
        """The record of the part's call; started by ``part_type`` if new."""
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id, self._limits.max_id_chars):
            logger.debug("ai_sdk: ignored a %s without a usable toolCallId", part_type)
            return None
        calls = self._calls
        record = calls.records.get(call_id)
        if record is None or call_id in self._retracted:
            tracker_id = call_id
            if self._retracted.pop(call_id, MISSING) is not MISSING:
                tracker_id = self._retry_id(call_id)  # the tracker holds the retracted one
            record = calls.start(call_id, tracker_id, _get(item, "toolName"), part_type)
            if record is not None and calls.records.get(call_id) is record:
                self._hold(record, _get(item, "inputEncoding") == "text")
        return record

    def _retry_id(self, call_id: str) -> str:
        """The tracker id of a retried call that reuses the ``toolCallId`` of a call a
        ``reset-step`` retracted: ``<toolCallId>~<n>``, ``n`` the reset-steps so far
        (``~`` appended while the table holds it)."""
        tracker_id = f"{call_id}~{self._resets}"
        while tracker_id in self._calls.records:
            tracker_id += "~"
        return tracker_id

    def _hold(self, record: AdapterCall, text_input: bool) -> None:
        """Hold a new call; the held calls are as many as the table's records at most."""
        held = self._held
        if len(held) >= self._limits.max_calls:
            forget(held, self._streams, self._calls.records)
            records = self._calls.records
            self._step = [r for r in self._step if records.get(r.key) is r]
            self._standing = [r for r in self._standing if r.key in held]
        new = Held(record, text_input, self._limits.max_args_chars)
        held[record.key] = self._streams[record.key] = new
        self._step.append(record)

    def _limits_changed(self) -> None:
        resize(self._streams.values(), self._limits.max_args_chars)

    def _open(self, item: Any) -> AdapterCall | None:
        call_id = _get(item, "toolCallId")
        record = self._calls.records.get(call_id) if isinstance(call_id, str) else None
        return record if record is not None and record.open else None

    def _on_start(self, item: Any) -> None:
        self._record(item, "tool-input-start")

    def _on_available(self, item: Any) -> None:
        plain = type(item) is dict  # the commonest: a plain dict, for a call already started
        call_id = item.get("toolCallId") if plain else None
        record = self._calls.records.get(call_id) if type(call_id) is str else None
        if record is None or (self._retracted and call_id in self._retracted):
            # (a call stated whole starts here; so does a retried call that reuses the id
            # of a call a reset-step retracted)
            record = self._record(item, "tool-input-available")
        held = None if record is None else self._streams.get(record.key)
        if record is None or held is None or not record.open:
            return
        text, parsed, given = settle(held, item)
        if text is None:
            self._fail(record, f"the call's input cannot be written as JSON: {_short(given)}")
            return
        del self._streams[record.key]
        record.empty = False  # the table writes no {} for it
        self._calls.append_parsed(record, text, parsed, "tool-input-available")  # parsed once
        if self._eager:
            self._due = record

    def _on_approval(self, item: Any) -> None:
        record = self._open(item)
        held = None if record is None else self._held.get(record.key)
        if held is not None:
            approval_id = _get(item, "approvalId")
            held.approval_id = approval_id if isinstance(approval_id, str) else ""
        elif record is None:
            logger.debug("ai_sdk: tool-approval-request for no call held: %.200r", item)

    def _on_input_error(self, item: Any) -> None:
        record = self._record(item, "tool-input-error")
        if record is not None and not record.finished:
            self._release(record)
            self._calls.finish(record, tool_error(item, "tool-input-error"))

    def _on_output(self, item: Any) -> None:
        kind = _get(item, "type")
        call_id = _get(item, "toolCallId")
        if not _usable_id(call_id, self._limits.max_id_chars):
            return
        calls = self._calls
        record = calls.records.get(call_id)
        if record is not None and record.finished:
            return
        # the server ran a call whose input it stated: ready first, then its outcome (an
        # output before the input is stated is written as is: the sink judges it)
        held = None if record is None else self._held.get(call_id)
        ran = record is not None and held is not None and held.available
        if kind == "tool-output-available":
            if _get(item, "preliminary") is True:
                return
            if record is not None:
                if ran:
                    self._ready(record)
                record.finished = True
            calls.result(call_id if record is None else record.call_id, _get(item, "output"))
        elif record is not None:  # tool-output-error, tool-output-denied
            if ran and kind == "tool-output-error":
                self._ready(record)
            else:
                self._release(record)  # denied (it never ran), or no input stated yet
            calls.finish(record, tool_error(item, kind))
        else:
            calls.error(call_id, tool_error(item, kind))

    def _on_start_step(self, item: Any) -> None:
        self._stand()  # a new step: the one before it can no longer be reset
        self._step = []

    def _on_finish_step(self, item: Any) -> None:
        # not ready yet: a reset-step may still retract the step (see the class docstring)
        self._standing = list(self._step)

    def _stand(self) -> None:
        """The step ``finish-step`` ended stands: its calls due become ready."""
        held = self._held
        for record in self._standing:
            waiting = held.get(record.key)
            if waiting is not None and waiting.record is record and waiting.due():
                self._ready(record)
        self._standing = []

    def _on_reset_step(self, item: Any) -> None:
        """Every call of the retracted step (since the last ``start-step``) that has no
        outcome yet fails with :class:`AISDKStepReset`, whatever its state: held,
        ``pending`` with its input written, or ``ready`` (``ready="input"``). A call the
        server already ran (its output came) keeps its outcome."""
        self._resets += 1
        retracted = self._retracted
        held = self._held
        for record in self._step:
            waiting = held.get(record.key)
            if waiting is not None and waiting.record is not record:
                waiting = None
            if record.finished and waiting is None:
                continue  # (an output for a call still held did not end it: the sink
                # ignores a result for a call not ready)
            ready = not record.open and waiting is None
            self._release(record)
            self._calls.finish(record, step_reset(record, ready=ready))
            retracted[record.key] = None  # a retried call may reuse its toolCallId
        while len(retracted) > self._limits.max_calls + self._limits.remember_forgotten:
            del retracted[next(iter(retracted))]
        self._step, self._standing = [], []  # two lists (one alias would ready a step early)

    def _on_finish(self, item: Any) -> None:
        for call_id, held in list(self._held.items()):
            record = self._calls.records.get(call_id)
            if record is None or not held.available:
                continue
            if held.approval_id is None:
                self._ready(record)
            else:
                self._fail(record, "", approval_pending(record, held.approval_id))
        reason = _get(item, "finishReason")
        if isinstance(reason, str):
            self._end(reason in _OK_FINISH_REASONS, reason)
        else:
            self._end(True, "finish")

    def _on_error(self, item: Any) -> None:
        text = _get(item, "errorText")
        self._end(False, text if isinstance(text, str) and text else "error", ready=True)

    def _on_abort(self, item: Any) -> None:
        self._stand()  # a step that finish-step ended stands: no reset-step can come now
        self._end(False, "abort")

    # -- writing ----------------------------------------------------------------------

    def _release(self, record: AdapterCall) -> None:
        """Stop holding a call, its streamed text written if it never was (errors show it)."""
        held = self._held.pop(record.key, None)
        self._streams.pop(record.key, None)
        if held is not None and not held.available and held.parts and record.open:
            self._calls.append(record, held.text(), "tool-input-delta")

    def _ready(self, record: AdapterCall) -> None:
        """Make a held call ready (its text written first, if it never was)."""
        self._release(record)
        self._calls.ready(record, "tool-output-available")

    def _fail(self, record: AdapterCall, why: str, error: CallFailure | None = None) -> None:
        self._release(record)
        self._calls.fail(record, why, "tool-input-delta", error)

    def _end(self, ok: bool, reason: str, *, ready: bool = False) -> None:
        """End the turn. With ``ready`` (an ``error`` part: the server's turn failed, after
        the calls it had validated), the calls whose input is available and that need no
        approval are made ready first, as at ``finish``. Every other call still held stays
        ``pending`` and the turn's end abandons it (its streamed text written first, so
        that the error shows it)."""
        for call_id, held in list(self._held.items()):
            record = self._calls.records.get(call_id)
            if record is None:
                continue
            if ready and held.due():
                self._ready(record)
            else:
                self._release(record)
        self._held.clear()
        self._streams.clear()
        self._retracted.clear()
        self._step, self._standing = [], []  # two lists (one alias would ready a step early)
        self._calls.end(ok, reason)

    _HANDLERS: Final[dict[str, _Handler]] = {
        "tool-input-start": _on_start,
        "tool-input-delta": _on_delta,
        "tool-input-available": _on_available,
        "tool-input-error": _on_input_error,
        "tool-approval-request": _on_approval,
        "tool-output-available": _on_output,
        "tool-output-error": _on_output,
        "tool-output-denied": _on_output,
        "start-step": _on_start_step,
        "finish-step": _on_finish_step,
        "reset-step": _on_reset_step,
        "finish": _on_finish,
        "error": _on_error,
        "abort": _on_abort,
    }


_TAKE_BACK: Final = frozenset({"reset-step", "abort"})  # parts that take a due call back
_QUICK: Final = {
    key: AISDKAdapter._HANDLERS[key] for key in ("tool-input-start", "tool-input-available")
}

_BEFORE_END: Final = frozenset(AISDKAdapter._HANDLERS) - {
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
}
