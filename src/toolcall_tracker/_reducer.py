"""The per-call reducer: every transition of the protocol, in two tables.

Theory of operation
-------------------
A stream carries many calls, each named by ``id``. Each call is an independent little
state machine; nothing one call receives can change another. Its life is::

    (no call) --start--> pending --delta*--> pending --ready--> running --result--> done
                            |                   |  (invalid JSON)   |
                            +------error--------+------------------>+--error--> error

``TRANSITIONS`` below is the whole story: for each state a call can be in (``None`` is
"no call with that id yet") and each event type, it names either the *action* to take or
the *reason* the event is ignored. Ignored events are not errors: a stream that repeats
or reorders events is normal on real networks, so we report them (a hook and a DEBUG log
line in the machine) and carry on.

Two more rows complete the per-call table. ``forgotten`` is an id whose finished call
was dropped to save memory (``forget`` or a retention policy): everything for it is
ignored, so a late duplicate cannot resurrect it. And ``delta`` has a guard, like
``ready``: a fragment that would take the argument text past ``Limits.max_args_chars``
fails the call (``ArgumentsTooLarge``) and releases its text instead of appending.

The stream itself has a second, tiny state machine (``STREAM``, one row per
:class:`StreamPhase`): it is ``OPEN`` until an ``end`` event arrives, then ``ENDED`` for
good; while ``Limits.max_calls`` calls are tracked it is ``FULL``, where a new ``start`` is
ignored with reason ``too_many_calls`` (and ``OPEN`` again once one is forgotten).
Once ended, the model can say nothing more (``start``, ``delta`` and ``ready`` are
ignored with reason ``turn_ended``) but tool outcomes (``result``, ``error``) still
apply, because they come from the tool runner, not from the model. The ``end`` event is
then broadcast to every call through the ``end`` column of ``TRANSITIONS``: a call still
``pending`` is abandoned (its arguments never completed), every other call keeps its
state.

The reducer is sans-IO and deterministic: no I/O, no clock, no callbacks, no logging. It
sees one call's record and one event and touches nothing else. Validation (is this a
well-formed event? is the id too long?) happens before it, in the machine, and so does
publishing: the machine tells its listeners (its change feed) what each step changed. To keep
accumulation linear in the bytes received it appends fragments to a list in the record
(joined once, at ``ready``) instead of rebuilding a string; every other action also
updates the record in place and :func:`reduce` returns the record.
:class:`~toolcall_tracker.ToolCallStateMachine` applies it per id; the async tracker holds
a machine and adds waiting, as one listener of its change feed.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final

from ._json import _ArgumentsError, parse_json
from ._support import construct
from .calls import Status, ToolCall
from .failures import ArgumentsTooLarge, IncompleteArguments
from .limits import DEFAULT_LIMITS, Limits

__all__ = [
    "FORGOTTEN",
    "STREAM",
    "TRANSITIONS",
    "Action",
    "as_running",
    "IgnoreReason",
    "StreamAction",
    "StreamPhase",
    "reduce",
]


class IgnoreReason(str, Enum):
    """Why an event was ignored: a small fixed vocabulary, compared as strings."""

    UNKNOWN_ID = "unknown_id"
    """No ``start`` with that id has arrived."""
    DUPLICATE_START = "duplicate_start"
    """A ``start`` for an id that already exists."""
    NOT_PENDING = "not_pending"
    """A ``delta`` or ``ready`` after the arguments were complete."""
    NOT_RUNNING = "not_running"
    """A ``result`` before the arguments were complete."""
    ALREADY_FINISHED = "already_finished"
    """Any event for a call that is ``done`` or ``error``."""
    UNKNOWN_TYPE = "unknown_type"
    """A mapping whose ``type`` this library does not know (forward compatibility)."""
    TURN_ENDED = "turn_ended"
    """A ``start``, ``delta``, ``ready`` or second ``end`` after the turn ended."""
    INVALID_EVENT = "invalid_event"
    """A malformed event skipped by a tracker created with ``skip_invalid=True``."""
    TOO_MANY_CALLS = "too_many_calls"
    """A ``start`` while ``Limits.max_calls`` calls are already tracked."""
    FORGOTTEN = "forgotten"
    """Any event for a call that was forgotten (dropped after it finished)."""

    def __str__(self) -> str:
        return self.value


class Action(Enum):
    """What an event does to a call (see ``TRANSITIONS``)."""

    CREATE = "create a pending call with empty argument text"
    APPEND = "append the fragment; error if the text would exceed Limits.max_args_chars"
    PARSE = "parse the argument text: running with args, or error if it is not JSON"
    FINISH = "done, with the result"
    FAIL = "error, with the error"
    ABANDON = "error: the turn ended before the arguments were complete"
    KEEP = "nothing changes (the broadcast end does not concern this call)"


class StreamAction(Enum):
    """What an event does at the stream level (see ``STREAM``)."""

    PER_CALL = "route to the call named by the event's id"
    END_TURN = "end the turn, then broadcast end to every call"


class StreamPhase(str, Enum):
    """The stream's phase: which row of ``STREAM`` an event reads. A ``str`` enum, like
    :class:`IgnoreReason`, so that ``STREAM["open"]`` still finds its row."""

    OPEN = "open"
    """Events are routed to their calls; a ``start`` may create one."""
    FULL = "full"
    """``Limits.max_calls`` calls are tracked: a ``start`` is ignored (``too_many_calls``)."""
    ENDED = "ended"
    """After ``end``, for good: only tool outcomes (``result``, ``error``) still apply."""

    def __str__(self) -> str:
        return self.value


_KINDS: Final = ("start", "delta", "ready", "result", "error", "end")


def _row(*cells: Any) -> dict[str, Any]:
    return dict(zip(_KINDS, cells, strict=True))


# Short names, so the tables below read like the docs' (docs/concepts/state-machine.md).
CREATE, APPEND, PARSE, FINISH = Action.CREATE, Action.APPEND, Action.PARSE, Action.FINISH
FAIL, ABANDON, KEEP = Action.FAIL, Action.ABANDON, Action.KEEP
UNKNOWN_ID, DUP_START = IgnoreReason.UNKNOWN_ID, IgnoreReason.DUPLICATE_START
NOT_PENDING, NOT_RUNNING = IgnoreReason.NOT_PENDING, IgnoreReason.NOT_RUNNING
FINISHED, TURN_ENDED = IgnoreReason.ALREADY_FINISHED, IgnoreReason.TURN_ENDED
FORGOT, TOO_MANY = IgnoreReason.FORGOTTEN, IgnoreReason.TOO_MANY_CALLS
PER_CALL, END_TURN = StreamAction.PER_CALL, StreamAction.END_TURN
PENDING, RUNNING, DONE, ERROR = Status.PENDING, Status.RUNNING, Status.DONE, Status.ERROR
OPEN, FULL, ENDED = StreamPhase.OPEN, StreamPhase.FULL, StreamPhase.ENDED

FORGOTTEN: Final = "forgotten"
"""The row of ids whose finished call was forgotten."""

TRANSITIONS: Final[dict[Status | str | None, dict[str, Action | IgnoreReason]]] = {
    #                start       delta         ready         result        error       end
    None:      _row(CREATE,     UNKNOWN_ID,   UNKNOWN_ID,   UNKNOWN_ID,   UNKNOWN_ID, KEEP),
    PENDING:   _row(DUP_START,  APPEND,       PARSE,        NOT_RUNNING,  FAIL,       ABANDON),
    RUNNING:   _row(DUP_START,  NOT_PENDING,  NOT_PENDING,  FINISH,       FAIL,       KEEP),
    DONE:      _row(DUP_START,  FINISHED,     FINISHED,     FINISHED,     FINISHED,   KEEP),
    ERROR:     _row(DUP_START,  FINISHED,     FINISHED,     FINISHED,     FINISHED,   KEEP),
    FORGOTTEN: _row(FORGOT,     FORGOT,       FORGOT,       FORGOT,       FORGOT,     KEEP),
}  # fmt: skip
"""Per call: ``TRANSITIONS[state][event type]`` is an action or an ignore reason; the state
is the call's status, ``None`` for an id never seen, or ``"forgotten"``."""

