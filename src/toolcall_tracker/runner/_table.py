"""The runner's per-call lifecycle: every state a call can be in, every event, one table.

Theory of operation
-------------------
The core's table (:mod:`toolcall_tracker._reducer`) says what a call *is*: ``pending``,
``running``, ``done`` or ``error``. This table says what the runner is *doing* with a
``running`` call: validating it, waiting for a human, for the end of the turn, for a slot,
for the outcome store, running its tool, or waiting for an abandoned tool to really stop.
Every wait is a state here, held in the turn's call table, never a local variable of a
task; so every event (a decision, the turn's end, a cancellation, the deadline, the tracker
closing, another writer finishing the call) reaches a call in whatever state it is, through
the same cell lookup.

A call's life when nothing goes wrong::

    streaming --ready--> validating --no_approval_needed--> waiting_slot
        --slot_granted--> claiming --claimed--> running --tool_ended--> recording
        --recorded--> finished

with ``awaiting_approval`` (a human decides) and ``waiting_gate`` (a gated tool waits for
the turn to end ok) on the way when they apply. ``TRANSITIONS`` below is the whole story:
for each state and event it names the *step* the turn takes and the states it may lead to,
or ``None`` when the event does not concern a call in that state (it is ignored, and
nothing changes). A few steps are guarded, like the core's ``ready``: ``proceed`` goes to
``waiting_gate``, ``waiting_slot`` or ``not_executed`` depending on the tool being gated
and on the turn's outcome; ``turn_not_ok`` ends a gated call but not an eager one; the
deadline denies an in-process approval but leaves a deferred one pending.

The one guarded function that lets a tool start is the turn's ``may_start``: it reads the
live state (the tracker's status of the call, whether the tracker is closed, the turn's
outcome for a gated tool, the approval, the slot held, the deadline) right before the
``claimed`` event, and again nothing runs if any of them says no.

Slots: a call holds its slot (the turn's ``max_concurrency``, its tool's runner-wide cap,
and a thread of the runner's pool for a sync tool) from ``slot_granted`` until its tool
really stopped: ``tool_ended`` from ``running``, or ``tool_stopped`` from ``abandoned``
(a sync tool's thread outliving its call's timeout or cancellation keeps its slot, even
after its turn returned). Calls leave the table in a terminal state (``finished``,
``not_executed``, ``in_doubt``); only ``abandoned`` calls stay after their call ended.

``streaming`` is not held by the runner: it is any call the tracker has as ``pending``.
Cancelling one ends it in the tracker at once, so it never becomes a runnable call.

This module is sans-IO: states, events, steps and the table. The turn
(:mod:`toolcall_tracker.runner._turn`) drives it and publishes every transition to the
run's listener (:class:`RunnerListener`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final

__all__ = [
    "TERMINAL",
    "TRANSITIONS",
    "RunnerEvent",
    "RunnerListener",
    "RunnerState",
    "Step",
    "resolved",
]


class RunnerState(str, Enum):
    """Where a call is in the tool runner (``RunControl.state(call_id)``)."""

    STREAMING = "streaming"
    """Its arguments are still arriving (the tracker has it ``pending``)."""
    VALIDATING = "validating"
    """Ready: its tool is looked up, its arguments validated, its need for approval decided
    (an async ``needs_approval`` predicate may take a while)."""
    AWAITING_APPROVAL = "awaiting_approval"
    """A human decides (``RunControl.approve`` / ``deny`` / ``decide``)."""
    WAITING_GATE = "waiting_gate"
    """A gated (non-eager) tool waits for the turn to end ok."""
    WAITING_SLOT = "waiting_slot"
    """Waits for a slot: ``max_concurrency``, its tool's cap, a thread for a sync tool."""
    CLAIMING = "claiming"
    """Holds a slot; the outcome store (if any) is asked whether it may run."""
    RUNNING = "running"
    """Its tool runs."""
    RECORDING = "recording"
    """Its tool finished; the outcome store (if any) records the outcome."""
    ABANDONED = "abandoned"
    """The call has ended (timeout, cancellation, closing) but its tool has not stopped yet
    (a sync tool's thread runs on): it keeps its slot until it does."""
    FINISHED = "finished"
    """Its tool ran and stopped; the call has its outcome."""
    NOT_EXECUTED = "not_executed"
    """The call ended without its tool running (denied, cut off, cancelled, invalid...)."""
    IN_DOUBT = "in_doubt"
    """Its tool ran, but recording the outcome in the store failed: never run it again."""

    __hash__ = str.__hash__  # equal to its value, so hashed as its value (and in C)

    def __str__(self) -> str:
        return self.value


