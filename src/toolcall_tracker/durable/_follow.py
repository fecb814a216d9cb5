"""Following a journaled turn (private; shared by every follower): when a turn is over,
and a polling follow for journals that cannot block on new records.

Theory of operation. A follower reads a turn's records in order and replays them into a
state machine (:class:`FollowState`), exactly as a restore would, but without running
anything. It stops once the turn is over, which the journal shows in one of two ways:

==============================  ==========================================================
what was read                   the turn is over when
==============================  ==========================================================
the ``end`` event               no call is still ``running`` (every tool's outcome read)
the ``end`` event, ``run_end``  at once: the runner returned (calls still running await a
                                decision in another request: ``RunControl(
                                defer_approvals=True)``)
a ``fence`` after ``run_end``   not at that ``run_end`` any more: a ``fence`` re-opens the
                                turn (a restore took it over: :func:`resume_turn
                                <toolcall_tracker.durable.resume_turn>`), which goes on
                                under its new writer to its next ``run_end`` (or its calls'
                                outcomes)
==============================  ==========================================================

``run_end`` is written by :meth:`DurableTurn.run <toolcall_tracker.durable.DurableTurn.run>`
when the runner returns. The command line's ``replay --follow``, every journal's
``follow`` and the AI SDK UI stream follower use this one rule.

Restored turns. A restore appends ``fence`` and then its own records (events, claims,
outcomes, a second ``run_end``) to a turn that may already read as over, so a follower
does not stop at a finishing record while records it already read after it remain (a
batch or page): it replays them first, and stops only if the turn is still over after
them, at the record that made it over in that last state (the records after it, in the
same over state, are not yielded: a follower stops at the same record however the
journal's records came in batches). A follower replaying a finished journal therefore
shows the restore's records; a live follower that already stopped at the first
``run_end`` cannot know a restore will come later, and does not show them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, Protocol, runtime_checkable

import anyio

from ..calls import Status
from ..changes import ChangeListener
from ..limits import Limits
from ..machine import ToolCallStateMachine
from ._journal import Journal, JournalRecord
from ._protocol import DurableError
from ._restore import check_record, read_head, replay_events

__all__ = ["FENCE", "RUN_END", "FollowState", "FollowableJournal", "follow_batch", "poll_follow"]

RUN_END: Final = "run_end"
"""The record kind :meth:`DurableTurn.run` writes when the runner returns."""
FENCE: Final = "fence"
"""The record kind a take-over (a restore) writes: the turn goes on under a new writer."""


@runtime_checkable
class FollowableJournal(Journal, Protocol):
    """A :class:`Journal` any process can follow a turn in (SQLite's and Redis's)."""

    def follow(
        self, turn_id: str, after: int = 0, *, timeout: float | None = None
    ) -> AsyncIterator[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, then each new one as it is
        committed, until the turn is over (its ``end`` read and no call still running, or
        its ``run_end`` read).

        Raises:
            DurableError: the turn was not over within ``timeout`` seconds, or the journal
                cannot be read.
        """
        ...