STREAM: Final[dict[StreamPhase, dict[str, StreamAction | IgnoreReason]]] = {
    #           start       delta         ready         result        error       end
    OPEN:  _row(PER_CALL,   PER_CALL,     PER_CALL,     PER_CALL,     PER_CALL,   END_TURN),
    FULL:  _row(TOO_MANY,   PER_CALL,     PER_CALL,     PER_CALL,     PER_CALL,   END_TURN),
    ENDED: _row(TURN_ENDED, TURN_ENDED,   TURN_ENDED,   PER_CALL,     PER_CALL,   TURN_ENDED),
}  # fmt: skip
"""Per stream: ``STREAM[phase][event type]``, for each :class:`StreamPhase`: ``OPEN``,
``FULL`` while ``Limits.max_calls`` calls are tracked, and ``ENDED`` after ``end`` (for
good). (A closed async tracker refuses every event before it reaches this table: closing
is the tracker's business, not the machine's.)"""


_COALESCE: Final = 64
"""Fragments (and blocks) joined at a time: bounds a call's memory near its text's size."""
_LANE: Final = 128
"""Characters a call's fast lane takes between two checks (see ``_CallRecord.append``): at
most this many fragments are appended before the next coalescing check."""
_SMALL_TAIL: Final = _COALESCE * 256
"""Characters under which ``_COALESCE`` fragments are small enough to be joined."""
_SMALL_BLOCKS: Final = _COALESCE * _SMALL_TAIL // 4
"""Characters under which ``_COALESCE`` blocks are small enough to be joined."""

