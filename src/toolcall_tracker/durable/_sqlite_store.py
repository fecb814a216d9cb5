"""An :class:`~toolcall_tracker.runner.OutcomeStore` on one SQLite file, with leases.

Theory of operation. One row per key: its owner, the owner's lease (a wall-clock
deadline), the key's expiry and the outcome (JSON, ``NULL`` until recorded).

- ``claim`` inserts the row in one ``BEGIN IMMEDIATE`` transaction; a duplicate key means
  somebody holds it, and the row says who, until when, and the outcome so far. While the
  tool runs, the store's lease keeper (one daemon thread per store) pushes the lease of
  every key it holds forward, every third of the lease. A process that dies stops
  renewing: its leases run out.
- A lost claim whose holder's lease is live and that has no outcome yet waits, bounded by
  ``wait``, polling for the outcome: a retried resume gets the real outcome of a call
  that is still running elsewhere. A lease that ran out with no outcome is *in doubt*:
  the runner never runs it again, except for a tool declared ``idempotent=True``, which
  may :meth:`SQLiteOutcomeStore.take_over` the key.
- ``record`` writes the outcome and ends the lease.

Fencing (protocol version 2): one row per scope (a turn id) in ``toolcall_fences``, its
epoch and how long it is kept. A claim, take-over or confirm carrying a
:class:`~toolcall_tracker.runner.Fence` reads the scope's epoch in the same
``BEGIN IMMEDIATE`` transaction as its own write: an older epoch is refused (nothing
written, ``Claim.fenced``; ``confirm`` answers ``False``), a newer one raised. A fence row
is kept until the latest ``expires_at`` of the claims it admitted, and at least a day
after :meth:`SQLiteOutcomeStore.fence`.

Keys are deleted once expired (the caller's ``expires_at``: the end of whatever can name
them), never for lack of room. Every statement runs on a worker thread: the event loop
never waits for SQLite, on asyncio and on trio.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Final

import anyio
import anyio.to_thread

from ..runner import CallOutcome, Claim, Fence
from ..runner._pending import _wire
from ._closing import Closing
from ._leases import LeaseKeeper, check_timing, wait_for_outcome
from ._sqlite import Database, transaction

__all__ = ["SQLiteOutcomeStore"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS toolcall_outcomes (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    lease_until REAL NOT NULL,
    expires_at REAL NOT NULL,
    outcome TEXT
);
CREATE INDEX IF NOT EXISTS toolcall_outcomes_expiry ON toolcall_outcomes (expires_at);
CREATE TABLE IF NOT EXISTS toolcall_fences (
    scope TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS toolcall_fences_expiry ON toolcall_fences (expires_at);
"""
_DAY: Final = 86400.0
_Row = tuple[str, float, "str | None"]


