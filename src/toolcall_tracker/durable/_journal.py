"""A turn recorded in a journal (:class:`DurableTurn`); the journal's record kinds.

Theory of operation. A turn's journal is its input, in order, keyed by a turn id (the
protocol, the fencing rule and the format version: :mod:`._protocol`):

==============  ==========================================================================
record kind     data (JSON)
==============  ==========================================================================
``limits``      the first record: ``{"limits": {...}, "keep_finished": n, "format":
                2}``, the turn's :class:`~toolcall_tracker.Limits` and its tracker's
                ``keep_finished`` (``null``: every call kept; absent in journals
                written before 0.2.0), and the journal format (absent: format 1),
                written by :meth:`Journal.create`
``events``      stream events, as read from the machine's change feed: ``["s", id,
                name]`` start, ``["d", id, text]`` delta, ``["r", id]`` ready, ``["R",
                id, result]`` result, ``["F", id, failure]`` a library failure (a
                :class:`~toolcall_tracker.failures.CallFailure`, as JSON), ``["E", id,
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
``run_end``     ``{"awaiting": [ids], "nonce", "state"}``: the runner returned;
                ``awaiting``: the calls left awaiting a decision in another request
                (``nonce``: their signed state's, or ``null``; ``state``: that signed
                state, whole, as JSON: a restore hands out the very same; absent before
                format 2). A follower stops at it (``_follow.py``)
``fence``       ``{"epoch": n}``: a restore took the turn over (:meth:`Journal.take_over`);
                every record after it is of epoch ``n`` or later; readers accept it,
                and it changes no call
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

Durability. A :class:`DurableTurn` takes its turn (``Journal.create``: a new turn id,
atomically, or ``Journal.take_over`` for a restored one, fencing off the writer before)
and appends through the :class:`TurnLog` it got. Stream events are appended from inside
the machine's ``apply`` (the feed is synchronous), so the stream never waits for the disk:
a journal commits them from its writer thread, either each at once or batched every N ms
(its durability level). Claims and outcomes are different: :class:`DurableTurn`'s start
guard appends the claim and *awaits the commit* of everything appended so far before the
tool starts, and awaits the outcome's commit after the tool ended. A log whose turn was
taken over (a restore elsewhere) raises :class:`TurnSuperseded` from its next append or
commit: the claim never commits, no tool starts, and :meth:`DurableTurn.run` raises it.

Claimed but never started. With a store that can ``confirm`` a claim (SQLite's), the
guard, once the store gave it the call, commits a ``start`` record and then confirms the
claim (still its own: not taken over) before the tool starts. A restore that finds a call
in doubt (lease expired, no outcome) whose claims were all fenced takes the call over
only if the journal has no ``start`` for it, and reads the journal again after taking it
over: a tool that started had its ``start`` committed before its claimer's confirmation,
which came before the take-over (or the confirmation fails and the tool does not start),
so a ``start`` missing after the take-over proves the tool never ran and never will there.
Then the call runs. Any other call in doubt stays in doubt. A log that failed once raises
:class:`DurableError` from every later ``append``: the machine re-raises it from the
``apply`` that caused it, and no claim commits, so no tool starts.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Any, NoReturn, Protocol, runtime_checkable

from .._jsonout import _jsonable
from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..events import End
from ..failures import CallFailure, OutcomeInDoubt
from ..runner import (
    CallOutcome,
    Claim,
    ClaimFenced,
    Fence,
    GuardOutcome,
    OutcomeStore,
    PendingApprovals,
    RunControl,
    RunnerEvent,
    RunnerListener,
    RunnerState,
    StoreGuard,
    ToolRunner,
    supports_fencing,
)
from ..tracker import ToolCallTracker
from ._protocol import DurableError, Journal, JournalRecord, TurnLog, TurnSuperseded

__all__ = ["DurableTurn", "Journal", "JournalRecord"]

DEFAULT_KEY_TTL = timedelta(days=30)


class _Recorder(ChangeListener):
    """The change-feed listener that appends a turn's stream events to its journal."""

    __slots__ = ("_append", "_machine")

    def __init__(self, log: TurnLog, tracker: ToolCallTracker) -> None:
        self._append = log.append_event
        self._machine = tracker.machine

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if before is None:
            call = self._machine.get(call_id)
            self._append(["s", call_id, call.name if call else ""])
        elif after is Status.RUNNING:
            self._append(["r", call_id])
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
                self._append(["R", call_id, _jsonable(call.result)])
            elif isinstance(call.error, CallFailure):  # tagged: never guessed from a shape
                self._append(["F", call_id, _jsonable(call.error)])
            else:
                self._append(["E", call_id, _jsonable(call.error)])

    def args_appended(self, call_id: str, text: str) -> None:
        self._append(["d", call_id, text])

    def turn_ended(self, end: End) -> None:
        self._append(["e", end.ok, end.reason])


