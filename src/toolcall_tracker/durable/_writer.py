"""A journal's writer (private): turn logs, the bounded queue behind them, and its writer
thread.

Theory of operation. A :class:`QueuedLog` is one writer's hold on one turn at one epoch
(the :class:`~._protocol.TurnLog` of the SQLite, Redis and in-memory journals). Its
``append_event`` / ``append`` are called from the machine's change feed, on the event loop:
they only put an entry on the journal's queue (a ``collections.deque``: appending on the
loop and draining on a thread are both atomic) and, at the every-event level, wake the
writer thread. :meth:`LogQueue.flush` takes everything queued and hands it, as rows, to the
journal's ``write`` (one transaction: SQLite's, or one Redis script) under one lock, so
rows are written in the order they were queued whoever flushes: the writer thread, or a
commit on a worker thread, which returns once everything queued before it is written.

Rows. Consecutive stream events of one log become one row of kind ``events`` (a JSON
list; consecutive deltas of one call joined into one: replaying them gives the same call,
the machine keeps the text, not its fragments); every other record is its own row, its
JSON made when it is appended. Each row carries its log's turn id and epoch.

Fencing, per turn. ``write`` checks, inside its transaction, each turn's epoch against the
epoch of the rows given for it, writes the rows of the turns whose epoch is still theirs,
and returns the others as refused (with the error for each: :class:`TurnSuperseded` for a
turn taken over by a newer epoch, a :class:`DurableError` for a failure of that turn alone).
A refused log is failed: it writes nothing more (its entries still queued are dropped, and
no longer count against the bounds below) and every later call of it raises. The other
turns of the batch are written. A failure of the backend itself (``write`` raises) fails
the whole queue, every log with it: fail closed.

Bounds. Two, both counted in characters of JSON text:

- per call: the text a call has queued and not yet written (its delta text, its result or
  error) is at most ``Limits.max_args_chars``, the journal's limits (the first entry of a
  call with nothing queued is always taken);
- per writer: everything queued (each entry counted as its text plus
  :data:`ENTRY_OVERHEAD`) is at most ``max_queued`` (default :data:`QUEUED_PER_CALL` times
  ``max_args_chars``; an entry arriving at an empty queue is always taken).

An append that would go over a call's bound fails its own log. One that would go over
``max_queued`` fails the turn that filled the queue, not whichever turn happens to append
last: the log holding the most queued characters (the appender's count taken with the new
entry; on a tie, the appender). If that is the appender, the appender fails; if it is
another log, that log is dropped (its entries no longer count) and the new entry is taken
if it now fits (else the appender fails too). Either way the failure is a
:class:`DurableError` naming the fix, raised at the failed log's next call, and the other
turns sharing the journal carry on. (The queue keeps the set of logs with something
queued, so an append stays a few operations; the search for the largest runs only on an
overflow.) Back pressure: a log's ``commit`` (which a turn's start guard awaits before
each claim) writes everything queued before it and then, while the log still has text of
its own queued (a turn streaming on), waits until the backlog is at most half of
``max_queued`` (room for what the claimed tool returns), both together bounded by
``commit_timeout`` seconds; past it the commit fails its log (that turn fails closed, no
tool starts) and the others carry on. A log with nothing of its own left queued returns
after its write: a quiet turn's claims are not held up by another turn's stream.

An append racing the writer thread's refusal of its log (a fenced write) queues nothing:
the log's error is checked again under the bounds' lock, so nothing is counted for a log
whose entries will never be released.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final, NoReturn

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..limits import DEFAULT_LIMITS, Limits
from ._closing import Closing
from ._protocol import RECORD_KINDS, DurableError, TurnExists, TurnSuperseded

__all__ = [
    "COMMIT_TIMEOUT",
    "ENTRY_OVERHEAD",
    "QUEUED_PER_CALL",
    "JournalWriter",
    "LogQueue",
    "QueuedJournal",
    "QueuedLog",
    "Refused",
    "Row",
    "dump",
    "superseded_error",
    "turn_exists_error",
]

logger: Final = logging.getLogger("toolcall_tracker.durable")

Row = tuple[str, str, str, int]
"""One row to write: turn id, record kind, JSON text, epoch of the log that queued it."""
Refused = dict[tuple[str, int], DurableError]
"""What a ``write`` refused: by (turn id, epoch), the error of the logs of that turn and
epoch (:class:`TurnSuperseded` when the turn's epoch moved on)."""
ENTRY_OVERHEAD: Final = 16
"""Characters an entry counts in the writer's queue on top of its text."""
QUEUED_PER_CALL: Final = 4
"""The default ``max_queued``: this many times ``Limits.max_args_chars``."""
COMMIT_TIMEOUT: Final = 30.0
"""The default seconds a log's commit may take, the wait for room included."""
_EVENT: Final = "\x00event"  # the queue's kind for a stream event (packed into ``events`` rows)
_COUNTED: Final = frozenset("dRE")  # the events whose text counts against their call
_APPENDABLE: Final = RECORD_KINDS - {"limits", "events", "fence"}


def dump(value: Any) -> str:
    """``value`` as compact JSON text (ASCII: lone surrogates kept as ``\\uXXXX``)."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def turn_exists_error(turn_id: str) -> TurnExists:
    """The :class:`TurnExists` of a second ``create`` of ``turn_id``."""
    return TurnExists(
        f"turn {turn_id!r} is already in the journal: use a new turn id, or restore() it "
        "to finish it"
    )


def superseded_error(turn_id: str, mine: int, now: int) -> TurnSuperseded:
    """The :class:`TurnSuperseded` of a log of epoch ``mine`` whose turn is at ``now``."""
    return TurnSuperseded(
        f"turn {turn_id!r} was taken over by epoch {now} elsewhere (this writer held epoch "
        f"{mine}): this writer stops, and no tool starts here; what it queued after the "
        "take-over was not written"
    )


def _size(item: list[Any]) -> int:
    """The characters one stream event counts in the queue."""
    size = ENTRY_OVERHEAD
    for part in item[1:]:
        if isinstance(part, str):
            size += len(part)
        elif isinstance(part, (dict, list)):
            size += len(dump(part))
    return size


class QueuedLog:
    """One writer's hold on one turn at one epoch (a :class:`~._protocol.TurnLog`), over
    a :class:`LogQueue`."""

    __slots__ = ("_calls", "_epoch", "_error", "_queue", "_queued", "_turn")

    def __init__(self, queue: LogQueue, turn_id: str, epoch: int) -> None:
        self._queue = queue
        self._turn = turn_id
        self._epoch = epoch
        self._error: DurableError | None = None  # why this log failed (its turn only)
        self._calls: dict[str, int] = {}  # characters queued per call (under the queue's lock)
        self._queued = 0  # what its entries count in the queue (under the queue's lock)

    @property
    def turn_id(self) -> str:
        """The turn this log writes."""
        return self._turn

    @property
    def epoch(self) -> int:
        """The epoch this log holds."""
        return self._epoch

    @property
    def superseded(self) -> bool:
        """Whether a newer epoch took the turn over (seen at a write of this log)."""
        return isinstance(self._error, TurnSuperseded)

    @property
    def failed(self) -> bool:
        """Whether this log failed (superseded, overflowed, or its journal failed)."""
        return self._error is not None or self._queue.failed

    def append_event(self, item: list[Any]) -> None:
        """Queue one stream event (written per the journal's durability level)."""
        if self._error is not None:
            self.fail()
        self._queue.put_event(self, item, _size(item), item[1] if item[0] in _COUNTED else None)

    def append(self, kind: str, data: Any) -> None:
        """Queue one record (its JSON made now), written by the next :meth:`commit`."""
        if self._error is not None:
            self.fail()
        if kind not in _APPENDABLE:
            raise ValueError(
                f"a turn log cannot append a record of kind {kind!r}: one of "
                f"{sorted(_APPENDABLE)} (stream events: append_event; limits: "
                "Journal.create; fence: Journal.take_over)"
            )
        text = dump(data)
        self._queue.put_record(self, kind, text, ENTRY_OVERHEAD + len(text))

    async def commit(self) -> None:
        """Return once every record this log queued before this call is durable."""
        if self._error is not None:
            self.fail()
        await self._queue.commit_log(self)
        if self._error is not None:
            self.fail()

    def fail(self) -> NoReturn:
        """Raise this log's error (a new exception of the same class each time)."""
        error = self._error
        if error is None:  # the queue failed: every log with it
            self._queue.fail()
        if isinstance(error, TurnSuperseded):
            raise TurnSuperseded(str(error)) from error
        raise DurableError(
            f"the journal failed earlier for turn {self._turn!r}, so the turn fails closed "
            f"(no tool starts): {error}"
        ) from error

    def refuse(self, error: DurableError) -> None:
        """Fail this log (the first error is kept): it writes nothing more, and what it
        has queued no longer counts against the writer's bound."""
        self._queue.drop(self, error)


def _queued_of(log: QueuedLog) -> int:
    return log._queued


class _Batch:
    """The stream events of one log going into one ``events`` row."""

    __slots__ = ("items", "log", "parts")

    def __init__(self) -> None:
        self.log: QueuedLog | None = None
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

    def flush(self, rows: list[Row], where: str) -> None:
        log = self.log
        if self.items and log is not None and log._error is None:
            self._join()
            try:
                text = dump(self.items)
            except ValueError as exc:  # a value JSON cannot hold (the feed sends none)
                log.refuse(DurableError(f"writing the journal to {where} failed: {exc}"))
            else:
                rows.append((log._turn, "events", text, log._epoch))
        self.items = []
        self.parts = []
        self.log = None


Entry = tuple[QueuedLog, str, Any, int]


def pack(entries: list[Entry], where: str = "the journal") -> list[Row]:
    """The rows of queued entries, in order (stream events of one log packed; the entries
    of a failed log dropped)."""
    rows: list[Row] = []
    batch = _Batch()
    for log, kind, data, _ in entries:
        if kind != _EVENT:
            batch.flush(rows, where)
            if log._error is None:
                rows.append((log._turn, kind, data, log._epoch))
        elif log._error is None:
            if log is not batch.log:
                batch.flush(rows, where)
                batch.log = log
            batch.add(data)
    batch.flush(rows, where)
    return rows


class LogQueue:
    """The queue of one journal's logs, written by ``write`` at :meth:`flush` (no thread:
    the in-memory journal's; :class:`JournalWriter` adds the writer thread).

    Args:
        write: writes rows durably, all or none per turn (blocking); returns the
            (turn, epoch) pairs it refused; raises :class:`DurableError` when the backend
            fails.
        where: the journal's location, for messages.
        limit: the per-call bound (``None``: none).
        budget: the writer-wide bound (``None``: none).
    """

    __slots__ = (
        "_budget",
        "_call_cap",
        "_cap",
        "_error",
        "_limit",
        "_live",
        "_lock",
        "_queue",
        "_size",
        "_size_lock",
        "_wake",
        "_where",
        "_write",
    )

    def __init__(
        self,
        write: Callable[[list[Row]], Refused],
        *,
        where: str,
        limit: int | None,
        budget: int | None,
    ) -> None:
        self._write = write
        self._where = where
        self._limit = limit
        self._budget = budget
        self._call_cap = sys.maxsize if limit is None else limit
        self._cap = sys.maxsize if budget is None else budget
        self._queue: deque[Entry] = deque()
        self._size = 0
        self._live: set[QueuedLog] = set()  # the logs with _queued > 0 (under _size_lock)
        self._size_lock = threading.Lock()  # the bounds' counts (a log dropped under it)
        self._lock = threading.Lock()  # one flush at a time: rows in queue order
        self._error: DurableError | None = None
        self._wake: threading.Event | None = None  # set: wake a writer thread per event

    @property
    def backlog(self) -> int:
        """The characters queued and not yet taken by a write."""
        return self._size

    @property
    def failed(self) -> bool:
        """Whether the backend failed (every log with it)."""
        return self._error is not None

    def put_event(self, log: QueuedLog, item: list[Any], size: int, call: str | None) -> None:
        """Queue one stream event of ``log`` (``call``: the call its text counts against)."""
        if self._error is not None:
            self.fail()
        with self._size_lock:
            if log._error is not None:  # refused since its own check: queue nothing
                log.fail()
            if call is not None:
                calls = log._calls
                before = calls.get(call, 0)
                pending = before + size - ENTRY_OVERHEAD
                if pending > self._call_cap and before:
                    self._call_overflow(log, call, pending)
            if self._size + size > self._cap and self._queue:
                self._overflow(log, size)
            if call is not None:
                log._calls[call] = pending
            self._count(log, size)
            self._queue.append((log, _EVENT, item, size))
        wake = self._wake
        if wake is not None:
            wake.set()

    def put_record(self, log: QueuedLog, kind: str, text: str, size: int) -> None:
        """Queue one record of ``log`` (its JSON ``text``)."""
        if self._error is not None:
            self.fail()
        with self._size_lock:
            if log._error is not None:  # refused since its own check: queue nothing
                log.fail()
            if self._size + size > self._cap and self._queue:
                self._overflow(log, size)
            self._count(log, size)
            self._queue.append((log, kind, text, size))

    def _count(self, log: QueuedLog, size: int) -> None:
        """Count an entry of ``size`` of ``log`` against the bounds (the lock held)."""
        if not log._queued:
            self._live.add(log)
        log._queued += size
        self._size += size

    def drop(self, log: QueuedLog, error: DurableError) -> None:
        """Fail ``log`` with ``error`` (unless it failed before): its entries still queued
        are dropped at the next flush, and no longer count against the bounds now."""
        with self._size_lock:
            self._drop(log, error)

    def _drop(self, log: QueuedLog, error: DurableError) -> None:
        """:meth:`drop`, the lock held."""
        if log._error is None:
            log._error = error
            self._size -= log._queued
            log._queued = 0
            log._calls.clear()
            self._live.discard(log)

    def _overflow(self, log: QueuedLog, size: int) -> None:
        """Make room for an entry of ``size`` of ``log`` that would go over the budget
        (the lock held): fail the log holding the most (``log`` counted with the entry;
        on a tie, ``log``); if that was another log, return when the entry now fits, else
        fail ``log`` too (raising its error)."""
        total = self._size + size
        mine = log._queued + size
        biggest = max(self._live, key=_queued_of, default=None)
        if biggest is not None and biggest is not log and biggest._queued > mine:
            held = biggest._queued
            self._drop(biggest, self._budget_error(total, biggest, held))
            if self._size + size <= self._cap or not self._size:
                return
            total = self._size + size
            mine = log._queued + size
        self._drop(log, self._budget_error(total, log, mine))
        log.fail()

    def _budget_error(self, total: int, log: QueuedLog, held: int) -> DurableError:
        return DurableError(
            f"the journal's writer fell behind: {total} characters waiting for "
            f"{self._where}, more than its max_queued ({self._budget}), turn {log._turn!r} "
            f"holding the most of them ({held}), so that turn fails; the journal is too "
            "slow or unreachable for this load. Give the journal a larger max_queued=, "
            "or a faster journal"
        )

    def _call_overflow(self, log: QueuedLog, call: str, pending: int) -> NoReturn:
        self._drop(
            log,
            DurableError(
                f"the journal's writer fell behind on call {call!r}: {pending} characters "
                f"of it waiting for {self._where}, more than Limits.max_args_chars "
                f"({self._limit}); the journal is too slow or unreachable. Give the "
                "journal larger limits=Limits(max_args_chars=...), or a faster journal"
            ),
        )
        log.fail()

    def flush(self) -> None:
        """Write every queued entry now (blocking); a backend failure is kept and raised."""
        with self._lock:
            if self._error is not None:
                return
            queue = self._queue
            entries = [queue.popleft() for _ in range(len(queue))]
            if not entries:
                return
            self._release(entries)
            rows = pack(entries, self._where)
            if not rows:
                return
            try:
                refused = self._write(rows)
            except DurableError as exc:
                self._error = exc
                raise
            if refused:
                for log, _, _, _ in entries:
                    error = refused.get((log._turn, log._epoch))
                    if error is not None:
                        log.refuse(error)

    def _release(self, entries: list[Entry]) -> None:
        """Take ``entries`` off the bounds (those of a failed log are off already)."""
        with self._size_lock:
            total = 0
            for log, kind, data, size in entries:
                if log._error is not None:
                    continue
                total += size
                log._queued -= size
                if not log._queued:
                    self._live.discard(log)
                if kind is _EVENT and data[0] in _COUNTED:
                    calls = log._calls
                    call = data[1]
                    left = calls.get(call, 0) - size + ENTRY_OVERHEAD
                    if left > 0:
                        calls[call] = left
                    else:
                        calls.pop(call, None)
            self._size -= total

    async def commit_log(self, log: QueuedLog) -> None:
        """Write everything queued (synchronously: no writer thread here)."""
        del log
        await anyio.lowlevel.checkpoint()
        if self._error is not None:
            self.fail()
        self.flush()

    async def commit_log_all(self) -> None:
        """:meth:`flush` everything (synchronously)."""
        await anyio.lowlevel.checkpoint()
        if self._error is not None:
            self.fail()
        self.flush()

    def fail(self) -> NoReturn:
        """Raise the :class:`DurableError` of a queue whose backend failed."""
        raise DurableError(
            f"the journal failed earlier, so the turn fails closed (no tool starts): {self._error}"
        ) from self._error


class JournalWriter(LogQueue):
    """The queue and writer thread of one journal.

    Args:
        write: as :class:`LogQueue`'s (called on a thread).
        where: the journal's location, for messages.
        batch_ms: ``None``: wake the writer at each event; else write every ``batch_ms``.
        limits: the per-call bound (``max_args_chars`` characters; default ``Limits()``).
        max_queued: the writer-wide bound in characters (default :data:`QUEUED_PER_CALL`
            times ``max_args_chars``).
        commit_timeout: seconds a log's commit may take, its wait for room included.
    """

    __slots__ = ("_interval", "_limiter", "_stop", "_thread", "_timeout")

    def __init__(
        self,
        write: Callable[[list[Row]], Refused],
        *,
        where: str,
        batch_ms: float | None,
        limits: Limits | None,
        max_queued: int | None = None,
        commit_timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        if batch_ms is not None and not batch_ms > 0:
            raise ValueError(f"batch_ms must be a positive number or None, not {batch_ms!r}")
        limit = (limits or DEFAULT_LIMITS).max_args_chars
        if max_queued is None:
            max_queued = QUEUED_PER_CALL * limit
        elif not isinstance(max_queued, int) or isinstance(max_queued, bool) or max_queued < 1:
            raise ValueError(f"max_queued must be a positive int or None, not {max_queued!r}")
        if not commit_timeout > 0:
            raise ValueError(
                f"commit_timeout must be a positive number of seconds, not {commit_timeout!r}"
            )
        super().__init__(write, where=where, limit=limit, budget=max_queued)
        self._timeout = float(commit_timeout)
        self._limiter: anyio.CapacityLimiter | None = None
        self._interval = None if batch_ms is None else batch_ms / 1000
        self._wake = threading.Event() if batch_ms is None else None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="toolcall-tracker journal writer", daemon=True
        )
        self._thread.start()

    @property
    def max_queued(self) -> int:
        """The writer-wide bound, in characters."""
        assert self._budget is not None
        return self._budget

    async def _flush_on_thread(self) -> None:
        limiter = self._limiter
        if limiter is None:
            limiter = self._limiter = anyio.CapacityLimiter(1)
        await anyio.to_thread.run_sync(self.flush, limiter=limiter, abandon_on_cancel=True)

    async def commit_log(self, log: QueuedLog) -> None:
        """Write everything queued before this call, then, while ``log`` has text of its
        own queued, wait for room (at most half of ``max_queued`` queued), bounded by
        ``commit_timeout`` (past it: ``log`` fails). A log with nothing of its own left
        queued returns after its write (another turn's stream does not hold it)."""
        if self._error is not None:
            self.fail()
        room = self.max_queued // 2
        with anyio.move_on_after(self._timeout) as scope:
            await self._flush_on_thread()
            while self._size > room and log._queued and log._error is None and self._error is None:
                await self._flush_on_thread()
        if scope.cancelled_caught:
            log.refuse(
                DurableError(
                    f"the journal's writer fell behind: what turn {log._turn!r} queued was "
                    f"not written to {self._where} within {self._timeout:g} s "
                    "(commit_timeout), or no room came; the journal is too slow or "
                    "unreachable. Give it a larger commit_timeout=, or a faster journal"
                )
            )
            log.fail()
        if self._error is not None:
            self.fail()

    async def commit_log_all(self) -> None:
        """Write everything queued before this call (on a worker thread)."""
        if self._error is not None:
            self.fail()
        await self._flush_on_thread()
        if self._error is not None:
            self.fail()

    def close(self) -> None:
        """Write what is queued (unless failed) and stop the writer thread."""
        self._stop.set()
        if self._wake is not None:
            self._wake.set()
        self._thread.join()
        if self._error is None:
            try:
                self.flush()
            except DurableError as exc:
                logger.warning("%s", exc)

    def _loop(self) -> None:
        interval, wake, stop = self._interval, self._wake, self._stop
        while not stop.is_set():
            if wake is not None:
                wake.wait()
                wake.clear()
            elif interval is not None and stop.wait(interval):
                break
            if self._queue:
                try:
                    self.flush()
                except DurableError:
                    return  # flush kept the error; every later call raises it


class QueuedJournal(Closing):
    """The writing half of the journal protocol over a :class:`JournalWriter` (a base of
    the SQLite and Redis journals, which set ``_writer`` and implement ``create``,
    ``take_over`` and ``read``)."""

    __slots__ = ()
    _writer: JournalWriter

    @property
    def max_queued(self) -> int:
        """The writer-wide bound of what is queued and not yet written, in characters."""
        return self._writer.max_queued

    def _log(self, turn_id: str, epoch: int) -> QueuedLog:
        if self._writer.failed:
            self._writer.fail()
        return QueuedLog(self._writer, turn_id, epoch)

    async def commit(self) -> None:
        """Return once every record queued (by any of this journal's logs) before this
        call is durably written (a record refused by the fencing rule is not written: its
        log raises at its own next call).

        Raises:
            DurableError: the journal failed (every log fails with it).
        """
        await self._writer.commit_log_all()
