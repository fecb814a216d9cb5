"""Restore a journaled turn in another process, and finish it there.

Theory of operation. :func:`restore` reads the turn's records and replays them into a
fresh tracker built under the turn's own ``Limits`` and ``keep_finished`` (the first
record): the machine is deterministic, so the calls come back exactly as the first
process had them, with the results and errors it recorded (library failures, journaled
as ``F`` events, as their own classes by ``kind``; any other error value as the value it
was). Outcomes that were journaled but whose event did not make it (the process died in
between) are applied to their calls too. Nothing runs here.

Reading fails closed. Every record is checked before it is used (:func:`read_head`,
:func:`check_record`, :func:`apply_events`; followers and the command line use the same
checks): a journal format newer than :data:`JOURNAL_FORMAT`, a record kind, stream event
tag or ``Limits`` field this version does not know raises :class:`DurableError` naming
the version, and data that is not what its kind needs raises :class:`DurableError`
naming the record's position and kind. Nothing is skipped: an old process must not read
past a record (a ``fence``, say) as if it were not there.

:func:`resume_turn` first takes the turn over: its epoch raised in the journal
(:meth:`Journal.take_over`, a ``fence`` record) and in the outcome store
(``store.fence``), and only then reads it, so a writer still alive somewhere (frozen past
its lease) is fenced off before anything is decided: its later appends and claims are
refused, and nothing it does changes what the restore reports. Then it finishes the turn
through a :class:`DurableTurn` under the new epoch (so what happens now is journaled as
well):

- the calls the turn handed to a client for approval (its ``run_end``'s signed state)
  are decided only through that state: one that a resume (on any server) finished ends
  with its recorded outcome; the others stay awaiting under the very same state (its
  nonce, expiry and turn id: ``ToolRunner.run(continues=...)``), which needs a deferring
  control (else ``ValueError``, before anything runs);

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

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final, NamedTuple

from ..calls import Status, ToolCall
from ..errors import InvalidEvent
from ..failures import CallFailure, OutcomeInDoubt
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
from ._journal import DEFAULT_KEY_TTL, DurableTurn, Journal, JournalRecord, require_fencing
from ._protocol import JOURNAL_FORMAT, RECORD_KINDS, DurableError

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
        handed_out: the signed state the turn's last ``run_end`` handed to a client (its
            calls awaiting a decision in another request), as journaled; ``None`` if it
            handed out none (or was written before format 2, which did not journal it).
        epoch: the turn's epoch as its journal says (1, plus one for each take-over).
        journal_format: the format its first record says (1: written by the previous
            version, whose guard claimed ``"<turn id>:<call id>"`` keys).
        awaiting, awaiting_nonce: the calls the last ``run_end`` left awaiting a decision,
            and their signed state's nonce (in every format; ``handed_out`` only in 2).
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
    handed_out: PendingApprovals | None = None
    epoch: int = 1
    journal_format: int = JOURNAL_FORMAT
    awaiting: tuple[str, ...] = ()
    awaiting_nonce: str | None = None


async def restore(journal: Journal, turn_id: str) -> RestoredTurn:
    """Rebuild turn ``turn_id`` from ``journal`` by replay (runs nothing).

    Every record is checked first (see :func:`read_head` and :func:`check_record`):
    nothing this version does not know is skipped.

    Raises:
        DurableError: the journal has no such turn, or cannot be read; or a record is one
            this version does not know (a newer journal format, record kind, stream event
            or ``Limits`` field: the message names the version) or is malformed (the
            message names its position and kind).
    """
    records = await journal.read(turn_id)
    if not records or records[0].kind != "limits":
        raise DurableError(f"the journal has no turn {turn_id!r} (no limits record first)")
    head = read_head(records[0])
    tracker = ToolCallTracker(limits=head.limits, keep_finished=head.keep_finished)
    claimed: set[str] = set()
    decisions: dict[str, bool] = {}
    edited: dict[str, Any] = {}
    outcomes: dict[str, CallOutcome] = {}
    handed: PendingApprovals | None = None
    awaiting: tuple[str, ...] = ()
    awaiting_nonce: str | None = None
    epoch = 1
    for record in records[1:]:
        check_record(record, head.format)
        data = record.data
        if record.kind == "events":
            replay_events(tracker, record, head.format)
        elif record.kind == "claim":
            claimed.add(data["id"])
        elif record.kind == "runner" and data["event"] in _DECIDED:
            decisions[data["id"]] = data["event"] == "approved"
            if "arguments" in data:
                edited[data["id"]] = data["arguments"]
        elif record.kind == "outcome":
            outcomes[data["id"]] = _outcome(record)
        elif record.kind == "run_end":
            handed = _handed_out(record)
            awaiting = tuple(data.get("awaiting") or ())
            awaiting_nonce = data.get("nonce")
        elif record.kind == "fence":
            epoch = max(epoch, data["epoch"])
        # start changes no call here
    for call_id, outcome in outcomes.items():
        claimed.discard(call_id)
        if tracker.status(call_id) is Status.RUNNING:
            _finish(tracker, call_id, outcome.result, outcome.call_failure())
    return RestoredTurn(
        turn_id,
        tracker,
        head.limits,
        tracker.end is None,
        frozenset(claimed),
        decisions,
        edited,
        len(records),
        records[-1].seq,
        handed,
        epoch,
        head.format,
        awaiting,
        awaiting_nonce,
    )


def _handed_out(record: JournalRecord) -> PendingApprovals | None:
    """The signed state a ``run_end`` record holds (``None``: it handed out none).

    Raises:
        DurableError: the state is not a signed state's JSON.
    """
    state = record.data.get("state")
    if state is None or not record.data.get("awaiting"):
        return None
    try:
        return PendingApprovals.model_validate_json(json.dumps(state))
    except ValueError as exc:
        raise DurableError(
            f"journal record {record.seq} ('run_end') is malformed: its state is not a "
            f"signed state: {exc}"
        ) from exc


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
    if restored.handed_out is None and restored.awaiting_nonce and restored.awaiting:
        await _settle_previous_version(tracker, restored, store)
    handed = restored.handed_out
    if handed is not None:
        handed = await _settle_handed_out(tracker, handed, store)
        if handed is not None and (control is None or not control.defer_approvals):
            raise ValueError(
                f"turn {turn_id!r} handed calls {handed.ids!r} to a client for approval "
                "(a signed state): they are decided only through that state, so resume the "
                "turn with RunControl(defer_approvals=True) (its control.pending is the "
                "same state) and answer them with runner.resume(state, decisions)"
            )
    legacy = restored.journal_format < 2  # written by the previous version's guard
    async with DurableTurn(
        journal, turn_id, tracker, store=store, key_ttl=key_ttl, log=log, legacy_keys=legacy
    ) as turn:
        if tracker.end is None:
            tracker.write_end(False, INTERRUPTED)
        if control is not None:
            for call_id, approved in restored.decisions.items():
                edited = restored.edited.get(call_id)
                control.preset(call_id, approved, arguments=edited, reason=_DENIED_BEFORE)
        return await turn.run(runner, control=control, continues=handed)


async def _settle_handed_out(
    tracker: ToolCallTracker, handed: PendingApprovals, store: OutcomeStore
) -> PendingApprovals | None:
    """Settle what can be settled of the calls the turn handed to a client; the state to
    continue under (``None``: nothing of it awaits a decision any more).

    A call that a resume of the state (on any server) finished ends with the outcome that
    resume recorded; one a resume holds without an outcome yet stays awaiting (approving
    it again claims the same key, and waits). Once the state has expired nobody can
    resume it any more, and the store kept its keys only until then: a call still
    awaiting whose outcome is gone ends in doubt (``in_doubt``: a resume may have run it
    before the expiry; it is never run now)."""
    expired = handed.expires_at <= datetime.now(timezone.utc)
    guard = StoreGuard.of_state(store, handed)
    awaiting = False
    for pending in handed.calls:
        call = tracker.get(pending.call_id)
        if call is None or call.status is not Status.RUNNING:
            continue
        outcome = await store.get(guard.key(call))
        if outcome is not None:
            _finish(tracker, call.id, outcome.result, outcome.call_failure())
        elif expired:
            doubt = OutcomeInDoubt(
                message=f"tool {call.name!r} was not run: its approval state expired at "
                f"{handed.expires_at.isoformat()}, and whether a resume of it ran the tool "
                "before then is no longer known (restore a turn before its approvals expire)",
                tool=call.name,
            )
            tracker.write_error(call.id, doubt)
        else:
            awaiting = True
    return handed if awaiting else None


async def _settle_previous_version(
    tracker: ToolCallTracker, restored: RestoredTurn, store: OutcomeStore
) -> None:
    """End the calls a turn of the previous version handed out for approval: its journal
    holds their state's nonce but not the state, so it cannot be handed out again. A call
    that a resume of it finished (under that version's key, ``"<nonce>:<call id>"``) ends
    with the recorded outcome; any other ends in doubt (the client may still answer the
    state it holds, with ``runner.resume``: the call then runs at most once)."""
    nonce = restored.awaiting_nonce
    assert nonce is not None
    expires = datetime.now(timezone.utc)
    guard = StoreGuard(store, nonce, expires, legacy=True)
    for call_id in restored.awaiting:
        call = tracker.get(call_id)
        if call is None or call.status is not Status.RUNNING:
            continue
        outcome = await store.get(guard.key(call))
        if outcome is not None:
            _finish(tracker, call_id, outcome.result, outcome.call_failure())
            continue
        doubt = OutcomeInDoubt(
            message=f"tool {call.name!r} was not run here: the previous version of "
            f"toolcall-tracker handed it out for approval (nonce {nonce!r}) in a state this "
            "journal does not hold; answer that state with runner.resume",
            tool=call.name,
        )
        tracker.write_error(call_id, doubt)


def _finish(tracker: ToolCallTracker, call_id: str, result: Any, failure: Any) -> None:
    """End the running call ``call_id`` with ``failure``, or else with ``result``."""
    if failure is not None:
        tracker.write_error(call_id, failure)
    else:
        tracker.write_result(call_id, result)


def apply_events(
    sink: EventSink, items: list[Any], *, journal_format: int = JOURNAL_FORMAT
) -> None:
    """Write the stream events of one ``events`` record to ``sink`` (a machine, a tracker
    or any :class:`~toolcall_tracker.EventSink`), in order.

    Args:
        sink: where the events are written.
        items: the record's data (a list of events).
        journal_format: the format of the journal the record is from (its head's
            ``"format"``; 1 for a head without one). Only ``["E", id, error]`` depends on
            it: in format 1 an error that is a dict with a string ``kind`` is restored as
            the library failure of that kind (those journals tagged nothing); from format 2
            on it is restored as the value it was (library failures are ``["F", id,
            failure]``).

    Raises:
        DurableError: an event this version does not know (the message names the
            version), or a malformed one (not a list of the tag's length and types, or an
            event the sink refuses as invalid); the events before it were written.
    """
    if not isinstance(items, list):
        raise DurableError(f"the events are {_kind_of(items)}, not a list")
    for index, item in enumerate(items):
        try:
            _apply_event(sink, item, journal_format)
        except DurableError as exc:
            raise DurableError(f"event {index}: {exc}") from None
        except InvalidEvent as exc:  # the sink refused it (an empty id, too long a name...)
            raise DurableError(f"event {index}: {exc}") from None


def _apply_event(sink: EventSink, item: Any, journal_format: int) -> None:
    """Check one journaled event against its tag's shape, then write it to ``sink``."""
    if not isinstance(item, list) or not item:
        raise DurableError(f"{_kind_of(item)} is not an event (a list with a tag first)")
    tag = item[0]
    if not isinstance(tag, str):
        raise DurableError(f"the tag {_kind_of(tag)} is not a string")
    shape = _EVENTS.get(tag)
    if shape is None:
        raise newer_version(
            f"a stream event {_shown(tag)} this version does not know", journal_format
        )
    if len(item) != len(shape) + 1 or not all(
        check(value) for check, value in zip(shape, item[1:], strict=True)
    ):
        raise DurableError(f"the {_shown(tag)} event {_clipped(item)} has not its shape")
    if tag == "d":
        sink.write_delta(item[1], item[2])
    elif tag == "s":
        sink.write_start(item[1], item[2])
    elif tag == "r":
        sink.write_ready(item[1])
    elif tag == "R":
        sink.write_result(item[1], item[2])
    elif tag == "F":
        sink.write_error(item[1], _failure(item[2]))
    elif tag == "E":
        value = item[2]
        if journal_format < 2 and _looks_like_failure(value):  # what format 1 meant
            value = _failure(value)
        sink.write_error(item[1], value)
    else:  # "e"
        sink.write_end(item[1], item[2])


# -- reading records: what this version knows, checked before it is used -----------------

KINDS: Final = RECORD_KINDS
"""The record kinds this version reads (format 2; the protocol's); any other is refused."""

_LIMIT_FIELDS: Final = frozenset(field.name for field in dataclasses.fields(Limits))


class TurnHead(NamedTuple):
    """A turn's first record (``limits``), checked.

    Attributes:
        limits: the turn's ``Limits``.
        keep_finished: its tracker's ``keep_finished`` (``None``: every call kept).
        format: the journal format (1: a head without one).
    """

    limits: Limits
    keep_finished: int | None
    format: int


def newer_version(what: str, journal_format: int) -> DurableError:
    """The error of a reader meeting ``what`` it does not know (a record, an event, a
    field, a format): the journal was written by a newer version."""
    return DurableError(
        f"{what}: written by a newer version of toolcall-tracker (journal format "
        f"{journal_format}; this version reads up to {JOURNAL_FORMAT})"
    )


def read_head(record: JournalRecord) -> TurnHead:
    """The turn's ``Limits``, ``keep_finished`` and journal format from its ``limits``
    record (the first of the turn).

    Raises:
        DurableError: a format newer than this version reads, or a ``Limits`` field it
            does not know (the message names the version); or the record is malformed.
    """
    data = record.data
    where = _where(record)
    if record.kind != "limits" or not isinstance(data, dict):
        raise DurableError(f"{where}: not a turn's head (a limits record with an object)")
    journal_format = data.get("format", 1)
    if type(journal_format) is not int or journal_format < 1:
        raise DurableError(f"{where}: the format {_clipped(journal_format)} is not a number >= 1")
    if journal_format > JOURNAL_FORMAT:
        raise newer_version(where, journal_format)
    limits = data.get("limits")
    if not isinstance(limits, dict):
        raise DurableError(f"{where}: its limits are {_kind_of(limits)}, not an object")
    unknown = sorted(str(name) for name in limits if name not in _LIMIT_FIELDS)
    if unknown:
        names = ", ".join(_shown(name) for name in unknown[:5])
        raise newer_version(f"{where}: Limits field {names} unknown here", journal_format)
    try:
        parsed = Limits(**limits)
    except (TypeError, ValueError) as exc:
        raise DurableError(f"{where}: {exc}") from None
    keep = data.get("keep_finished")
    if keep is not None and (type(keep) is not int or keep < 0):
        raise DurableError(f"{where}: keep_finished {_clipped(keep)} is not null or a number >= 0")
    return TurnHead(parsed, keep, journal_format)


def check_record(record: JournalRecord, journal_format: int) -> None:
    """Check a record after the head: a kind this version knows, with the data its kind
    needs (an ``events`` record's events are checked as they are applied:
    :func:`apply_events`). Keys of the data a reader does not use are allowed.

    Raises:
        DurableError: an unknown kind (the message names the version), a second ``limits``
            record, or data that is not what the kind needs (the message names the
            record's position and kind).
    """
    kind = record.kind
    if kind not in KINDS:
        raise newer_version(
            f"journal record {_seq(record)} has the kind {_shown(kind)}, unknown here",
            journal_format,
        )
    data = record.data
    problem: str | None = None
    if kind == "limits":
        problem = "a second limits record (a turn has one, first)"
    elif kind == "events":
        if not isinstance(data, list):
            problem = f"its data is {_kind_of(data)}, not a list of events"
    elif not isinstance(data, dict):
        problem = f"its data is {_kind_of(data)}, not an object"
    elif kind == "fence":
        epoch = data.get("epoch")
        if type(epoch) is not int or epoch < 1:
            problem = f"epoch {_clipped(epoch)} is not a number >= 1"
    elif kind == "run_end":
        awaiting = data.get("awaiting")
        nonce = data.get("nonce")
        if not isinstance(awaiting, list) or not all(isinstance(i, str) for i in awaiting):
            problem = "its awaiting is not a list of call ids"
        elif nonce is not None and not isinstance(nonce, str):
            problem = "its nonce is not a string or null"
        elif data.get("state") is not None:
            problem = _state_problem(data["state"])
    elif not isinstance(data.get("id"), str):
        problem = f"id {_clipped(data.get('id'))} is not a string"
    elif kind == "claim":
        if not isinstance(data.get("tool", ""), str) or type(data.get("fenced", False)) is not bool:
            problem = "its tool is not a string or its fenced not a boolean"
    elif kind == "runner":
        if not all(isinstance(data.get(key, ""), str) for key in ("from", "to")) or not (
            isinstance(data.get("event"), str)
        ):
            problem = "its from, to or event is not a string"
    elif kind == "outcome":
        _outcome(record)
    if problem is not None:
        raise DurableError(f"{_where(record)} is malformed: {problem}")


def _state_problem(state: Any) -> str | None:
    """What is wrong with a ``run_end``'s signed state (``None``: it is one)."""
    if not isinstance(state, dict):
        return f"its state is {_kind_of(state)}, not an object (a signed state) or null"
    try:
        PendingApprovals.model_validate_json(json.dumps(state))
    except ValueError as exc:  # pydantic's ValidationError; json: a value JSON cannot hold
        first = str(exc).splitlines()[:3]
        return f"its state is not a signed state: {' '.join(first)}"
    return None


def replay_events(sink: EventSink, record: JournalRecord, journal_format: int) -> None:
    """:func:`apply_events` for an ``events`` record, its errors naming the record."""
    try:
        apply_events(sink, record.data, journal_format=journal_format)
    except DurableError as exc:
        raise DurableError(f"{_where(record)}: {exc}") from None


def _outcome(record: JournalRecord) -> CallOutcome:
    data = dict(record.data)
    data.pop("id", None)
    try:
        return CallOutcome.model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError
        first = str(exc).splitlines()[:3]
        raise DurableError(f"{_where(record)} is malformed: {' '.join(first)}") from None


def _failure(data: Any) -> CallFailure:
    """A journaled library failure as its class (a kind this version does not know: a
    plain :class:`CallFailure` with its kind and message)."""
    failure = CallOutcome(kind="failure", failure=data).call_failure()
    assert failure is not None
    return failure


def _looks_like_failure(data: Any) -> bool:
    """Format 1's guess: a dict with a string ``kind`` was a library failure."""
    return isinstance(data, dict) and isinstance(data.get("kind"), str)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _any(value: Any) -> bool:
    return True


def _is_reason(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return type(value) is bool


# Each tag's fields after the tag: a check per field (the length is exact).
_EVENTS: Final[dict[str, tuple[Callable[[Any], bool], ...]]] = {
    "s": (_is_str, _is_str),
    "d": (_is_str, _is_str),
    "r": (_is_str,),
    "R": (_is_str, _any),
    "E": (_is_str, _any),
    "F": (_is_str, _looks_like_failure),
    "e": (_is_bool, _is_reason),
}


def _seq(record: JournalRecord) -> str:
    return _clipped(record.seq)


def _where(record: JournalRecord) -> str:
    return f"journal record {_seq(record)} ({_shown(record.kind)})"


def _shown(text: Any) -> str:
    """A name from the journal in a message: quoted, at most 40 characters."""
    return repr(str(text)[:40])


def _clipped(value: Any) -> str:
    """A value from the journal in a message, at most 60 characters of its repr."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _kind_of(value: Any) -> str:
    """What a JSON value is, for a message (``an object``, ``a string``...)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if value is None:
        return "null"
    return "a number" if isinstance(value, (int, float)) else type(value).__name__
