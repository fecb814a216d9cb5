"""One SQLite file opened for a store or a journal (private): WAL, errors, worker threads.

Every statement runs on a thread, never on the event loop: async callers go through
:meth:`Database.call` (``anyio.to_thread`` with the database's own limiter, so the
application's default thread limiter is not used up), and the journal's writer thread and
the store's lease keeper call :meth:`Database.run` directly. One lock serialises the
connection. Any ``sqlite3`` error comes out as :class:`DurableError`, naming the file and
what could not be done, after the open transaction was rolled back.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from ._protocol import DurableError

__all__ = ["Database", "sqlite_path"]

_T = TypeVar("_T")
_SYNCHRONOUS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")


def sqlite_path(location: str | os.PathLike[str]) -> str:
    """The file of ``location``: a path, or a URL ``sqlite:///relative.db`` /
    ``sqlite:////absolute.db`` (the SQLAlchemy convention)."""
    if not isinstance(location, str):
        return os.fspath(location)
    if location.startswith("sqlite:///"):
        path = location[len("sqlite:///") :]
        if path:
            return path
    elif not location.startswith("sqlite:"):
        return location
    raise ValueError(
        f"not a SQLite location: {location!r}; use a path, sqlite:///relative.db or "
        "sqlite:////absolute/path.db"
    )


class Database:
    """One connection to one SQLite file, in WAL mode, used under a lock."""

    __slots__ = ("_conn", "_limiter", "_lock", "path")

    def __init__(
        self, location: str | os.PathLike[str], *, busy_timeout: float, synchronous: str
    ) -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}, not {synchronous!r}")
        if not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be >= 0 seconds, not {busy_timeout!r}")
        self.path = sqlite_path(location)
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None
        try:
            conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise DurableError(f"cannot open the SQLite file {self.path!r}: {exc}") from exc
        self._conn = conn
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        except sqlite3.Error as exc:
            conn.close()
            raise DurableError(
                f"cannot use the SQLite file {self.path!r} (WAL mode): {exc}"
            ) from exc
        if str(mode).lower() != "wal" and self.path != ":memory:":
            conn.close()
            raise DurableError(f"the SQLite file {self.path!r} refused WAL mode ({mode})")

    def run(self, what: str, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn(connection)`` under the lock (blocking: call it from a thread)."""
        with self._lock:
            conn = self._conn
            try:
                return fn(conn)
            except BaseException as exc:
                # Whatever stopped ``fn`` (an SQLite error, a value sqlite3 cannot bind:
                # a lone surrogate in a turn id), the open transaction is rolled back, so
                # the connection never keeps the file's write lock.
                try:
                    if conn.in_transaction:
                        conn.rollback()
                except sqlite3.Error:  # pragma: no cover (the connection is gone)
                    pass
                if isinstance(exc, (sqlite3.Error, UnicodeError)):
                    raise DurableError(
                        f"{what} failed on the SQLite file {self.path!r}: {exc}"
                    ) from exc
                raise

    async def call(self, what: str, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """:meth:`run` on a worker thread (the event loop never waits for SQLite)."""
        limiter = self._limiter
        if limiter is None:
            limiter = self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(self.run, what, fn, limiter=limiter)

    def script(self, what: str, sql: str) -> None:
        """Run ``sql`` (the schema) now."""

        def go(conn: sqlite3.Connection) -> None:
            conn.executescript(sql)

        self.run(what, go)

    def close(self) -> None:
        """Close the connection (waits for a statement in progress)."""
        with self._lock:
            self._conn.close()


def transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], Any]) -> Any:
    """``body`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back by the caller's
    :meth:`Database.run` if it raises)."""
    conn.execute("BEGIN IMMEDIATE")
    result = body(conn)
    conn.execute("COMMIT")
    return result
