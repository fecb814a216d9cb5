"""Stateful property test: the async tracker and the sync machine against a reference model.

A hypothesis ``RuleBasedStateMachine`` feeds arbitrary event sequences (valid, malformed,
out of order, duplicated, unknown ids, ends, unknown types), ``forget`` calls, and random
waiters that are started and cancelled, to three things at once:

- a :class:`ToolCallStateMachine` (synchronous);
- a :class:`ToolCallTracker` running on its own event loop in a blocking portal (asyncio
  or trio, one ``TestCase`` class each), fed either by ``apply`` or through ``consume``
  from a memory stream (with ``skip_invalid``), with a ``ready_calls`` iterator running;
- :class:`Model`, a tiny reference written here from the README's tables (not from the
  library's own tables): a dict of id -> (status, text, args, result, error).

After every step the three must agree: every snapshot, the reasons given to ``on_ignored``,
the end, the calls ``ready_calls`` yielded, and the outcome of every waiter (which must
have returned exactly when the model says it can, and not before). At teardown the source
is closed (or the turn ended) and the tracker closed, and no waiter may be left hanging.

Synchronisation uses ``anyio.wait_all_tasks_blocked`` inside the loop: no sleeps.

Profiles (environment variables):

- default (CI): 50 examples of up to 30 steps per backend, a few seconds;
- long: ``TOOLCALL_STATEFUL_EXAMPLES=10000 .venv/bin/python -m pytest tests/test_stateful.py``
  (``TOOLCALL_STATEFUL_STEPS`` changes the number of steps, default 30).

"""

from __future__ import annotations

import itertools
import json
import os
from collections import OrderedDict, deque
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import anyio.from_thread
from anyio.from_thread import BlockingPortal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from toolcall_tracker import (
    CallFailure,
    End,
    IgnoreReason,
    InvalidEvent,
    Limits,
    ToolCall,
    ToolCallFailed,
    ToolCallStateMachine,
    ToolCallTracker,
    TrackerClosed,
    UnknownToolCall,
)

EXAMPLES = int(os.environ.get("TOOLCALL_STATEFUL_EXAMPLES", "50"))
STEPS = int(os.environ.get("TOOLCALL_STATEFUL_STEPS", "30"))
DEADLINE = 10.0
"""Seconds any single wait on the loop may take before the test fails (a hang)."""

KNOWN = ("start", "delta", "ready", "result", "error", "end")
MISSING: Any = object()

# --------------------------------------------------------------------------------------
# the reference model
# --------------------------------------------------------------------------------------


def reference_json(text: str) -> tuple[bool, Any]:
    """JSON.parse rules: strict JSON, no NaN/Infinity, JSON whitespace only."""

    def reject(name: str) -> Any:
        raise ValueError(name)

    if not text.strip(" \t\n\r"):
        return False, None
    try:
        return True, json.JSONDecoder(strict=True, parse_constant=reject).decode(text)
    except (ValueError, RecursionError):
        return False, None


@dataclass
class MCall:
    serial: int
    id: str
    name: str
    room: int
    status: str = "pending"
    text: str = ""
    args: Any = None
    result: Any = None
    error: Any = None  # a tool's error value, or ("kind", detail) for library errors
    parsed: bool = False  # its arguments parsed (it was running, whatever came after)

    def view(self) -> tuple[Any, ...]:
        return (self.id, self.name, self.status, self.text, self.args, self.result, self.error)


def view_of(call: ToolCall) -> tuple[Any, ...]:
    """A ToolCall in the model's terms (library error values reduced to kind + detail)."""
    error = call.error
    if isinstance(error, CallFailure):
        detail: Any = None
        if error.kind == "incomplete_arguments":
            detail = error.reason  # type: ignore[attr-defined]
        elif error.kind == "arguments_too_large":
            detail = (error.limit, error.received)  # type: ignore[attr-defined]
        error = (error.kind, detail)
    return (call.id, call.name, call.status.value, call.args_text, call.args, call.result, error)