_SNAPSHOT_FIELDS: Final = {"id", "name", "args_text", "args", "status", "result", "error"}


class _CallRecord:
    """The mutable record of one call. ``parts`` holds fragments until ``ready``."""

    __slots__ = (
        "args",
        "big",
        "budget",
        "error",
        "free",
        "given",
        "held",
        "id",
        "name",
        "parts",
        "result",
        "small",
        "snapshot",
        "status",
        "text",
    )

    def __init__(self, call_id: str, name: str, room: int) -> None:
        self.id = call_id
        self.name = name
        self.status = PENDING
        # The room left for argument text is split in two: ``budget``, the fast lane (what
        # may be appended with no other check: at most _LANE characters at a time), and
        # ``held``, the rest. -1 closes the lane (the call is no longer pending, or its
        # machine must see every fragment): "does this fragment fit in the lane?" alone
        # then sends every fragment to the table (see append and add).
        self.budget = lane = room if room < _LANE else _LANE
        self.held = room - lane
        self.parts: list[str] = []
        # ``parts`` is [big blocks..., small blocks..., fragments...]: every _COALESCE
        # fragments are joined into a small block, every _COALESCE small blocks into a big
        # one, so tiny fragments cost about what their characters cost (see _append).
        self.free = _COALESCE  # the length of ``parts`` at which the tail is joined
        self.big = 0
        self.small = 0
        self.text: str | None = None
        self.args: Any = None
        # ``(text, value)``: the parse of ``text`` an adapter already made (see give).
        self.given: tuple[str, Any] | None = None
        self.result: Any = None
        self.error: Any = None
        self.snapshot: ToolCall | None = None

    def args_text(self) -> str:
        if self.text is not None:
            return self.text
        parts = self.parts
        if len(parts) > 1:  # join once and keep the join: repeated reads stay linear
            joined = "".join(parts)
            parts.clear()  # (not parts[:] = ...: that copies the old pointers first)
            parts.append(joined)
            self.big, self.small, self.free = 1, 0, 1 + _COALESCE
        return parts[0] if parts else ""

    def room(self) -> int:
        """Characters of argument text still allowed (lane and held together)."""
        budget = self.budget
        return self.held + budget if budget > 0 else self.held

    # -- the fast lane: the one way in for an adapter's fragments ------------------------
    #
    # A machine keeps a pending call's argument text in this record, whose ``budget`` is
    # the call's *fast lane*: the characters that may be appended with no other check (see
    # ``append``). An adapter's call table writing into a machine keeps, for each call it
    # starts, the machine's record of that call (``machine._lanes_of``), and calls
    # ``append`` with a fragment: one that fits in the lane costs one subtraction, one
    # comparison and one list append, without the machine's ``write_delta`` and its
    # look-up. A fragment that does not fit refills the lane as ``write_delta`` would
    # (``add``: coalescing the fragments when it is time), and one that does not fit the
    # call's room either, or meets a closed lane, goes through ``write_delta`` and the
    # table's path.
    #
    # This is safe because a lane only ever admits what ``write_delta`` would append
    # without a report: the machine closes a call's lane (``budget = -1``) when the call
    # leaves ``pending`` (so a record held after that appends nothing) and whenever a
    # fragment listener must be told of each fragment. The machine routes fragments by id
    # and never replaces a record under an id, so the record looked up at the call's start
    # stays that call's.
    #
    # A table that parsed a call's whole argument text itself (the AI SDK reader compares
    # it with the input the server states) hands that parse over with ``give``, so that the
    # text is parsed once. The machine takes it at ``ready`` only if the text it then holds
    # is that very string object (strings are immutable, and ``parse_json`` gives equal
    # values for one text), and drops it when the call fails. The value is the machine's
    # from then on: the table keeps no reference to it.
    #
    # Only this module writes a record's fields: the machine and the adapters' tables call
    # these methods (one inlined copy of ``append``'s first lines stays on the hottest
    # path, marked, and tests/test_fast_lane.py compares it with the method).

    def append(self, text: str) -> bool:
        """The hot path's APPEND: append ``text`` and return ``True`` if the call's lane is
        open and the fragment fits; ``False`` (nothing changed) otherwise, always for a
        call that is not pending or whose machine closed its lane: the caller then takes
        the table's path. Its first lines are the one fast path (the machine inlines them
        in ``apply`` and ``write_delta``; tests/test_machine_hot_path.py checks that every
        route does the same): a fragment that fits in the lane costs a subtraction, a
        comparison and a list append."""
        budget = self.budget - len(text)
        if budget >= 0:
            self.budget = budget
            self.parts.append(text)
            return True
        return self.budget >= 0 and self.add(text)

    def add(self, text: str) -> bool:
        """The table's APPEND: append ``text`` if it fits in the room left (``False``,
        nothing changed, if not); coalesce the fragments if it is time, then give the lane
        its next share of the room, unless the lane is closed."""
        budget = self.budget
        room = (self.held + budget if budget > 0 else self.held) - len(text)
        if room < 0:
            return False
        parts = self.parts
        parts.append(text)
        if len(parts) >= self.free:
            self.coalesce()
        if budget < 0:
            self.held = room
        else:
            self.budget = lane = room if room < _LANE else _LANE
            self.held = room - lane
        return True

    def close_lane(self) -> None:
        """Send every later fragment to the table (the machine must see each one)."""
        if self.budget >= 0:
            self.held += self.budget
            self.budget = -1

    def give(self, text: str, value: Any) -> None:
        """Keep ``value``, the parse of ``text`` by ``parse_json``, for ``ready`` to take if
        the call's text is then ``text`` itself; nothing unless the call is pending."""
        if self.status is PENDING:
            self.given = (text, value)

    def coalesce(self) -> None:
        """Join the last ``_COALESCE`` fragments into one block if they are small, and every
        ``_COALESCE`` such blocks into one big block if those are small. Each character is
        copied at most twice before the final join, so accumulation stays linear; a call's
        memory stays near the size of its text however small its fragments, and a join
        never copies more than a small constant amount of text at once."""
        parts = self.parts
        start = self.big + self.small
        tail = parts[start:]
        if sum(map(len, tail)) <= _SMALL_TAIL:
            del parts[start:]
            parts.append("".join(tail))
            self.small += 1
        else:  # large fragments: their per-object cost is already small; keep them
            self.small += len(tail)
        if self.small >= _COALESCE:
            start = self.big
            blocks = parts[start:]
            if sum(map(len, blocks)) <= _SMALL_BLOCKS:
                del parts[start:]
                parts.append("".join(blocks))
                self.big += 1
            else:
                self.big += len(blocks)
            self.small = 0
        self.free = self.big + self.small + _COALESCE

    def to_call(self) -> ToolCall:
        """The immutable snapshot (cached until the status changes; never while pending,
        so that appending a fragment need not invalidate anything)."""
        snap = self.snapshot
        if snap is None or self.status is PENDING:
            snap = self.snapshot = construct(
                ToolCall,
                {
                    "id": self.id,
                    "name": self.name,
                    "args_text": self.args_text(),
                    "args": self.args,
                    "status": self.status,
                    "result": self.result,
                    "error": self.error,
                },
                _SNAPSHOT_FIELDS,
            )
        return snap


