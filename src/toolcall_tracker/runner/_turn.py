"""One :meth:`ToolRunner.run`: the calls of one turn, dispatched from the tracker's live state.

Theory of operation. The runner discovers calls in ready order (``ready_calls()``) and
listens to the machine's change feed. Each call goes through:

1. admission, at once: the tool is looked up and the arguments validated (on a fresh copy
   parsed from the call's text, so a tool that mutates its arguments changes nobody
   else's); a failure ends the call here;
2. a queue, in ready order: an eager call joins the run queue at once, a gated call when
   the turn has ended ok (every gated call fails with ``not_executed`` if it ended not ok);
3. a slot: whenever one of ``max_concurrency`` slots is free, the oldest call of the run
   queue gets it, and only then is its task started: so tools start in ready order, on
   every backend;
4. the tool runs in its own cancel scope; its outcome is applied as a ``result`` or an
   ``error`` event.

Live state: before a call takes a slot, and when it is granted one, the runner reads its
status from the tracker; a call that is no longer ``running`` (an adapter failed it, other
code applied an ``error``, the tracker closed) is never executed, and its outcome is left
as the tracker has it. If a call leaves ``running`` through anybody else while its tool
runs, the feed tells the runner, which cancels that tool. Per-call state is dropped as soon
as the call finishes, so a long run's memory stays flat.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.lowlevel
from pydantic import ValidationError

from .._json import _ArgumentsError, parse_json
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..errors import CallFailure, TrackerClosed
from ..failures import (
    CallCancelled,
    CallTimedOut,
    FieldError,
    NotExecuted,
    ToolRaised,
    UnknownTool,
    ValidationFailed,
)
from ..tools import Tool
from ..tracker import ToolCallTracker
from ._invoke import Raised, describe, invoke

if TYPE_CHECKING:
    from . import ToolRunner

logger: Final = logging.getLogger("toolcall_tracker.runner")

_RUNNING: Final = Status.RUNNING
_FINISHED: Final = (Status.DONE, Status.ERROR)


class _Call:
    """What the runner keeps of one admitted call, until it finishes."""

    __slots__ = ("args", "call", "kwargs", "scope", "spec", "tool_started")

    def __init__(
        self, call: ToolCall, spec: Tool[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.call = call
        self.spec = spec
        self.args = args
        self.kwargs = kwargs
        self.scope: anyio.CancelScope | None = None  # set while its task runs
        self.tool_started = False


class Turn(ChangeListener):
    """The state of one :meth:`ToolRunner.run` (a listener of the tracker's feed)."""

    def __init__(self, runner: ToolRunner, tracker: ToolCallTracker) -> None:
        self._runner = runner
        self._tools = runner._tools
        self._tracker = tracker
        self._free = runner._max_concurrency or math.inf
        self._deadline = math.inf
        self._calls: dict[str, _Call] = {}  # admitted and not finished
        self._gated: deque[str] = deque()  # waiting for the end of the turn
        self._queue: deque[str] = deque()  # waiting for a slot, in ready order
        self._tg: anyio.abc.TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None

    async def go(self) -> None:
        tracker = self._tracker
        calls = tracker.ready_calls()
        timeout = self._runner._timeout
        if timeout is not None:
            self._deadline = anyio.current_time() + timeout
        tracker.subscribe(self)
        try:
            with anyio.CancelScope(deadline=self._deadline) as scope:
                self._scope = scope
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    async for call in calls:
                        self._admit(call)
                    self._open_gate()
            if scope.cancelled_caught:  # the overall timeout expired
                self._sweep(lambda call, started: self._timed_out(call, "run", started))
                async for call in calls:  # later calls cannot run any more; fail them
                    self._fail_if_running(call, self._timed_out(call, "run", False))
        except BaseException as exc:
            # Cancelled from outside, or something went badly wrong: nothing stays running.
            reason = (
                "the tool runner was cancelled"
                if isinstance(exc, anyio.get_cancelled_exc_class())
                else f"the tool runner stopped: {describe(exc)}"
            )
            self._sweep(lambda call, started: self._cancelled(call, started, reason))
            raise
        finally:
            tracker.unsubscribe(self)

    # -- the change feed ----------------------------------------------------------------

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if after in _FINISHED:
            item = self._calls.pop(call_id, None)
            if item is not None and item.scope is not None:
                item.scope.cancel()  # finished by somebody else while its tool ran

    # -- admission, gate, slots ---------------------------------------------------------

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
            failure = _validation_failure(call.name, exc)
            logger.info("call %r: %s", call.id, failure.message)
            self._fail(call, failure)
            return
        self._calls[call.id] = _Call(call, spec, args, kwargs)
        eager = self._runner._eager if spec.eager is None else spec.eager
        if eager:
            self._queue.append(call.id)
            self._dispatch()
        else:
            self._gated.append(call.id)

    def _open_gate(self) -> None:
        """The turn has ended: gated calls join the run queue, or fail if it was not ok."""
        end = self._tracker.end
        if end is None or not self._gated:
            return
        gated, self._gated = self._gated, deque()
        if end.ok:
            self._queue.extend(gated)
            self._dispatch()
            return
        why = f" ({end.reason})" if end.reason else ""
        for call_id in gated:
            item = self._calls.get(call_id)
            if item is not None and self._tracker.status(call_id) is _RUNNING:
                name = item.call.name
                self._fail(
                    item.call,
                    NotExecuted(
                        message=f"tool {name!r} was not executed: the model's turn ended "
                        f"abnormally{why}, and this tool only runs after a turn that ended "
                        "normally",
                        tool=name,
                        reason=end.reason,
                    ),
                )

    def _dispatch(self) -> None:
        """Give free slots to the oldest queued calls that are still running."""
        queue, tg, scope = self._queue, self._tg, self._scope
        if tg is None or scope is None or scope.cancel_called:
            return  # the run is over (or stopping): nothing more starts
        while queue and self._free > 0:
            call_id = queue.popleft()
            item = self._calls.get(call_id)
            if item is None or self._tracker.status(call_id) is not _RUNNING:
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
                tracker.mark_tool_started(call.id)
                item.tool_started = True
                with anyio.move_on_after(math.inf if timeout is None else timeout) as limit:
                    result = await invoke(spec, item.args, item.kwargs, (limit, scope))
                tracker.mark_tool_finished(call.id)
            if scope.cancelled_caught:  # finished by somebody else: leave it as it is
                if item.tool_started:
                    tracker.mark_tool_finished(call.id)
                return
            if limit.cancelled_caught:
                self._fail(call, self._timed_out(call, "call", True, timeout))
            elif type(result) is Raised:
                exc = result.exception
                logger.warning(
                    "tool %r raised in call %r: %s", call.name, call.id, result.text, exc_info=exc
                )
                self._fail(
                    call,
                    ToolRaised(
                        message=f"tool {call.name!r} raised {result.text}",
                        tool=call.name,
                        exception=type(exc).__name__,
                    ),
                )
            else:
                self._apply_result(call, result)
        except anyio.get_cancelled_exc_class():
            if item.tool_started:
                tracker.mark_tool_finished(call.id)
            if anyio.current_time() >= self._deadline:
                failure: CallFailure = self._timed_out(call, "run", item.tool_started)
            else:
                failure = self._cancelled(call, item.tool_started, "the tool runner was cancelled")
            self._fail_if_running(call, failure)
            raise
        finally:
            self._calls.pop(call.id, None)
            self._free += 1
            self._dispatch()

    # -- outcomes -----------------------------------------------------------------------

    def _timed_out(
        self, call: ToolCall, scope: str, started: bool, seconds: float | None = None
    ) -> CallTimedOut:
        if scope == "call":
            what = f"the per-call timeout of {seconds}s"
        else:
            seconds = self._runner._timeout
            what = f"the tool runner's overall timeout of {seconds}s"
        stage = "before it finished" if started else "before the tool could start"
        return CallTimedOut(
            message=f"tool {call.name!r} timed out: {what} expired {stage}",
            tool=call.name,
            scope="call" if scope == "call" else "run",
            timeout=seconds or 0.0,
            tool_started=started,
        )

    @staticmethod
    def _cancelled(call: ToolCall, started: bool, reason: str) -> CallCancelled:
        stage = "while the tool was running" if started else "before the tool started"
        return CallCancelled(
            message=f"tool {call.name!r} did not finish: {reason} {stage}",
            tool=call.name,
            tool_started=started,
        )

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
        self._calls.pop(call.id, None)
        self._write(call.id, failure, error=True)

    def _apply_result(self, call: ToolCall, result: Any) -> None:
        self._calls.pop(call.id, None)
        self._write(call.id, result, error=False)

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


def _validation_failure(name: str, exc: ValidationError) -> ValidationFailed:
    errors = tuple(
        FieldError(path=tuple(error["loc"]), message=error["msg"], type=error["type"])
        for error in exc.errors(include_url=False, include_input=False, include_context=False)
    )
    described = "; ".join(
        f"{'.'.join(str(part) for part in error.path) or '(the arguments)'}: {error.message}"
        for error in errors
    )
    return ValidationFailed(
        message=f"invalid arguments for tool {name!r}: {described}",
        tool=name,
        errors=errors,
    )
