"""A :class:`~toolcall_tracker.durable.Journal` on Redis Streams: one stream per turn.

Theory of operation. Turn ``T`` is the stream ``{prefix}turn:T``; each record is one
stream entry with the fields ``k`` (its kind), ``d`` (its JSON) and ``e`` (the epoch of the
writer that wrote it; absent in entries of older versions: 1), the same rows as the
SQLite journal (consecutive stream events packed into one ``events`` record). The turn's
current epoch (its fencing token) is the string key ``{prefix}epoch:T``; a turn written by
an older version has none and is at epoch 1. Entries are
added with the ID ``0-*``: Redis numbers them ``0-1``, ``0-2``, ... in the order it adds
them, whoever adds them, so :attr:`JournalRecord.seq` is the number after the dash,
strictly increasing per turn from 1 (needs Redis 7.0 or newer).

Taking a turn. :meth:`RedisJournal.create` is one Lua script: if neither the stream nor
the epoch key exists, ``SET`` the epoch key to 1 and ``XADD`` the ``limits`` record, else
refuse (:class:`~._protocol.TurnExists`); :meth:`RedisJournal.take_over` one script that
raises the epoch key by one (from 1 if absent and the stream exists) and ``XADD``\\ s the
``fence`` record. Redis runs a script alone, so both are atomic.

Writing. A log's ``append_event`` / ``append`` only queue (a
:class:`~._writer.JournalWriter`, bounded per call and as a whole); its writer thread, and
a log's ``commit`` on a worker thread, write what is queued as one Lua script: per turn
(and epoch) in the batch, the epoch key is read and, if it still holds the rows' epoch, the
``XADD``\\ s, then ``PEXPIRE`` on the stream and the epoch key (the turn's TTL counts from
its last write); a turn whose epoch moved on (superseded) or whose key is not a stream is
skipped and reported, and only its logs fail. ``commit`` returns once Redis answered:
durable as far as the server's persistence goes (``appendonly yes`` with ``appendfsync
always``: on disk). Retries are off (a lost answer could mean a second ``XADD``): a failed
write fails the journal, and every later call raises :class:`DurableError`, so the turn
fails closed.

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
from ._follow import FollowState, follow_batch
from ._protocol import JOURNAL_FORMAT, DurableError, JournalRecord
from ._redis import SOCKET_TIMEOUT, Connection, key_bytes, on_asyncio
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

__all__ = ["RedisJournal"]

_PAGE: Final = 1000  # entries per XRANGE / XREAD
_BLOCK: Final = SOCKET_TIMEOUT / 2  # the longest XREAD BLOCK on asyncio (seconds)
_TRIO_BLOCK: Final = 0.25  # on a worker thread: how late a cancelled follower may stop

_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
redis.call('XADD', KEYS[1], '0-*', 'k', 'limits', 'd', ARGV[1], 'e', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
"""KEYS: the stream, the epoch key; ARGV: the ``limits`` JSON, the TTL (ms). 1: created."""

_TAKE_OVER: Final = """
local now = redis.call('GET', KEYS[2])
if not now then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return 0
  end
  now = 1
end
local epoch = tonumber(now) + 1
redis.call('SET', KEYS[2], tostring(epoch), 'PX', ARGV[1])
redis.call('XADD', KEYS[1], '0-*', 'k', 'fence', 'd', '{"epoch":' .. epoch .. '}',
  'e', tostring(epoch))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return epoch
