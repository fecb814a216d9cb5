"""The task that runs a call's tool, from its slot to its recorded outcome (private).

:func:`run_tool` is the task a call gets with its slot (``claiming``). It asks the store
guard (if any), fires ``claimed`` (the turn's ``may_start`` has the last word), runs the
tool under the per-call timeout, and fires ``tool_ended`` with the outcome, then
``recorded`` / ``record_failed`` once the guard has recorded it. When the call ends while
its tool runs (cancelled, closed, timed out, ended by other code), the table moves it to
``abandoned``; the task then fires ``tool_stopped`` when the tool has really stopped: at
once for an async tool (its cancellation unwound), from the thread for a sync tool whose
thread outlives its call (the thread gives its runner-wide capacity back itself, so the
slot is freed even after the turn returned, or its event loop ended).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.lowlevel

from .._toolcontext import ToolContext, ToolRetry
from ..errors import FailCall
from ..failures import CallFailure, ClaimFailed, RetryRequested, ToolRaised
from . import _outcomes as outcomes
from ._calls import RunnerCall
from ._guard import GuardOutcome
from ._invoke import Raised, describe, invoke
from ._progress import ProgressUpdate
from ._slots import call_soon
from ._table import RunnerEvent, RunnerState
from ._threads import ThreadJob

if TYPE_CHECKING:
    from ._turn import Turn

logger: Final = logging.getLogger("toolcall_tracker.runner")

S: Final = RunnerState
E: Final = RunnerEvent


async def run_tool(turn: Turn, item: RunnerCall) -> None:
    """The task of one call from ``claiming`` on (see the module's docstring).

    One cancel scope per call, ``item.scope``: the table cancels it to stop the tool
    (``abandoned``), and its deadline, set when the tool starts, is the per-call timeout.
    After it, the call's state tells the two apart: a call the table ended is
    ``abandoned``; a scope cancelled otherwise has timed out."""
    call, spec, scope = item.call, item.spec, item.scope
    assert spec is not None
    assert scope is not None
    tracker, policy = turn.tracker, turn.policy
    timeout = policy.call_timeout(spec)
    ended: tuple[Any, CallFailure | None] | None = None
    try:
        with scope:
            await anyio.lowlevel.checkpoint_if_cancelled()  # a stopped run starts nothing
            if not await _claim(turn, item):
                return
            if spec.name in policy.sync_tools:
                item.job = ThreadJob()
            publish = _progress(turn, item)
            context, kwargs = _with_context(turn, item, publish)
            if timeout is not None:
                scope.deadline = anyio.current_time() + timeout
            returned = False
            try:
                if turn.spans is None:
                    result = await invoke(spec, item.args, kwargs, (scope,), publish, item.job)
                else:
                    with turn.spans.running(call):
                        result = await invoke(spec, item.args, kwargs, (scope,), publish, item.job)
                returned = True
            finally:
                if context is not None and not returned:  # stopped before it returned
                    context._cancel()
            tracker.mark_tool_finished(call.id)
        if scope.cancelled_caught:
            tracker.mark_tool_finished(call.id)
            if item.state is S.ABANDONED:  # the table ended it: nothing more here
                return
            failure: CallFailure = outcomes.timed_out(call, "call", True, timeout)
            if item.job is not None and item.job.alive:
                turn.fire(item, E.DEADLINE, failure)  # its thread runs on: abandoned
                return
            ended = (None, failure)
        elif type(result) is Raised and isinstance(result.exception, ToolRetry):
            text = _retry_text(result.exception)
            ended = (None, RetryRequested(message=text, tool=call.name))
        elif type(result) is Raised and isinstance(result.exception, FailCall):
            ended = (None, result.exception.failure)  # the tool chose its failure
        elif type(result) is Raised:
            exc = result.exception
            logger.warning(
                "tool %r raised in call %r: %s", call.name, call.id, result.text, exc_info=exc
            )
            message = f"tool {call.name!r} raised {result.text}"
            ended = (
                None,
                ToolRaised(message=message, tool=call.name, exception=type(exc).__name__),
            )
        else:
            ended = (result, None)
        if turn.fire(item, E.TOOL_ENDED):
            await _record(turn, item, ended)
    except anyio.get_cancelled_exc_class():
        if item.tool_started:
            tracker.mark_tool_finished(call.id)
        if item.state is S.RECORDING and ended is not None:
            turn.fire(item, E.RECORD_FAILED, ended)
        else:
            turn.fire(item, *turn.stopped_because(item))
        raise
    finally:
        _after(turn, item)


async def _claim(turn: Turn, item: RunnerCall) -> bool:
    """``claiming`` -> ``running`` (or the call ends here); whether the tool may run."""
    guard, call = turn.guard, item.call
    if guard is not None:
        try:
            got = await guard.claim(call)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            text = describe(exc)
            logger.warning("claiming call %r failed: %s", call.id, text)
            failure = ClaimFailed(
                message=f"tool {call.name!r} was not run: claiming the call failed ({text})",
                tool=call.name,
                exception=type(exc).__name__,
            )
            turn.fire(item, E.CLAIM_REFUSED, GuardOutcome(failure=failure))
            return False
        if got is not None:
            turn.fire(item, E.CLAIM_REFUSED, got)
            return False
    turn.fire(item, E.CLAIMED)
    return item.state is S.RUNNING


async def _record(turn: Turn, item: RunnerCall, ended: tuple[Any, CallFailure | None]) -> None:
    guard = turn.guard
    if guard is not None:
        try:
            await guard.record(item.call, *ended)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            logger.warning("recording the outcome of call %r failed", item.call.id, exc_info=True)
            turn.fire(item, E.RECORD_FAILED, ended)
            return
    turn.fire(item, E.RECORDED, ended)


def _after(turn: Turn, item: RunnerCall) -> None:
    """The task ends: an abandoned call's tool has stopped, unless its thread runs on."""
    if item.state is not S.ABANDONED:
        return
    job = item.job
    if job is not None:
        token = anyio.lowlevel.current_token().native_token
        spec = item.spec
        assert spec is not None
        capacity = turn.policy.capacity

        def on_stop() -> None:  # on the tool's thread, when it finally returns
            item.released_by_thread = True
            capacity.release(spec.name, True)
            call_soon(token, lambda: turn.stopped(item))

        if job.detach(on_stop):
            return
    turn.stopped(item)


def _progress(turn: Turn, item: RunnerCall) -> Callable[[Any], None] | None:
    """The call's progress publisher (``None`` without a run control to publish to), for
    an async-generator tool's values and ``ToolContext.progress`` alike: callable from the
    event loop or, for a sync tool, from its thread (then handed to the loop, in order)."""
    link, spec = turn.link, item.spec
    if link is None or spec is None or not (spec.is_generator or spec.context_parameter):
        return None
    counter = iter(range(1 << 62))
    token = anyio.lowlevel.current_token().native_token
    loop_thread = threading.get_ident()

    def publish_here(value: Any) -> None:
        call = item.call
        if item.state is S.RUNNING and link.wants_progress:
            link.publish_progress(ProgressUpdate(call.id, call.name, value, next(counter)))

    def publish(value: Any) -> None:
        if threading.get_ident() == loop_thread:
            publish_here(value)
        else:  # a sync tool's thread
            call_soon(token, lambda: publish_here(value))

    return publish


def _with_context(
    turn: Turn, item: RunnerCall, publish: Callable[[Any], None] | None
) -> tuple[ToolContext[Any] | None, dict[str, Any]]:
    """The call's :class:`ToolContext` and the keyword arguments that pass it, if its tool
    declares one (else ``None`` and the arguments as they are)."""
    spec = item.spec
    assert spec is not None
    name = spec.context_parameter
    if name is None:
        return None, item.kwargs
    key, attempt = turn.context_keys(item.call)
    context: ToolContext[Any] = ToolContext(
        item.call.id, spec.name, turn.deps, publish, idempotency_key=key, attempt=attempt
    )
    return context, {**item.kwargs, name: context}


def _retry_text(exc: ToolRetry) -> str:
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) else describe(exc)
