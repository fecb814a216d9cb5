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

Module map
----------
The package is four groups of modules; every module but this one is private.

*The turn engine*: one :meth:`ToolRunner.run`, a turn's calls driven through one table.

- ``_table.py``: the per-call lifecycle: every state, every event, one table;
- ``_turn.py``: ``Turn``, one run: the table driven from the tracker's state and feed;
- ``_calls.py``: the turn's call table (a ``RunnerCallTable`` of ``RunnerCall`` records);
- ``_admit.py``: admission, the ``validating`` state's work (tool, arguments, approval need);
- ``_slots.py``: the run queue of a turn, and the runner-wide capacity it draws from;
- ``_start.py``: the task that runs a call's tool, from its slot to its recorded outcome;
- ``_invoke.py``: calling one tool and containing whatever it does;
- ``_threads.py``: sync tools in daemon threads, counted by the runner;
- ``_progress.py``: progress from async-generator tools (``ProgressUpdate``);
- ``_outcomes.py``: the failure values a turn writes, and the one way it writes an outcome;
- ``_otel.py``: OpenTelemetry spans of the runner's calls (imported only with ``opentelemetry``).

*Approvals and control*: what a human or the application decides while a turn runs, and
the settings it runs under.

- ``_control.py``: ``RunControl``, the per-run handle (approvals, cancellation, progress);
- ``_ports.py``: the two sides of a run and its control (``TurnPort``, ``Link``);
- ``_feeds.py``: what a run publishes to its control's iterators (progress, requests);
- ``_approval.py``: a turn's approval desk, the requests of the calls awaiting a decision;
- ``_pending.py``: approvals across requests: the signed pending state, decisions, signing;
- ``_policy.py``: ``RunnerSettings``, and the ``RunPolicy`` every turn of a runner reads.

*The durable seam*: a turn resumed in a later request, and the store that keeps any call
from running twice.

- ``_guard.py``: ``StartGuard``, the seam between the start step and an outcome store;
- ``_store.py``: the outcome store (``OutcomeStore``, claims, fences, the in-memory store);
- ``_resume.py``: ``ToolRunner.resume``, a turn's decided calls replayed (``StoreGuard``).

*The entry points*: what an application calls.

- this module: ``ToolRunner`` and ``run_tools``;
- ``_run_turn.py``: ``run_turn``, a turn's stream consumed and its tools run together;
- ``_loop.py``: ``ToolLoop``, the multi-step loop (stream, run the tools, feed back, repeat).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from datetime import timedelta
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Generic

from .._moved import aliases as _aliases
from .._toolcontext import DepsT
from ..calls import ToolCall
from ..tools import Tool, ToolsInput, tools_by_name
from ..tracker import ToolCallTracker
from ._approval import stamp_for
from ._control import RunControl, link_of
from ._guard import GuardOutcome, StartGuard
from ._loop import LoopState, LoopStep, StopReason, ToolLoop
from ._pending import (
    DEFAULT_APPROVAL_TTL,
    ApprovalDecision,
    ApprovalKeys,
    PendingApproval,
    PendingApprovals,
    _secret_key,
    _Signer,
    merge_calls,
)
from ._policy import DEFAULT_MAX_THREADS, RunnerSettings, RunPolicy
from ._progress import ProgressUpdate
from ._resume import StoreGuard
from ._resume import resume as _resume
from ._run_turn import run_turn
from ._store import (
    DEPRECATED,
    OUTCOME_STORE_PROTOCOL,
    CallOutcome,
    Claim,
    ClaimFenced,
    Fence,
    InMemoryOutcomeStore,
    LeasedOutcomeStore,
    OutcomeStore,
    _as_store,
    _deprecated,
    supports_fencing,
)
from ._table import RunnerEvent, RunnerListener, RunnerState
from ._turn import Turn

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ._otel import Tracing

__all__ = [
    "OUTCOME_STORE_PROTOCOL",
    "ApprovalDecision",
    "ApprovalKeys",
    "CallOutcome",
    "Claim",
    "ClaimFenced",
    "Fence",
    "GuardOutcome",
    "InMemoryOutcomeStore",
    "LeasedOutcomeStore",
    "LoopState",
    "LoopStep",
    "OutcomeStore",
    "PendingApproval",
    "PendingApprovals",
    "ProgressUpdate",
    "RunControl",
    "RunnerEvent",
    "RunnerListener",
    "RunnerSettings",
    "RunnerState",
    "StartGuard",
    "StoreGuard",
    "StopReason",
    "ToolLoop",
    "ToolRunner",
    "merge_calls",
    "run_tools",
    "run_turn",
    "supports_fencing",
]


