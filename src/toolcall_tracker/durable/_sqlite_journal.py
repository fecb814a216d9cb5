"""A :class:`~toolcall_tracker.durable.Journal` on one SQLite file (WAL), with a writer thread.

Theory of operation. ``append_event`` / ``append`` put an entry on the queue of a
:class:`~._writer.JournalWriter`, bounded by the ``Limits`` given, and at the every-event
level wake its writer thread, which writes what is queued in one transaction: consecutive
stream events of one turn become one row of kind ``events`` (a JSON list; consecutive
deltas of one call joined into one), every other record its own row. ``commit`` writes the
queue the same way on a worker thread and returns once it is written, so everything queued
before it is durable. A write that fails (or a writer so far behind that its queue is
full) puts the journal in a failed state: every later call raises :class:`DurableError`
with the first error's text.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from typing import Final

import anyio
import anyio.to_thread

from ..limits import Limits
from ._journal import JournalRecord
from ._sqlite import Database, DurableError, sqlite_path, transaction
from ._writer import JournalWriter, QueuedJournal, Row

__all__ = ["SQLiteJournal"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS toolcall_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS toolcall_journal_turn ON toolcall_journal (turn, seq);
"""


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
        limits: bound the queue of records not yet written: at most
            ``limits.max_args_chars`` characters (default ``Limits()``); a writer that
            falls further behind fails the journal (:class:`DurableError`).

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
    ) -> None:
        if batch_ms is not None and not batch_ms > 0:
            raise ValueError(f"batch_ms must be a positive number or None, not {batch_ms!r}")
        self._db = Database(location, busy_timeout=busy_timeout, synchronous=synchronous)
        self._db.script("creating the journal table", _SCHEMA)
        self._writer = JournalWriter(
            self._write,
            where=f"the SQLite file {self._db.path!r}",
            batch_ms=batch_ms,
            limits=limits,
        )

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._db.path

    # -- reading (append, append_event and commit: QueuedJournal) ---------------------

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, in order."""

        def go(conn: sqlite3.Connection) -> list[JournalRecord]:
            rows = conn.execute(
                "SELECT seq, kind, data FROM toolcall_journal WHERE turn = ? AND seq > ? "
                "ORDER BY seq",
                (turn_id, after),
            ).fetchall()
            return [JournalRecord(seq, kind, json.loads(data)) for seq, kind, data in rows]

        return await self._db.call("reading the journal", go)

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
                rows = conn.execute(
                    "SELECT seq, kind, data FROM toolcall_journal WHERE turn = ? AND seq > ? "
                    "ORDER BY seq",
                    (turn_id, after),
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise DurableError(f"cannot read the journal {path!r}: {exc}") from exc
        return [JournalRecord(seq, kind, json.loads(data)) for seq, kind, data in rows]

    def close(self) -> None:
        """Write what is queued, stop the writer and close the file."""
        self._writer.close()
        self._db.close()

    async def aclose(self) -> None:
        """:meth:`close` on a worker thread (the event loop does not wait for the file)."""
        await anyio.to_thread.run_sync(self.close)

    # -- the writer ---------------------------------------------------------------------

    def _write(self, rows: list[Row]) -> None:
        """Insert ``rows`` in one transaction (on the writer's thread)."""

        def body(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO toolcall_journal (turn, kind, data) VALUES (?, ?, ?)", rows
            )

        self._db.run("writing the journal", lambda conn: transaction(conn, body))
