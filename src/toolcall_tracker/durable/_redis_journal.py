"""A :class:`~toolcall_tracker.durable.Journal` on Redis Streams: one stream per turn.

Theory of operation. Turn ``T`` is the stream ``{prefix}turn:T``; each record is one
stream entry with the fields ``k`` (its kind) and ``d`` (its JSON), the same rows as the
SQLite journal (consecutive stream events packed into one ``events`` record). Entries are
added with the ID ``0-*``: Redis numbers them ``0-1``, ``0-2``, ... in the order it adds
them, whoever adds them, so :attr:`JournalRecord.seq` is the number after the dash,
strictly increasing per turn from 1 (needs Redis 7.0 or newer).

Writing. ``append_event`` / ``append`` only queue (a :class:`~._writer.JournalWriter`,
bounded by the ``Limits`` given); its writer thread, and :meth:`RedisJournal.commit` on a
worker thread, write what is queued as one ``MULTI`` / ``EXEC`` transaction: the
``XADD``\\ s, then ``PEXPIRE`` on every stream written (the turn's TTL counts from its last
write). ``commit`` returns once Redis acknowledged the transaction: durable as far as the
server's persistence goes (``appendonly yes`` with ``appendfsync always``: on disk).
Retries are off (a lost answer could mean a second ``XADD``): a failed write fails the
journal, and every later call raises :class:`DurableError`, so the turn fails closed.

Reading. :meth:`RedisJournal.read` reads the stream with ``XRANGE``;
:meth:`RedisJournal.follow` replays it and then blocks on ``XREAD BLOCK`` for new entries,
until the turn is finished. On asyncio both use redis-py's asyncio client; elsewhere
(trio) its blocking client on a worker thread, blocking at most :data:`_TRIO_BLOCK` at a
time so a cancelled follower stops promptly.

Expiry and trimming. Every stream expires ``ttl`` seconds after its last write: make it at
least the signed state's expiry (``DurableTurn(key_ttl=...)`` and ``ToolRunner(
approval_ttl=...)``), or a turn could be forgotten while its approval can still come back
(a :class:`DurableTurn` refuses a journal whose ``ttl`` is shorter than its ``key_ttl``).
``maxlen`` trims each stream to about that many records (``XADD MAXLEN ~``): only for
turns followed live and never restored, since a trimmed turn cannot be restored (its
first record, the ``limits``, is gone) and the records trimmed are lost to followers.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import anyio
import anyio.to_thread

from ..limits import Limits
from ._journal import JournalRecord
from ._progress import TurnProgress
from ._redis import SOCKET_TIMEOUT, Connection, key_bytes, on_asyncio
from ._sqlite import DurableError
from ._writer import JournalWriter, QueuedJournal, Row

__all__ = ["RedisJournal"]

_PAGE: Final = 1000  # entries per XRANGE / XREAD
_BLOCK: Final = SOCKET_TIMEOUT / 2  # the longest XREAD BLOCK on asyncio (seconds)
_TRIO_BLOCK: Final = 0.25  # on a worker thread: how late a cancelled follower may stop


class RedisJournal(QueuedJournal):
    """Turns recorded in Redis Streams, readable and followable from any server.

    Args:
        url: the server: ``redis://host:port/db``, ``rediss://...`` (TLS) or
            ``unix:///path/to/redis.sock?db=N``.
        ttl: seconds a turn's stream is kept after its last write (default 30 days): at
            least the signed state's expiry (see the module docs).
        maxlen: trim each turn's stream to about this many records (default: never).
            A trimmed turn cannot be restored: only for turns that are followed, never
            restored.
        batch_ms: the durability level of stream events. ``None`` (default): each event
            is written at once by the writer thread (events arriving while it writes are
            written together next). A number: every ``batch_ms`` milliseconds. Claims
            and outcomes are committed before the step they guard at either level.
        prefix: the start of every key (``{prefix}turn:{turn_id}``).
        limits: bound the queue of records not yet written: at most
            ``limits.max_args_chars`` characters (default ``Limits()``); a writer that
            falls further behind (Redis slow or unreachable) fails the journal.

    Close it to write what is queued and stop its writer: ``async with`` (or
    :meth:`aclose`) from async code, ``with`` (or :meth:`close`) otherwise. Needs
    redis-py (``pip install 'toolcall-tracker[redis]'``) and Redis 7.0 or newer.

    Raises:
        ValueError: a bad URL or setting.
        ImportError: redis-py is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        ttl: float = 30 * 86400,
        maxlen: int | None = None,
        batch_ms: float | None = None,
        prefix: str = "toolcall-tracker:",
        limits: Limits | None = None,
    ) -> None:
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, not {ttl!r}")
        if maxlen is not None and (
            not isinstance(maxlen, int) or isinstance(maxlen, bool) or maxlen < 1
        ):
            raise ValueError(f"maxlen must be a positive int or None, not {maxlen!r}")
        self._conn = Connection(url)
        self.ttl = float(ttl)
        self.maxlen = maxlen
        self.prefix = prefix
        self._ttl_ms = max(1, round(ttl * 1000))
        self._writer = JournalWriter(
            self._write,
            where=f"the Redis server {self._conn.name}",
            batch_ms=batch_ms,
            limits=limits,
        )

    @property
    def url(self) -> str:
        """The Redis server's URL."""
        return self._conn.url

    def key(self, turn_id: str) -> str:
        """The stream key of ``turn_id`` (sent as UTF-8; a lone surrogate in the id as its
        three bytes)."""
        return f"{self.prefix}turn:{turn_id}"

    # -- reading (append, append_event and commit: QueuedJournal) ---------------------

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after``, in order."""
        key = key_bytes(self.key(turn_id))
        records: list[JournalRecord] = []
        while True:
            start = _after(records[-1].seq if records else after)
            page = await self._conn.call("reading the journal", _xrange(key, start))
            records.extend(_records(page))
            if len(page) < _PAGE:
                return records

    async def follow(
        self,
        turn_id: str,
        after: int = 0,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (how long the turn may take)
    ) -> AsyncIterator[JournalRecord]:
        """The records of ``turn_id`` after ``after``: those committed, then each new one
        as it is committed, until the turn is finished (its ``end`` read and no call still
        running: the rule of ``toolcall-tracker replay --follow``): the record that
        finishes it is the last one yielded.

        Args:
            after: yield the records after this position (the turn is still read from its
                start, to know when it finishes).
            timeout: seconds to wait for the turn to finish (default: no limit).

        Raises:
            DurableError: the turn did not finish within ``timeout``, or Redis failed.
        """
        deadline = None if timeout is None else anyio.current_time() + timeout
        progress = TurnProgress()
        key = key_bytes(self.key(turn_id))
        last = 0
        while True:
            wait = _BLOCK if on_asyncio() else _TRIO_BLOCK
            if deadline is not None:
                wait = min(wait, deadline - anyio.current_time())
            block = max(1, round(wait * 1000))
            streams = {key: f"0-{last}"}
            reply = await self._conn.call(
                "following the journal",
                functools.partial(_xread, streams=streams, block=block),
            )
            for _, page in reply or ():
                for record in _records(page):
                    progress.add(record)
                    last = record.seq
                    if record.seq > after:
                        yield record
                    if progress.finished:  # the records after it belong to no event
                        return
            if deadline is not None and anyio.current_time() >= deadline:
                raise DurableError(
                    f"turn {turn_id!r} did not finish within {timeout:g} s "
                    f"(followed on the Redis server {self._conn.name})"
                )

    @staticmethod
    def read_url(
        url: str, turn_id: str, after: int = 0, *, prefix: str = "toolcall-tracker:"
    ) -> list[JournalRecord]:
        """The committed records of ``turn_id`` after ``after`` on the Redis server at
        ``url``, read now, without a writer (blocking: for tools and scripts).

        Raises:
            DurableError: the server cannot be reached or read.
        """
        conn = Connection(url)
        key = key_bytes(f"{prefix}turn:{turn_id}")
        records: list[JournalRecord] = []
        try:
            while True:
                start = _after(records[-1].seq if records else after)
                page = conn.run("reading the journal", _xrange(key, start))
                records.extend(_records(page))
                if len(page) < _PAGE:
                    return records
        finally:
            conn.close()

    def close(self) -> None:
        """Write what is queued, stop the writer and close the connections."""
        self._writer.close()
        self._conn.close()

    async def aclose(self) -> None:
        """:meth:`close`, the event loop not waiting for the writer."""
        await anyio.to_thread.run_sync(self._writer.close)
        await self._conn.aclose()

    # -- the writer ----------------------------------------------------------------------

    def _write(self, rows: list[Row]) -> None:
        """``XADD`` every row and ``PEXPIRE`` their streams, in one transaction."""
        maxlen, ttl_ms = self.maxlen, self._ttl_ms

        def go(client: Any) -> None:
            pipe = client.pipeline(transaction=True)
            keys: dict[bytes, None] = {}
            for turn, kind, text in rows:
                key = key_bytes(self.key(turn))
                keys[key] = None
                pipe.xadd(key, {"k": kind, "d": text}, id="0-*", maxlen=maxlen)
            for key in keys:
                pipe.pexpire(key, ttl_ms)
            pipe.execute()

        self._conn.run("writing the journal", go)


def _xrange(key: bytes, start: str) -> Callable[[Any], Any]:
    """The ``XRANGE`` of one page of ``key`` from ``start`` (on either client)."""
    return lambda client: client.xrange(key, start, "+", count=_PAGE)


def _xread(client: Any, *, streams: dict[bytes, str], block: int) -> Any:
    return client.xread(streams, count=_PAGE, block=block)


def _after(seq: int) -> str:
    """The ``XRANGE`` start of the entries after ``seq``."""
    return "-" if seq <= 0 else f"(0-{seq}"


def _records(page: list[Any]) -> list[JournalRecord]:
    """Stream entries as journal records."""
    out: list[JournalRecord] = []
    for entry_id, fields in page:
        seq = int(entry_id.rsplit(b"-", 1)[1])
        out.append(JournalRecord(seq, fields[b"k"].decode(), json.loads(fields[b"d"])))
    return out
