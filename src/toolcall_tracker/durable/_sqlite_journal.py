"""A :class:`~toolcall_tracker.durable.Journal` on one SQLite file (WAL), with a writer thread.

Theory of operation. Two tables: ``toolcall_journal`` holds the records (``seq``, ``turn``,
``kind``, ``data``, ``epoch``: the epoch of the writer that wrote it), ``toolcall_turns``
each turn's current epoch (its fencing token). :meth:`SQLiteJournal.create` takes a turn
id with an ``INSERT`` into ``toolcall_turns`` that fails on a duplicate, in the same
transaction as the turn's ``limits`` record (and refuses an id that already has records
written by an older version, which had no ``toolcall_turns``); :meth:`SQLiteJournal.take_over`
raises the turn's epoch and inserts its ``fence`` record in one transaction.

A log's ``append_event`` / ``append`` put an entry on the queue of a
:class:`~._writer.JournalWriter` and, at the every-event level, wake its writer thread,
which writes what is queued in one transaction: consecutive stream events of one log
become one row of kind ``events`` (a JSON list; consecutive deltas of one call joined into
one), every other record its own row. Inside that transaction each turn's epoch is read
first: the rows of a log whose turn's epoch moved on are not inserted (that log is
superseded, see :mod:`._protocol`), the others are. A log's ``commit`` writes the queue the
same way on a worker thread and returns once it is written. A write that fails puts the
journal in a failed state: every later call raises :class:`DurableError` with the first
error's text.

Files made by older versions (no ``epoch`` column, no ``toolcall_turns``) are upgraded when
opened (``ALTER TABLE ... ADD COLUMN epoch ... DEFAULT 1``): their records read as epoch 1,
and a turn with records but no epoch is at epoch 1.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import anyio.to_thread

from ..limits import Limits
from ._follow import poll_follow
from ._protocol import JOURNAL_FORMAT, DurableError, JournalRecord
from ._sqlite import Database, sqlite_path, transaction
from ._writer import (
    COMMIT_TIMEOUT,
    JournalWriter,
    QueuedJournal,
    QueuedLog,
    Refused,
    Row,
    dump,
    superseded_error,
    turn_exists_error,
)

__all__ = ["SQLiteJournal"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS toolcall_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    epoch INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS toolcall_journal_turn ON toolcall_journal (turn, seq);
CREATE TABLE IF NOT EXISTS toolcall_turns (
    turn TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL
);
"""
_READ: Final = (
    "SELECT seq, kind, data, {epoch} FROM toolcall_journal WHERE turn = ? AND seq > ? ORDER BY seq"
)


def _has_epoch(conn: sqlite3.Connection) -> bool:
    """Whether the journal table has its ``epoch`` column (files of older versions not)."""
    return any(row[1] == "epoch" for row in conn.execute("PRAGMA table_info(toolcall_journal)"))


def _upgrade(conn: sqlite3.Connection) -> None:
    """Add the ``epoch`` column to a journal table made by an older version."""
    if not _has_epoch(conn):
        conn.execute("ALTER TABLE toolcall_journal ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1")


def _epoch_of(conn: sqlite3.Connection, turn_id: str) -> int | None:
    """The turn's epoch: stored, else 1 if it has records (an older version's), else
    ``None`` (no such turn)."""
    row = conn.execute("SELECT epoch FROM toolcall_turns WHERE turn = ?", (turn_id,)).fetchone()
    if row is not None:
        return int(row[0])
    found = conn.execute(
        "SELECT 1 FROM toolcall_journal WHERE turn = ? LIMIT 1", (turn_id,)
    ).fetchone()
    return None if found is None else 1


def _records(rows: list[Any]) -> list[JournalRecord]:
    """Rows as journal records (a row whose data is not JSON: :class:`DurableError`)."""
    out: list[JournalRecord] = []
    for seq, kind, data, epoch in rows:
        try:
            out.append(JournalRecord(seq, kind, json.loads(data), epoch))
        except (TypeError, ValueError) as exc:
            raise DurableError(f"journal record {seq} ({kind!r}) is not JSON: {exc}") from exc
    return out