class _RunnerRecorder(RunnerListener):
    """The runner-hook listener that journals every transition of the runner's table
    (committed with the next claim, so an approval is durable before its tool starts),
    then tells the application's own listener, if any."""

    __slots__ = ("_control", "_log", "_next")

    def __init__(
        self,
        log: TurnLog,
        then: RunnerListener | None,
        control: RunControl | None = None,
    ) -> None:
        self._log = log
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
        self._log.append("runner", data)
        if self._next is not None:
            self._next.transition(call_id, before, after, event)


@runtime_checkable
class _Confirming(Protocol):
    """A store whose claims can be confirmed (and taken over): SQLite's and Redis's."""

    async def confirm(self, key: str, fence: Fence | None = None) -> bool: ...

    async def take_over(
        self, key: str, *, expires_at: datetime, fence: Fence | None = None
    ) -> Claim: ...


class _JournalGuard:
    """The start guard of a durable turn: claim in the journal, then in the store (both
    committed), journal the start and confirm the claim, before the tool starts; record
    the outcome in both after it ended."""

    __slots__ = (
        "_attempts",
        "_confirming",
        "_expires_at",
        "_journal",
        "_log",
        "_store",
        "_turn",
    )

    def __init__(
        self,
        journal: Journal,
        log: TurnLog,
        store: StoreGuard,
        raw: OutcomeStore,
        expires_at: datetime,
    ) -> None:
        self._journal = journal  # read, to prove a call never started
        self._log = log
        self._turn = log.turn_id
        self._store = store
        self._confirming = raw if isinstance(raw, _Confirming) else None
        self._expires_at = expires_at
        self._attempts: dict[str, int] = {}  # runs after the first, by call id

    def key(self, call: ToolCall) -> str:
        """The store key ``call`` is claimed under (its idempotency key derives from it)."""
        return self._store.key(call)

    def attempt(self, call: ToolCall) -> int:
        """Which run of ``call`` a won claim is: 1, or (a take-over of an idempotent tool)
        one more than the starts this turn's journal holds for it."""
        return self._attempts.get(call.id, 1)

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        # The claim is journaled (with the stream so far) before the store is asked, so
        # every claim in the store has its record: a restore knows which calls may have
        # run. A journal that cannot commit raises here (a superseded writer's journal
        # refuses it: TurnSuperseded), and a store claim under an older epoch than the
        # turn's too: the tool does not start.
        confirming = self._confirming is not None
        self._log.append("claim", {"id": call.id, "tool": call.name, "fenced": confirming})
        await self._log.commit()
        try:
            outcome = await self._store.claim(call)  # a GuardOutcome: finished elsewhere
        except ClaimFenced as exc:
            raise self._superseded(exc) from exc
        if outcome is not None:
            if not isinstance(outcome.failure, OutcomeInDoubt):
                return outcome
            if not await self._take_over_unstarted(call, outcome.failure):
                return outcome
        elif self._store.attempt(call) > 1:  # an idempotent tool's take-over
            starts = [r for r in await self._journal.read(self._turn) if r.kind == "start"]
            self._attempts[call.id] = 1 + sum(r.data.get("id") == call.id for r in starts)
        await self._start(call)
        return None

    def _superseded(self, cause: BaseException) -> TurnSuperseded:
        return TurnSuperseded(
            f"turn {self._turn!r} was taken over elsewhere (a newer epoch than this "
            f"writer's {self._log.epoch}): this writer stops, and no tool starts here "
            f"({cause})"
        )

    async def _start(self, call: ToolCall) -> None:
        """Journal the start (committed), then confirm the claim: only then the tool runs."""
        self._log.append("start", {"id": call.id})
        await self._log.commit()
        confirming = self._confirming
        if confirming is not None and not await confirming.confirm(
            self._store.key(call), self._store.fence
        ):
            raise DurableError(
                f"the claim of call {call.id!r} was taken over by another process, or its "
                "turn by a restore, before its tool started: it did not start here"
            )

    async def _take_over_unstarted(self, call: ToolCall, doubt: CallFailure) -> bool:
        """Take over a call in doubt that the journal proves never started (see the module
        docs); ``True`` if this guard now holds it."""
        confirming = self._confirming
        if confirming is None or not await self._never_started(call.id):
            return False
        claim = await confirming.take_over(
            self._store.key(call), expires_at=self._expires_at, fence=self._store.fence
        )
        if claim.fenced:
            raise self._superseded(ClaimFenced("the take-over was fenced"))
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
            self._log.append("outcome", {"id": call.id, **data})
            await self._log.commit()