class Model:
    """What the README's tables say, for one turn."""

    def __init__(self, limits: Limits, keep_finished: int | None) -> None:
        self.limits = limits
        self.keep = keep_finished
        self.calls: dict[str, MCall] = {}
        self.tombstones: OrderedDict[str, None] = OrderedDict()
        self.finished: deque[MCall] = deque()
        self.phase = "open"
        self.end: tuple[str | None, bool] | None = None
        self.closed = False
        self.ready_order: list[str] = []
        self.serial = 0

    # -- validation, as the event table documents it ------------------------------------

    def decode(self, event: Any) -> tuple[str, str | None, Any] | str:
        """``(kind, id, payload)``, or ``"invalid"`` / ``"unknown"``."""
        if not isinstance(event, Mapping):
            return "invalid"
        kind = event.get("type")
        if not isinstance(kind, str):
            return "invalid"
        if kind not in KNOWN:
            return "unknown"
        if kind == "end":
            reason, ok = event.get("reason"), event.get("ok", True)
            if (reason is not None and type(reason) is not str) or type(ok) is not bool:
                return "invalid"
            return kind, None, (reason, ok)
        call_id = event.get("id", MISSING)
        if type(call_id) is not str or not call_id:
            return "invalid"
        payload: Any = None
        if kind == "start":
            payload = event.get("name", MISSING)
            if type(payload) is not str:
                return "invalid"
        elif kind == "delta":
            payload = event.get("argsTextDelta", MISSING)
            if payload is MISSING:
                payload = event.get("args_text_delta", MISSING)
            if type(payload) is not str:
                return "invalid"
        elif kind in ("result", "error"):
            payload = event.get(kind, MISSING)
            if payload is MISSING:
                return "invalid"
        if len(call_id) > self.limits.max_id_chars:
            return "invalid"
        if kind == "start" and len(payload) > self.limits.max_name_chars:
            return "invalid"
        return kind, call_id, payload

    # -- transitions --------------------------------------------------------------------

    def apply(self, event: Any) -> tuple[str | IgnoreReason, dict[str, MCall]]:
        """``("invalid" | "applied" | reason, calls changed by it)``."""
        decoded = self.decode(event)
        if decoded == "invalid":
            return "invalid", {}
        if decoded == "unknown":
            return IgnoreReason.UNKNOWN_TYPE, {}
        kind, call_id, payload = decoded
        changed: dict[str, MCall] = {}
        if self.phase == "ended" and kind in ("start", "delta", "ready", "end"):
            return IgnoreReason.TURN_ENDED, changed
        if kind == "end":
            self.end_turn(*payload, changed)
            return "applied", changed
        if self.phase == "full" and kind == "start":
            return IgnoreReason.TOO_MANY_CALLS, changed
        assert call_id is not None
        call = self.calls.get(call_id)
        if call is None:
            if call_id in self.tombstones:
                return IgnoreReason.FORGOTTEN, changed
            if kind != "start":
                return IgnoreReason.UNKNOWN_ID, changed
            self.serial += 1
            call = MCall(self.serial, call_id, payload, self.limits.max_args_chars)
            self.calls[call_id] = call
            if len(self.calls) >= self.limits.max_calls and self.phase == "open":
                self.phase = "full"
            changed[call_id] = call
            return "applied", changed
        if kind == "start":
            return IgnoreReason.DUPLICATE_START, changed
        if call.status in ("done", "error"):
            return IgnoreReason.ALREADY_FINISHED, changed
        if call.status == "pending":
            if kind == "result":
                return IgnoreReason.NOT_RUNNING, changed
            if kind == "delta":
                if len(payload) > call.room:
                    limit = self.limits.max_args_chars
                    received = limit - call.room + len(payload)
                    call.text = ""
                    self.finish(call, "error", ("arguments_too_large", (limit, received)), changed)
                else:
                    call.room -= len(payload)
                    call.text += payload
                return "applied", changed
            if kind == "ready":
                ok, value = reference_json(call.text)
                if ok:
                    call.status, call.args, call.parsed = "running", value, True
                    self.ready_order.append(call_id)
                    changed[call_id] = call
                else:
                    self.finish(call, "error", ("invalid_arguments", None), changed)
                return "applied", changed
            self.finish(call, "error", payload, changed)
            return "applied", changed
        # running
        if kind in ("delta", "ready"):
            return IgnoreReason.NOT_PENDING, changed
        self.finish(call, "done" if kind == "result" else "error", payload, changed)
        return "applied", changed

    def finish(self, call: MCall, status: str, value: Any, changed: dict[str, MCall]) -> None:
        call.status = status
        if status == "done":
            call.result = value
        else:
            call.error = value
        changed[call.id] = call
        if self.keep is not None:
            self.finished.append(call)
            while len(self.finished) > self.keep:
                oldest = self.finished.popleft()
                if self.calls.get(oldest.id) is oldest:
                    self.drop(oldest)

    def end_turn(self, reason: str | None, ok: bool, changed: dict[str, MCall]) -> None:
        self.phase = "ended"
        self.end = (reason, ok)
        for call in list(self.calls.values()):
            if call.status == "pending":
                self.finish(call, "error", ("incomplete_arguments", reason), changed)

    def drop(self, call: MCall) -> None:
        del self.calls[call.id]
        self.tombstones[call.id] = None
        if len(self.tombstones) > self.limits.remember_forgotten:
            self.tombstones.popitem(last=False)
        if self.phase == "full" and len(self.calls) < self.limits.max_calls:
            self.phase = "open"

    def forget(self, call_id: str) -> tuple[str, Any]:
        call = self.calls.get(call_id)
        if call is None:
            return "none", None
        if call.status not in ("done", "error"):
            return "refused", None
        self.drop(call)
        return "forgotten", call.view()

    def views(self) -> list[tuple[Any, ...]]:
        return [call.view() for call in self.calls.values()]

    # -- waiting ------------------------------------------------------------------------

    def wait_outcome(
        self, wanted: tuple[str, ...], call_id: str, changed: dict[str, MCall]
    ) -> tuple[Any, ...] | None:
        """What a waiter for ``call_id`` returns now, or ``None`` if it still waits.

        A waiter that was woken by a change of its call sees that call even if retention
        forgot it in the same step (``changed``). ``wait_ready`` also returns a call whose
        arguments parsed and which failed afterwards.
        """
        call = changed.get(call_id) or self.calls.get(call_id)
        if call is not None:
            if call.status in wanted:
                return ("value", call.view())
            if call.status == "error" and call.parsed and "running" in wanted:
                return ("value", call.view())
            if call.status == "error":
                return ("failed", call.view())
        elif call_id in self.tombstones:
            return ("unknown",)
        if self.closed:
            return ("closed",)
        if call is None and self.end is not None:
            return ("unknown",)
        return None