class SQLiteJournal(QueuedJournal):
    """Turns recorded in one SQLite file (WAL), shared by processes.

    Args:
        location: the file (a path, ``sqlite:///relative.db`` or
            ``sqlite:////absolute.db``); created if missing.
        batch_ms: the durability level of stream events. ``None`` (default): each event
            is committed at once by the writer thread (events arriving while it writes are
            committed together next). A number: events are committed every ``batch_ms``
            milliseconds. Claims and outcomes are committed before the step they guard
            at either level.
        busy_timeout: seconds a write waits for another writer's lock before failing.
        synchronous: SQLite's ``synchronous`` setting (``"FULL"`` survives a power loss,
            ``"NORMAL"`` a process crash).
        limits: the journal's per-call bound: the text one call has queued and not yet
            written (its deltas, its result or error) is at most ``limits.max_args_chars``
            characters (default ``Limits()``); an append over it fails that turn's log.
        max_queued: the writer-wide bound: at most this many characters queued and not
            yet written, by every turn together (default 4 x ``limits.max_args_chars``);
            an append over it fails only the turn that made it.
        commit_timeout: seconds a log's ``commit`` may take, its wait for room (at most
            half of ``max_queued`` queued) included; past it that turn's log fails
            (default 30).

    Close it to write what is queued and stop its writer: ``async with`` (or
    :meth:`aclose`) from async code, ``with`` (or :meth:`close`) otherwise. Opening it sets
    up the file at once.

    Raises:
        DurableError: the file cannot be opened or set up.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        batch_ms: float | None = None,
        busy_timeout: float = 5.0,
        synchronous: str = "FULL",
        limits: Limits | None = None,
        max_queued: int | None = None,
        commit_timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        if batch_ms is not None and not batch_ms > 0:
            raise ValueError(f"batch_ms must be a positive number or None, not {batch_ms!r}")
        self._db = Database(location, busy_timeout=busy_timeout, synchronous=synchronous)
        try:
            self._db.script("creating the journal table", _SCHEMA)
            if not self._db.run("reading the journal table", _has_epoch):  # (no write lock)
                self._db.run("upgrading the journal table", lambda c: transaction(c, _upgrade))
            self._writer = JournalWriter(
                self._write,
                where=f"the SQLite file {self._db.path!r}",
                batch_ms=batch_ms,
                limits=limits,
                max_queued=max_queued,
                commit_timeout=commit_timeout,
            )
        except BaseException:
            self._db.close()
            raise

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._db.path

    # -- taking a turn (its log's appends and commits: QueuedLog) ---------------------

    async def create(self, turn_id: str, head: dict[str, Any]) -> QueuedLog:
        """Take the new turn ``turn_id`` and write its ``limits`` record (``head`` plus
        ``"format"``), in one transaction; the log returned holds epoch 1.

        Raises:
            TurnExists: the file already has the turn (created before, by another writer
                at the same moment, or written by an older version).
            DurableError: the file cannot be written.
        """
        text = dump({**head, "format": JOURNAL_FORMAT})

        def body(conn: sqlite3.Connection) -> bool:
            if conn.execute(  # records of an older version, which had no toolcall_turns
                "SELECT 1 FROM toolcall_journal WHERE turn = ? LIMIT 1", (turn_id,)
            ).fetchone():
                return False
            taken = conn.execute(
                "INSERT INTO toolcall_turns (turn, epoch) VALUES (?, 1) ON CONFLICT DO NOTHING",
                (turn_id,),
            )
            if taken.rowcount != 1:
                return False
            conn.execute(
                "INSERT INTO toolcall_journal (turn, kind, data, epoch) VALUES (?, 'limits', ?, 1)",
                (turn_id, text),
            )
            return True

        log = self._log(turn_id, 1)
        created = await self._db.call(
            "creating a turn in the journal", lambda conn: transaction(conn, body)
        )
        if not created:
            raise turn_exists_error(turn_id)
        return log

    async def take_over(self, turn_id: str) -> QueuedLog:
        """Raise turn ``turn_id``'s epoch by one and write its ``fence`` record, in one
        transaction; the log returned holds the new epoch (older logs are fenced off).

        Raises:
            DurableError: the file has no such turn, or cannot be written.
        """

        def body(conn: sqlite3.Connection) -> int | None:
            now = _epoch_of(conn, turn_id)
            if now is None:
                return None
            epoch = now + 1
            conn.execute(
                "INSERT INTO toolcall_turns (turn, epoch) VALUES (?, ?) "
                "ON CONFLICT (turn) DO UPDATE SET epoch = excluded.epoch",
                (turn_id, epoch),
            )
            conn.execute(
                "INSERT INTO toolcall_journal (turn, kind, data, epoch) VALUES (?, 'fence', ?, ?)",
                (turn_id, dump({"epoch": epoch}), epoch),
            )
            return epoch

        self._log(turn_id, 1)  # a failed journal raises here
        epoch = await self._db.call(
            "taking a turn over in the journal", lambda conn: transaction(conn, body)
        )
        if epoch is None:
            raise DurableError(f"the journal {self.path!r} has no turn {turn_id!r} to take over")
        return self._log(turn_id, epoch)

    # -- reading ------------------------------------------------------------------------

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, in order."""

        def go(conn: sqlite3.Connection) -> list[JournalRecord]:
            rows = conn.execute(_READ.format(epoch="epoch"), (turn_id, after)).fetchall()
            return _records(rows)

        return await self._db.call("reading the journal", go)

    def follow(
        self, turn_id: str, after: int = 0, *, timeout: float | None = None, poll: float = 0.05
    ) -> AsyncIterator[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, then each new one as it is
        committed (read every ``poll`` seconds: SQLite cannot block on a new row), until
        the turn is over: its ``end`` read and no call still running, or its ``run_end``
        read (the rule of ``toolcall-tracker replay --follow``).

        Raises:
            DurableError: the turn was not over within ``timeout`` seconds, or the
                journal cannot be read.
        """
        return poll_follow(self.read, turn_id, after, timeout, poll)

    @staticmethod
    def read_file(
        location: str | os.PathLike[str], turn_id: str, after: int = 0
    ) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after`` in the journal file at
        ``location``, read now, without a writer (blocking: for tools and scripts).

        Raises:
            DurableError: the file does not exist or is not a readable journal.
        """
        path = sqlite_path(location)
        if not os.path.exists(path):
            raise DurableError(f"there is no journal file {path!r}")
        try:
            conn = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)
            try:
                epoch = "epoch" if _has_epoch(conn) else "1"  # a file of an older version
                rows = conn.execute(_READ.format(epoch=epoch), (turn_id, after)).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise DurableError(f"cannot read the journal {path!r}: {exc}") from exc
        return _records(rows)

    def close(self) -> None:
        """Write what is queued, stop the writer and close the file."""
        self._writer.close()
        self._db.close()

    async def aclose(self) -> None:
        """:meth:`close` on a worker thread (the event loop does not wait for the file)."""
        await anyio.to_thread.run_sync(self.close)

    # -- the writer ---------------------------------------------------------------------

    def _write(self, rows: list[Row]) -> Refused:
        """Insert ``rows`` in one transaction (on the writer's thread), but those of a turn
        whose epoch is no longer theirs (returned as refused)."""

        def body(conn: sqlite3.Connection) -> Refused:
            refused: Refused = {}
            verdict: dict[tuple[str, int], bool] = {}
            for turn, _, _, epoch in rows:
                key = (turn, epoch)
                if key not in verdict:
                    now = _epoch_of(conn, turn)
                    verdict[key] = now is None or now == epoch
                    if not verdict[key]:
                        assert now is not None
                        refused[key] = superseded_error(turn, epoch, now)
            conn.executemany(
                "INSERT INTO toolcall_journal (turn, kind, data, epoch) VALUES (?, ?, ?, ?)",
                rows if not refused else [row for row in rows if verdict[(row[0], row[3])]],
            )
            return refused

        refused: Refused = self._db.run("writing the journal", lambda conn: transaction(conn, body))
        return refused