class FollowState:
    """A turn replayed from its records as they are read (sans-IO; nothing runs).

    The first record must be the turn's ``limits`` head: the machine is made under the
    turn's ``Limits`` and ``keep_finished``, as the tracker that wrote the turn was, so
    a turn that forgot finished calls to stay under ``max_calls`` replays whole. Every
    record is checked as :func:`~toolcall_tracker.durable.restore` checks it (a newer
    format, an unknown kind, event tag or ``Limits`` field, or malformed data:
    :class:`DurableError`, never a skip).

    Args:
        listen: called with the machine as soon as it exists; the listener it returns is
            subscribed to it (``fragments=True``), so it sees every change the records
            imply.

    Attributes:
        machine: the replayed machine (``None`` until the head was read).
        run_end: the data of the last ``run_end`` record, once read (``None`` again after
            a ``fence``: the restore's own ``run_end`` is the turn's).
        journal_format: the journal's format (its head's; ``None`` until read).
    """

    __slots__ = ("_listen", "journal_format", "machine", "run_end")

    def __init__(
        self, listen: Callable[[ToolCallStateMachine], ChangeListener] | None = None
    ) -> None:
        self._listen = listen
        self.machine: ToolCallStateMachine | None = None
        self.run_end: dict[str, Any] | None = None  # the data of the ``run_end`` record
        self.journal_format: int | None = None

    def add(self, record: JournalRecord) -> None:
        """Replay one record (in order). ``limits`` makes the machine (under the turn's
        limits and ``keep_finished``); ``events`` are applied to it; ``run_end`` marks the
        runner's return; ``fence`` re-opens the turn (a restore took it over: the
        ``run_end`` read before it is forgotten); the others are checked and change
        nothing here.

        Raises:
            DurableError: the first record is not the turn's head, or a record is one this
                version does not know or is malformed (see the class docs).
        """
        machine = self.machine
        if machine is None or self.journal_format is None:
            if record.kind != "limits":
                raise DurableError(
                    f"journal record {record.seq} ({str(record.kind)[:40]!r}) comes before "
                    "the turn's limits record: not the start of a turn"
                )
            head = read_head(record)
            self.journal_format = head.format
            self.machine = self._new(head.limits, head.keep_finished)
            return
        check_record(record, self.journal_format)
        if record.kind == "events":
            replay_events(machine, record, self.journal_format)
        elif record.kind == RUN_END:
            self.run_end = record.data
        elif record.kind == FENCE:  # a new writer goes on with the turn
            self.run_end = None

    @property
    def finished(self) -> bool:
        """The turn is over: its ``end`` was read and either no call is running or the
        runner returned (see the module docs)."""
        machine = self.machine
        if machine is None or machine.end is None:
            return False
        return self.run_end is not None or all(
            call.status is not Status.RUNNING for call in machine.list()
        )

    def _new(self, limits: Limits, keep_finished: int | None) -> ToolCallStateMachine:
        machine = ToolCallStateMachine(limits=limits, keep_finished=keep_finished)
        if self._listen is not None:
            machine.subscribe(self._listen(machine), fragments=True)
        return machine


async def poll_follow(
    read: Callable[[str, int], Awaitable[list[JournalRecord]]],
    turn_id: str,
    after: int,
    within: float | None,
    poll: float,
) -> AsyncIterator[JournalRecord]:
    """Follow a turn by reading it every ``poll`` seconds (``read(turn_id, after)``): yield
    each committed record after ``after``, and stop at the record that makes the turn over
    (see the module docs); :class:`DurableError` if it is not over within ``within``
    seconds.

    The turn's state is rebuilt from its first record even when ``after`` skips some, so
    the stop rule sees the whole turn.
    """
    if not poll > 0:
        raise ValueError(f"poll must be a positive number of seconds, not {poll!r}")
    state = FollowState()
    deadline = None if within is None else anyio.current_time() + within
    seen = 0
    while True:
        batch = await read(turn_id, seen)
        for record in follow_batch(state, batch, after):
            yield record
        if batch:
            seen = batch[-1].seq
        if state.finished:  # at the record that finished it, as every follower
            return
        wait = poll
        if deadline is not None:
            left = deadline - anyio.current_time()
            if left <= 0:
                raise DurableError(f"turn {turn_id!r} did not finish within {within:g} s")
            wait = min(wait, left)
        await anyio.sleep(wait)


def follow_batch(state: FollowState, batch: list[JournalRecord], after: int) -> list[JournalRecord]:
    """Replay ``batch`` (the next records read, in order) into ``state``; the records of
    it to yield (those after ``after``).

    The whole batch is replayed: a ``fence`` in it may re-open a turn a record before it
    finished. If the turn is over after the batch, the records after the one that made it
    over (in that last over state) are not returned: the follower stops at that record,
    however the records came in batches (see the module docs).

    Raises:
        DurableError: as :meth:`FollowState.add`.
    """
    out: list[JournalRecord] = []
    held: list[JournalRecord] = []  # read while the turn is over: yielded if it re-opens
    for record in batch:
        was_over = state.finished
        state.add(record)
        if was_over and state.finished:
            held.append(record)
            continue
        out.extend(held)  # re-opened (a fence): the records read while over are shown
        held.clear()
        out.append(record)
    return [record for record in out if record.seq > after]