# --------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------

CALL_IDS = st.sampled_from(["a", "b", "c"])
IDS = CALL_IDS | st.sampled_from(["ab", "abc", "abcde"])
NAMES = st.sampled_from(["f", "tool", "", "toolong"])
FRAGMENT_PIECES = [
    "{", "}", "[", "]", '"', ":", ",", " ", "\n", "\t", "1", "-", "0", ".", "e", "2",
    "true", "null", "NaN", "Infinity", "\\", "u00", "x", "01", "\x01", "é", '"k":',
    '{"q": ', '"hi"}', "\U0001f600", "\ud800",
]  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text('ab"\\é', max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("kq", max_size=2), inner),
    max_leaves=5,
)
FRAGMENTS = (
    st.sampled_from(FRAGMENT_PIECES)
    | st.lists(st.sampled_from(FRAGMENT_PIECES), max_size=4).map("".join)
    | JSON_VALUES.map(json.dumps)
)
VALUES = st.none() | st.integers(-5, 5) | st.text("xyz", max_size=2) | st.lists(st.integers(0, 3))


def event_strategy() -> st.SearchStrategy[Any]:
    start = st.builds(lambda i, n: {"type": "start", "id": i, "name": n}, IDS, NAMES)
    delta = st.builds(lambda i, f: {"type": "delta", "id": i, "argsTextDelta": f}, IDS, FRAGMENTS)
    snake = st.builds(lambda i, f: {"type": "delta", "id": i, "args_text_delta": f}, IDS, FRAGMENTS)
    ready = st.builds(lambda i: {"type": "ready", "id": i}, IDS)
    result = st.builds(lambda i, v: {"type": "result", "id": i, "result": v}, IDS, VALUES)
    error = st.builds(lambda i, v: {"type": "error", "id": i, "error": v}, IDS, VALUES)
    end = st.builds(
        lambda r, ok: {"type": "end", "reason": r, "ok": ok},
        st.sampled_from([None, "stop", "length"]),
        st.booleans(),
    )
    malformed = st.sampled_from(
        [
            None,
            "start",
            42,
            {},
            {"type": None, "id": "a"},
            {"type": 3, "id": "a"},
            {"type": "start", "id": 5, "name": "f"},
            {"type": "start", "id": "", "name": "f"},
            {"type": "start", "id": "a"},
            {"type": "start", "id": "a", "name": None},
            {"type": "delta", "id": "a"},
            {"type": "delta", "id": "a", "argsTextDelta": None},
            {"type": "delta", "id": "b", "argsTextDelta": b"{}"},
            {"type": "ready"},
            {"type": "result", "id": "a"},
            {"type": "error", "id": "b"},
            {"type": "end", "ok": "yes"},
            {"type": "end", "ok": 1},
            {"type": "end", "reason": 5},
        ]
    )
    unknown = st.builds(
        lambda t, i: {"type": t, "id": i}, st.sampled_from(["ping", "START", ""]), IDS
    )
    # the per-call events dominate; the rest is seasoning
    return st.one_of(
        start, start, delta, delta, delta, snake, ready, ready, result, result, error,
        end, malformed, unknown,
    )  # fmt: skip


