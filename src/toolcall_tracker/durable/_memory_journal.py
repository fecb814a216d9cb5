"""A :class:`~toolcall_tracker.durable.Journal` in memory: the protocol's semantics, no I/O.

Theory of operation. For tests (the application's, and models of the protocol): it keeps
each turn's records in a list and its epoch in a dict, and implements
:meth:`InMemoryJournal.create`, :meth:`InMemoryJournal.take_over` and the logs exactly as
the SQLite and Redis journals do (the same :class:`~._writer.QueuedLog` and the same
packing of stream events into ``events`` records, the same fencing rule, per turn), but
with no writer thread: what the logs queue is written when any of them commits (or
:meth:`InMemoryJournal.commit` is awaited), synchronously and in queue order, so a run is
deterministic. Each turn's records are numbered 1, 2, ... (like Redis's). Nothing is
bounded: the queue only grows between commits.

:meth:`InMemoryJournal.another` gives a second journal on the same turns with its own
queue, as a second process opening the same database would have: a model of several
processes (a writer that dies takes what it had not committed with it).

Records are kept as JSON text and parsed at :meth:`InMemoryJournal.read`, so what comes
back is exactly what a real journal would give (the output rule applied, fresh objects).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel

from ._follow import poll_follow
from ._protocol import JOURNAL_FORMAT, DurableError, JournalRecord
from ._writer import LogQueue, QueuedLog, Refused, Row, dump, superseded_error, turn_exists_error

__all__ = ["InMemoryJournal"]


class InMemoryJournal:
    """Turns recorded in memory, with the fencing and creation semantics of the real
    journals (see the module docs). For tests; nothing survives the process.

    Usable as a context manager like the others (closing does nothing but write what is
    queued).
    """

    __slots__ = ("_epochs", "_queue", "_turns")

    def __init__(self) -> None:
        self._turns: dict[str, list[tuple[str, str, int]]] = {}  # kind, JSON, epoch
        self._epochs: dict[str, int] = {}
        self._queue = LogQueue(self._write, where="the in-memory journal", limit=None, budget=None)

    def another(self) -> InMemoryJournal:
        """A journal on the same turns with a queue of its own: what another process
        opening the same database has (what this one queued and did not commit is not
        written by that one's commits, and is lost if this one is dropped)."""
        other = InMemoryJournal()
        other._turns = self._turns
        other._epochs = self._epochs
        return other

    def turns(self) -> list[str]:
        """The turn ids it holds, in the order they were created."""
        return list(self._turns)

    def epoch(self, turn_id: str) -> int | None:
        """The turn's current epoch (``None``: no such turn)."""
        return self._epochs.get(turn_id)

    async def create(self, turn_id: str, head: dict[str, Any]) -> QueuedLog:
        """Take the new turn ``turn_id`` and write its ``limits`` record (``head`` plus
        ``"format"``); the log returned holds epoch 1.

        Raises:
            TurnExists: the journal already has the turn.
        """
        text = dump({**head, "format": JOURNAL_FORMAT})
        await anyio.lowlevel.checkpoint()
        if turn_id in self._turns:
            raise turn_exists_error(turn_id)
        self._epochs[turn_id] = 1
        self._turns[turn_id] = [("limits", text, 1)]
        return QueuedLog(self._queue, turn_id, 1)

    async def take_over(self, turn_id: str) -> QueuedLog:
        """Raise turn ``turn_id``'s epoch by one and write its ``fence`` record; the log
        returned holds the new epoch (older logs are fenced off).

        Raises:
            DurableError: the journal has no such turn.
        """
        await anyio.lowlevel.checkpoint()
        records = self._turns.get(turn_id)
        if records is None:
            raise DurableError(f"the in-memory journal has no turn {turn_id!r} to take over")
        epoch = self._epochs[turn_id] + 1
        self._epochs[turn_id] = epoch
        records.append(("fence", dump({"epoch": epoch}), epoch))
        return QueuedLog(self._queue, turn_id, epoch)

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, in order (numbered from
        1)."""
        await anyio.lowlevel.checkpoint()
        records = self._turns.get(turn_id, [])
        return [
            JournalRecord(seq, kind, json.loads(text), epoch)
            for seq, (kind, text, epoch) in enumerate(records, 1)
            if seq > after
        ]

    def follow(
        self, turn_id: str, after: int = 0, *, timeout: float | None = None, poll: float = 0.01
    ) -> AsyncIterator[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, then each new one, until
        the turn is over (read every ``poll`` seconds; the rule of every follower).

        Raises:
            DurableError: the turn was not over within ``timeout`` seconds.
        """
        return poll_follow(self.read, turn_id, after, timeout, poll)

    async def commit(self) -> None:
        """Write everything queued by every log now."""
        await self._queue.commit_log_all()

    def close(self) -> None:
        """Write what is queued."""
        self._queue.flush()

    async def aclose(self) -> None:
        """Write what is queued."""
        self._queue.flush()

    def __enter__(self) -> InMemoryJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> InMemoryJournal:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _write(self, rows: list[Row]) -> Refused:
        refused: Refused = {}
        for turn, kind, text, epoch in rows:
            now = self._epochs.get(turn)
            if now is not None and now != epoch:
                refused[(turn, epoch)] = superseded_error(turn, epoch, now)
                continue
            self._turns.setdefault(turn, []).append((kind, text, epoch))
        return refused
