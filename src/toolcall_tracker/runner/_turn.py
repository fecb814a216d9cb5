"""One :meth:`ToolRunner.run`: the calls of one turn, driven through the runner's table.

The turn holds one :class:`RunnerCallTable` and changes a call's state only in :meth:`Turn.fire`,
which looks the event up in :data:`~toolcall_tracker.runner._table.TRANSITIONS` and takes
the cell's step (the table module tells the whole story). Events come from the tracker
(ready, the turn's end, closing, other code ending a call), the application (decisions and
cancellations through the run's :class:`RunControl`), the clock, and the tools' own tasks
and threads. A tool starts only on ``claimed``, after :meth:`Turn.may_start` read the live
state once more. Effects happen after the state changed, so an event caused by an effect
(the tracker reports the outcome the turn just wrote) finds the call moved on, and is
ignored.
"""

from __future__ import annotations

import copy
import logging
import math
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import anyio.lowlevel

from .._keys import call_key, idempotency_key
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..events import End
from ..failures import CallFailure
from ..tracker import ToolCallTracker
from . import _outcomes as outcomes
from ._admit import admit, bind_edited, decide_need
from ._approval import ApprovalDesk, Resumed, Stamp
from ._calls import RunnerCall, RunnerCallTable
from ._guard import StartGuard
from ._invoke import describe
from ._pending import PendingApproval
from ._policy import RunPolicy
from ._ports import Link
from ._start import run_tool
from ._table import TRANSITIONS, RunnerEvent, RunnerListener, RunnerState, resolved

if TYPE_CHECKING:
    from ._otel import TurnSpans

logger: Final = logging.getLogger("toolcall_tracker.runner")

S: Final = RunnerState
E: Final = RunnerEvent
_RUNNING: Final = Status.RUNNING
_STREAMING: Final = RunnerState.STREAMING
_FINISHED: Final = (Status.DONE, Status.ERROR)


