"""A journal's writer (private): the bounded queue behind ``append``, and its writer thread.

Theory of operation. ``append_event`` / ``append`` are called from the machine's change
feed, on the event loop: they only put an entry on a queue (a ``collections.deque``:
appending on the loop and draining on a thread are both atomic) and, at the every-event
level, wake the writer thread. :meth:`JournalWriter.flush` takes everything queued and
hands it, as rows, to the journal's ``write`` (one transaction: SQLite's, or a Redis
``MULTI``) under one lock, so rows are written in the order they were queued whoever
flushes: the writer thread, or :meth:`JournalWriter.commit` on a worker thread, which
returns once everything queued before it is written.

Rows. Consecutive stream events of one turn become one row of kind ``events`` (a JSON
list; consecutive deltas of one call joined into one: replaying them gives the same call,
the machine keeps the text, not its fragments); every other record is its own row, its
JSON made when it is appended.

Bounded. The queue holds at most ``Limits.max_args_chars`` characters (each entry counted
as its text plus :data:`ENTRY_OVERHEAD`; an entry arriving at an empty queue is always
taken): a writer that cannot keep up (a stalled disk, a slow or unreachable Redis server)
fails the journal with a :class:`DurableError` naming the fix, rather than holding the
stream in memory. A failed write or a full queue puts the writer in a failed state: every
later call raises :class:`DurableError` with the first error's text, so the turn fails
closed (no claim commits, so no tool starts).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.to_thread

from ..limits import DEFAULT_LIMITS, Limits
from ._closing import Closing
from ._sqlite import DurableError

__all__ = ["ENTRY_OVERHEAD", "JournalWriter", "QueuedJournal", "Row", "dump"]

logger: Final = logging.getLogger("toolcall_tracker.durable")

Row = tuple[str, str, str]
"""One row to write: turn id, record kind, JSON text."""
ENTRY_OVERHEAD: Final = 16
"""Characters an entry counts in the queue on top of its text."""
_EVENT: Final = "\x00event"  # the queue's kind for a stream event (packed into ``events`` rows)


def dump(value: Any) -> str:
    """``value`` as compact JSON text (ASCII: lone surrogates kept as ``\\uXXXX``)."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _size(item: list[Any]) -> int:
    """The characters one stream event counts in the queue."""
    size = ENTRY_OVERHEAD
    for part in item[1:]:
        if isinstance(part, str):
            size += len(part)
        elif isinstance(part, (dict, list)):
            size += len(dump(part))
    return size


class _Batch:
    """The stream events of one turn going into one ``events`` row."""

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

    def flush(self, rows: list[Row]) -> None:
        if self.items and self.turn is not None:
            self._join()
            rows.append((self.turn, "events", dump(self.items)))
        self.items = []
        self.parts = []
        self.turn = None


def pack(entries: list[tuple[str, str, Any]]) -> list[Row]:
    """The rows of queued entries, in order (stream events of one turn packed)."""
    rows: list[Row] = []
    batch = _Batch()
    for turn, kind, data in entries:
        if kind != _EVENT:
            batch.flush(rows)
            rows.append((turn, kind, data))
        else:
            if turn != batch.turn:
                batch.flush(rows)
                batch.turn = turn
            batch.add(data)
    batch.flush(rows)
    return rows