def require_fencing(store: OutcomeStore) -> None:
    """Refuse an outcome store that cannot fence (protocol version 1) for a durable turn.

    Raises:
        TypeError: ``store`` has no ``fence``.
    """
    if not supports_fencing(store):
        raise TypeError(
            f"{type(store).__name__} is an outcome store of protocol version 1: it has no "
            "fence(scope, epoch), so a writer that lost its turn could still claim; add "
            "fence() and claim(..., fence=...) (see toolcall_tracker.runner.OutcomeStore), "
            "or use SQLiteOutcomeStore, RedisOutcomeStore or InMemoryOutcomeStore"
        )


class DurableTurn:
    """One turn recorded in a journal as it happens; its tools claimed in a store.

    Use it as an async context manager around the turn: entering takes the turn in the
    journal (a new one: :meth:`Journal.create`, atomically, writing its ``Limits``; a
    restored one: :meth:`Journal.take_over`, fencing off its writer before) and subscribes
    to the tracker's change feed; :meth:`run` runs the runner with the start guard that
    claims each call before its tool starts; leaving commits what is left and
    unsubscribes::

        async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stream_into, tracker)
                calls = await turn.run(runner, control=control)

    Args:
        journal: where the turn is recorded (a format-2 :class:`Journal`: with ``create``
            and ``take_over``).
        turn_id: the turn's key in the journal (new: refused if already recorded).
        tracker: the turn's tracker (new and empty).
        store: where each call is claimed (one key per call of the turn: see the
            "Durable turns" page), under this writer's epoch (an
            :class:`~toolcall_tracker.runner.OutcomeStore` of protocol version 2, with
            ``fence``).
        key_ttl: how long the store keeps the keys: restore the turn within it (at least
            the runner's ``approval_ttl``). A journal with a ``ttl`` (seconds it keeps a
            turn: :class:`RedisJournal`) shorter than it is refused.
        restored: ``True`` for a turn rebuilt by
            :func:`~toolcall_tracker.durable.restore`: the turn is taken over on entering
            (:meth:`Journal.take_over`), not created.
        log: the turn, already taken over (``await journal.take_over(turn_id)``, its
            store fenced with ``store.fence(turn_id, log.epoch)``): entered under this
            log. What :func:`~toolcall_tracker.durable.resume_turn` does, so that it
            reads the turn only once the old writer is fenced off.
        legacy_keys: the turn was written by the previous version (journal format 1):
            claim its calls under that version's keys, ``"<turn id>:<call id>"``, as its
            writer did (``resume_turn`` sets it from the journal).

    Raises:
        TypeError: ``journal`` has no ``create`` / ``take_over`` (a journal written for
            an older version of the protocol), or ``store`` has no ``fence`` (an outcome
            store of protocol version 1).
        ValueError: an empty ``turn_id``, or a journal keeping turns less than
            ``key_ttl``.
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
        log: TurnLog | None = None,
        legacy_keys: bool = False,
    ) -> None:
        if not turn_id:
            raise ValueError("turn_id must be a non-empty string")
        if log is not None and log.turn_id != turn_id:
            raise ValueError(f"log holds turn {log.turn_id!r}, not {turn_id!r}")
        require_fencing(store)
        missing = [
            name for name in ("create", "take_over") if not callable(getattr(journal, name, None))
        ]
        if missing:
            raise TypeError(
                f"{type(journal).__name__} is a journal of an older protocol: it has no "
                f"{' and no '.join(missing)}; a journal must implement "
                "create(turn_id, head) and take_over(turn_id), returning a TurnLog "
                "(see toolcall_tracker.durable.Journal), or use SQLiteJournal, "
                "RedisJournal or InMemoryJournal"
            )
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
        self._log: TurnLog | None = None
        self._given = log
        self._legacy = legacy_keys
        self._recorder: _Recorder | None = None

    @property
    def log(self) -> TurnLog:
        """This turn's hold on the journal (set on entering).

        Raises:
            RuntimeError: the turn was not entered (``async with``).
        """
        log = self._log
        if log is None:
            raise RuntimeError("the DurableTurn was not entered: use it as `async with`")
        return log

    @property
    def epoch(self) -> int:
        """The epoch this turn's writer holds (1: it created the turn; more: restored)."""
        return self.log.epoch

    async def __aenter__(self) -> DurableTurn:
        if self._log is not None:
            raise RuntimeError("a DurableTurn can be entered once")
        if self._given is not None:
            log = self._given
        elif self._restored:
            log = await self.journal.take_over(self.turn_id)
            await self.store.fence(self.turn_id, log.epoch)
        else:
            tracker = self.tracker
            head = {
                "limits": dataclasses.asdict(tracker.limits),
                "keep_finished": tracker.keep_finished,
            }  # (create adds the journal format)
            log = await self.journal.create(self.turn_id, head)
        self._log = log
        self._recorder = _Recorder(log, self.tracker)
        self.tracker.subscribe(self._recorder, fragments=True)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._recorder is not None:
            self.tracker.unsubscribe(self._recorder)
        log = self._log
        if exc is None and log is not None and not log.superseded:  # superseded: told before
            await log.commit()

    def guard(self, runner: ToolRunner) -> _JournalGuard:
        """The start guard for ``runner`` on this turn (``runner.run(start_guard=...)``)."""
        idempotent = frozenset(name for name, spec in runner.tools.items() if spec.idempotent)
        fence = Fence(self.turn_id, self.log.epoch)
        store = StoreGuard(
            self.store,
            self.turn_id,
            self._expires_at,
            idempotent,
            legacy=self._legacy,
            fence=fence,
        )
        return _JournalGuard(self.journal, self.log, store, self.store, self._expires_at)

    async def run(
        self,
        runner: ToolRunner,
        *,
        control: RunControl | None = None,
        listener: RunnerListener | None = None,
        continues: PendingApprovals | None = None,
    ) -> list[ToolCall]:
        """``runner.run(tracker, control=control, turn_id=...)`` with this turn's start
        guard, and a runner listener journaling every transition (then telling
        ``listener``). The signed state the run leaves names this turn
        (``PendingApprovals.turn_id``), so every path claims one key per call.

        When the runner returns, a ``run_end`` record is committed: the calls awaiting a
        decision in another request (``RunControl(defer_approvals=True)``: still running
        in the tracker), their signed state's nonce, and the whole signed state, so a
        restore hands out the same decision. A follower stops there (see
        ``toolcall-tracker replay --follow``).

        Args:
            continues: the signed state this turn handed out before (a restore passes the
                one its ``run_end`` journaled): the calls still awaiting ask under its
                nonce, expiry and turn id (``ToolRunner.run(continues=...)``).

        Raises:
            TurnSuperseded: the turn was taken over by a newer epoch (a restore
                elsewhere) while it ran: this writer stopped, no tool started after the
                take-over was seen, and what the runner did since is not journaled (the
                restore's writer owns the turn).
        """
        log = self.log
        try:
            calls = await runner.run(
                self.tracker,
                control=control,
                listener=_RunnerRecorder(log, listener, control),
                start_guard=self.guard(runner),
                turn_id=self.turn_id,
                continues=continues,
            )
        except Exception as exc:
            if log.superseded:
                _raise_superseded(log, exc)
            raise
        if log.superseded:
            _raise_superseded(log, None)
        pending = None if control is None else control.pending
        data: dict[str, Any] = {"awaiting": [], "nonce": None}
        if pending is not None:
            data = {
                "awaiting": [call.call_id for call in pending.calls],
                "nonce": pending.nonce,
                "state": json.loads(pending.model_dump_json()),
            }
        log.append("run_end", data)
        await log.commit()
        return calls


def _raise_superseded(log: TurnLog, cause: BaseException | None) -> NoReturn:
    """Raise the :class:`TurnSuperseded` of a superseded ``log``."""
    try:
        log.append("run_end", {"awaiting": [], "nonce": None})  # raises: superseded
    except TurnSuperseded as exc:
        raise exc from cause
    raise TurnSuperseded(  # pragma: no cover (a log that says superseded raises it)
        f"turn {log.turn_id!r} was taken over elsewhere: this writer (epoch {log.epoch}) "
        "stops, and no tool starts here"
    ) from cause