class Turn(ChangeListener):
    """The state of one :meth:`ToolRunner.run` (a listener of the tracker's feed)."""

    def __init__(
        self,
        policy: RunPolicy,
        tracker: ToolCallTracker,
        link: Link | None = None,
        resumed: Resumed | None = None,
        *,
        deadline: float | None = None,
        listener: RunnerListener | None = None,
        guard: StartGuard | None = None,
        deps: Any = None,
        stamp: Stamp | None = None,
    ) -> None:
        self.policy = policy  # read by the tool's task (``._start``) too
        self.deps = deps  # given to tools through their ToolContext
        self.tracker = tracker
        self.link = link
        self.guard = guard
        self._resumed = resumed
        if stamp is None:  # a resume's is its state's; a new turn's nonce is made when needed
            stamp = resumed.stamp if resumed is not None else Stamp()
        self._desk = ApprovalDesk(policy.signer, stamp, link, tracker)
        self._table = RunnerCallTable(listener)
        self._held = self._table.by_id  # (read by every ``fire``)
        self._slots = policy.turn_slots()
        self._timeout_at = math.inf  # the runner's overall timeout (bounds the tools)
        self._deadline_at = math.inf  # run(deadline=): bounds everything, the stream too
        self._deadline_seconds = deadline
        self._idle: anyio.Event | None = None
        self._gate: End | None = None  # the turn's end, once every call was told
        self._token: Any = None  # the event loop's, for wake-ups from other threads
        self._tg: anyio.abc.TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None
        tracing = policy.tracing
        # The turn's spans (read by the tool's task), or None: no OpenTelemetry work at all.
        self.spans: TurnSpans | None = tracing.turn(tracker) if tracing is not None else None

    # -- the run ------------------------------------------------------------------------

    async def go(self) -> None:
        tracker, link = self.tracker, self.link
        calls = tracker.ready_calls()
        timeout, deadline = self.policy.options.timeout, self._deadline_seconds
        if timeout is not None or deadline is not None:  # (the clock only when bounded)
            now = anyio.current_time()
            if timeout is not None:
                self._timeout_at = now + timeout
            if deadline is not None:
                self._deadline_at = now + deadline
        if link is not None:
            link.open(self)
        tracker.subscribe(self)
        if self.spans is not None:
            tracker.subscribe(self.spans)
        self._token = anyio.lowlevel.current_token().native_token
        unregister = None
        try:
            async with anyio.create_task_group() as tg:
                scope = self._scope = tg.cancel_scope  # the run's (one scope per turn)
                scope.deadline = min(self._timeout_at, self._deadline_at)
                self._tg = tg
                # Closing the tracker reaches every call held, with no task watching.
                unregister = tracker.on_close(self._closed)
                async for call in calls:
                    self._ready(call)
                self._turn_ended()
                await self._until_settled()
            if scope.cancelled_caught:  # the overall timeout or deadline expired
                self._expired()
                if anyio.current_time() < self._deadline_at:  # the timeout: tools only
                    with anyio.CancelScope(deadline=self._deadline_at):
                        async for call in calls:  # later calls cannot run any more
                            if self.state(call.id) is S.VALIDATING:  # ready, not held
                                self._write(call.id, self._timed_out(call, False), error=True)
                self._sweep(E.DEADLINE, self._timed_out, streaming=True)
        except BaseException as exc:
            # Cancelled from outside, or something went badly wrong: nothing stays running.
            reason = (
                "the tool runner was cancelled"
                if isinstance(exc, anyio.get_cancelled_exc_class())
                else f"the tool runner stopped: {describe(exc)}"
            )
            self._sweep(E.CANCEL, lambda call, started: outcomes.cancelled(call, started, reason))
            raise
        finally:
            if unregister is not None:
                unregister()
            self._tg = None
            self._slots.listen(False, None, self._dispatch)
            tracker.unsubscribe(self)
            if self.spans is not None:
                tracker.unsubscribe(self.spans)
                self.spans.close()
            if link is not None:
                link.close(self._desk.pending())

    def _closed(self) -> None:
        """The tracker closed: every call the turn holds ends (a running tool is stopped)."""
        for item in self._table.items():
            self.fire(item, E.CLOSED, outcomes.closed(item.call, item.tool_started))

    async def _until_settled(self) -> None:
        """In process: until no call awaits a decision (nor a predicate deciding one)."""
        while self._unsettled():
            self._idle = anyio.Event()
            await self._idle.wait()
        self._idle = None

    def _expired_now(self) -> bool:
        ends = min(self._timeout_at, self._deadline_at)
        return ends < math.inf and anyio.current_time() >= ends

    def _unsettled(self) -> bool:
        """Whether a call still waits for something the turn must see through: a predicate,
        a slot (held elsewhere: another turn's abandoned thread), an in-process decision."""
        count, deferred = self._table.count, self.link is not None and self.link.defer
        waiting = count[S.VALIDATING] + count[S.WAITING_SLOT]
        return bool(waiting or (count[S.AWAITING_APPROVAL] and not deferred))

    def _expired(self) -> None:
        """The run's timeout or deadline passed: every waiting call ends (a deferred approval
        stays pending: nobody was asked yet)."""
        for item in self._table.items():
            self.fire(item, E.DEADLINE, self._timed_out(item.call, item.tool_started))

    # -- the table ----------------------------------------------------------------------

    def fire(self, item: RunnerCall, event: RunnerEvent, payload: Any = None) -> bool:
        """Apply ``event`` to ``item`` through ``TRANSITIONS``; ``False`` if ignored."""
        state = item.state
        if state is not _STREAMING and self._held.get(item.call.id) is not item:
            return False  # it left the table
        cell = _CELLS[state][event]
        if cell is None:
            return False
        take, targets = cell
        take(self, item, event, targets, payload)
        return True

    def _move(
        self,
        item: RunnerCall,
        after: RunnerState,
        event: RunnerEvent,
        targets: tuple[RunnerState, ...],
    ) -> None:
        self._table.move(item, after, event, targets, self._moved)

    def _moved(self, item: RunnerCall, before: RunnerState) -> None:
        if before is S.AWAITING_APPROVAL and item.state is not S.AWAITING_APPROVAL:
            self._desk.withdraw(item.call.id)
        if self._idle is not None and not self._unsettled():
            self._idle.set()

    def context_keys(self, call: ToolCall) -> tuple[str, int]:
        """The idempotency key of ``call`` and which attempt its run is, for its tool's
        :class:`ToolContext`: the store key its guard claims (the turn's key otherwise)."""
        guard = self.guard
        key_of = getattr(guard, "key", None)
        if callable(key_of):
            key = key_of(call)
        else:
            key = call_key(self._desk.turn_key(), call.id, call.name, call.args_text)
        attempt_of = getattr(guard, "attempt", None)
        attempt = attempt_of(call) if callable(attempt_of) else 1
        return idempotency_key(key), attempt

    def state(self, call_id: str) -> RunnerState | None:
        """The call's runner state (what :meth:`RunControl.state` returns)."""
        return self._table.state(self.tracker, call_id)

    # -- the steps (one per ``Step``; each moves the call, then acts) -------------------

    def _step_admit(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        call = item.call
        self._move(item, S.VALIDATING, event, targets)
        if self.tracker.status(call.id) is not _RUNNING:
            self.fire(item, E.FINISHED_ELSEWHERE)
            return
        if self._expired_now():
            self.fire(item, E.DEADLINE, self._timed_out(call, False))
            return
        admitted = admit(self.policy.tools, call)
        if isinstance(admitted, CallFailure):
            self.fire(item, E.INVALID, admitted)
            return
        item.spec, item.args, item.kwargs = admitted
        item.gated = not self.policy.eager(item.spec)
        resumed = self._resumed
        if resumed is not None:
            if call.id in resumed.already:
                self.fire(item, E.INVALID, outcomes.already_finished(call))
            else:
                self.fire(item, E.NEEDS_APPROVAL)
            return
        decide_need(
            item.spec, call, lambda event, payload: self.fire(item, event, payload), self._tg
        )

    def _step_ask(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        call, resumed, link = item.call, self._resumed, self.link
        # A decision brought along (a resume's, or one preset on the control) applies now.
        decided = resumed.decisions if resumed is not None else link.decided if link else {}
        decision = decided.get(call.id)
        if resumed is None and not self._desk.can_ask:
            self._move(item, S.NOT_EXECUTED, event, targets)
            self._write(call.id, outcomes.denied(call, "no_approver"), error=True)
            return
        self._desk.ask(call, publish=resumed is None and decision is None)
        self._move(item, S.AWAITING_APPROVAL, event, targets)
        if self.spans is not None:
            self.spans.approval_requested(call.id)
        if decision is not None:
            self.decide(call.id, decision.approved, decision.arguments, decision.reason)

    def decide(self, call_id: str, approved: bool, arguments: Any, reason: str | None) -> bool:
        """A decision for a call awaiting one (``TurnPort``)."""
        item = self._table.get(call_id)
        if item is None or item.state is not S.AWAITING_APPROVAL:
            if self.tracker.get(call_id) is None:
                raise KeyError(f"{call_id!r} is no call of this run")
            return False
        call = item.call
        if self.spans is not None:
            self.spans.approval_decided(call_id, approved, reason, arguments)
        if not approved:
            return self.fire(item, E.DENIED, outcomes.denied(call, reason or "denied"))
        if arguments is not None:
            assert item.spec is not None
            bound = bind_edited(item.spec, call, arguments)
            if isinstance(bound, CallFailure):
                return self.fire(item, E.INVALID, bound)
            item.args, item.kwargs = bound
            item.edited = copy.deepcopy(arguments)  # what the control shows: another copy
            if self.link is not None:
                self.link.edited[call_id] = item.edited
        return self.fire(item, E.APPROVED)

    def _step_proceed(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        end = self._gate  # the end the turn's calls were told about (ready order holds)
        if not item.gated or (end is not None and end.ok):
            self._move(item, S.WAITING_SLOT, event, targets)
            self._enqueue(item)
        elif end is None:
            self._move(item, S.WAITING_GATE, event, targets)
        else:
            self._move(item, S.NOT_EXECUTED, event, targets)
            self._write(item.call.id, outcomes.not_executed(item.call, end.reason), error=True)

    def _step_gate(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        if item.gated:
            end = self.tracker.end
            failure = outcomes.not_executed(item.call, end.reason if end else None)
            self._step_fail(item, event, targets, failure)

    def _step_queue(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        self._move(item, S.WAITING_SLOT, event, targets)
        self._enqueue(item)

    def _step_claim(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        assert self._tg is not None  # (the backend's scope class: no look-up, one __init__)
        item.scope = type(self._tg.cancel_scope)()
        self._move(item, S.CLAIMING, event, targets)
        self._tg.start_soon(run_tool, self, item, name=f"tool {item.call.name} ({item.call.id})")

    def _step_start(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        failure = self.may_start(item)
        if failure is None:
            self._move(item, S.RUNNING, event, targets)
            item.tool_started = True
            self.tracker.mark_tool_started(item.call.id)
            if item.edited is not None and self.link is not None:
                self.link.ran.add(item.call.id)
        else:  # (a call that other code ended keeps its outcome: nothing is written)
            self._step_fail(item, event, targets, failure)

    def may_start(self, item: RunnerCall) -> CallFailure | None:
        """The one guard before a tool starts, on live state; ``None``: it may start."""
        tracker, call = self.tracker, item.call
        if tracker.closed:
            return outcomes.closed(call, False)
        if tracker.status(call.id) is not _RUNNING:
            return outcomes.cancelled(call, False, "other code had ended the call")
        end = tracker.end
        if item.gated and (end is None or not end.ok):
            return outcomes.not_executed(call, end.reason if end else None)
        scope = self._scope
        if scope is None or scope.cancel_called or not item.slot or item.spec is None:
            return outcomes.cancelled(call, False, "the tool runner was stopping")
        if self._expired_now():
            return self._timed_out(call, False)
        return None

    def _step_settle(
        self, item: RunnerCall, event: RunnerEvent, targets: Any, outcome: Any
    ) -> None:
        self._move(item, S.NOT_EXECUTED, event, targets)
        self._release(item)
        failure: CallFailure | None = outcome.failure
        if failure is not None:
            self._write(item.call.id, failure, error=True)
        else:
            self._write(item.call.id, outcome.result, error=False)

    def _step_record(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        self._move(item, S.RECORDING, event, targets)
        self._release(item)

    def _step_finish(
        self, item: RunnerCall, event: RunnerEvent, targets: Any, outcome: Any
    ) -> None:
        self._move(item, S.FINISHED if event is E.RECORDED else S.IN_DOUBT, event, targets)
        result, failure = outcome
        self._write(
            item.call.id, failure if failure is not None else result, error=failure is not None
        )

    def _step_doubt(self, item: RunnerCall, event: RunnerEvent, targets: Any, outcome: Any) -> None:
        message = "call %r: its tool ran; the store could not record it: in doubt (never rerun)"
        logger.warning(message, item.call.id)
        self._step_finish(item, event, targets, outcome)

    def _step_fail(self, item: RunnerCall, event: RunnerEvent, targets: Any, failure: Any) -> None:
        assert isinstance(failure, CallFailure), (event, failure)
        self._move(item, S.NOT_EXECUTED, event, targets)
        self._release(item)
        if self.tracker.status(item.call.id) in (Status.PENDING, _RUNNING):
            self._write(item.call.id, failure, error=True)

    def _step_hold(self, item: RunnerCall, event: RunnerEvent, targets: Any, failure: Any) -> None:
        if self.link is not None and self.link.defer:
            return  # stays awaiting approval: ``control.pending`` will hold it
        call = item.call
        self._step_fail(
            item, event, targets, outcomes.denied(call, "timeout", self.policy.options.timeout)
        )

    def _step_leave(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        self._move(item, S.NOT_EXECUTED, event, targets)
        self._release(item)

    def _step_stop(self, item: RunnerCall, event: RunnerEvent, targets: Any, failure: Any) -> None:
        self._move(item, S.ABANDONED, event, targets)
        if failure is not None and self.tracker.status(item.call.id) is _RUNNING:
            self._write(item.call.id, failure, error=True)
        if item.scope is not None:
            item.scope.cancel()  # its task sees the call ended and stops the tool

    def _step_release(self, item: RunnerCall, event: RunnerEvent, targets: Any, _: Any) -> None:
        self._move(item, S.FINISHED, event, targets)
        self._release(item)

    # -- slots --------------------------------------------------------------------------

    def _enqueue(self, item: RunnerCall) -> None:
        assert item.spec is not None
        if self._slots.take_now(item.spec.name, self._tg is not None, self._scope):
            item.slot = True  # nobody queued: it is what _dispatch would grant it
            self.fire(item, E.SLOT_GRANTED)
        else:
            self._slots.queue.push(item.spec.name, item.call.id)
            self._dispatch()

    def _dispatch(self) -> None:
        """Give free slots to the oldest queued calls whose tool may start (ready order
        among the calls of one tool, always). While queued calls wait, the turn listens
        for capacity another turn's tool (or an abandoned thread) gives back."""
        scope, slots = self._scope, self._slots
        while self._tg is not None and scope is not None and not scope.cancel_called:
            granted = slots.grant()
            if granted is None:
                break  # no slot, or every queued call's tool is at its cap
            tool, call_id = granted
            item = self._table.get(call_id)
            if item is None or item.state is not S.WAITING_SLOT:
                slots.give_back(tool)  # it left the queue meanwhile (cancelled...)
                continue
            item.slot = True
            self.fire(item, E.SLOT_GRANTED)
        slots.listen(self._tg is not None, self._token, self._dispatch)

    def _release(self, item: RunnerCall) -> None:
        """Give back a call's slot (its tool has really stopped)."""
        if item.slot:
            item.slot = False
            assert item.spec is not None
            self._slots.give_back(item.spec.name, runner_wide=not item.released_by_thread)
            if self._slots.queue:  # (the queue empties only in _dispatch, which then stops
                self._dispatch()  # listening for capacity)

    # -- the tracker's feed and the control ---------------------------------------------

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after in _FINISHED:
            item = self._table.get(call_id)
            if item is not None:
                self.fire(item, E.FINISHED_ELSEWHERE)

    def cancel(self, call_id: str, reason: str) -> bool:
        """Cancel one call wherever it is, streaming included (``TurnPort``)."""
        why = f"the call was cancelled ({reason})"
        item = self._table.get(call_id)
        if item is not None:
            failure = outcomes.cancelled(item.call, item.tool_started, why, reason)
            return self.fire(item, E.CANCEL, failure)
        call = self.tracker.get(call_id)
        if call is None or call.status in _FINISHED:
            return False
        # streaming, or ready and not yet taken up: it ends here and never runs
        return self.fire(RunnerCall(call), E.CANCEL, outcomes.cancelled(call, False, why, reason))

    def awaiting(self) -> list[PendingApproval]:
        return self._desk.awaiting()

    def sizes(self) -> dict[str, int]:
        """The sizes of the turn's own tables (for tests of the memory bound)."""
        sizes = (len(self._table), len(self._slots.queue), len(self._desk))
        return dict(zip(("calls", "queue", "requests"), sizes, strict=True))

    def _ready(self, call: ToolCall) -> None:
        if self.tracker.status(call.id) is not _RUNNING or self._table.get(call.id) is not None:
            return  # failed (or cancelled) already: nothing to run
        self.fire(RunnerCall(call), E.READY)

    def _turn_ended(self) -> None:
        end = self._gate = self.tracker.end
        if end is not None:
            for item in self._table.items():
                self.fire(item, E.TURN_OK if end.ok else E.TURN_NOT_OK)

    # -- outcomes -----------------------------------------------------------------------

    def _timed_out(self, call: ToolCall, started: bool) -> CallFailure:
        if anyio.current_time() >= self._deadline_at:
            return outcomes.timed_out(call, "run", started, self._deadline_seconds)
        return outcomes.timed_out(call, "run", started, self.policy.options.timeout)

    def _sweep(self, event: RunnerEvent, failure: Any, *, streaming: bool = False) -> None:
        """``event`` to every call held; end every other call of the turn still ``running``
        (``pending`` too if ``streaming``)."""
        for item in self._table.items():
            self.fire(item, event, failure(item.call, item.tool_started))
        alive = (Status.PENDING, _RUNNING) if streaming else (_RUNNING,)
        for call in self.tracker.list():
            if call.status in alive and self._table.get(call.id) is None:
                self._write(call.id, failure(call, False), error=True)

    def _write(self, call_id: str, value: Any, *, error: bool) -> None:
        outcomes.write(self.tracker, call_id, value, error=error)

    # -- what the tool's task reads (``._start``) ---------------------------------------

    def stopped(self, item: RunnerCall) -> None:
        """An abandoned call's tool has really stopped."""
        self.fire(item, E.TOOL_STOPPED)

    def stopped_because(self, item: RunnerCall) -> tuple[RunnerEvent, CallFailure]:
        """Why a call's task was cancelled by its run: the deadline, or a cancellation."""
        if self._expired_now():
            return E.DEADLINE, self._timed_out(item.call, item.tool_started)
        return E.CANCEL, outcomes.cancelled(
            item.call, item.tool_started, "the tool runner was cancelled"
        )


_CELLS: Final = resolved(TRANSITIONS, Turn)  # each step as the turn's method, built once
