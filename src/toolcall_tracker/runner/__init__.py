"""The tool runner: execute each call the moment it is ready, concurrently and safely.

Shape: build a :class:`ToolRunner` once from your tools, then, for each model turn, run
``await runner.run(tracker)`` in the same task group as ``tracker.consume(...)``::

    runner = ToolRunner([search, tool(send_mail, eager=False)], max_concurrency=8)

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, model_events)
        calls = await runner.run(tracker)   # every call of the turn, finished

(:func:`run_tools` does the same in one call.) ``run`` returns once the turn has ended and
every ready call has finished; it returns ``tracker.list()``.

For each call that becomes ready (in ready order) the runner walks it through one table
(:mod:`._table`; ``docs/runner-table.md``), every wait a state of it:

1. ``validating``: looks the tool up by name (``unknown_tool`` error if there is none),
   validates the arguments against the function's signature with the tool's pydantic model,
   built once per tool (``validation`` error, with the field paths; the tool gets its own
   copy of the arguments), and asks ``needs_approval``;
2. ``awaiting_approval``, if needed: a human decides through the run's :class:`RunControl`;
3. ``waiting_gate``, if the tool is gated: waits for the turn's ``End``; if it is not ``ok``
   the call ends with a ``not_executed`` error and the tool never runs;
4. ``waiting_slot``: slots of ``max_concurrency``, of its tool's runner-wide cap and, for a
   sync tool, of the runner's ``max_threads`` pool go to calls in ready order;
5. ``claiming``: the one guard before a start reads the live state (the tracker's status of
   the call and whether it is closed, the turn's outcome, the approval, the slot, the
   deadline): a call that may not start never runs;
6. ``running``: records ``tool_started`` and runs the tool (async tools on the event loop,
   sync tools on the runner's threads) under the per-call timeout; if the call leaves
   ``running`` through anybody else meanwhile, the tool is cancelled;
7. records ``tool_finished`` and applies a ``Result`` event, or an ``Error`` event with a
   :mod:`~toolcall_tracker.failures` value (``tool_exception``, ``timeout``).

Cancelling one call (``RunControl.cancel``), the deadline and closing the tracker reach a
call at every stage, its arguments still streaming included.

Every event is applied from the event loop's thread. The runner contains every fault of a
tool: an ``Exception``, ``SystemExit``, ``GeneratorExit`` or any other ``BaseException``,
a cancellation exception the tool raised itself, an exception that cannot even be printed:
each fails only its own call with a ``tool_exception`` error (its traceback is logged at
WARNING on the ``toolcall_tracker.runner`` logger). Only ``KeyboardInterrupt`` propagates
(the user asked the process to stop; the other calls are failed as cancelled first), and a
real cancellation of the runner.

Cancellation: when the scope running ``run`` is cancelled, every tool of the turn is
cancelled and every call still ``running`` is moved to ``error`` (``cancelled``) before
the cancellation propagates, so no call stays ``running`` and no ``wait_done`` hangs. When
the overall ``timeout`` expires, the same happens with ``timeout`` errors (scope ``run``);
calls that become ready afterwards fail at once, and ``run`` returns normally when the turn
ends (the timeout bounds the tools, not the model's stream).

A sync tool cannot be interrupted: on a timeout or cancellation its call ends at once and its
thread is abandoned to finish on its own (its result is discarded; it keeps its slot until
it really ends, and ``RunControl.state`` reports it ``abandoned``; ``run`` never waits for
it; run in a daemon thread, it never keeps the interpreter alive). The runner keeps
per-call state only until the call finishes (or its abandoned tool stops).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from ..calls import ToolCall
from ..tools import Tool, ToolsInput, tools_by_name
from ..tracker import ToolCallTracker
from ._approval import Resumed
from ._control import RunControl, link_of
from ._guard import StartGuard
from ._pending import (
    ApprovalDecision,
    FinishedCalls,
    InMemoryFinishedCalls,
    PendingApproval,
    PendingApprovals,
    _pending,
    _verify,
    merge_calls,
)
from ._policy import DEFAULT_MAX_THREADS, RunPolicy, ToolOptions
from ._progress import ProgressUpdate
from ._table import RunnerEvent, RunnerListener, RunnerState
from ._turn import Turn

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ._otel import Tracing

__all__ = [
    "ApprovalDecision",
    "FinishedCalls",
    "InMemoryFinishedCalls",
    "PendingApproval",
    "PendingApprovals",
    "ProgressUpdate",
    "RunControl",
    "RunnerEvent",
    "RunnerListener",
    "RunnerState",
    "ToolOptions",
    "ToolRunner",
    "merge_calls",
    "run_tools",
]


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
            Calls over the limit wait for a slot, in the order they became ready. A tool
            abandoned on a timeout or cancellation keeps its slot until it really stops.
        call_timeout: seconds each tool may run (``None``: no limit). Does not count the
            wait for the turn's end or for a slot. A tool's own ``timeout`` overrides it.
        timeout: seconds the whole :meth:`run` may spend on tools (``None``: no limit).
            An in-process wait for approval counts: a call still undecided when it
            expires is denied with reason ``"timeout"`` (a deferred one stays pending).
        approval_secret: the key that signs pending approvals and binds decisions to
            their calls (HMAC-SHA256). Without it they carry plain digests, which catch
            mistakes but not forgery: set it whenever decisions come from a client.
        finished_calls: the store of calls a :meth:`resume` has acted on, so none runs
            twice (default: an :class:`InMemoryFinishedCalls` of this runner's).
        max_threads: at most this many sync tools run at once in this runner's threads,
            abandoned ones included (default 40 on every backend); sync tools over it wait
            for a slot. anyio's process-wide thread limiter is never used, so the
            application's own ``to_thread`` calls do not compete with the tools.
        tracer_provider: the OpenTelemetry ``TracerProvider`` for the ``execute_tool``
            spans (one per call whose tool ran). Default: the globally configured one,
            when the ``opentelemetry-api`` package is installed (without it, nothing is
            traced and nothing of it imported). See the README's "Observability".
        record_content: also record each call's arguments and result on its span
            (``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``). Off by
            default: they may hold personal or secret data.

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
        approval_secret: bytes | str | None = None,
        finished_calls: FinishedCalls | None = None,
        tracer_provider: TracerProvider | None = None,
        record_content: bool = False,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        options = ToolOptions(
            eager=eager,
            max_concurrency=max_concurrency,
            call_timeout=call_timeout,
            timeout=timeout,
            max_threads=max_threads,
        )
        secret = approval_secret.encode() if isinstance(approval_secret, str) else approval_secret
        self._secret = secret
        self._finished_calls = (
            finished_calls if finished_calls is not None else InMemoryFinishedCalls()
        )
        self._policy = RunPolicy(
            tools_by_name(tools), options, secret, _tracing(tracer_provider, record_content)
        )

    @property
    def options(self) -> ToolOptions:
        """The runner's settings (a frozen value)."""
        return self._policy.options

    @property
    def tools(self) -> dict[str, Tool[..., Any]]:
        """The tools by name (a copy). Pass it to the provider definition helpers."""
        return dict(self._policy.tools)

    async def run(
        self,
        tracker: ToolCallTracker,
        *,
        control: RunControl | None = None,
        deadline: float | None = None,
        listener: RunnerListener | None = None,
        _guard: StartGuard | None = None,
    ) -> list[ToolCall]:
        """Run every call of ``tracker``'s turn; return when all finished and the turn ended.

        Call it in the task group that consumes the model's stream. The runner handles
        every call of the turn (one runner per tracker): each one that becomes ready ends
        ``done`` or ``error``, except, with ``RunControl(defer_approvals=True)``, the calls
        still awaiting approval: they stay ``running`` and ``control.pending`` holds them.

        Args:
            tracker: the turn's tracker.
            control: the handle through which the application decides approvals, cancels
                calls and watches progress (one per run). Without one, a call that needs
                approval is denied (reason ``"no_approver"``).
            deadline: seconds the whole run may take, the model's stream included
                (``None``: no limit). When it passes, every call not finished ends
                ``error`` (``timeout``, scope ``run``; calls still streaming too) and
                ``run`` returns without waiting for the stream to end. ``timeout``, by
                contrast, bounds the tools only.
            listener: told every transition of every call in the runner's table (see
                :class:`RunnerListener`).

        Returns:
            ``tracker.list()``: the snapshots of the calls the tracker retains, in start
            order (calls that ``keep_finished`` forgot are not among them: to see every
            outcome, subscribe a :class:`~toolcall_tracker.ChangeListener` to the tracker).

        Raises:
            Whatever cancelled it (after moving the unfinished calls to ``error``).
        """
        if deadline is not None and not deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, not {deadline!r}")
        link = link_of(control) if control is not None else None
        turn = Turn(self._policy, tracker, link, deadline=deadline, listener=listener, guard=_guard)
        await turn.go()
        return tracker.list()

    async def resume(
        self,
        pending: PendingApprovals,
        decisions: Iterable[ApprovalDecision],
        *,
        control: RunControl | None = None,
    ) -> list[ToolCall]:
        """Resume a turn's pending approvals with decisions (typically in a later request).

        Verifies ``pending`` and every decision first (signature, and each decision's
        binding to its call's id, exact arguments and turn), then, for the decided calls
        only, in the order they asked: records each in :attr:`finished_calls` (a call
        recorded before, by an earlier resume, ends ``error`` with ``not_executed``
        reason ``already_finished`` and is not run again), runs the approved ones (with
        edited arguments if given, validated again) and fails the denied ones with
        ``ApprovalDenied``. The runner's limits apply as in :meth:`run`.

        Calls without a decision are left out and stay pending: ``control.pending`` holds
        them (re-signed, same turn), and ``pending`` itself stays valid for them.

        Returns:
            The decided calls, finished (a fresh tracker's ``list()``); combine them with
            the first run's calls with :func:`merge_calls` to feed the turn back.

        Raises:
            ApprovalRefused: ``pending`` or a decision does not verify; nothing ran.
        """
        decided = _verify(self._secret, pending, decisions)
        already: set[str] = set()
        chosen = [call for call in pending.calls if call.call_id in decided]
        for call in chosen:
            if not await self._finished_calls.add(f"{pending.nonce}:{call.call_id}"):
                already.add(call.call_id)
        tracker = ToolCallTracker()
        for call in chosen:
            tracker.write_start(call.call_id, call.tool)
            tracker.write_delta(call.call_id, call.args_text)
            tracker.write_ready(call.call_id)
        tracker.write_end(True)
        rest = [call for call in pending.calls if call.call_id not in decided]
        link = link_of(control) if control is not None else None
        turn = Turn(self._policy, tracker, link, Resumed(pending.nonce, decided, already))
        await turn.go()
        if link is not None and rest:
            link.pending = _pending(self._secret, pending.nonce, rest)
        return tracker.list()

    @property
    def finished_calls(self) -> FinishedCalls:
        """The store of calls a :meth:`resume` has acted on (see :class:`FinishedCalls`)."""
        return self._finished_calls