"""
"""KEYS: the stream, the epoch key; ARGV: the TTL (ms). The new epoch, or 0: no turn."""

_WRITE: Final = """
local ttl, maxlen = ARGV[1], ARGV[2]
local out = {}
local at = 3
for group = 1, #KEYS / 2 do
  local stream, key = KEYS[2 * group - 1], KEYS[2 * group]
  local epoch, count = ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  local now = redis.call('GET', key)
  if not now then now = '1' end
  local kind = redis.call('TYPE', stream)['ok']
  if kind ~= 'stream' and kind ~= 'none' then
    out[#out + 1] = group
    out[#out + 1] = -1
  elseif tonumber(now) ~= tonumber(epoch) then
    out[#out + 1] = group
    out[#out + 1] = tonumber(now)
  else
    for i = 0, count - 1 do
      local k, d = ARGV[at + 2 * i], ARGV[at + 2 * i + 1]
      if maxlen == '' then
        redis.call('XADD', stream, '0-*', 'k', k, 'd', d, 'e', epoch)
      else
        redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '0-*', 'k', k, 'd', d, 'e', epoch)
      end
    end
    redis.call('PEXPIRE', stream, ttl)
    redis.call('PEXPIRE', key, ttl)
  end
  at = at + 2 * count
end
return out
"""
"""KEYS: per group (a turn at an epoch), its stream and its epoch key; ARGV: the TTL (ms),
``maxlen`` (or empty), then per group its epoch, its row count and each row's kind and
JSON. Returns the groups refused, each as its number and the turn's epoch (-1: the key
holds no stream)."""


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
        max_queued: int | None = None,
        commit_timeout: float = COMMIT_TIMEOUT,
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
            max_queued=max_queued,
            commit_timeout=commit_timeout,
        )
        self._script: Any = None  # the write script on the blocking client (writer thread)

    @property
    def url(self) -> str:
        """The Redis server's URL."""
        return self._conn.url

    def key(self, turn_id: str) -> str:
        """The stream key of ``turn_id`` (sent as UTF-8; a lone surrogate in the id as its
        three bytes)."""
        return f"{self.prefix}turn:{turn_id}"

    def epoch_key(self, turn_id: str) -> str:
        """The key holding ``turn_id``'s epoch."""
        return f"{self.prefix}epoch:{turn_id}"

    # -- taking a turn (its log's appends and commits: QueuedLog) ---------------------

    async def create(self, turn_id: str, head: dict[str, Any]) -> QueuedLog:
        """Take the new turn ``turn_id`` and write its ``limits`` record (``head`` plus
        ``"format"``), in one script; the log returned holds epoch 1.

        Raises:
            TurnExists: the server already has the turn (created before, by another
                writer at the same moment, or written by an older version).
            DurableError: the server cannot be written.
        """
        text = dump({**head, "format": JOURNAL_FORMAT})
        keys = [key_bytes(self.key(turn_id)), key_bytes(self.epoch_key(turn_id))]
        log = self._log(turn_id, 1)
        created = await self._conn.call(
            "creating a turn in the journal",
            lambda client: client.register_script(_CREATE)(keys=keys, args=[text, self._ttl_ms]),
        )
        if int(created) != 1:
            raise turn_exists_error(turn_id)
        return log

    async def take_over(self, turn_id: str) -> QueuedLog:
        """Raise turn ``turn_id``'s epoch by one and write its ``fence`` record, in one
        script; the log returned holds the new epoch (older logs are fenced off).

        Raises:
            DurableError: the server has no such turn, or cannot be written.
        """
        keys = [key_bytes(self.key(turn_id)), key_bytes(self.epoch_key(turn_id))]
        self._log(turn_id, 1)  # a failed journal raises here
        epoch = int(
            await self._conn.call(
                "taking a turn over in the journal",
                lambda client: client.register_script(_TAKE_OVER)(keys=keys, args=[self._ttl_ms]),
            )
        )
        if epoch < 1:
            raise DurableError(
                f"the Redis server {self._conn.name} has no turn {turn_id!r} to take over"
            )
        return self._log(turn_id, epoch)

    # -- reading ---------------------------------------------------------------------

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
        running, or its ``run_end`` read, unless a ``fence`` read after it re-opens it: the
        rule of every follower, ``_follow.py``): the record that finishes it is the last
        one yielded.

        Args:
            after: yield the records after this position (the turn is still read from its
                start, to know when it finishes).
            timeout: seconds to wait for the turn to finish (default: no limit).

        Raises:
            DurableError: the turn did not finish within ``timeout``, or Redis failed.
        """
        deadline = None if timeout is None else anyio.current_time() + timeout
        progress = FollowState()
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
                batch = _records(page)
                for record in follow_batch(progress, batch, after):
                    yield record
                if batch:
                    last = batch[-1].seq
                if progress.finished:  # at the record that finished it (a fence re-opens)
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

    def _write(self, rows: list[Row]) -> Refused:
        """Write ``rows`` in one script (see the module docs): the rows of a turn whose
        epoch is no longer theirs are refused."""
        groups: dict[tuple[str, int], list[str]] = {}
        for turn, kind, text, epoch in rows:
            groups.setdefault((turn, epoch), []).extend((kind, text))
        keys: list[bytes] = []
        args: list[Any] = [self._ttl_ms, "" if self.maxlen is None else self.maxlen]
        for (turn, epoch), fields in groups.items():
            keys += (key_bytes(self.key(turn)), key_bytes(self.epoch_key(turn)))
            args += (epoch, len(fields) // 2, *fields)

        def go(client: Any) -> Any:
            script = self._script
            if script is None:
                script = self._script = client.register_script(_WRITE)
            return script(keys=keys, args=args, client=client)

        reply = self._conn.run("writing the journal", go)
        refused: Refused = {}
        if reply:
            order = list(groups)
            for at in range(0, len(reply), 2):
                turn, epoch = order[int(reply[at]) - 1]
                now = int(reply[at + 1])
                refused[(turn, epoch)] = (
                    superseded_error(turn, epoch, now)
                    if now > 0
                    else DurableError(
                        f"writing turn {turn!r} failed on the Redis server {self._conn.name}: "
                        f"its key {self.key(turn)!r} holds something other than a stream"
                    )
                )
        return refused


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
        try:
            seq = int(entry_id.rsplit(b"-", 1)[1])
            epoch = int(fields.get(b"e", 1))  # entries of older versions: 1
            kind, data = fields[b"k"].decode(), json.loads(fields[b"d"])
        except (KeyError, TypeError, ValueError) as exc:  # not an entry this journal wrote
            raise DurableError(
                f"journal entry {entry_id!r} is malformed (fields {sorted(fields)!r}): {exc}"
            ) from exc
        out.append(JournalRecord(seq, kind, data, epoch))
    return out