class RunnerEvent(str, Enum):
    """What can happen to a call in the runner (the columns of ``TRANSITIONS``)."""

    READY = "ready"
    """The tracker reports the call ready (its arguments parsed)."""
    NEEDS_APPROVAL = "needs_approval"
    NO_APPROVAL_NEEDED = "no_approval_needed"
    INVALID = "invalid"
    """Unknown tool, invalid (or invalid edited) arguments, or the predicate raised."""
    APPROVED = "approved"
    """A human approved it (possibly with edited arguments)."""
    DENIED = "denied"
    TURN_OK = "turn_ok"
    TURN_NOT_OK = "turn_not_ok"
    SLOT_GRANTED = "slot_granted"
    CLAIMED = "claimed"
    """The store guard let it run (or there is none)."""
    CLAIM_REFUSED = "claim_refused"
    """The store guard gave an outcome instead, or the claim failed."""
    TOOL_ENDED = "tool_ended"
    """The tool returned, raised or timed out, and has really stopped."""
    RECORDED = "recorded"
    RECORD_FAILED = "record_failed"
    CANCEL = "cancel"
    """``RunControl.cancel(call_id)``, or the run itself was cancelled."""
    DEADLINE = "deadline"
    """The run's overall timeout or deadline passed."""
    CLOSED = "closed"
    """The tracker was closed."""
    FINISHED_ELSEWHERE = "finished_elsewhere"
    """Other code (an adapter, the application) ended the call in the tracker."""
    TOOL_STOPPED = "tool_stopped"
    """An abandoned tool really stopped (its thread ended)."""

    __hash__ = str.__hash__  # equal to its value, so hashed as its value (and in C)

    def __str__(self) -> str:
        return self.value


class Step(Enum):
    """What the turn does for a cell of ``TRANSITIONS``."""

    ADMIT = "look the tool up, validate the arguments, decide whether approval is needed"
    ASK = "publish an approval request (deny at once without a RunControl)"
    PROCEED = "approved or no approval needed: to the gate, to the slot queue, or not run"
    GATE = "the turn ended: a gated call queues (ok) or ends not_executed; eager ones stay"
    QUEUE = "join the slot queue (ready order, per-tool caps)"
    CLAIM = "take the slot; ask the store guard"
    START = "may_start said yes: run the tool"
    SETTLE = "end the call with the guard's outcome, or a claim failure; free the slot"
    RECORD = "free the slot; give the outcome to the store guard"
    FINISH = "write the outcome to the tracker"
    DOUBT = "write the outcome to the tracker; report the call in doubt"
    FAIL = "end the call with a failure; its tool never ran (free the slot if held)"
    HOLD = "a deferred approval stays pending past the deadline (nobody was asked yet)"
    LEAVE = "the call ended elsewhere: forget it (free the slot if held)"
    STOP = "end the call; cancel its tool, which keeps its slot until it stops"
    RELEASE = "the tool stopped: free its slot"


S, E = RunnerState, RunnerEvent
Cell = tuple[Step, tuple[RunnerState, ...]]

# The exits every waiting state shares: the call ends and its tool never runs.
_ENDS: Final[dict[RunnerEvent, Cell | None]] = {
    E.CANCEL: (Step.FAIL, (S.NOT_EXECUTED,)),
    E.DEADLINE: (Step.FAIL, (S.NOT_EXECUTED,)),
    E.CLOSED: (Step.FAIL, (S.NOT_EXECUTED,)),
    E.FINISHED_ELSEWHERE: (Step.LEAVE, (S.NOT_EXECUTED,)),
}
_TURN_GATES: Final[dict[RunnerEvent, Cell | None]] = {
    E.TURN_OK: None,
    E.TURN_NOT_OK: (Step.GATE, (S.NOT_EXECUTED, S.VALIDATING)),
}


def _row(**cells: Cell | None) -> dict[RunnerEvent, Cell | None]:
    row: dict[RunnerEvent, Cell | None] = dict.fromkeys(RunnerEvent)
    for name, cell in cells.items():
        row[RunnerEvent(name)] = cell
    return row


def _with(
    row: dict[RunnerEvent, Cell | None], *parts: dict[RunnerEvent, Cell | None]
) -> dict[RunnerEvent, Cell | None]:
    for part in parts:
        row.update(part)
    return row


