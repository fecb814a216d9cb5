"""OpenTelemetry spans for the tool runner (private; imported only when ``opentelemetry`` is).

The runner imports this module only when the ``opentelemetry`` package can be found (or an
explicit ``tracer_provider`` was given): without it nothing here is imported and a turn
pays nothing. See the README's "Observability" section for what is emitted.

One span per executed call, following the GenAI semantic conventions: ``execute_tool
{tool}``, started when the tool starts and ended when the call's outcome is applied, with
``gen_ai.operation.name``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.type``, ``error.type`` (and an error status) on failure and, only when opted
in, ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``. The error status's
description is the failure's message only when content is recorded; otherwise just its
kind (``tool_exception: KeyError``, ``timeout``): an exception's text may hold secrets.
The tool runs with its span as the current span, so spans it makes itself are its children.

Times: the tracker's timeline is ``time.monotonic()``; span and event times are epoch
nanoseconds. :class:`TurnSpans` maps one to the other with one offset taken when the turn
starts (:meth:`TurnSpans.epoch_ns`), so the times of one turn are consistent with each
other even if the wall clock is adjusted meanwhile.

A call whose tool never ran gets no span: the current span when the run started (the
parent), if it is recording, gets a ``toolcall_tracker.tool_not_run`` event instead.
Approval steps and ignored events become span events (on the call's span, or the parent).
Every callback is guarded: tracing never fails a call or the runner.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from .. import __version__
from .._jsonout import _json_text, _plain_text
from .._support import bounded_repr
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..events import End
from ..failures import CallFailure, ToolRaised
from ..tracker import ToolCallTracker

logger: Final = logging.getLogger("toolcall_tracker.runner")

_FINISHED: Final = (Status.DONE, Status.ERROR)
_NS: Final = 1_000_000_000

# Attribute and event names (the GenAI ones are the semantic conventions').
OPERATION: Final = "gen_ai.operation.name"
TOOL_NAME: Final = "gen_ai.tool.name"
CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
ARGUMENTS: Final = "gen_ai.tool.call.arguments"
RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"
STREAMING: Final = "toolcall_tracker.call.streaming_duration"
WAITING: Final = "toolcall_tracker.call.wait_duration"
HEAD_START: Final = "toolcall_tracker.call.head_start"
BEFORE_END: Final = "toolcall_tracker.call.finished_before_stream_end"
ANNOUNCED: Final = "toolcall_tracker.announced"
READY: Final = "toolcall_tracker.ready"
TOOL_STARTED: Final = "toolcall_tracker.tool_started"
STREAM_ENDED: Final = "toolcall_tracker.stream_ended"
NOT_RUN: Final = "toolcall_tracker.tool_not_run"
APPROVAL_REQUESTED: Final = "toolcall_tracker.approval_requested"
APPROVAL_DECIDED: Final = "toolcall_tracker.approval_decided"
EVENT_IGNORED: Final = "toolcall_tracker.event_ignored"

_Note = tuple[str, dict[str, AttributeValue], int]  # an event's name, attributes, time


_NO_OP_PROVIDERS: Final = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


class Tracing:
    """What a runner keeps: the provider it was given (``None``: the global one, looked up
    at each turn, so a provider configured after the runner was built is used too), its
    tracer once one is needed, and whether content is recorded."""

    __slots__ = ("_provider", "_tracer", "record_content")

    def __init__(self, provider: TracerProvider | None, record_content: bool) -> None:
        self._provider = provider
        self._tracer: trace.Tracer | None = None
        self.record_content = record_content

    def turn(self, tracker: ToolCallTracker) -> TurnSpans | None:
        """The spans of one turn (call it in the task that runs the turn: the current span
        there is the parent), or ``None`` when nothing would be recorded: no provider was
        given and none is configured globally (the API's proxy or no-op provider), or the
        provider hands out the API's no-op tracer (an SDK disabled by ``OTEL_SDK_DISABLED``).
        Then the turn does no OpenTelemetry work at all: no listener, no span per call."""
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        if isinstance(provider, _NO_OP_PROVIDERS):
            return None
        tracer = self._tracer
        if tracer is None or self._provider is None:  # the global provider may change
            tracer = self._tracer = provider.get_tracer("toolcall_tracker", __version__)
        if isinstance(tracer, trace.NoOpTracer):
            return None
        return TurnSpans(tracer, self.record_content, tracker)


class _Open:
    """A call whose tool has started: its span and its tool's start (monotonic)."""

    __slots__ = ("span", "started")

    def __init__(self, span: Span, started: float) -> None:
        self.span = span
        self.started = started


class TurnSpans(ChangeListener):
    """The spans of one turn: a listener of the tracker's feed, plus the runner's hooks."""

    def __init__(
        self, tracer: trace.Tracer, record_content: bool, tracker: ToolCallTracker
    ) -> None:
        self._tracer = tracer
        self._content = record_content
        self._tracker = tracker
        self._parent_context = otel_context.get_current()
        parent = trace.get_current_span(self._parent_context)
        self._parent: Span | None = parent if parent.is_recording() else None
        self._offset = time.time_ns() - time.monotonic_ns()
        # When the stream ended (monotonic). Ended before the run: "now" is late enough,
        # every tool of this run starts later.
        self._ended: float | None = None if tracker.end is None else time.monotonic()
        self._ended_seen = False
        self._open: dict[str, _Open] = {}
        self._notes: dict[str, list[_Note]] = {}  # approval steps before the span exists
        self._edited: dict[str, Any] = {}  # arguments a human edited

    def epoch_ns(self, monotonic: float) -> int:
        """A ``time.monotonic()`` reading as epoch nanoseconds (span and event times)."""
        return self._offset + round(monotonic * _NS)

    def _now_ns(self) -> int:
        return self._offset + time.monotonic_ns()

    # -- the runner's hooks -----------------------------------------------------------

    @contextmanager
    def running(self, call: ToolCall) -> Iterator[None]:
        """Around the tool itself: start its span and make it current while it runs."""
        span = self._start(call)
        if span is None:
            yield
            return
        token = otel_context.attach(trace.set_span_in_context(span, self._parent_context))
        try:
            yield
        finally:
            otel_context.detach(token)

    def approval_requested(self, call_id: str) -> None:
        self._note(call_id, APPROVAL_REQUESTED, {})

    def approval_decided(
        self, call_id: str, approved: bool, reason: str | None, arguments: Any
    ) -> None:
        attributes: dict[str, AttributeValue] = {
            "toolcall_tracker.approved": approved,
            "toolcall_tracker.edited": approved and arguments is not None,
        }
        if not approved:
            attributes["toolcall_tracker.reason"] = _plain_text(str(reason or "denied"))
        elif arguments is not None and self._content:
            self._edited[call_id] = arguments
        self._note(call_id, APPROVAL_DECIDED, attributes)

    def close(self) -> None:
        """The run is over: end what is still open; approval steps of calls left pending
        (deferred approvals) go to the parent."""
        try:
            for call_id, notes in self._notes.items():
                self._to_parent(notes, call_id)
            for opened in self._open.values():  # pragma: no cover (every call finishes)
                opened.span.end()
        except Exception:  # pragma: no cover (the API does not raise)
            logger.exception("recording the turn's spans failed")
        self._notes.clear()
        self._open.clear()
        self._edited.clear()

    # -- the change feed --------------------------------------------------------------

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after not in _FINISHED:
            return
        try:
            self._finish(call_id)
        except Exception:  # pragma: no cover (the API does not raise)
            logger.exception("recording the span of call %r failed", call_id)

    def turn_ended(self, end: End) -> None:
        now = time.monotonic()
        self._ended, self._ended_seen = now, True
        try:
            for opened in self._open.values():
                if opened.span.is_recording():
                    at = self.epoch_ns(now)
                    opened.span.add_event(STREAM_ENDED, self._end_attributes(end), at)
        except Exception:  # pragma: no cover (the API does not raise)
            logger.exception("recording the end of the stream failed")

    def event_ignored(self, event: object, reason: object) -> None:
        try:
            call_id = _event_field(event, "id")
            opened = self._open.get(call_id) if call_id is not None else None
            span = opened.span if opened is not None else self._parent
            if span is None or not span.is_recording():
                return
            attributes: dict[str, AttributeValue] = {"toolcall_tracker.reason": str(reason)}
            kind = _event_field(event, "type")
            if kind is not None:
                attributes["toolcall_tracker.event.type"] = kind
            if call_id is not None:
                attributes[CALL_ID] = call_id
            span.add_event(EVENT_IGNORED, attributes, self._now_ns())
        except Exception:  # pragma: no cover (the API does not raise)
            logger.exception("recording an ignored event failed")

    # -- spans ------------------------------------------------------------------------

    def _start(self, call: ToolCall) -> Span | None:
        try:
            timeline = self._tracker.timeline(call.id)
            now = time.monotonic()
            started = timeline.tool_started if timeline and timeline.tool_started else now
            name = _plain_text(call.name)
            span = self._tracer.start_span(
                f"execute_tool {name}",
                context=self._parent_context,
                kind=SpanKind.INTERNAL,
                attributes={
                    OPERATION: "execute_tool",
                    TOOL_NAME: name,
                    CALL_ID: _plain_text(call.id),
                    TOOL_TYPE: "function",
                },
                start_time=self.epoch_ns(started),
            )
            self._open[call.id] = _Open(span, started)
            notes = self._notes.pop(call.id, [])
            if not span.is_recording():
                return span
            if self._content:
                arguments = self._edited.pop(call.id, call.args)
                span.set_attribute(ARGUMENTS, _json_text(arguments))
            # What happened before the tool started, in time order: the stream's steps,
            # the approval steps, the stream's end (when it came first).
            before: list[_Note] = [*notes, (TOOL_STARTED, {}, self.epoch_ns(started))]
            if timeline is not None and timeline.started is not None:
                before.append((ANNOUNCED, {}, self.epoch_ns(timeline.started)))
            if timeline is not None and timeline.ready is not None:
                before.append((READY, {}, self.epoch_ns(timeline.ready)))
                if timeline.started is not None:
                    span.set_attribute(STREAMING, timeline.ready - timeline.started)
                span.set_attribute(WAITING, max(0.0, started - timeline.ready))
            if self._ended_seen and self._ended is not None:
                at = self.epoch_ns(self._ended)
                before.append((STREAM_ENDED, self._end_attributes(self._tracker.end), at))
            for note_name, attributes, at in sorted(before, key=lambda note: note[2]):
                span.add_event(note_name, attributes, at)
            return span
        except Exception:  # pragma: no cover (the API does not raise)
            logger.exception("starting the span of call %r failed", call.id)
            return None

    def _finish(self, call_id: str) -> None:
        opened = self._open.pop(call_id, None)
        notes = self._notes.pop(call_id, None)
        self._edited.pop(call_id, None)
        if opened is None:  # the tool never ran: no span
            if self._parent is not None:
                self._not_run(call_id, notes or [])
            return
        span = opened.span
        now = time.monotonic()
        if not span.is_recording():
            span.end()
            return
        timeline = self._tracker.timeline(call_id)
        finished = timeline.tool_finished if timeline and timeline.tool_finished else now
        finished = max(finished, opened.started)
        ended = self._ended
        if ended is None or ended > finished:  # the stream outlasted the tool
            span.set_attribute(HEAD_START, finished - opened.started)
            span.set_attribute(BEFORE_END, True)
        else:
            span.set_attribute(HEAD_START, max(0.0, ended - opened.started))
            span.set_attribute(BEFORE_END, False)
        call = self._tracker.get(call_id)
        if call is not None and call.status is Status.ERROR:
            span.set_attribute(ERROR_TYPE, error_type(call.error))
            span.set_status(StatusCode.ERROR, _status_text(call.error, self._content))
        elif call is not None and self._content:
            span.set_attribute(RESULT, _json_text(call.result))
        span.end(end_time=self.epoch_ns(finished))

    def _not_run(self, call_id: str, notes: list[_Note]) -> None:
        parent = self._parent
        if parent is None or not parent.is_recording():
            return
        call = self._tracker.get(call_id)
        self._to_parent(notes, call_id)
        attributes: dict[str, AttributeValue] = {CALL_ID: _plain_text(call_id)}
        if call is not None:
            attributes[TOOL_NAME] = _plain_text(call.name)
            attributes["toolcall_tracker.call.status"] = call.status.value
            if call.status is Status.ERROR:
                attributes[ERROR_TYPE] = error_type(call.error)
        parent.add_event(NOT_RUN, attributes, self._now_ns())

    def _to_parent(self, notes: list[_Note], call_id: str) -> None:
        parent = self._parent
        if parent is None or not parent.is_recording():
            return
        for note_name, attributes, at in notes:
            parent.add_event(note_name, {**attributes, CALL_ID: _plain_text(call_id)}, at)

    def _note(self, call_id: str, name: str, attributes: dict[str, AttributeValue]) -> None:
        """An approval step: kept until the call's span starts (or it never does)."""
        self._notes.setdefault(call_id, []).append((name, attributes, self._now_ns()))

    @staticmethod
    def _end_attributes(end: End | None) -> dict[str, AttributeValue]:
        if end is None:
            return {}
        attributes: dict[str, AttributeValue] = {"toolcall_tracker.ok": end.ok}
        if end.reason is not None:
            attributes["toolcall_tracker.reason"] = _plain_text(end.reason)
        return attributes


def error_type(error: object) -> str:
    """``error.type`` for a call's error value: the exception's class name for a tool that
    raised, the failure's ``kind`` for the runner's other failures, ``_OTHER`` otherwise."""
    if isinstance(error, ToolRaised):
        return _plain_text(error.exception)
    if isinstance(error, CallFailure):
        return _plain_text(error.kind)
    return "_OTHER"


def _status_text(error: object, content: bool) -> str:
    """A failed span's status description. With content recording on: the failure's
    message. Off: only its kind (and the exception's class name), since a message quotes
    what the tool raised, which may hold personal or secret data."""
    if content:
        if isinstance(error, CallFailure):
            return _plain_text(error.message)
        return _plain_text(bounded_repr(error))
    if isinstance(error, ToolRaised):
        return f"tool_exception: {_plain_text(error.exception)}"
    return error_type(error)


def _event_field(event: object, field: str) -> str | None:
    """A string field of an ignored event (a model or a mapping), or ``None``."""
    value = event.get(field) if isinstance(event, Mapping) else getattr(event, field, None)
    return _plain_text(value) if isinstance(value, str) else None
