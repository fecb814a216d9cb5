"""The journal's protocol and format: :class:`Journal`, :class:`TurnLog`, the record
kinds, the format version, and the durable layer's errors (:class:`DurableError`,
and those of taking a turn).

Theory of operation. A journal holds turns, each an ordered list of records under a turn
id. Nobody appends to a turn directly: a writer first *takes* it and gets a
:class:`TurnLog`, its hold on that turn, and appends through that.

- :meth:`Journal.create` takes a new turn id, atomically: the id is claimed and the turn's
  first record (``limits``, holding the head given plus ``"format":``
  :data:`JOURNAL_FORMAT`) written in one step, so of two writers creating one turn id at
  once exactly one wins; the other gets :class:`TurnExists`. The new turn's *epoch* (its
  fencing token) is 1.
- :meth:`Journal.take_over` takes an existing turn (a restore finishing it elsewhere):
  atomically, the turn's epoch is raised by one and a ``fence`` record ``{"epoch": n}``
  written; the log returned holds epoch ``n``. A turn written before epochs existed (no
  epoch stored) counts as epoch 1.

The fencing rule. Every record a log of epoch ``n`` queues is written only if the turn's
epoch is still ``n`` when it is written (checked inside the write's own transaction, per
turn). A log whose turn was taken over writes nothing more: its rows are refused, the log
becomes :attr:`~TurnLog.superseded`, and every later ``append``, ``append_event`` and
``commit`` of it raises :class:`TurnSuperseded`. So once a take-over's ``fence`` is
committed, the turn holds only the new writer's records after it, and the old writer learns
at its next commit (its next claim: no tool starts there) that it must stop. Other turns
sharing the journal object are written normally: one turn's failure never fails another.

Every record carries the epoch of the log that wrote it (:attr:`JournalRecord.epoch`; 1 for
records written before epochs existed).

Format. The ``limits`` record of a turn written by this version has ``"format": 2``
(:data:`JOURNAL_FORMAT`); a ``limits`` record without it is format 1 (written before).
:data:`RECORD_KINDS` lists the record kinds of format 2; a reader meeting a kind or a
format it does not know must refuse the turn (never skip the record), so an older process
cannot read past a fence.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "JOURNAL_FORMAT",
    "RECORD_KINDS",
    "DurableError",
    "Journal",
    "JournalRecord",
    "TurnExists",
    "TurnLog",
    "TurnSuperseded",
]

JOURNAL_FORMAT: Final = 2
"""The journal format this version writes (in each turn's ``limits`` record, as
``"format"``; absent: format 1)."""

RECORD_KINDS: Final = frozenset(
    {"limits", "events", "claim", "start", "outcome", "runner", "run_end", "fence"}
)
"""The record kinds of format 2 (see :mod:`toolcall_tracker.durable._journal`)."""


class DurableError(RuntimeError):
    """A durable store or journal could not be read or written.

    Whatever depended on it did not happen: a tool whose claim could not be written does
    not start (its call ends ``not_executed`` with this error's text), and a journal that
    failed refuses every later write, so the turn fails closed.
    """


class TurnExists(DurableError):
    """:meth:`Journal.create` of a turn id the journal already has (created before, by
    another writer at the same moment, or written by an older version)."""


class TurnSuperseded(DurableError):
    """This writer's turn was taken over by a newer epoch (a restore elsewhere): it is
    fenced off. Nothing it queued after the take-over was written, and it must stop: no
    tool starts under it."""


class JournalRecord(NamedTuple):
    """One record of a turn's journal: its position, kind and JSON data, and the epoch of
    the writer that wrote it (1 for records written before epochs existed)."""

    seq: int
    kind: str
    data: Any
    epoch: int = 1


@runtime_checkable
class TurnLog(Protocol):
    """One writer's hold on one turn (from :meth:`Journal.create` or
    :meth:`Journal.take_over`): the records it appends carry its epoch, and are written
    only while the turn's epoch is still its own.

    ``append_event`` and ``append`` only queue: they are called from the machine's change
    feed, on the event loop, and never block. ``commit`` returns once everything this log
    queued before it is durable. A log that failed (its turn taken over, an overflow, or a
    failed write) raises from every later call: :class:`TurnSuperseded` if its turn was
    taken over, else :class:`DurableError`.
    """

    @property
    def turn_id(self) -> str:
        """The turn this log writes."""
        ...

    @property
    def epoch(self) -> int:
        """The epoch this log holds (1: it created the turn; ``n``: the ``n - 1``-th
        take-over)."""
        ...

    @property
    def superseded(self) -> bool:
        """Whether a newer epoch took the turn over (seen at a write of this log)."""
        ...

    def append_event(self, item: list[Any]) -> None:
        """Queue one stream event (committed per the journal's durability level).

        Raises:
            TurnSuperseded: the turn was taken over.
            DurableError: the log failed before.
        """
        ...

    def append(self, kind: str, data: Any) -> None:
        """Queue one record of ``kind`` (one of :data:`RECORD_KINDS` other than
        ``limits``, ``events`` and ``fence``), committed by the next :meth:`commit`.

        Raises:
            ValueError: a kind a log cannot append, or data JSON cannot hold.
            TurnSuperseded: the turn was taken over.
            DurableError: the log failed before.
        """
        ...

    async def commit(self) -> None:
        """Return once every record this log queued before this call is durable.

        Raises:
            TurnSuperseded: the turn was taken over (those records were not written).
            DurableError: they could not be written.
        """
        ...


@runtime_checkable
class Journal(Protocol):
    """Where turns are recorded, in order, by turn id (format 2; SQLite, Redis and an
    in-memory one here; a third-party journal implements these three calls with the
    semantics of the module docs).
    """

    async def create(self, turn_id: str, head: dict[str, Any]) -> TurnLog:
        """Take the new turn ``turn_id`` atomically and write its ``limits`` record
        (``head`` plus ``"format": JOURNAL_FORMAT``) at epoch 1, committed before this
        returns.

        Raises:
            TurnExists: the journal already has the turn id.
            DurableError: the journal cannot be written.
        """
        ...

    async def take_over(self, turn_id: str) -> TurnLog:
        """Raise turn ``turn_id``'s epoch by one and write its ``fence`` record
        ``{"epoch": n}``, atomically and committed; the log returned holds epoch ``n``.
        Every log of an older epoch is fenced off from then on.

        Raises:
            DurableError: the journal has no such turn, or cannot be written.
        """
        ...

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after position ``after``, in order
        (stream events come as ``events`` records holding a list of events)."""
        ...