class SQLiteOutcomeStore(Closing):
    """Claims and outcomes of tool calls in one SQLite file, shared by processes.

    A :class:`~toolcall_tracker.runner.LeasedOutcomeStore`: pass it as
    ``ToolRunner(outcome_store=...)`` or to a :class:`~toolcall_tracker.durable.DurableTurn`.
    Close it to stop its lease keeper: ``async with`` (or :meth:`aclose`) from async
    code, ``with`` (or :meth:`close`) otherwise. Opening it sets up the file at once.

    Args:
        location: the file (a path, ``sqlite:///relative.db`` or
            ``sqlite:////absolute.db``); created if missing. It may be the journal's file.
        owner: this store's name in the claims it wins (default: host, pid and a random
            part).
        lease: seconds a claim stays live without renewal (renewed every third of it while
            its tool runs). A process that died leaves its calls in doubt this long after.
        wait: the most seconds a lost claim waits for a live holder's outcome (default:
            twice the lease); then the call is reported in doubt.
        poll: seconds between two looks while waiting.
        busy_timeout: seconds a statement waits for another writer's lock before failing
            (then the claim fails and its tool does not start).
        synchronous: SQLite's ``synchronous`` setting (``"FULL"``: a commit survives a
            power loss; ``"NORMAL"`` survives a process crash).
        clock: the wall-clock time in seconds (``time.time``; shared by every process using
            the file, so a real clock in production); for tests.

    Raises:
        DurableError: the file cannot be opened or set up.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        owner: str | None = None,
        lease: float = 30.0,
        wait: float | None = None,
        poll: float = 0.05,
        busy_timeout: float = 5.0,
        synchronous: str = "FULL",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._wait = check_timing(lease, wait, poll)
        self._db = Database(location, busy_timeout=busy_timeout, synchronous=synchronous)
        self._db.script("creating the outcome table", _SCHEMA)
        self.owner = owner or f"{os.uname().nodename}:{os.getpid()}:{secrets.token_hex(4)}"
        self._clock = clock
        self._lease = lease
        self._poll = poll
        self._keeper = LeaseKeeper(lease, self._renew)  # keys won here and not recorded

    @property
    def path(self) -> str:
        """The SQLite file."""
        return self._db.path

    # -- the protocol ------------------------------------------------------------------

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        """Take ``key`` until ``expires_at``; if somebody holds it with a live lease and
        no outcome, wait (at most ``wait`` seconds) for its outcome. With a ``fence``
        older than its scope's epoch: refused at once (``Claim.fenced``, nothing written);
        else the scope's epoch is raised to it, in the same transaction."""
        claim = await self._db.call(
            "claiming a call", lambda c: self._claim(c, key, expires_at, fence)
        )

        async def read() -> Claim:
            return await self._db.call("reading a claim", lambda c: self._read(c, key))

        return await wait_for_outcome(claim, read, self._now, wait=self._wait, poll=self._poll)

    async def take_over(
        self, key: str, *, expires_at: datetime, fence: Fence | None = None
    ) -> Claim:
        """Take ``key`` if its lease ran out with no outcome (for an idempotent tool whose
        earlier run is in doubt); else report it as :meth:`claim` does, without waiting.
        A ``fence`` is checked (and raises the scope's epoch) as in :meth:`claim`."""

        def body(conn: sqlite3.Connection) -> tuple[bool | None, float]:
            now = self._clock()
            if fence is not None and not _admit(conn, fence, expires_at.timestamp(), now):
                return None, now
            cur = conn.execute(
                "UPDATE toolcall_outcomes SET owner = ?, lease_until = ? "
                "WHERE key = ? AND outcome IS NULL AND lease_until <= ? AND expires_at > ?",
                (self.owner, now + self._lease, key, now, now),
            )
            return cur.rowcount == 1, now

        def go(conn: sqlite3.Connection) -> Claim:
            won, now = transaction(conn, body)
            if won is None:
                return Claim(won=False, fenced=True)
            if won:
                self._keeper.hold(key)
                return Claim(won=True, owner=self.owner, lease_until=_utc(now + self._lease))
            return self._read(conn, key)

        return await self._db.call("taking over a call", go)

    async def confirm(self, key: str, fence: Fence | None = None) -> bool:
        """Renew this store's lease on ``key`` now: ``True`` if it still holds the claim
        (no outcome recorded, not taken over by another owner), else ``False``; also
        ``False`` (nothing renewed) with a ``fence`` older than its scope's epoch.

        A durable turn confirms its claim after journaling that the tool starts and
        before it does: a restore that took the call over after that, and then found no
        start in the journal, knows the tool never started (and never will here)."""

        def body(conn: sqlite3.Connection) -> bool:
            now = self._clock()
            if fence is not None and not _admit(conn, fence, now + _DAY, now):
                return False
            cur = conn.execute(
                "UPDATE toolcall_outcomes SET lease_until = ? "
                "WHERE key = ? AND owner = ? AND outcome IS NULL AND expires_at > ?",
                (now + self._lease, key, self.owner, now),
            )
            return cur.rowcount == 1  # (an expired key is gone, as on Redis)

        return await self._db.call("confirming a claim", lambda c: transaction(c, body))

    async def fence(self, scope: str, epoch: int) -> None:
        """Raise ``scope``'s epoch to at least ``epoch`` (never lower it), in one
        transaction: from then on every claim, take-over and confirm with an older fence
        of ``scope`` is refused. The row is kept at least a day (and as long as the keys
        claimed under it)."""
        fence = Fence(scope, epoch)  # refuses a bad scope or epoch

        def body(conn: sqlite3.Connection) -> None:
            now = self._clock()
            _admit(conn, fence, now + _DAY, now)

        await self._db.call("fencing a turn", lambda c: transaction(c, body))

    async def epoch(self, scope: str) -> int | None:
        """``scope``'s epoch in the file (``None``: never fenced, or forgotten)."""

        def go(conn: sqlite3.Connection) -> int | None:
            row = conn.execute(
                "SELECT epoch FROM toolcall_fences WHERE scope = ? AND expires_at > ?",
                (_wire(scope), self._clock()),
            ).fetchone()
            return None if row is None else int(row[0])

        return await self._db.call("reading a fence", go)

    async def record(self, key: str, outcome: CallOutcome) -> None:
        """Store the outcome of ``key`` and end its lease."""
        text = outcome.model_dump_json()

        def go(conn: sqlite3.Connection) -> None:
            now = self._clock()
            cur = conn.execute(
                "UPDATE toolcall_outcomes SET outcome = ?, lease_until = 0 "
                "WHERE key = ? AND expires_at > ?",
                (text, key, now),
            )
            if cur.rowcount == 0:  # never claimed here (or expired): keep it a day
                conn.execute(
                    "INSERT OR REPLACE INTO toolcall_outcomes VALUES (?, ?, 0, ?, ?)",
                    (key, self.owner, now + _DAY, text),
                )

        try:
            await self._db.call("recording an outcome", go)
        finally:
            self._keeper.release(key)

    async def get(self, key: str) -> CallOutcome | None:
        """The outcome recorded for ``key``, or ``None``."""
        return (await self._db.call("reading an outcome", lambda c: self._read(c, key))).outcome

    def close(self) -> None:
        """Stop renewing leases and close the file (held claims then run out)."""
        self._keeper.stop()
        self._db.close()

    async def aclose(self) -> None:
        """:meth:`close` on a worker thread (the event loop does not wait for the file)."""
        await anyio.to_thread.run_sync(self.close)

    def _now(self) -> datetime:
        return _utc(self._clock())

    # -- on the worker thread -----------------------------------------------------------

    def _claim(
        self, conn: sqlite3.Connection, key: str, expires_at: datetime, fence: Fence | None
    ) -> Claim:
        def body(conn: sqlite3.Connection) -> bool | None:
            now = self._clock()
            conn.execute("DELETE FROM toolcall_outcomes WHERE expires_at <= ?", (now,))
            if fence is not None:
                conn.execute("DELETE FROM toolcall_fences WHERE expires_at <= ?", (now,))
                if not _admit(conn, fence, expires_at.timestamp(), now):
                    return None
            cur = conn.execute(
                "INSERT OR IGNORE INTO toolcall_outcomes VALUES (?, ?, ?, ?, NULL)",
                (key, self.owner, now + self._lease, expires_at.timestamp()),
            )
            return cur.rowcount == 1

        won = transaction(conn, body)
        if won is None:
            return Claim(won=False, fenced=True)
        if won:
            self._keeper.hold(key)
            return Claim(won=True, owner=self.owner, lease_until=_utc(self._clock() + self._lease))
        return self._read(conn, key)

    def _read(self, conn: sqlite3.Connection, key: str) -> Claim:
        row: _Row | None = conn.execute(
            "SELECT owner, lease_until, outcome FROM toolcall_outcomes "
            "WHERE key = ? AND expires_at > ?",
            (key, self._clock()),
        ).fetchone()
        if row is None:  # expired (meanwhile): nobody can name it any more, as on Redis
            return Claim(won=False)
        owner, lease_until, text = row
        outcome = None if text is None else CallOutcome.model_validate(json.loads(text))
        return Claim(won=False, outcome=outcome, owner=owner, lease_until=_utc(lease_until))

    def _renew(self, held: list[str]) -> None:
        """Push the leases of the ``held`` keys forward (on the lease keeper's thread)."""
        self._db.run("renewing leases", lambda conn: self._renew_rows(conn, held))

    def _renew_rows(self, conn: sqlite3.Connection, held: list[str]) -> None:
        until = self._clock() + self._lease
        conn.executemany(
            "UPDATE toolcall_outcomes SET lease_until = ? "
            "WHERE key = ? AND owner = ? AND outcome IS NULL",
            [(until, key, self.owner) for key in held],
        )


def _admit(conn: sqlite3.Connection, fence: Fence, keep_until: float, now: float) -> bool:
    """Inside a transaction: ``False`` if ``fence`` is older than its scope's epoch (an
    expired row counts as none); else raise the epoch to it and keep the row until
    ``keep_until`` at least."""
    scope = _wire(fence.scope)  # a lone surrogate in a turn id is kept, as UTF-8 text
    row = conn.execute(
        "SELECT epoch, expires_at FROM toolcall_fences WHERE scope = ?", (scope,)
    ).fetchone()
    if row is not None and row[1] > now and row[0] > fence.epoch:
        return False
    if row is not None and row[1] <= now:  # forgotten: start afresh
        conn.execute("DELETE FROM toolcall_fences WHERE scope = ?", (scope,))
    conn.execute(
        "INSERT INTO toolcall_fences VALUES (?, ?, ?) ON CONFLICT (scope) DO UPDATE SET "
        "epoch = max(epoch, excluded.epoch), expires_at = max(expires_at, excluded.expires_at)",
        (scope, fence.epoch, keep_until),
    )
    return True


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)
