"""One :meth:`ToolRunner.run`: the calls of one turn, dispatched from the tracker's live state.

Theory of operation. The runner discovers calls in ready order (``ready_calls()``) and
listens to the machine's change feed. Each call goes through:

1. admission, at once: the tool is looked up and the arguments validated (on a fresh copy
   parsed from the call's text, so a tool that mutates its arguments changes nobody
   else's); a failure ends the call here;
2. approval, if its tool needs it (``needs_approval``, or its predicate says so): the call
   is published to the run's :class:`RunControl` and waits for a decision while the others
   go on; a denial fails it (``approval_denied``), an approval (with edited arguments,
   validated again) lets it go on. Resumed turns (``ToolRunner.resume``) bring their
   decisions with them. Without a control, a call that needs approval is denied;
3. a queue, in ready order: an eager call joins the run queue at once (once approved), a
   gated call when the turn has ended ok and it is approved, in either order (every gated
   call fails with ``not_executed`` if the turn ended not ok, without asking anybody);
4. a slot: whenever one of ``max_concurrency`` slots is free, the oldest call of the run
   queue whose tool is under its own cap (``tool(fn, max_concurrency=N)`` or
   ``sequential=True``) gets it, and only then is its task started: so tools start in
   ready order, on every backend;
5. the tool runs in its own cancel scope; its outcome is applied as a ``result`` or an
   ``error`` event.

Live state: before a call takes a slot, and when it is granted one, the runner reads its
status from the tracker; a call that is no longer ``running`` (an adapter failed it, other
code applied an ``error``, the tracker closed) is never executed, and its outcome is left
as the tracker has it. If a call leaves ``running`` through anybody else while its tool
runs, the feed tells the runner, which cancels that tool. Per-call state is dropped as soon
as the call finishes, so a long run's memory stays flat.

End of a run: once the turn has ended and the gate opened, an in-process run waits until no
call awaits a decision (nor a predicate deciding whether one must); a deferred one
(``RunControl(defer_approvals=True)``) does not, and leaves the calls awaiting approval
``running``, handing their :class:`PendingApprovals` to the control.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.lowlevel
from pydantic import ValidationError

from .._json import _ArgumentsError, parse_json
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..errors import CallFailure, TrackerClosed
from ..failures import ToolRaised, UnknownTool
from ..tracker import ToolCallTracker
from . import _outcomes as outcomes
from ._approval import Approvals, Resumed, _Call
from ._guard import StartGuard
from ._invoke import Raised, describe, invoke
from ._progress import ProgressUpdate
from ._slots import RunQueue

if TYPE_CHECKING:
    from . import ToolRunner
    from ._control import RunControl

logger: Final = logging.getLogger("toolcall_tracker.runner")

_RUNNING: Final = Status.RUNNING
_FINISHED: Final = (Status.DONE, Status.ERROR)


class Turn(Approvals, ChangeListener):
    """The state of one :meth:`ToolRunner.run` (a listener of the tracker's feed)."""

    def __init__(
        self,
        runner: ToolRunner,
        tracker: ToolCallTracker,
        control: RunControl | None = None,
        resumed: Resumed | None = None,
        guard: StartGuard | None = None,
    ) -> None:
        self._runner = runner
        self._tools = runner._tools
        self._tracker = tracker
        self._control = control
        self._resumed = resumed
        self._guard = guard  # asked right before each tool starts (resume: the store)
        self._nonce = resumed.nonce if resumed is not None else secrets.token_urlsafe(16)
        self._free = runner._max_concurrency or math.inf
        self._deadline = math.inf
        self._calls: dict[str, _Call] = {}  # admitted and not finished
        self._awaiting: dict[str, _Call] = {}  # waiting for a decision, in asking order
        self._deciding = 0  # predicates still deciding whether a call needs approval
        self._idle: anyio.Event | None = None  # set when nothing awaits a decision
        self._gated: deque[str] = deque()  # waiting for the end of the turn
        self._gate_opened = False
        self._queue = RunQueue()  # waiting for a slot, in ready order, per-tool caps
        self._tg: anyio.abc.TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None
        tracing = runner._tracing
        self._otel = tracing.turn(tracker) if tracing is not None else None  # spans, if any

    async def go(self) -> None:
        tracker, control = self._tracker, self._control
        calls = tracker.ready_calls()
        timeout = self._runner._timeout
        if timeout is not None:
            self._deadline = anyio.current_time() + timeout
        if control is not None:
            control._attach(self)
        tracker.subscribe(self)
        if self._otel is not None:
            tracker.subscribe(self._otel)
        pending = None
        try:
            with anyio.CancelScope(deadline=self._deadline) as scope:
                self._scope = scope
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    async for call in calls:
                        self._admit(call)
                    self._open_gate()
                    if control is not None and not control.defer_approvals:
                        await self._until_decided()
            if scope.cancelled_caught:  # the overall timeout expired
                for item in list(self._awaiting.values()):
                    self._fail(item.call, outcomes.denied(item.call, "timeout", timeout))
                self._sweep(lambda call, started: self._timed_out(call, "run", started))
                async for call in calls:  # later calls cannot run any more; fail them
                    self._fail_if_running(call, self._timed_out(call, "run", False))
            pending = self.pending()
        except BaseException as exc:
            # Cancelled from outside, or something went badly wrong: nothing stays running.
            reason = (
                "the tool runner was cancelled"
                if isinstance(exc, anyio.get_cancelled_exc_class())
                else f"the tool runner stopped: {describe(exc)}"
            )
            self._sweep(lambda call, started: outcomes.cancelled(call, started, reason))
            raise
        finally:
            tracker.unsubscribe(self)
            if self._otel is not None:
                tracker.unsubscribe(self._otel)
                self._otel.close()
            if control is not None:
                control._detach(pending)

    # -- the change feed ----------------------------------------------------------------

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after in _FINISHED:
            item = self._drop(call_id)
            if item is not None and item.scope is not None:
                item.scope.cancel()  # finished by somebody else while its tool ran

    # -- what the control reaches -------------------------------------------------------

    def cancel(self, call_id: str, reason: str) -> bool:
        """Cancel one call wherever it is (deciding, awaiting approval, at the gate, queued,
        running): it ends ``error`` with ``cancelled``; nothing else is touched."""
        item = self._calls.get(call_id)
        if item is None or self._tracker.status(call_id) is not _RUNNING:
            return False
        scope = item.scope
        why = f"the call was cancelled ({reason})"
        self._fail(item.call, outcomes.cancelled(item.call, item.tool_started, why, reason))
        if scope is not None:
            scope.cancel()  # its task sees the call finished and leaves it as it is
        return True

    # -- admission, approval, gate, slots -----------------------------------------------

    def _admit(self, call: ToolCall) -> None:
        if self._tracker.status(call.id) is not _RUNNING:
            return  # failed (or finished) already: nothing to run
        spec = self._tools.get(call.name)
        if spec is None:
            available = tuple(sorted(self._tools))
            self._fail(
                call,
                UnknownTool(
                    message=f"there is no tool named {call.name!r}; available tools: "
                    f"{', '.join(available) or '(none)'}",
                    tool=call.name,
                    available=available,
                ),
            )
            return
        try:
            arguments = parse_json(call.args_text)  # the tool's own copy
        except _ArgumentsError:  # pragma: no cover (the text parsed once already)
            arguments = call.args
        try:
            args, kwargs = spec.bind(arguments)
        except ValidationError as exc:
            failure = outcomes.validation_failure(call.name, exc)
            logger.info("call %r: %s", call.id, failure.message)
            self._fail(call, failure)
            return
        eager = self._runner._eager if spec.eager is None else spec.eager
        item = _Call(call, spec, args, kwargs, gated=not eager)
        self._calls[call.id] = item
        resumed = self._resumed
        if resumed is not None:
            decision = resumed.decisions.get(call.id)
            if call.id in resumed.already:
                self._fail(call, outcomes.already_finished(call))
            elif decision is None:  # pragma: no cover (resume replays decided calls only)
                self._ask(item)
            else:
                self._apply_decision(
                    item, decision.approved, decision.arguments, decision.reason or "denied"
                )
            return
        self._decide_need(item)

    def _proceed(self, item: _Call) -> None:
        """Approved (or no approval needed): queue it, or hold it at the gate."""
        call_id = item.call.id
        if not item.gated:
            self._queue.push(item.spec.name, call_id)
            self._dispatch()
        elif not self._gate_opened:
            self._gated.append(call_id)
        else:
            end = self._tracker.end
            if end is not None and end.ok:
                self._queue.push(item.spec.name, call_id)
                self._dispatch()
            else:
                self._fail(item.call, outcomes.not_executed(item.call, end.reason if end else None))

    def _open_gate(self) -> None:
        """The turn has ended: gated calls join the run queue, or fail if it was not ok."""
        end = self._tracker.end
        if end is None:
            return
        self._gate_opened = True
        gated, self._gated = self._gated, deque()
        if end.ok:
            for call_id in gated:
                item = self._calls.get(call_id)
                if item is not None:
                    self._queue.push(item.spec.name, call_id)
            self._dispatch()
            return
        undecided = [item.call.id for item in self._awaiting.values() if item.gated]
        for call_id in [*gated, *undecided]:
            item = self._calls.get(call_id)
            if item is not None and self._tracker.status(call_id) is _RUNNING:
                self._fail(item.call, outcomes.not_executed(item.call, end.reason))

    def _dispatch(self) -> None:
        """Give free slots to the oldest queued calls that are still running and whose tool
        is under its own cap (ready order among the calls of one tool, always)."""
        queue, tg, scope = self._queue, self._tg, self._scope
        if tg is None or scope is None or scope.cancel_called:
            return  # the run is over (or stopping): nothing more starts
        while queue and self._free > 0:
            taken = queue.pop(self._cap)
            if taken is None:
                return  # every queued call's tool is at its cap
            name, call_id = taken
            item = self._calls.get(call_id)
            if item is None or self._tracker.status(call_id) is not _RUNNING:
                queue.release(name)
                self._calls.pop(call_id, None)
                continue  # no longer running: never executed, outcome left as it is
            self._free -= 1
            item.scope = anyio.CancelScope()
            tg.start_soon(self._run, item, name=f"tool {item.call.name} ({call_id})")

    # -- one tool -----------------------------------------------------------------------

    async def _run(self, item: _Call) -> None:
        call, spec, tracker = item.call, item.spec, self._tracker
        scope = item.scope
        assert scope is not None
        timeout = spec.timeout if spec.timeout is not None else self._runner._call_timeout
        try:
            with scope:
                await anyio.lowlevel.checkpoint_if_cancelled()  # a stopped run starts nothing
                if tracker.status(call.id) is not _RUNNING or call.id not in self._calls:
                    return  # finished while its task was being started
                if self._guard is not None and not await self._claim(item):
                    return  # not to be run here (finished with what the guard said)
                tracker.mark_tool_started(call.id)
                item.tool_started = True
                if item.edited is not None and self._control is not None:
                    self._control._edited[call.id] = item.edited  # it runs with them
                with (
                    self._traced(call),
                    anyio.move_on_after(math.inf if timeout is None else timeout) as limit,
                ):
                    result = await invoke(
                        spec, item.args, item.kwargs, (limit, scope), self._progress_of(item)
                    )
                tracker.mark_tool_finished(call.id)
            if scope.cancelled_caught:  # finished by somebody else: leave it as it is
                if item.tool_started:
                    tracker.mark_tool_finished(call.id)
                return
            failure: CallFailure | None = None
            if limit.cancelled_caught:
                failure = outcomes.timed_out(call, "call", True, timeout)
            elif type(result) is Raised:
                exc = result.exception
                logger.warning(
                    "tool %r raised in call %r: %s", call.name, call.id, result.text, exc_info=exc
                )
                failure = ToolRaised(
                    message=f"tool {call.name!r} raised {result.text}",
                    tool=call.name,
                    exception=type(exc).__name__,
                )
            if self._guard is not None:
                await self._record(call, None if failure else result, failure)
            if failure is not None:
                self._fail(call, failure)
            else:
                self._apply_result(call, result)
        except anyio.get_cancelled_exc_class():
            if item.tool_started:
                tracker.mark_tool_finished(call.id)
            if anyio.current_time() >= self._deadline:
                stopped: CallFailure = self._timed_out(call, "run", item.tool_started)
            else:
                stopped = outcomes.cancelled(
                    call, item.tool_started, "the tool runner was cancelled"
                )
            self._fail_if_running(call, stopped)
            raise
        finally:
            self._drop(call.id)
            self._free += 1
            self._queue.release(spec.name)
            self._dispatch()

    async def _claim(self, item: _Call) -> bool:
        """Ask the guard whether the call may start; ``False``: it was finished instead."""
        call, guard = item.call, self._guard
        assert guard is not None
        try:
            outcome = await guard.claim(call)
        except Exception as exc:  # nothing ran: the call stays decidable
            text = describe(exc)
            logger.warning("claiming call %r failed: %s", call.id, text)
            self._fail_if_running(call, outcomes.claim_failed(call, text))
            return False
        if outcome is not None:
            if self._tracker.status(call.id) is _RUNNING:
                if outcome.failure is not None:
                    self._fail(call, outcome.failure)
                else:
                    self._apply_result(call, outcome.result)
            return False
        # False: finished by somebody else while it was being claimed (a cancel, a close);
        # the claim then has no outcome, so a later resume sees it in doubt (never re-run).
        return self._tracker.status(call.id) is _RUNNING and call.id in self._calls

    async def _record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        """Tell the guard how the tool ended; if that fails the call is in doubt (it ran:
        never run again), and its real outcome still goes to the tracker."""
        assert self._guard is not None
        try:
            await self._guard.record(call, result, failure)
        except Exception as exc:
            logger.warning(
                "recording the outcome of call %r failed: %s; it is in doubt for any later "
                "resume (never run again)",
                call.id,
                describe(exc),
            )

    def _traced(self, call: ToolCall) -> AbstractContextManager[None]:
        """The call's span, current while its tool runs (nothing without tracing)."""
        return nullcontext() if self._otel is None else self._otel.running(call)

    def _cap(self, name: str) -> float:
        spec = self._tools.get(name)
        cap = spec.max_concurrency if spec is not None else None
        return math.inf if cap is None else cap

    def _progress_of(self, item: _Call) -> Callable[[Any], None] | None:
        control = self._control
        if control is None or not item.spec.is_generator:
            return None
        counter = iter(range(1 << 62))

        def publish(value: Any) -> None:
            call = item.call
            if self._calls.get(call.id) is item and control._wants_progress:
                control._publish_progress(ProgressUpdate(call.id, call.name, value, next(counter)))

        return publish

    # -- outcomes -----------------------------------------------------------------------

    def _timed_out(self, call: ToolCall, scope: str, started: bool) -> CallFailure:
        return outcomes.timed_out(call, scope, started, self._runner._timeout)

    def _sweep(self, failure: Callable[[ToolCall, bool], CallFailure]) -> None:
        """Fail every call of the turn still ``running`` (those whose task never ran)."""
        started = {call_id: item.tool_started for call_id, item in self._calls.items()}
        for call in self._tracker.list():
            if call.status is _RUNNING:
                self._fail(call, failure(call, started.get(call.id, False)))

    def _fail_if_running(self, call: ToolCall, failure: CallFailure) -> None:
        if self._tracker.status(call.id) is _RUNNING:
            self._fail(call, failure)

    def _fail(self, call: ToolCall, failure: CallFailure) -> None:
        self._drop(call.id)
        self._write(call.id, failure, error=True)

    def _apply_result(self, call: ToolCall, result: Any) -> None:
        self._drop(call.id)
        self._write(call.id, result, error=False)

    def _drop(self, call_id: str) -> _Call | None:
        """Forget a call (it finished, or is finishing now)."""
        self._forget_request(call_id)
        return self._calls.pop(call_id, None)

    def _write(self, call_id: str, value: Any, *, error: bool) -> None:
        tracker = self._tracker
        try:
            if error:
                tracker.write_error(call_id, value)
            else:
                tracker.write_result(call_id, value)
        except TrackerClosed:
            logger.warning(
                "the tracker closed before the outcome of call %r could be recorded", call_id
            )