def as_running(call: ToolCall) -> ToolCall:
    """The snapshot ``call`` had while it was running: a call's name and arguments never
    change once it is ready, and only its status, result and error do."""
    values = dict(call.__dict__)
    values["status"], values["result"], values["error"] = RUNNING, None, None
    return construct(ToolCall, values, _SNAPSHOT_FIELDS)


def _create(record: _CallRecord | None, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    return _CallRecord(call_id, payload, limits.max_args_chars)


def _append(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    if not record.add(payload):  # (the table sends only pending calls here)
        received = limits.max_args_chars - record.room() + len(payload)
        record.parts = []  # release the buffered text before anything else
        return _fail(
            record,
            call_id,
            ArgumentsTooLarge(
                message=f"the arguments of call {call_id!r} ({record.name}) exceeded "
                f"{limits.max_args_chars} characters (Limits.max_args_chars); "
                "the text received was discarded",
                limit=limits.max_args_chars,
                received=received,
            ),
            limits,
        )
    return record


def _parse(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    text = record.text = record.args_text()
    record.parts.clear()  # keeps the list: one allocation per call, not one per step
    record.budget = -1  # no longer pending: the lane is closed for good
    record.held = 0
    given = record.given
    record.given = None
    if given is not None and given[0] is text:  # that very text, parsed by parse_json
        record.args = given[1]
        record.status = RUNNING
    else:
        try:
            record.args = parse_json(text)
        except _ArgumentsError as exc:
            record.status = ERROR
            record.error = exc.value
        else:
            record.status = RUNNING
    record.snapshot = None
    return record


def _finish(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    record.status = DONE
    record.result = payload
    record.snapshot = None
    return record


def _fail(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    if record.status is PENDING:
        record.text = record.args_text()
        record.parts.clear()  # keeps the list: one allocation per call, not one per step
        record.budget = -1  # no longer pending: the lane is closed for good
        record.held = 0
        record.given = None
    record.status = ERROR
    record.error = payload
    record.snapshot = None
    return record


def _abandon(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    reason = payload
    why = f" ({reason})" if reason else ""
    return _fail(
        record,
        call_id,
        IncompleteArguments(
            message=f"the turn ended{why} before the arguments of call {call_id!r} "
            f"({record.name}) were complete",
            reason=reason,
        ),
        limits,
    )


def _keep(record: _CallRecord, call_id: str, payload: Any, limits: Limits) -> _CallRecord:
    return record


_DO: Final = {
    CREATE: _create,
    APPEND: _append,
    PARSE: _parse,
    FINISH: _finish,
    FAIL: _fail,
    ABANDON: _abandon,
    KEEP: _keep,
}

# The table with each action resolved to its function, so a step is two dict look-ups.
_STEPS: Final[dict[Status | str | None, dict[str, Any]]] = {
    state: {kind: _DO[step] if isinstance(step, Action) else step for kind, step in row.items()}
    for state, row in TRANSITIONS.items()
}


def reduce(
    record: _CallRecord | None,
    kind: str,
    call_id: str,
    payload: Any,
    limits: Limits = DEFAULT_LIMITS,
    *,
    forgotten: bool = False,
) -> _CallRecord | IgnoreReason:
    """Apply one event (``kind``, ``call_id``, ``payload``) to one call's record.

    ``payload`` is the event's one field: ``name`` for start, the fragment for delta,
    ``result``/``error`` for those, the end's ``reason`` for the end broadcast, ``None`` for
    ready. ``record`` is ``None`` for an id with no call; ``forgotten`` says the id belonged
    to a call that was forgotten. Returns the record as it now is (a new one for ``start``),
    or the reason the event is ignored, in which case nothing changed.
    """
    if record is not None:
        step = _STEPS[record.status][kind]
    else:
        step = _STEPS[FORGOTTEN if forgotten else None][kind]
    if type(step) is IgnoreReason:
        return step
    result: _CallRecord = step(record, call_id, payload, limits)
    return result