class ToolRunner(Generic[DepsT]):
    """Runs the tool calls of model turns, each the moment its arguments are ready.

    Generic in the type of the dependencies its tools receive through their
    :class:`~toolcall_tracker.tools.ToolContext` (``ToolRunner[AppDeps](tools)``; ``Any``
    when not given): ``run(tracker, deps=...)`` passes them.

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
            their calls (HMAC-SHA256), at least 16 bytes; or an :class:`ApprovalKeys`
            (a current key with its id, previous keys that still verify, retired key ids
            refused), to rotate keys. Without it they carry plain digests, which catch
            mistakes but not forgery, and :meth:`resume` refuses them unless told
            ``allow_unsigned=True``.
        approval_ttl: how long a pending state stays resumable (default 24 hours).
        outcome_store: where :meth:`resume` claims each call before running it and
            records its outcome, so none runs twice (an :class:`OutcomeStore`; default:
            an :class:`InMemoryOutcomeStore` of this runner's).
        finished_calls: deprecated name of ``outcome_store`` (an old ``FinishedCalls``
            store still works, wrapped).
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
        ValueError: a limit is not positive, two tools share a name, or the approval
            secret is empty or shorter than 16 bytes.
    """

    def __init__(
        self,
        tools: ToolsInput,
        *,
        eager: bool = False,
        max_concurrency: int | None = None,
        call_timeout: float | None = None,
        timeout: float | None = None,
        approval_secret: ApprovalKeys | bytes | str | None = None,
        approval_ttl: timedelta | float = DEFAULT_APPROVAL_TTL,
        outcome_store: OutcomeStore | None = None,
        finished_calls: Any = None,
        tracer_provider: TracerProvider | None = None,
        record_content: bool = False,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        options = RunnerSettings(
            eager=eager,
            max_concurrency=max_concurrency,
            call_timeout=call_timeout,
            timeout=timeout,
            max_threads=max_threads,
        )
        secret = _secret_key(approval_secret)
        ttl = (
            approval_ttl if isinstance(approval_ttl, timedelta) else timedelta(seconds=approval_ttl)
        )
        if not ttl.total_seconds() > 0:
            raise ValueError(f"approval_ttl must be positive, not {approval_ttl!r}")
        signer = _Signer(secret, ttl)
        if isinstance(finished_calls, OutcomeStore):  # (an old store warns in _as_store)
            warnings.warn(
                "ToolRunner(finished_calls=...) is deprecated: pass outcome_store=...",
                DeprecationWarning,
                stacklevel=2,
            )
        store = outcome_store if outcome_store is not None else finished_calls
        self._store = _as_store(store) if store is not None else InMemoryOutcomeStore()
        self._policy = RunPolicy(
            tools_by_name(tools), options, signer, _tracing(tracer_provider, record_content)
        )

    @property
    def options(self) -> RunnerSettings:
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
        start_guard: StartGuard | None = None,
        deps: DepsT | None = None,
        turn_id: str | None = None,
        continues: PendingApprovals | None = None,
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
            start_guard: asked right before each tool starts, and told its outcome after
                it really finished (a :class:`StartGuard`; a durable turn claims the call
                in its store and journal here). A guard that raises keeps the tool from
                starting: the call ends ``error`` with ``ClaimFailed``.
            _guard: the old private name of ``start_guard`` (kept for existing callers).
            deps: the application's dependencies for this run (a database session, the
                current user...), given to every tool that declares a
                :class:`~toolcall_tracker.tools.ToolContext` parameter, as ``ctx.deps``.
            turn_id: the id of the turn (a durable turn passes its journal's turn id),
                signed into the ``control.pending`` the run leaves
                (:attr:`PendingApprovals.turn_id`; every key derived from the state, the
                outcome store's, comes from it). ``None``: the turn's random nonce names it.
            continues: a signed state a run of this same turn already handed out (a
                durable restore passes the one its dead process journaled). It is checked
                first (signature, key, expiry): nothing runs unless it verifies. The run
                then takes its nonce, turn id and expiry: a call that asks for approval
                here asks with the token the state gave it, and the ``control.pending``
                the run leaves has the state's nonce, ``expires_at`` and ``turn_id`` (for
                the same calls, under the same key, it is the same state, signature
                included). So an approval of either state is one decision, for one key
                per call.

        Returns:
            ``tracker.list()``: the snapshots of the calls the tracker retains, in start
            order (calls that ``keep_finished`` forgot are not among them: to see every
            outcome, subscribe a :class:`~toolcall_tracker.ChangeListener` to the tracker).

        Raises:
            ApprovalRefused: ``continues`` does not verify (changed, signed with another,
                a retired or an unknown key, expired); nothing ran.
            ValueError: ``turn_id`` is empty, or ``continues`` is a state of another turn
                (its :attr:`~PendingApprovals.turn_key` is not ``turn_id``).
            TypeError: ``turn_id`` is not a ``str`` or ``continues`` not a
                :class:`PendingApprovals`.
            BaseException: whatever cancelled it (after moving the unfinished calls to
                ``error``).
        """
        if deadline is not None and not deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, not {deadline!r}")
        stamp = stamp_for(self._policy.signer, turn_id, continues)
        if start_guard is not None and _guard is not None:
            raise TypeError("pass start_guard only (_guard is its old private name)")
        guard = start_guard if start_guard is not None else _guard
        link = link_of(control) if control is not None else None
        turn = Turn(
            self._policy,
            tracker,
            link,
            deadline=deadline,
            listener=listener,
            guard=guard,
            deps=deps,
            stamp=stamp,
        )
        await turn.go()
        return tracker.list()

    async def resume(
        self,
        pending: PendingApprovals,
        decisions: Iterable[ApprovalDecision],
        *,
        control: RunControl | None = None,
        allow_unsigned: bool = False,
        deps: DepsT | None = None,
    ) -> list[ToolCall]:
        """Resume a turn's pending approvals with decisions (typically in a later request).

        Verifies ``pending`` and every decision first (signature, expiry, and each
        decision's binding to its call's id, exact arguments and turn), then replays the
        decided calls under the turn's own ``Limits`` and with the turn's real ``End`` (a
        gated tool of a turn that was cut off never runs). Each approved call is claimed
        in :attr:`outcome_store` right before its tool starts (a call an earlier resume
        claimed ends with the outcome recorded then, or ``in_doubt`` if none was: it is
        never run twice) and its outcome recorded after; denied calls end
        ``ApprovalDenied`` (recorded too). Approved calls run with edited arguments if
        given (validated again). The runner's other limits apply as in :meth:`run`.

        Calls without a decision are left out and stay pending: ``control.pending`` holds
        them (re-signed with the current key, same nonce, turn id and expiry), and
        ``pending`` itself stays valid for them. Store keys derive from the state's
        :attr:`~PendingApprovals.turn_key`.

        Args:
            pending: the state ``run`` left (``control.pending``), back from the client.
            decisions: the decisions, each bound to its call by its token.
            control: the handle for this resume (cancel, progress, what stays pending).
            allow_unsigned: accept a state signed without a secret (plain digests anybody
                can compute). Only for states that never left your server.
            deps: the dependencies the resumed tools get through their ``ToolContext``
                (as in :meth:`run`).

        Returns:
            The decided calls, finished (a fresh tracker's ``list()``); combine them with
            the first run's calls with :func:`merge_calls` to feed the turn back.

        Raises:
            ApprovalRefused: ``pending`` or a decision does not verify, it expired, it was
                signed with a retired or unknown key, or it is unsigned (without
                ``allow_unsigned``); nothing ran.
        """
        link = link_of(control) if control is not None else None
        calls, left = await _resume(
            self._policy, self._store, pending, decisions, link, allow_unsigned, deps
        )
        if link is not None and left is not None:
            link.pending = left
        return calls

    @property
    def outcome_store(self) -> OutcomeStore:
        """The store :meth:`resume` claims calls in (see :class:`OutcomeStore`)."""
        return self._store

    @property
    def finished_calls(self) -> OutcomeStore:
        """Deprecated name of :attr:`outcome_store`."""
        warnings.warn(
            "ToolRunner.finished_calls is deprecated: use outcome_store",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._store


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
    approval_secret: ApprovalKeys | bytes | str | None = None,
    outcome_store: OutcomeStore | None = None,
    finished_calls: Any = None,
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
        outcome_store=outcome_store,
        finished_calls=finished_calls,
        tracer_provider=tracer_provider,
        record_content=record_content,
        max_threads=max_threads,
    )
    return await runner.run(tracker, control=control, deadline=deadline)


def __getattr__(name: str) -> Any:
    if name in DEPRECATED:
        return _deprecated(name)
    if name == "ToolOptions":
        return _ToolOptions(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ToolOptions = _aliases(
    __name__, {"ToolOptions": ("toolcall_tracker.runner", "RunnerSettings")}, stacklevel=3
)


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
