"""The tool runner: execute each call the moment it is ready, concurrently and safely.

Shape: build a :class:`ToolRunner` once from your tools, then, for each model turn, run
``await runner.run(tracker)`` in the same task group as ``tracker.consume(...)``::

    runner = ToolRunner([search, tool(send_mail, eager=False)], max_concurrency=8)

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, model_events)
        calls = await runner.run(tracker)   # every call of the turn, finished

(:func:`run_tools` does the same in one call.) ``run`` returns once the turn has ended and
every ready call has finished; it returns ``tracker.list()``.

For each call that becomes ready (``tracker.ready_calls()``) the runner starts a task that:

1. looks the tool up by name (``unknown_tool`` error if there is none);
2. validates the arguments against the function's signature with the tool's pydantic model,
   built once per tool (``validation`` error, with the field paths);
3. if the tool is gated, waits for the turn's ``End``; if it is not ``ok`` the call ends
   with a ``not_executed`` error and the tool never runs. Eager tools skip this step;
4. takes a slot of the ``max_concurrency`` limiter, records ``tool_started`` in the
   timeline, and runs the tool: async tools on the event loop, sync tools in a worker
   thread; both under the per-call timeout;
5. records ``tool_finished`` and applies a ``Result`` event, or an ``Error`` event with a
   :mod:`~toolcall_tracker.failures` value (``tool_exception``, ``timeout``).

Every event is applied from the event loop's thread. A failing tool only fails its own call;
its traceback is logged on the ``toolcall_tracker.runner`` logger.

Cancellation: when the scope running ``run`` is cancelled, every tool of the turn is
cancelled and every call still ``running`` is moved to ``error`` (``cancelled``) before
the cancellation propagates, so no call stays ``running`` and no ``wait_done`` hangs. When
the overall ``timeout`` expires, the same happens with ``timeout`` errors (scope ``run``);
calls that become ready afterwards fail at once, and ``run`` returns normally when the turn
ends (the timeout bounds the tools, not the model's stream).

A sync tool cannot be interrupted: on a timeout or cancellation its call ends at once and the
worker thread is abandoned to finish on its own (its result is discarded, and it no longer
counts against ``max_concurrency``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.to_thread
from pydantic import ValidationError

from .calls import Status, ToolCall
from .errors import CallFailure, TrackerClosed
from .events import Error, Result
from .failures import (
    CallCancelled,
    CallTimedOut,
    FieldError,
    NotExecuted,
    ToolRaised,
    UnknownTool,
    ValidationFailed,
)
from .tools import Tool, ToolsInput, tools_by_name
from .tracker import ToolCallTracker

__all__ = ["ToolRunner", "run_tools"]

logger: Final = logging.getLogger("toolcall_tracker.runner")


class ToolRunner:
    """Runs the tool calls of model turns, each the moment its arguments are ready.

    A runner holds the tools and the limits; it keeps no per-turn state, so one runner can
    serve many turns (even at once). Its tools are built (and their argument models too)
    once, here.

    Args:
        tools: a list of functions or :class:`~toolcall_tracker.tools.Tool` (named by their
            names), or a mapping ``name -> function or Tool``. Sync and async functions both
            work.
        eager: the default for tools that do not say (``tool(fn, eager=...)``). ``False``
            (the default): a tool runs only once the turn is known to have ended normally,
            the safe choice for tools with side effects. ``True``: every tool starts the
            moment its call is ready.
        max_concurrency: at most this many tools run at once per turn (``None``: no limit).
            Calls over the limit wait for a slot, in the order they became ready.
        call_timeout: seconds each tool may run (``None``: no limit). Does not count the
            wait for the turn's end or for a slot. A tool's own ``timeout`` overrides it.
        timeout: seconds the whole :meth:`run` may spend on tools (``None``: no limit).

    Raises:
        ValueError: a limit is not positive, or two tools share a name.
    """

    def __init__(
        self,
        tools: ToolsInput,
        *,
        eager: bool = False,
        max_concurrency: int | None = None,
        call_timeout: float | None = None,
        timeout: float | None = None,
    ) -> None:
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ValueError(f"max_concurrency must be a positive int, not {max_concurrency!r}")
        for label, value in (("call_timeout", call_timeout), ("timeout", timeout)):
            if value is not None and not value > 0:
                raise ValueError(f"{label} must be a positive number of seconds, not {value!r}")
        self._tools = tools_by_name(tools)
        self._eager = eager
        self._max_concurrency = max_concurrency
        self._call_timeout = call_timeout
        self._timeout = timeout

    @property
    def tools(self) -> dict[str, Tool[..., Any]]:
        """The tools by name (a copy). Pass it to the provider definition helpers."""
        return dict(self._tools)

    async def run(self, tracker: ToolCallTracker) -> list[ToolCall]:
        """Run every call of ``tracker``'s turn; return when all finished and the turn ended.

        Call it in the task group that consumes the model's stream. The runner handles
        every call of the turn (one runner per tracker): each one that becomes ready ends
        ``done`` or ``error``.

        Returns:
            ``tracker.list()``: the snapshots of every call of the turn, in start order.

        Raises:
            Whatever cancelled it (after moving the unfinished calls to ``error``).
        """
        await _Run(self, tracker).go()
        return tracker.list()


async def run_tools(
    tracker: ToolCallTracker,
    tools: ToolsInput,
    *,
    eager: bool = False,
    max_concurrency: int | None = None,
    call_timeout: float | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 (fails the calls, unlike fail_after)
) -> list[ToolCall]:
    """``await ToolRunner(tools, ...).run(tracker)``: run one turn's calls.

    The arguments are :class:`ToolRunner`'s. Building a runner once and reusing it saves
    re-building the tools' argument models each turn.
    """
    runner = ToolRunner(
        tools,
        eager=eager,
        max_concurrency=max_concurrency,
        call_timeout=call_timeout,
        timeout=timeout,
    )
    return await runner.run(tracker)


class _CallState:
    __slots__ = ("tool_started",)

    def __init__(self) -> None:
        self.tool_started = False


class _Run:
    """The state of one :meth:`ToolRunner.run`."""

    def __init__(self, runner: ToolRunner, tracker: ToolCallTracker) -> None:
        self._runner = runner
        self._tools = runner._tools
        self._tracker = tracker
        self._limiter = anyio.CapacityLimiter(runner._max_concurrency or math.inf)
        self._deadline = math.inf
        self._states: dict[str, _CallState] = {}

    async def go(self) -> None:
        tracker = self._tracker
        calls = tracker.ready_calls()
        timeout = self._runner._timeout
        if timeout is not None:
            self._deadline = anyio.current_time() + timeout
        try:
            with anyio.CancelScope(deadline=self._deadline) as scope:
                async with anyio.create_task_group() as tg:
                    async for call in calls:
                        tg.start_soon(self._call, call, name=f"tool {call.name} ({call.id})")
            if scope.cancelled_caught:  # the overall timeout expired
                self._sweep(lambda call: self._timed_out(call, "run", self._started(call)))
                async for call in calls:  # later calls cannot run any more; fail them
                    self._fail_if_running(call, self._timed_out(call, "run", False))
        except BaseException as exc:
            # Cancelled from outside, or something went badly wrong: nothing stays running.
            reason = (
                "the tool runner was cancelled"
                if isinstance(exc, anyio.get_cancelled_exc_class())
                else f"the tool runner stopped: {type(exc).__name__}: {exc}"
            )
            self._sweep(lambda call: self._cancelled(call, self._started(call), reason))
            raise

    # -- one call ---------------------------------------------------------------------

    async def _call(self, call: ToolCall) -> None:
        state = self._states[call.id] = _CallState()
        try:
            await self._execute(call, state)
        except anyio.get_cancelled_exc_class():
            if anyio.current_time() >= self._deadline:
                failure: CallFailure = self._timed_out(call, "run", state.tool_started)
            else:
                failure = self._cancelled(call, state.tool_started, "the tool runner was cancelled")
            self._fail_if_running(call, failure)
            raise

    async def _execute(self, call: ToolCall, state: _CallState) -> None:
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
            args, kwargs = spec.bind(call.args)
        except ValidationError as exc:
            failure = _validation_failure(call.name, exc)
            logger.info("call %r: %s", call.id, failure.message)
            self._fail(call, failure)
            return
        eager = self._runner._eager if spec.eager is None else spec.eager
        if not eager:
            end = await self._tracker.wait_end()
            if not end.ok:
                why = f" ({end.reason})" if end.reason else ""
                self._fail(
                    call,
                    NotExecuted(
                        message=f"tool {call.name!r} was not executed: the model's turn "
                        f"ended abnormally{why}, and this tool only runs after a turn "
                        "that ended normally",
                        tool=call.name,
                        reason=end.reason,
                    ),
                )
                return
        timeout = spec.timeout if spec.timeout is not None else self._runner._call_timeout
        tracker = self._tracker
        async with self._limiter:
            tracker.mark_tool_started(call.id)
            state.tool_started = True
            try:
                with anyio.move_on_after(math.inf if timeout is None else timeout) as scope:
                    result = await _invoke(spec, args, kwargs)
            except Exception as exc:
                tracker.mark_tool_finished(call.id)
                logger.error(
                    "tool %r raised in call %r: %s: %s",
                    call.name,
                    call.id,
                    type(exc).__name__,
                    exc,
                    exc_info=exc,
                )
                self._fail(
                    call,
                    ToolRaised(
                        message=f"tool {call.name!r} raised {type(exc).__name__}: {exc}",
                        tool=call.name,
                        exception=type(exc).__name__,
                    ),
                )
                return
            except BaseException:
                tracker.mark_tool_finished(call.id)
                raise
            tracker.mark_tool_finished(call.id)
        if scope.cancelled_caught:
            self._fail(call, self._timed_out(call, "call", True, timeout))
            return
        self._apply(Result(id=call.id, result=result))

    # -- failures ---------------------------------------------------------------------

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

    def _started(self, call: ToolCall) -> bool:
        state = self._states.get(call.id)
        return state is not None and state.tool_started

    def _sweep(self, failure: Callable[[ToolCall], CallFailure]) -> None:
        """Fail every call of the turn still ``running`` (those whose task never ran)."""
        for call in self._tracker.list():
            if call.status is Status.RUNNING:
                self._fail(call, failure(call))

    def _fail_if_running(self, call: ToolCall, failure: CallFailure) -> None:
        current = self._tracker.get(call.id)
        if current is not None and current.status is Status.RUNNING:
            self._fail(call, failure)

    def _fail(self, call: ToolCall, failure: CallFailure) -> None:
        self._apply(Error(id=call.id, error=failure))

    def _apply(self, event: Result | Error) -> None:
        try:
            self._tracker.apply(event)
        except TrackerClosed:
            logger.warning(
                "the tracker closed before the outcome of call %r could be recorded: %r",
                event.id,
                event,
            )


async def _invoke(spec: Tool[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if spec.is_async:
        return await spec.function(*args, **kwargs)
    result = await anyio.to_thread.run_sync(
        functools.partial(spec.function, *args, **kwargs), abandon_on_cancel=True
    )
    if inspect.isawaitable(result):  # a sync wrapper around an async function
        result = await result
    return result


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