class JournalWriter:
    """The queue and writer thread of one journal.

    Args:
        write: writes rows durably, all or none (blocking; called on a thread); raises
            :class:`DurableError` when it cannot.
        where: the journal's location, for messages.
        batch_ms: ``None``: wake the writer at each event; else write every ``batch_ms``.
        limits: bounds the queue (``max_args_chars`` characters).
    """

    __slots__ = (
        "_error",
        "_interval",
        "_limit",
        "_limiter",
        "_lock",
        "_queue",
        "_size",
        "_size_lock",
        "_stop",
        "_thread",
        "_wake",
        "_where",
        "_write",
    )

    def __init__(
        self,
        write: Callable[[list[Row]], None],
        *,
        where: str,
        batch_ms: float | None,
        limits: Limits | None,
    ) -> None:
        if batch_ms is not None and not batch_ms > 0:
            raise ValueError(f"batch_ms must be a positive number or None, not {batch_ms!r}")
        self._write = write
        self._where = where
        self._limit = (limits or DEFAULT_LIMITS).max_args_chars
        self._queue: deque[tuple[str, str, Any, int]] = deque()
        self._size = 0
        self._size_lock = threading.Lock()
        self._lock = threading.Lock()  # one flush at a time: rows in queue order
        self._limiter: anyio.CapacityLimiter | None = None
        self._interval = None if batch_ms is None else batch_ms / 1000
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._error: DurableError | None = None
        self._thread = threading.Thread(
            target=self._loop, name="toolcall-tracker journal writer", daemon=True
        )
        self._thread.start()

    @property
    def backlog(self) -> int:
        """The characters queued and not yet taken by a write."""
        return self._size

    def append_event(self, turn_id: str, item: list[Any]) -> None:
        """Queue one stream event of ``turn_id``."""
        self._put(turn_id, _EVENT, item, _size(item))
        if self._interval is None:
            self._wake.set()

    def append(self, turn_id: str, kind: str, data: Any) -> None:
        """Queue one record (its JSON made now)."""
        if self._error is not None:
            self.fail()
        if not kind or kind == _EVENT or kind == "events":
            raise ValueError(f"invalid record kind {kind!r} (stream events: append_event)")
        text = dump(data)
        self._put(turn_id, kind, text, ENTRY_OVERHEAD + len(text))

    async def commit(self) -> None:
        """Return once every entry queued before this call is written."""
        if self._error is not None:
            self.fail()
        limiter = self._limiter
        if limiter is None:
            limiter = self._limiter = anyio.CapacityLimiter(1)
        await anyio.to_thread.run_sync(self.flush, limiter=limiter)
        if self._error is not None:
            self.fail()

    def flush(self) -> None:
        """Write every queued entry now (blocking); a failure is kept and raised."""
        with self._lock:
            if self._error is not None:
                return
            queue = self._queue
            entries = [queue.popleft() for _ in range(len(queue))]
            if not entries:
                return
            with self._size_lock:
                self._size -= sum(entry[3] for entry in entries)
            try:
                self._write(pack([entry[:3] for entry in entries]))
            except DurableError as exc:
                self._error = exc
                raise
            except ValueError as exc:  # a value JSON cannot hold (the feed sends none)
                self._error = DurableError(f"writing the journal to {self._where} failed: {exc}")
                raise self._error from exc

    def close(self) -> None:
        """Write what is queued (unless failed) and stop the writer thread."""
        self._stop.set()
        self._wake.set()
        self._thread.join()
        if self._error is None:
            try:
                self.flush()
            except DurableError as exc:
                logger.warning("%s", exc)

    def fail(self) -> None:
        """Raise the :class:`DurableError` of a writer that failed."""
        raise DurableError(
            f"the journal failed earlier, so the turn fails closed (no tool starts): {self._error}"
        ) from self._error

    @property
    def failed(self) -> bool:
        """Whether a write failed (or the queue overflowed)."""
        return self._error is not None

    def _put(self, turn_id: str, kind: str, data: Any, size: int) -> None:
        if self._error is not None:
            self.fail()
        with self._size_lock:
            total = self._size + size
            if total > self._limit and self._queue:
                self._error = DurableError(
                    f"the journal's writer fell behind: {total} characters waiting for "
                    f"{self._where}, more than Limits.max_args_chars ({self._limit}); the "
                    "journal is too slow or unreachable. Give the journal larger "
                    "limits=Limits(max_args_chars=...), or a faster journal"
                )
                raise self._error
            self._size = total
            self._queue.append((turn_id, kind, data, size))

    def _loop(self) -> None:
        interval, wake, stop = self._interval, self._wake, self._stop
        while not stop.is_set():
            if interval is None:
                wake.wait()
                wake.clear()
            elif stop.wait(interval):
                break
            if self._queue:
                try:
                    self.flush()
                except DurableError:
                    return  # flush kept the error; every later call raises it


class QueuedJournal(Closing):
    """The writing half of the journal protocol, over a :class:`JournalWriter` (a base of
    the SQLite and Redis journals, which set ``_writer``)."""

    __slots__ = ()
    _writer: JournalWriter

    def append_event(self, turn_id: str, item: list[Any]) -> None:
        """Queue one stream event of ``turn_id`` (written per the durability level)."""
        self._writer.append_event(turn_id, item)

    def append(self, turn_id: str, kind: str, data: Any) -> None:
        """Queue one record (written by the next :meth:`commit`, or the writer)."""
        self._writer.append(turn_id, kind, data)

    async def commit(self) -> None:
        """Return once every record queued before this call is durably written."""
        await self._writer.commit()
