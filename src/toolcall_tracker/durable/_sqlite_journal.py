"""A :class:`~toolcall_tracker.durable.Journal` on one SQLite file (WAL), with a writer thread.

Theory of operation. ``append_event`` / ``append`` put a tuple on a queue (a
``collections.deque``: appending from the event loop and draining from a thread are both
atomic) and, at the every-event level, wake the writer. The writer thread drains the queue
and writes it in one transaction: consecutive stream events of one turn become one row of
kind ``events`` (a JSON list; consecutive deltas of one call joined into one), every other
record its own row. ``commit`` drains the queue the same way on a worker thread and returns
once it is written, so everything queued before it is durable. A write that fails puts
the journal in a failed state: every later call raises :class:`DurableError` with the first
error's text.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import urllib.parse
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import anyio.to_thread

from ._follow import poll_follow
from ._journal import JournalRecord
from ._sqlite import Database, DurableError, sqlite_path, transaction

__all__ = ["SQLiteJournal"]

logger: Final = logging.getLogger("toolcall_tracker.durable")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS toolcall_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS toolcall_journal_turn ON toolcall_journal (turn, seq);
"""
_EVENT: Final = "\x00event"  # the queue's kind for a stream event (packed into ``events`` rows)


def _dump(value: Any) -> str:
    # ensure_ascii keeps lone surrogates as \uXXXX escapes, which json.loads gives back
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class _Batch:
    """The stream events of one turn going into one ``events`` row; consecutive deltas of
    one call are joined into one (replaying them gives the same call: the machine keeps
    the text, not its fragments)."""

    __slots__ = ("items", "parts", "turn")

    def __init__(self) -> None:
        self.turn: str | None = None
        self.items: list[Any] = []
        self.parts: list[str] = []  # the text of the last item's delta run

    def add(self, item: list[Any]) -> None:
        items = self.items
        if item[0] == "d":
            if items and self.parts and items[-1][1] == item[1]:
                self.parts.append(item[2])
                return
            self._join()
            self.parts = [item[2]]
            items.append(["d", item[1], ""])
            return
        self._join()
        items.append(item)

    def _join(self) -> None:
        if self.parts:
            self.items[-1][2] = "".join(self.parts)
            self.parts = []

    def flush(self, rows: list[tuple[str, str, str]]) -> None:
        if self.items and self.turn is not None:
            self._join()
            rows.append((self.turn, "events", _dump(self.items)))
        self.items = []
        self.parts = []
        self.turn = None


class SQLiteJournal:
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
    ) -> None:
        if batch_ms is not None and not batch_ms > 0:
            raise ValueError(f"batch_ms must be a positive number or None, not {batch_ms!r}")
        self._db = Database(location, busy_timeout=busy_timeout, synchronous=synchronous)
        self._db.script("creating the journal table", _SCHEMA)
        self._queue: deque[tuple[str, str, Any]] = deque()
        self._interval = None if batch_ms is None else batch_ms / 1000
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._error: DurableError | None = None
        self._writer = threading.Thread(
            target=self._write_loop, name="toolcall-tracker journal writer", daemon=True
        )
        self._writer.start()

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._db.path

    # -- the protocol ------------------------------------------------------------------

    def append_event(self, turn_id: str, item: list[Any]) -> None:
        """Queue one stream event of ``turn_id``."""
        if self._error is not None:
            self._raise()
        self._queue.append((turn_id, _EVENT, item))
        if self._interval is None:
            self._wake.set()

    def append(self, turn_id: str, kind: str, data: Any) -> None:
        """Queue one record (written by the next :meth:`commit`, or the writer)."""
        if self._error is not None:
            self._raise()
        if not kind or kind == _EVENT or kind == "events":
            raise ValueError(f"invalid record kind {kind!r} (stream events: append_event)")
        self._queue.append((turn_id, kind, data))

    async def commit(self) -> None:
        """Return once every record queued before this call is written and committed."""
        if self._error is not None:
            self._raise()
        await self._db.call("committing the journal", self._drain)
        if self._error is not None:
            self._raise()

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
        self._stop.set()
        self._wake.set()
        self._writer.join()
        if self._error is None:
            try:
                self._db.run("closing the journal", self._drain)
            except DurableError as exc:
                logger.warning("%s", exc)
        self._db.close()

    async def aclose(self) -> None:
        """:meth:`close` on a worker thread (the event loop does not wait for the file)."""
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> SQLiteJournal:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the writer ----------------------------------------------------------------------

    def _raise(self) -> None:
        raise DurableError(
            f"the journal failed earlier, so the turn fails closed (no tool starts): {self._error}"
        )

    def _write_loop(self) -> None:
        interval, wake, stop = self._interval, self._wake, self._stop
        while not stop.is_set():
            if interval is None:
                wake.wait()
                wake.clear()
            elif stop.wait(interval):
                break
            if self._queue:
                try:
                    self._db.run("writing the journal", self._drain)
                except DurableError:
                    return  # _drain kept the error; every later call raises it

    def _drain(self, conn: sqlite3.Connection) -> None:
        """Write every queued record in one transaction (under the database lock)."""
        if self._error is not None:
            return
        queue = self._queue
        items = [queue.popleft() for _ in range(len(queue))]
        if not items:
            return
        rows: list[tuple[str, str, str]] = []
        batch = _Batch()
        for turn, kind, data in items:
            if kind != _EVENT:
                batch.flush(rows)
                rows.append((turn, kind, _dump(data)))
            else:
                if turn != batch.turn:
                    batch.flush(rows)
                    batch.turn = turn
                batch.add(data)
        batch.flush(rows)

        def body(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO toolcall_journal (turn, kind, data) VALUES (?, ?, ?)", rows
            )

        try:
            transaction(conn, body)
        except (sqlite3.Error, ValueError) as exc:
            try:
                if conn.in_transaction:
                    conn.rollback()
            except sqlite3.Error:  # pragma: no cover
                pass
            self._error = DurableError(f"writing the journal {self._db.path!r} failed: {exc}")
            raise self._error from exc