async def run_tools(
    tracker: ToolCallTracker,
    tools: ToolsInput,
    *,
    eager: bool = False,
    max_concurrency: int | None = None,
    call_timeout: float | None = None,
    timeout: float | None = None,
    tracer_provider: TracerProvider | None = None,
    record_content: bool = False,
    control: RunControl | None = None,
    approval_secret: bytes | str | None = None,
    finished_calls: FinishedCalls | None = None,
    max_threads: int = DEFAULT_MAX_THREADS,
    deadline: float | None = None,
) -> list[ToolCall]:
    """``await ToolRunner(tools, ...).run(tracker, control=..., deadline=...)``: run one
    turn's calls.

    The arguments are :class:`ToolRunner`'s and :meth:`ToolRunner.run`'s. Building a
    runner once and reusing it saves re-building the tools' argument models each turn.
    """
    runner = ToolRunner(
        tools,
        eager=eager,
        max_concurrency=max_concurrency,
        call_timeout=call_timeout,
        timeout=timeout,
        approval_secret=approval_secret,
        finished_calls=finished_calls,
        tracer_provider=tracer_provider,
        record_content=record_content,
        max_threads=max_threads,
    )
    return await runner.run(tracker, control=control, deadline=deadline)


def _tracing(provider: TracerProvider | None, record_content: bool) -> Tracing | None:
    """The runner's tracing, or ``None`` when ``opentelemetry`` is not installed (then
    nothing of it is imported: looking for the package imports nothing)."""
    if provider is None:
        try:
            if find_spec("opentelemetry") is None:
                return None
            from ._otel import Tracing
        except ImportError:  # installed but broken (or partly): trace nothing
            return None
    else:
        from ._otel import Tracing
    return Tracing(provider, record_content)
