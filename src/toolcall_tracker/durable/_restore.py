"""Restore a journaled turn in another process, and finish it there.

Theory of operation. :func:`restore` reads the turn's records and replays them into a
fresh tracker built under the turn's own ``Limits`` and ``keep_finished`` (the first
record): the machine is
deterministic, so the calls come back exactly as the first process had them, with the
results and errors it recorded (failures as their own classes, by ``kind``). Outcomes
that were journaled but whose event did not make it (the process died in between) are
applied to their calls too. Nothing runs here.

:func:`resume_turn` then finishes the turn through a :class:`DurableTurn` (so what happens
now is journaled as well):

- a turn whose stream never reached its ``end`` was cut by the crash: it ends now,
  ``End(ok=False, reason="interrupted")``, so its gated tools end ``not_executed``;
- every call still ``running`` goes through the runner again, whose start guard claims it
  in the store first: a call the first process finished is ended with its recorded
  outcome; one it claimed and is (still) running is waited for, bounded, while its lease
  is renewed; one whose lease ran out with no outcome is in doubt and ends
  ``outcome_in_doubt``, never run again, unless its tool is ``idempotent=True`` or the
  journal proves its tool never started (fenced claims, no ``start``: see
  :mod:`._journal`); a call nobody claimed runs (nothing of it ran before);
- a call whose approval (or denial) the runner journaled gets the same decision again,
  preset on the ``control`` (:meth:`RunControl.preset`, in-process or deferring alike),
  an approval with the edited arguments it was journaled with (never the model's); only
  the undecided ones are asked for again: with ``RunControl(defer_approvals=True)`` they
  stay pending. Without a control, calls needing approval are denied (``no_approver``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..calls import Status, ToolCall
from ..limits import Limits
from ..runner import (
    CallOutcome,
    OutcomeStore,
    PendingApprovals,
    RunControl,
    RunnerEvent,
    StoreGuard,
    ToolRunner,
)
from ..sink import EventSink
from ..tracker import ToolCallTracker
from ._journal import DEFAULT_KEY_TTL, DurableTurn, Journal, require_fencing
from ._sqlite import DurableError

__all__ = ["RestoredTurn", "apply_events", "restore", "resume_turn"]

INTERRUPTED = "interrupted"
_DENIED_BEFORE = "denied before the turn was restored"
_DECIDED = frozenset({RunnerEvent.APPROVED.value, RunnerEvent.DENIED.value})


@dataclass(frozen=True)
class RestoredTurn:
    """A turn rebuilt from its journal.

    Attributes:
        turn_id: the turn.
        tracker: a fresh tracker holding the replayed calls (its turn ended if the journal
            has the end).
        limits: the turn's ``Limits``.
        cut: ``True`` if the journal has no ``end``: the model's stream was cut.
        claimed: the ids of the calls claimed (their tool may have started) without a
            journaled outcome: the store decides, on resume, whether they ran.
        decisions: the approvals (``True``) and denials (``False``) the runner recorded,
            by call id.
        edited: the edited arguments of the approvals that had some, by call id (as
            journaled: JSON).
        records: how many records were read; ``last_seq`` the position of the last.
    """

    turn_id: str
    tracker: ToolCallTracker
    limits: Limits
    cut: bool
    claimed: frozenset[str]
    decisions: dict[str, bool]
    edited: dict[str, Any]
    records: int
    last_seq: int


async def restore(journal: Journal, turn_id: str) -> RestoredTurn:
    """Rebuild turn ``turn_id`` from ``journal`` by replay (runs nothing).

    Raises:
        DurableError: the journal has no such turn, or cannot be read.
    """
    records = await journal.read(turn_id)
    if not records or records[0].kind != "limits":
        raise DurableError(f"the journal has no turn {turn_id!r} (no limits record first)")
    head = records[0].data
    limits = Limits(**head["limits"])
    tracker = ToolCallTracker(limits=limits, keep_finished=head.get("keep_finished"))
    claimed: set[str] = set()
    decisions: dict[str, bool] = {}
    edited: dict[str, Any] = {}
    outcomes: dict[str, CallOutcome] = {}
    for record in records[1:]:
        if record.kind == "events":
            apply_events(tracker, record.data)
        elif record.kind == "claim":
            claimed.add(record.data["id"])
        elif record.kind == "runner" and record.data["event"] in _DECIDED:
            decisions[record.data["id"]] = record.data["event"] == "approved"
            if "arguments" in record.data:
                edited[record.data["id"]] = record.data["arguments"]
        elif record.kind == "outcome":
            data = dict(record.data)
            outcomes[data.pop("id")] = CallOutcome.model_validate(data)
    for call_id, outcome in outcomes.items():
        claimed.discard(call_id)
        if tracker.status(call_id) is Status.RUNNING:
            failure = outcome.call_failure()
            if failure is not None:
                tracker.write_error(call_id, failure)
            else:
                tracker.write_result(call_id, outcome.result)
    return RestoredTurn(
        turn_id,
        tracker,
        limits,
        tracker.end is None,
        frozenset(claimed),
        decisions,
        edited,
        len(records),
        records[-1].seq,
    )


async def resume_turn(
    journal: Journal,
    turn_id: str,
    runner: ToolRunner,
    *,
    store: OutcomeStore,
    control: RunControl | None = None,
    key_ttl: timedelta = DEFAULT_KEY_TTL,
) -> list[ToolCall]:
    """Take turn ``turn_id`` over, restore it and finish it with ``runner`` (see the
    module docs).

    The turn is taken over first (its epoch raised in the journal and in ``store``), and
    only then read: its old writer, if it still runs, is fenced off before anything is
    decided, so nothing it does later changes what this returns.

    Returns:
        The turn's calls, finished (except those left pending with a deferring control).

    Raises:
        ValueError: the turn handed calls to a client for approval (its ``run_end``), and
            ``control`` does not defer approvals: those calls are decided only through
            that signed state (``RunControl(defer_approvals=True)``, then
            ``runner.resume``). Raised before anything runs.
        DurableError: the journal has no such turn, cannot be read, or was written by a
            newer version.
    """
    require_fencing(store)  # before the take-over
    log = await journal.take_over(turn_id)  # fences the old writer's journal ...
    await store.fence(turn_id, log.epoch)  # ... and its claims, before the turn is read
    restored = await restore(journal, turn_id)
    tracker = restored.tracker
    handed = restored.handed_out
    if handed is not None:
        await _settled_elsewhere(tracker, handed, store)
        if not any(tracker.status(call.call_id) is Status.RUNNING for call in handed.calls):
            handed = None
        elif control is None or not control.defer_approvals:
            raise ValueError(
                f"turn {turn_id!r} handed calls {handed.ids!r} to a client for approval "
                "(a signed state): they are decided only through that state, so resume the "
                "turn with RunControl(defer_approvals=True) (its control.pending is the "
                "same state) and answer them with runner.resume(state, decisions)"
            )
    async with DurableTurn(
        journal, turn_id, tracker, store=store, key_ttl=key_ttl, log=log
    ) as turn:
        if tracker.end is None:
            tracker.write_end(False, INTERRUPTED)
        if control is not None:
            for call_id, approved in restored.decisions.items():
                edited = restored.edited.get(call_id)
                control.preset(call_id, approved, arguments=edited, reason=_DENIED_BEFORE)
        return await turn.run(runner, control=control, continues=handed)


async def _settled_elsewhere(
    tracker: ToolCallTracker, handed: PendingApprovals, store: OutcomeStore
) -> None:
    """End each handed-out call that a resume of its signed state (on any server) has
    finished, with the outcome that resume recorded (a call a resume holds without an
    outcome yet stays awaiting: approving it again claims the same key, and waits)."""
    guard = StoreGuard.of_state(store, handed)
    for pending in handed.calls:
        call = tracker.get(pending.call_id)
        if call is None or call.status is not Status.RUNNING:
            continue
        outcome = await store.get(guard.key(call))
        if outcome is None:
            continue
        failure = outcome.call_failure()
        if failure is not None:
            tracker.write_error(call.id, failure)
        else:
            tracker.write_result(call.id, outcome.result)


def apply_events(sink: EventSink, items: list[Any]) -> None:
    """Write the stream events of one ``events`` record to ``sink`` (a machine, a tracker
    or any :class:`~toolcall_tracker.EventSink`), in order.

    Raises:
        DurableError: an event this version does not know.
    """
    for item in items:
        tag = item[0]
        if tag == "d":
            sink.write_delta(item[1], item[2])
        elif tag == "s":
            sink.write_start(item[1], item[2])
        elif tag == "r":
            sink.write_ready(item[1])
        elif tag == "R":
            sink.write_result(item[1], item[2])
        elif tag == "E":
            sink.write_error(item[1], _error_value(item[2]))
        elif tag == "e":
            sink.write_end(item[1], item[2])
        else:
            raise DurableError(f"unknown journal event {tag!r}: written by a newer version?")


def _error_value(data: Any) -> Any:
    """An error as journaled: a failure (a dict with a ``kind``) as its class."""
    if isinstance(data, dict) and isinstance(data.get("kind"), str):
        return CallOutcome(kind="failure", failure=data).call_failure()
    return data