DEFAULT = Limits()
LIMITS = st.one_of(
    st.just(DEFAULT),
    st.builds(
        Limits,
        max_args_chars=st.sampled_from([3, 12, 40, DEFAULT.max_args_chars]),
        max_calls=st.sampled_from([1, 2, 3, DEFAULT.max_calls]),
        max_id_chars=st.sampled_from([1, 2, DEFAULT.max_id_chars]),
        max_name_chars=st.sampled_from([1, 4, DEFAULT.max_name_chars]),
        remember_forgotten=st.sampled_from([0, 1, 2, DEFAULT.remember_forgotten]),
    ),
    st.builds(  # the extremes
        Limits,
        max_args_chars=st.sampled_from([0, 1]),
        max_calls=st.just(1),
        max_id_chars=st.just(1),
        max_name_chars=st.just(0),
        remember_forgotten=st.just(0),
    ),
)


@st.composite
def call_sequences(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One call's events in order, cut short anywhere, with a little noise."""
    call_id = draw(CALL_IDS)
    text = json.dumps(draw(JSON_VALUES), indent=draw(st.sampled_from([None, 1])))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=4))))
    points = [0, *cuts, len(text)]
    events: list[dict[str, Any]] = [{"type": "start", "id": call_id, "name": "f"}]
    events += [
        {"type": "delta", "id": call_id, "argsTextDelta": text[a:b]}
        for a, b in itertools.pairwise(points)
    ]
    events.append({"type": "ready", "id": call_id})
    outcome = draw(st.sampled_from(["result", "result", "error", "none"]))
    if outcome != "none":
        events.append({"type": outcome, "id": call_id, outcome: draw(VALUES)})
    if draw(st.sampled_from([False, False, False, True])):  # cut short anywhere
        events = events[: draw(st.integers(1, len(events)))]
    if draw(st.booleans()):  # a duplicate somewhere
        events.insert(draw(st.integers(0, len(events))), draw(st.sampled_from(events)))
    return events


# --------------------------------------------------------------------------------------
# the state machine
# --------------------------------------------------------------------------------------


class Hook:
    def __init__(self) -> None:
        self.reasons: list[IgnoreReason] = []

    def __call__(self, event: Any, reason: IgnoreReason) -> None:
        self.reasons.append(reason)


@dataclass
class Waiter:
    kind: str  # "wait_ready" | "wait_done"
    call_id: str
    future: Future[None] | None = None
    scope: anyio.CancelScope | None = None
    outcome: tuple[Any, ...] | None = None  # what the task got
    expected: tuple[Any, ...] | None = None  # what the model said, once it could
    wanted: tuple[str, ...] = field(default=())


async def run_waiter(tracker: ToolCallTracker, waiter: Waiter) -> None:
    with anyio.CancelScope() as scope:
        waiter.scope = scope
        try:
            call = await getattr(tracker, waiter.kind)(waiter.call_id)
        except ToolCallFailed as exc:
            waiter.outcome = ("failed", view_of(exc.call))
        except UnknownToolCall:
            waiter.outcome = ("unknown",)
        except TrackerClosed:
            waiter.outcome = ("closed",)
        except Exception as exc:  # anything else is a bug; keep it for the assertion
            waiter.outcome = ("crashed", repr(exc))
        else:
            waiter.outcome = ("value", view_of(call))
    if scope.cancelled_caught:
        waiter.outcome = ("cancelled",)