_PROCEED: Final = (Step.PROCEED, (S.WAITING_GATE, S.WAITING_SLOT, S.NOT_EXECUTED))

TRANSITIONS: Final[dict[RunnerState, dict[RunnerEvent, Cell | None]]] = {
    S.STREAMING: _with(
        _row(ready=(Step.ADMIT, (S.VALIDATING,))),
        _ENDS,
        {E.DEADLINE: None},  # its deadline comes when it is ready
    ),
    S.VALIDATING: _with(
        _row(
            needs_approval=(Step.ASK, (S.AWAITING_APPROVAL, S.NOT_EXECUTED)),
            no_approval_needed=_PROCEED,
            invalid=(Step.FAIL, (S.NOT_EXECUTED,)),
        ),
        _TURN_GATES,
        _ENDS,
    ),
    S.AWAITING_APPROVAL: _with(
        _row(
            approved=_PROCEED,
            denied=(Step.FAIL, (S.NOT_EXECUTED,)),
            invalid=(Step.FAIL, (S.NOT_EXECUTED,)),
        ),
        {E.TURN_OK: None, E.TURN_NOT_OK: (Step.GATE, (S.NOT_EXECUTED, S.AWAITING_APPROVAL))},
        _ENDS,
        {E.DEADLINE: (Step.HOLD, (S.NOT_EXECUTED, S.AWAITING_APPROVAL))},
    ),
    S.WAITING_GATE: _with(
        _row(
            turn_ok=(Step.QUEUE, (S.WAITING_SLOT,)),
            turn_not_ok=(Step.GATE, (S.NOT_EXECUTED,)),
        ),
        _ENDS,
    ),
    S.WAITING_SLOT: _with(_row(slot_granted=(Step.CLAIM, (S.CLAIMING,))), _ENDS),
    S.CLAIMING: _with(
        _row(
            claimed=(Step.START, (S.RUNNING, S.NOT_EXECUTED)),
            claim_refused=(Step.SETTLE, (S.NOT_EXECUTED,)),
        ),
        _ENDS,
    ),
    S.RUNNING: _row(
        tool_ended=(Step.RECORD, (S.RECORDING,)),
        cancel=(Step.STOP, (S.ABANDONED,)),
        deadline=(Step.STOP, (S.ABANDONED,)),
        closed=(Step.STOP, (S.ABANDONED,)),
        finished_elsewhere=(Step.STOP, (S.ABANDONED,)),
    ),
    S.RECORDING: _row(
        recorded=(Step.FINISH, (S.FINISHED,)),
        record_failed=(Step.DOUBT, (S.IN_DOUBT,)),
    ),
    S.ABANDONED: _row(tool_stopped=(Step.RELEASE, (S.FINISHED,))),
}
"""``TRANSITIONS[state][event]``: ``(step, possible next states)``, or ``None`` (ignored)."""

TERMINAL: Final = frozenset({S.FINISHED, S.NOT_EXECUTED, S.IN_DOUBT})
"""States a call leaves the turn's table in."""


def resolved(
    table: dict[RunnerState, dict[RunnerEvent, Cell | None]], owner: type
) -> dict[RunnerState, dict[RunnerEvent, tuple[Any, tuple[RunnerState, ...]] | None]]:
    """``table`` with each step replaced by ``owner``'s method ``_step_<step>`` (so that
    the driver fires an event with two look-ups and a call)."""
    return {
        state: {
            event: None
            if cell is None
            else (getattr(owner, f"_step_{cell[0].name.lower()}"), cell[1])
            for event, cell in row.items()
        }
        for state, row in table.items()
    }


del S, E


class RunnerListener:
    """A listener of the runner's transitions; subclass it and override :meth:`transition`.

    Pass one as ``ToolRunner.run(tracker, listener=...)``. It is called synchronously, on
    the event loop's thread, for every transition of every call of the run (a journal of
    what ran writes these down). An exception it raises is logged at WARNING and ignored:
    a listener never changes what runs.
    """

    def transition(
        self, call_id: str, before: RunnerState, after: RunnerState, event: RunnerEvent
    ) -> None:
        """Call ``call_id`` went from ``before`` to ``after`` on ``event``.

        ``after`` is :attr:`RunnerState.IN_DOUBT` when the store could not record the
        outcome of a tool that ran.
        """
