"""The journal protocol, and a turn recorded in it (:class:`DurableTurn`).

Theory of operation. A turn's journal is its input, in order, keyed by a turn id:

==============  ==========================================================================
record kind     data (JSON)
==============  ==========================================================================
``limits``      the first record: ``{"limits": {...}, "keep_finished": n, "format": 2}``,
                the turn's :class:`~toolcall_tracker.Limits`, its tracker's
                ``keep_finished`` (``null``: every call kept; absent in journals written
                before 0.2.0) and the journal format (absent: format 1)
``events``      stream events, as read from the machine's change feed: ``["s", id,
                name]`` start, ``["d", id, text]`` delta, ``["r", id]`` ready, ``["R",
                id, result]`` result, ``["F", id, failure]`` a library failure (a
                :class:`~toolcall_tracker.errors.CallFailure`, as JSON), ``["E", id,
                error]`` any other error value, ``["e", ok, reason]`` end (a call the
                end abandons has no event of its own: replaying the end abandons it)
``claim``       ``{"id", "tool", "fenced"}``: the call is being claimed (committed before
                the store is asked, so a store claim always has its record); its tool
                starts only after both. ``fenced``: the claimer confirms its claim
                after journaling ``start`` (a store with ``confirm``)
``start``       ``{"id"}``: the claimed call's tool starts (committed, then the claim
                confirmed, before the tool's first line runs)
``outcome``     ``{"id", "kind", "result" | "failure"}``: how a claimed call's tool ended
``runner``      ``{"id", "from", "to", "event"}``: a transition in the runner's table, from
                its listener hook (approvals and denials among them); an approval with
                edited arguments also has ``"arguments"`` (JSON, the output rule)
``run_end``     ``{"awaiting": [ids], "nonce"}``: the runner returned; ``awaiting``: the
                calls left awaiting a decision in another request (``nonce``: their
                signed state's, or ``null``). A follower stops at it (``_follow.py``)
``fence``       ``{"epoch": n}``: a restore took the turn over (its epoch from now on);
                readers accept it, and it changes no call
==============  ==========================================================================

Versions. The head's ``format`` is :data:`JOURNAL_FORMAT` (2) for journals written by
this version; a journal without it is format 1, whose ``["E", id, error]`` events held
library failures too (a reader restores a dict with a string ``kind`` there as a failure:
what those journals meant). A reader refuses, with :class:`DurableError` naming the
version, a format greater than it knows, a record kind or stream event tag it does not
know and an unknown ``Limits`` field: an old process in a rolling deploy fails closed
rather than reading past a record it cannot honour. Keys of a record's data that a reader
does not use are ignored (adding one that changes a record's meaning raises the format).

Results and errors are written under the library's one output rule (NaN as ``null``, lone
surrogates in strings as U+FFFD); ids, names and argument text are kept exactly (lone
surrogates as ``\\uXXXX`` escapes). Library failures (``F``) come back as their class, by
their ``kind``; any other error value (``E``) comes back as the JSON value it was written
as, whatever its shape.

Durability. Stream events are appended from inside the machine's ``apply`` (the feed is
synchronous), so the stream never waits for the disk: a journal commits them from its
writer thread, either each at once or batched every N ms (its durability level). Claims
and outcomes are different: :class:`DurableTurn`'s start guard appends the claim and
*awaits the commit* of everything appended so far before the tool starts, and awaits the
outcome's commit after the tool ended.

Claimed but never started. With a store that can ``confirm`` a claim (SQLite's), the
guard, once the store gave it the call, commits a ``start`` record and then confirms the
claim (still its own: not taken over) before the tool starts. A restore that finds a call
in doubt (lease expired, no outcome) whose claims were all fenced takes the call over
only if the journal has no ``start`` for it, and reads the journal again after taking it
over: a tool that started had its ``start`` committed before its claimer's confirmation,
which came before the take-over (or the confirmation fails and the tool does not start),
so a ``start`` missing after the take-over proves the tool never ran and never will there.
Then the call runs. Any other call in doubt stays in doubt. A journal that failed once raises
:class:`DurableError` from every later ``append``: the machine re-raises it from the
``apply`` that caused it, and no claim commits, so no tool starts.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from .._jsonout import _jsonable
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..errors import CallFailure
from ..events import End
from ..failures import OutcomeInDoubt
from ..runner import (
    CallOutcome,
    Claim,
    GuardOutcome,
    OutcomeStore,
    RunControl,
    RunnerEvent,
    RunnerListener,
    RunnerState,
    StoreGuard,
    ToolRunner,
)
from ..tracker import ToolCallTracker
from ._sqlite import DurableError

__all__ = ["DurableTurn", "Journal", "JournalRecord"]

DEFAULT_KEY_TTL = timedelta(days=30)

JOURNAL_FORMAT: Final = 2
"""The journal format this version writes (the head's ``"format"``) and the newest it
reads (see the module docs: versions)."""


class JournalRecord(NamedTuple):
    """One record of a turn's journal: its position, kind and JSON data."""

    seq: int
    kind: str
    data: Any


@runtime_checkable
class Journal(Protocol):
    """Where turns are recorded, in order, by turn id (SQLite here; Redis or Postgres can
    implement the same four calls).

    ``append_event`` and ``append`` only queue (they are called from the machine's feed,
    on the event loop, and must not block); ``commit`` returns once everything queued
    before it is durable. After a failed write, every call raises :class:`DurableError`.
    """

    def append_event(self, turn_id: str, item: list[Any]) -> None:
        """Queue one stream event (committed per the journal's durability level)."""
        ...

    def append(self, turn_id: str, kind: str, data: Any) -> None:
        """Queue one record of ``kind`` (committed by the next :meth:`commit`)."""
        ...

    async def commit(self) -> None:
        """Return once every record queued before this call is durable."""
        ...

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after position ``after``, in order
        (stream events come as ``events`` records holding a list of events)."""
        ...


class _Recorder(ChangeListener):
    """The change-feed listener that appends a turn's stream events to its journal."""

    __slots__ = ("_append", "_machine", "_turn")

    def __init__(self, journal: Journal, turn_id: str, tracker: ToolCallTracker) -> None:
        self._append = journal.append_event
        self._turn = turn_id
        self._machine = tracker.machine

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if before is None:
            call = self._machine.get(call_id)
            self._append(self._turn, ["s", call_id, call.name if call else ""])
        elif after is Status.RUNNING:
            self._append(self._turn, ["r", call_id])
        else:
            call = self._machine.get(call_id)
            if call is None:  # pragma: no cover (the feed reports before forgetting)
                return
            if before is Status.PENDING and self._machine.end is not None:
                # abandoned by the turn's end, journaled next: replaying the end abandons
                # it again (the same failure), after the end as here, so a follower's
                # listener sees what the live one saw (the end already set)
                return
            if after is Status.DONE:
                self._append(self._turn, ["R", call_id, _jsonable(call.result)])
            elif isinstance(call.error, CallFailure):  # tagged: never guessed from a shape
                self._append(self._turn, ["F", call_id, _jsonable(call.error)])
            else:
                self._append(self._turn, ["E", call_id, _jsonable(call.error)])

    def args_appended(self, call_id: str, text: str) -> None:
        self._append(self._turn, ["d", call_id, text])

    def turn_ended(self, end: End) -> None:
        self._append(self._turn, ["e", end.ok, end.reason])


class _RunnerRecorder(RunnerListener):
    """The runner-hook listener that journals every transition of the runner's table
    (committed with the next claim, so an approval is durable before its tool starts),
    then tells the application's own listener, if any."""

    __slots__ = ("_control", "_journal", "_next", "_turn")

    def __init__(
        self,
        journal: Journal,
        turn_id: str,
        then: RunnerListener | None,
        control: RunControl | None = None,
    ) -> None:
        self._journal = journal
        self._turn = turn_id
        self._next = then
        self._control = control  # where the edited arguments of an approval are

    def transition(
        self, call_id: str, before: RunnerState, after: RunnerState, event: RunnerEvent
    ) -> None:
        data = {"id": call_id, "from": before.value, "to": after.value, "event": event.value}
        if event is RunnerEvent.APPROVED and self._control is not None:
            edited = self._control.edited.get(call_id)
            if edited is not None:  # the tool runs with these: a restore must too
                data["arguments"] = _jsonable(edited)
        self._journal.append(self._turn, "runner", data)
        if self._next is not None:
            self._next.transition(call_id, before, after, event)


@runtime_checkable
class _Fenced(Protocol):
    """A store whose claims can be confirmed (and taken over): SQLite's."""

    async def confirm(self, key: str) -> bool: ...

    async def take_over(self, key: str, *, expires_at: datetime) -> Claim: ...


class _JournalGuard:
    """The start guard of a durable turn: claim in the journal, then in the store (both
    committed), journal the start and confirm the claim, before the tool starts; record
    the outcome in both after it ended."""

    __slots__ = ("_expires_at", "_fenced", "_journal", "_store", "_turn")

    def __init__(
        self,
        journal: Journal,
        turn_id: str,
        store: StoreGuard,
        raw: OutcomeStore,
        expires_at: datetime,
    ) -> None:
        self._journal = journal
        self._turn = turn_id
        self._store = store
        self._fenced = raw if isinstance(raw, _Fenced) else None
        self._expires_at = expires_at

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        # The claim is journaled (with the stream so far) before the store is asked, so
        # every claim in the store has its record: a restore knows which calls may have
        # run. A journal that cannot commit raises here: the tool does not start.
        fenced = self._fenced is not None
        self._journal.append(
            self._turn, "claim", {"id": call.id, "tool": call.name, "fenced": fenced}
        )
        await self._journal.commit()
        outcome = await self._store.claim(call)  # a GuardOutcome: finished elsewhere
        if outcome is not None:
            if not isinstance(outcome.failure, OutcomeInDoubt):
                return outcome
            if not await self._take_over_unstarted(call, outcome.failure):
                return outcome
        await self._start(call)
        return None

    async def _start(self, call: ToolCall) -> None:
        """Journal the start (committed), then confirm the claim: only then the tool runs."""
        self._journal.append(self._turn, "start", {"id": call.id})
        await self._journal.commit()
        fenced = self._fenced
        if fenced is not None and not await fenced.confirm(self._store.key(call.id)):
            raise DurableError(
                f"the claim of call {call.id!r} was taken over by another process before "
                "its tool started: it did not start here"
            )

    async def _take_over_unstarted(self, call: ToolCall, doubt: CallFailure) -> bool:
        """Take over a call in doubt that the journal proves never started (see the module
        docs); ``True`` if this guard now holds it."""
        fenced = self._fenced
        if fenced is None or not await self._never_started(call.id):
            return False
        claim = await fenced.take_over(self._store.key(call.id), expires_at=self._expires_at)
        if not claim.won:
            return False
        if await self._never_started(call.id):  # read again: after the take-over
            return True
        await self._store.record(call, None, doubt)  # it started after all: release it
        return False

    async def _never_started(self, call_id: str) -> bool:
        """Whether the journal proves ``call_id``'s tool never started: every claim of it
        fenced, and no ``start`` committed."""
        fenced = False
        for record in await self._journal.read(self._turn):
            if record.kind not in ("claim", "start") or record.data.get("id") != call_id:
                continue
            if record.kind == "start" or not record.data.get("fenced"):
                return False
            fenced = True
        return fenced

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        try:
            await self._store.record(call, result, failure)
        finally:
            data = CallOutcome.of(result, failure).model_dump(mode="json")
            self._journal.append(self._turn, "outcome", {"id": call.id, **data})
            await self._journal.commit()


class DurableTurn:
    """One turn recorded in a journal as it happens; its tools claimed in a store.

    Use it as an async context manager around the turn: entering writes the turn's
    ``Limits`` (a new turn) and subscribes to the tracker's change feed; :meth:`run` runs
    the runner with the start guard that claims each call before its tool starts; leaving
    commits what is left and unsubscribes::

        async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stream_into, tracker)
                calls = await turn.run(runner, control=control)

    Args:
        journal: where the turn is recorded.
        turn_id: the turn's key in the journal (new: refused if already recorded).
        tracker: the turn's tracker (new and empty).
        store: where each call is claimed (keys ``"<turn id>:<call id>"``).
        key_ttl: how long the store keeps the keys: restore the turn within it (at least
            the runner's ``approval_ttl``). A journal with a ``ttl`` (seconds it keeps a
            turn: :class:`RedisJournal`) shorter than it is refused.
        restored: internal (``True`` for a turn rebuilt by
            :func:`~toolcall_tracker.durable.restore`: its ``Limits`` are recorded).
    """

    def __init__(
        self,
        journal: Journal,
        turn_id: str,
        tracker: ToolCallTracker,
        *,
        store: OutcomeStore,
        key_ttl: timedelta = DEFAULT_KEY_TTL,
        restored: bool = False,
    ) -> None:
        if not turn_id:
            raise ValueError("turn_id must be a non-empty string")
        kept = getattr(journal, "ttl", None)  # a journal that forgets turns (Redis's)
        if isinstance(kept, (int, float)) and kept < key_ttl.total_seconds():
            raise ValueError(
                f"the journal keeps a turn {kept:g} s, less than key_ttl "
                f"({key_ttl.total_seconds():g} s): a turn could be forgotten while it can "
                "still be resumed; give the journal ttl >= key_ttl (RedisJournal(ttl=...)), "
                "or a shorter key_ttl"
            )
        self.journal = journal
        self.turn_id = turn_id
        self.tracker = tracker
        self.store = store
        self._expires_at = datetime.now(timezone.utc) + key_ttl
        self._restored = restored
        self._recorder = _Recorder(journal, turn_id, tracker)

    async def __aenter__(self) -> DurableTurn:
        if not self._restored:
            if await self.journal.read(self.turn_id):
                raise DurableError(
                    f"turn {self.turn_id!r} is already in the journal: use a new turn id, "
                    "or restore() it to finish it"
                )
            tracker = self.tracker
            head = {
                "limits": dataclasses.asdict(tracker.limits),
                "keep_finished": tracker.keep_finished,
                "format": JOURNAL_FORMAT,
            }
            self.journal.append(self.turn_id, "limits", head)
            await self.journal.commit()
        self.tracker.subscribe(self._recorder, fragments=True)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.tracker.unsubscribe(self._recorder)
        if exc is None:
            await self.journal.commit()

    def guard(self, runner: ToolRunner) -> _JournalGuard:
        """The start guard for ``runner`` on this turn (``runner.run(start_guard=...)``)."""
        idempotent = frozenset(name for name, spec in runner.tools.items() if spec.idempotent)
        store = StoreGuard(self.store, self.turn_id, self._expires_at, idempotent)
        return _JournalGuard(self.journal, self.turn_id, store, self.store, self._expires_at)

    async def run(
        self,
        runner: ToolRunner,
        *,
        control: RunControl | None = None,
        listener: RunnerListener | None = None,
    ) -> list[ToolCall]:
        """``runner.run(tracker, control=control)`` with this turn's start guard, and a
        runner listener journaling every transition (then telling ``listener``).

        When the runner returns, a ``run_end`` record is committed: the calls awaiting a
        decision in another request (``RunControl(defer_approvals=True)``: still running
        in the tracker) and their signed state's nonce, if any. A follower stops there
        (see ``toolcall-tracker replay --follow``)."""
        calls = await runner.run(
            self.tracker,
            control=control,
            listener=_RunnerRecorder(self.journal, self.turn_id, listener, control),
            start_guard=self.guard(runner),
        )
        pending = None if control is None else control.pending
        data: dict[str, Any] = {"awaiting": [], "nonce": None}
        if pending is not None:
            data = {"awaiting": [call.call_id for call in pending.calls], "nonce": pending.nonce}
        self.journal.append(self.turn_id, "run_end", data)
        await self.journal.commit()
        return calls