async def collect_ready(tracker: ToolCallTracker, into: list[str]) -> None:
    async for call in tracker.ready_calls():
        assert call.status.value == "running"
        into.append(call.id)


class TrackerMachine(RuleBasedStateMachine):
    backend: ClassVar[str] = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self.model: Model | None = None
        self.portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self.waiters: list[Waiter] = []
        self.yielded: list[str] = []
        self.changed: dict[str, MCall] = {}

    # -- setup ---------------------------------------------------------------------------

    @initialize(
        limits=LIMITS,
        keep=st.sampled_from([None, 0, 1, 3]),
        via_consume=st.booleans(),
    )
    def setup(self, limits: Limits, keep: int | None, via_consume: bool) -> None:
        self.model = Model(limits, keep)
        self.machine_hook = Hook()
        self.machine = ToolCallStateMachine(
            on_ignored=self.machine_hook, limits=limits, keep_finished=keep
        )
        self.tracker_hook = Hook()
        self.tracker = ToolCallTracker(
            on_ignored=self.tracker_hook,
            limits=limits,
            keep_finished=keep,
            skip_invalid=via_consume,
        )
        self.via_consume = via_consume
        self.portal_cm = anyio.from_thread.start_blocking_portal(self.backend)
        self.portal = self.portal_cm.__enter__()
        self.ready_future = self.portal.start_task_soon(collect_ready, self.tracker, self.yielded)
        self.consume_future: Future[None] | None = None
        if via_consume:
            send, receive = self.portal.call(self._stream)
            self.send: MemoryObjectSendStream[Any] = send
            self.consume_future = self.portal.start_task_soon(self.tracker.consume, receive)
        self.settle()

    @staticmethod
    async def _stream() -> tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]:
        return anyio.create_memory_object_stream[Any](max_buffer_size=1_000)

    def settle(self) -> None:
        """Let every task on the loop run until each one is blocked."""
        self.portal.call(anyio.wait_all_tasks_blocked)

    # -- rules ---------------------------------------------------------------------------

    @rule(event=event_strategy())
    def apply_event(self, event: Any) -> None:
        self.apply(event)

    @rule(events=call_sequences())
    def apply_call(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self.apply(event)
            self.agree()

    def apply(self, event: Any) -> None:
        """Apply one event to the model, the machine and the tracker; compare reports."""
        assert self.model is not None
        outcome, self.changed = self.model.apply(event)
        self.machine_hook.reasons.clear()
        self.tracker_hook.reasons.clear()

        if outcome == "invalid":
            try:
                self.machine.apply(event)
            except InvalidEvent:
                pass
            else:
                raise AssertionError(f"machine accepted an invalid event: {event!r}")
        else:
            self.machine.apply(event)

        if self.via_consume:
            self.portal.call(self.send.send_nowait, event)
            self.settle()
            expected_tracker = (
                [IgnoreReason.INVALID_EVENT] if outcome == "invalid" else self._reasons(outcome)
            )
        else:
            try:
                self.portal.call(self.tracker.apply, event)
            except InvalidEvent:
                assert outcome == "invalid", event
            else:
                assert outcome != "invalid", f"tracker accepted an invalid event: {event!r}"
            self.settle()
            expected_tracker = self._reasons(outcome)

        assert self.machine_hook.reasons == self._reasons(outcome), event
        assert self.tracker_hook.reasons == expected_tracker, event

    @staticmethod
    def _reasons(outcome: Any) -> list[IgnoreReason]:
        return [outcome] if isinstance(outcome, IgnoreReason) else []

    @rule(call_id=IDS)
    def forget(self, call_id: str) -> None:
        assert self.model is not None
        expected, view = self.model.forget(call_id)
        self.changed = {}
        for target in (self.machine, self.tracker):
            if expected == "refused":
                try:
                    self._forget(target, call_id)
                except ValueError:
                    continue
                raise AssertionError(f"forget({call_id!r}) of an unfinished call succeeded")
            got = self._forget(target, call_id)
            if expected == "none":
                assert got is None
            else:
                assert got is not None
                assert view_of(got) == view
        self.settle()

    def _forget(self, target: ToolCallStateMachine, call_id: str) -> ToolCall | None:
        if target is self.tracker:
            return self.portal.call(self.tracker.forget, call_id)
        return target.forget(call_id)

    @rule(kind=st.sampled_from(["wait_ready", "wait_done"]), call_id=IDS)
    def start_waiter(self, kind: str, call_id: str) -> None:
        wanted = ("running", "done") if kind == "wait_ready" else ("done",)
        waiter = Waiter(kind, call_id, wanted=wanted)
        waiter.future = self.portal.start_task_soon(run_waiter, self.tracker, waiter)
        self.waiters.append(waiter)
        self.changed = {}
        self.settle()

    @precondition(lambda self: any(w.expected is None for w in self.waiters))
    @rule(pick=st.integers(min_value=0))
    def cancel_waiter(self, pick: int) -> None:
        live = [w for w in self.waiters if w.expected is None]
        waiter = live[pick % len(live)]
        assert waiter.scope is not None
        self.portal.call(waiter.scope.cancel)
        self.settle()
        waiter.expected = ("cancelled",)
        self.changed = {}

    # -- checks --------------------------------------------------------------------------

    @invariant()
    def agree(self) -> None:
        if self.model is None:
            return
        model = self.model
        views = model.views()
        assert [view_of(c) for c in self.machine.list()] == views
        assert [view_of(c) for c in self.portal.call(self.tracker.list)] == views
        for call_id in ("a", "b", "c", "ab", "abc", "abcde"):
            expected = model.calls.get(call_id)
            got = self.machine.get(call_id)
            assert (got and view_of(got)) == (expected and expected.view())
        expected_end = model.end
        for end in (self.machine.end, self.tracker.end):
            assert (end and (end.reason, end.ok)) == expected_end
        assert self.yielded == model.ready_order
        self.check_waiters()

    def check_waiters(self) -> None:
        assert self.model is not None
        for waiter in self.waiters:
            if waiter.expected is None:
                waiter.expected = self.model.wait_outcome(
                    waiter.wanted, waiter.call_id, self.changed
                )
            assert waiter.outcome == waiter.expected, (waiter.kind, waiter.call_id)

    def teardown(self) -> None:
        if self.portal_cm is None:
            return
        try:
            if self.model is not None:
                self.finish_turn()
        finally:
            # Cancel whatever is left (only after a failure is anything left): exiting the
            # portal with an exception cancels its remaining tasks instead of waiting.
            stop = _TornDown()
            self.portal_cm.__exit__(_TornDown, stop, None)
            self.portal_cm = None

    def finish_turn(self) -> None:
        """Close the source (or end the turn), close the tracker: nothing may hang."""
        model = self.model
        assert model is not None
        if self.via_consume:
            self.portal.call(self.send.aclose)
            assert self.consume_future is not None
            self.consume_future.result(timeout=DEADLINE)
            self.settle()
            self.changed = {}
            if model.end is None:
                model.end_turn("source exhausted", True, self.changed)
                self.machine.apply(End(ok=True, reason="source exhausted"))
            self.agree()
        self.portal.call(self.tracker.aclose)
        self.settle()
        self.changed = {}
        if model.end is None:
            model.end_turn("tracker closed", False, self.changed)
            self.machine.apply(End(ok=False, reason="tracker closed"))
        model.closed = True
        self.agree()
        # no waiter is left hanging, and the ready_calls iterator finished
        for waiter in self.waiters:
            assert waiter.future is not None
            waiter.future.result(timeout=DEADLINE)
            assert waiter.outcome is not None
        self.ready_future.result(timeout=DEADLINE)
        assert self.yielded == model.ready_order


class _TornDown(Exception):
    """Passed to the portal's ``__exit__`` so that it cancels leftover tasks."""


SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class AsyncioMachine(TrackerMachine):
    backend = "asyncio"


class TrioMachine(TrackerMachine):
    backend = "trio"


TestStatefulAsyncio = AsyncioMachine.TestCase
TestStatefulAsyncio.settings = SETTINGS
TestStatefulTrio = TrioMachine.TestCase
TestStatefulTrio.settings = SETTINGS
